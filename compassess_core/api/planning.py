"""Planning a run before it starts: a dataset's own defaults (:meth:`Planning.run_defaults`),
the plan of a run (:meth:`Planning.plan_run`: its settings, size, time, wording, the reference
column it is checked against, the kind's advice and whether the app may use its judge), the
judges on this machine (:meth:`Planning.judges_on_this_machine`) and the judge servers the app
may use (:func:`judge_servers`). The Run page shows these; a notebook or script asks the same
before ``Store.run``.

Wiring: the run kinds (``run_kinds``) build settings, count and advise, ``speed`` estimates,
``prompts`` names tasks and columns, ``model_catalog`` lists models and ``judges.servers`` holds
the allowlist of served judges; this module only asks them. :class:`Planning` is a part of
:class:`~compassess_core.api.Store`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence
from pathlib import Path

import pandas as pd

from ..data.candidates import Source
from ..errors import InputError
from ..judges.servers import (PREFIXES, ServedEndpoint, configured_servers, model_name_problem,
                              normalise_base_url, served_model_problem)
from ..limits import MAX_NAME_CHARS, name_problem
from ..judges.memory import MemoryPlan
from ..judges.model_catalog import (RECOMMENDED, ModelEntry, Recommendation, catalog, catalog_frame,
                             memory_plan, models_folder)
from ..runs.options import ComparativeOptions, KindOptions, ModelOptions, for_aspects, run_options
from ..runs.prompts import (BUILTIN_TEMPLATES, TASK_WORDING, Aspect, builtin_template,
                       infer_task, rank_aspects, reference_column, task_from_columns)
from ..runs.run_kinds import build_settings, kind_of
from ..runs.selection import max_budget
from ..runs.settings import RunSettings, model_short_name, run_names
from ..judges.speed import TimeEstimate
from ..types import Dataset

#: The variable that pre-selects the app's judge (e.g. docker-compose's vLLM server).
JUDGE_MODEL_ENV = "COMPASSESS_JUDGE_MODEL"
#: The endpoints of a served judge: the spec prefix of each (``judges.servers.PREFIXES`` turned round).
SERVED_PREFIXES = {endpoint: f"{prefix}:" for prefix, endpoint in PREFIXES.items()}


@dataclass(frozen=True)
class RunDefaults:
    """A dataset's own starting values of a run (the Run page's form for this dataset):
    ``aspect`` the aspect it has human labels of (the most labelled), else the first aspect a
    reference column is about (by name or synonym: :meth:`Planning.aspects`), else
    ``coherence`` for summaries and dialogue and ``overall`` for any other data, and ``aspect_from``
    why;
    template ``t1`` (``template_text``: its text in the wording the data and aspect choose, where
    an own template starts); wording ``auto``; every one of its ``contexts``; a ``budget`` of up
    to 10 comparisons per context that every context can give in one order."""

    dataset: str
    aspect: str
    aspect_from: str
    contexts: int
    budget: int
    template_text: str
    template: str = "t1"
    task: str = "auto"


@dataclass(frozen=True)
class DataAspect:
    """An aspect a stored dataset has evidence for (:meth:`Planning.aspects`): ``n_labels``
    human labels of it, the ``reference`` column about it (None: none), ``n_runs`` runs that
    judged it (a tuning's runs of its wordings not counted)."""

    aspect: str
    n_labels: int
    reference: str | None
    n_runs: int

    @property
    def evidence(self) -> str:
        """What the data holds of this aspect, in few words (a picker shows them beside it):
        "12 labels, reference scores, 2 runs"; the reference column is named when it is not
        named as the aspect ("reference scores: engagement")."""
        scores = ("reference scores" if self.reference == self.aspect
                  else f"reference scores: {self.reference}")
        parts = ([f"{self.n_labels:,} label" + ("s" if self.n_labels != 1 else "")]
                 if self.n_labels else []) + ([scores] if self.reference else []) + (
            [f"{self.n_runs} run" + ("s" if self.n_runs != 1 else "")] if self.n_runs else [])
        return ", ".join(parts) or "no label, reference score or run"


@dataclass(frozen=True)
class PromptPreview:
    """One prompt a run would give its judge (``RunKind.example_prompt``): in context
    ``context_id``, of the candidates ``candidate_ids`` (in position order), its ``text`` and
    the answer ``primer`` the model continues; ``template`` the template's text."""

    context_id: str
    candidate_ids: tuple[str, ...]
    text: str
    primer: str
    template: str


@dataclass(frozen=True)
class RunPlan:
    """What a run would do, before it starts (:meth:`Planning.plan_run`).

    ``settings``: the checked settings (``Store.create_run`` stores them); ``planned`` the units
    (``unit``) it plans on ``n_contexts`` contexts; ``estimate`` how long judging takes here;
    ``task`` the wording and ``task_from`` why it was chosen; ``reads`` what the judge reads, in
    words; ``reference`` the reference-score column its results are checked against by default
    (None: no column is about the aspect); ``advice`` what to know before starting (the CLI
    prints it as warnings); ``preview`` one prompt (None for a kind that has none before it
    runs); ``judge_problem`` why the app may not use the judge (a served judge whose server is
    not configured: nothing may start), None when it may; ``stored`` how many of the planned
    units the runs of their default names (same settings) store already (0: no such run), and
    :attr:`estimate_left` the time the rest takes. ``together``: the settings of every
    run of the pass (one per aspect judged together, ``settings`` first; just ``settings`` for
    one aspect); ``planned`` and ``estimate`` are those of the whole pass. ``memory``: what the
    judge needs against what this machine has (``model_catalog.memory_plan``; its ``problem`` is why
    the judge would not fit, and loading it is refused then).
    """

    dataset: str
    settings: RunSettings
    kind: str
    unit: str
    planned: int
    n_contexts: int
    estimate: TimeEstimate
    task: str
    task_from: str
    reads: str
    reference: str | None
    advice: tuple[str, ...]
    preview: PromptPreview | None
    judge_problem: str | None
    stored: int = 0
    together: tuple[RunSettings, ...] = ()
    memory: MemoryPlan | None = None

    @property
    def estimate_left(self) -> TimeEstimate:
        """:attr:`estimate` for what is not stored yet: the runs of their default names store
        :attr:`stored` of the :attr:`planned` units already, and resuming them judges the rest."""
        left = max(self.planned - self.stored, 0) / self.planned if self.planned else 1.0
        return self.estimate.share(left)

    @property
    def aspects(self) -> tuple[str, ...]:
        """The aspect of each run of the pass."""
        return tuple(s.aspect for s in self.together or (self.settings,))

    @property
    def default_name(self) -> str:
        """The run's name unless another is given (``RunSettings.default_run_name``); for runs
        of several aspects judged in one pass, the name of the pass, without an aspect (each
        run is ``NAME-ASPECT``: never ``...-overall-...-coherence``)."""
        if len(self.together) > 1:
            s = self.settings
            return (f"{s.dataset}-{s.template_name}-{model_short_name(s.model)}-"
                    f"{s.result_hash()[:6]}")[:MAX_NAME_CHARS]
        return self.settings.default_run_name()[:MAX_NAME_CHARS]

    def run_names(self, name: str) -> list[str]:
        """The names the runs of the pass get from ``name`` (``name-ASPECT`` for several)."""
        return run_names(name.strip(), self.together or (self.settings,))

    def name_problem(self, name: str) -> str | None:
        """What is wrong with ``name`` as this run's name, or with a name it gives a run of
        the pass (None: nothing)."""
        for one in [name.strip(), *(self.run_names(name) if len(self.together) > 1 else ())]:
            problem = name_problem(one, "run name")
            if problem is not None:
                return problem
        return None


@dataclass(frozen=True)
class JudgeCatalog:
    """The judges on this machine (``compassess models``): the bundled one and every model in
    the models ``folder`` (``COMPASSESS_MODELS_DIR``), each with its size, parameters, context
    window and measured speed here; ``recommended`` hub ids by hardware."""

    folder: Path
    entries: tuple[ModelEntry, ...]
    recommended: tuple[Recommendation, ...] = RECOMMENDED

    @property
    def in_folder(self) -> tuple[ModelEntry, ...]:
        """The models of the models folder (the bundled one left out)."""
        return tuple(e for e in self.entries if e.kind != "bundled")

    def frame(self) -> pd.DataFrame:
        """The catalog as ``compassess models`` prints it."""
        return catalog_frame(self.entries)


@dataclass(frozen=True)
class JudgeServers:
    """The judge servers configured where the app runs (``judges.servers``, the allowlist: no
    other server can be used from the app), ``problem`` when the configuration cannot be read,
    and the judge ``default_model`` pre-selected by ``COMPASSESS_JUDGE_MODEL``."""

    servers: tuple[ServedEndpoint, ...]
    problem: str | None
    default_model: str

    @property
    def default_is_served(self) -> bool:
        return self.default_model.startswith(tuple(SERVED_PREFIXES.values()))

    @property
    def default_server(self) -> str | None:
        """The configured server the default model names (None: none, or not configured)."""
        if not self.default_is_served:
            return None
        try:
            base = normalise_base_url(self.default_model.split(":", 1)[1].split("#")[0])
        except InputError:
            return None
        return base if base in {s.base_url for s in self.servers} else None

    @property
    def default_served_name(self) -> str:
        """The model name on its server of a served default model ("" otherwise)."""
        if not self.default_is_served or "#" not in self.default_model:
            return ""
        return self.default_model.split("#", 1)[1].split("?")[0]

    def spec(self, base_url: str, name: str, endpoint: str = "chat") -> str:
        """The model spec of model ``name`` on the configured server ``base_url`` through
        ``endpoint`` (``chat`` or ``completions``).

        Raises
        ------
        InputError
            A name a served model never has, an unknown endpoint, or a server that is not
            configured.
        """
        problem = model_name_problem(name)
        if problem:
            raise InputError(problem)
        if endpoint not in SERVED_PREFIXES:
            raise InputError(f"unknown endpoint '{endpoint}'; choose chat or completions")
        spec = f"{SERVED_PREFIXES[endpoint]}{base_url}#{name}"
        problem = served_model_problem(spec)
        if problem:
            raise InputError(problem)
        return spec


def judge_servers() -> JudgeServers:
    """The judge servers this process may use and its default judge (:class:`JudgeServers`)."""
    try:
        servers, problem = tuple(configured_servers()), None
    except InputError as e:
        servers, problem = (), str(e)
    return JudgeServers(servers, problem, os.environ.get(JUDGE_MODEL_ENV, "").strip())


def _task_from(options: KindOptions, dataset: Dataset, aspect: str) -> str:
    if options.task != "auto":
        return "you chose it"
    if task_from_columns(dataset.text_columns):
        return f"the file's columns {', '.join(dataset.text_columns)}"
    return f"the aspect {aspect}"


class Planning:
    """Planning runs and the judges to run them with (a part of ``Store``, whose ``backend``,
    ``read_data``, ``estimate_time`` and ``_dataset_id`` it uses)."""

    def aspects(self, dataset: str | int) -> list[DataAspect]:
        """The aspects a stored dataset has evidence for, the strongest first
        (``prompts.rank_aspects``): those with human labels (most first), those a reference
        column is about, those its runs judged. What the app's pages start at and offer first.

        Raises
        ------
        InputError
            No stored dataset of that name or id.
        """
        dataset_id, ds = self._stored_dataset(dataset)
        labelled = self.backend.human_judgements_frame(dataset_id, None)["aspect"].value_counts()
        # a tuning's runs (one per wording tried) are the tuning's, not runs a person started
        tuned = self.tuning_runs(dataset_id)
        runs = [r.settings.get("aspect") for r in self.backend.list_runs(dataset_id)
                if r.id not in tuned]
        run_counts = pd.Series([a for a in runs if a], dtype=object).value_counts()
        ranked = rank_aspects({str(a): int(n) for a, n in labelled.items()}, ds.score_columns,
                              [a for a in reversed(runs) if a])
        return [DataAspect(a, int(labelled.get(a, 0)), reference_column(a, ds.score_columns),
                           int(run_counts.get(a, 0))) for a in ranked]

    def run_defaults(self, dataset: str | int) -> RunDefaults:
        """A stored dataset's own starting values of a run (:class:`RunDefaults`).

        Raises
        ------
        InputError
            No stored dataset of that name or id.
        """
        dataset_id, ds = self._stored_dataset(dataset)
        known = [a for a in self.aspects(dataset_id) if a.n_labels or a.reference]
        if known:
            aspect = known[0].aspect
            why = (f"its human labels of {aspect}" if known[0].n_labels
                   else f"its reference column {known[0].reference}")
        else:
            # Nothing names an aspect: the paper's coherence for summaries and dialogue,
            # overall quality for stories, instructions and data that says nothing.
            task = task_from_columns(ds.text_columns)
            aspect = "coherence" if task in ("summary", "dialogue") else "overall"
            why = "no label or reference column names an aspect"
        smallest = min(len(c.candidates) for c in ds.contexts)
        try:
            task = infer_task(Aspect.from_name(aspect), ds.text_columns)
        except InputError:   # a stored label aspect that is no longer a valid description
            task = task_from_columns(ds.text_columns) or "summary"
        return RunDefaults(dataset=ds.name, aspect=aspect, aspect_from=why,
                           contexts=len(ds.contexts),
                           budget=max(1, min(10, max_budget(smallest, "no-repeat"))),
                           template_text=builtin_template("t1", task).text)

    def plan_run(self, data: Source | Dataset | int, options: KindOptions | None = None,
                 model_options: ModelOptions | None = None, *, mode: str = "comparative",
                 also: Sequence[str] = (), **keywords) -> RunPlan:
        """What a run on ``data`` (a stored dataset's name or id, a :class:`Dataset`, or
        candidates to validate) would do, before anything is stored or loaded: its settings
        built once (``run_kinds.build_settings``), how many units it plans, how long judging
        takes here, the wording and why, the reference column, the kind's advice, one prompt,
        and whether the app may use its judge (the served-judge allowlist). See
        :class:`RunPlan`.

        The run is given as options objects (``options``: :class:`ComparativeOptions`,
        :class:`ScoringOptions` or :class:`AbsoluteOptions`; ``model_options``), as the Run
        page fills them, or as :meth:`Store.run`'s keywords (``aspect``, ``template``, ``task``,
        ``strategy``, ``budget``, ``seed`` with ``mode`` ``comparative``/``scoring``; ``model``,
        ``contexts``, ``batch_size``, ``device``, ``dtype``, ``truncate_context``). ``also``:
        more aspects judged in the same pass, one run each (:meth:`Store.create_runs`); the
        plan's size and time are then the whole pass's (what they share counted once).

        Raises
        ------
        InputError
            Options that cannot run together (an odd budget for ``symmetric``, an unknown
            template...), a keyword beside the options object that holds it, or bad data.
        """
        model_keys = {k: keywords.pop(k) for k in list(keywords)
                      if k in ModelOptions.__dataclass_fields__}
        if options is not None and keywords:
            raise InputError(f"{', '.join(keywords)} given beside an options object")
        if model_options is not None and model_keys:
            raise InputError(f"{', '.join(model_keys)} given beside a model options object")
        options = options if options is not None else run_options(mode, **keywords)
        model_options = model_options if model_options is not None else ModelOptions(**model_keys)
        dataset = data if isinstance(data, Dataset) else self.read_data(data)[0]
        together = [build_settings(dataset.name, o, model_options,
                                   text_columns=dataset.text_columns)
                    for o in ([options] if not also else
                              for_aspects(options, [options.aspect, *also]))]
        settings = together[0]
        kind = kind_of(settings)
        aspect = settings.aspect_obj
        task = options.task if options.task != "auto" else infer_task(aspect,
                                                                       dataset.text_columns)
        wording = TASK_WORDING[task]
        shown = (f"{wording.source_label}, then one {wording.lower} at a time"
                 if not kind.is_pairwise and kind.results_page == "rankings" else wording.reads())
        own = isinstance(options, ComparativeOptions) and not (
            isinstance(options.template, str) and options.template.lower() in BUILTIN_TEMPLATES)
        task_from = _task_from(options, dataset, aspect.name)
        example = kind.example_prompt(dataset, settings)
        preview = None if example is None else PromptPreview(
            example[0], example[1], example[2].text, example[2].primer, settings.template_text)
        planned_each = [kind.planned_total(dataset, s) for s in together]
        planned = sum(planned_each)
        # A run of its default name has these settings (the name holds their hash): what it
        # stores is not judged again.
        by_name = {r.name: r for r in self.backend.list_runs()
                   if r.settings.get("dataset") == settings.dataset}
        stored = 0
        for one, planned_one in zip(together, planned_each):
            same = by_name.get(one.default_run_name()[:MAX_NAME_CHARS])
            if same is not None:
                stored += min(int(same.done or 0), planned_one)
        return RunPlan(
            stored=stored,
            dataset=dataset.name, settings=settings, kind=kind.name, unit=kind.unit,
            planned=planned,
            n_contexts=settings.contexts or len(dataset.contexts),
            estimate=self.estimate_time(dataset, together), task=task, task_from=task_from,
            reads="your own template" if own else f"{shown} (task {task}, from {task_from})",
            reference=reference_column(aspect.name, dataset.score_columns),
            advice=tuple(kind.advice(dataset, settings)), preview=preview,
            judge_problem=served_model_problem(settings.model), together=tuple(together),
            memory=memory_plan(settings.model, settings.dtype, settings.device,
                               batch_size=settings.batch_size))

    def judges_on_this_machine(self) -> JudgeCatalog:
        """The bundled judge and the models folder's, each with its speed measured by this
        store's runs (``compassess models``)."""
        return JudgeCatalog(models_folder(), tuple(catalog(self.backend.list_runs())))

"""A store through the API (:class:`Store`, :func:`open_store`): datasets, runs, labels,
people, reference texts, campaigns, panels and the leaderboard of judges. Every verb the CLI's
writing commands and the app's pages use. Wiring: it delegates to the engine and reaches the
store only through ``sink.open_store`` (the ``compassess.stores`` entry point)."""

from __future__ import annotations

import dataclasses
import itertools
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .. import __version__, absolute, analysis, annotation, campaigns, panel, worker
from ..data import Source, load_candidates
from ..errors import CompAssessError, InputError, ObjectChanged
from ..labels import annotator_counts, attribute, load_human_labels, store_rows
from ..leaderboard import DEFAULT_METHOD
from ..limits import check_name
from ..options import AbsoluteOptions, ComparativeOptions, ModelOptions, ScoringOptions
from ..prompts import Template, custom_template
from ..report import EXAMPLES, RunsCompared, render_report
from ..run_kinds import build_settings, kind_of
from ..run_loop import worker_state
from ..settings import GenerationOptions, ReferenceOptions, RunSettings
from ..sink import open_store as _open_backend
from ..speed import TimeEstimate, estimate_time
from ..annotation import ShownPair
from ..tuning import TuningOptions
from ..types import Dataset
from ..worker import Reporter
from .campaign import Campaign
from .judges_board import JudgesLeaderboard, judges_board
from .panel import Panel
from .progress import _reporter
from .run import Run
from .settings import _check_at_least, _model_options, _run_options, _score_options
from .tuning import Tuning, TuningPlan, TuningResult, create_tuning, plan_tuning
from .verdicts import Verdicts

#: What ``open_store`` takes for a throwaway in-memory store.
_MEMORY = (":memory:", "sqlite://")


def _report_time(given: datetime | None) -> datetime:
    """The date an audit report states: ``given``, else ``$SOURCE_DATE_EPOCH`` (seconds since
    1970, the reproducible-builds convention) when set, else now; in UTC."""
    if given is not None:
        return given if given.tzinfo else given.replace(tzinfo=timezone.utc)
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch:
        try:
            return datetime.fromtimestamp(int(epoch), timezone.utc)
        except (ValueError, OverflowError, OSError):
            raise InputError(f"SOURCE_DATE_EPOCH must be whole seconds since 1970, not "
                             f"'{epoch}'") from None
    return datetime.now(timezone.utc).replace(microsecond=0)


def open_store(url: str | os.PathLike | None = None) -> "Store":
    """Open (creating and migrating it when needed) the store at ``url``.

    Parameters
    ----------
    url
        ``None``: ``$COMPASSESS_DATABASE_URL``, else the SQLite file in ``$COMPASSESS_HOME``
        (the app's and the CLI's default store); a file path ending in ``.db``, ``.sqlite`` or
        ``.sqlite3``; any SQLAlchemy URL (``postgresql+psycopg://...``); or ``":memory:"`` for a
        throwaway in-memory store (gone when the process ends; no worker process can use it).

    Raises
    ------
    InputError
        A URL that cannot be opened, or a database written by a newer CompAssess.
    """
    if url is not None:
        url = os.fspath(url)
        if url.strip() in _MEMORY:
            url = "sqlite://"
    return Store(_open_backend(url))


@dataclass(frozen=True)
class LabelsImported:
    """What :meth:`Store.import_labels` stored: ``stored`` new labels; ``already_stored`` were
    in the store already (one judgement per person, pair and aspect) and were not added;
    ``attributed``: labels per annotator as stored, and ``attributed_by`` whether the names come
    from the file's annotator column or from the importer."""

    stored: int
    already_stored: int
    dataset: str
    aspect: str
    attributed: dict[str, int]
    attributed_by: str


#: ``Deleted``'s field for each store table a delete reports (the table's rows, in words).
_DELETED_FIELDS = {
    "datasets": "datasets", "runs": "runs", "comparisons": "comparisons",
    "candidate_scores": "scores", "absolute_comparisons": "absolute_comparisons",
    "human_judgements": "labels", "guidelines": "guidelines",
    "synthetic_references": "references", "contexts": "contexts", "candidates": "candidates",
    "reference_scores": "reference_scores", "campaigns": "campaigns",
    "campaign_annotators": "campaign_annotators", "campaign_pairs": "campaign_pairs",
    "panels": "panels", "panel_members": "panel_members",
    "tunings": "tunings", "explanations": "explanations",
}
#: How ``str(Deleted)`` names one and several of each field's rows.
_DELETED_WORDS = {
    "datasets": ("dataset", "datasets"), "runs": ("run", "runs"),
    "comparisons": ("comparison", "comparisons"), "scores": ("candidate score", "candidate scores"),
    "absolute_comparisons": ("reference comparison", "reference comparisons"),
    "labels": ("human label", "human labels"), "guidelines": ("guidelines text", "guidelines texts"),
    "references": ("reference text", "reference texts"), "contexts": ("context", "contexts"),
    "candidates": ("candidate", "candidates"),
    "reference_scores": ("reference score", "reference scores"),
    "campaigns": ("annotation campaign", "annotation campaigns"),
    "campaign_annotators": ("campaign assignment", "campaign assignments"),
    "campaign_pairs": ("campaign pair", "campaign pairs"),
    "panels": ("panel of judges", "panels of judges"),
    "panel_members": ("panel member", "panel members"),
    "tunings": ("tuning", "tunings"),
    "explanations": ("judge's explanation", "judge's explanations"),
}


@dataclass(frozen=True)
class Deleted:
    """What :meth:`Store.delete_run` or :meth:`Store.delete_dataset` removed (or, with
    ``dry_run=True``, would remove): rows of each kind. ``scores`` are a scoring run's candidate
    scores, ``absolute_comparisons`` an absolute run's comparisons with reference texts,
    ``labels`` human A/B judgements, ``references`` the reference texts of absolute runs,
    ``campaigns`` the dataset's annotation campaigns with their assignments and pairs,
    ``tunings`` its tunings of the judge's wording (their runs are counted as runs),
    ``explanations`` the judge's stored reasons for verdicts on its texts.
    ``str()`` says it in words (``1 run, 60 comparisons``)."""

    datasets: int = 0
    runs: int = 0
    comparisons: int = 0
    scores: int = 0
    absolute_comparisons: int = 0
    labels: int = 0
    guidelines: int = 0
    references: int = 0
    contexts: int = 0
    candidates: int = 0
    reference_scores: int = 0
    campaigns: int = 0
    campaign_annotators: int = 0
    campaign_pairs: int = 0
    panels: int = 0
    panel_members: int = 0
    tunings: int = 0
    explanations: int = 0

    @classmethod
    def from_rows(cls, rows: Mapping[str, int]) -> "Deleted":
        """From the store's rows per table (``db.store.Store.delete_run``'s answer)."""
        return cls(**{_DELETED_FIELDS[t]: int(n) for t, n in rows.items() if t in _DELETED_FIELDS})

    def __str__(self) -> str:
        parts = [f"{n:,} {_DELETED_WORDS[f][0 if n == 1 else 1]}"
                 for f, n in vars(self).items() if n]
        return ", ".join(parts) or "nothing"


def _expect_name(kind: str, object_id: int, name: str, expect_name: str | None) -> None:
    """Refuse a write aimed at the ``kind`` a page showed as ``expect_name`` when the store's
    object ``object_id`` is called otherwise now (renamed since the page was drawn)."""
    if expect_name is not None and name != expect_name:
        raise ObjectChanged(f"the {kind} shown as '{expect_name}' is now called '{name}' "
                            f"({kind} id {object_id}): nothing was changed; look again")


class Store:
    """A CompAssess store: datasets, runs and their results, human labels.

    Open one with :func:`open_store`. ``backend`` is the persistent store behind it (the
    ``compassess.stores`` entry point, ``db.store.Store``), for what this API does not cover.
    """

    def __init__(self, backend) -> None:
        self.backend = backend

    def __repr__(self) -> str:
        return f"compassess_core.Store({self.backend!r})"

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        """The store's database URL (it may hold a password: do not print it)."""
        return self.backend.url

    @property
    def in_memory(self) -> bool:
        """True for a throwaway in-memory store (``open_store(":memory:")``)."""
        url = self.url
        return url.rstrip("/") in ("sqlite:", "sqlite:///:memory:") or "mode=memory" in url

    # ---------------------------------------------------------------------------- datasets

    def datasets(self) -> pd.DataFrame:
        """One row per stored dataset: id, name, contexts, candidates, score_columns, source,
        created_at (``compassess datasets``)."""
        rows = [dict(id=d.id, name=d.name, contexts=d.n_contexts, candidates=d.n_candidates,
                     score_columns=", ".join(d.score_columns), source=d.source,
                     created_at=d.created_at) for d in self.backend.list_datasets()]
        return pd.DataFrame(rows, columns=["id", "name", "contexts", "candidates",
                                           "score_columns", "source", "created_at"])

    def dataset(self, name_or_id: str | int) -> Dataset:
        """A stored dataset (contexts, candidates, reference scores).

        Raises
        ------
        InputError
            No dataset of that name or id (``RunNotFoundError``).
        """
        return self.backend.load_dataset(name_or_id)

    def add_dataset(self, source: Source | Dataset, *, name: str | None = None,
                    column_map: Mapping[str, str] | None = None,
                    score_columns: Sequence[str] | None = None) -> Dataset:
        """Validate candidates (a file, its bytes or a DataFrame, as :func:`load_candidates`)
        and store them; returns the dataset as stored.

        Storing is idempotent: the same content is stored once, under the name it was first
        stored with (the returned dataset carries that name).

        Raises
        ------
        ValidationError
            Every problem of the input, each with its row and column; nothing is stored.
        InputError
            A different dataset already has this name.
        """
        dataset = (source if isinstance(source, Dataset)
                   else load_candidates(source, name=name, column_map=column_map,
                                        score_columns=score_columns))
        return self.backend.load_dataset(self.backend.save_dataset(dataset))

    def read_data(self, data: Source | Dataset | int) -> tuple[Dataset, int | None]:
        """What a run's ``data`` names: a :class:`Dataset`, a stored dataset (name or id), or
        candidates to validate (a file path, bytes, a file object, a DataFrame), with the
        stored dataset's id (None for data not stored yet: a run stores it when it starts).

        Raises
        ------
        ValidationError
            Candidates with problems (every one, with row and column).
        InputError
            A string that is neither an existing file nor a stored dataset's name.
        """
        if isinstance(data, Dataset):
            return data, None
        if isinstance(data, (int, np.integer)):
            dataset = self.backend.load_dataset(int(data))
            return dataset, int(data)
        if isinstance(data, (str, os.PathLike)):
            path = Path(data)
            if path.exists():
                return load_candidates(path), None
            try:
                dataset = self.backend.load_dataset(os.fspath(data))
            except CompAssessError:
                raise InputError(f"'{os.fspath(data)}' is neither a file nor a stored dataset "
                                 "(see `compassess datasets`)") from None
            return dataset, next(d.id for d in self.backend.list_datasets()
                                 if d.name == dataset.name)
        return load_candidates(data), None

    # -------------------------------------------------------------------------------- runs

    def runs(self) -> pd.DataFrame:
        """One row per stored run, oldest first: name, dataset, kind, status, state, done, total,
        unit, n_comparisons, judge, created_at (``compassess runs``). ``state`` is
        :attr:`Run.state`: it tells a run whose worker died (``stale``) from a live one."""
        rows = [dict(name=r.name, dataset=r.dataset_name, kind=kind_of(r.settings).name,
                     status=r.status, state=worker_state(r), done=r.done, total=r.total,
                     unit=kind_of(r.settings).unit, n_comparisons=r.n_comparisons,
                     judge=r.judge_key, created_at=r.created_at)
                for r in self.backend.list_runs()]
        return pd.DataFrame(rows, columns=["name", "dataset", "kind", "status", "state", "done",
                                           "total", "unit", "n_comparisons", "judge", "created_at"])

    def get_run(self, name_or_id: str | int, *, expect_name: str | None = None) -> "Run":
        """A stored run by name or id; ``expect_name``: the name it was shown under (a page
        acting on what it shows), refused when the run is now called otherwise.

        Raises
        ------
        InputError
            No run of that name or id (``RunNotFoundError``).
        ObjectChanged
            The run is not named ``expect_name`` (renamed since).
        """
        info = self.backend.get_run(name_or_id)
        _expect_name("run", info.id, info.name, expect_name)
        return Run(self, info)

    def estimate_time(self, data: Source | Dataset | int, settings: RunSettings) -> TimeEstimate:
        """How long judging a run of ``settings`` on ``data`` takes on this machine (the judge's
        loading not included): the size of its prompts in tokens at the model's median prompt
        tokens per second over its earlier runs here (``speed.estimate_time``; rough defaults,
        which ``TimeEstimate.measured`` and ``sentence()`` say, when none measured it). What the
        Run page's plan and ``compassess run`` state before judging."""
        dataset = data if isinstance(data, Dataset) else self.read_data(data)[0]
        return estimate_time(kind_of(settings).prompt_work(dataset, settings),
                             self.backend.list_runs(), settings.model, settings.device)

    def create_run(self, data: Source | Dataset | int, settings: RunSettings, *,
                   name: str | None = None) -> "Run":
        """Store ``data`` (when it is not stored yet) and a run of ``settings`` on it, without
        executing it: :meth:`Run.execute` executes it here, :meth:`Run.start_worker` in a
        process of its own. ``name`` defaults to one derived from the settings; an existing run
        of the same name, dataset and settings is returned (to be resumed).

        Raises
        ------
        InputError
            A run of that name exists with other settings or another dataset (the message
            lists the differences), or the name is empty or too long.
        """
        if isinstance(data, (int, np.integer)):
            return self._create_run(None, int(data), settings, name)
        return self._create_run(*self.read_data(data), settings, name)

    def _create_run(self, dataset: Dataset | None, dataset_id: int | None, settings: RunSettings,
                    name: str | None) -> "Run":
        if dataset_id is None:
            dataset_id = self.backend.save_dataset(dataset)
        # The same content may be stored under another name: the run names the stored one.
        stored = next(d.name for d in self.backend.list_datasets() if d.id == dataset_id)
        settings = settings.with_changes(dataset=stored)
        name = settings.default_run_name() if name is None else name
        return Run(self, self.backend.get_run(
            self.backend.create_run(name, dataset_id, settings.to_dict())),
            dataset=dataset if dataset is not None and dataset.name == stored else None)

    def start(self, data: Source | Dataset | int, settings: RunSettings, *,
              name: str | None = None, judge=None, anchors: Source | None = None,
              progress: bool | Reporter = True, chunk_size: int | None = None,
              threads: int | None = None) -> "Run":
        """Execute a run of ``settings`` on ``data`` in this process and return it, finished:
        what :meth:`run` and :meth:`score` do once their settings are built.

        The judge is loaded (unless given) and every prompt checked against its context window
        before anything is stored (the kind's advice, such as a budget too small to rank every
        candidate, is reported first, as warnings); then the dataset, the anchor texts of an
        absolute run with
        ``anchors`` (a CSV of ``context_id, level, text``) and the run are stored, and the run
        executes, storing every micro-batch the moment it is computed. A run of the same name
        and settings resumes: nothing stored is computed again. ``chunk_size``: prompts per
        judge call; ``threads``: CPU threads of a local model (process-wide; 0 = all cores).

        Raises
        ------
        RunInterrupted
            Ctrl-C or a notebook's stop button (a ``KeyboardInterrupt``): the run stops after
            the micro-batch in flight (a second press: at once) and is marked cancelled;
            everything computed is stored, and the same call resumes it.
        RunCancelled
            The run was cancelled in the store (e.g. from the app).
        ValidationError, InputError
            Bad data, settings, model, or prompts too long for the model (nothing stored).
        """
        model_options = ModelOptions(chunk_size=chunk_size, threads=threads)  # checks them
        return self._start(*self.read_data(data), settings, name=name, judge=judge,
                           anchors=anchors, progress=progress, model_options=model_options)

    def _start(self, dataset: Dataset, dataset_id: int | None, settings: RunSettings, *,
               name: str | None, judge, anchors: Source | None, progress: bool | Reporter,
               model_options: ModelOptions) -> "Run":
        """Execute a run of checked ``settings``; of ``model_options`` only what is not in the
        settings applies here (``chunk_size``, ``threads``)."""
        kind = kind_of(settings)
        kind.check(settings)
        references = None
        if anchors is not None:
            if isinstance(anchors, pd.DataFrame):
                anchors = anchors.to_csv(index=False).encode()
            references = absolute.parse_anchor_file(
                anchors, n_levels=settings.reference_options.n_levels,
                context_ids=[c.context_id for c in dataset.contexts])
        reporter = _reporter(progress, kind)
        for line in kind.advice(dataset, settings):
            reporter.message(f"warning: {line}")
        if model_options.threads:  # process-wide: the judge reads it when it loads
            os.environ["COMPASSESS_THREADS"] = str(model_options.threads)
        judge = judge if judge is not None else worker.load_run_judge(settings)
        kind.preflight(dataset, settings, judge)
        run = self._create_run(dataset, dataset_id, settings, name)
        if references:
            n = self.backend.save_references(run.info.dataset_id, settings.aspect,
                                             absolute.UPLOADED, references)
            where = f" from {os.fspath(anchors)}" if isinstance(anchors, (str, os.PathLike)) else ""
            reporter.message(f"stored {n} anchor text(s){where}")
        reporter.message(f"{kind.label} run '{run.name}' on dataset '{run.info.dataset_name}': "
                         f"{kind.planned_total(dataset, settings):,} {kind.unit}, "
                         f"{self.estimate_time(dataset, settings).sentence()}")
        return run.execute(judge=judge, progress=reporter, chunk_size=model_options.chunk_size)

    def run(self, data: Source | Dataset | int, *, aspect: str | None = None,
            mode: str = "comparative", template: str | None = None, task: str = "auto",
            strategy: str = RunSettings.strategy, budget: int | None = None,
            model: str | None = None, contexts: int | None = None,
            seed: int = RunSettings.seed, batch_size: int = RunSettings.batch_size,
            device: str = RunSettings.device, dtype: str = RunSettings.dtype,
            truncate_context: bool = False, name: str | None = None, judge=None,
            progress: bool | Reporter = True, chunk_size: int | None = None,
            threads: int | None = None,
            options: ComparativeOptions | ScoringOptions | None = None,
            model_options: ModelOptions | None = None) -> "Run":
        """Judge ``data`` with an LLM and store every judgement: ``compassess run``.

        ``data`` is a candidate file, its bytes, a DataFrame (validated as an upload is), a
        :class:`Dataset`, or the name or id of a stored dataset. The options are
        :func:`run_settings`'s (keywords, or ``options`` and ``model_options`` objects);
        ``name`` names the run (default: derived from the settings; an existing name with the
        same settings resumes it). ``judge``: a judge already loaded
        (``compassess_core.judges.load_judge``), to reuse one model across runs.
        ``progress``: a progress bar (True), nothing (False) or your own :class:`Reporter`.
        ``chunk_size``: prompts per judge call (the scope of its prefix cache). ``threads``: CPU
        threads of a local model (process-wide; 0 = all cores).

        Returns the finished :class:`Run`; see :meth:`start` for what is raised.
        """
        if mode == "comparative":  # a named template of the store (a tuning's pick)
            template = self.resolve_template(template)
            if isinstance(options, ComparativeOptions) and isinstance(options.template, str):
                options = dataclasses.replace(options,
                                              template=self.resolve_template(options.template))
        kind_options = _run_options(options, Store.run, aspect=aspect, mode=mode,
                                    template=template, task=task, strategy=strategy,
                                    budget=budget, seed=seed)
        model_options = _model_options(
            model_options, Store.run, model=model, contexts=contexts, batch_size=batch_size,
            device=device, dtype=dtype, truncate_context=truncate_context, chunk_size=chunk_size,
            threads=threads)
        return self._start_with(data, kind_options, model_options, name=name, judge=judge,
                                anchors=None, progress=progress)

    def _start_with(self, data, kind_options, model_options: ModelOptions, *, name, judge,
                    anchors, progress) -> "Run":
        """:meth:`start` on ``data`` with the settings its options build (``run``, ``score``)."""
        dataset, dataset_id = self.read_data(data)
        return self._start(dataset, dataset_id,
                           build_settings(dataset.name, kind_options, model_options,
                                          text_columns=dataset.text_columns), name=name,
                           judge=judge, anchors=anchors, progress=progress,
                           model_options=model_options)

    def score(self, data: Source | Dataset | int, *, aspect: str | None = None,
              references: int = ReferenceOptions.n_levels, anchors: Source | None = None,
              task: str = "auto", variant: str = ReferenceOptions.variant,
              orders: str = ReferenceOptions.orders,
              max_new_tokens: int = GenerationOptions.max_new_tokens,
              sample: bool = GenerationOptions.sample,
              temperature: float = GenerationOptions.temperature, model: str | None = None,
              contexts: int | None = None, seed: int = RunSettings.seed,
              batch_size: int = RunSettings.batch_size, device: str = RunSettings.device,
              dtype: str = RunSettings.dtype, truncate_context: bool = False,
              name: str | None = None, judge=None, progress: bool | Reporter = True,
              chunk_size: int | None = None, threads: int | None = None,
              options: AbsoluteOptions | None = None,
              model_options: ModelOptions | None = None) -> "Run":
        """Absolute scores: every candidate compared with synthetic references of quality
        1..``references``: ``compassess score``.

        ``anchors``: your own reference texts (a CSV file or its bytes, or a DataFrame, with
        columns ``context_id, level, text``) instead of references the model writes. The other
        options are :func:`score_settings`'s and :meth:`run`'s (keywords, or ``options`` and
        ``model_options`` objects). Returns the finished :class:`Run`; see :meth:`start` for
        what is raised.
        """
        kind_options = _score_options(
            options, Store.score, aspect=aspect, references=references,
            anchors=anchors is not None, task=task, variant=variant, orders=orders,
            max_new_tokens=max_new_tokens, sample=sample, temperature=temperature, seed=seed)
        if anchors is not None and kind_options.reference_set != absolute.UPLOADED:
            raise InputError("anchors were given, but the options' reference_set is "
                             f"'{kind_options.reference_set}': set it to '{absolute.UPLOADED}'")
        model_options = _model_options(
            model_options, Store.score, model=model, contexts=contexts, batch_size=batch_size,
            device=device, dtype=dtype, truncate_context=truncate_context, chunk_size=chunk_size,
            threads=threads)
        return self._start_with(data, kind_options, model_options, name=name, judge=judge,
                                anchors=anchors, progress=progress)

    # ------------------------------------------------- tuning the judge's wording, templates

    def create_tuning(self, data: Source | Dataset | int, *, aspect: str,
                      name: str | None = None, model: str | None = None, task: str = "auto",
                      contexts: int = TuningOptions.contexts, holdout: int = 0,
                      pairs: int | None = None, rounds: int = TuningOptions.rounds,
                      per_round: int = TuningOptions.per_round, budget: int | None = None,
                      seed: int = 0, batch_size: int = RunSettings.batch_size,
                      device: str = RunSettings.device, dtype: str = RunSettings.dtype,
                      truncate_context: bool = False, created_by: str = "") -> Tuning:
        """Store ``data`` (when not stored yet) and a tuning of the judge's instruction on it,
        without executing it: :meth:`Tuning.execute` executes it here, :meth:`Tuning.start_worker`
        in a process of its own, :meth:`Tuning.plan` says what it costs. The options are
        :meth:`tune`'s. A tuning of the same name and options is returned (to be resumed).

        Raises
        ------
        InputError
            Bad options (``OptionError`` names the field), too few contexts, or a tuning of
            that name with other options.
        """
        options = TuningOptions(model=model or "", task=task, contexts=contexts,
                                holdout=holdout, pairs=pairs, rounds=rounds,
                                per_round=per_round, budget=budget, seed=seed,
                                batch_size=batch_size, device=device, dtype=dtype,
                                truncate_context=truncate_context)
        return create_tuning(self, data, aspect=aspect, name=name, options=options,
                             created_by=created_by)

    def plan_tuning(self, dataset: str | int, *, aspect: str, **options) -> TuningPlan:
        """What a tuning of ``options`` (:meth:`create_tuning`'s keywords but ``name`` and
        ``created_by``) on a stored dataset would cost, without storing it
        (:class:`TuningPlan`: wordings, comparisons, time at this machine's measured speed).

        Raises
        ------
        InputError
            Bad options, too few contexts, or a budget below one wording.
        """
        options.setdefault("model", None)
        options["model"] = options["model"] or ""
        return plan_tuning(self, self._dataset_id(dataset), aspect=aspect,
                           options=TuningOptions(**options))

    def tune(self, data: Source | Dataset | int, *, aspect: str, name: str | None = None,
             model: str | None = None, task: str = "auto",
             contexts: int = TuningOptions.contexts, holdout: int = 0,
             pairs: int | None = None, rounds: int = TuningOptions.rounds,
             per_round: int = TuningOptions.per_round, budget: int | None = None,
             seed: int = 0, batch_size: int = RunSettings.batch_size,
             device: str = RunSettings.device, dtype: str = RunSettings.dtype,
             truncate_context: bool = False, judge=None, writer=None,
             progress: bool | Reporter = True, threads: int | None = None,
             n_boot: int = 1000) -> TuningResult:
        """Tune the judge's instruction on ``data`` for ``aspect`` without labels
        (``compassess tune``): the library's T1 and T2 for the task and built-in paraphrases,
        then ``rounds`` greedy rounds of ``per_round`` paraphrases of the fairest wording so far
        written by the judge (or ``writer``), each judged on every ordered pair (or ``pairs``
        per context) of the first ``contexts`` contexts and picked by ZEPO's fairness (how far
        its raw P(A) is from 1/2; ``tuning``), within ``budget`` comparisons in all. Where the
        data has human labels or a reference column, each wording's agreement is measured on
        the next ``holdout`` contexts, which the pick never sees. The fairest is saved as the
        template named like the tuning (``name``; default dataset-aspect-model), which
        ``run(template=NAME)`` takes. Every wording is a run ``tune-<name>-<key>``: a tuning of
        the same name resumes, nothing stored is judged again. The cost is reported first.

        Returns the :class:`TuningResult` (the table of wordings, the pick, the template).

        Raises
        ------
        RunInterrupted, RunCancelled
            Stopped: everything judged is stored; the same call resumes.
        InputError
            Bad options, data, or a judge that cannot load.
        """
        t = self.create_tuning(data, aspect=aspect, name=name, model=model, task=task,
                               contexts=contexts, holdout=holdout, pairs=pairs, rounds=rounds,
                               per_round=per_round, budget=budget, seed=seed,
                               batch_size=batch_size, device=device, dtype=dtype,
                               truncate_context=truncate_context)
        return t.execute(judge=judge, writer=writer, progress=progress, threads=threads,
                         n_boot=n_boot)

    def tuning(self, name_or_id: str | int) -> Tuning:
        """A stored tuning by name or id.

        Raises
        ------
        InputError
            No tuning of that name or id.
        """
        return Tuning(self, self.backend.get_tuning(name_or_id))

    def tunings(self, dataset: str | int | None = None) -> list[Tuning]:
        """Every stored tuning (of one dataset when given), oldest first."""
        dataset_id = None if dataset is None else self._dataset_id(dataset)
        return [Tuning(self, info) for info in self.backend.list_tunings(dataset_id)]

    def templates(self) -> pd.DataFrame:
        """One row per named template: name, noun, tuning (that saved it), source, text."""
        rows = [dict(name=t.name, noun=t.noun, tuning=t.tuning, source=t.source, text=t.text,
                     updated_at=t.updated_at) for t in self.backend.list_templates()]
        return pd.DataFrame(rows, columns=["name", "noun", "tuning", "source", "text",
                                           "updated_at"])

    def save_template(self, name: str, text: str, *, noun: str | None = None,
                      created_by: str = "") -> None:
        """Store your own template under ``name`` (``{context} {a} {b} {aspect}``; the answer
        noun guessed from it unless given), for ``run(template=name)``.

        Raises
        ------
        InputError
            A bad template or name, or the name taken by another text.
        """
        template = custom_template(text, name=name, noun=noun)
        self.backend.save_template(name, template.text, template.noun, source="saved by hand",
                                   created_by=created_by)

    def delete_template(self, name: str) -> bool:
        """Delete a named template (runs that used it keep their copy of its text)."""
        return self.backend.delete_template(name)

    def resolve_template(self, spec: str | Template | None) -> str | Template | None:
        """What a run's ``template`` names: ``t1``/``t2``/``s1``/``s2`` and an existing template
        file stay as given; otherwise a named template of the store (a tuning's pick) becomes
        the :class:`~compassess_core.prompts.Template` it holds; anything else stays (and the
        run refuses it, naming it)."""
        if spec is None or isinstance(spec, Template):
            return spec
        if spec.lower() in ("t1", "t2", "s1", "s2") or Path(spec).is_file():
            return spec
        stored = self.backend.get_template(spec)
        if stored is None or str(spec).isdigit() and stored.name != spec:
            return spec
        return Template(name=stored.name, text=stored.text, noun=stored.noun)

    # ---------------------------------------------------------------------- human labels

    def _dataset_id(self, dataset: str | int, *, expect_name: str | None = None) -> int:
        """A stored dataset's id from its id, its name, or its id as text; ``expect_name``: the
        name it was shown under, refused (``ObjectChanged``) when it is now called otherwise."""
        infos = self.backend.list_datasets()
        by_name = [] if isinstance(dataset, (int, np.integer)) else [d for d in infos
                                                                      if d.name == dataset]
        for d in by_name or [d for d in infos if str(d.id) == str(dataset)]:
            _expect_name("dataset", d.id, d.name, expect_name)
            return d.id
        if isinstance(dataset, (int, np.integer)):
            raise InputError(f"no stored dataset has the id {int(dataset)} (deleted?)")
        raise InputError(f"no stored dataset named '{dataset}'")

    def import_labels(self, source: Source, *, dataset: str | int, aspect: str = "overall",
                      annotator: str | None = None,
                      annotators: Mapping[str, str] | None = None) -> LabelsImported:
        """Validate human A/B labels (a file, its bytes or a DataFrame with columns
        ``context_id, candidate_a, candidate_b, winner[, annotator]``; ``winner`` one of the two
        ids or ``tie``) against a stored dataset and store them for ``aspect``:
        ``compassess import-labels``. Importing the same labels again adds nothing (the store
        keeps one judgement per person, pair and aspect).

        Who the labels are from: by default the file's ``annotator`` column. With ``annotator``
        (the person importing, as the app does), every label is attributed to that name except
        the file's names that ``annotators`` maps to someone explicitly.

        Raises
        ------
        ValidationError
            Every problem of the labels, each with its row and column; nothing is stored.
        InputError
            No stored dataset of that name or id, or a bad annotator name.
        """
        dataset_id = self._dataset_id(dataset)
        ds = self.backend.load_dataset(dataset_id)
        labels = load_human_labels(source, ds)
        attributed_by = "the file's annotator column"
        if annotator is not None:
            labels = attribute(labels, check_name(annotator, "annotator", dash_first=True),
                               annotators)
            attributed_by = f"the importer ({annotator})" + (
                ", with the file's names mapped explicitly" if annotators else "")
        added = self.backend.add_human_judgements(dataset_id, store_rows(labels, aspect=aspect))
        return LabelsImported(stored=added, already_stored=len(labels) - added, dataset=ds.name,
                              aspect=aspect, attributed=annotator_counts(labels),
                              attributed_by=attributed_by)

    def human_labels(self, dataset: str | int, aspect: str | None = None) -> pd.DataFrame:
        """The human judgements stored for a dataset (of one aspect when given), in the order
        stored: who judged which pair shown in which order, the winner (``A``/``B`` = left/right,
        ``tie``, ``skip``), the seconds it took and the source (``annotate`` or ``import``)."""
        return self.backend.human_judgements_frame(self._dataset_id(dataset), aspect)

    # ------------------------------------------------------------------- the audit report

    def report(self, runs: Sequence[str | int | Verdicts], *, method: str = DEFAULT_METHOD,
               debias: str | float = "balanced", n_boot: int = 200,
               examples: int = EXAMPLES, baseline: str | None = None,
               generated_at: datetime | None = None) -> bytes:
        """The audit report of one or several pairwise runs (names, ids or :class:`Run`
        handles): one self-contained HTML file, UTF-8 (``compassess report``, the Export page's
        download). Each run's section is :meth:`Run.audit` with these options (a ``baseline``
        system adds each system's win rate against it to every run's leaderboard); every two
        runs on the same dataset are compared (:meth:`Run.compare`).

        ``generated_at``: the date the report states (default ``$SOURCE_DATE_EPOCH`` when set,
        else now); the same runs, options and date give the same bytes.

        Raises
        ------
        InputError
            No run, a run given twice, a run that is not pairwise or has no comparison that
            matches its dataset, an unknown method or threshold, ``n_boot < 1``, a baseline
            that is not a system of a run with systems.
        """
        handles = [r if isinstance(r, Verdicts) else self.get_run(r) for r in runs]
        if not handles:
            raise InputError("an audit report needs at least one run")
        ids = [r.id for r in handles]
        twice = sorted({r.name for r in handles if ids.count(r.id) > 1})
        if twice:
            raise InputError(f"run '{twice[0]}' is given twice")
        _check_at_least("n_boot", n_boot, 1)
        _check_at_least("examples", examples, 0)
        audits = [r.audit(method, debias, n_boot=n_boot, examples=examples, baseline=baseline)
                  for r in handles]
        compared = []
        for a, b in itertools.combinations(handles, 2):
            if a.info.dataset_id != b.info.dataset_id:
                compared.append(RunsCompared(
                    a.name, b.name, reason=f"run '{a.name}' judged dataset "
                    f"'{a.info.dataset_name}', run '{b.name}' dataset '{b.info.dataset_name}'"))
                continue
            try:
                thresholds = (f"A: {a.threshold_label(debias)}; B: {b.threshold_label(debias)}"
                              if analysis.is_per_context(debias) else "")
                compared.append(RunsCompared(a.name, b.name, a.compare(b, method, debias),
                                             thresholds=thresholds))
            except InputError as e:  # no pair judged by both
                compared.append(RunsCompared(a.name, b.name, reason=str(e)))
        text = render_report(audits, compared, version=__version__,
                             generated_at=_report_time(generated_at))
        return text.encode("utf-8")

    # ------------------------------------------------------------- managing what is stored

    def delete_run(self, name_or_id: str | int, *, dry_run: bool = False,
                   expect_name: str | None = None) -> Deleted:
        """Delete a stored run with its results (``compassess delete-run``), in one
        transaction; returns what was deleted. ``dry_run=True`` deletes nothing and returns what
        would be deleted.

        Other runs of the same judge that took results from this run's (the cache) keep their
        own copies; later runs no longer find this run's judgements in the cache.

        Raises
        ------
        InputError
            No run of that name or id (``RunNotFoundError``), or a worker is executing the run
            (its heartbeat is live): cancel it (:meth:`Run.cancel`) and delete it once it has
            stopped. A run whose worker died may be deleted.
        ObjectChanged
            The run is not named ``expect_name`` (the name it was shown under).
        """
        run = self.get_run(name_or_id, expect_name=expect_name)
        return Deleted.from_rows(self.backend.delete_run(run.id, dry_run=dry_run))

    def rename_run(self, name_or_id: str | int, new_name: str, *,
                   expect_name: str | None = None) -> "Run":
        """Give a stored run another name (``compassess rename-run``); returns the renamed run.

        Allowed while a worker executes the run: workers, results and the cache know a run by
        its id, not its name.

        Raises
        ------
        InputError
            No run of that name or id (``RunNotFoundError``), an invalid name (the rules of a
            new run's name), or another run already has the name.
        ObjectChanged
            The run is not named ``expect_name`` (the name it was shown under).
        """
        run = self.get_run(name_or_id, expect_name=expect_name)
        self.backend.rename_run(run.id, new_name)
        return Run(self, self.backend.get_run(run.id))

    def delete_dataset(self, name_or_id: str | int, *, dry_run: bool = False,
                       expect_name: str | None = None) -> Deleted:
        """Delete a stored dataset with everything that belongs to it (``compassess
        delete-dataset``), in one transaction: its candidates and reference scores, its runs and
        their results, its human labels, guidelines and reference texts. Returns what was
        deleted; ``dry_run=True`` deletes nothing and returns what would be deleted.

        Raises
        ------
        InputError
            No dataset of that name or id (``RunNotFoundError``), or a worker is executing one
            of its runs: cancel it first.
        ObjectChanged
            The dataset is not named ``expect_name`` (the name it was shown under).
        """
        dataset_id = self._dataset_id(name_or_id, expect_name=expect_name)
        return Deleted.from_rows(self.backend.delete_dataset(dataset_id, dry_run=dry_run))

    def rename_dataset(self, name_or_id: str | int, new_name: str, *,
                       expect_name: str | None = None) -> None:
        """Give a stored dataset another name (``compassess rename-dataset``). The runs on it
        record the new name in their settings, so ``store.run(new_name, ...)`` with a run's
        settings resumes that run. Allowed while its runs execute.

        Raises
        ------
        InputError
            No dataset of that name or id (``RunNotFoundError``), an invalid name (the rules of
            saving one), or another dataset already has the name.
        ObjectChanged
            The dataset is not named ``expect_name`` (the name it was shown under).
        """
        self.backend.rename_dataset(self._dataset_id(name_or_id, expect_name=expect_name),
                                    new_name)

    # ------------------------------------------------ what the app lists, and writes as people work

    def dataset_id(self, dataset: str | int) -> int:
        """A stored dataset's id from its name or id.

        Raises
        ------
        InputError
            No stored dataset of that name or id.
        """
        return self._dataset_id(dataset)

    def object_id(self, kind: str, name_or_id: str | int) -> int:
        """The id of the stored ``kind`` (``dataset``, ``run``, ``panel`` or ``campaign``) named
        or numbered ``name_or_id``: what a link or a command names, made stable across renames.

        Raises
        ------
        InputError
            An unknown kind, or no such object.
        """
        lookups = {"dataset": self._dataset_id,
                   "run": lambda x: self.backend.get_run(x).id,
                   "panel": lambda x: self.backend.get_panel(x).id,
                   "campaign": lambda x: self.backend.get_campaign(x).id}
        if kind not in lookups:
            raise InputError(f"unknown kind of object '{kind}'; one of {', '.join(lookups)}")
        return int(lookups[kind](name_or_id))

    def list_datasets(self) -> list:
        """The stored datasets' records (``id``, ``name``, ``n_contexts``, ``n_candidates``,
        ``score_columns``, ``source``, ``content_hash``, ``created_at``), oldest first: the rows of
        :meth:`datasets` as objects."""
        return self.backend.list_datasets()

    def list_runs(self, dataset: str | int | None = None) -> list["Run"]:
        """Every stored run (of one dataset when given), oldest first, as :class:`Run` handles
        (cheap: a run's dataset and results are read when first asked for)."""
        dataset_id = None if dataset is None else self._dataset_id(dataset)
        return [Run(self, info) for info in self.backend.list_runs(dataset_id)]

    def add_judgements(self, dataset: str | int, rows: Sequence[Mapping], *,
                       again: bool = False, expect_name: str | None = None) -> int:
        """Store people's A/B judgements given in the app (one transaction); returns how many
        were added. Each row: ``context_id``, ``candidate_left``, ``candidate_right``, ``winner``
        (``A`` = left better, ``B``, ``tie``, ``skip``), ``annotator``, ``aspect``, ``seconds``,
        ``shown_order``. A person's second answer on a pair is not added unless ``again`` (a
        deliberate re-answer, stored as the next revision).

        Raises
        ------
        InputError
            Unknown context or candidates, or a bad winner.
        ObjectChanged
            The dataset is not named ``expect_name`` (the name it was shown under).
        """
        return self.backend.add_human_judgements(self._dataset_id(dataset, expect_name=expect_name),
                                                 list(rows), again=again)

    def next_pair(self, dataset: str | int | Dataset, aspect: str, annotator: str, *,
                  mode: str = "random", run: "str | int | Verdicts | None" = None,
                  allow_repeat: bool = False, dataset_id: int | None = None
                  ) -> ShownPair | None:
        """The pair to show ``annotator`` next on ``dataset`` for ``aspect``, with its left/right
        order drawn (the app's free annotation): ``mode`` one of ``annotation.MODES``
        (``uncertain``, ``flips`` and ``informative`` read ``run``'s comparisons at its balanced
        tau*); a pair the person already judged is not offered again unless ``allow_repeat``.
        None when every pair is judged. A :class:`Dataset` already read may be given with its
        ``dataset_id``.

        Raises
        ------
        InputError
            An unknown dataset or mode, or a mode that needs a run without one.
        """
        if isinstance(dataset, Dataset):
            if dataset_id is None:
                raise InputError("a Dataset given to next_pair needs its dataset_id")
            ds = dataset
        else:
            dataset_id = self._dataset_id(dataset)
            ds = self.backend.load_dataset(dataset_id)
        human = self.backend.human_judgements_frame(dataset_id, aspect)
        llm, tau = None, 0.5
        if run is not None:
            judged = run if isinstance(run, Verdicts) else self.get_run(run)
            llm, tau = judged.results, judged.tau("balanced")
        return annotation.next_shown_pair(ds, llm, human, annotator, mode, tau,
                                          allow_repeat=allow_repeat)

    def undo_judgement(self, judgement_id: int, annotator: str) -> bool:
        """Delete one stored judgement of ``annotator`` (their undo); False when it is not
        theirs or already gone."""
        return self.backend.delete_human_judgement(int(judgement_id), annotator)

    def guidelines(self, dataset: str | int) -> str:
        """The annotation guidelines of a dataset ("" when none were written)."""
        return self.backend.get_guidelines(self._dataset_id(dataset))

    def set_guidelines(self, dataset: str | int, text: str) -> None:
        """Replace the annotation guidelines of a dataset."""
        self.backend.set_guidelines(self._dataset_id(dataset), text)

    def people(self) -> list:
        """Everyone with a role (``identity``, ``role``, ``added_by``, ``created_at``)."""
        return self.backend.list_people()

    def role_of(self, identity: str) -> str | None:
        """The stored role of ``identity`` (None: no role)."""
        return self.backend.role_of(identity)

    def set_role(self, identity: str, role: str, added_by: str) -> None:
        """Give ``identity`` a role (``admin`` or ``annotator``), recorded as given by
        ``added_by``.

        Raises
        ------
        InputError
            An unknown role, a bad identity, or taking the last admin's role away.
        """
        self.backend.set_role(identity, role, added_by)

    def remove_person(self, identity: str) -> bool:
        """Take every role from ``identity`` (their stored judgements stay).

        Raises
        ------
        InputError
            The last admin.
        """
        return self.backend.remove_person(identity)

    def references(self, dataset: str | int, aspect: str, reference_set: str) -> list:
        """The reference texts of an absolute run's set (``absolute.Reference``), by context and
        level."""
        return self.backend.load_references(self._dataset_id(dataset), aspect, reference_set)

    def save_references(self, dataset: str | int, aspect: str, reference_set: str,
                        references: Sequence) -> int:
        """Store (or replace) reference texts; returns the rows written. Resuming the run
        rescores the comparisons that used them."""
        return self.backend.save_references(self._dataset_id(dataset), aspect, reference_set,
                                            list(references))

    def save_anchors(self, dataset: str | int, aspect: str, source: Source, *, n_levels: int,
                     reference_set: str = absolute.UPLOADED, file_label: str = "anchors") -> int:
        """Read an anchor file (CSV of ``context_id, level, text``: your own reference texts of
        quality 1..``n_levels``) and store it as the reference set ``reference_set`` of ``aspect``
        (default: the uploaded set).

        Raises
        ------
        ValidationError
            Every problem of the file (a context the dataset lacks included), with its row and
            column; nothing is stored.
        """
        if isinstance(source, pd.DataFrame):
            source = source.to_csv(index=False).encode()
        contexts = [c.context_id for c in self.dataset(self._dataset_id(dataset)).contexts]
        anchors = absolute.parse_anchor_file(source, file_label=file_label, n_levels=n_levels,
                                             context_ids=contexts)
        return self.save_references(dataset, aspect, reference_set, anchors)

    def delete_references(self, dataset: str | int, aspect: str, reference_set: str,
                          context_id: str | None = None) -> int:
        """Delete a set's references (of one context when given), so the run writes them anew."""
        return self.backend.delete_references(self._dataset_id(dataset), aspect, reference_set,
                                              context_id)

    # ---------------------------------------------------------------- annotation campaigns

    def create_campaign(self, name: str, dataset: str | int, aspect: str,
                        annotators: Sequence[str], *, overlap: int = 2, pairs: str = "all",
                        n_pairs: int | None = None, guidelines: str = "", created_by: str = "",
                        seed: int = 0, run: "str | int | Run | None" = None) -> "Campaign":
        """Create an open annotation campaign (``compassess campaign create``): ``annotators``
        label pairs of ``dataset`` for ``aspect``, ``overlap`` people per pair, under
        ``guidelines``. Its pairs are fixed now (``campaigns.choose_pairs``): ``"all"``, a
        seeded ``"sample"`` of ``n_pairs``, or the ``n_pairs`` most ``"informative"`` for the
        ranking fused from the labels stored so far and, when given, ``run``'s comparisons.

        Raises
        ------
        InputError
            No such dataset, the name is taken or invalid, a bad overlap, selection or number
            of pairs.
        """
        dataset_id = self._dataset_id(dataset)
        ds = self.backend.load_dataset(dataset_id)
        human = llm = None
        if pairs == "informative":
            human = self.backend.human_judgements_frame(dataset_id, aspect)
            if run is not None:
                chosen = run if isinstance(run, Verdicts) else self.get_run(run)
                llm = chosen.results
        chosen_pairs = campaigns.choose_pairs(ds, pairs, n_pairs, seed=seed, human_df=human,
                                              llm=llm)
        if int(overlap) > len(annotators) and annotators:
            raise InputError(f"overlap {overlap} needs at least {overlap} annotators; "
                             f"{len(annotators)} given")
        self.backend.create_campaign(name, dataset_id, aspect, pairs=chosen_pairs,
                                     annotators=list(annotators), overlap=overlap,
                                     selection=pairs, seed=seed, guidelines=guidelines,
                                     created_by=created_by)
        return self.campaign(name)

    def campaigns(self, for_identity: str | None = None) -> list["Campaign"]:
        """Every campaign, oldest first; with ``for_identity`` only those that person is
        assigned to now (what an annotator may see)."""
        return [Campaign(self, info) for info in self.backend.list_campaigns(for_identity)]

    def campaign(self, name: str | int) -> "Campaign":
        """A campaign by name (or id).

        Raises
        ------
        InputError
            No campaign of that name.
        """
        return Campaign(self, self.backend.get_campaign(name))

    def assign(self, name: str | int, identities: Sequence[str], *, by: str = "") -> int:
        """Assign people to a campaign (``compassess campaign assign``); returns how many were
        new to it."""
        return self.backend.add_campaign_annotators(self.campaign(name).id, list(identities), by)

    def unassign(self, name: str | int, identities: Sequence[str]) -> int:
        """Take people off a campaign: their answers stay, they can give no new one."""
        return self.backend.remove_campaign_annotators(self.campaign(name).id, list(identities))

    def close(self, name: str | int | None = None) -> None:
        """``close(name)``: close a campaign (no new answer; adjudication still possible).
        ``close()``: close the store's connections."""
        if name is None:
            self.backend.close()
            return
        self.backend.set_campaign_status(self.campaign(name).id, "closed")

    def reopen(self, name: str | int) -> None:
        """Open a closed campaign again."""
        self.backend.set_campaign_status(self.campaign(name).id, "open")

    # ------------------------------------------------------------------- panels of judges

    def create_panel(self, name: str, runs: Sequence[str | int | "Run"], *,
                     weights: str | Sequence[float] = "equal", combine: str = "poe",
                     scaling: str = "balanced", created_by: str = "") -> "Panel":
        """Store a panel of judges (``compassess panel create``): two or more pairwise runs on
        the same dataset and aspect, combined per pair by ``combine`` (``poe``: Gaussian product
        of experts on the debiased log-odds; ``vote``: majority of debiased verdicts), with
        ``weights`` ``equal``, ``learnt`` (from the stored human labels) or one number per run;
        ``scaling``: each member debiased at its own tau* (``balanced``), calibrated on the
        human labels (``calibrated``), or calibrated where labels exist (``auto``).

        Raises
        ------
        InputError
            Fewer than two runs, a run given twice, runs on different datasets or aspects, a run
            that is not pairwise, an unknown combination, scaling or weights, a taken name, or
            learnt weights / calibrated members without human labels (nothing is stored).
        """
        handles = [r if isinstance(r, Verdicts) else self.get_run(r) for r in runs]
        panel.member_names([r.name for r in handles])
        for r in handles:
            r._pairwise("a panel")
            if isinstance(r, Panel):
                raise InputError(f"'{r.name}' is a panel: a panel's members are runs")
        first = handles[0]
        for r in handles[1:]:
            if r.info.dataset_id != first.info.dataset_id:
                raise InputError(f"run '{r.name}' judged dataset '{r.info.dataset_name}', run "
                                 f"'{first.name}' dataset '{first.info.dataset_name}': a panel's "
                                 "runs judge the same dataset")
            if r.settings.aspect != first.settings.aspect:
                raise InputError(f"run '{r.name}' judged aspect '{r.settings.aspect}', run "
                                 f"'{first.name}' aspect '{first.settings.aspect}': a panel's "
                                 "runs judge the same aspect")
        if combine not in panel.COMBINERS:
            raise InputError(f"unknown combination '{combine}'; choose one of "
                             f"{', '.join(panel.COMBINERS)}")
        if scaling not in panel.MEMBER_SCALINGS:
            raise InputError(f"unknown scaling '{scaling}'; choose one of "
                             f"{', '.join(panel.MEMBER_SCALINGS)}")
        parsed = panel.parse_weights(weights, len(handles))
        panel_id = self.backend.create_panel(
            name, first.info.dataset_id, first.settings.aspect, [r.id for r in handles],
            combine=combine, weights=parsed, scaling=scaling, created_by=created_by)
        try:
            return Panel(self, self.backend.get_panel(panel_id))
        except InputError:
            self.backend.delete_panel(panel_id)
            raise

    def panel(self, name: str | int) -> "Panel":
        """A stored panel by name (or id), read back like a :class:`Run`.

        Raises
        ------
        InputError
            No such panel, or it cannot be combined (e.g. learnt weights and the labels gone).
        """
        return Panel(self, self.backend.get_panel(name))

    def panels(self, dataset: str | int | None = None) -> pd.DataFrame:
        """One row per stored panel (of one dataset when given): id, name, dataset, aspect,
        combine, weights, scaling, members, created_at (``compassess panel list``)."""
        dataset_id = None if dataset is None else self._dataset_id(dataset)
        rows = [dict(id=p.id, name=p.name, dataset=p.dataset, aspect=p.aspect,
                     combine=p.combine, weights=panel.weights_label(p.weights),
                     scaling=p.scaling, members=", ".join(p.run_names), created_at=p.created_at)
                for p in self.backend.list_panels(dataset_id)]
        return pd.DataFrame(rows, columns=["id", "name", "dataset", "aspect", "combine",
                                           "weights", "scaling", "members", "created_at"])

    def delete_panel(self, name: str | int, *, expect_name: str | None = None) -> Deleted:
        """Delete a panel's definition (``compassess panel delete``); its runs stay.
        ``expect_name``: the name it was shown under, refused (``ObjectChanged``) when the panel
        is now called otherwise."""
        info = self.backend.get_panel(name)
        _expect_name("panel", info.id, info.name, expect_name)
        return Deleted.from_rows(self.backend.delete_panel(info.id))

    def judges(self, dataset: str | int, aspect: str, *, reference: str | None = None,
               n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> JudgesLeaderboard:
        """The leaderboard of judges (``compassess judges``): every pairwise run and panel on
        ``dataset`` and ``aspect``, best first: by Cohen's kappa with the people's labels when
        the aspect has human labels, else by Spearman x100 with the ``reference`` column
        (default: the column named like the aspect). See :class:`JudgesLeaderboard`.

        Raises
        ------
        InputError
            No such dataset, no judge on it and the aspect, neither human labels nor a reference
            column, ``n_boot < 1``.
        """
        _check_at_least("n_boot", n_boot, 1)
        if n_boot > panel.MAX_BOOT:
            raise InputError(f"n_boot must be at most {panel.MAX_BOOT:,}, not {n_boot:,}")
        dataset_id = self._dataset_id(dataset)
        ds = self.backend.load_dataset(dataset_id)
        if reference is None and aspect in ds.score_columns:
            reference = aspect
        if reference is not None and reference not in ds.score_columns:
            raise InputError(f"dataset '{ds.name}' has no reference column '{reference}' "
                             f"(it has: {', '.join(ds.score_columns) or 'none'})")
        human = self.backend.human_judgements_frame(dataset_id, aspect)
        if len(human) == 0 and reference is None:
            raise InputError(f"dataset '{ds.name}' has neither human labels for aspect "
                             f"'{aspect}' nor a reference-score column to rank judges by")
        judges: list[Verdicts] = [r for r in self.list_runs(dataset_id)
                                  if r.run_kind.is_pairwise and r.settings.aspect == aspect]
        judges = [r for r in judges if r.n_comparisons > 0]
        notes = []
        for info in self.backend.list_panels(dataset_id):
            if info.aspect != aspect:
                continue
            try:
                judges.append(Panel(self, info))
            except InputError as e:
                notes.append(f"panel '{info.name}' left out: {e}")
        if not judges:
            raise InputError(f"no pairwise run or panel on dataset '{ds.name}' and aspect "
                             f"'{aspect}'")
        return judges_board(judges, human, dataset=ds.name, aspect=aspect, reference=reference,
                            n_boot=n_boot, level=level, seed=seed, notes=notes)



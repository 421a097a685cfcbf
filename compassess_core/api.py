"""The Python API: everything ``compassess`` does, for notebooks and scripts.

    import compassess_core as ca

    store = ca.open_store(":memory:")          # or a .db path, a URL, or None for the default store
    run = store.run("assets/sample_summeval.csv", aspect="coherence", contexts=1)
    run.rankings(method="bradley-terry", debias="balanced")      # a DataFrame
    run.evaluation().debiased.spearman_x100                       # a typed report

:class:`Store` mirrors the store and the CLI's verbs that write (``run``, ``score``,
``import-labels``); :class:`Run` mirrors the ones that read a run back (``rank``, ``evaluate``,
``export``, ``agreement``) and ``worker`` (:meth:`Run.execute`). The CLI and the app's pages call
this module, so the three give the same numbers by construction. Walkthrough: docs/python.md.

This module is wiring, like ``worker`` and ``cli``: it computes nothing itself (the run kinds,
``analysis`` and ``agreement`` do) and reaches the store only through ``sink.open_store`` (the
``compassess.stores`` entry point), never by importing ``db``. It must not import a judge
backend at import time (``import compassess_core`` stays free of torch and transformers).
"""

from __future__ import annotations

import inspect
import functools
import itertools
import os
import subprocess
import sys
import time
import dataclasses
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.special import expit

# Some of these names are not used here: compassess_core re-exports them from this module
# (its __all__), for type hints and except clauses.
from . import __version__, absolute, analysis, campaigns, panel, prompts, worker
from .absolute import AbsoluteEvaluation
from .agreement import (AgreementReport, HumanAgreement, agreement_summary, disagreements,
                        human_human_agreement, human_rankings, human_table_from_labels,
                        json_records, llm_vs_human, positional_bias_side_by_side)
from .agreement import AGREEMENT_BOOT
from .analysis import Evaluation, EvaluationReport
from .calibration import (DEFAULT_FOLDS, Calibration, CalibrationReport, calibrate,
                          calibrated_table, fit_on_labels, log_odds)
from .compare import RunComparison, compare_runs
from .data import Source, load_candidates
from .comparative import render_prompt
from .context_window import truncated_text
from .diagnosis import PositionDiagnosis, partial_run_note
from .errors import (CompAssessError, InputError, Problem, RunCancelled, RunInterrupted,
                     ValidationError)
from .export import FORMATS, table_bytes
from .fusion import FusedRanking, fused_rankings, fused_system_ranking
from .labels import annotator_counts, attribute, load_human_labels, store_rows
from .limits import check_name
from .leaderboard import DEFAULT_METHOD, Leaderboard, NoSystemsError, leaderboard
from .length_bias import (LengthBias, comparison_lengths, fitted_curve, length_bias,
                          log2_length_ratio, longer_wins_share)
from .ranking import METHODS
from .report import EXAMPLES, RunAudit, RunsCompared, ShownComparison, render_report
from .options import (AbsoluteOptions, ComparativeOptions, ModelOptions, ScoringOptions,
                      for_aspects, run_options)
from .run_kinds import ReadOptions, RunKind, build_settings, kind_of
from .run_loop import STARTING_PHASE, Progress, RunSummary, worker_state
from .scoring import ScoringEvaluation
from .selection import STRATEGIES
from .settings import GenerationOptions, ReferenceOptions, RunSettings, run_names
from .sink import open_store as _open_backend
from .speed import TimeEstimate, estimate_time, shared_work
from .types import ComparisonTable, Dataset
from .worker import Reporter

#: Ranking methods of ``Run.rankings(method=...)`` (``compassess rank --method``).
RANKING_METHODS: tuple[str, ...] = tuple(METHODS)
#: Pair-selection strategies of ``Store.run(strategy=...)`` (``compassess run --strategy``).
SELECTION_STRATEGIES: tuple[str, ...] = tuple(STRATEGIES)

#: What ``open_store`` takes for a throwaway in-memory store.
_MEMORY = (":memory:", "sqlite://")
#: Label-file columns that tell a label table (validated like a file) from the store's table.
_LABEL_FILE_COLUMNS = {"candidate_a", "candidate_b"}


# ------------------------------------------------------------------------------ progress

class ProgressBar:
    """A :class:`Reporter` drawing a ``tqdm.auto`` progress bar: a widget in Jupyter (a text bar
    where ipywidgets is missing), a redrawn line in a terminal, lines in a log.

    It shows done/total in the run kind's unit, the run's own rate (units per second of judging,
    not counting what came from the cache or was stored before) and the ETA: the numbers
    ``compassess run`` prints. Messages (the judge loaded, truncated contexts, how the run
    ended) are written above the bar.
    """

    def __init__(self, unit: str = "comparisons", rate_unit: str | None = None, *,
                 file=None) -> None:
        self.unit = unit
        self.rate_unit = rate_unit or f"{unit.split()[0]}/s"
        self.file = file
        self._bar = None

    def loaded(self, description: str) -> None:
        """Say which judge was loaded."""
        self.message(f"judge: {description}")

    def message(self, text: str) -> None:
        """Write a line above the bar."""
        _tqdm().write(text, file=self.file or sys.stderr)

    def progress(self, progress: Progress) -> None:
        """Redraw the bar at ``progress`` (closed once everything is done)."""
        rate = (f"{progress.rate:.2f} {self.rate_unit}" if progress.computed
                else f"-- {self.rate_unit}")
        eta = ("--:--:--" if progress.eta_s is None
               else time.strftime("%H:%M:%S", time.gmtime(progress.eta_s)))
        postfix = f"{rate}, ETA {eta}" + (f", {progress.cached} from cache" if progress.cached
                                          else "")
        if self._bar is None:
            self._bar = _tqdm()(
                total=progress.total, initial=progress.done, unit=f" {self.unit}", file=self.file,
                dynamic_ncols=True, leave=True, postfix=postfix,
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt}{unit} [{elapsed}{postfix}]")
        self._bar.total = progress.total
        self._bar.n = progress.done
        self._bar.set_postfix_str(postfix, refresh=False)
        self._bar.refresh()
        if progress.done >= progress.total:
            self.close()

    def close(self) -> None:
        """Close the bar (a run that stops early leaves it where it stopped)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _tqdm():
    """``tqdm.auto.tqdm``: the widget in Jupyter, the text bar elsewhere (and in a notebook without
    ipywidgets, where tqdm's warning about it is left out: the text bar works there too)."""
    import warnings

    from tqdm import TqdmWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TqdmWarning)
        from tqdm.auto import tqdm
    return tqdm


class _Quiet:
    """A reporter that says nothing (``progress=False``)."""

    def loaded(self, description: str) -> None:
        pass

    def progress(self, progress: Progress) -> None:
        pass

    def message(self, text: str) -> None:
        pass


def _reporter(progress: bool | Reporter, kind: RunKind) -> Reporter:
    if progress is True:
        return ProgressBar(kind.unit, kind.rate_unit)
    if progress is False or progress is None:
        return _Quiet()
    return progress


# -------------------------------------------------------------------------------- settings

def _check_at_least(name: str, value: int | None, least: int) -> None:
    if value is not None and value < least:
        raise InputError(f"{name} must be at least {least}, not {value}")


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


def _given_or_built(given: Any, fn: Any, keywords: Mapping[str, Any], build: Any) -> Any:
    """An options object: ``given``, else one ``build`` makes from ``fn``'s ``keywords``. Beside
    a given object those keywords must keep their defaults: a value in two places is refused,
    not silently dropped."""
    if given is None:
        return build(**keywords)
    params = inspect.signature(fn).parameters
    twice = [k for k, v in keywords.items()
             if v is not params[k].default and v != params[k].default]
    if twice:
        raise InputError(f"{', '.join(twice)} given beside an options object: set "
                         f"{'it' if len(twice) == 1 else 'them'} in the object")
    return given


def _model_options(given: ModelOptions | None, fn: Any, **keywords: Any) -> ModelOptions:
    """``model_options``, or the :class:`ModelOptions` of ``fn``'s model keywords."""
    return _given_or_built(given, fn, keywords, ModelOptions)


def _run_options(given: ComparativeOptions | ScoringOptions | None, fn: Any, **keywords: Any
                 ) -> ComparativeOptions | ScoringOptions:
    """``options``, or the options of ``fn``'s ``compassess run`` keywords (``mode``, aspect,
    template, task, strategy, budget, seed)."""
    if given is not None and not isinstance(given, (ComparativeOptions, ScoringOptions)):
        raise InputError(f"{type(given).__name__} are not options of a comparative or scoring "
                         "run (absolute scores: score_settings, Store.score)")
    return _given_or_built(given, fn, keywords, lambda mode, **k: run_options(mode, **k))


def _score_options(given: AbsoluteOptions | None, fn: Any, *, references: int, anchors: bool,
                   max_new_tokens: int, sample: bool, temperature: float, **keywords: Any
                   ) -> AbsoluteOptions:
    """``options``, or the :class:`AbsoluteOptions` of ``fn``'s ``compassess score`` keywords."""
    if given is not None and not isinstance(given, AbsoluteOptions):
        raise InputError(f"{type(given).__name__} are not options of an absolute run (pairwise "
                         "or prompt scoring: run_settings, Store.run)")

    def build(**k: Any) -> AbsoluteOptions:
        return AbsoluteOptions(
            n_levels=k.pop("references"),
            reference_set=absolute.UPLOADED if k.pop("anchors") else "generated",
            generation=GenerationOptions(max_new_tokens=k.pop("max_new_tokens"),
                                         sample=k.pop("sample"),
                                         temperature=k.pop("temperature")), **k)
    return _given_or_built(given, fn, dict(references=references, anchors=anchors,
                                           max_new_tokens=max_new_tokens, sample=sample,
                                           temperature=temperature, **keywords), build)


def run_settings(dataset: str | Dataset, *, aspect: str | None = None, mode: str = "comparative",
                 template: str | None = None, task: str = "auto",
                 strategy: str = RunSettings.strategy, budget: int | None = None,
                 model: str | None = None, contexts: int | None = None,
                 seed: int = RunSettings.seed, batch_size: int = RunSettings.batch_size,
                 device: str = RunSettings.device, dtype: str = RunSettings.dtype,
                 truncate_context: bool = False,
                 options: ComparativeOptions | ScoringOptions | None = None,
                 model_options: ModelOptions | None = None) -> RunSettings:
    """The settings of a ``compassess run`` on dataset ``dataset`` (its name, or the
    :class:`Dataset`, whose column names then choose the wording of ``task="auto"``), checked.

    The keywords are sugar for the two options objects, which may be given instead:
    ``options`` (a :class:`ComparativeOptions` or :class:`ScoringOptions`: aspect to seed) and
    ``model_options`` (a :class:`ModelOptions`: model to truncate_context).

    Parameters
    ----------
    aspect
        A preset (coherence, consistency, fluency, relevance, engagingness, naturalness,
        continuity, understandable, grammar, overall) or your own adjective (required unless
        ``options`` is given).
    mode
        ``comparative`` (pairwise judgements, the paper's method) or ``scoring`` (the
        prompt-scoring baseline: a 1-10 score per candidate, argmax and G-Eval expected score).
    template
        ``t1``/``t2`` or a template file with ``{context} {a} {b} {aspect}`` (default ``t1``);
        with ``mode="scoring"``: ``s1``/``s2`` (default ``s1``).
    task
        Wording of the built-in templates (``prompts.TASK_WORDING``): ``summary``, ``dialogue``,
        ``story``, ``instruction``, ``qa``, ``code``, ``text``, or ``auto`` (the task the data's
        context and text column names say, else the aspect's, as in the paper).
    strategy, budget
        Which ordered pairs are judged (paper §3.4: ``full``, ``random``, ``no-repeat``,
        ``symmetric``; beyond it: ``poe``, ``adaptive``); every strategy but ``full`` needs a
        budget of comparisons per context.
    model
        A ``.gguf`` file, a local model folder, a hub id or ``openai:URL#NAME`` (default: the
        bundled SmolLM2-135M-Instruct).
    contexts
        Only the first N contexts.

    Raises
    ------
    InputError
        An unknown mode, template, task, strategy or a bad budget (the message says which), or
        a keyword given beside the options object that holds it.
    """
    kind_options = _run_options(options, run_settings, aspect=aspect, mode=mode,
                                template=template, task=task, strategy=strategy, budget=budget,
                                seed=seed)
    model_options = _model_options(model_options, run_settings, model=model, contexts=contexts,
                                   batch_size=batch_size, device=device, dtype=dtype,
                                   truncate_context=truncate_context)
    return _settings_for(dataset, kind_options, model_options)


def _settings_for(dataset: str | Dataset, kind_options, model_options: ModelOptions) -> RunSettings:
    """``build_settings`` on a dataset's name, or on a dataset with its text column names."""
    if isinstance(dataset, Dataset):
        return build_settings(dataset.name, kind_options, model_options,
                              text_columns=dataset.text_columns)
    return build_settings(dataset, kind_options, model_options)


def score_settings(dataset: str | Dataset, *, aspect: str | None = None,
                   references: int = ReferenceOptions.n_levels, anchors: bool = False,
                   task: str = "auto", variant: str = ReferenceOptions.variant,
                   orders: str = ReferenceOptions.orders,
                   max_new_tokens: int = GenerationOptions.max_new_tokens,
                   sample: bool = GenerationOptions.sample,
                   temperature: float = GenerationOptions.temperature, model: str | None = None,
                   contexts: int | None = None, seed: int = RunSettings.seed,
                   batch_size: int = RunSettings.batch_size, device: str = RunSettings.device,
                   dtype: str = RunSettings.dtype, truncate_context: bool = False,
                   options: AbsoluteOptions | None = None,
                   model_options: ModelOptions | None = None) -> RunSettings:
    """The settings of a ``compassess score`` (absolute scores from synthetic references of
    quality 1..``references``) on dataset ``dataset``, checked.

    ``anchors``: the references are your own texts (uploaded with the run) instead of written
    by the model. ``variant``: ``bws`` (Better/Worse/Similar) or ``yes-no``; ``orders``:
    ``both``, ``target-first`` or ``reference-first``; ``task``: one of
    ``prompts.TASK_WORDING`` (``summary``, ``dialogue``, ``story``, ``instruction``, ``qa``,
    ``code``, ``text``) or ``auto``. ``sample``/``temperature``/``max_new_tokens``: how references are
    written. ``options`` (an :class:`AbsoluteOptions`, whose ``n_levels`` is ``references``)
    and ``model_options`` (a :class:`ModelOptions`) may be given instead of the keywords.

    Raises
    ------
    InputError
        A bad level count, order, variant, task or decoding setting, or a keyword given beside
        the options object that holds it.
    """
    kind_options = _score_options(options, score_settings, aspect=aspect, references=references,
                                  anchors=anchors, task=task, variant=variant, orders=orders,
                                  max_new_tokens=max_new_tokens, sample=sample,
                                  temperature=temperature, seed=seed)
    model_options = _model_options(model_options, score_settings, model=model, contexts=contexts,
                                   batch_size=batch_size, device=device, dtype=dtype,
                                   truncate_context=truncate_context)
    return _settings_for(dataset, kind_options, model_options)


# ------------------------------------------------------------------------------- the store

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
}


@dataclass(frozen=True)
class Deleted:
    """What :meth:`Store.delete_run` or :meth:`Store.delete_dataset` removed (or, with
    ``dry_run=True``, would remove): rows of each kind. ``scores`` are a scoring run's candidate
    scores, ``absolute_comparisons`` an absolute run's comparisons with reference texts,
    ``labels`` human A/B judgements, ``references`` the reference texts of absolute runs,
    ``campaigns`` the dataset's annotation campaigns with their assignments and pairs.
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

    @classmethod
    def from_rows(cls, rows: Mapping[str, int]) -> "Deleted":
        """From the store's rows per table (``db.store.Store.delete_run``'s answer)."""
        return cls(**{_DELETED_FIELDS[t]: int(n) for t, n in rows.items() if t in _DELETED_FIELDS})

    def __str__(self) -> str:
        parts = [f"{n:,} {_DELETED_WORDS[f][0 if n == 1 else 1]}"
                 for f, n in vars(self).items() if n]
        return ", ".join(parts) or "nothing"


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

    def get_run(self, name_or_id: str | int) -> "Run":
        """A stored run by name or id.

        Raises
        ------
        InputError
            No run of that name or id (``RunNotFoundError``).
        """
        return Run(self, self.backend.get_run(name_or_id))

    def estimate_time(self, data: Source | Dataset | int,
                      settings: RunSettings | Sequence[RunSettings]) -> TimeEstimate:
        """How long judging a run of ``settings`` on ``data`` takes on this machine (the judge's
        loading not included): the size of its prompts in tokens at the model's median prompt
        tokens per second over its earlier runs here (``speed.estimate_time``; rough defaults,
        which ``TimeEstimate.measured`` and ``sentence()`` say, when none measured it). What the
        Run page's plan and ``compassess run`` state before judging. Several settings (the
        aspects of one pass): the runs judged together, what they share counted once
        (``speed.shared_work``)."""
        dataset = data if isinstance(data, Dataset) else self.read_data(data)[0]
        many = [settings] if isinstance(settings, RunSettings) else list(settings)
        work = shared_work([kind_of(s).prompt_work(dataset, s) for s in many])
        return estimate_time(work, self.backend.list_runs(), many[0].model, many[0].device)

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

    def create_runs(self, data: Source | Dataset | int, settings: Sequence[RunSettings], *,
                    name: str | None = None) -> list["Run"]:
        """:meth:`create_run` for runs to be judged together in one pass (the same data and
        judge, e.g. one settings per aspect): named ``name-ASPECT`` each (default: each one's
        own default name). :meth:`execute` or :meth:`start_worker` then judges them together.

        Raises
        ------
        InputError
            As :meth:`create_run`.
        """
        if isinstance(data, (int, np.integer)):
            dataset, dataset_id = None, int(data)
        else:
            dataset, dataset_id = self.read_data(data)
            if dataset_id is None:
                dataset_id = self.backend.save_dataset(dataset)
        return [self._create_run(dataset, dataset_id, s, n)
                for s, n in zip(settings, run_names(name, settings))]

    def execute(self, runs: Sequence["Run | str | int"], *, judge=None,
                progress: bool | Reporter = True, chunk_size: int | None = None) -> list["Run"]:
        """Execute (or resume) stored runs together in this process: one judge, loaded once
        (unless given), judges them in one pass, the prompts of the same pair sharing their
        context and candidates in its prefix cache (``worker.execute_runs``); each run is
        stored, resumable and read back on its own. Returns the runs, refreshed.

        Raises
        ------
        RunInterrupted, RunCancelled, InputError
            As :meth:`Run.execute` (a cancel of any of the runs stops them all; each resumes);
            runs that need different judges are an ``InputError``.
        """
        _check_at_least("chunk_size", chunk_size, 1)
        handles = [r if isinstance(r, Run) else self.get_run(r) for r in runs]
        reporter = _reporter(progress, handles[0]._kind)
        try:
            worker.execute_runs_until_stopped(self.backend, [r.id for r in handles], judge=judge,
                                              reporter=reporter, chunk_prompts=chunk_size)
        finally:
            close = getattr(reporter, "close", None)
            if close is not None:
                close()
        return [r.refresh() for r in handles]

    def start_worker(self, runs: Sequence["Run | str | int"], log_path: str | os.PathLike, *,
                     cwd: str | os.PathLike | None = None) -> subprocess.Popen:
        """Execute stored runs together in one worker process of its own (as the app does for
        several aspects): :meth:`execute` there, writing to ``log_path``. A cancel of any of the
        runs stops the worker; each run resumes on its own or together again.

        Raises
        ------
        InputError
            An in-memory store, which no other process can reach.
        """
        handles = [r if isinstance(r, Run) else self.get_run(r) for r in runs]
        if self.in_memory:
            raise InputError("a worker process cannot reach an in-memory store: open a file or "
                             "a database server with open_store(...) to run in the background")
        for r in handles:  # marked running first, so a second click sees a live worker
            self.backend.set_run_status(r.id, "running", message="worker starting",
                                        phase=STARTING_PHASE)
        return worker.start_worker([r.id for r in handles], self.url, Path(log_path), cwd=cwd)

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

    def start(self, data: Source | Dataset | int,
              settings: RunSettings | Sequence[RunSettings], *,
              name: str | None = None, judge=None, anchors: Source | None = None,
              progress: bool | Reporter = True, chunk_size: int | None = None,
              threads: int | None = None) -> "Run | list[Run]":
        """Execute a run of ``settings`` on ``data`` in this process and return it, finished:
        what :meth:`run` and :meth:`score` do once their settings are built. A sequence of
        settings (one per aspect) makes one run each, judged together in one pass by one judge
        (:meth:`execute`), named ``name-ASPECT``; the list of runs is returned.

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

    def _start(self, dataset: Dataset, dataset_id: int | None,
               settings: RunSettings | Sequence[RunSettings], *,
               name: str | None, judge, anchors: Source | None, progress: bool | Reporter,
               model_options: ModelOptions) -> "Run | list[Run]":
        """Execute a run of checked ``settings`` (several: together); of ``model_options`` only
        what is not in the settings applies here (``chunk_size``, ``threads``)."""
        if not isinstance(settings, RunSettings):
            return self._start_together(dataset, dataset_id, list(settings), name=name,
                                        judge=judge, anchors=anchors, progress=progress,
                                        model_options=model_options)
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

    def _start_together(self, dataset: Dataset, dataset_id: int | None,
                        settings: list[RunSettings], *, name: str | None, judge,
                        anchors: Source | None, progress: bool | Reporter,
                        model_options: ModelOptions) -> list["Run"]:
        """:meth:`_start` of several settings: one judge loaded and every prompt of every run
        checked against it before anything is stored, then the runs judged together."""
        if len(settings) == 1:
            return [self._start(dataset, dataset_id, settings[0], name=name, judge=judge,
                                anchors=anchors, progress=progress, model_options=model_options)]
        if anchors is not None:
            raise InputError("anchor texts belong to one aspect: score several aspects with "
                             "anchors one run at a time")
        names = run_names(name, settings)
        worker.check_one_judge(settings, names)
        kind = kind_of(settings[0])
        reporter = _reporter(progress, kind)
        for s in settings:
            kind_of(s).check(s)
            for line in dict.fromkeys(kind_of(s).advice(dataset, s)):
                reporter.message(f"warning: {s.aspect}: {line}")
        if model_options.threads:  # process-wide: the judge reads it when it loads
            os.environ["COMPASSESS_THREADS"] = str(model_options.threads)
        judge = judge if judge is not None else worker.load_run_judge(settings[0].with_changes(
            batch_size=max(s.batch_size for s in settings)))
        for s in settings:
            kind_of(s).preflight(dataset, s, judge)
        if dataset_id is None:
            dataset_id = self.backend.save_dataset(dataset)
        runs = [self._create_run(dataset, dataset_id, s, n) for s, n in zip(settings, names)]
        reporter.message(f"{len(runs)} runs of {kind.label} on dataset "
                         f"'{runs[0].info.dataset_name}', judged together: " + ", ".join(
                             f"'{r.name}' ({kind_of(s).planned_total(dataset, s):,} "
                             f"{kind_of(s).unit})" for r, s in zip(runs, settings))
                         + f"; {self.estimate_time(dataset, settings).sentence()}")
        return self.execute(runs, judge=judge, progress=reporter,
                            chunk_size=model_options.chunk_size)

    def run(self, data: Source | Dataset | int, *, aspect: str | Sequence[str] | None = None,
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

        ``aspect`` a list of aspects (``["coherence", "fluency", ...]``): one run per aspect,
        named ``name-ASPECT`` (default: each its own default name), judged together in one pass
        by one judge: the prompts of the same pair share the context and both candidates in the
        judge's prefix cache, only the question differs. Each run is stored, resumable and read
        back as if run alone (p equal to a separate run's up to fp32 rounding), and the list of
        runs is returned.

        Returns the finished :class:`Run` (a list for a list of aspects); see :meth:`start`
        for what is raised.
        """
        aspects = None if aspect is None or isinstance(aspect, str) else list(aspect)
        kind_options = _run_options(options, Store.run,
                                    aspect=aspects[0] if aspects else aspect, mode=mode,
                                    template=template, task=task, strategy=strategy,
                                    budget=budget, seed=seed)
        model_options = _model_options(
            model_options, Store.run, model=model, contexts=contexts, batch_size=batch_size,
            device=device, dtype=dtype, truncate_context=truncate_context, chunk_size=chunk_size,
            threads=threads)
        return self._start_with(data, for_aspects(kind_options, aspects) if aspects is not None
                                else kind_options, model_options, name=name, judge=judge,
                                anchors=None, progress=progress)

    def _start_with(self, data, kind_options, model_options: ModelOptions, *, name, judge,
                    anchors, progress) -> "Run | list[Run]":
        """:meth:`start` on ``data`` with the settings its options build (``run``, ``score``;
        a list of options: one run each, judged together)."""
        dataset, dataset_id = self.read_data(data)

        def settings(options):
            return build_settings(dataset.name, options, model_options,
                                  text_columns=dataset.text_columns)
        built = ([settings(o) for o in kind_options] if isinstance(kind_options, list)
                 else settings(kind_options))
        return self._start(dataset, dataset_id, built, name=name, judge=judge, anchors=anchors,
                           progress=progress, model_options=model_options)

    def score(self, data: Source | Dataset | int, *, aspect: str | Sequence[str] | None = None,
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
        ``model_options`` objects); a list of aspects makes one run each, judged together (as
        :meth:`run`). Returns the finished :class:`Run` (a list for a list of aspects); see
        :meth:`start` for what is raised.
        """
        aspects = None if aspect is None or isinstance(aspect, str) else list(aspect)
        kind_options = _score_options(
            options, Store.score, aspect=aspects[0] if aspects else aspect, references=references,
            anchors=anchors is not None, task=task, variant=variant, orders=orders,
            max_new_tokens=max_new_tokens, sample=sample, temperature=temperature, seed=seed)
        if anchors is not None and kind_options.reference_set != absolute.UPLOADED:
            raise InputError("anchors were given, but the options' reference_set is "
                             f"'{kind_options.reference_set}': set it to '{absolute.UPLOADED}'")
        model_options = _model_options(
            model_options, Store.score, model=model, contexts=contexts, batch_size=batch_size,
            device=device, dtype=dtype, truncate_context=truncate_context, chunk_size=chunk_size,
            threads=threads)
        return self._start_with(data, for_aspects(kind_options, aspects) if aspects is not None
                                else kind_options, model_options, name=name, judge=judge,
                                anchors=anchors, progress=progress)

    # ---------------------------------------------------------------------- human labels

    def _dataset_id(self, dataset: str | int) -> int:
        """A stored dataset's id from its id, its name, or its id as text."""
        infos = self.backend.list_datasets()
        by_name = [] if isinstance(dataset, (int, np.integer)) else [d for d in infos
                                                                      if d.name == dataset]
        for d in by_name or [d for d in infos if str(d.id) == str(dataset)]:
            return d.id
        raise InputError(f"no stored dataset named '{dataset}' (see `compassess datasets`)")

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

    def report(self, runs: Sequence[str | int | "Run"], *, method: str = DEFAULT_METHOD,
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
        handles = [r if isinstance(r, Run) else self.get_run(r) for r in runs]
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

    def delete_run(self, name_or_id: str | int, *, dry_run: bool = False) -> Deleted:
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
        """
        return Deleted.from_rows(self.backend.delete_run(name_or_id, dry_run=dry_run))

    def rename_run(self, name_or_id: str | int, new_name: str) -> "Run":
        """Give a stored run another name (``compassess rename-run``); returns the renamed run.

        Allowed while a worker executes the run: workers, results and the cache know a run by
        its id, not its name.

        Raises
        ------
        InputError
            No run of that name or id (``RunNotFoundError``), an invalid name (the rules of a
            new run's name), or another run already has the name.
        """
        run = self.backend.get_run(name_or_id)
        self.backend.rename_run(run.id, new_name)
        return Run(self, self.backend.get_run(run.id))

    def delete_dataset(self, name_or_id: str | int, *, dry_run: bool = False) -> Deleted:
        """Delete a stored dataset with everything that belongs to it (``compassess
        delete-dataset``), in one transaction: its candidates and reference scores, its runs and
        their results, its human labels, guidelines and reference texts. Returns what was
        deleted; ``dry_run=True`` deletes nothing and returns what would be deleted.

        Raises
        ------
        InputError
            No dataset of that name or id (``RunNotFoundError``), or a worker is executing one
            of its runs: cancel it first.
        """
        return Deleted.from_rows(self.backend.delete_dataset(name_or_id, dry_run=dry_run))

    def rename_dataset(self, name_or_id: str | int, new_name: str) -> None:
        """Give a stored dataset another name (``compassess rename-dataset``). The runs on it
        record the new name in their settings, so ``store.run(new_name, ...)`` with a run's
        settings resumes that run. Allowed while its runs execute.

        Raises
        ------
        InputError
            No dataset of that name or id (``RunNotFoundError``), an invalid name (the rules of
            saving one), or another dataset already has the name.
        """
        self.backend.rename_dataset(name_or_id, new_name)

    # ------------------------------------------------ what the app lists, and writes as people work

    def dataset_id(self, dataset: str | int) -> int:
        """A stored dataset's id from its name or id.

        Raises
        ------
        InputError
            No stored dataset of that name or id.
        """
        return self._dataset_id(dataset)

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
                       again: bool = False) -> int:
        """Store people's A/B judgements given in the app (one transaction); returns how many
        were added. Each row: ``context_id``, ``candidate_left``, ``candidate_right``, ``winner``
        (``A`` = left better, ``B``, ``tie``, ``skip``), ``annotator``, ``aspect``, ``seconds``,
        ``shown_order``. A person's second answer on a pair is not added unless ``again`` (a
        deliberate re-answer, stored as the next revision).

        Raises
        ------
        InputError
            Unknown context or candidates, or a bad winner.
        """
        return self.backend.add_human_judgements(self._dataset_id(dataset), list(rows),
                                                 again=again)

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
                chosen = run if isinstance(run, Run) else self.get_run(run)
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
        handles = [r if isinstance(r, Run) else self.get_run(r) for r in runs]
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
        """One row per stored panel (of one dataset when given): name, dataset, aspect,
        combine, weights, scaling, members, created_at (``compassess panel list``)."""
        dataset_id = None if dataset is None else self._dataset_id(dataset)
        rows = [dict(name=p.name, dataset=p.dataset, aspect=p.aspect, combine=p.combine,
                     weights=panel.weights_label(p.weights), scaling=p.scaling,
                     members=", ".join(p.run_names), created_at=p.created_at)
                for p in self.backend.list_panels(dataset_id)]
        return pd.DataFrame(rows, columns=["name", "dataset", "aspect", "combine", "weights",
                                           "scaling", "members", "created_at"])

    def delete_panel(self, name: str | int) -> Deleted:
        """Delete a panel's definition (``compassess panel delete``); its runs stay."""
        return Deleted.from_rows(self.backend.delete_panel(name))

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
        judges: list[Run] = [r for r in self.list_runs(dataset_id)
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
        rows = [_judge_row(j, human, reference, n_boot=n_boot, level=level, seed=seed)
                for j in judges]
        basis = "kappa" if len(human) else "spearman_x100"
        frame = pd.DataFrame(rows)
        frame = frame.sort_values(basis, ascending=False, na_position="last", kind="stable")
        frame.insert(0, "rank", np.arange(1, len(frame) + 1))
        frame = frame.reindex(columns=list(JUDGE_COLUMNS)).reset_index(drop=True)
        return JudgesLeaderboard(dataset=ds.name, aspect=aspect, basis=basis,
                                 reference=reference, n_labels=int(len(human)), n_boot=n_boot,
                                 level=level, frame=frame, notes=notes)


@dataclass(frozen=True)
class ExportFile:
    """One export of a run (:meth:`Run.export_bytes`): the file's bytes, its ``.settings.json``
    sidecar for CSV and Parquet (None for JSON, which holds the settings), the table it was
    written from, and the settings recorded with it."""

    data: bytes
    sidecar: bytes | None
    frame: pd.DataFrame
    metadata: dict


@dataclass(frozen=True)
class PositionalBias:
    """A pairwise run's positional bias at one threshold (the Bias page's gauges): P(A) and P(B)
    (eq. 8) raw (tau = 0.5) and at ``tau``, the flip rate at ``tau`` over the pairs judged in
    both orders, tau* and the counts they rest on."""

    tau: float
    tau_star: float
    p_a_raw: float
    p_b_raw: float
    p_a: float
    p_b: float
    flip_rate: float
    n_pairs_both_orders: int
    n_comparisons: int
    #: The threshold in words (``tau = 0.4123``; ``tau`` is NaN under per-context balancing,
    #: whose label gives the range of the contexts' tau*).
    threshold: str = ""
    #: The lowest and highest P(A) of a single context at ``tau`` (:meth:`Run.bias`): how far
    #: the global tau* leaves contexts from 0.5.
    p_a_context_min: float = float("nan")
    p_a_context_max: float = float("nan")


# ---------------------------------------------------------------------------------- a run

@dataclass(frozen=True)
class Agreement:
    """A run's comparisons against human A/B labels (``compassess agreement``, the Agreement
    page), raw (tau = 0.5) and at ``tau``.

    ``summary`` is what ``compassess agreement --json`` prints (accuracy and Cohen's kappa with
    and without ties, human-human agreement, positional bias of both, the correlation of the
    LLM's Bradley-Terry ranking with the human-only one); ``report`` the same LLM-vs-human
    numbers typed, per annotator too, with confusion matrices; ``positional_bias``,
    ``human_rankings`` and ``disagreements`` the tables behind them.
    """

    labels: str
    tau: float
    summary: dict
    report: AgreementReport
    human_human: HumanAgreement
    positional_bias: pd.DataFrame
    human_rankings: pd.DataFrame
    disagreements: pd.DataFrame
    #: The threshold in words (``tau`` is NaN under per-context balancing).
    threshold: str = ""

    def to_dict(self) -> dict:
        """The summary as JSON-able values, with where the labels came from."""
        return {"labels": self.labels, **self.summary}


def _pairwise_only(what: str):
    """A :class:`Run` method that needs pairwise comparisons: on a run of another kind it raises
    ``InputError`` saying that ``what`` needs them (one guard, declared where the method is)."""
    def wrap(method):
        @functools.wraps(method)
        def guarded(self, *args, **kwargs):
            self._pairwise(what)
            return method(self, *args, **kwargs)
        return guarded
    return wrap


class Run:
    """A stored run: its settings, status and results, read back as DataFrames and typed
    reports (the numbers ``compassess rank|evaluate|export|agreement`` print).

    Get one from :meth:`Store.run`, :meth:`Store.score` or :meth:`Store.get_run`. The
    dataset and the stored results are read once and kept; :meth:`refresh` reads them again
    (e.g. while a worker is still adding results).

    ``debias`` options take ``"none"`` (tau = 0.5, eq. 3), ``"balanced"`` (tau*, the threshold
    that makes P(A) = P(B) = 0.5, eq. 10) or a number in (0, 1).
    """

    def __init__(self, store: Store, info, *, dataset: Dataset | None = None,
                 results: Any = None, parts: tuple | None = None) -> None:
        """``info`` is the store's record of the run. A caller that already holds them (the
        app's caches) may give the ``dataset``, the ``results`` as the run's kind reads them, and
        a pairwise run's ``parts``: ``analysis.split_by_context`` of its comparisons with their
        concatenated p."""
        self.store = store
        self.info = info
        self._dataset = dataset
        self._results = results
        self._parts = parts
        self._length_cache = None
        self._views: dict[str, tuple] = {}
        #: How this view's p were calibrated (what :meth:`calibrated` fitted), else None.
        self.calibration: dict | None = None

    def __repr__(self) -> str:
        return (f"<Run {self.name!r}: {self.kind}, {self.status}, {self.info.done}/"
                f"{self.info.total if self.info.total is not None else '?'} {self._kind.unit}>")

    # ------------------------------------------------------------------------ what it is

    @property
    def name(self) -> str:
        """The run's name (unique in its store)."""
        return self.info.name

    @property
    def id(self) -> int:
        """The run's id in its store."""
        return self.info.id

    @property
    def status(self) -> str:
        """``pending``, ``running``, ``completed``, ``cancelled`` or ``failed`` (as last read)."""
        return self.info.status

    @property
    def state(self) -> str:
        """Whether a worker is alive for the run (as last read; ``run_loop.worker_state``):
        ``working``, ``cancelling``, ``stale`` (marked running, but its worker stopped sending
        heartbeats: it died; :meth:`execute` or ``compassess worker`` resumes), else the status."""
        return worker_state(self.info)

    @property
    def settings(self) -> RunSettings:
        """Everything the run was asked to do (stored with it, in every export)."""
        return RunSettings.from_dict(self.info.settings)

    @property
    def _kind(self) -> RunKind:
        return kind_of(self.info.settings)

    @property
    def kind(self) -> str:
        """``comparative``, ``scoring`` or ``absolute``."""
        return self._kind.name

    @property
    def run_kind(self) -> RunKind:
        """The run's kind (``run_kinds.RUN_KINDS``): its ``label``, the ``unit`` its progress
        counts and the ``rate_unit`` of its speed, ``is_pairwise``, its ``results_page``."""
        return self._kind

    @property
    def dataset(self) -> Dataset:
        """The dataset the run judged (read once)."""
        if self._dataset is None:
            self._dataset = self.store.backend.load_dataset(self.info.dataset_id)
        return self._dataset

    @property
    def results(self) -> Any:
        """The stored results as the run's kind ranks them: a ``ComparisonTable`` (comparative),
        a ``ScoreTable`` (scoring), or ``(comparisons, scores)`` DataFrames (absolute)."""
        if self._results is None:
            self._results = self._kind.read(self.store.backend, self.id, self.dataset,
                                             self.settings)
        return self._results

    def refresh(self) -> "Run":
        """Read the run's status and results again (they change while it executes); a
        calibrated view goes back to the judge's own p."""
        self.info = self.store.backend.get_run(self.id)
        self._results = self._parts = self.calibration = self._length_cache = None
        self._views = {}
        return self

    def _pairwise(self, what: str) -> None:
        """Refuse ``what`` for a run whose kind does not judge pairs (``_pairwise_only``)."""
        if not self._kind.is_pairwise:
            raise InputError(f"run '{self.name}' is a {self._kind.label} run: {what} needs "
                             "pairwise comparisons")

    def _split(self) -> tuple[list, np.ndarray]:
        """The comparisons split by context, with their p concatenated (read once)."""
        if self._parts is None:
            self._parts = analysis.split_with_p(self.dataset, self.results)
        return self._parts

    def _at(self, debias: str | float) -> tuple[analysis.ThresholdView, list, np.ndarray]:
        """The comparisons as ``debias`` reads them (``analysis.threshold_view``: the run's own
        table at one tau, or eq. 9's reweighted p at 0.5 for ``balanced-per-context``), split by
        context with their p concatenated (read once per mode)."""
        key = str(debias)
        if key not in self._views:
            view = analysis.threshold_view(self.results, debias)
            split = (analysis.split_with_p(self.dataset, view.table) if view.per_context
                     else self._split())
            self._views[key] = (view, *split)
        return self._views[key]

    def _options(self, *, method: str = "win-ratio", debias: str | float = "none",
                 ci: bool = False, which: str = "expected", score: str = "level",
                 threshold: float | None = None, reference: str | None = None) -> ReadOptions:
        if reference is None:  # the aspect's column, or its synonym's (engagement)
            reference = prompts.reference_column(self.settings.aspect, self.dataset.score_columns)
        return ReadOptions(method=method, debias=str(debias), ci=ci, which=which, score=score,
                           threshold=threshold, reference=reference)

    # ----------------------------------------------------------------------- reading back

    def comparisons(self) -> pd.DataFrame:
        """Every stored result as a table (the 'comparisons' export): comparisons with p,
        log-probabilities, label mass, latency, prompt hash and time; scored candidates for a
        scoring run; comparisons with references for an absolute run."""
        return self._kind.results_frame(self.store.backend, self.id, self.dataset, self.settings)

    @_pairwise_only("a decision threshold")
    def tau(self, debias: str | float = "balanced") -> float:
        """The decision threshold ``debias`` names on this run's comparisons (``balanced``:
        tau*, the median of p; eq. 10). NaN for ``balanced-per-context``, which has one tau*
        per context: :meth:`thresholds`."""
        if analysis.is_per_context(debias):
            return float("nan")
        return self._at(debias)[0].tau

    @_pairwise_only("a decision threshold")
    def thresholds(self, debias: str | float = "balanced") -> dict[str, float]:
        """Context id -> the threshold its comparisons are decided at under ``debias``: one
        tau* per context (eq. 10 applied context by context) for ``balanced-per-context``, the
        same tau everywhere otherwise."""
        return dict(self._at(debias)[0].context_taus)

    @_pairwise_only("a decision threshold")
    def threshold_label(self, debias: str | float = "balanced", digits: int = 4) -> str:
        """The threshold ``debias`` uses, in words: ``tau = 0.4123``, or ``tau* per context
        (0.3100 to 0.6200)``."""
        return self._at(debias)[0].label(digits)

    @_pairwise_only("what the threshold moves")
    def tau_effect(self, method: str = "win-ratio", debias: str | float = "balanced"
                   ) -> analysis.TauEffect:
        """Which numbers moving the threshold changes for ``method`` on this run's design, and
        how many contexts ``debias`` ranks differently than tau = 0.5 (``analysis.tau_effect``):
        the win ratio counts eq. 10 verdicts; soft methods on the full design (every pair judged
        once in each order) barely move."""
        view, parts_at, _ = self._at(debias)
        return analysis.tau_effect(self._split()[0], view, parts_at, method)

    def rankings(self, method: str = "win-ratio", debias: str | float = "none", *,
                 ci: bool = False, context: str | None = None, which: str = "expected",
                 score: str = "level", threshold: float | None = None) -> pd.DataFrame:
        """One row per candidate, ranked within its context (rank 1 = best): ``compassess rank``.

        Comparative runs: ``method`` (:data:`RANKING_METHODS`: win ratio, eq. 6; average
        probability; Bradley-Terry; product of experts) at the threshold ``debias``, with
        bootstrap 95% intervals when ``ci``. Scoring runs: ranked by ``which`` (``expected``
        = G-Eval, ``argmax``). Absolute runs: by ``score`` (``level``, calibrated 1..N, or the
        paper's ``score``), with ``pass`` at ``score >= threshold`` when given. ``context``:
        one context only. Every reference-score column of the dataset is alongside.

        Raises
        ------
        InputError
            An unknown method, threshold, score or context.
        """
        frame = self._kind.rank(self.dataset, self.results,
                                self._options(method=method, debias=debias, ci=ci, which=which,
                                              score=score, threshold=threshold))
        if context is not None:
            if context not in {c.context_id for c in self.dataset.contexts}:
                raise InputError(f"context '{context}' is not in dataset '{self.dataset.name}'")
            frame = frame[frame["context_id"] == context].reset_index(drop=True)
        return frame

    def ranking_metadata(self, method: str = "win-ratio", debias: str | float = "none", *,
                         which: str = "expected", score: str = "level",
                         threshold: float | None = None) -> dict:
        """How :meth:`rankings` with these options ranks (what a rankings export records):
        method and tau (and the calibration of a :meth:`calibrated` view), the scoring run's
        score, or the absolute run's score and threshold."""
        if self.kind == "scoring":
            return {"method": "g-eval expected score" if which == "expected" else "argmax score"}
        if self.kind == "absolute":
            return {"score": score, "threshold": threshold}
        view = self._at(debias)[0]
        fields = {"method": method, "debias": view.debias,
                  "tau": None if view.per_context else view.tau}
        if view.per_context:
            fields["threshold"] = view.label(4)
            fields["tau_per_context"] = dict(view.context_taus)
        if self.calibration is not None:
            fields["calibration"] = self.calibration
        return fields

    def evaluation(self, method: str = "win-ratio", debias: str | float = "balanced", *,
                   reference: str | None = None, score: str = "level",
                   threshold: float | None = None
                   ) -> EvaluationReport | ScoringEvaluation | AbsoluteEvaluation:
        """Agreement with a reference-score column and positional bias: ``compassess evaluate``.

        ``reference`` defaults to the column named like the run's aspect or a synonym of it
        (``prompts.reference_column``: ``engagement`` for ``engagingness``), when the dataset
        has one. A comparative run gives an :class:`EvaluationReport`: Spearman and Kendall x100
        per context (mean), system level and pooled, pairwise accuracy, P(A)/P(B), raw (tau =
        0.5) and at ``debias``, with tau* and the flip rate. A scoring run gives a
        :class:`ScoringEvaluation` (prompt scoring and G-Eval), an absolute run an
        :class:`AbsoluteEvaluation` (``score``, pass rate at ``threshold``). ``to_dict()``
        gives what ``compassess evaluate --json`` prints.

        Raises
        ------
        InputError
            A reference column the dataset lacks, an unknown method or threshold.
        """
        options = self._options(method=method, debias=debias, score=score, threshold=threshold,
                                reference=reference)
        return self._kind.evaluate(self.dataset, self.results, options, run=self.name)

    @_pairwise_only("an evaluation at one threshold")
    def evaluation_at(self, debias: str | float = "none", *, method: str = "win-ratio",
                      reference: str | None = None) -> Evaluation:
        """The numbers of :meth:`evaluation` at one threshold only (``report.raw`` is
        ``evaluation_at("none")``): cheaper when only one is needed, as for a live tau control.

        Raises
        ------
        InputError
            Not a pairwise run, a reference column the dataset lacks, an unknown method or
            threshold.
        """
        options = self._options(method=method, debias=debias, reference=reference)
        analysis.check_reference(self.dataset, options.reference)
        view, parts, all_p = self._at(options.debias)
        return analysis.evaluate_at(self.dataset, parts, method=method,
                                    reference=options.reference, tau=view.tau, all_p=all_p)

    @_pairwise_only("positional bias")
    def bias(self, debias: str | float = "none") -> pd.DataFrame:
        """Positional bias per context at the threshold ``debias``: P(A) (share won by the
        first position, eq. 8), P(B), the flip rate (share of pairs judged in both orders whose
        verdict changes with the order) and the counts they were computed on, with the threshold
        ``tau`` each context was decided at (its own tau* under ``balanced-per-context``)."""
        return analysis.bias_by_context(self.dataset, self.results, str(debias))

    @_pairwise_only("order dependence")
    def order_dependence(self, debias: str | float = "none") -> pd.DataFrame:
        """Pairs judged in both orders, most order-dependent first: p both ways,
        ``inconsistency`` = |p_ij - (1 - p_ji)| and whether the verdict flips at ``debias``."""
        view = self._at(debias)[0]
        return analysis.order_dependence(self.dataset, self.results,
                                         view.context_taus if view.per_context else view.tau)

    @_pairwise_only("a comparison matrix")
    def matrix(self, context_id: str) -> pd.DataFrame:
        """The p_ij of one context: rows the first position, columns the second (NaN: not
        compared)."""
        ids, m = analysis.context_matrix(self.dataset, self.results, context_id)
        return pd.DataFrame(m, index=pd.Index(ids, name="first"),
                            columns=pd.Index(ids, name="second"))

    def decision_matrix(self, context_id: str, debias: str | float = "none") -> pd.DataFrame:
        """The eq. 10 verdicts of one context at the threshold ``debias``: 1 where the first
        position (row) wins, 0 where the second (column) wins, NaN where not compared."""
        m = self.matrix(context_id)
        view = self._at(debias)[0]
        tau = view.context_taus.get(context_id, 0.5) if view.per_context else view.tau
        return pd.DataFrame(analysis.decision_matrix(m.to_numpy(), tau),
                            index=m.index, columns=m.columns)

    def consistency_matrix(self, context_id: str) -> pd.DataFrame:
        """``p_ij - (1 - p_ji)`` of one context: 0 where the two orders agree, NaN where either
        order was not compared."""
        m = self.matrix(context_id)
        return pd.DataFrame(analysis.consistency_matrix(m.to_numpy()), index=m.index,
                            columns=m.columns)

    @property
    def prompt_tokens_per_comparison(self) -> float | None:
        """Mean prompt tokens the judge reads per unit of the plan (a comparison, or a candidate
        for prompt scoring), counted with the judge's own tokenizer when the worker planned the
        run (``plan['work_tokens']`` over the plan's units); None when not counted (a served
        judge without a tokenizer, a run made before this was recorded)."""
        tokens = (self.info.plan or {}).get("work_tokens")
        return float(tokens) / self.info.total if tokens and self.info.total else None

    @property
    def n_comparisons(self) -> int:
        """Stored comparisons that match the run's dataset (0 for other kinds)."""
        if not self._kind.is_pairwise:
            return 0
        return int(len(self._split()[1]))

    @property
    def context_ids(self) -> list[str]:
        """The contexts with stored results, in the dataset's order."""
        if self._kind.is_pairwise:
            return [cc.context.context_id for cc in self._split()[0]]
        return [c.context_id for c in self.dataset.contexts]

    @property
    def truncated_contexts(self) -> dict[str, int]:
        """Contexts the run cut to fit the model's context window: id -> characters kept."""
        return dict((self.info.plan or {}).get("truncated_contexts") or {})

    @_pairwise_only("probabilities")
    def probabilities(self) -> np.ndarray:
        """Every stored p_ij = P(first position wins) that matches the dataset (eq. 3), in the
        order of :meth:`context_ids`: the histogram of the Bias page."""
        return self._split()[1].copy()

    @_pairwise_only("positional bias")
    def positional_bias(self, debias: str | float = "balanced") -> PositionalBias:
        """P(A) and P(B) (eq. 8) raw and at ``debias``, the flip rate at ``debias`` and tau*:
        the Bias page's gauges."""
        diagnosis = self.position_diagnosis(debias)
        per_context = self.bias(debias)["p_a"].to_numpy(dtype=np.float64)
        per_context = per_context[np.isfinite(per_context)]
        return PositionalBias(
            tau=self.tau(debias), tau_star=self.tau("balanced"), p_a_raw=diagnosis.p_a_raw,
            p_b_raw=1.0 - diagnosis.p_a_raw, p_a=diagnosis.p_a_at_tau,
            p_b=1.0 - diagnosis.p_a_at_tau, flip_rate=diagnosis.flip_rate_at_tau,
            n_pairs_both_orders=diagnosis.n_pairs_both_orders,
            n_comparisons=diagnosis.n_comparisons, threshold=self.threshold_label(debias),
            p_a_context_min=float(per_context.min()) if len(per_context) else float("nan"),
            p_a_context_max=float(per_context.max()) if len(per_context) else float("nan"))

    @_pairwise_only("a positional-bias diagnosis")
    def position_diagnosis(self, debias: str | float = "balanced") -> PositionDiagnosis:
        """What a judge that answers by position looks like in numbers (P(A) and the flip rate,
        raw and at ``debias``), with the message and the remedy the result pages show."""
        return self._diagnosis(debias)

    def _diagnosis(self, debias: str | float) -> PositionDiagnosis:
        view, parts_at, _ = self._at(debias)
        if not view.per_context:
            return analysis.position_diagnosis(self._split()[0], view.tau)
        return analysis.position_diagnosis(self._split()[0], view.tau, parts_at, view.label(3))

    @_pairwise_only("length bias")
    def length_bias(self, debias: str | float = "none") -> LengthBias:
        """How much the judge prefers the longer text: the longer text's share of wins at
        ``debias``, the logistic slope of p on log2(len A / len B) and its intercept (position
        at equal length), on every comparison."""
        fit = length_bias(*self._lengths(), 0.5 if analysis.is_per_context(debias)
                          else self._at(debias)[0].tau)
        if not analysis.is_per_context(debias):
            return fit
        # the slope and intercept are the judge's own (no threshold); the share of wins by the
        # longer text follows each context's tau*, i.e. eq. 9's reweighted p read at 0.5
        len_a, len_b, _ = self._lengths()
        share, n_used = longer_wins_share(len_a, len_b, self._at(debias)[2], 0.5)
        return dataclasses.replace(fit, longer_wins=share, n_length_differs=n_used,
                                   tau=float("nan"))

    def length_points(self, debias: str | float = "none") -> tuple[pd.DataFrame, pd.DataFrame]:
        """The length scatter of the Bias page: every comparison's ``log2_ratio`` (> 0 when the
        first text is longer) and ``p``, and the fitted logistic ``curve`` (``log2_ratio``,
        ``p``) of :meth:`length_bias`."""
        len_a, len_b, p = self._lengths()
        ratio = log2_length_ratio(len_a, len_b)
        fit = self.length_bias(debias)
        grid, curve = fitted_curve(ratio, fit.slope_per_doubling, fit.position_log_odds)
        return (pd.DataFrame({"log2_ratio": ratio, "p": p}),
                pd.DataFrame({"log2_ratio": grid, "p": curve}))

    def _lengths(self):
        if self._length_cache is None:
            self._length_cache = comparison_lengths(self.dataset, self.results)
        return self._length_cache

    @_pairwise_only("a stored comparison")
    def comparison(self, context_id: str, first: str, second: str) -> dict | None:
        """The stored comparison of ``first`` (position A) against ``second`` in one context: p,
        label-word mass, log-probabilities, latency, prompt hash (None: not compared)."""
        return self.store.backend.get_comparison(self.id, context_id, first, second)

    @_pairwise_only("a comparison prompt")
    def prompt(self, context_id: str, first: str, second: str):
        """The exact prompt the judge was given for ``first`` (A) against ``second`` (B): the
        run's template over the stored texts, with the context cut as the run cut it."""
        ctx = self.dataset.context(context_id)
        ids = ctx.candidate_ids
        kept = self.truncated_contexts.get(context_id)
        return render_prompt(ctx, ids.index(first), ids.index(second), self.settings,
                             truncated_text(ctx.text, kept))

    def _stored_labels(self, aspect: str | None) -> pd.DataFrame:
        aspect = aspect or self.settings.aspect
        human = self.human_labels(aspect)
        if len(human) == 0:
            raise InputError(f"no human labels for dataset '{self.dataset.name}' and aspect "
                             f"'{aspect}'; import some with `compassess import-labels` or "
                             "annotate in the app")
        return human

    @_pairwise_only("calibration on human A/B labels")
    def calibrated(self, aspect: str | None = None) -> "Run":
        """This run with its p calibrated on the stored human A/B labels of ``aspect`` (default
        the run's): ``p_cal = sigmoid((logit p - b) / T)``, the bias ``b`` and temperature ``T``
        fitted on every labelled comparison. The returned view ranks, evaluates and exports the
        calibrated p (``--calibrate``), and :attr:`calibration` records the fit, which exports
        carry in their settings.

        Raises
        ------
        InputError
            Not a pairwise run, no stored labels, or no labelled pair judged by the run.
        """
        aspect = aspect or self.settings.aspect
        fit = fit_on_labels(self.results, self._stored_labels(aspect))
        view = Run(self.store, self.info, dataset=self.dataset,
                   results=calibrated_table(self.results, fit))
        view.calibration = {**fit.to_dict(), "labels": f"stored human labels of dataset "
                            f"'{self.dataset.name}', aspect '{aspect}'"}
        return view

    @_pairwise_only("calibration on human A/B labels")
    def calibrate(self, aspect: str | None = None, *, labels: pd.DataFrame | None = None,
                  folds: int = DEFAULT_FOLDS, seed: int = 0) -> CalibrationReport:
        """How well a bias and a temperature fitted on the stored human labels calibrate the
        judge: ``compassess calibrate``. Accuracy, log-loss and expected calibration error of
        the raw p, of the balanced threshold (no labels) and of the calibrated p on held-out
        folds of pairs, with the reliability diagrams and the fit on all labels. ``labels``: a
        table of human judgements as :meth:`human_labels` gives (default: the stored ones).

        Raises
        ------
        InputError
            Not a pairwise run, no stored labels, too few labelled pairs for ``folds``.
        """
        human = self._stored_labels(aspect) if labels is None else labels
        return calibrate(self.results, human, folds=folds, seed=seed)

    @_pairwise_only("a ranking with human labels")
    def fused_rankings(self, level: str = "context", debias: str | float = "none", *,
                       weight: float | None = None, aspect: str | None = None) -> FusedRanking:
        """Rankings from the judge's comparisons and the stored human labels together
        (``compassess rank --with-humans``): a Gaussian product-of-experts fit in which a
        human vote counts as ``weight`` judge comparisons (None: chosen by leave-one-out
        cross-validation over the votes; ``inf``: the humans alone), per context or at
        ``level="system"``.

        Raises
        ------
        InputError
            Not a pairwise run, no stored labels, an unknown level or a negative weight.
        """
        if level not in ("context", "system"):
            raise InputError(f"level must be 'context' or 'system', not '{level}'")
        rank = fused_system_ranking if level == "system" else fused_rankings
        view = self._at(debias)[0]
        return rank(self.dataset, view.table, self._stored_labels(aspect), tau=view.tau,
                    weight=weight)

    @property
    def partial_note(self) -> str | None:
        """A warning when the run stopped before its plan was complete ("Partial run
        (cancelled): 40 of 60 planned comparisons ..."); None for a complete or live run."""
        return partial_run_note(self.status, self.info.done, self.info.total, self._kind.unit)

    @_pairwise_only("a positional-bias diagnosis")
    def position_warning(self, debias: str | float = "balanced") -> str | None:
        """What the result pages warn about a judge that answers by position (P(A) far from 0.5
        or a high flip rate), raw and at ``debias``; None when the judge looks at content."""
        return self._diagnosis(debias).warning()

    @_pairwise_only("a leaderboard")
    def leaderboard(self, method: str = DEFAULT_METHOD, debias: str | float = "balanced", *,
                    reference: str | None = None, baseline: str | None = None, n_boot: int = 200,
                    level: float = 0.95, seed: int = 0) -> Leaderboard:
        """One row per system across every context: ``compassess leaderboard``.

        Strength by ``method`` (default Bradley-Terry through evalica) and win rate against the
        field at the threshold ``debias``, with ``level`` bootstrap intervals that resample
        contexts, then comparisons within each; mean text length, a length-controlled strength
        and, with a reference column (default: the one named like the run's aspect), each
        system's mean reference score and the system-level correlation. Always the comparisons
        and wins of every pair of systems (``pair_counts``).

        With a ``baseline`` system (AlpacaEval's reference model), each other system's win rate
        against it (``win_rate_vs_baseline`` with ``_low``/``_high``, the same context bootstrap),
        the number of those comparisons (``n_vs_baseline``) and the length-controlled win rate
        against it (``lc_win_rate_vs_baseline``); the baseline's own row is NaN, not 0.5.

        Raises
        ------
        NoSystemsError
            The candidates have no ``system`` (an :class:`InputError`; rank per context).
        InputError
            Not a pairwise run, an unknown method, reference column or baseline system (the
            message names the run's systems), ``n_boot < 1``.
        """
        options = self._options(method=method, debias=debias, reference=reference)
        view = self._at(debias)[0]
        board = leaderboard(self.dataset, view.table, method=method, tau=view.tau,
                            reference=options.reference, baseline=baseline, n_boot=n_boot,
                            level=level, seed=seed)
        # one tau* per context is no single tau (the export says which: debias, threshold)
        return dataclasses.replace(board, tau=float("nan")) if view.per_context else board

    def leaderboard_bytes(self, fmt: str = "csv", method: str = DEFAULT_METHOD,
                          debias: str | float = "balanced", *, reference: str | None = None,
                          baseline: str | None = None, n_boot: int = 200, level: float = 0.95,
                          seed: int = 0) -> ExportFile:
        """:meth:`leaderboard` as a ``fmt`` file (``csv``, ``json``, ``parquet``) with the run's
        settings and the leaderboard's method, tau, baseline, pair counts and interval settings
        (inside JSON, in the ``.settings.json`` sidecar of CSV and Parquet): the Leaderboard
        page's download."""
        if fmt not in FORMATS:
            raise InputError(f"unknown export format '{fmt}'; choose one of {', '.join(FORMATS)}")
        board = self.leaderboard(method, debias, reference=reference, baseline=baseline,
                                 n_boot=n_boot, level=level, seed=seed)
        meta = {"run": self.name, "dataset": self.dataset.name,
                **{k: v for k, v in board.to_dict().items() if k != "systems"},
                "debias": str(debias), "threshold": self.threshold_label(debias),
                "settings": self.info.settings}
        data, sidecar = table_bytes(board.frame, fmt, what="leaderboard", metadata=meta)
        return ExportFile(data=data, sidecar=sidecar, frame=board.frame, metadata=meta)

    @_pairwise_only("compare")
    def compare(self, other: "Run", method: str = DEFAULT_METHOD,
                debias: str | float = "balanced") -> RunComparison:
        """This run (A) against ``other`` (B) on the same dataset: ``compassess compare``.
        Verdict agreement and Cohen's kappa on the ordered pairs both judged (each at its own
        threshold ``debias``), rank correlation per context and at system level by ``method``,
        P(A) of each, and the pairs they disagree on.

        Raises
        ------
        InputError
            Either run is not pairwise, the datasets differ, or no pair was judged by both.
        """
        other._pairwise("compare")
        view_a, view_b = self._at(debias)[0], other._at(debias)[0]
        return compare_runs(self.dataset, view_a.table, other.dataset, view_b.table,
                            tau_a=view_a.tau, tau_b=view_b.tau, method=method)

    def human_labels(self, aspect: str | None = None) -> pd.DataFrame:
        """The human judgements stored for this run's dataset and aspect (``aspect`` to pick
        another), as :meth:`Store.human_labels`."""
        return self.store.backend.human_judgements_frame(
            self.info.dataset_id, aspect or self.settings.aspect)

    @_pairwise_only("agreement with human A/B labels")
    def agreement(self, labels: Source | None = None, debias: str | float = "balanced", *,
                  aspect: str | None = None, n_boot: int = AGREEMENT_BOOT,
                  seed: int = 0) -> Agreement:
        """The run against human A/B labels: ``compassess agreement``.

        ``labels``: None for the labels stored for this dataset and the run's aspect (or
        ``aspect``); a label file, its bytes or a DataFrame with its columns (validated, not
        stored); or a table of human judgements as :meth:`human_labels` gives.

        Raises
        ------
        ValidationError
            A label file with problems (every one, with its row and column).
        InputError
            Not a pairwise run, or no labels.
        """
        aspect = aspect or self.settings.aspect
        if labels is None:
            human = self.human_labels(aspect)
            source = f"stored labels for aspect '{aspect}'"
        elif isinstance(labels, pd.DataFrame) and not _LABEL_FILE_COLUMNS <= set(labels.columns):
            human, source = labels, f"{len(labels)} human judgements"
        else:
            human = human_table_from_labels(load_human_labels(labels, self.dataset))
            source = (os.fspath(labels) if isinstance(labels, (str, os.PathLike))
                      else f"{len(human)} labels")
        if len(human) == 0:
            raise InputError(f"no human labels for dataset '{self.dataset.name}' and aspect "
                             f"'{aspect}'; import some with `compassess import-labels` or "
                             "annotate in the app")
        table, dataset = self.results, self.dataset
        view = self._at(debias)[0]
        tau, at = view.tau, view.table
        label = view.label(4)
        report = llm_vs_human(human, table, tau, table_at=at, n_boot=n_boot, seed=seed)
        summary = agreement_summary(human, table, dataset, tau, table_at=at, threshold=label,
                                    n_boot=n_boot, seed=seed, report=report)
        return Agreement(
            labels=source, tau=self.tau(debias), summary=summary, report=report,
            human_human=human_human_agreement(human),
            positional_bias=positional_bias_side_by_side(
                human, table, tau, table_at=at, threshold=label if view.per_context else ""),
            human_rankings=human_rankings(human, dataset),
            disagreements=disagreements(human, at, tau), threshold=label)

    def export_bytes(self, what: str = "rankings", fmt: str = "csv", *, method: str = "win-ratio",
                     debias: str | float = "none", ci: bool = True, which: str = "expected",
                     score: str = "level", threshold: float | None = None) -> ExportFile:
        """The export of the rankings (as :meth:`rankings` with these options, with 95%
        intervals when ``ci``) or of every stored result (``what="comparisons"``), as the bytes of
        a ``fmt`` file (``csv``, ``json`` or ``parquet``) with the run's settings: what
        ``compassess export`` writes and the app's Export page downloads, byte for byte. CSV and
        Parquet come with a ``.settings.json`` sidecar, JSON holds the settings. CSV cells a
        spreadsheet would execute are neutralised.

        Raises
        ------
        InputError
            An unknown format, ``what``, method or threshold.
        """
        if fmt not in FORMATS:
            raise InputError(f"unknown export format '{fmt}'; choose one of {', '.join(FORMATS)} "
                             "(or name the file with one of those suffixes)")
        meta = {"run": self.name, "dataset": self.dataset.name, "settings": self.info.settings,
                "judge": self.info.judge_key, "compassess_version": __version__}
        if what == "rankings":
            frame = self.rankings(method, debias, ci=ci, which=which, score=score,
                                  threshold=threshold)
            meta.update(self.ranking_metadata(method, debias, which=which, score=score,
                                              threshold=threshold))
            if self._kind.is_pairwise:
                meta.update(debias=str(debias), tau_star=self.tau("balanced"),
                            n_comparisons=self.n_comparisons)
                # In the table too: a CSV read without its sidecar still says how it was ranked
                # (each row's own context's tau* under per-context balancing).
                taus = self.thresholds(debias)
                frame = frame.assign(method=meta["method"],
                                     tau=frame["context_id"].map(taus).astype(float))
                if ci:
                    meta["ci"] = ("ci_low/ci_high: 95% percentile bootstrap, 200 resamples of "
                                  "each context's comparisons")
        elif what == "comparisons":
            frame = self.comparisons()
            if self.calibration is not None:
                frame["p_calibrated"] = Calibration(self.calibration["bias"],
                                                    self.calibration["temperature"]).apply(frame["p"])
        else:
            raise InputError(f"unknown export '{what}'; choose rankings or comparisons")
        if self.calibration is not None:
            meta["calibration"] = self.calibration
        data, sidecar = table_bytes(frame, fmt, what=what, metadata=meta)
        return ExportFile(data=data, sidecar=sidecar, frame=frame, metadata=meta)

    def export(self, path: str | os.PathLike, what: str = "rankings", *,
               format: str | None = None, method: str = "win-ratio",
               debias: str | float = "none", ci: bool = True, which: str = "expected",
               score: str = "level", threshold: float | None = None) -> list[Path]:
        """Write :meth:`export_bytes` to ``path`` (``format``: ``csv``, ``json`` or ``parquet``,
        default from the file's suffix) and, for CSV and Parquet, its ``.settings.json`` sidecar
        beside it: ``compassess export``. Returns the paths written.

        Raises
        ------
        InputError
            An unknown format or ``what``, or a folder that does not exist.
        """
        path = Path(path)
        fmt = format or path.suffix.lstrip(".").lower()
        if path.parent and not path.parent.exists():
            raise InputError(f"output folder '{path.parent}' does not exist")
        exported = self.export_bytes(what, fmt, method=method, debias=debias, ci=ci, which=which,
                                     score=score, threshold=threshold)
        path.write_bytes(exported.data)
        if exported.sidecar is None:
            return [path]
        sidecar = path.with_name(path.name + ".settings.json")
        sidecar.write_bytes(exported.sidecar)
        return [path, sidecar]

    # ------------------------------------------------------------------- the audit report

    @_pairwise_only("an audit report")
    def audit(self, method: str = DEFAULT_METHOD, debias: str | float = "balanced", *,
              n_boot: int = 200, examples: int = EXAMPLES,
              baseline: str | None = None) -> RunAudit:
        """Everything the audit report shows of this run, computed by this class's methods with
        ``method`` and the threshold ``debias``: the setup, :meth:`leaderboard` (``n_boot``
        replicates, each system's win rate against ``baseline`` when one is named; without
        systems the per-context :meth:`rankings`),
        :meth:`positional_bias`, :meth:`position_diagnosis` and :meth:`bias` raw and at tau,
        :meth:`length_bias` and :meth:`length_points`, one :meth:`evaluation` per reference
        column (the aspect's first), :meth:`agreement` and :meth:`calibrate` on the stored human
        labels of the run's aspect (when there are any), and the ``examples`` most
        order-dependent (:meth:`order_dependence`) and most human-disputed comparisons with
        their exact :meth:`prompt`.

        Raises
        ------
        InputError
            Not a pairwise run, a calibrated view (:meth:`calibrated`), no comparison that
            matches the dataset, an unknown method or threshold.
        """
        if self.calibration is not None:
            raise InputError("the audit report reads the judge's own p (its calibration on the "
                             "human labels is a section of it): report the run, not its "
                             "calibrated view")
        if self.n_comparisons == 0:
            raise InputError(f"run '{self.name}' has no comparison that matches its dataset: "
                             "nothing to report")
        tau = self.tau(debias)
        board = rankings = no_systems = None
        try:
            board = self.leaderboard(method, debias, baseline=baseline, n_boot=n_boot)
        except NoSystemsError as e:
            no_systems = str(e)
            rankings = self.rankings(method, debias)
        columns = list(self.dataset.score_columns)
        asked = prompts.reference_column(self.settings.aspect, columns)
        if asked is not None:  # the column the run was asked about first
            columns.remove(asked)
            columns.insert(0, asked)
        evaluations = tuple(self.evaluation(method, debias, reference=c) for c in columns)
        agreement = calibration = no_labels = no_calibration = None
        aspect = self.settings.aspect
        if len(self.human_labels(aspect)) == 0:
            no_labels = (f"none are stored for dataset '{self.dataset.name}' and aspect "
                         f"'{aspect}' (import some with `compassess import-labels` or annotate "
                         "in the app)")
        else:
            try:
                agreement = self.agreement(None, debias)
            except InputError as e:
                no_labels = str(e)
        if agreement is not None:
            try:
                calibration = self.calibrate(aspect)
            except InputError as e:  # too few labelled pairs for the folds
                no_calibration = str(e)
        dep = self.order_dependence(debias)
        order_dependent = tuple(self._shown(r, r["first"], r["second"])
                                for r in dep.head(examples).to_dict(orient="records"))
        dis = agreement.disagreements if agreement is not None else pd.DataFrame()
        # A disputed pair is shown in an order the run judged (x first unless only y-x was).
        disputed = tuple(self._shown(r, *((r["x"], r["y"]) if np.isfinite(r["p_xy"])
                                          else (r["y"], r["x"])))
                         for r in dis.head(examples).to_dict(orient="records"))
        points, curve = self.length_points(debias)
        return RunAudit(
            name=self.name, status=self.status, partial_note=self.partial_note,
            dataset=self.dataset, settings=dict(self.info.settings),
            judge_key=self.info.judge_key, done=int(self.info.done or 0), total=self.info.total,
            truncated_contexts=self.truncated_contexts, method=method, debias=str(debias),
            tau=tau, n_boot=n_boot, n_comparisons=self.n_comparisons,
            n_contexts=len(self.context_ids), position=self.positional_bias(debias),
            diagnosis=self.position_diagnosis(debias), bias_raw=self.bias("none"),
            bias_at_tau=self.bias(debias), probabilities=self.probabilities(),
            length=self.length_bias(debias), length_points=points, length_curve=curve,
            leaderboard=board, no_systems=no_systems, rankings=rankings,
            evaluations=evaluations, agreement=agreement, no_labels=no_labels,
            calibration=calibration, no_calibration=no_calibration,
            order_dependent=order_dependent, n_order_pairs=len(dep), disputed=disputed,
            n_disputed=len(dis),
            threshold=self.threshold_label(debias) if analysis.is_per_context(debias) else "")

    def _shown(self, row: Mapping, first: str, second: str) -> ShownComparison:
        """A comparison of the report with the exact prompt of ``first`` (A) against ``second``."""
        context_id = row["context_id"]
        return ShownComparison(row=row, first=first, second=second,
                               prompt=self.prompt(context_id, first, second),
                               truncated_chars=self.truncated_contexts.get(context_id))

    def report_html(self, *others: "Run | str | int", method: str = DEFAULT_METHOD,
                    debias: str | float = "balanced", n_boot: int = 200,
                    examples: int = EXAMPLES, baseline: str | None = None,
                    generated_at: datetime | None = None) -> bytes:
        """The audit report of this run (and of ``others``, runs of the same store, compared
        with it where they judged the same dataset) as the bytes of one self-contained HTML file:
        :meth:`Store.report` (``compassess report --run NAME -o report.html``, the Export page's
        download), byte for byte for the same options and ``generated_at``."""
        return self.store.report([self, *others], method=method, debias=debias, n_boot=n_boot,
                                 examples=examples, baseline=baseline, generated_at=generated_at)

    # ------------------------------------------------------------------------- executing

    def execute(self, *, judge=None, progress: bool | Reporter = True,
                chunk_size: int | None = None) -> "Run":
        """Execute (or resume) the run in this process: ``compassess worker``. Only what is
        not stored yet is computed; returns the run, refreshed.

        Raises
        ------
        RunInterrupted
            Ctrl-C or a notebook's stop button (a ``KeyboardInterrupt``; after the micro-batch
            in flight, a second press at once): everything computed is stored, the run is
            marked cancelled, and calling ``execute`` again resumes it.
        RunCancelled
            The run was cancelled in the store (e.g. from the app).
        InputError
            A model that cannot load or that is not the judge that started the run, or prompts
            too long (the run is marked failed with the message).
        """
        _check_at_least("chunk_size", chunk_size, 1)
        reporter = _reporter(progress, self._kind)
        try:
            worker.execute_until_stopped(self.store.backend, self.id, judge=judge,
                                         reporter=reporter, chunk_prompts=chunk_size)
        finally:
            close = getattr(reporter, "close", None)
            if close is not None:
                close()
        return self.refresh()

    def start_worker(self, log_path: str | os.PathLike, *,
                     cwd: str | os.PathLike | None = None) -> subprocess.Popen:
        """Execute the run in a worker process of its own (lower priority, outliving this one),
        as the app does; it writes progress to the store and its output to ``log_path``.
        :meth:`refresh` shows how far it got; :meth:`cancel` stops it.

        Raises
        ------
        InputError
            An in-memory store, which no other process can reach.
        """
        if self.store.in_memory:
            raise InputError("a worker process cannot reach an in-memory store: open a file or "
                             "a database server with open_store(...) to run in the background")
        # Marked running first, so a second click or a second browser sees a live worker.
        self.store.backend.set_run_status(self.id, "running", message="worker starting",
                                          phase=STARTING_PHASE)
        return worker.start_worker(self.id, self.store.url, Path(log_path), cwd=cwd)

    def cancel(self) -> None:
        """Ask whoever executes the run to stop after its micro-batch in flight."""
        self.store.backend.request_cancel(self.id)

    # ---------------------------------------------------------------------- managing it

    def delete(self, *, dry_run: bool = False) -> Deleted:
        """Delete this run with its results (:meth:`Store.delete_run`); this object keeps what
        it had read, but nothing can be read again."""
        return self.store.delete_run(self.id, dry_run=dry_run)

    def rename(self, new_name: str) -> "Run":
        """Give this run another name (:meth:`Store.rename_run`); returns this run, read again."""
        self.store.backend.rename_run(self.id, new_name)
        self.info = self.store.backend.get_run(self.id)
        return self


# ------------------------------------------------------------------------- a campaign

@dataclass(frozen=True)
class CampaignExport:
    """A campaign's labels as a file (:meth:`Campaign.export_bytes`)."""

    data: bytes
    sidecar: bytes | None
    frame: pd.DataFrame
    metadata: dict


class Campaign:
    """An annotation campaign: its pairs, annotators, each one's queue and progress, agreement,
    the pairs people disagree on and their adjudication, and its labels.

    Get one from :meth:`Store.create_campaign`, :meth:`Store.campaign` or
    :meth:`Store.campaigns`. Reads go to the store each time (several people answer at once).
    """

    def __init__(self, store: Store, info) -> None:
        self.store, self.info = store, info

    def __repr__(self) -> str:
        return (f"Campaign({self.name!r}, dataset={self.info.dataset!r}, aspect={self.aspect!r}, "
                f"{self.info.n_pairs} pairs, overlap {self.overlap}, {self.status})")

    @property
    def id(self) -> int:
        return self.info.id

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def dataset_name(self) -> str:
        return self.info.dataset

    @property
    def aspect(self) -> str:
        return self.info.aspect

    @property
    def guidelines(self) -> str:
        return self.info.guidelines

    @property
    def overlap(self) -> int:
        return self.info.overlap

    @property
    def status(self) -> str:
        return self.info.status

    @property
    def annotators(self) -> tuple[str, ...]:
        """The people assigned to it now."""
        return self.info.annotators

    def refresh(self) -> "Campaign":
        """Read the campaign again (status, annotators)."""
        self.info = self.store.backend.get_campaign(self.id)
        return self

    def dataset(self) -> Dataset:
        """The campaign's dataset (its contexts and candidates: what annotators read)."""
        return self.store.backend.load_dataset(self.info.dataset_id)

    def pairs(self) -> pd.DataFrame:
        """Its pairs, fixed when it was created: ``context_id, x, y``."""
        return self.store.backend.campaign_pairs_frame(self.id)

    def labels(self) -> pd.DataFrame:
        """Every answer given in it and every adjudication (``source`` ``"adjudication"``),
        with the comments, in the order stored."""
        return self.store.backend.campaign_judgements_frame(self.id)

    def queue(self, identity: str, *, later: Sequence[tuple[str, str, str]] = ()) -> list:
        """The pairs ``identity`` judges next, ``(context_id, x, y)``, least-labelled first
        (``campaigns.queue``); empty for a person not assigned to it. ``later``: pairs skipped
        in this session, shown last."""
        if identity not in self.refresh().annotators:
            return []
        return campaigns.queue(self.pairs(), self.labels(), identity, self.overlap,
                               seed=self.info.seed, later=later)

    def progress(self) -> pd.DataFrame:
        """One row per annotator: labelled, target, remaining, done (``campaigns.progress``)."""
        return campaigns.progress(self.pairs(), self.labels(), self.annotators, self.overlap)

    def completed(self) -> int:
        """How many pairs have ``overlap`` votes."""
        return campaigns.completed_pairs(self.pairs(), self.labels(), self.overlap)

    def agreement(self) -> HumanAgreement:
        """Inter-annotator agreement of its votes (kappa, Krippendorff's alpha, pairwise);
        adjudications are no votes."""
        return campaigns.agreement(self.labels())

    def agreement_of(self, identity: str) -> dict:
        """How ``identity``'s votes agree with the other annotators' (``n_items``,
        ``agreement``, ``kappa``), naming nobody else: what an annotator is shown."""
        return campaigns.agreement_of(self.labels(), identity)

    def my_labels(self, identity: str) -> pd.DataFrame:
        """``identity``'s own answers in this campaign (their adjudications left out)."""
        labels = self.labels()
        return labels.loc[(labels["annotator"] == identity)
                          & (labels["source"] != campaigns.ADJUDICATION)].reset_index(drop=True)

    def disagreements(self) -> pd.DataFrame:
        """Pairs where people's votes differ, most split first, with any adjudication."""
        return campaigns.disagreements(self.labels())

    def label(self, identity: str, pair: tuple[str, str, str], choice: str, *,
              shown_order: str | None = None, seconds: float | None = None,
              comment: str | None = None) -> int | None:
        """Store ``identity``'s answer on ``pair`` (``choice``: a candidate id of the pair,
        ``tie`` or ``both_bad``); returns the stored row's id, or None when they had already
        answered it in this campaign.

        Raises
        ------
        InputError
            The campaign is closed, the person is not assigned to it (any more), or the pair or
            choice is not the campaign's.
        """
        row = campaigns.stored_winner(pair, choice)
        return self.add_answer(dict(row, annotator=identity, shown_order=shown_order,
                                    seconds=seconds, comment=comment))

    def add_answer(self, row: Mapping[str, Any]) -> int | None:
        """Store one answer as shown on screen (``context_id``, ``candidate_left``,
        ``candidate_right``, ``winner`` A/B/tie/both_bad, ``annotator``, ``seconds``,
        ``shown_order``, ``comment``): the app's Annotate page."""
        return self.store.backend.add_campaign_judgement(self.id, dict(row, source="app"))

    def adjudicate(self, pair: tuple[str, str, str], winner: str, by: str, *,
                   comment: str | None = None) -> int | None:
        """An admin's decision on a pair (``winner``: a candidate id of the pair, ``tie`` or
        ``both_bad``), stored as such (``source`` ``"adjudication"``): it settles the pair and
        is never counted as a vote in :meth:`agreement` or :meth:`progress`. A second decision
        on the pair replaces the first."""
        row = campaigns.stored_winner(pair, winner)
        return self.store.backend.add_campaign_judgement(self.id, dict(
            row, annotator=check_name(by, "adjudicator", dash_first=True), comment=comment,
            source=campaigns.ADJUDICATION))

    def export_bytes(self, fmt: str = "csv") -> CampaignExport:
        """Its labels as ``csv`` or ``json`` bytes (``compassess campaign export``), with the
        campaign recorded beside them (CSV: a ``.settings.json`` sidecar)."""
        if fmt not in ("csv", "json"):
            raise InputError(f"export format '{fmt}' is not csv or json")
        frame = self.labels()
        frame.insert(0, "campaign", self.name)
        meta = dict(campaign=self.name, dataset=self.info.dataset, aspect=self.aspect,
                    overlap=self.overlap, selection=self.info.selection, seed=self.info.seed,
                    status=self.status, annotators=list(self.annotators),
                    created_by=self.info.created_by, n_pairs=self.info.n_pairs,
                    exported_with=f"compassess {__version__}")
        data, sidecar = table_bytes(frame, fmt, what="campaign_labels", metadata=meta)
        return CampaignExport(data, sidecar, frame, meta)

    def export(self, path: str | os.PathLike, fmt: str | None = None) -> Path:
        """Write :meth:`export_bytes` to ``path`` (format from its suffix unless given)."""
        path = Path(path)
        fmt = fmt or path.suffix.lstrip(".").lower() or "csv"
        out = self.export_bytes(fmt)
        path.write_bytes(out.data)
        if out.sidecar is not None:
            path.with_name(path.name + ".settings.json").write_bytes(out.sidecar)
        return path


# ------------------------------------------------------------------------- panels of judges

@dataclass(frozen=True)
class PanelMember:
    """A run on a panel: its ``name``, the ``weight`` it has in the panel (normalised to sum to
    one over the members), how its p was put on the common scale (``scaling``, in words) and
    its comparisons."""

    name: str
    run_id: int
    weight: float
    scaling: str
    n_comparisons: int


class Panel(Run):
    """A panel of judges (``compassess panel``): two or more runs on the same dataset and aspect
    combined into one debiased verdict per pair (``compassess_core.panel``). It reads back as a
    :class:`Run` does (``rankings``, ``evaluation``, ``leaderboard``, ``bias``,
    ``positional_bias``, ``agreement``, ``calibrate``, ``export_bytes``...), on the panel's
    combined p; and what only a panel has: :attr:`members`, :meth:`member_agreement`,
    :meth:`split_pairs`, :meth:`member_evaluations`, :meth:`held_out`.

    Its comparisons have no prompt, log-probabilities or label mass (they belong to one judge):
    :meth:`prompt` and :meth:`comparison` are refused, as is executing it. Get one from
    :meth:`Store.panel` or :meth:`Store.create_panel`.
    """

    def __init__(self, store: Store, info) -> None:
        self.panel_info = info
        self.member_runs = [Run(store, store.backend.get_run(r)) for r in info.run_ids]
        first = self.member_runs[0]
        for run in self.member_runs:
            run._pairwise("a panel")
        self._scalings, self._weights = self._fit(store)
        keys, z = panel.aligned_log_odds([r.results for r in self.member_runs], self._scalings)
        self._keys, self._z = keys, z
        table = panel.panel_table(keys, panel.combine(z, self._weights, info.combine))
        n = len(table)
        run_info = replace(first.info, id=-int(info.id), name=info.name,
                           status=self._status(), done=n, total=n, message=None,
                           judge_key=f"panel of {', '.join(info.run_names)}", rate=self._rate(),
                           plan=None, n_comparisons=n, settings=dict(first.info.settings))
        super().__init__(store, run_info, dataset=first.dataset, results=table)

    # --------------------------------------------------------------------- its definition

    def __repr__(self) -> str:
        return (f"<Panel {self.name!r}: {', '.join(self.panel_info.run_names)}; "
                f"{self.panel_info.combine}, weights {panel.weights_label(self.panel_info.weights)}>")

    @property
    def kind(self) -> str:
        return "panel"

    @property
    def combine(self) -> str:
        """``poe`` (product of experts on the log-odds) or ``vote`` (majority of verdicts)."""
        return self.panel_info.combine

    @property
    def weights_mode(self) -> str:
        """``equal``, ``learnt`` or ``set by hand``."""
        w = self.panel_info.weights
        return w if isinstance(w, str) else "set by hand"

    @property
    def members(self) -> tuple[PanelMember, ...]:
        """The member runs, in order, with their weights and scales."""
        return tuple(PanelMember(r.name, r.id, float(w), s.how, r.n_comparisons)
                     for r, w, s in zip(self.member_runs, self._weights, self._scalings))

    def definition(self) -> dict:
        """What the panel is, JSON-able (exports and ``--json`` carry it)."""
        return dict(panel=self.name, dataset=self.dataset.name, aspect=self.panel_info.aspect,
                    combine=self.combine, weights=self.panel_info.weights,
                    scaling=self.panel_info.scaling,
                    members=[dict(run=m.name, weight=m.weight, scaling=m.scaling,
                                  n_comparisons=m.n_comparisons) for m in self.members])

    def _status(self) -> str:
        statuses = {r.status for r in self.member_runs}
        return "completed" if statuses == {"completed"} else ", ".join(sorted(statuses))

    def _rate(self) -> float | None:
        """Comparisons per second of judging of the whole panel: every member's comparisons over
        the seconds they took together (None when a member recorded no rate)."""
        rates = [r.info.rate for r in self.member_runs]
        if any(not rate for rate in rates):
            return None
        n = np.array([r.n_comparisons for r in self.member_runs], dtype=float)
        return float(n.sum() / (n / np.array(rates, dtype=float)).sum())

    @property
    def prompt_tokens_per_comparison(self) -> float | None:
        """Prompt tokens per comparison of the whole panel: every member's prompt tokens over
        every member's comparisons (None when a member's were not counted)."""
        per = [r.prompt_tokens_per_comparison for r in self.member_runs]
        if any(t is None for t in per):
            return None
        n = np.array([r.info.total for r in self.member_runs], dtype=float)
        return float((n * np.array(per, dtype=float)).sum() / n.sum())

    def _labels(self, store: Store) -> pd.DataFrame:
        return store.backend.human_judgements_frame(self.panel_info.dataset_id,
                                                    self.panel_info.aspect)

    def _fit(self, store: Store) -> tuple[list, Any]:
        """Each member's scale (tau*, or calibrated on the labels) and the members' weights."""
        info = self.panel_info
        human = self._labels(store) if (info.scaling != "balanced"
                                        or info.weights == "learnt") else None
        has_labels = human is not None and len(human) > 0
        if not has_labels and (info.scaling == "calibrated" or info.weights == "learnt"):
            raise InputError(f"panel '{info.name}' needs human labels of dataset "
                             f"'{info.dataset}' and aspect '{info.aspect}' "
                             f"({'calibrated members' if info.scaling == 'calibrated' else 'learnt weights'}); "
                             "import some with `compassess import-labels` or annotate in the app")
        scalings = []
        for run in self.member_runs:
            if has_labels and info.scaling in ("calibrated", "auto"):
                try:
                    scalings.append(panel.calibrated_scaling(fit_on_labels(run.results, human)))
                    continue
                except InputError:
                    if info.scaling == "calibrated":
                        raise
            scalings.append(panel.balanced_scaling(run.results.p))
        n = len(self.member_runs)
        if info.weights == "learnt":
            keys, z = panel.aligned_log_odds([r.results for r in self.member_runs], scalings)
            rows = panel.labelled_rows(keys, human)
            weights = panel.fit_weights(z[rows["row"].to_numpy()], rows["y"].to_numpy())
        elif info.weights == "equal":
            weights = np.full(n, 1.0 / n)
        else:
            weights = np.asarray(info.weights, dtype=float) / float(np.sum(info.weights))
        return scalings, weights

    # --------------------------------------------------------------- what only a panel has

    def member_agreement(self) -> "panel.MemberAgreement":
        """How the members agree on the pairs' verdicts: pairwise Cohen's kappa, Fleiss' kappa,
        Krippendorff's alpha, and each member's agreement with the panel."""
        pairs, lo = panel.pair_verdicts(self._keys, self._z)
        return panel.member_agreement([r.name for r in self.member_runs], lo,
                                      self._panel_pair_log_odds(pairs))

    def split_pairs(self) -> pd.DataFrame:
        """The pairs where the members' verdicts differ, most evenly split first: the panel's
        verdict, the count each way and each member's verdict."""
        pairs, lo = panel.pair_verdicts(self._keys, self._z)
        return panel.split_pairs(pairs, [r.name for r in self.member_runs], lo,
                                 self._panel_pair_log_odds(pairs))

    def _panel_pair_log_odds(self, pairs: pd.DataFrame) -> np.ndarray:
        """The panel's own pair-level log-odds (its combined p, order-averaged as a member's)."""
        keys = pd.DataFrame({"context_id": self.results.context_ids,
                             "a_id": self.results.a_ids, "b_id": self.results.b_ids})
        own, lo = panel.pair_verdicts(keys, log_odds(self.results.p)[:, None])
        merged = pairs.merge(own.assign(lo=lo[:, 0]), on=["context_id", "x", "y"], how="left")
        return merged["lo"].to_numpy(dtype=float)

    def member_evaluations(self, method: str = "win-ratio", debias: str | float = "balanced",
                           *, reference: str | None = None) -> dict:
        """The panel's :meth:`evaluation` (Spearman, Kendall, P(A), flip rate) beside each
        member's, with the same options: ``compassess panel evaluate --json``."""
        return dict(definition=self.definition(),
                    panel=self.evaluation(method, debias, reference=reference).to_dict(),
                    members={r.name: r.evaluation(method, debias, reference=reference).to_dict()
                             for r in self.member_runs})

    def member_warnings(self) -> dict[str, str]:
        """What the result pages warn about each member that answers by position (P(A) far
        from 0.5 or a high flip rate, raw and at its tau*), by member name; members that look at
        content are left out. Each member is debiased at its own tau* in the panel, but a judge
        that only answers by position adds little after debiasing, and the panel says so."""
        found = {r.name: r.position_warning("balanced") for r in self.member_runs}
        return {name: text for name, text in found.items() if text}

    def held_out(self, *, folds: int = DEFAULT_FOLDS, seed: int = 0,
                 weights: str | Sequence[float] | None = None, combine: str | None = None
                 ) -> ComparisonTable:
        """The panel's p on every labelled ordered pair, each predicted without its own pair's
        labels (members calibrated and weights learnt on the other folds, where the panel uses
        labels at all): the honest basis of its agreement with people. ``weights`` and
        ``combine`` override the panel's (a benchmark compares variants on the same runs).

        Raises
        ------
        InputError
            No stored labels, or fewer than 2 labelled pairs the members judged.
        """
        human = self._labels(self.store)
        if len(human) == 0:
            raise InputError(f"no human labels for dataset '{self.dataset.name}' and aspect "
                             f"'{self.panel_info.aspect}'")
        mode = self.panel_info.weights if weights is None else weights
        raw = [(self._z[:, m] * s.temperature) + s.offset for m, s in enumerate(self._scalings)]
        held = panel.cross_validated_panel(
            raw, [r.results.p for r in self.member_runs], self._keys, human,
            method=combine or self.combine, learn_weights=mode == "learnt",
            calibrate_members=self.panel_info.scaling != "balanced",
            weights=None if isinstance(mode, str) else mode, folds=folds, seed=seed)
        keys = self._keys.iloc[held.rows]
        return panel.panel_table(keys.reset_index(drop=True), held.p)

    # ---------------------------------------------------------- what a panel cannot do

    def comparisons(self) -> pd.DataFrame:
        """The panel's combined p per ordered pair, with each member's p beside it (NaN: that
        member did not judge the pair)."""
        frame = pd.DataFrame({"context_id": self.results.context_ids,
                              "a_id": self.results.a_ids, "b_id": self.results.b_ids,
                              "p": self.results.p})
        members = self._keys.copy()
        for m, (run, s) in enumerate(zip(self.member_runs, self._scalings)):
            members[f"p_{run.name}"] = expit(self._z[:, m] * s.temperature + s.offset)
        return frame.merge(members, on=["context_id", "a_id", "b_id"], how="left")

    def export_bytes(self, what: str = "rankings", fmt: str = "csv", **options) -> ExportFile:
        """As :meth:`Run.export_bytes`, with the panel's definition in the recorded settings."""
        out = super().export_bytes(what, fmt, **options)
        meta = {**out.metadata, "panel": self.definition()}
        data, sidecar = table_bytes(out.frame, fmt, what=what, metadata=meta)
        return ExportFile(data=data, sidecar=sidecar, frame=out.frame, metadata=meta)

    def refresh(self) -> "Panel":
        """Read the panel and its members again."""
        fresh = Panel(self.store, self.store.backend.get_panel(self.panel_info.id))
        self.__dict__.update(fresh.__dict__)
        return self

    def _refuse(self, what: str):
        raise InputError(f"'{self.name}' is a panel of judges: {what} belongs to one of its "
                         f"runs ({', '.join(self.panel_info.run_names)})")

    def comparison(self, context_id: str, first: str, second: str) -> dict | None:
        """Refused: a stored comparison belongs to one of the panel's runs."""
        self._refuse("a stored comparison")

    def prompt(self, context_id: str, first: str, second: str):
        """Refused: a prompt belongs to one of the panel's runs."""
        self._refuse("a prompt")

    def calibrated(self, aspect: str | None = None) -> "Run":
        """Refused: calibrate the members instead (``scaling='calibrated'``)."""
        self._refuse("a calibrated view (the panel's members are calibrated with scaling "
                     "'calibrated')")

    def audit(self, method: str = DEFAULT_METHOD, debias: str | float = "none", *,
              n_boot: int = 200, examples: int = EXAMPLES,
              baseline: str | None = None) -> RunAudit:
        """The audit report's content for the panel (:meth:`Run.audit` on the combined p, at
        tau = 0.5 by default since the members are debiased already), its setup the panel's
        definition with each member's model and template; a shown comparison has each member's
        debiased p instead of a prompt (every member had its own)."""
        audit = super().audit(method, debias, n_boot=n_boot, examples=examples,
                              baseline=baseline)
        definition = self.definition()
        for member, run in zip(definition["members"], self.member_runs):
            member.update(model=run.settings.model, template=run.settings.template_name)
        return replace(audit, panel=definition)

    def _shown(self, row: Mapping, first: str, second: str) -> ShownComparison:
        keys = self._keys
        at = np.flatnonzero((keys["context_id"].to_numpy(dtype=object) == str(row["context_id"]))
                            & (keys["a_id"].to_numpy(dtype=object) == str(first))
                            & (keys["b_id"].to_numpy(dtype=object) == str(second)))
        z = self._z[at[0]] if len(at) else np.full(len(self.member_runs), np.nan)
        members = {r.name: (None if not np.isfinite(v) else float(1.0 / (1.0 + np.exp(-v))))
                   for r, v in zip(self.member_runs, z)}
        return ShownComparison(row=row, first=first, second=second, prompt=None,
                               members=members)

    def report_html(self, *others: "Run | str | int", method: str = DEFAULT_METHOD,
                    debias: str | float = "none", n_boot: int = 200,
                    examples: int = EXAMPLES, baseline: str | None = None,
                    generated_at: datetime | None = None) -> bytes:
        """The panel's audit report (:meth:`Run.report_html`, at tau = 0.5 by default: the
        members are debiased already); ``compassess panel report``."""
        return super().report_html(*others, method=method, debias=debias, n_boot=n_boot,
                                   examples=examples, baseline=baseline,
                                   generated_at=generated_at)

    def execute(self, **kwargs) -> "Run":
        """Refused: a panel executes nothing (its runs did)."""
        self._refuse("executing")

    def start_worker(self, *args, **kwargs):
        """Refused: a panel executes nothing (its runs did)."""
        self._refuse("executing")

    def cancel(self) -> None:
        """Refused: a panel executes nothing (its runs did)."""
        self._refuse("cancelling")

    def delete(self, *, dry_run: bool = False) -> Deleted:
        """Delete the panel's definition (:meth:`Store.delete_panel`); its runs stay."""
        return self.store.delete_panel(self.panel_info.id)

    def rename(self, new_name: str) -> "Run":
        """Refused: create the panel anew under the other name."""
        self._refuse("renaming (create the panel anew under the other name)")


# ------------------------------------------------------------------------ judges' leaderboard

#: Columns of :attr:`JudgesLeaderboard.frame`.
JUDGE_COLUMNS = (
    "rank", "judge", "kind", "model", "template", "members", "n_comparisons", "n_labelled_pairs",
    "accuracy", "accuracy_low", "accuracy_high", "kappa", "kappa_low", "kappa_high",
    "log_loss_raw", "log_loss_calibrated", "ece_raw", "ece_calibrated", "spearman_x100",
    "p_a_raw", "flip_rate_raw", "longer_wins", "length_slope_per_doubling",
    "comparisons_per_s", "tokens_per_comparison", "held_out", "note")


@dataclass(frozen=True)
class JudgesLeaderboard:
    """Every run and panel on a dataset and aspect, best first (``compassess judges``).

    ``basis`` says what they are ranked by: ``kappa`` (Cohen's kappa of the debiased pair verdicts
    with the humans' decisive majority, ties left out, with ``level`` bootstrap intervals over
    labelled pairs) when the dataset's aspect has human labels, else ``spearman_x100`` against the
    ``reference`` column. ``frame`` has one row per judge (:data:`JUDGE_COLUMNS`): accuracy and
    kappa with intervals; log-loss (nats) and expected calibration error of the raw p and of p
    calibrated on held-out folds; Spearman x100 with the reference at the balanced tau*; P(A) and
    flip rate at tau = 0.5; the longer text's share of wins and the length slope (log-odds per
    doubling); comparisons per second as measured (a panel: all its members' comparisons over
    their seconds together); prompt tokens per comparison, counted with the judge's tokenizer
    when the run was planned (a panel: all its members' tokens over all their comparisons).
    ``held_out`` is True where a panel uses labels (learnt weights, calibrated members) and its
    agreement is that of held-out folds.
    """

    dataset: str
    aspect: str
    basis: str
    reference: str | None
    n_labels: int
    n_boot: int
    level: float
    frame: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-able (NaN as None): what ``compassess judges --json`` prints."""
        rows = json_records(self.frame)
        return dict(dataset=self.dataset, aspect=self.aspect, basis=self.basis,
                    reference=self.reference, n_labels=self.n_labels, n_boot=self.n_boot,
                    level=self.level, judges=rows, notes=list(self.notes))


def _judge_row(judge: Run, human: pd.DataFrame, reference: str | None, *, n_boot: int,
               level: float, seed: int) -> dict:
    """One judge's row of :class:`JudgesLeaderboard` (every number from the judge's own API)."""
    nan = float("nan")
    is_panel = isinstance(judge, Panel)
    settings = judge.settings
    row = dict(judge=judge.name, kind="panel" if is_panel else "run",
               model=None if is_panel else settings.model,
               template=None if is_panel else settings.template_name,
               members=", ".join(judge.panel_info.run_names) if is_panel else None,
               n_comparisons=(sum(r.n_comparisons for r in judge.member_runs) if is_panel
                              else judge.n_comparisons),
               n_labelled_pairs=0, accuracy=nan, accuracy_low=nan, accuracy_high=nan, kappa=nan,
               kappa_low=nan, kappa_high=nan, log_loss_raw=nan, log_loss_calibrated=nan,
               ece_raw=nan, ece_calibrated=nan, spearman_x100=nan, held_out=False, note="")
    notes = []
    if len(human):
        table = judge.results
        if is_panel and (judge.weights_mode == "learnt" or judge.panel_info.scaling != "balanced"):
            try:
                table = judge.held_out()
                row["held_out"] = True
            except InputError as e:
                notes.append(str(e))
        try:
            tau = analysis.resolve_tau("balanced", table.p)
            a = panel.human_agreement_interval(human, table, tau, n_boot=n_boot, level=level,
                                               seed=seed)
            row.update(n_labelled_pairs=a.n_pairs, accuracy=a.accuracy,
                       accuracy_low=a.accuracy_low, accuracy_high=a.accuracy_high,
                       kappa=a.kappa, kappa_low=a.kappa_low, kappa_high=a.kappa_high)
            cal = calibrate(table, human)
            row.update(log_loss_raw=cal.raw.log_loss, log_loss_calibrated=cal.calibrated.log_loss,
                       ece_raw=cal.raw.ece, ece_calibrated=cal.calibrated.ece)
        except InputError as e:
            notes.append(str(e))
    if reference is not None:
        sp = judge.evaluation(reference=reference).debiased.spearman_x100
        row["spearman_x100"] = nan if sp is None else float(sp)
    pos = judge.positional_bias("none")
    length = judge.length_bias("balanced")
    row.update(p_a_raw=pos.p_a_raw, flip_rate_raw=pos.flip_rate,
               longer_wins=length.longer_wins,
               length_slope_per_doubling=length.slope_per_doubling,
               comparisons_per_s=judge.info.rate if judge.info.rate else nan,
               tokens_per_comparison=judge.prompt_tokens_per_comparison or nan)
    if judge.partial_note:
        notes.append(judge.partial_note)
    row["note"] = "; ".join(notes)
    return row

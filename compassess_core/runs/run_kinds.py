"""The kinds of run, as ``ranking.METHODS`` holds ranking methods: a protocol and a registry.

A run kind builds a run's settings from the user's options (``options``) and says what to warn
about before it starts, what a run plans (its work items and their prompts), how a batch is computed
with the loaded judge, how the run's stored results are ranked and evaluated, and the unit its
progress counts, and how a run reads as text (its evaluation, its ranking's header, its line in
a run picker) and where the app shows it. The CLI and the pages ask the kind for these instead of
branching on kind names. The one run loop (``run_loop.run_plan``) drives every kind's plan, and the
worker (``worker``), the CLI and the pages find a run's kind here by the ``kind`` of its settings.
A new kind is one class with these members and one line in :data:`RUN_KINDS`.

This module must never import the store or a UI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence, TextIO

import pandas as pd

from .absolute import AbsoluteKind
from .comparative import DEFAULT_CHUNK_PROMPTS, ComparativeKind
from .context_window import ContextFit
from ..errors import InputError
from .options import KindOptions, ModelOptions, with_data_task
from .run_loop import WorkPlan
from .scoring import ScoringKind
from .settings import RunSettings
from ..types import ComparisonPrompt, Dataset


@dataclass
class RunJob:
    """What a kind needs to plan one run: its data, settings and judge, what is already stored,
    and the store (the absolute kind also keeps its references there)."""

    dataset: Dataset
    dataset_id: int
    settings: RunSettings
    judge: Any
    run_id: int
    stored: Mapping
    store: Any
    chunk_prompts: int = DEFAULT_CHUNK_PROMPTS
    report: Callable[[str], None] = field(default=lambda message: None)
    cancelled: Callable[[], bool] = field(default=lambda: False)


@dataclass(frozen=True)
class ReadOptions:
    """How a run's results are read back (each kind uses the options that apply to it).

    ``method``/``debias``/``ci``: comparative rankings; ``which``: the prompt-scoring score
    (``expected`` = G-Eval, ``argmax``); ``score``/``threshold``: absolute scores;
    ``reference``: the reference-score column to evaluate against.
    """

    method: str = "win-ratio"
    debias: str = "none"
    ci: bool = False
    which: str = "expected"
    score: str = "level"
    threshold: float | None = None
    reference: str | None = None


class RunKind(Protocol):
    """One kind of run. ``unit`` names what ``done``/``total`` count; ``rate_unit`` its speed;
    ``label`` the kind in a sentence. ``is_pairwise``: its results are pairwise comparisons
    (what bias, agreement, calibration, leaderboards and run comparisons read);
    ``results_page``: the app page that shows its results (``rankings``, ``scores``);
    ``ranked_rows``: what ``compassess rank --format json`` calls its rows;
    ``completed_is_final``: a completed run has nothing left to compute, so resuming it loads
    no judge (False where stored inputs of a run may change after it completed, such as an
    absolute run's edited reference texts)."""

    name: str
    unit: str
    rate_unit: str
    label: str
    is_pairwise: bool
    results_page: str
    ranked_rows: str
    completed_is_final: bool

    def settings(self, dataset: str, options: KindOptions, model: ModelOptions) -> RunSettings:
        """The checked settings of a run on dataset ``dataset`` (its name) from the kind's
        options and the model options (``InputError`` for a combination it cannot run)."""

    def advice(self, dataset: Dataset, settings: RunSettings) -> list[str]:
        """What the user should know before starting a run of ``settings`` on ``dataset`` (not
        errors: the run can start), one sentence each; the CLI prints them as warnings, the
        Run page shows them."""

    def check(self, settings: RunSettings) -> None:
        """Raise ``InputError`` for settings this kind cannot run."""

    def judge_label_words(self, settings: RunSettings) -> tuple[str, ...] | None:
        """Label words to load the judge with (None: the judge's own defaults)."""

    def judge_key(self, judge: Any) -> str:
        """The identity the run records for this judge and the cache matches."""

    def preflight(self, dataset: Dataset, settings: RunSettings, judge: Any) -> ContextFit:
        """Check settings, judge and prompt lengths before anything is stored (``InputError``)."""

    def planned_total(self, dataset: Dataset, settings: RunSettings) -> int:
        """How many units (``unit``) the run plans, known before a judge is loaded: what the Run
        page states, with an estimate of the time, before Start."""

    def example_prompt(self, dataset: Dataset, settings: RunSettings
                       ) -> tuple[str, tuple[str, ...], ComparisonPrompt] | None:
        """One prompt the run would give the judge, for a preview before Start: the first
        context's id, the candidate ids in it and the prompt (None: the kind has none to show
        before it runs)."""

    def prompt_work(self, dataset: Dataset, settings: RunSettings) -> list[tuple[str, float]]:
        """The texts the judge runs through the model for the whole plan, each with how many
        times: a context's passage once (the judge's prefix cache computes a shared passage
        once), each candidate once per prompt it is in, the template's own words once per
        prompt. Counted in tokens (the worker, with the judge's tokenizer) or characters (the
        plan before Start), it is the size of the run's work: ``speed.work_size``."""

    def plan(self, job: RunJob) -> WorkPlan:
        """What the run still lacks, chunk by chunk, and how to compute it."""

    def read(self, reader: Any, run_id: int, dataset: Dataset, settings: RunSettings) -> Any:
        """The run's stored results, as this kind's ranking and evaluation take them; read only
        through ``reader.read_results(run_id, self.name)`` (``reader``: a ``sink.ResultSink``,
        the store or a ``MemorySink``)."""

    def rank(self, dataset: Dataset, results: Any, options: ReadOptions) -> pd.DataFrame:
        """One row per candidate, ranked within its context."""

    def evaluate(self, dataset: Dataset, results: Any, options: ReadOptions, *, run: str = "") -> Any:
        """The kind's evaluation report (``to_dict()`` gives what ``compassess evaluate --json``
        prints)."""

    def results_frame(self, reader: Any, run_id: int, dataset: Dataset,
                      settings: RunSettings) -> pd.DataFrame:
        """Every stored result as a table (the 'comparisons' export), read only through
        ``reader.read_results(run_id, self.name, detail=True)``."""

    def ranking_header(self, run: str, results: Any, settings: RunSettings, fields: dict,
                       n_rows: int) -> str:
        """The line ``compassess rank`` prints above the ranking of run ``run`` (``fields``:
        ``api.Run.ranking_metadata``; ``n_rows``: the rows shown)."""

    def print_evaluation(self, report: Any, out: TextIO) -> None:
        """Write ``evaluate``'s report as ``compassess evaluate`` prints it."""

    def summary_line(self, info: Any) -> str:
        """How much a stored run holds, as a run picker shows it (``info``: the store's record
        of the run), e.g. ``40 comparisons``."""


RUN_KINDS: dict[str, RunKind] = {
    "comparative": ComparativeKind(),
    "scoring": ScoringKind(),
    "absolute": AbsoluteKind(),
}


def get_kind(name: str | None) -> RunKind:
    """The kind registered under ``name`` (``None``: comparative, as runs stored before kinds).

    Raises
    ------
    InputError
        An unknown kind (the message lists the known ones).
    """
    kind = RUN_KINDS.get(name or "comparative")
    if kind is None:
        raise InputError(f"unknown run kind '{name}'; known kinds: {', '.join(RUN_KINDS)}")
    return kind


def kind_of(settings: RunSettings | Mapping) -> RunKind:
    """The kind of a run from its settings (typed or as stored)."""
    name = settings.get("kind") if isinstance(settings, Mapping) else settings.kind
    return get_kind(name)


def build_settings(dataset: str, options: KindOptions, model: ModelOptions, *,
                   text_columns: Sequence[str] = ()) -> RunSettings:
    """The settings of a run on dataset ``dataset`` (its name): the kind the options are of
    builds them. The one builder behind the CLI, the Run page and the Python API. A task
    ``auto`` takes the wording the data's ``text_columns`` name (``Dataset.text_columns``:
    ``story_prompt``/``story`` -> story), else the aspect's (``prompts.infer_task``); the
    settings store the task chosen (in the template's name and text, or the references').

    Raises
    ------
    InputError
        Options the kind cannot run together (the options themselves were checked when made).
    """
    return get_kind(options.kind).settings(dataset, with_data_task(options, text_columns), model)

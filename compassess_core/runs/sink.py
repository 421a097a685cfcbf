"""The one interface through which a run reads and writes its results: the engine never imports ``db``.

``db.store.Store`` implements :class:`ResultSink` for SQLAlchemy; :class:`MemorySink` keeps
everything in memory (notebooks, and tests that are not about storage). Results are records of the
run kind named by ``kind`` (``run_kinds.RUN_KINDS``): ``ComparisonResult`` keyed by ``PairKey``,
``ScoreResult`` by ``CandidateKey``, ``AbsoluteResult`` by ``AbsoluteKey`` (all in ``types``);
each has ``key``, ``judgement`` and ``prompt_hash``. A run's results are written and read back
through the same methods, whatever the kind, so a run kind never asks a sink for anything else.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Hashable, Iterable, Protocol, Sequence, runtime_checkable

import numpy as np
import pandas as pd

from ..errors import CompAssessError, InputError
from ..types import (ABSOLUTE_COLUMNS, COMPARISON_COLUMNS, ComparisonTable, ScoreTable)

#: Statuses after which a run's cancel request has been honoured or no longer matters.
TERMINAL_STATUSES = frozenset({"completed", "cancelled", "failed"})


@runtime_checkable
class ResultSink(Protocol):
    """Where a run's results go, the moment they are computed, and what it already holds."""

    def stored_results(self, run_id: int, kind: str) -> dict[Hashable, Any]:
        """Every result already stored for the run, by key (never recomputed)."""

    def cached_results(self, kind: str, model_key: str, label_words: str,
                       prompt_hashes: Iterable[str]) -> dict[str, Any]:
        """Judgements any run of ``kind`` stored for the same judge, label words and prompt."""

    def add_results(self, run_id: int, kind: str, results: list) -> None:
        """Store results atomically (a key already stored is kept; absolute results replace it)."""

    def read_results(self, run_id: int, kind: str, detail: bool = False) -> Any:
        """A run's stored results as the analysis of ``kind`` takes them: ``comparative`` a
        ``ComparisonTable`` in the order stored (``detail``: a frame of ``COMPARISON_COLUMNS``
        with latency, prompt hash and time), ``scoring`` a ``ScoreTable``, ``absolute`` a frame of
        ``ABSOLUTE_COLUMNS`` sorted by context, candidate, order and level; NaN where unknown."""

    def record_judge(self, run_id: int, judge_key: str) -> None:
        """Record the judge that executes the run; a different judge than before is an error."""

    def record_plan(self, run_id: int, plan: dict) -> None:
        """Record what planning found (context window, longest prompt, truncated contexts)."""

    def set_run_status(self, run_id: int, status: str, *, done: int | None = None,
                       total: int | None = None, message: str | None = None,
                       rate: float | None = None, judge_s: float | None = None,
                       token_rate: float | None = None, phase: str | None = None) -> None:
        """Record status (``running``, ``completed``, ``cancelled``, ``failed``), progress, the
        rate (units per second), the seconds of judging since the first judged batch, the prompt
        tokens processed per second of it, and a heartbeat; ``phase`` (``run_loop.PHASE_TEXT``:
        starting, loading, planning, judging) with the time it began, when it changes."""

    def cancel_requested(self, run_id: int) -> bool:
        """True when someone (another process, the UI) asked this run to stop."""


class MemorySink:
    """An in-memory ``ResultSink`` (no cache across runs), for notebooks and tests."""

    def __init__(self) -> None:
        self.results: dict[int, dict[Hashable, Any]] = {}
        self.kinds: dict[int, str] = {}
        self.status: dict[int, dict] = {}
        self.judges: dict[int, str] = {}
        self.plans: dict[int, dict] = {}
        self.cancel: set[int] = set()

    def stored_results(self, run_id: int, kind: str) -> dict[Hashable, Any]:
        return dict(self.results.get(run_id, {}))

    def cached_results(self, kind, model_key, label_words, prompt_hashes) -> dict[str, Any]:
        return {}

    def add_results(self, run_id: int, kind: str, results: list) -> None:
        if self.kinds.setdefault(run_id, kind) != kind:
            raise CompAssessError(f"run {run_id} holds {self.kinds[run_id]} results, not {kind}")
        bucket = self.results.setdefault(run_id, {})
        for r in results:
            if kind == "absolute":
                bucket[r.key] = r
            else:
                bucket.setdefault(r.key, r)

    def read_results(self, run_id: int, kind: str, detail: bool = False) -> Any:
        held = self.kinds.get(run_id, kind)
        if held != kind:
            raise CompAssessError(f"run {run_id} holds {held} results, not {kind}")
        if kind not in MEMORY_READS:
            raise InputError(f"unknown run kind {kind!r}; choose one of {', '.join(MEMORY_READS)}")
        return MEMORY_READS[kind](list(self.results.get(run_id, {}).values()), detail)

    def record_judge(self, run_id: int, judge_key: str) -> None:
        if self.judges.setdefault(run_id, judge_key) != judge_key:
            raise InputError(f"run {run_id} was judged by {self.judges[run_id]}, but its model now "
                             f"loads as {judge_key}: the model changed; start a new run")

    def record_plan(self, run_id: int, plan: dict) -> None:
        self.plans[run_id] = dict(plan)

    def set_run_status(self, run_id, status, *, done=None, total=None, message=None,
                       rate=None, judge_s=None, token_rate=None, phase=None) -> None:
        before = self.status.get(run_id, {})
        if phase is None or phase == before.get("phase"):
            phase, phase_at = before.get("phase"), before.get("phase_at")
        else:
            phase_at = time.time()
        self.status[run_id] = dict(status=status, done=done, total=total, message=message,
                                   rate=rate, judge_s=judge_s, token_rate=token_rate,
                                   heartbeat=time.time(), phase=phase, phase_at=phase_at)
        if status in TERMINAL_STATUSES:
            self.cancel.discard(run_id)

    def cancel_requested(self, run_id: int) -> bool:
        return run_id in self.cancel


# ---------------------------------------------------------------- reading result records back
#
# What ``MemorySink.read_results`` hands back, built from the records it holds; the store builds
# the same shapes from its tables (``db.results``). Times are not kept in memory (NaT).

def _floats(results: Sequence[Any], name: str) -> np.ndarray:
    return np.array([getattr(r.judgement, name) for r in results], dtype=np.float64)


def _ids(values: Iterable[str]) -> np.ndarray:
    return np.array(list(values), dtype=object)


def comparative_read(results: Sequence[Any], detail: bool) -> ComparisonTable | pd.DataFrame:
    """``ComparisonResult`` records as a ``ComparisonTable`` (``detail``: ``COMPARISON_COLUMNS``)."""
    if not detail:
        if not results:
            return ComparisonTable.empty()
        return ComparisonTable(_ids(r.key.context_id for r in results),
                               _ids(r.key.a_id for r in results), _ids(r.key.b_id for r in results),
                               *(_floats(results, n) for n in ("p", "logp_a", "logp_b",
                                                               "label_mass")))
    data: dict[str, Any] = {n: pd.Series([getattr(r.key, n) for r in results], dtype="str")
                            for n in ("context_id", "a_id", "b_id")}
    for n in ("p", "logp_a", "logp_b", "label_mass", "latency_ms"):
        data[n] = _floats(results, n)
    data["prompt_hash"] = pd.Series([r.prompt_hash for r in results], dtype="str")
    data["created_at"] = pd.Series(pd.NaT, index=range(len(results)), dtype="datetime64[ns, UTC]")
    return pd.DataFrame(data, columns=list(COMPARISON_COLUMNS))


def scoring_read(results: Sequence[Any], detail: bool) -> ScoreTable:
    """``ScoreResult`` records as a ``ScoreTable`` (no details beyond it)."""
    probs = np.array([r.judgement.probabilities for r in results], dtype=np.float64)
    return ScoreTable(_ids(r.key.context_id for r in results),
                      _ids(r.key.candidate_id for r in results),
                      *(_floats(results, n) for n in ("score_argmax", "score_expected",
                                                      "label_mass")),
                      probs.reshape(len(results), -1) if results else np.empty((0, 10)))


def absolute_read(results: Sequence[Any], detail: bool) -> pd.DataFrame:
    """``AbsoluteResult`` records as a frame of ``ABSOLUTE_COLUMNS``, sorted as the store's."""
    data: dict[str, Any] = {
        "context_id": _ids(r.key.context_id for r in results),
        "candidate_id": _ids(r.key.candidate_id for r in results),
        "level": np.array([r.key.level for r in results], dtype=np.int64),
        "order": _ids(r.key.order for r in results),
    }
    for n in ABSOLUTE_COLUMNS[4:12]:
        data[n] = _floats(results, n)
    data["prompt_hash"] = _ids(r.prompt_hash for r in results)
    data["reference_hash"] = _ids(r.reference_hash for r in results)
    data["created_at"] = pd.Series(pd.NaT, index=range(len(results)), dtype="datetime64[ns, UTC]")
    frame = pd.DataFrame(data, columns=list(ABSOLUTE_COLUMNS))
    return frame.sort_values(["context_id", "candidate_id", "order", "level"],
                             kind="stable").reset_index(drop=True)


#: How ``MemorySink`` reads each kind's records back, by the kind's name.
MEMORY_READS: dict[str, Callable[[Sequence[Any], bool], Any]] = {
    "comparative": comparative_read,
    "scoring": scoring_read,
    "absolute": absolute_read,
}


STORE_ENTRY_POINT_GROUP = "compassess.stores"


def open_store(url: str | None = None):
    """Open the persistent store registered under the ``compassess.stores`` entry point.

    The engine depends on the store's interface, not on the ``db`` package: the installed project
    registers ``db.store:Store`` there (pyproject.toml), as a plugin would.
    """
    from importlib.metadata import entry_points

    eps = list(entry_points(group=STORE_ENTRY_POINT_GROUP))
    if not eps:
        raise CompAssessError("no store is registered: install the project (`pip install -e .` "
                              "or `make setup`) so the 'compassess.stores' entry point exists")
    preferred = [ep for ep in eps if ep.name == "sqlalchemy"] or eps
    return preferred[0].load()(url)

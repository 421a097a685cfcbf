"""The small interface through which the run loop writes results: the engine never imports ``db``.

``db.store.Store`` implements it for SQLAlchemy; tests may use ``MemorySink``.
"""

from __future__ import annotations

import time
from typing import Iterable, Protocol, runtime_checkable

from .types import ComparisonResult, PairKey


@runtime_checkable
class ResultSink(Protocol):
    """Where a run's comparisons go, the moment they are computed."""

    def stored_pairs(self, run_id: int) -> set[PairKey]:
        """Pairs of this run already stored (they are never recomputed)."""

    def cached_judgements(self, model_key: str, label_words: str,
                          prompt_hashes: Iterable[str]) -> dict[str, ComparisonResult]:
        """Results stored by any run for the same model, label words and rendered prompt."""

    def add_comparisons(self, run_id: int, results: list[ComparisonResult]) -> None:
        """Store results atomically; a pair already stored for the run is ignored, not duplicated."""

    def set_run_status(self, run_id: int, status: str, *, done: int | None = None,
                       total: int | None = None, message: str | None = None) -> None:
        """Record status (``running``, ``completed``, ``cancelled``, ``failed``) and a heartbeat."""

    def cancel_requested(self, run_id: int) -> bool:
        """True when someone (another process, the UI) asked this run to stop."""


class MemorySink:
    """An in-memory ResultSink, for notebooks and for tests that are not about storage."""

    def __init__(self) -> None:
        self.results: dict[int, dict[PairKey, ComparisonResult]] = {}
        self.status: dict[int, dict] = {}
        self.cancel: set[int] = set()
        self.scores: dict[int, dict[tuple[str, str], object]] = {}  # scoring runs (issue 6)

    def stored_pairs(self, run_id: int) -> set[PairKey]:
        return set(self.results.get(run_id, {}))

    def cached_judgements(self, model_key, label_words, prompt_hashes):
        return {}

    def add_comparisons(self, run_id: int, results: list[ComparisonResult]) -> None:
        bucket = self.results.setdefault(run_id, {})
        for r in results:
            bucket.setdefault(r.key, r)

    def set_run_status(self, run_id, status, *, done=None, total=None, message=None) -> None:
        self.status[run_id] = dict(status=status, done=done, total=total, message=message,
                                   heartbeat=time.time())

    def cancel_requested(self, run_id: int) -> bool:
        return run_id in self.cancel

    # -------------------------------------------------- issue 6: adaptive selection, prompt scoring
    def stored_probabilities(self, run_id: int) -> dict[PairKey, float]:
        """p of every stored pair of the run (what adaptive selection conditions on)."""
        return {k: r.judgement.p for k, r in self.results.get(run_id, {}).items()}

    def stored_scores(self, run_id: int) -> set[tuple[str, str]]:
        return set(self.scores.get(run_id, {}))

    def cached_scores(self, model_key, prompt_hashes):
        return {}

    def add_scores(self, run_id: int, results: list) -> None:
        bucket = self.scores.setdefault(run_id, {})
        for r in results:
            bucket.setdefault((r.context_id, r.candidate_id), r)


STORE_ENTRY_POINT_GROUP = "compassess.stores"


def open_store(url: str | None = None):
    """Open the persistent store registered under the ``compassess.stores`` entry point.

    The engine depends on the store's interface, not on the ``db`` package: the installed project
    registers ``db.store:Store`` there (pyproject.toml), as a plugin would.
    """
    from importlib.metadata import entry_points

    from .errors import CompAssessError

    eps = list(entry_points(group=STORE_ENTRY_POINT_GROUP))
    if not eps:
        raise CompAssessError("no store is registered: install the project (`pip install -e .` "
                              "or `make setup`) so the 'compassess.stores' entry point exists")
    preferred = [ep for ep in eps if ep.name == "sqlalchemy"] or eps
    return preferred[0].load()(url)

"""The store's one result sink: every run kind's results go through ``RESULT_TABLES``.

A run loop needs three things of the store, whatever the kind of run: the results a run already
has (so they are not computed again), the judgements any earlier run of the same judge stored for
the same prompts (the cache), and a way to add results. ``ResultStore`` offers them as
``stored_results``, ``cached_results`` and ``add_results``, each taking the kind's name and
dispatching to its ``ResultTable`` (one per kind, in the style of
``compassess_core.stats.ranking.METHODS``); analysis reads a whole run back through the same registry
(``read_results``).

The three tables share all their plumbing (``_ResultTableBase``): a result record is
``result_type(key, judgement, *extras)``, the judgement's fields and the extras (``prompt_hash``,
``reference_hash``) are stored in columns of the same names, and each kind only says how its key
maps to integer columns and back.

This module must never decide what a run judges or in which order, never compute a score or a
statistic from results, and never import a UI. The result records come from
``compassess_core.types``, never from a run kind's module.
"""

from __future__ import annotations

import dataclasses
from functools import cached_property
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence

import numpy as np
import pandas as pd
from sqlalchemy import (JSON, Connection, Select, String, Table, UniqueConstraint, func, select,
                        type_coerce)
from sqlalchemy.orm import aliased

from compassess_core.errors import InputError
from compassess_core.types import (ABSOLUTE_COLUMNS, COMPARISON_COLUMNS, REFERENCE_FIRST,
                                   TARGET_FIRST, AbsoluteJudgement, AbsoluteKey, AbsoluteResult,
                                   CandidateKey, ComparisonResult, ComparisonTable, Judgement,
                                   PairKey, ScoreJudgement, ScoreResult, ScoreTable)

from .connection import (DatasetKeys, StoreBase, chunks, db_floats, gc_paused, insert_ignore,
                         py_float, py_floats, run_rows, upsert)
from .schema import (AbsoluteComparisonRow, Base, CandidateRow, CandidateScoreRow, ComparisonRow,
                     ContextRow, RunRow)

# Columns of the absolute results frame that hold text rather than numbers.
_ABSOLUTE_TEXT_COLUMNS = ("context_id", "candidate_id", "order", "prompt_hash", "reference_hash")


class ResultTable(Protocol):
    """One run kind's result table, as the store's result sink uses it.

    Every method runs on the caller's connection, inside the caller's transaction.
    """

    kind: str

    def stored(self, conn: Connection, run_id: int, keys: DatasetKeys) -> dict[Any, Any]:
        """Every result stored for the run: key record -> result record, in the order stored."""

    def cached(self, conn: Connection, model_key: str, label_words: str,
               prompt_hashes: Sequence[str]) -> dict[str, Any]:
        """Prompt hash -> the judgement first stored for it by any run with this judge identity
        (``runs.model_key``) and label-words key (``runs.label_words``)."""

    def insert(self, conn: Connection, run_id: int, results: Sequence[Any],
               keys: DatasetKeys) -> None:
        """Store results of the run whose dataset has the id maps ``keys``.

        Raises
        ------
        InputError
            A result is not of this kind, or names a context or candidate not in ``keys``
            (nothing is stored then).
        """

    def read(self, conn: Connection, run_id: int, keys: DatasetKeys, detail: bool) -> Any:
        """The run's results as the engine's analysis of the kind takes them (see
        ``ResultStore.read_results``)."""


def _known(*ids: int | None) -> tuple[int, ...] | None:
    """Integer keys looked up for a key's string ids, or None when one is not in the dataset."""
    return None if None in ids else ids  # type: ignore[return-value]


def _candidate_ids(keys: DatasetKeys, context_id: str, candidate_id: str) -> tuple[int, ...] | None:
    """``(context key, candidate key)`` of a candidate, or None when it is not in the dataset."""
    return _known(keys.contexts.get(context_id), keys.candidates.get((context_id, candidate_id)))


class _ResultTableBase:
    """A ``ResultTable`` from a schema class, the engine's result types and a key mapping.

    Subclasses set ``kind``, ``row`` (the table's schema class), ``noun`` (one result, in
    messages), ``key_columns`` (the columns a key is stored in) and ``replace``, and implement
    ``_types``, ``key_ids`` and ``keys_from_ids``.
    """

    kind: str
    row: type[Base]
    _judgement_type: type
    _result_type: type
    noun: str
    key_columns: tuple[str, ...]
    #: What a result whose key is already stored for the run does: replace the stored one (True)
    #: or leave it, keeping the first (False). The key is the table's unique constraint.
    replace: bool = False

    # ---------------------------------------------------------------- per kind


    def key_ids(self, key: Any, keys: DatasetKeys) -> tuple[Any, ...] | None:
        """A key's values of ``key_columns``, or None when it names an id not in the dataset."""
        raise NotImplementedError

    def keys_from_ids(self, columns: Sequence[np.ndarray], keys: DatasetKeys) -> Iterable[Any]:
        """Key records from the ``key_columns`` of stored rows (one array per column)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- shared plumbing

    @cached_property
    def _table(self) -> Table:
        return self.row.__table__  # type: ignore[return-value]

    @cached_property
    def _unique(self) -> list[str]:
        """Columns of the table's unique constraint: what makes a result the same result."""
        [unique] = [c for c in self._table.constraints if isinstance(c, UniqueConstraint)]
        return list(unique.columns.keys())


    @cached_property
    def _judgement_fields(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self._judgement_type))

    @cached_property
    def _extra_fields(self) -> tuple[str, ...]:
        # Fields of the result record after ``key`` and ``judgement``.
        return tuple(f.name for f in dataclasses.fields(self._result_type))[2:]

    @cached_property
    def _list_fields(self) -> frozenset[str]:
        """Judgement fields holding a sequence of floats (a JSON list column)."""
        return frozenset(n for n in self._judgement_fields
                         if isinstance(self._table.c[n].type, JSON))

    def _judgements(self, columns: Sequence[Sequence[Any]]) -> list[Any]:
        """Judgement records from stored columns (one sequence per judgement field), NULL -> NaN."""
        decoded = [[tuple(py_float(x) for x in v) for v in values] if name in self._list_fields
                   else py_floats(values)
                   for name, values in zip(self._judgement_fields, columns)]
        return list(map(self._judgement_type, *decoded))

    def _judgement_columns(self, judgements: Sequence[Any]) -> list[list[Any]]:
        """The judgements' values, one list per judgement field, NaN -> NULL (column by column:
        a Python call per value would cost more than the insert)."""
        columns = []
        for name in self._judgement_fields:
            values = [getattr(j, name) for j in judgements]
            columns.append([db_floats(v) for v in values] if name in self._list_fields
                           else db_floats(values))
        return columns

    def stored(self, conn: Connection, run_id: int, keys: DatasetKeys) -> dict[Any, Any]:
        rows = run_rows(conn, self._table, run_id,
                        self.key_columns + self._judgement_fields + self._extra_fields)
        if not rows:
            return {}
        columns = list(zip(*rows))
        del rows
        n_key, n_judgement = len(self.key_columns), len(self._judgement_fields)
        key_records = list(self.keys_from_ids([np.asarray(c) for c in columns[:n_key]], keys))
        judgements = self._judgements(columns[n_key:n_key + n_judgement])
        results = map(self._result_type, key_records, judgements, *columns[n_key + n_judgement:])
        return dict(zip(key_records, results))

    def cached(self, conn: Connection, model_key: str, label_words: str,
               prompt_hashes: Sequence[str]) -> dict[str, Any]:
        t = self._table
        base = (select(t.c.prompt_hash, *(t.c[n] for n in self._judgement_fields)).select_from(t)
                .join(RunRow, RunRow.id == t.c.run_id)
                .where(RunRow.model_key == model_key, RunRow.label_words == label_words)
                .order_by(t.c.id))
        first: dict[str, tuple[Any, ...]] = {}
        # A hash is in one chunk only, and rows come oldest first: the first stored wins.
        for chunk in chunks(prompt_hashes):
            for h, *values in conn.execute(base.where(t.c.prompt_hash.in_(chunk))):
                first.setdefault(h, tuple(values))
        if not first:
            return {}
        return dict(zip(first, self._judgements(list(zip(*first.values())))))

    def insert(self, conn: Connection, run_id: int, results: Sequence[Any],
               keys: DatasetKeys) -> None:
        if not results:
            return
        result_type = self._result_type
        wrong = next((r for r in results if not isinstance(r, result_type)), None)
        if wrong is not None:
            raise InputError(f"a {self.kind} run stores {result_type.__name__}s, not "
                             f"{type(wrong).__name__}; nothing was stored")
        ids = [self.key_ids(r.key, keys) for r in results]
        unknown = [r.key for r, i in zip(results, ids) if i is None]
        if unknown:
            raise InputError(f"{len(unknown)} {self.noun}(s) for run {run_id} name a context or "
                             f"candidate not in its dataset, e.g. {_shown(unknown)}; "
                             "nothing was stored")
        names = ("run_id", *self.key_columns, *self._judgement_fields, *self._extra_fields)
        columns = [[run_id] * len(results), *zip(*ids),
                   *self._judgement_columns([r.judgement for r in results]),
                   *([getattr(r, n) for r in results] for n in self._extra_fields)]
        rows = [dict(zip(names, values)) for values in zip(*columns)]
        if self.replace:
            changed = [c for c in (*names, "created_at") if c not in self._unique]
            stmt = upsert(conn, self._table, self._unique, changed)
        else:
            stmt = insert_ignore(conn, self._table, self._unique)
        # The database's clock, as SQL: a bound Python datetime costs a conversion per row.
        conn.execute(stmt.values(created_at=func.current_timestamp()), rows)


def _shown(keys: Sequence[Any], limit: int = 5) -> str:
    """Some key records as ``(field, field, ...)`` for a message."""
    return ", ".join("(" + ", ".join(str(getattr(k, f.name)) for f in dataclasses.fields(k)) + ")"
                     for k in keys[:limit])


class _ComparativeTable(_ResultTableBase):
    """Pairwise comparisons: ``PairKey`` -> ``ComparisonResult``; a stored pair is kept."""

    kind = "comparative"
    row = ComparisonRow
    noun = "comparison"
    key_columns = ("context_id", "a_id", "b_id")

    _judgement_type, _result_type = Judgement, ComparisonResult

    def key_ids(self, key: PairKey, keys: DatasetKeys) -> tuple[int, ...] | None:
        return _known(keys.contexts.get(key.context_id),
                      keys.candidates.get((key.context_id, key.a_id)),
                      keys.candidates.get((key.context_id, key.b_id)))

    def keys_from_ids(self, columns: Sequence[np.ndarray], keys: DatasetKeys) -> Iterator[PairKey]:
        ctx, a, b = columns
        return map(PairKey, keys.context_keys(ctx), keys.candidate_keys(a), keys.candidate_keys(b))

    def read(self, conn: Connection, run_id: int, keys: DatasetKeys,
             detail: bool) -> ComparisonTable | pd.DataFrame:
        if detail:
            return _comparisons_frame(conn.execute(comparison_select(run_id, raw_time=True)).all())
        # One SELECT of integer keys and floats, turned into arrays column by column; the string
        # ids come from the dataset's cached key arrays (a join would double the time).
        rows = run_rows(conn, self._table, run_id,
                        ("context_id", "a_id", "b_id", "p", "logp_a", "logp_b", "label_mass"))
        if not rows:
            return ComparisonTable.empty()
        cols = list(zip(*rows))
        del rows
        ctx, a, b = (np.fromiter(c, dtype=np.int64, count=len(c)) for c in cols[:3])
        num = [np.array(c, dtype=np.float64) for c in cols[3:]]
        return ComparisonTable(keys.context_keys(ctx), keys.candidate_keys(a),
                               keys.candidate_keys(b), *num)


class _ScoringTable(_ResultTableBase):
    """Prompt scores: ``CandidateKey`` -> ``ScoreResult``; a scored candidate is kept."""

    kind = "scoring"
    row = CandidateScoreRow
    noun = "score"
    key_columns = ("context_id", "candidate_id")

    _judgement_type, _result_type = ScoreJudgement, ScoreResult

    def key_ids(self, key: CandidateKey, keys: DatasetKeys) -> tuple[int, ...] | None:
        return _candidate_ids(keys, key.context_id, key.candidate_id)

    def keys_from_ids(self, columns: Sequence[np.ndarray],
                      keys: DatasetKeys) -> Iterator[CandidateKey]:
        ctx, cand = columns
        return map(CandidateKey, keys.context_keys(ctx), keys.candidate_keys(cand))

    def read(self, conn: Connection, run_id: int, keys: DatasetKeys, detail: bool) -> ScoreTable:
        rows = run_rows(conn, self._table, run_id, (
            "context_id", "candidate_id", "score_argmax", "score_expected", "label_mass",
            "probabilities"))
        if not rows:
            e = np.array([], dtype=object)
            f = np.array([], dtype=np.float64)
            return ScoreTable(e, e, f, f, f, np.empty((0, 10)))
        cols = list(zip(*rows))
        # numpy reads None as NaN: NULL floats, in columns and inside the probability lists.
        num = [np.array(c, dtype=np.float64) for c in cols[2:5]]
        probs = np.array(cols[5], dtype=np.float64)
        return ScoreTable(keys.context_keys(cols[0]), keys.candidate_keys(cols[1]), *num, probs)


class _AbsoluteTable(_ResultTableBase):
    """Comparisons with references: ``AbsoluteKey`` -> ``AbsoluteResult``.

    A (run, candidate, level, order) already stored is replaced: the reference it was compared
    with was edited or regenerated since, so the stored answer is stale.
    """

    kind = "absolute"
    row = AbsoluteComparisonRow
    noun = "absolute comparison"
    key_columns = ("context_id", "candidate_id", "level", "target_first")
    replace = True

    _judgement_type, _result_type = AbsoluteJudgement, AbsoluteResult

    def key_ids(self, key: AbsoluteKey, keys: DatasetKeys) -> tuple[Any, ...] | None:
        ids = _candidate_ids(keys, key.context_id, key.candidate_id)
        if ids is None:
            return None
        return (*ids, int(key.level), key.order == TARGET_FIRST)

    def keys_from_ids(self, columns: Sequence[np.ndarray],
                      keys: DatasetKeys) -> Iterator[AbsoluteKey]:
        ctx, cand, level, target_first = columns
        orders = np.where(target_first.astype(bool), TARGET_FIRST, REFERENCE_FIRST).tolist()
        return map(AbsoluteKey, keys.context_keys(ctx), keys.candidate_keys(cand),
                   level.astype(np.int64).tolist(), orders)

    def read(self, conn: Connection, run_id: int, keys: DatasetKeys, detail: bool) -> pd.DataFrame:
        # the stored columns of ABSOLUTE_COLUMNS, with target_first in the place of order
        rows = run_rows(conn, self._table, run_id, (
            "context_id", "candidate_id", "level", "target_first", *ABSOLUTE_COLUMNS[4:]))
        if not rows:
            return pd.DataFrame({c: pd.Series(dtype=object if c in _ABSOLUTE_TEXT_COLUMNS
                                              else float) for c in ABSOLUTE_COLUMNS})
        cols = list(zip(*rows))
        data: dict[str, Any] = {
            "context_id": keys.context_keys(cols[0]),
            "candidate_id": keys.candidate_keys(cols[1]),
            "level": np.array(cols[2], dtype=np.int64),
            "order": np.where(np.array(cols[3], dtype=bool), TARGET_FIRST, REFERENCE_FIRST),
        }
        for name, values in zip(ABSOLUTE_COLUMNS[4:12], cols[4:12]):
            data[name] = np.array(values, dtype=np.float64)  # None -> NaN
        data["prompt_hash"], data["reference_hash"] = list(cols[12]), list(cols[13])
        data["created_at"] = pd.to_datetime(pd.Series(cols[14], dtype=object), utc=True)
        frame = pd.DataFrame(data, columns=list(ABSOLUTE_COLUMNS))
        return frame.sort_values(["context_id", "candidate_id", "order", "level"],
                                 kind="stable").reset_index(drop=True)


def comparison_select(run_id: int, raw_time: bool = False) -> Select:
    """A run's comparisons with string ids, in ``COMPARISON_COLUMNS`` order, oldest first.

    ``raw_time``: the backend's own value of ``created_at`` (text on SQLite), which pandas parses
    vectorised, far faster than one Python conversion per row.
    """
    A, B = aliased(CandidateRow), aliased(CandidateRow)
    created = (type_coerce(ComparisonRow.created_at, String) if raw_time
               else ComparisonRow.created_at)
    cols: Sequence[Any] = [ContextRow.key, A.key, B.key, ComparisonRow.p, ComparisonRow.logp_a,
                           ComparisonRow.logp_b, ComparisonRow.label_mass,
                           ComparisonRow.latency_ms, ComparisonRow.prompt_hash, created]
    return (select(*cols).select_from(ComparisonRow)
            .join(ContextRow, ContextRow.id == ComparisonRow.context_id)
            .join(A, A.id == ComparisonRow.a_id).join(B, B.id == ComparisonRow.b_id)
            .where(ComparisonRow.run_id == run_id).order_by(ComparisonRow.id))


def _comparisons_frame(rows: Sequence[Any]) -> pd.DataFrame:
    """Rows of ``comparison_select`` as a frame of ``COMPARISON_COLUMNS`` (NULL -> NaN)."""
    cols = list(zip(*rows)) if rows else [()] * len(COMPARISON_COLUMNS)
    data: dict[str, Any] = {}
    for name, values in zip(COMPARISON_COLUMNS, cols):
        if name in ("context_id", "a_id", "b_id", "prompt_hash"):
            data[name] = pd.Series(values, dtype="str")
        elif name == "created_at":
            data[name] = pd.to_datetime(pd.Series(values, dtype=object), utc=True)
        else:
            data[name] = np.array(values, dtype=np.float64)
    return pd.DataFrame(data, columns=list(COMPARISON_COLUMNS))


#: The result table of every run kind, by the kind's name (``RunSettings.kind``).
RESULT_TABLES: dict[str, ResultTable] = {
    "comparative": _ComparativeTable(),
    "scoring": _ScoringTable(),
    "absolute": _AbsoluteTable(),
}


def result_table(kind: str) -> ResultTable:
    """The result table of a run kind.

    Raises
    ------
    InputError
        When the kind is not a key of ``RESULT_TABLES``.
    """
    table = RESULT_TABLES.get(kind)
    if table is None:
        raise InputError(f"unknown run kind {kind!r}; choose one of {', '.join(RESULT_TABLES)}")
    return table


class ResultStore(StoreBase):
    """The result sink of every run kind (the store side of the run loop's contract)."""

    def stored_results(self, run_id: int, kind: str) -> dict:
        """Every result already stored for the run, by key, in the order stored.

        ``comparative``: ``PairKey`` -> ``ComparisonResult``; ``scoring``: ``CandidateKey`` ->
        ``ScoreResult``; ``absolute``: ``AbsoluteKey`` -> ``AbsoluteResult``. Built from integer
        keys and the dataset's cached id arrays (no joins), with the garbage collector paused.

        Raises
        ------
        InputError
            When ``kind`` is unknown.
        RunNotFoundError
            When the run does not exist.
        """
        return self._on_run(kind, run_id,
                            lambda table, conn, keys: table.stored(conn, run_id, keys))

    def _on_run(self, kind: str, run_id: int, read: Callable[[ResultTable, Connection,
                                                             DatasetKeys], Any]) -> Any:
        """``read(table, conn, keys)`` on the kind's table, in one read transaction with the
        garbage collector paused (``InputError``: unknown kind; ``RunNotFoundError``: no run)."""
        table = result_table(kind)
        with self._read() as conn, gc_paused():
            return read(table, conn, self._run_keys(conn, run_id))

    def cached_results(self, kind: str, model_key: str, label_words: str,
                       prompt_hashes: Iterable[str]) -> dict:
        """Prompt hash -> judgement that any run of ``kind`` stored for the same judge and prompt.

        A hit needs the same judge identity (``runs.model_key``, set by ``record_judge``) and the
        same label words (``runs.label_words``, the key of
        ``compassess_core.runs.settings.label_words_key``); the first stored wins. An empty
        ``model_key`` matches nothing: an unnamed model may be any model.

        Raises
        ------
        InputError
            When ``kind`` is unknown.
        """
        table = result_table(kind)
        hashes = list(dict.fromkeys(prompt_hashes))
        if not model_key or not hashes:
            return {}
        with self._read() as conn:
            return table.cached(conn, model_key, label_words, hashes)

    def add_results(self, run_id: int, kind: str, results: list) -> None:
        """Store a run's results in one transaction.

        ``comparative`` and ``scoring``: a key already stored for the run is ignored (the first
        result stays). ``absolute``: a (candidate, level, order) already stored is replaced.

        Raises
        ------
        InputError
            When ``kind`` is unknown, or a result is of another kind or names a context or
            candidate not in the run's dataset (nothing is stored then).
        RunNotFoundError
            When the run does not exist.
        """
        table = result_table(kind)
        if not results:
            return
        with self._write() as conn, gc_paused():
            table.insert(conn, run_id, results, self._run_keys(conn, run_id))

    def read_results(self, run_id: int, kind: str, detail: bool = False) -> Any:
        """A run's stored results as the engine's analysis of its kind takes them.

        ``comparative``: a ``ComparisonTable`` in the order stored (``detail``: a frame of
        ``COMPARISON_COLUMNS`` with latency, prompt hash and time); ``scoring``: a ``ScoreTable``;
        ``absolute``: a frame of ``ABSOLUTE_COLUMNS`` sorted by context, candidate, order and
        level (``order`` as ``target-first``/``reference-first``). NULL reads as NaN. Raises as
        :meth:`stored_results`.
        """
        return self._on_run(kind, run_id, lambda table, conn, keys: table.read(conn, run_id, keys,
                                                                               detail))

    # The reads below name one kind's read; ``read_results`` is the one the engine uses.

    def comparison_table(self, run_id: int) -> ComparisonTable:
        """``read_results(run_id, "comparative")``."""
        return self.read_results(run_id, "comparative")

    def comparisons_frame(self, run_id: int) -> pd.DataFrame:
        """``read_results(run_id, "comparative", detail=True)``."""
        return self.read_results(run_id, "comparative", detail=True)

    def score_table(self, run_id: int) -> ScoreTable:
        """``read_results(run_id, "scoring")``."""
        return self.read_results(run_id, "scoring")

    def absolute_frame(self, run_id: int) -> pd.DataFrame:
        """``read_results(run_id, "absolute")``."""
        return self.read_results(run_id, "absolute")

"""Datasets in the store: save a validated candidate file once, list, load it back exactly.

A dataset is stored as rows of contexts, candidates and reference scores keyed by integers; its
string ids (the user's file) stay in ``key`` columns. Saving is idempotent on the content hash.

This module must never parse or validate a candidate file (``compassess_core.data.candidates`` does) and
never touch runs or results. Deleting and renaming a dataset (with its runs): ``db.manage``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, insert, select
from sqlalchemy.exc import IntegrityError

from compassess_core.data.candidates import content_hash as dataset_content_hash
from compassess_core.errors import InputError
from compassess_core.limits import check_name
from compassess_core.types import Candidate, Context, Dataset

from .connection import DatasetKeys, StoreBase, db_float, py_float
from .schema import (CandidateRow, ContextRow, DatasetRow, ReferenceScoreRow,
                     utcnow)


@dataclass(frozen=True)
class DatasetInfo:
    """A stored dataset's summary, as listed (no texts)."""

    id: int
    name: str
    n_contexts: int
    n_candidates: int
    score_columns: list[str]
    source: str
    content_hash: str
    created_at: datetime


class DatasetStore(StoreBase):
    """Saving, listing and loading datasets."""

    def save_dataset(self, dataset: Dataset) -> int:
        """Store a dataset in one transaction and return its id.

        Idempotent: a dataset with the same ``content_hash`` is not stored twice, its existing id is
        returned (and the first name kept). An empty ``content_hash`` is computed from the content.

        Raises
        ------
        InputError
            When the name is empty or too long, the dataset has no contexts, a different dataset
            already has this name, or the content cannot be stored (e.g. a repeated id); nothing
            is stored then.
        """
        check_name(dataset.name, "dataset name")
        if not dataset.contexts:
            raise InputError(f"dataset '{dataset.name}' has no contexts: nothing to save")
        chash = dataset.content_hash or dataset_content_hash(dataset.contexts)
        for attempt in range(2):
            try:
                with self._write() as conn:
                    existing = _dataset_with_hash(conn, chash)
                    if existing is not None:
                        return existing
                    clash = conn.execute(select(DatasetRow.id).where(
                        DatasetRow.name == dataset.name)).scalar_one_or_none()
                    if clash is not None:
                        raise InputError(
                            f"a different dataset named '{dataset.name}' is already stored "
                            f"(id {clash}); save this one under another name")
                    return _insert_dataset(conn, dataset, chash)
            except IntegrityError as e:
                # Another process may have saved the same content between our check and insert
                # (PostgreSQL takes no lock up front); then its id is the answer.
                if attempt == 0:
                    with self._read() as conn:
                        found = _dataset_with_hash(conn, chash)
                    if found is not None:
                        return found
                    if "name" in str(e.orig) and "datasets" in str(e.orig):
                        continue
                raise InputError(f"dataset '{dataset.name}' could not be saved and nothing was "
                                 f"stored: {e.orig}") from e
        raise AssertionError("unreachable")

    def list_datasets(self) -> list[DatasetInfo]:
        """Every stored dataset, oldest first."""
        with self._read() as conn:
            rows = conn.execute(select(
                DatasetRow.id, DatasetRow.name, DatasetRow.n_contexts, DatasetRow.n_candidates,
                DatasetRow.score_columns, DatasetRow.source, DatasetRow.content_hash,
                DatasetRow.created_at).order_by(DatasetRow.id)).all()
        return [DatasetInfo(r.id, r.name, r.n_contexts, r.n_candidates, list(r.score_columns),
                            r.source, r.content_hash, r.created_at) for r in rows]

    def load_dataset(self, name_or_id: str | int) -> Dataset:
        """The stored dataset, rebuilt exactly (file order, scores, systems, source rows).

        Raises
        ------
        RunNotFoundError
            When no dataset has this name or id.
        """
        with self._read() as conn:
            ds = self._dataset_row(conn, name_or_id)
            contexts = conn.execute(select(ContextRow.id, ContextRow.key, ContextRow.text)
                                    .where(ContextRow.dataset_id == ds.id)
                                    .order_by(ContextRow.position)).all()
            candidates = conn.execute(
                select(CandidateRow.id, CandidateRow.context_id, CandidateRow.key,
                       CandidateRow.text, CandidateRow.system, CandidateRow.source_row)
                .where(CandidateRow.dataset_id == ds.id)
                .order_by(CandidateRow.context_id, CandidateRow.position)).all()
            scores = conn.execute(
                select(ReferenceScoreRow.candidate_id, ReferenceScoreRow.name,
                       ReferenceScoreRow.value)
                .join(CandidateRow, CandidateRow.id == ReferenceScoreRow.candidate_id)
                .where(CandidateRow.dataset_id == ds.id)).all()
        order = {c: i for i, c in enumerate(ds.score_columns)}
        by_candidate: dict[int, list[tuple[str, float]]] = {}
        for cand_id, name, value in scores:
            by_candidate.setdefault(cand_id, []).append((name, py_float(value)))
        by_context: dict[int, list[Candidate]] = {}
        for r in candidates:
            items = sorted(by_candidate.get(r.id, []), key=lambda kv: (order.get(kv[0], len(order)),
                                                                         kv[0]))
            by_context.setdefault(r.context_id, []).append(
                Candidate(candidate_id=r.key, text=r.text, system=r.system, scores=dict(items),
                          row=r.source_row))
        return Dataset(
            name=ds.name,
            contexts=tuple(Context(c.key, c.text, tuple(by_context.get(c.id, ())))
                           for c in contexts),
            score_columns=tuple(ds.score_columns), source=ds.source, content_hash=ds.content_hash,
            text_columns=tuple(ds.text_columns or ()))


def _dataset_with_hash(conn: Connection, chash: str) -> int | None:
    return conn.execute(select(DatasetRow.id).where(
        DatasetRow.content_hash == chash)).scalar_one_or_none()


def _insert_dataset(conn: Connection, dataset: Dataset, chash: str) -> int:
    """Insert a dataset's rows on ``conn`` (inside the caller's transaction); returns its id."""
    dataset_id = conn.execute(insert(DatasetRow).values(
        name=dataset.name, content_hash=chash, source=dataset.source,
        score_columns=list(dataset.score_columns), text_columns=list(dataset.text_columns),
        n_contexts=len(dataset.contexts),
        n_candidates=dataset.n_candidates, created_at=utcnow())).inserted_primary_key[0]
    conn.execute(insert(ContextRow), [
        dict(dataset_id=dataset_id, key=c.context_id, position=i, text=c.text)
        for i, c in enumerate(dataset.contexts)])
    ctx_ids = dict(conn.execute(select(ContextRow.key, ContextRow.id)
                                .where(ContextRow.dataset_id == dataset_id)).all())
    cand_rows = [dict(dataset_id=dataset_id, context_id=ctx_ids[c.context_id], key=k.candidate_id,
                      position=j, text=k.text, system=k.system, source_row=k.row)
                 for c in dataset.contexts for j, k in enumerate(c.candidates)]
    if cand_rows:
        conn.execute(insert(CandidateRow), cand_rows)
    # Not cached: if this transaction rolls back, SQLite hands the same id out again.
    keys = DatasetKeys.query(conn, dataset_id)
    score_rows = [dict(candidate_id=keys.candidates[(c.context_id, k.candidate_id)], name=name,
                       value=db_float(value))
                  for c in dataset.contexts for k in c.candidates
                  for name, value in k.scores.items()]
    if score_rows:
        conn.execute(insert(ReferenceScoreRow), score_rows)
    return dataset_id

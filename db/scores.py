"""The synthetic references absolute runs compare candidates with.

References are stored per (context, aspect, reference set, level) and shared by every run that
uses the same set, so they are written once and reused.

This module must never compute a score, a level or a statistic from what it reads (that is
the absolute run kind's business), never generate reference texts and never import a UI.
"""

from __future__ import annotations

from sqlalchemy import delete, func, select

from compassess_core.errors import InputError
from compassess_core.types import Reference

from .connection import StoreBase, upsert
from .schema import ContextRow, SyntheticReferenceRow, utcnow


class ScoreStore(StoreBase):
    """Synthetic references of absolute runs."""

    # -------------------------------------------------------------------- references

    def save_references(self, dataset_id: int, aspect: str, reference_set: str,
                        references: list[Reference]) -> int:
        """Store (or replace) reference texts of a dataset's contexts for an aspect and set.

        ``references`` are ``compassess_core.types.Reference``; a (context, aspect, set, level)
        already stored gets the new text, source and generation record. Returns the rows written.

        Raises
        ------
        InputError
            A reference names a context that is not in the dataset (nothing is stored then).
        RunNotFoundError
            The dataset does not exist.
        """
        R = SyntheticReferenceRow
        if not references:
            return 0
        with self._write() as conn:
            self._dataset_row(conn, int(dataset_id))
            keys = self._dataset_keys(conn, int(dataset_id))
            unknown = sorted({r.context_id for r in references if r.context_id not in keys.contexts})
            if unknown:
                raise InputError(f"{len(unknown)} reference context(s) are not in the dataset, e.g. "
                                 f"{', '.join(repr(u) for u in unknown[:5])}; nothing was stored")
            now = utcnow()
            rows = [dict(context_id=keys.contexts[r.context_id], aspect=aspect,
                         reference_set=reference_set, level=int(r.level), text=r.text,
                         source=r.source, generation=dict(r.generation), updated_at=now)
                    for r in references]
            conn.execute(upsert(conn, R.__table__, ["context_id", "aspect", "reference_set",
                                                    "level"],
                                ["text", "source", "generation", "updated_at"]), rows)
        return len(rows)

    def load_references(self, dataset_id: int, aspect: str,
                        reference_set: str) -> list[Reference]:
        """The stored references of a dataset for an aspect and set, by context order and level."""
        R = SyntheticReferenceRow
        with self._read() as conn:
            rows = conn.execute(
                select(ContextRow.key, R.level, R.text, R.source, R.generation)
                .join(ContextRow, ContextRow.id == R.context_id)
                .where(ContextRow.dataset_id == int(dataset_id), R.aspect == aspect,
                       R.reference_set == reference_set)
                .order_by(ContextRow.position, R.level)).all()
        return [Reference(c, int(lv), t, s, dict(g or {})) for c, lv, t, s, g in rows]

    def reference_sets(self, dataset_id: int) -> list[tuple[str, str, int]]:
        """``(aspect, reference_set, n_texts)`` of every stored reference set of a dataset."""
        R = SyntheticReferenceRow
        with self._read() as conn:
            rows = conn.execute(
                select(R.aspect, R.reference_set, func.count())
                .join(ContextRow, ContextRow.id == R.context_id)
                .where(ContextRow.dataset_id == int(dataset_id))
                .group_by(R.aspect, R.reference_set).order_by(R.aspect, R.reference_set)).all()
        return [(a, s, int(n)) for a, s, n in rows]

    def delete_references(self, dataset_id: int, aspect: str, reference_set: str,
                          context_id: str | None = None) -> int:
        """Delete a set's references (of one context when given), so a run writes them afresh."""
        R = SyntheticReferenceRow
        with self._write() as conn:
            ctx = select(ContextRow.id).where(ContextRow.dataset_id == int(dataset_id))
            if context_id is not None:
                ctx = ctx.where(ContextRow.key == context_id)
            return conn.execute(delete(R).where(R.aspect == aspect, R.reference_set == reference_set,
                                                R.context_id.in_(ctx))).rowcount

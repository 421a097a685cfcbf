"""People's judgements in the store: A/B answers from the annotate page or an import, the undo of
one's own answer, and each dataset's annotation guidelines.

Several annotators may write at once (each its own process); every answer is its own short write
transaction, and an answer is only ever deleted by the annotator who gave it. A judgement is
stored once per person, unordered pair, aspect and revision (the table's unique key): adding one
that is already stored is a no-op, so importing a file twice, two imports at once or two tabs
answering the same pair cannot double a label.

This module must never compute agreement or any other statistic (``compassess_core.stats.agreement``
does), never pick which pair a person sees next, and never import a UI.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping

import numpy as np
import pandas as pd
from sqlalchemy import delete, func, select
from sqlalchemy.orm import aliased

from compassess_core.errors import InputError
from compassess_core.types import Outcome

from .connection import DatasetKeys, StoreBase, db_float, insert_ignore, upsert
from .schema import CandidateRow, ContextRow, GuidelineRow, HumanJudgementRow, utcnow

#: Keys of the rows ``add_human_judgements`` accepts (``candidate_a``/``candidate_b`` are aliases
#: of left/right, as in the import CSV).
HUMAN_JUDGEMENT_KEYS = frozenset({"context_id", "candidate_left", "candidate_right", "candidate_a",
                                  "candidate_b", "winner", "annotator", "aspect", "seconds",
                                  "shown_order", "source", "created_at"})
SHOWN_ORDERS = frozenset({"ab", "ba"})

HUMAN_COLUMNS = ("id", "context_id", "candidate_left", "candidate_right", "shown_order", "winner",
                 "annotator", "aspect", "seconds", "source", "created_at", "revision")
#: The unique key of a human judgement (``schema.HumanJudgementRow``).
JUDGEMENT_KEY = ("pair_low_id", "pair_high_id", "annotator", "aspect", "revision")

# Outcome values by their lower-case spelling: imports write "a", "Tie", ...
_OUTCOMES = {o.value.lower(): o.value for o in Outcome}


class LabelStore(StoreBase):
    """Human judgements (add, read, undo) and annotation guidelines."""

    def add_human_judgements(self, dataset_id: int, rows: list[dict], *,
                             again: bool = False) -> int:
        """Store people's A/B judgements in one transaction; returns how many were added.

        Each row has ``context_id``, ``candidate_left`` and ``candidate_right`` (or
        ``candidate_a``/``candidate_b``), ``winner`` (an ``Outcome`` or its value: A = left
        better, B, tie, skip) and optionally ``annotator``, ``aspect``, ``seconds``,
        ``shown_order`` ("ab"/"ba"), ``source`` ("app" by default, "import"), ``created_at``.

        A row is a person's first judgement of its pair and aspect: when that person already
        judged the pair (in either screen order) it is not added, so ``len(rows)`` minus the
        result were already stored. With ``again`` each row is instead a deliberate new answer,
        added as the person's next revision of the pair beside the earlier ones.

        Raises
        ------
        InputError
            Listing every bad row (unknown key, id or winner); nothing is stored then.
        RunNotFoundError
            When the dataset does not exist.
        """
        if not rows:
            return 0
        now = utcnow()
        with self._write() as conn:
            self._dataset_row(conn, int(dataset_id))
            keys = self._dataset_keys(conn, int(dataset_id))
            values, problems = [], []
            for i, r in enumerate(rows):
                row_values, row_problems = _judgement_row(r, keys, int(dataset_id), now)
                problems.extend(f"row {i}: {m}" for m in row_problems)
                if row_values is not None:
                    values.append(row_values)
            if problems:
                shown_problems = "\n  ".join(problems[:20])
                more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
                raise InputError(f"{len(problems)} problem(s) in human judgements, nothing was "
                                 f"stored:\n  {shown_problems}{more}")
            if again:
                return sum(self._add_revision(conn, v) for v in values)
            added = conn.execute(insert_ignore(conn, HumanJudgementRow.__table__, JUDGEMENT_KEY)
                                 .returning(HumanJudgementRow.id), values).all()
        return len(added)

    @staticmethod
    def _add_revision(conn, values: dict[str, Any]) -> int:
        """Add ``values`` as its person's next revision of the pair (1 when added, 0 when a
        concurrent writer took that revision first)."""
        H = HumanJudgementRow
        last = conn.execute(select(func.max(H.revision)).where(
            H.pair_low_id == values["pair_low_id"], H.pair_high_id == values["pair_high_id"],
            H.annotator == values["annotator"], H.aspect == values["aspect"])).scalar_one()
        values = dict(values, revision=0 if last is None else int(last) + 1)
        added = conn.execute(insert_ignore(conn, H.__table__, JUDGEMENT_KEY).returning(H.id),
                             [values]).all()
        return len(added)

    def human_judgements_frame(self, dataset_id: int, aspect: str | None = None) -> pd.DataFrame:
        """A dataset's human judgements (``HUMAN_COLUMNS``), in the order stored."""
        L, R = aliased(CandidateRow), aliased(CandidateRow)
        H = HumanJudgementRow
        stmt = (select(H.id, ContextRow.key, L.key, R.key, H.shown_order, H.winner, H.annotator,
                       H.aspect, H.seconds, H.source, H.created_at, H.revision)
                .select_from(H).join(ContextRow, ContextRow.id == H.context_id)
                .join(L, L.id == H.left_id).join(R, R.id == H.right_id)
                .where(H.dataset_id == dataset_id).order_by(H.id))
        if aspect is not None:
            stmt = stmt.where(H.aspect == aspect)
        return self._judgements_frame(stmt, HUMAN_COLUMNS)

    def _judgements_frame(self, stmt, columns) -> pd.DataFrame:
        """The rows of a select of human judgements as a table with ``columns``: seconds as
        floats (NaN: not timed), creation times in UTC."""
        with self._read() as conn:
            rows = conn.execute(stmt).all()
        df = pd.DataFrame([tuple(r) for r in rows], columns=list(columns))
        df["seconds"] = df["seconds"].astype(np.float64)
        df["created_at"] = pd.to_datetime(df["created_at"], utc=True)
        return df

    def delete_human_judgement(self, judgement_id: int, annotator: str) -> bool:
        """Delete one human judgement (the annotate page's undo); returns whether a row went.

        Only a row written by ``annotator`` is deleted, so one person's undo can never remove
        another person's answer; a row already gone (undone from another tab) returns False.
        """
        H = HumanJudgementRow
        with self._write() as conn:
            gone = conn.execute(delete(H).where(H.id == int(judgement_id),
                                                H.annotator == str(annotator)))
        return gone.rowcount == 1

    def get_guidelines(self, dataset_id: int) -> str:
        """The dataset's annotation guidelines ("" when none were written)."""
        with self._read() as conn:
            found = conn.execute(select(GuidelineRow.text).where(
                GuidelineRow.dataset_id == dataset_id)).scalar_one_or_none()
        return found or ""

    def set_guidelines(self, dataset_id: int, text: str) -> None:
        """Replace the dataset's annotation guidelines.

        Raises
        ------
        RunNotFoundError
            When the dataset does not exist.
        """
        with self._write() as conn:
            self._dataset_row(conn, int(dataset_id))
            stmt = upsert(conn, GuidelineRow.__table__, ["dataset_id"], ["text", "updated_at"])
            conn.execute(stmt, [dict(dataset_id=int(dataset_id), text=text, updated_at=utcnow())])


def _judgement_row(r: Mapping[str, Any], keys: DatasetKeys, dataset_id: int,
                   now: datetime) -> tuple[dict[str, Any] | None, list[str]]:
    """One input row as ``human_judgements`` columns (None when it has problems), and everything
    that is wrong with it."""
    problems = []
    extra = set(r) - HUMAN_JUDGEMENT_KEYS
    left = r.get("candidate_left", r.get("candidate_a"))
    right = r.get("candidate_right", r.get("candidate_b"))
    ctx_key = str(r.get("context_id"))
    winner = r.get("winner")
    winner = winner.value if isinstance(winner, Outcome) else winner
    winner = _OUTCOMES.get(str(winner).strip().lower()) if winner is not None else None
    ctx = keys.contexts.get(ctx_key)
    lid = keys.candidates.get((ctx_key, str(left)))
    rid = keys.candidates.get((ctx_key, str(right)))
    shown = r.get("shown_order")
    if extra:
        problems.append(f"unknown key(s) {', '.join(sorted(extra))}")
    if ctx is None:
        problems.append(f"context '{ctx_key}' is not in the dataset")
    elif lid is None or rid is None:
        problems.append(f"candidate '{left if lid is None else right}' is not in context "
                        f"'{ctx_key}'")
    elif lid == rid:
        problems.append(f"a candidate cannot be compared with itself ('{left}')")
    if winner is None:
        problems.append(f"winner {r.get('winner')!r} is not one of "
                        f"{', '.join(o.value for o in Outcome)}")
    if shown is not None and shown not in SHOWN_ORDERS:
        problems.append(f"shown_order {shown!r} is not 'ab', 'ba' or None")
    if problems:
        return None, problems
    values = dict(
        dataset_id=dataset_id, context_id=ctx, left_id=lid, right_id=rid,
        pair_low_id=min(lid, rid), pair_high_id=max(lid, rid), revision=0, shown_order=shown,
        winner=winner, annotator=str(r.get("annotator") or ""), aspect=str(r.get("aspect") or ""),
        seconds=db_float(r.get("seconds")), source=str(r.get("source") or "app"),
        created_at=r.get("created_at") or now)
    return values, problems

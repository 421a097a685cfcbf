"""Annotation campaigns in the store: a campaign (dataset, aspect, guidelines, overlap), the people
assigned to it, its pair list (fixed when it is created) and the labels given in it.

A campaign's labels are ``human_judgements`` rows carrying its ``campaign_id``: they are ordinary
human labels of the dataset and aspect (the Agreement page, calibration and fusion read them like
any other), and the campaign's own reads (its queue, progress, agreement, export) see exactly the
answers given in it, never a label given on the free annotate page, in an import or in another
campaign on the same dataset and aspect. The table's unique key (one judgement per person,
unordered pair, aspect and revision) stays as it is: an answer in a campaign is the person's next
revision of the pair, so a person who judged the pair elsewhere can still answer it here.

Every write re-checks, in its own transaction, what the app checked when it drew the page: the
campaign is open, the person is assigned to it now (a removed annotator's answer is refused), and
the pair is one of the campaign's. An admin's adjudication is stored with ``source =
"adjudication"``: it is the campaign's decision on a disputed pair, never an annotator's vote.

This module must never pick a pair, compute agreement or any statistic
(``compassess_core.people.campaigns`` does), and never import a UI.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import aliased

from compassess_core.errors import InputError
from compassess_core.limits import check_name
from compassess_core.types import Outcome

from .connection import StoreBase, insert_ignore
from .labels import JUDGEMENT_KEY, _judgement_row
from .schema import (CAMPAIGN_SELECTIONS, CAMPAIGN_STATUSES, CampaignAnnotatorRow,
                     CampaignPairRow, CampaignRow, CandidateRow, ContextRow, DatasetRow,
                     HumanJudgementRow, utcnow)

#: The source of an admin's decision on a disputed pair (``compassess_core.stats.agreement.ADJUDICATION``).
ADJUDICATION = "adjudication"
#: Columns of ``campaign_judgements_frame``.
CAMPAIGN_LABEL_COLUMNS = ("id", "context_id", "candidate_left", "candidate_right", "shown_order",
                          "winner", "annotator", "aspect", "seconds", "source", "comment",
                          "created_at", "revision")


class CampaignError(InputError):
    """A campaign action refused: unknown campaign, closed, person not assigned, pair not in it."""


@dataclass(frozen=True)
class CampaignInfo:
    """One campaign, with the people assigned to it now."""

    id: int
    name: str
    dataset_id: int
    dataset: str
    aspect: str
    guidelines: str
    overlap: int
    selection: str
    seed: int
    created_by: str
    created_at: datetime
    status: str
    n_pairs: int
    annotators: tuple[str, ...]


class CampaignStore(StoreBase):
    """Campaigns, their annotators and pairs, and the answers given in them."""

    # -------------------------------------------------------------------------- campaigns

    def create_campaign(self, name: str, dataset_id: int, aspect: str, *,
                        pairs: Sequence[tuple[str, str, str]], annotators: Sequence[str],
                        overlap: int = 2, selection: str = "all", seed: int = 0,
                        guidelines: str = "", created_by: str = "") -> int:
        """Store a new open campaign with its pair list (``(context_id, x, y)`` string ids, in
        the order chosen) and its annotators; returns its id.

        Raises
        ------
        CampaignError
            The name is taken or invalid, no pair, a pair not in the dataset, a bad overlap or
            selection.
        """
        check_name(name, "campaign name", dash_first=True)
        if selection not in CAMPAIGN_SELECTIONS:
            raise CampaignError(f"pair selection '{selection}' is not one of "
                                f"{', '.join(CAMPAIGN_SELECTIONS)}")
        if int(overlap) < 1:
            raise CampaignError(f"overlap must be at least 1 (people per pair), not {overlap}")
        if not pairs:
            raise CampaignError("a campaign needs at least one pair")
        with self._write() as conn:
            self._dataset_row(conn, int(dataset_id))
            taken = conn.execute(select(CampaignRow.id).where(CampaignRow.name == name)).first()
            if taken is not None:
                raise CampaignError(f"a campaign named '{name}' already exists")
            keys = self._dataset_keys(conn, int(dataset_id))
            rows = []
            for position, (ctx, x, y) in enumerate(pairs):
                c = keys.contexts.get(str(ctx))
                a, b = keys.candidates.get((str(ctx), str(x))), keys.candidates.get((str(ctx), str(y)))
                if c is None or a is None or b is None or a == b:
                    raise CampaignError(f"pair ({ctx}, {x}, {y}) is not a pair of the dataset")
                rows.append(dict(position=position, context_id=c, low_id=min(a, b),
                                 high_id=max(a, b)))
            campaign_id = conn.execute(CampaignRow.__table__.insert().returning(CampaignRow.id), [dict(
                name=name, dataset_id=int(dataset_id), aspect=str(aspect),
                guidelines=str(guidelines or ""), overlap=int(overlap), selection=selection,
                seed=int(seed), created_by=str(created_by), created_at=utcnow(),
                status="open")]).scalar_one()
            conn.execute(insert_ignore(conn, CampaignPairRow.__table__,
                                       ["campaign_id", "low_id", "high_id"]),
                         [dict(r, campaign_id=campaign_id) for r in rows])
            self._add_annotators(conn, campaign_id, annotators, created_by)
        return int(campaign_id)

    def list_campaigns(self, identity: str | None = None) -> list[CampaignInfo]:
        """Every campaign (only those ``identity`` is assigned to, when given), oldest first."""
        with self._read() as conn:
            stmt = select(CampaignRow.id).order_by(CampaignRow.id)
            if identity is not None:
                stmt = stmt.where(CampaignRow.id.in_(
                    select(CampaignAnnotatorRow.campaign_id)
                    .where(CampaignAnnotatorRow.identity == identity)))
            ids = conn.execute(stmt).scalars().all()
            return [self._info(conn, i) for i in ids]

    def get_campaign(self, name_or_id: str | int) -> CampaignInfo:
        """A campaign by name (or id, as a number or digits that are no campaign's name); a
        :class:`CampaignError` when there is none."""
        with self._read() as conn:
            return self._info(conn, self._campaign_id(conn, name_or_id))

    def set_campaign_status(self, campaign_id: int, status: str) -> None:
        """Open or close a campaign (annotators answer only in an open one)."""
        if status not in CAMPAIGN_STATUSES:
            raise CampaignError(f"status '{status}' is not one of {', '.join(CAMPAIGN_STATUSES)}")
        with self._write() as conn:
            self._campaign_id(conn, int(campaign_id))
            conn.execute(update(CampaignRow).where(CampaignRow.id == int(campaign_id))
                         .values(status=status))

    def add_campaign_annotators(self, campaign_id: int, identities: Sequence[str],
                                added_by: str = "") -> int:
        """Assign people to a campaign; returns how many were new to it."""
        with self._write() as conn:
            self._campaign_id(conn, int(campaign_id))
            return self._add_annotators(conn, int(campaign_id), identities, added_by)

    def remove_campaign_annotators(self, campaign_id: int, identities: Sequence[str]) -> int:
        """Take people off a campaign (their answers stay); returns how many were on it."""
        A = CampaignAnnotatorRow
        with self._write() as conn:
            self._campaign_id(conn, int(campaign_id))
            gone = conn.execute(delete(A).where(A.campaign_id == int(campaign_id),
                                                A.identity.in_([str(i) for i in identities])))
        return int(gone.rowcount or 0)

    def campaign_pairs_frame(self, campaign_id: int) -> pd.DataFrame:
        """The campaign's pairs, in the order chosen: ``context_id, x, y`` (string ids, x < y)."""
        P = CampaignPairRow
        L, H = aliased(CandidateRow), aliased(CandidateRow)
        with self._read() as conn:
            rows = conn.execute(
                select(ContextRow.key, L.key, H.key).select_from(P)
                .join(ContextRow, ContextRow.id == P.context_id)
                .join(L, L.id == P.low_id).join(H, H.id == P.high_id)
                .where(P.campaign_id == int(campaign_id)).order_by(P.position)).all()
        a = np.array([r[1] for r in rows], dtype=object)
        b = np.array([r[2] for r in rows], dtype=object)
        first = a < b if len(rows) else np.zeros(0, dtype=bool)
        return pd.DataFrame({"context_id": [r[0] for r in rows],
                             "x": np.where(first, a, b), "y": np.where(first, b, a)},
                            columns=["context_id", "x", "y"])

    # ---------------------------------------------------------------------------- answers

    def add_campaign_judgement(self, campaign_id: int, row: Mapping[str, Any]) -> int | None:
        """Store one answer given in a campaign (or, with ``source = "adjudication"``, an admin's
        decision on a pair); returns its id, or None when this person already answered this pair
        in the campaign (another tab, a double click).

        ``row`` has the keys of ``LabelStore.add_human_judgements`` plus ``comment``; the aspect
        is the campaign's. A skip is not an answer and is refused. An adjudication replaces the
        earlier one of the pair (it is stored as the newest revision beside it).

        Raises
        ------
        CampaignError
            The campaign is closed (answers), the person is not assigned to it now (answers),
            the pair is not one of its pairs, or the answer is a skip.
        InputError
            A bad row (unknown candidate, winner).
        """
        row = dict(row)
        comment = row.pop("comment", None)
        source = str(row.get("source") or "app")
        H = HumanJudgementRow
        with self._write() as conn:
            info = self._info(conn, self._campaign_id(conn, int(campaign_id)))
            annotator = str(row.get("annotator") or "")
            if source != ADJUDICATION:
                if info.status != "open":
                    raise CampaignError(f"campaign '{info.name}' is closed: no answer is stored")
                if annotator not in info.annotators:
                    raise CampaignError(f"{annotator} is not assigned to campaign '{info.name}' "
                                        "(any more): the answer was not stored")
            keys = self._dataset_keys(conn, info.dataset_id)
            values, problems = _judgement_row(dict(row, aspect=info.aspect), keys,
                                              info.dataset_id, utcnow())
            if problems:
                raise InputError("the answer was not stored: " + "; ".join(problems))
            if values["winner"] == Outcome.SKIP.value:
                raise CampaignError("a skip is not an answer: nothing is stored for it")
            in_campaign = conn.execute(select(CampaignPairRow.id).where(
                CampaignPairRow.campaign_id == info.id,
                CampaignPairRow.low_id == values["pair_low_id"],
                CampaignPairRow.high_id == values["pair_high_id"])).first()
            if in_campaign is None:
                raise CampaignError(f"that pair is not one of campaign '{info.name}''s pairs")
            pair = (H.pair_low_id == values["pair_low_id"], H.pair_high_id == values["pair_high_id"])
            if source != ADJUDICATION:
                given = conn.execute(select(H.id).where(
                    *pair, H.campaign_id == info.id, H.annotator == annotator,
                    H.source != ADJUDICATION)).first()
                if given is not None:
                    return None
            last = conn.execute(select(func.max(H.revision)).where(
                *pair, H.annotator == annotator, H.aspect == info.aspect)).scalar_one()
            values = dict(values, revision=0 if last is None else int(last) + 1,
                          campaign_id=info.id, source=source,
                          comment=(str(comment) if comment else None))
            added = conn.execute(insert_ignore(conn, H.__table__, JUDGEMENT_KEY).returning(H.id),
                                 [values]).all()
        return int(added[0][0]) if added else None

    def campaign_judgements_frame(self, campaign_id: int) -> pd.DataFrame:
        """Every answer and adjudication given in a campaign (``CAMPAIGN_LABEL_COLUMNS``), in
        the order stored."""
        L, R = aliased(CandidateRow), aliased(CandidateRow)
        H = HumanJudgementRow
        stmt = (select(H.id, ContextRow.key, L.key, R.key, H.shown_order, H.winner, H.annotator,
                       H.aspect, H.seconds, H.source, H.comment, H.created_at, H.revision)
                .select_from(H).join(ContextRow, ContextRow.id == H.context_id)
                .join(L, L.id == H.left_id).join(R, R.id == H.right_id)
                .where(H.campaign_id == int(campaign_id)).order_by(H.id))
        return self._judgements_frame(stmt, CAMPAIGN_LABEL_COLUMNS)

    # ---------------------------------------------------------------------------- helpers

    @staticmethod
    def _add_annotators(conn, campaign_id: int, identities: Sequence[str], added_by: str) -> int:
        names = []
        for identity in identities:
            identity = str(identity).strip()
            check_name(identity, "annotator", limit=255, dash_first=True)
            if identity not in names:
                names.append(identity)
        if not names:
            return 0
        added = conn.execute(
            insert_ignore(conn, CampaignAnnotatorRow.__table__, ["campaign_id", "identity"])
            .returning(CampaignAnnotatorRow.id),
            [dict(campaign_id=int(campaign_id), identity=n, added_by=str(added_by),
                  added_at=utcnow()) for n in names]).all()
        return len(added)

    def _campaign_id(self, conn, name_or_id: str | int) -> int:
        return int(self._named_row(conn, select(CampaignRow.id), CampaignRow, name_or_id,
                                   "campaign", CampaignError)[0])

    @staticmethod
    def _info(conn, campaign_id: int) -> CampaignInfo:
        C = CampaignRow
        r = conn.execute(select(C.id, C.name, C.dataset_id, DatasetRow.name, C.aspect,
                                C.guidelines, C.overlap, C.selection, C.seed, C.created_by,
                                C.created_at, C.status)
                         .join(DatasetRow, DatasetRow.id == C.dataset_id)
                         .where(C.id == campaign_id)).one()
        n_pairs = conn.execute(select(func.count()).select_from(CampaignPairRow).where(
            CampaignPairRow.campaign_id == campaign_id)).scalar_one()
        people = conn.execute(select(CampaignAnnotatorRow.identity).where(
            CampaignAnnotatorRow.campaign_id == campaign_id)
            .order_by(CampaignAnnotatorRow.identity)).scalars().all()
        return CampaignInfo(*r, n_pairs=int(n_pairs), annotators=tuple(people))

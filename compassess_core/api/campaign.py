"""An annotation campaign through the API (:class:`Campaign`): who labels which pairs,
queues, progress, agreement among annotators, adjudication and export (``campaigns`` computes,
the store keeps)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import pandas as pd

from .. import __version__
from ..people import annotation, campaigns
from ..data import export
from ..stats.agreement import HumanAgreement
from ..people.annotation import ShownPair
from ..errors import InputError
from ..limits import check_name
from ..types import Dataset
from .records import info_field
from .handle import StoreHandle
from .records import check_answer_on_screen
from .verdicts import Verdicts
from ..report_text import counted

if TYPE_CHECKING:
    from .run import Run

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

    def __init__(self, store: StoreHandle, info) -> None:
        self.store, self.info = store, info

    def __repr__(self) -> str:
        return (f"Campaign({self.name!r}, dataset={self.info.dataset!r}, aspect={self.aspect!r}, "
                f"{counted(self.info.n_pairs, 'pair')}, overlap {self.overlap}, {self.status})")

    id = info_field("id", "The campaign's id in its store.")
    name = info_field("name", "The campaign's name (unique in its store).")
    dataset_name = info_field("dataset", "The name of the dataset whose pairs are labelled.")
    aspect = info_field("aspect", "What people judge (coherence, overall, ...).")
    guidelines = info_field("guidelines", "The guidelines shown to its annotators.")
    overlap = info_field("overlap", "How many people label each pair.")
    status = info_field("status", "``open`` or ``closed`` (as last read).")
    annotators = info_field("annotators", "The people assigned to it now (as last read).")

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

    def next_pair(self, identity: str, *, later: Sequence[tuple[str, str, str]] = ()
                  ) -> ShownPair | None:
        """The first pair of :meth:`queue` with its left/right order drawn
        (``annotation.shown_pair``); None when nothing waits for ``identity``."""
        queue = self.queue(identity, later=later)
        if not queue:
            return None
        context_id, x, y = queue[0]
        return ShownPair(context_id, *annotation.shown_pair(x, y))

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

    def add_answer(self, row: Mapping[str, Any], *,
                   shown: "annotation.PairOnScreen | Mapping | None" = None) -> int | None:
        """Store one answer as shown on screen (``context_id``, ``candidate_left``,
        ``candidate_right``, ``winner`` A/B/tie/both_bad, ``annotator``, ``seconds``,
        ``shown_order``, ``comment``): the app's Annotate page. ``shown``: the pair the
        person's screen showed when they answered (sent back by the browser); an answer that is
        not that pair, or not on this campaign's dataset and aspect, is refused
        (``ObjectChanged``) and nothing is stored."""
        if shown is not None:
            check_answer_on_screen(self.info.dataset_id, [dict(row, aspect=self.aspect)], shown)
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
        data, sidecar = export.table_bytes(frame, fmt, what="campaign_labels", metadata=meta)
        return CampaignExport(data, sidecar, frame, meta)

    def export(self, path: str | os.PathLike, fmt: str | None = None) -> Path:
        """Write :meth:`export_bytes` to ``path`` (format from its suffix unless given)."""
        path = Path(path)
        fmt = fmt or path.suffix.lstrip(".").lower() or "csv"
        out = self.export_bytes(fmt)
        path.write_bytes(out.data)
        if out.sidecar is not None:
            path.with_name(export.sidecar_name(path.name)).write_bytes(out.sidecar)
        return path


class Campaigns:
    """The annotation campaigns of a :class:`Store` (its mixin): create, list, get, assign,
    take off, close and reopen (``compassess campaign``)."""

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
        dataset_id, ds = self._stored_dataset(dataset)
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

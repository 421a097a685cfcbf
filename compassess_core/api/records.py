"""What the store's writes answer, and the check every write that names an object makes:
:class:`LabelsImported`, :class:`Deleted` and :func:`check_shown_name` (a page acting on what it
shows names the object as shown; a renamed object refuses the write), and
:func:`check_answer_on_screen` (an answer is stored only for the pair its screen showed)."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Mapping, Sequence

from ..people import annotation
from ..errors import ObjectChanged


def info_field(field: str, doc: str) -> Any:
    """A read-only property that reads ``field`` of the object's stored record (``self.info``,
    as last read): what a run, a tuning and a campaign say of their name, id, status, ..."""
    return property(attrgetter(f"info.{field}"), doc=doc)


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
    "tunings": "tunings", "explanations": "explanations",
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
    "tunings": ("tuning", "tunings"),
    "explanations": ("judge's explanation", "judge's explanations"),
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
    tunings: int = 0
    explanations: int = 0

    @classmethod
    def from_rows(cls, rows: Mapping[str, int]) -> "Deleted":
        """From the store's rows per table (``db.store.Store.delete_run``'s answer)."""
        return cls(**{_DELETED_FIELDS[t]: int(n) for t, n in rows.items() if t in _DELETED_FIELDS})

    def __str__(self) -> str:
        parts = [f"{n:,} {_DELETED_WORDS[f][0 if n == 1 else 1]}"
                 for f, n in vars(self).items() if n]
        return ", ".join(parts) or "nothing"


def check_shown_name(kind: str, object_id: int, name: str, expect_name: str | None) -> None:
    """Refuse a write aimed at the ``kind`` a page showed as ``expect_name`` when the store's
    object ``object_id`` is called otherwise now (renamed since the page was drawn)."""
    if expect_name is not None and name != expect_name:
        raise ObjectChanged(f"the {kind} shown as '{expect_name}' is now called '{name}' "
                            f"({kind} id {object_id}): nothing was changed; look again")


def check_answer_on_screen(dataset_id: int, rows: Sequence[Mapping],
                           shown: "annotation.PairOnScreen | Mapping") -> None:
    """Refuse (``ObjectChanged``) answer rows that are not the pair a person's screen showed when
    they answered: a key pressed on the screen before a switch of dataset, aspect or pair."""
    screen = annotation.PairOnScreen.of(shown)
    for row in rows:
        wrong = screen.differences(dataset_id, row)
        if wrong:
            raise ObjectChanged(
                f"the answer was given on {screen.describe()}, but the page holds another "
                f"pair now ({', '.join(wrong)} differ): nothing was stored. Answer the pair "
                "shown now.")

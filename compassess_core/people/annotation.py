"""Which pairs a person should judge next on the annotate page, and in which screen order.

Modes: ``random`` (seeded shuffle), ``uncertain`` (the LLM's verdict is closest to its
threshold, eq. 10 of Liusie et al. 2024), ``flips`` (the LLM's verdict changes when the order is
swapped), ``overlap`` (pairs other annotators labelled, for human-human agreement),
``informative`` (the label that most reduces the uncertainty of the ranking fused from the LLM's
comparisons and everyone's labels: ``fusion.informative_pairs``). Pairs are
unordered ``(context_id, x, y)`` with ``x < y``; the screen order is drawn separately
(:func:`left_right_order`, :func:`shown_pair`) and stored by the page, so human positional bias
can be measured.

Pure: this module must never read or write storage or know about the UI; it never offers a pair
the annotator already judged (a skip counts as judged) unless asked to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..stats.agreement import (as_human_table, normalise_human_labels, pair_probabilities,
                               verdicts_at)
from ..errors import InputError
from ..stats.fusion import informative_pairs
from ..types import ComparisonTable, Dataset

__all__ = ["MODES", "ShownPair", "PairOnScreen", "all_pairs", "next_pairs", "left_right_order", "shown_pair",
           "next_shown_pair"]

MODES: tuple[str, ...] = ("random", "uncertain", "flips", "overlap", "informative")

_PAIR = ["context_id", "x", "y"]
Seed = int | np.random.Generator | None


def all_pairs(candidates: Dataset | Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Every unordered pair ``(context_id, x, y)``, ``x < y``, of each context's candidates.

    Parameters
    ----------
    candidates
        A dataset, or a mapping from context id to its candidate ids.

    Returns
    -------
    pandas.DataFrame
        Columns ``context_id, x, y``, contexts in the given order, pairs sorted within each.
    """
    if isinstance(candidates, Dataset):
        candidates = {c.context_id: c.candidate_ids for c in candidates.contexts}
    parts = []
    for cid, ids in candidates.items():
        ids = np.array(sorted(set(map(str, ids))), dtype=object)
        a, b = np.triu_indices(len(ids), 1)
        parts.append(pd.DataFrame({"context_id": str(cid), "x": ids[a], "y": ids[b]}))
    if not parts:
        return pd.DataFrame(columns=_PAIR)
    return pd.concat(parts, ignore_index=True)


def _judged_by(human_df: pd.DataFrame | None, annotator: str) -> pd.DataFrame:
    """Pairs ``annotator`` judged in any way, skips included."""
    if human_df is None or len(human_df) == 0:
        return pd.DataFrame(columns=_PAIR)
    t = as_human_table(human_df)
    t = t.loc[t["annotator"] == annotator]
    left_first = t["left_id"] < t["right_id"]
    return pd.DataFrame({"context_id": t["context_id"],
                         "x": t["left_id"].where(left_first, t["right_id"]),
                         "y": t["right_id"].where(left_first, t["left_id"])}).drop_duplicates()


def _llm_at(llm: pd.DataFrame | ComparisonTable | None, tau: float, mode: str) -> pd.DataFrame:
    if llm is None:
        raise InputError(f"annotation mode '{mode}' needs an LLM run: choose a run or use "
                         "'random' / 'overlap'")
    if isinstance(llm, ComparisonTable):
        probs = pair_probabilities(llm)
    else:
        missing = {"context_id", "x", "y", "p_xy", "p_yx"} - set(llm.columns)
        if missing:
            raise InputError(f"LLM pair table lacks column(s) {', '.join(sorted(missing))}")
        probs = llm[["context_id", "x", "y", "p_xy", "p_yx"]]
    return verdicts_at(probs, tau)


def next_pairs(candidates: Dataset | Mapping[str, Sequence[str]],
               llm: pd.DataFrame | ComparisonTable | None, human_df: pd.DataFrame | None,
               annotator: str, mode: str = "random", tau: float = 0.5, *,
               allow_repeat: bool = False, seed: Seed = 0, limit: int | None = None,
               only_priority: bool = False) -> list[tuple[str, str, str]]:
    """The unordered pairs ``(context_id, x, y)`` to show ``annotator`` next, by priority.

    Priority per mode (remaining ties in a seeded random order):

    - ``random``: all pairs, shuffled.
    - ``uncertain``: smallest LLM confidence ``|p_avg - 0.5|`` on the eq. 9 reweighted scale first
      (the verdict nearest the threshold ``tau`` of eq. 10, see ``agreement.verdicts_at``).
    - ``flips``: pairs judged in both orders whose verdict at ``tau`` changes with the order first,
      the most order-dependent (largest ``|p_xy - (1 - p_yx)|``) leading.
    - ``overlap``: pairs other annotators labelled (skips do not count) but this one did not, the
      most-labelled first.
    - ``informative``: the largest drop of the fused ranking's total posterior variance if the
      pair got one more label (``fusion.informative_pairs``: the LLM's comparisons at ``tau`` and
      every annotator's labels in one Gaussian product of experts; without an LLM run, the labels
      alone). Needs a dataset as ``candidates``.

    Pairs outside the priority group (no LLM verdict, no flip, no other annotator) follow in random
    order, unless ``only_priority``.

    Parameters
    ----------
    candidates
        The dataset (or context id -> candidate ids) whose pairs may be shown.
    llm
        The run's ``ComparisonTable`` or an ``agreement.llm_pair_verdicts`` table; needed by
        ``uncertain`` and ``flips``, ignored otherwise.
    human_df
        Human judgements so far, any shape ``agreement.as_human_table`` accepts (None = none).
    annotator
        Who will judge; the pairs they judged (skips included) are left out.
    mode
        One of :data:`MODES`.
    tau
        LLM threshold (eq. 10); 0.5 = raw.
    allow_repeat
        Offer pairs the annotator already judged too.
    seed
        Seed or generator of the random order.
    limit
        At most this many pairs (all when None).
    only_priority
        Leave out pairs outside the mode's priority group.

    Raises
    ------
    InputError
        Unknown mode, a mode needing an LLM run without one, ``tau`` not in (0, 1), or a bad
        human table.
    """
    if mode not in MODES:
        raise InputError(f"unknown annotation mode '{mode}'; choose one of {', '.join(MODES)}")
    pairs = all_pairs(candidates)
    if not allow_repeat:
        done = _judged_by(human_df, annotator)
        if len(done):
            seen = pairs.merge(done, on=_PAIR, how="left", indicator=True)["_merge"] == "both"
            pairs = pairs.loc[~seen.to_numpy()].reset_index(drop=True)
    rng = np.random.default_rng(seed)
    n = len(pairs)
    shuffle = rng.permutation(n)
    primary = np.zeros(n)
    secondary = np.zeros(n)
    if mode in ("uncertain", "flips"):
        llm_at = pairs.merge(_llm_at(llm, tau, mode), on=_PAIR, how="left")
        if mode == "uncertain":
            primary = llm_at["confidence"].to_numpy(dtype=np.float64)
        else:
            flips = llm_at["flips"].fillna(False).to_numpy(dtype=bool)
            primary = np.where(flips, 0.0, np.nan)
            gap = np.abs(llm_at["p_xy"].to_numpy(np.float64) - (1.0 - llm_at["p_yx"].to_numpy(np.float64)))
            secondary = np.where(flips, -gap, 0.0)
    elif mode == "informative":
        if not isinstance(candidates, Dataset):
            raise InputError("annotation mode 'informative' needs the dataset, not a list of candidates")
        if llm is not None and not isinstance(llm, ComparisonTable):
            raise InputError("annotation mode 'informative' needs the run's comparisons "
                             "(a ComparisonTable)")
        value = pairs.merge(informative_pairs(candidates, llm, human_df, tau=tau), on=_PAIR,
                            how="left")["value"].to_numpy(dtype=np.float64)
        primary = -np.nan_to_num(value)
    elif mode == "overlap":
        others = pd.DataFrame(columns=[*_PAIR, "n_others"])
        if human_df is not None and len(human_df):
            human = normalise_human_labels(human_df)
            human = human.loc[human["annotator"] != annotator]
            others = human.groupby(_PAIR, as_index=False)["annotator"].nunique()
            others = others.rename(columns={"annotator": "n_others"})
        counts = pairs.merge(others, on=_PAIR, how="left")["n_others"].to_numpy(dtype=np.float64)
        primary = np.where(counts > 0, -counts, np.nan)
    in_group = ~np.isnan(primary)
    primary = np.where(in_group, primary, np.inf)
    order = np.lexsort((shuffle, secondary, primary))
    if only_priority:
        order = order[in_group[order]]
    if limit is not None:
        order = order[:max(int(limit), 0)]
    chosen = pairs.iloc[order]
    return list(zip(chosen["context_id"].tolist(), chosen["x"].tolist(), chosen["y"].tolist()))


def left_right_order(seed: Seed = None) -> bool:
    """A fair coin for the screen order: True shows the pair's first candidate (x) on the left.

    Randomising left/right per judgement is what lets ``agreement.human_positional_bias`` measure
    people's preference for the left position.
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    return bool(rng.integers(0, 2) == 1)


@dataclass(frozen=True)
class ShownPair:
    """A pair as an annotator is shown it: ``left`` and ``right`` candidates of ``context_id``,
    ``shown_order`` ``"ab"`` when the pair's first candidate (in id order) is on the left, ``"ba"``
    when the display swapped them (what the store keeps with the answer)."""

    context_id: str
    left: str
    right: str
    shown_order: str

    @property
    def pair(self) -> tuple[str, str, str]:
        """The pair as it was chosen, ``(context_id, x, y)``, before the screen order."""
        x, y = (self.left, self.right) if self.shown_order == "ab" else (self.right, self.left)
        return self.context_id, x, y


#: The longest text a :class:`PairOnScreen` field may hold (ids, an aspect): what a browser sends
#: back is bounded before it is compared.
MAX_SCREEN_FIELD_CHARS = 1000


@dataclass(frozen=True)
class PairOnScreen:
    """What a person's screen showed when they answered: the dataset (by id), the aspect asked
    about and the pair in its screen order. The page draws it with the pair and the browser sends
    it back with the key press or click, so an answer is stored on the pair it was given on or
    not at all (:meth:`differences`)."""

    dataset_id: int
    aspect: str
    context_id: str
    left: str
    right: str
    shown_order: str

    def as_dict(self) -> dict:
        return dict(dataset_id=self.dataset_id, aspect=self.aspect, context_id=self.context_id,
                    left=self.left, right=self.right, shown_order=self.shown_order)

    @classmethod
    def of(cls, value: "PairOnScreen | Mapping") -> "PairOnScreen":
        """From a mapping (what a browser sends back), each field checked for its type and
        length; InputError naming the field otherwise."""
        if isinstance(value, cls):
            return value
        if not isinstance(value, Mapping):
            raise InputError("the answer came without the pair it was given on")
        fields = {}
        for name in ("dataset_id", "aspect", "context_id", "left", "right", "shown_order"):
            v = value.get(name)
            if name == "dataset_id":
                ok = isinstance(v, int) and not isinstance(v, bool)
            else:
                ok = isinstance(v, str) and len(v) <= MAX_SCREEN_FIELD_CHARS
            if not ok:
                raise InputError(f"the pair the answer was given on has no valid {name}")
            fields[name] = v
        return cls(**fields)

    def describe(self) -> str:
        return (f"{self.left} vs {self.right} in context {self.context_id} of dataset id "
                f"{self.dataset_id}, aspect {self.aspect}")

    def differences(self, dataset_id: int, row: Mapping) -> list[str]:
        """The fields in which a label row to be stored on ``dataset_id`` (``context_id``,
        ``candidate_left``, ``candidate_right``, ``aspect``, ``shown_order``) is not this pair
        as shown; empty when it is."""
        held = dict(dataset_id=int(dataset_id), aspect=row.get("aspect"),
                    context_id=row.get("context_id"), left=row.get("candidate_left"),
                    right=row.get("candidate_right"), shown_order=row.get("shown_order"))
        return [name for name, v in held.items() if v != getattr(self, name)]


def shown_pair(x: str, y: str, seed: Seed = None) -> tuple[str, str, str]:
    """``(left, right, shown_order)`` for the pair ``(x, y)``: ``shown_order`` is ``"ab"`` when x
    is on the left and ``"ba"`` when the display swapped them (the store's ``shown_order``)."""
    if left_right_order(seed):
        return x, y, "ab"
    return y, x, "ba"


def next_shown_pair(candidates: Dataset | Mapping[str, Sequence[str]],
                    llm: pd.DataFrame | ComparisonTable | None, human_df: pd.DataFrame | None,
                    annotator: str, mode: str = "random", tau: float = 0.5, *,
                    allow_repeat: bool = False, seed: Seed = None) -> ShownPair | None:
    """The one pair to show ``annotator`` next (:func:`next_pairs`, ``limit=1``) in the screen
    order drawn for it (:func:`shown_pair`); None when every pair is judged."""
    rng = np.random.default_rng(seed)
    found = next_pairs(candidates, llm, human_df, annotator, mode, tau,
                       allow_repeat=allow_repeat, seed=rng, limit=1)
    if not found:
        return None
    context_id, x, y = found[0]
    return ShownPair(context_id, *shown_pair(x, y, rng))

"""Agreement between an LLM judge and people, and among people, on pairwise (A/B) judgements.

Inputs are a table of human judgements (from the store, the annotate page or an imported label
file) and a run's :class:`~compassess_core.types.ComparisonTable`. Everything is computed per
*unordered* pair ``{x, y}`` with ``x < y`` (string order), so the human's screen order and the
LLM's prompt order can differ. Classes, relative to that canonical order: ``0`` = first-listed
(``x``) better, ``1`` = second-listed (``y``) better, ``2`` = tie.

What it provides: LLM verdicts per pair (eq. 9-10 of Liusie, Manakul, Gales, EACL 2024), with an
optional tie verdict (:data:`TIE_MODES`: a verdict that flips with the order is a tie, FastChat's
rule, and/or a band around 0.5), accuracy (raw agreement) and kappa of LLM vs humans with and
without ties (as MT-Bench reports, Zheng et al. 2023), per vote as FastChat counts it and for the
majority vote of each pair, the confusion matrix, per-annotator numbers, human-human agreement
(percent agreement, kappa, Krippendorff's alpha), human positional bias, rankings from human
judgements alone and their correlation with the LLM's, and the list of disagreements.

Every kappa and alpha over pairs is computed on the symmetrised coding (each pair counted in both
orientations, :func:`~compassess_core.stats.agreement_stats.pair_kappa`), so renaming or reordering
candidates changes none of them; every interval over labelled pairs is the two-stage cluster
bootstrap (contexts, then pairs within them), with tau* re-estimated in every replicate when the
threshold is the balanced one (:func:`llm_vs_human`).

Pure pandas/numpy (plus ``krippendorff`` and ``ranking``'s evalica): this module must never read
or write storage, import ``streamlit`` or ``db``, or import scikit-learn (tests only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from . import metrics, ranking
# The statistics on class codes live in agreement_stats; their names stay importable from here.
from .agreement_stats import (AGREEMENT_BOOT, CLASS_NAMES, CLUSTER_METHOD, INTERVAL_LEVEL,
                              N_CLASSES, TIE_CODE, X_BETTER, Y_BETTER, agreement_intervals,
                              bootstrap_interval, cohen_kappa, confusion_matrix,
                              context_draws, correlation_interval, pair_alpha, pair_kappa,
                              pair_kappa_from_confusion, weighted_median, within_contexts)
from .bias import balanced_threshold, debias_probabilities
from ..errors import InputError
from ..types import ComparisonTable, Dataset, FloatArray, IntArray, Outcome

__all__ = [
    "TIE",
    "SKIP",
    "BOTH_BAD",
    "ADJUDICATION",
    "HUMAN_COLUMNS",
    "CLASS_NAMES",
    "as_human_table",
    "human_table_from_labels",
    "normalise_human_labels",
    "pair_probabilities",
    "verdicts_at",
    "llm_pair_verdicts",
    "cohen_kappa",
    "pair_kappa",
    "pair_alpha",
    "confusion_matrix",
    "TIES_NONE",
    "TIES_FLIP",
    "TIE_MODES",
    "pair_outcomes",
    "majority_vote",
    "AgreementScores",
    "AgreementAt",
    "AgreementReport",
    "llm_vs_human",
    "HumanAgreement",
    "human_human_agreement",
    "human_positional_bias",
    "positional_bias_side_by_side",
    "human_rankings",
    "ranking_correlation",
    "disagreements",
    "SMALL_SAMPLE_PAIRS",
    "SMALL_SAMPLE_CONTEXTS",
    "AGREEMENT_BOOT",
    "INTERVAL_LEVEL",
    "bootstrap_interval",
    "agreement_intervals",
    "correlation_interval",
]

TIE = Outcome.TIE.value
SKIP = Outcome.SKIP.value
BOTH_BAD = Outcome.BOTH_BAD.value
#: The ``source`` of an admin's decision on a disputed campaign pair: a ruling, never a vote.
ADJUDICATION = "adjudication"

#: The canonical human-judgement table: the pair as shown on screen and the chosen candidate id
#: (or "tie" / "skip"); ``seconds`` is NaN for imported labels.
HUMAN_COLUMNS: tuple[str, ...] = ("context_id", "left_id", "right_id", "winner_id", "annotator",
                                  "seconds")


_PAIR = ["context_id", "x", "y"]

#: The LLM never says tie: every pair gets x or y (eq. 10; an exact p_avg = 0.5 goes to y).
TIES_NONE = "none"
#: FastChat's rule (Zheng et al. 2023, fastchat/llm_judge): a pair whose eq. 10 verdict flips
#: when the order is swapped is a tie; so is a p_avg of exactly 0.5, and, with a ``tie_band``
#: delta > 0, any pair with ``|p_avg - 0.5| < delta``.
TIES_FLIP = "flip"
#: The LLM's tie verdict options, by name.
TIE_MODES: tuple[str, ...] = (TIES_NONE, TIES_FLIP)

#: Below this many scored pairs an accuracy or a kappa is shown with a caution: with 9 pairs one
#: pair more or less moves accuracy by 11 points, and the 95% interval spans tens of points.
SMALL_SAMPLE_PAIRS = 30
#: Below this many contexts the correlation of the LLM's ranking with the people's (a mean of
#: per-context correlations, each from a handful of labels) is shown with a caution.
SMALL_SAMPLE_CONTEXTS = 10


# ----------------------------------------------------------------------------- human tables

def as_human_table(df: pd.DataFrame) -> pd.DataFrame:
    """Bring a human-judgement table to :data:`HUMAN_COLUMNS` (skips kept), whatever its source.

    Accepted shapes, recognised by their columns:

    - canonical: ``context_id, left_id, right_id, winner_id`` (+ ``annotator``, ``seconds``);
    - the store's ``human_judgements_frame``: ``candidate_left, candidate_right`` and ``winner`` an
      :class:`~compassess_core.types.Outcome` value seen from the left (``A``, ``B``, ``tie``,
      ``skip``);
    - an import/label table: ``candidate_a, candidate_b`` and ``winner`` a candidate id or ``tie``
      (``candidate_a`` is taken as the left one).

    A ``source`` column is kept (``"import"`` rows have no real screen order, see
    :func:`human_positional_bias`).

    Raises
    ------
    InputError
        If required columns are missing, a pair compares a candidate with itself, or a winner is
        neither candidate, ``tie`` nor ``skip``; the message names the first bad row.
    """
    cols = set(df.columns)
    if {"left_id", "right_id", "winner_id"} <= cols:
        left, right, winner = df["left_id"], df["right_id"], df["winner_id"]
    elif {"candidate_left", "candidate_right", "winner"} <= cols:
        left, right = df["candidate_left"], df["candidate_right"]
        w = df["winner"].map(lambda v: v.value if isinstance(v, Outcome) else v)
        w = w.astype(str).str.strip().str.lower()
        winner = pd.Series(np.select([w == "a", w == "b"], [left.astype(str), right.astype(str)],
                                     default=w.to_numpy()), index=df.index)
    elif {"candidate_a", "candidate_b", "winner"} <= cols:
        left, right, winner = df["candidate_a"], df["candidate_b"], df["winner"]
    else:
        raise InputError("a human-judgement table needs columns context_id, left_id, right_id, "
                         "winner_id (or candidate_left/candidate_right/winner from the store, or "
                         f"candidate_a/candidate_b/winner from a label file); it has: "
                         f"{', '.join(map(str, df.columns)) or '(none)'}")
    if "context_id" not in cols:
        raise InputError("a human-judgement table needs a context_id column")
    context = df["context_id"].astype(str).to_numpy()
    left_id, right_id = left.astype(str).to_numpy(), right.astype(str).to_numpy()
    win = winner.astype(str).str.strip().to_numpy(dtype=object)
    lower = np.char.lower(win.astype(str))
    win = np.where(np.isin(lower, [TIE, SKIP, BOTH_BAD]), lower, win)
    # The columns as arrays and one frame built from them at the end: every agreement figure
    # starts here, and a frame filled column by column cost more than the checks.
    columns = {"context_id": context, "left_id": left_id, "right_id": right_id, "winner_id": win,
               "annotator": (df["annotator"].fillna("").astype(str).to_numpy()
                             if "annotator" in cols else np.full(len(df), "")),
               "seconds": (pd.to_numeric(df["seconds"], errors="coerce").to_numpy(dtype=np.float64)
                           if "seconds" in cols else np.full(len(df), np.nan))}
    if "source" in cols:
        columns["source"] = df["source"].fillna("").astype(str).to_numpy()
    same = left_id == right_id
    if same.any():
        k = int(np.flatnonzero(same)[0])
        raise InputError(f"human judgement row {k} compares candidate '{left_id[k]}' with "
                         f"itself (context '{context[k]}')")
    ok = (win == left_id) | (win == right_id) | np.isin(win, [TIE, SKIP, BOTH_BAD])
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        raise InputError(f"{int((~ok).sum())} human judgement(s) have a winner that is neither "
                         f"candidate, '{TIE}' nor '{SKIP}'; the first is row {k}: winner "
                         f"'{win[k]}' for '{left_id[k]}' vs "
                         f"'{right_id[k]}' in context '{context[k]}'")
    return pd.DataFrame(columns)


def human_table_from_labels(labels: Sequence) -> pd.DataFrame:
    """Canonical table (:data:`HUMAN_COLUMNS` + ``source = "import"``) from imported labels.

    ``labels`` are :class:`compassess_core.data.labels.HumanLabel` objects (anything with
    ``context_id, candidate_a, candidate_b, winner, annotator``); ``candidate_a`` is the left one.
    """
    df = pd.DataFrame([(x.context_id, x.candidate_a, x.candidate_b, x.winner, x.annotator)
                       for x in labels],
                      columns=["context_id", "left_id", "right_id", "winner_id", "annotator"])
    df["seconds"] = np.nan
    df["source"] = "import"
    return as_human_table(df)


def _normalise(df: pd.DataFrame) -> tuple[pd.DataFrame, int, int]:
    t = as_human_table(df)
    win = t["winner_id"].to_numpy(dtype=object)
    skipped = win == SKIP
    keep = np.flatnonzero(~skipped)
    # The columns as arrays, one frame at the end (as in as_human_table).
    columns = {c: t[c].array.take(keep) for c in t.columns}
    # "Both bad" states no preference between the two: the tie class of the 3-class model.
    win = np.where(win[keep] == BOTH_BAD, TIE, win[keep])
    columns["winner_id"] = pd.array(win, dtype=t["winner_id"].dtype)
    left = t["left_id"].to_numpy(dtype=object)[keep]
    right = t["right_id"].to_numpy(dtype=object)[keep]
    left_first = left < right
    x, y = np.where(left_first, left, right), np.where(left_first, right, left)
    columns.update(
        x=x, y=y,
        label=np.select([win == TIE, win == x], [TIE_CODE, X_BETTER], default=Y_BETTER
                        ).astype(np.int64),
        preferred=win,
        left_picked=np.where(win == TIE, np.nan, (win == left).astype(np.float64)))
    t = pd.DataFrame(columns)
    # One vote per annotator and pair: a later judgement (made with allow_repeat) replaces the
    # earlier one, so agreement counts each person once.
    before = len(t)
    t = t.drop_duplicates(["annotator", *_PAIR], keep="last").reset_index(drop=True)
    return t, int(skipped.sum()), before - len(t)


def normalise_human_labels(df: pd.DataFrame) -> pd.DataFrame:
    """Human judgements keyed by unordered pair, skips dropped, one vote per annotator and pair.

    Parameters
    ----------
    df
        Any table :func:`as_human_table` accepts.

    Returns
    -------
    pandas.DataFrame
        The canonical columns plus ``x``, ``y`` (the pair with ``x < y``), ``label`` (0 = x
        better, 1 = y better, 2 = tie), ``preferred`` (winner id or ``"tie"``) and ``left_picked``
        (1.0 / 0.0, NaN for a tie). When an annotator judged a pair more than once the last row
        counts. ``attrs["n_skipped"]`` and ``attrs["n_replaced"]`` count the dropped rows.

    Raises
    ------
    InputError
        As :func:`as_human_table`.
    """
    t, n_skipped, n_replaced = _normalise(df)
    t.attrs["n_skipped"] = n_skipped
    t.attrs["n_replaced"] = n_replaced
    return t


# ----------------------------------------------------------------------------- LLM verdicts

def pair_probabilities(table: ComparisonTable) -> pd.DataFrame:
    """The run's probabilities per unordered pair: ``context_id, x, y, p_xy, p_yx`` (x < y).

    ``p_xy`` is P(x better) with x shown first (eq. 3 of Liusie et al. 2024), ``p_yx`` with y
    first; NaN where that order was not judged, the mean where it was judged more than once.
    Non-finite probabilities are left out. Rows in pair order (context, then x, then y).
    """
    cid, a, b, p = judged_comparisons(table)
    fwd = a < b
    # Each comparison's pair as one number, numbered in sorted order, and the two orders' means
    # as bincounts: every agreement figure reads this table (a pivot table was 17 ms on 36
    # comparisons).
    pair, (ctx, x, y) = _pair_numbers(cid, np.where(fwd, a, b), np.where(fwd, b, a))
    n = len(ctx)
    with np.errstate(invalid="ignore"):
        p_xy = (np.bincount(pair, weights=np.where(fwd, p, 0.0), minlength=n)
                / np.bincount(pair, weights=fwd.astype(np.float64), minlength=n))
        p_yx = (np.bincount(pair, weights=np.where(fwd, 0.0, p), minlength=n)
                / np.bincount(pair, weights=(~fwd).astype(np.float64), minlength=n))
    return pd.DataFrame({"context_id": ctx, "x": x, "y": y, "p_xy": p_xy, "p_yx": p_yx})


def judged_comparisons(table: ComparisonTable) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                         FloatArray]:
    """The comparisons a verdict can rest on: ``(context, a, b, p)``, ids as strings, without
    non-finite probabilities and comparisons of a candidate with itself."""
    cid = np.asarray(table.context_ids, dtype=object).astype(str)
    a = np.asarray(table.a_ids, dtype=object).astype(str)
    b = np.asarray(table.b_ids, dtype=object).astype(str)
    p = np.asarray(table.p, dtype=np.float64)
    keep = np.isfinite(p) & (a != b)
    return cid[keep], a[keep], b[keep], p[keep]


def _pair_numbers(cid: np.ndarray, x: np.ndarray, y: np.ndarray
                  ) -> tuple[IntArray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each row's ``(cid, x, y)`` as a number counting the distinct triples in sorted order
    (context, then x, then y), and those triples' three columns."""
    contexts, c = np.unique(cid, return_inverse=True)
    names, ids = np.unique(np.concatenate([x, y]), return_inverse=True)
    k = max(len(names), 1)
    code = (c.astype(np.int64) * k + ids[:len(x)]) * k + ids[len(x):]
    triples, pair = np.unique(code, return_inverse=True)
    return pair.astype(np.int64), (contexts[triples // (k * k)], names[triples // k % k],
                                   names[triples % k])


def _check_ties(ties: str, tie_band: float) -> tuple[str, float]:
    if ties not in TIE_MODES:
        raise InputError(f"ties must be one of {', '.join(TIE_MODES)}, not '{ties}'")
    band = float(tie_band)
    if not 0.0 <= band < 0.5:
        raise InputError(f"the tie band delta must be in [0, 0.5), got {tie_band!r}")
    return ties, band


def pair_labels(p_xy: FloatArray, p_yx: FloatArray, tau, ties: str = TIES_NONE,
                tie_band: float = 0.0) -> tuple[FloatArray, IntArray, np.ndarray]:
    """The pair verdict codes of eq. 9-10 at ``tau`` (one value, or a column of one per
    bootstrap replicate), vectorised: ``(p_avg, label, flips)`` broadcast to ``tau``'s shape.

    ``p_avg`` averages the reweighted orders (:func:`verdicts_at`). Judged in both orders, x
    wins iff ``p_avg > 0.5``, i.e. iff ``p_xy > p_yx`` (eq. 9 is increasing in p, so the
    averaged verdict does not depend on tau), and an exact ``p_xy == p_yx`` is a tie in every
    mode: no decisive verdict would be free of the candidates' names. Judged in one order, eq. 10
    as written: x wins from (x, y) iff ``p_xy > tau``, from (y, x) iff ``p_yx <= tau`` (``p ==
    tau`` goes to the second position). With ``ties = "flip"`` (:data:`TIES_FLIP`) a pair whose
    eq. 10 verdict flips with the order is a tie; ``tie_band`` > 0 makes a tie of every
    ``|p_avg - 0.5| < tie_band``. Every rule reads the pair the same way whichever candidate is
    called x.
    """
    t = np.asarray(tau, dtype=np.float64)
    a = (1.0 - t) / t  # eq. 9
    with np.errstate(invalid="ignore"):
        h_xy = a * p_xy / (a * p_xy + 1.0 - p_xy)
        h_yx = a * p_yx / (a * p_yx + 1.0 - p_yx)
    fwd, rev = np.isfinite(p_xy), np.isfinite(p_yx)
    both = fwd & rev
    p_avg = np.where(both, 0.5 * (h_xy + 1.0 - h_yx), np.where(fwd, h_xy, 1.0 - h_yx))
    with np.errstate(invalid="ignore"):
        x_wins = np.where(both, p_xy > p_yx, np.where(fwd, p_xy > t, p_yx <= t))
        label = np.where(x_wins, X_BETTER, Y_BETTER).astype(np.int64)
        # x wins from (x, y) iff p_xy > tau, and from (y, x) iff p_yx <= tau (eq. 10).
        flips = both & ((p_xy > t) == (p_yx > t))
        # distance from the threshold, written so that naming y as x gives the same number
        half_gap = np.where(both, 0.5 * np.abs(h_xy - h_yx),
                            np.abs(np.where(fwd, h_xy, h_yx) - 0.5))
    tie = both & (p_xy == p_yx)
    if tie_band > 0:
        tie = tie | (half_gap < tie_band)
    if ties == TIES_FLIP:
        tie = tie | flips
    label = np.where(tie, TIE_CODE, label)
    return p_avg, label, flips


def verdicts_at(pairs: pd.DataFrame, tau: float = 0.5, *, ties: str = TIES_NONE,
                tie_band: float = 0.0) -> pd.DataFrame:
    """Add the LLM verdict at threshold ``tau`` to a :func:`pair_probabilities` table.

    Each order is reweighted by eq. 9 of Liusie et al. 2024, ``p^ = a p / (a p + 1 - p)`` with
    ``a = (1 - tau) / tau``, whose threshold is 0.5 exactly where eq. 10 puts ``tau``. When both
    orders were judged the verdict comes from their average ``p_avg = (p^_xy + 1 - p^_yx) / 2``,
    which cancels what is left of the positional bias; otherwise from the one order
    (``p_avg = p^_xy`` or ``1 - p^_yx``). ``x`` wins iff ``p_avg > 0.5`` (an exact 0.5 goes to
    ``y``, as eq. 10 gives ``p == tau`` to the second position).

    ``ties``: :data:`TIES_NONE` (default) never gives a tie; :data:`TIES_FLIP` makes a pair
    whose eq. 10 verdict flips with the order a tie (FastChat's rule for MT-Bench: "inconsistent"
    is a tie), and an exact ``p_avg = 0.5`` too; ``tie_band`` delta > 0 adds every pair with
    ``|p_avg - 0.5| < delta`` (:func:`pair_labels`).

    Returns
    -------
    pandas.DataFrame
        ``pairs`` plus ``p_avg`` (reweighted), ``verdict`` (the x or y id, or ``"tie"``),
        ``llm_label`` (0/1, 2 for a tie), ``confidence`` = ``|p_avg - 0.5|`` (the distance from
        the threshold on the reweighted scale; at tau = 0.5 it is ``|p - tau|``),
        ``both_orders`` and ``flips`` (both orders judged and the eq. 10 verdict changes with
        the order).

    Raises
    ------
    InputError
        If ``tau`` is not in (0, 1), or an unknown tie mode or band.
    """
    ties, band = _check_ties(ties, tie_band)
    out = pairs.copy()
    p_xy = out["p_xy"].to_numpy(dtype=np.float64)
    p_yx = out["p_yx"].to_numpy(dtype=np.float64)
    debias_probabilities(np.zeros(0), tau)  # rejects a bad tau
    p_avg, label, flips = pair_labels(p_xy, p_yx, float(tau), ties, band)
    out["p_avg"] = p_avg
    out["verdict"] = np.select([label == X_BETTER, label == Y_BETTER],
                               [out["x"].to_numpy(dtype=object), out["y"].to_numpy(dtype=object)],
                               default=TIE)
    out["llm_label"] = label
    out["confidence"] = np.abs(p_avg - 0.5)
    out["both_orders"] = np.isfinite(p_xy) & np.isfinite(p_yx)
    out["flips"] = flips
    return out


def llm_pair_verdicts(table: ComparisonTable, tau: float = 0.5, *, ties: str = TIES_NONE,
                      tie_band: float = 0.0) -> pd.DataFrame:
    """LLM verdict per unordered pair at threshold ``tau``: :func:`verdicts_at` of
    :func:`pair_probabilities` (eq. 9-10 of Liusie et al. 2024).

    Returns
    -------
    pandas.DataFrame
        ``context_id, x, y, p_xy, p_yx, p_avg, verdict, llm_label, confidence, both_orders,
        flips``.

    Raises
    ------
    InputError
        If ``tau`` is not in (0, 1), or an unknown tie mode or band.
    """
    return verdicts_at(pair_probabilities(table), tau, ties=ties, tie_band=tie_band)


def majority_vote(human: pd.DataFrame) -> pd.DataFrame:
    """One label per unordered pair from all its annotators' votes; a tied vote counts as a tie.

    Parameters
    ----------
    human
        A :func:`normalise_human_labels` table.

    Returns
    -------
    pandas.DataFrame
        ``context_id, x, y, n_x, n_y, n_tie, n_votes, label, preferred, annotators``
        (``annotators`` joined with ", "), in pair order.
    """
    if len(human) == 0:
        return pd.DataFrame(columns=[*_PAIR, "n_x", "n_y", "n_tie", "n_votes", "label",
                                     "preferred", "annotators"])
    # The pairs in sorted order, each vote's pair as a number: the counts are one bincount and the
    # annotators one pass over the rows (a crosstab and a per-pair join were 20 ms on 500 pairs,
    # paid by every agreement figure and the Judges board's every row).
    grouped = human.groupby(_PAIR, sort=True)
    pair = grouped.ngroup().to_numpy(np.int64)
    keys = grouped.size().index
    kept = pair >= 0   # a row with a missing key belongs to no pair (as in a crosstab)
    pair, label_of_vote = pair[kept], human["label"].to_numpy(np.int64)[kept]
    c = np.bincount(pair * N_CLASSES + label_of_vote,
                    minlength=len(keys) * N_CLASSES).reshape(len(keys), N_CLASSES)
    top = c.max(axis=1)
    unique_top = (c == top[:, None]).sum(axis=1) == 1
    label = np.where(unique_top, c.argmax(axis=1), TIE_CODE)
    out = keys.to_frame(index=False)
    out["n_x"], out["n_y"], out["n_tie"] = c[:, 0], c[:, 1], c[:, 2]
    out["n_votes"] = c.sum(axis=1)
    out["label"] = label.astype(np.int64)
    out["preferred"] = np.select([label == X_BETTER, label == Y_BETTER],
                                 [out["x"].to_numpy(dtype=object), out["y"].to_numpy(dtype=object)],
                                 default=TIE)
    names: list[set] = [set() for _ in range(len(keys))]
    for k, who in zip(pair.tolist(), human["annotator"].to_numpy(dtype=object)[kept].tolist()):
        names[k].add(who)
    out["annotators"] = [", ".join(sorted(n)) for n in names]
    return out


@dataclass(frozen=True)
class AgreementScores:
    """LLM vs one set of human labels at one threshold.

    ``accuracy_*`` is the raw agreement (share of pairs, or votes, on which both say the same).
    "With ties" keeps every pair (3 classes; a tie agrees only with a tie, so while the LLM never
    says tie a human tie always counts as a disagreement). "Without ties" drops every pair on
    which either side says tie (2 classes), as MT-Bench's agreement with and without ties
    (Zheng et al. 2023, FastChat's ``compute_agreement``). Kappa is Cohen's on the symmetrised
    coding (:func:`~compassess_core.stats.agreement_stats.pair_kappa`: chance = ties at each side's
    tie rate, otherwise either candidate with probability 1/2). ``confusion`` rows are the human
    classes, columns the LLM's, both in :data:`CLASS_NAMES` order (relative to the ids' order;
    nothing computed from it depends on that order).
    """

    accuracy_with_ties: float
    kappa_with_ties: float
    n_with_ties: int
    accuracy_without_ties: float
    kappa_without_ties: float
    n_without_ties: int
    n_human_ties: int
    confusion: IntArray
    #: 95% cluster-bootstrap intervals (contexts, then pairs, :func:`agreement_intervals`):
    #: ``accuracy_with_ties`` ... ``kappa_without_ties`` -> ``(low, high)``; empty when not
    #: computed.
    intervals: dict = field(default_factory=dict)
    #: Pairs on which the LLM said tie (:data:`TIES_FLIP` or a band), of ``n_with_ties``.
    n_llm_ties: int = 0

    @property
    def small_sample(self) -> bool:
        """Fewer than :data:`SMALL_SAMPLE_PAIRS` scored pairs (without ties): read with caution."""
        return self.n_without_ties < SMALL_SAMPLE_PAIRS

    def confusion_frame(self) -> pd.DataFrame:
        """The confusion matrix with labelled rows (human) and columns (LLM)."""
        return pd.DataFrame(self.confusion, index=pd.Index([f"human: {c}" for c in CLASS_NAMES]),
                            columns=pd.Index([f"LLM: {c}" for c in CLASS_NAMES]))


def _scores(human_label: IntArray, llm_label: IntArray, n_boot: int = 0, seed: int = 0, *,
            contexts: ArrayLike | None = None, llm_replicates: IntArray | None = None,
            multiplicity: IntArray | None = None,
            level: float = INTERVAL_LEVEL) -> AgreementScores:
    """Scores of one label pairing; intervals (``n_boot`` > 0) by the cluster bootstrap over
    ``contexts``, or over the given ``multiplicity`` with the LLM's labels of each replicate."""
    conf = confusion_matrix(human_label, llm_label)
    intervals = {}
    if n_boot and len(human_label):
        intervals = agreement_intervals(
            human_label, llm_label if llm_replicates is None else llm_replicates, contexts,
            n_boot=n_boot, seed=seed, multiplicity=multiplicity, level=level)
    n = int(conf.sum())
    # FastChat's "without tie": a pair where either side says tie is left out.
    no_tie = conf[:2, :2]
    n2 = int(no_tie.sum())
    nan = float("nan")
    return AgreementScores(
        accuracy_with_ties=float(np.trace(conf) / n) if n else nan,
        kappa_with_ties=pair_kappa_from_confusion(conf),
        n_with_ties=n,
        accuracy_without_ties=float(np.trace(no_tie) / n2) if n2 else nan,
        kappa_without_ties=pair_kappa_from_confusion(np.pad(no_tie, ((0, 1), (0, 1)))),
        n_without_ties=n2,
        n_human_ties=int(conf[TIE_CODE].sum()),
        confusion=conf,
        intervals=intervals,
        n_llm_ties=int(conf[:, TIE_CODE].sum()),
    )


@dataclass(frozen=True)
class AgreementAt:
    """LLM vs humans at one threshold: majority vote, each annotator, and every vote pooled
    (``votes``: each human vote against the LLM's verdict of its pair, the unit FastChat's
    MT-Bench agreement counts; None when not computed). ``tau_reestimated``: the intervals
    re-estimate tau* in every bootstrap replicate (the threshold is the balanced one)."""

    tau: float
    majority: AgreementScores
    per_annotator: dict[str, AgreementScores]
    votes: AgreementScores | None = None
    tau_reestimated: bool = False


@dataclass(frozen=True)
class AgreementReport:
    """LLM vs humans, raw (tau = 0.5) and at the chosen threshold, side by side.

    ``n_pairs_labelled`` counts unordered pairs with at least one human vote,
    ``n_pairs_matched`` those the run also judged (the only ones scored), ``n_judgements`` the
    votes used (after dropping skips and repeats), ``n_skipped`` the skips dropped.
    """

    raw: AgreementAt
    debiased: AgreementAt
    n_judgements: int
    n_skipped: int
    n_pairs_labelled: int
    n_pairs_matched: int
    annotators: list[str]
    notes: list[str] = field(default_factory=list)
    #: The LLM's tie verdict (:data:`TIE_MODES`) and band the verdicts were read with.
    ties: str = TIES_NONE
    tie_band: float = 0.0

    def summary_frame(self) -> pd.DataFrame:
        """One row per scope (``majority`` then each annotator) and threshold, for tables/CLI."""
        rows = []
        for at, which in ((self.raw, "raw"), (self.debiased, "debiased")):
            scopes = ([("majority", at.majority)]
                      + ([("all votes", at.votes)] if at.votes is not None else [])
                      + sorted(at.per_annotator.items()))
            for scope, s in scopes:
                rows.append(dict(scope=scope, threshold=which, tau=at.tau,
                                 accuracy_with_ties=s.accuracy_with_ties,
                                 kappa_with_ties=s.kappa_with_ties, n_with_ties=s.n_with_ties,
                                 accuracy_without_ties=s.accuracy_without_ties,
                                 kappa_without_ties=s.kappa_without_ties,
                                 n_without_ties=s.n_without_ties, n_human_ties=s.n_human_ties,
                                 n_llm_ties=s.n_llm_ties))
        return pd.DataFrame(rows)


def _llm_probs(llm: pd.DataFrame | ComparisonTable) -> pd.DataFrame:
    if isinstance(llm, ComparisonTable):
        return pair_probabilities(llm)
    missing = {"context_id", "x", "y", "p_xy", "p_yx"} - set(llm.columns)
    if missing:
        raise InputError(f"LLM pair table lacks column(s) {', '.join(sorted(missing))}; build it "
                         "with llm_pair_verdicts or pair_probabilities")
    return llm[["context_id", "x", "y", "p_xy", "p_yx"]]


def _comparisons(llm: pd.DataFrame | ComparisonTable) -> tuple[np.ndarray, FloatArray]:
    """Context id and p of every comparison behind the LLM's verdicts (what tau* is the median
    of): a table's own comparisons, else both orders of a pair table."""
    if isinstance(llm, ComparisonTable):
        cid, _, _, p = judged_comparisons(llm)
        return cid, p
    ctx = llm["context_id"].astype(str).to_numpy()
    p = np.concatenate([llm["p_xy"].to_numpy(np.float64), llm["p_yx"].to_numpy(np.float64)])
    ctx = np.concatenate([ctx, ctx])
    keep = np.isfinite(p)
    return ctx[keep], p[keep]


def _replicates(pair_contexts: np.ndarray, n_boot: int, seed: int,
                comparisons: tuple[np.ndarray, FloatArray] | None
                ) -> tuple[IntArray, FloatArray | None]:
    """The cluster bootstrap of the scored pairs (contexts, then pairs within them) and, when
    ``comparisons`` are given, tau* (eq. 10's median, ``bias.balanced_threshold``) re-estimated in
    every replicate from the run's comparisons resampled the same way: a labelled context drawn
    ``c`` times brings its comparisons ``c`` times (drawn within it), and the contexts without
    labels are resampled among themselves (a stratified first stage, so the number of labelled
    contexts stays that of the data)."""
    rng = np.random.default_rng(seed)
    labelled, pair_idx = np.unique(pair_contexts.astype(str), return_inverse=True)
    draws = context_draws(len(labelled), n_boot, rng)
    mult = within_contexts(pair_idx, draws, rng)
    if comparisons is None:
        return mult, None
    ctx, p = comparisons
    order = np.lexsort((p, ctx))  # within a context by p: a renaming cannot reorder them
    ctx, p = ctx[order], p[order]
    weights = np.zeros((int(n_boot), len(p)), dtype=np.int64)
    inside = np.isin(ctx, labelled)
    if inside.any():
        weights[:, inside] = within_contexts(np.searchsorted(labelled, ctx[inside]), draws, rng)
    if (~inside).any():
        others, other_idx = np.unique(ctx[~inside], return_inverse=True)
        weights[:, ~inside] = within_contexts(other_idx, context_draws(len(others), n_boot, rng),
                                              rng)
    eps = np.finfo(np.float64).eps
    return mult, np.clip(weighted_median(p, weights), eps, 1.0 - eps)


def _invariant_order(maj: pd.DataFrame) -> IntArray:
    """An order of the scored pairs that no renaming of candidates changes, so a seeded bootstrap
    draws the same replicates whatever the names: by context, then by what the statistics read
    of each pair, written orientation-free (the two probabilities, larger first, and the human
    class in that orientation). Pairs equal on these keys are interchangeable."""
    if len(maj) == 0:
        return np.zeros(0, dtype=np.int64)
    a = np.nan_to_num(maj["p_xy"].to_numpy(np.float64), nan=-1.0)
    b = np.nan_to_num(maj["p_yx"].to_numpy(np.float64), nan=-1.0)
    h = maj["label"].to_numpy(np.int64)
    swapped = np.where(h == TIE_CODE, h, 1 - h)
    h_key = np.where(b > a, swapped, np.where(a > b, h, np.minimum(h, swapped)))
    _, ctx = np.unique(maj["context_id"].astype(str).to_numpy(), return_inverse=True)
    return np.lexsort((h_key, np.minimum(a, b), np.maximum(a, b), ctx))


def _agreement_at(human: pd.DataFrame, majority: pd.DataFrame, probs: pd.DataFrame,
                  tau: float, n_boot: int = 0, seed: int = 0, *, ties: str = TIES_NONE,
                  tie_band: float = 0.0,
                  comparisons: tuple[np.ndarray, FloatArray] | None = None,
                  level: float = INTERVAL_LEVEL) -> AgreementAt:
    llm = verdicts_at(probs, tau, ties=ties, tie_band=tie_band)[[*_PAIR, "llm_label", "p_xy",
                                                                 "p_yx"]]
    maj = majority.merge(llm, on=_PAIR, how="inner")
    maj = maj.iloc[_invariant_order(maj)].reset_index(drop=True)
    per = human.merge(llm[[*_PAIR, "llm_label"]], on=_PAIR, how="inner")
    # intervals for the headline (majority) numbers only: per annotator they would cost a
    # bootstrap each and no page shows them
    per_annotator = {str(a): _scores(g["label"].to_numpy(np.int64), g["llm_label"].to_numpy(np.int64))
                     for a, g in per.groupby("annotator", sort=True)}
    votes = _scores(per["label"].to_numpy(np.int64), per["llm_label"].to_numpy(np.int64))
    h = maj["label"].to_numpy(np.int64)
    labels = maj["llm_label"].to_numpy(np.int64)
    if n_boot and len(maj) >= 2:
        mult, tau_reps = _replicates(maj["context_id"].to_numpy(dtype=object), n_boot, seed,
                                     comparisons)
        reps = None
        if tau_reps is not None:
            _, reps, _ = pair_labels(maj["p_xy"].to_numpy(np.float64),
                                     maj["p_yx"].to_numpy(np.float64), tau_reps[:, None], ties,
                                     tie_band)
        scores = _scores(h, labels, n_boot, seed, llm_replicates=reps, multiplicity=mult,
                         level=level)
    else:
        scores = _scores(h, labels)
    return AgreementAt(float(tau), scores, per_annotator, votes,
                       tau_reestimated=comparisons is not None and bool(n_boot))


def _is_tau_star(llm: pd.DataFrame | ComparisonTable, tau: float) -> bool:
    """Whether ``tau`` is the balanced tau* of ``llm``'s comparisons (and not 0.5, which is
    also the plain argmax): then the intervals re-estimate it in every replicate."""
    _, p = _comparisons(llm)
    return len(p) > 0 and float(tau) != 0.5 and float(tau) == float(balanced_threshold(p))


def llm_vs_human(human_df: pd.DataFrame, llm: pd.DataFrame | ComparisonTable,
                 tau: float = 0.5, *, table_at: pd.DataFrame | ComparisonTable | None = None,
                 n_boot: int = AGREEMENT_BOOT, seed: int = 0, ties: str = TIES_NONE,
                 tie_band: float = 0.0, tau_star: bool | None = None,
                 level: float = INTERVAL_LEVEL) -> AgreementReport:
    """Accuracy (raw agreement), kappa and confusion matrix of the LLM against human labels.

    Every number is given raw (tau = 0.5) and at ``tau`` (eq. 9-10 of Liusie et al. 2024, see
    :func:`verdicts_at`), with and without ties (:class:`AgreementScores`), for the majority
    vote of each pair (:func:`majority_vote`), for each annotator alone and for every vote
    pooled (FastChat's unit). Only pairs both labelled and judged by the run are scored.

    Parameters
    ----------
    human_df
        Human judgements in any shape :func:`as_human_table` accepts.
    llm
        A run's :class:`ComparisonTable`, or a table from :func:`llm_pair_verdicts` /
        :func:`pair_probabilities` (only its probabilities are used; verdicts are recomputed).
    tau
        The current threshold (e.g. tau* from ``bias.balanced_threshold``).
    table_at
        The comparisons as the threshold reads them when they are not ``llm`` itself (per-context
        balancing: eq. 9's reweighted p, ``analysis.threshold_view``); raw numbers read ``llm``.
    n_boot
        Resamples of the 95% intervals of the majority vote's accuracy and kappa: the two-stage
        cluster bootstrap (contexts, then pairs within them); 0 computes none.
    ties, tie_band
        The LLM's tie verdict (:data:`TIE_MODES`, :func:`verdicts_at`).
    tau_star
        Whether ``tau`` is the balanced tau*, re-estimated in every bootstrap replicate from the
        resampled comparisons; None (default): when ``tau`` equals ``bias.balanced_threshold`` of
        ``llm``'s comparisons (and is not 0.5) and no other ``table_at`` is given. Per-context
        thresholds (``table_at``) are held fixed in the replicates.
    level
        Coverage of the intervals.

    Raises
    ------
    InputError
        Bad human table, LLM table lacking columns, ``tau`` not in (0, 1), or a bad tie mode.
    """
    ties, tie_band = _check_ties(ties, tie_band)
    human, n_skipped, _ = _normalise(human_df)
    probs = _llm_probs(llm)
    own = table_at is None or table_at is llm
    probs_at = probs if own else _llm_probs(table_at)
    if tau_star is None:
        tau_star = own and _is_tau_star(llm, tau)
    majority = majority_vote(human)
    raw = _agreement_at(human, majority, probs, 0.5, n_boot, seed, ties=ties, tie_band=tie_band,
                        level=level)
    deb = _agreement_at(human, majority, probs_at, tau, n_boot, seed, ties=ties,
                        tie_band=tie_band, comparisons=_comparisons(llm) if tau_star else None,
                        level=level)
    n_matched = len(majority.merge(probs[_PAIR], on=_PAIR, how="inner"))
    notes = []
    if n_matched < len(majority):
        notes.append(f"{len(majority) - n_matched} labelled pair(s) were not judged by the run and "
                     "are left out")
    if len(human) and (human["label"] == TIE_CODE).any() and ties == TIES_NONE and not tie_band:
        notes.append("the LLM never answers tie: human ties count as disagreements 'with ties'")
    return AgreementReport(raw=raw, debiased=deb, n_judgements=len(human), n_skipped=n_skipped,
                           n_pairs_labelled=len(majority), n_pairs_matched=n_matched,
                           annotators=sorted(human["annotator"].unique().tolist()), notes=notes,
                           ties=ties, tie_band=tie_band)


def pair_outcomes(human_df: pd.DataFrame, llm: pd.DataFrame | ComparisonTable,
                  tau: float = 0.5, *, ties: str = TIES_NONE,
                  tie_band: float = 0.0) -> pd.DataFrame:
    """Per labelled pair, whether the LLM at ``tau`` agrees with the humans' majority: the table
    paired tests over judges (or wordings, or a panel and its members) consume.

    Returns
    -------
    pandas.DataFrame
        One row per pair both labelled and judged, in pair order: ``context_id, x, y``,
        ``human`` and ``llm`` (class codes, :data:`CLASS_NAMES`), ``correct`` (1.0 when they
        are the same class, a tie agreeing only with a tie: FastChat's "with ties" unit, its
        mean is ``accuracy_with_ties``) and ``decisive`` (neither side says tie: the mean of
        ``correct`` over these rows is ``accuracy_without_ties``). Invariant to candidate names
        and order except for the ``x``/``y`` columns themselves and the codes' orientation.

    Raises
    ------
    InputError
        As :func:`llm_vs_human`.
    """
    ties, tie_band = _check_ties(ties, tie_band)
    human, _, _ = _normalise(human_df)
    llm_at = verdicts_at(_llm_probs(llm), tau, ties=ties, tie_band=tie_band)
    both = majority_vote(human).merge(llm_at[[*_PAIR, "llm_label"]], on=_PAIR, how="inner")
    h = both["label"].to_numpy(np.int64)
    j = both["llm_label"].to_numpy(np.int64)
    return pd.DataFrame({"context_id": both["context_id"].to_numpy(dtype=object),
                         "x": both["x"].to_numpy(dtype=object),
                         "y": both["y"].to_numpy(dtype=object), "human": h, "llm": j,
                         "correct": (h == j).astype(np.float64),
                         "decisive": (h != TIE_CODE) & (j != TIE_CODE)})


# ----------------------------------------------------------------------------- human vs human

@dataclass(frozen=True)
class HumanAgreement:
    """Agreement among annotators on pairs that at least two of them labelled.

    ``percent_agreement`` is the share of agreeing annotator pairs over all items
    (``sum_i sum_k n_ik (n_ik - 1) / sum_i m_i (m_i - 1)`` with ``n_ik`` the votes for class ``k``
    on item ``i`` and ``m_i`` its annotators: Fleiss' observed agreement, items weighted by their
    number of annotator pairs);
    ``cohen_kappa`` is the kappa of the two annotators when exactly two labelled overlapping pairs
    (else None); ``krippendorff_alpha`` is nominal alpha for any number of annotators; both on the
    symmetrised coding (every pair in both orientations, :func:`pair_kappa`, :func:`pair_alpha`),
    so they do not depend on the candidates' names;
    ``pairwise`` has one row per annotator pair with a shared item: ``annotator_1, annotator_2,
    n_items, agreement, kappa``.
    """

    n_items: int
    n_annotators: int
    percent_agreement: float
    cohen_kappa: float | None
    krippendorff_alpha: float
    pairwise: pd.DataFrame


def human_human_agreement(human_df: pd.DataFrame) -> HumanAgreement:
    """Percent agreement, Cohen's kappa and Krippendorff's alpha among annotators (3 classes).

    Classes are x better / y better / tie (:data:`CLASS_NAMES`, "both bad" counting as a tie);
    skips are dropped, a repeated judgement counts once (:func:`normalise_human_labels`) and an
    admin's adjudication (``source`` :data:`ADJUDICATION`) is no annotator's vote. Alpha is
    nominal, from the ``krippendorff`` package (Krippendorff 2011), on the annotator x pair matrix
    with missing entries, every pair counted in both orientations (:func:`pair_alpha`); kappa is
    :func:`pair_kappa`. NaN when fewer than two labels or only ties occur.

    Raises
    ------
    InputError
        As :func:`as_human_table`.
    """
    table = as_human_table(human_df)
    if "source" in table.columns:
        # An admin's adjudication settles a disagreement; it is not one more annotator's vote.
        table = table.loc[table["source"] != ADJUDICATION]
    human, _, _ = _normalise(table)
    m = human.groupby(_PAIR)["annotator"].transform("size")
    shared = human.loc[m >= 2]
    annotators = sorted(shared["annotator"].unique().tolist())
    empty = pd.DataFrame(columns=["annotator_1", "annotator_2", "n_items", "agreement", "kappa"])
    if len(shared) == 0:
        return HumanAgreement(0, 0, float("nan"), None, float("nan"), empty)
    counts = (pd.crosstab([shared["context_id"], shared["x"], shared["y"]], shared["label"])
              .reindex(columns=range(N_CLASSES), fill_value=0).to_numpy(dtype=np.int64))
    per_item = counts.sum(axis=1)
    agree = float((counts * (counts - 1)).sum()) / float((per_item * (per_item - 1)).sum())
    wide = shared.pivot_table(index="annotator", columns=_PAIR, values="label", aggfunc="first")
    wide = wide.reindex(annotators)
    data = wide.to_numpy(dtype=np.float64)
    alpha = pair_alpha(data)
    rows = []
    for ia in range(len(annotators)):
        for ib in range(ia + 1, len(annotators)):
            both = ~np.isnan(data[ia]) & ~np.isnan(data[ib])
            if not both.any():
                continue
            a, b = data[ia, both].astype(np.int64), data[ib, both].astype(np.int64)
            rows.append(dict(annotator_1=annotators[ia], annotator_2=annotators[ib],
                             n_items=int(both.sum()), agreement=float((a == b).mean()),
                             kappa=pair_kappa(a, b)))
    pairwise = pd.DataFrame(rows, columns=empty.columns) if rows else empty
    kappa = float(pairwise["kappa"].iloc[0]) if len(annotators) == 2 and len(pairwise) else None
    return HumanAgreement(n_items=len(counts), n_annotators=len(annotators),
                          percent_agreement=agree, cohen_kappa=kappa, krippendorff_alpha=alpha,
                          pairwise=pairwise)


# ----------------------------------------------------------------------------- positional bias

def human_positional_bias(human_df: pd.DataFrame) -> tuple[float, int]:
    """Share of people's decisive judgements that picked the left (shown-first) candidate.

    The human counterpart of P(A) (eq. 8 of Liusie et al. 2024): ties and skips are left out, and
    so are rows whose ``source`` is ``"import"``, whose left/right is the file's column order and
    not what a person saw.

    Returns
    -------
    tuple of (float, int)
        ``(share_left, n)``; the share is NaN when ``n == 0``.

    Raises
    ------
    InputError
        As :func:`as_human_table`.
    """
    human, _, _ = _normalise(human_df)
    if "source" in human.columns:
        human = human.loc[human["source"] != "import"]
    picked = human["left_picked"].to_numpy(dtype=np.float64)
    picked = picked[~np.isnan(picked)]
    if len(picked) == 0:
        return float("nan"), 0
    return float(picked.mean()), int(len(picked))


def _share_at(p: FloatArray, tau: float) -> float:
    """The share of the comparisons exactly at ``tau`` counted for A: the balancing split
    (``bias.balanced_split``) when ``tau`` is the balanced tau* of ``p``, else 0 (eq. 10)."""
    from .bias import balanced_split

    if len(p) == 0:
        return 0.0
    tau_star, share = balanced_split(p)
    return share if float(tau) == tau_star else 0.0


def positional_bias_side_by_side(human_df: pd.DataFrame, table: ComparisonTable,
                                 tau: float, *, table_at: ComparisonTable | None = None,
                                 threshold: str = "") -> pd.DataFrame:
    """People's share of left picks next to the LLM's P(A) raw and at ``tau`` (eq. 8, 10).

    Returns
    -------
    pandas.DataFrame
        Rows ``humans``, ``LLM raw (tau = 0.5)``, ``LLM at current tau = ...``, distinct even at
        tau = 0.5 (a chart keyed by them must not merge the two LLM bars); columns
        ``share_first`` (left / position A picked) and ``n``.
    """
    from .bias import positional_bias

    share, n = human_positional_bias(human_df)
    p = np.asarray(table.p, dtype=np.float64)
    p = p[np.isfinite(p)]
    p_at = p if table_at is None else np.asarray(table_at.p, dtype=np.float64)
    p_at = p_at[np.isfinite(p_at)]
    raw_a, _ = positional_bias(p, 0.5)
    deb_a, _ = positional_bias(p_at, tau, _share_at(p_at, tau))
    return pd.DataFrame({"share_first": [share, raw_a, deb_a], "n": [n, len(p), len(p_at)]},
                        index=pd.Index(["humans", "LLM raw (tau = 0.5)",
                                        f"LLM at current {threshold or f'tau = {tau:.4g}'}"],
                                       name="who"))


# ----------------------------------------------------------------------------- rankings

def human_rankings(human_df: pd.DataFrame, dataset: Dataset) -> pd.DataFrame:
    """Bradley-Terry scores of each context's candidates from human judgements alone.

    Every vote is one comparison with soft outcome 1 (the winner), 0 or 0.5 for a tie, fitted by
    :func:`compassess_core.stats.ranking.bradley_terry` (Bradley & Terry 1952; outcomes clipped to
    ``[BT_EPS, 1 - BT_EPS]`` so a candidate that always wins has a finite strength). Contexts
    without human votes are left out; candidates without one get NaN.

    Returns
    -------
    pandas.DataFrame
        ``context_id, candidate_id, score, rank, n_comparisons`` (the ``rank_contexts`` shape).

    Raises
    ------
    InputError
        As :func:`as_human_table`; also if a judgement names a context or candidate that is not
        in ``dataset``.
    """
    human, _, _ = _normalise(human_df)
    rows = []
    by_ctx = dict(tuple(human.groupby("context_id", sort=False)))
    known = {c.context_id for c in dataset.contexts}
    unknown = sorted(set(by_ctx) - known)
    if unknown:
        raise InputError(f"human judgements name context(s) not in dataset '{dataset.name}': "
                         f"{', '.join(unknown[:5])}")
    for ctx in dataset.contexts:
        g = by_ctx.get(ctx.context_id)
        if g is None:
            continue
        index = pd.Index(ctx.candidate_ids)
        i = index.get_indexer(g["x"])
        j = index.get_indexer(g["y"])
        if (i < 0).any() or (j < 0).any():
            bad = g["x"].to_numpy()[i < 0].tolist() + g["y"].to_numpy()[j < 0].tolist()
            raise InputError(f"human judgements name candidate '{bad[0]}' which is not in context "
                             f"'{ctx.context_id}'")
        lab = g["label"].to_numpy(np.int64)
        p = np.select([lab == X_BETTER, lab == Y_BETTER], [1.0, 0.0], default=0.5)
        res = ranking.bradley_terry(len(index), i, j, p)
        ranks = ranking.rank_scores(res.scores)
        rows.append(pd.DataFrame({"context_id": ctx.context_id, "candidate_id": ctx.candidate_ids,
                                  "score": res.scores, "rank": ranks,
                                  "n_comparisons": res.n_comparisons}))
    if not rows:
        return pd.DataFrame(columns=["context_id", "candidate_id", "score", "rank",
                                     "n_comparisons"])
    return pd.concat(rows, ignore_index=True)


def ranking_correlation(human_scores: pd.DataFrame, llm_scores: pd.DataFrame,
                        method: str = "spearman") -> metrics.CorrelationResult:
    """Per-context correlation of LLM scores with human-judgement scores, mean x100 (§4 of
    Liusie et al. 2024), over the contexts both tables hold.

    Parameters
    ----------
    human_scores, llm_scores
        Tables with ``context_id, candidate_id, score`` (e.g. :func:`human_rankings` and
        ``analysis.rank_contexts``). The humans are the reference: contexts whose human scores
        are all equal are skipped (see :mod:`compassess_core.stats.metrics`).

    Raises
    ------
    InputError
        Missing columns or an unknown ``method``.
    """
    need = {"context_id", "candidate_id", "score"}
    for name, t in (("human", human_scores), ("LLM", llm_scores)):
        if need - set(t.columns):
            raise InputError(f"{name} scores lack column(s) {', '.join(sorted(need - set(t.columns)))}")
    both = human_scores[list(need)].merge(llm_scores[list(need)], on=["context_id", "candidate_id"],
                                          suffixes=("_human", "_llm"))
    groups = list(both.groupby("context_id", sort=False))
    pred = [g["score_llm"].to_numpy(np.float64) for _, g in groups]
    ref = [g["score_human"].to_numpy(np.float64) for _, g in groups]
    return metrics.per_context_correlation(pred, ref, method=method)


# ----------------------------------------------------------------------------- disagreements

def disagreements(human_df: pd.DataFrame, llm: pd.DataFrame | ComparisonTable,
                  tau: float = 0.5, *, ties: str = TIES_NONE,
                  tie_band: float = 0.0) -> pd.DataFrame:
    """Pairs where the humans' majority (:func:`majority_vote`) differs from the LLM at ``tau``.

    Human ties are included (the LLM never says tie, see :class:`AgreementScores`), marked by
    ``human == "tie"``. Sorted by LLM confidence, most confident first: those are the LLM's
    most striking errors (or the humans').

    Returns
    -------
    pandas.DataFrame
        ``context_id, x, y, human, n_x, n_y, n_tie, annotators, verdict, p_xy, p_yx, p_avg,
        confidence, flips``.

    Raises
    ------
    InputError
        As :func:`llm_vs_human`.
    """
    human, _, _ = _normalise(human_df)
    llm_at = verdicts_at(_llm_probs(llm), tau, ties=ties, tie_band=tie_band)
    joined = majority_vote(human).merge(llm_at, on=_PAIR, how="inner")
    joined = joined.loc[joined["label"] != joined["llm_label"]]
    joined = joined.rename(columns={"preferred": "human"})
    cols = ["context_id", "x", "y", "human", "n_x", "n_y", "n_tie", "annotators", "verdict",
            "p_xy", "p_yx", "p_avg", "confidence", "flips"]
    return (joined.sort_values(["confidence", *_PAIR], ascending=[False, True, True, True],
                               kind="stable")[cols].reset_index(drop=True))


# ----------------------------------------------------------------------------- one report

def _scores_dict(s: AgreementScores) -> dict:
    intervals = {f"{k}_ci95": [nan_to_none(v) for v in lo_hi] for k, lo_hi in s.intervals.items()}
    return dict(accuracy_with_ties=s.accuracy_with_ties, kappa_with_ties=s.kappa_with_ties,
                n_with_ties=s.n_with_ties, accuracy_without_ties=s.accuracy_without_ties,
                kappa_without_ties=s.kappa_without_ties, n_without_ties=s.n_without_ties,
                n_human_ties=s.n_human_ties, n_llm_ties=s.n_llm_ties,
                confusion=s.confusion.tolist(), **intervals, small_sample=s.small_sample)


def nan_to_none(v):
    """``v`` for JSON: a NaN or infinite float as None, anything else as it is."""
    return None if isinstance(v, float) and not np.isfinite(v) else v


def json_records(frame: pd.DataFrame) -> list[dict]:
    """The rows of ``frame`` as JSON-able dicts (NaN as None, :func:`nan_to_none`)."""
    return [{k: nan_to_none(v) for k, v in r.items()} for r in frame.to_dict(orient="records")]


def agreement_summary(human_df: pd.DataFrame, table: ComparisonTable, dataset: Dataset,
                      tau: float, *, table_at: ComparisonTable | None = None, threshold: str = "",
                      n_boot: int = AGREEMENT_BOOT, seed: int = 0,
                      report: AgreementReport | None = None, ties: str = TIES_NONE,
                      tie_band: float = 0.0) -> dict:
    """Everything the Agreement page and ``compassess agreement`` show, as one JSON-able dict:
    LLM vs human (majority vote, raw and at ``tau``), human vs human, positional bias of both,
    and the correlation of the LLM's Bradley-Terry ranking with the human-only one; accuracy,
    kappa and the correlation with 95% bootstrap intervals (``n_boot`` replicates of the
    two-stage cluster bootstrap: contexts, then pairs within them; contexts for the correlation;
    tau* re-estimated in each replicate when it is the threshold), accuracy (the raw agreement)
    beside every kappa, with and without ties per pair (majority vote) and per vote (FastChat's
    unit), and ``caution`` when they rest on fewer than
    :data:`SMALL_SAMPLE_PAIRS` pairs or :data:`SMALL_SAMPLE_CONTEXTS` contexts. ``table_at``:
    the comparisons as the threshold reads them (per-context balancing), named ``threshold``;
    ``report``: the :func:`llm_vs_human` of the same arguments, when the caller has it."""
    from . import analysis

    at_table = table if table_at is None else table_at
    if report is None:
        report = llm_vs_human(human_df, table, tau, table_at=table_at, n_boot=n_boot, seed=seed,
                              ties=ties, tie_band=tie_band)
    llm = dict(n_judgements=report.n_judgements, n_skipped=report.n_skipped,
               n_pairs_labelled=report.n_pairs_labelled, n_pairs_matched=report.n_pairs_matched,
               annotators=report.annotators, notes=report.notes,
               confusion_labels=list(CLASS_NAMES), ties=report.ties, tie_band=report.tie_band)
    for name, at in (("raw", report.raw), ("debiased", report.debiased)):
        llm[name] = {"tau": at.tau, "tau_reestimated": at.tau_reestimated,
                     **{k: nan_to_none(v) if not isinstance(v, list) else v
                        for k, v in _scores_dict(at.majority).items()}}
        if at.votes is not None:
            llm[name]["votes"] = {k: nan_to_none(v) if not isinstance(v, list) else v
                                  for k, v in _scores_dict(at.votes).items()}
    llm["debiased"]["threshold"] = threshold or f"tau = {tau:.4f}"
    hh = human_human_agreement(human_df)
    share, n_left = human_positional_bias(human_df)
    from .bias import positional_bias
    p = np.asarray(table.p, dtype=np.float64)
    p = p[np.isfinite(p)]
    p_at = np.asarray(at_table.p, dtype=np.float64)
    p_at = p_at[np.isfinite(p_at)]
    human_scores = human_rankings(human_df, dataset)
    llm_scores = analysis.rank_contexts(dataset, at_table, method="bradley-terry", tau=tau)
    rc = ranking_correlation(human_scores, llm_scores) if len(human_scores) else None
    rc_ci = (correlation_interval(rc.per_context, n_boot=n_boot, seed=seed)
             if rc is not None and n_boot else (float("nan"), float("nan")))
    votes = (human_scores.groupby("context_id")["n_comparisons"].sum() // 2
             if len(human_scores) else pd.Series(dtype=np.int64))
    scored = report.debiased.majority
    caution = []
    if scored.n_without_ties < SMALL_SAMPLE_PAIRS:
        caution.append(f"accuracy and kappa rest on {scored.n_without_ties} scored pair(s) "
                       f"(fewer than {SMALL_SAMPLE_PAIRS}): read them with their intervals")
    if rc is not None and rc.n_used < SMALL_SAMPLE_CONTEXTS:
        low, high = (int(votes.min()), int(votes.max())) if len(votes) else (0, 0)
        caution.append(f"the ranking correlation is a mean over {rc.n_used} context(s) (fewer "
                       f"than {SMALL_SAMPLE_CONTEXTS}), each from "
                       + (f"{low} human vote(s)" if low == high
                          else f"{low} to {high} human votes"))
    return dict(
        tau=float(tau),
        llm_vs_human=llm,
        human_human=dict(n_items=hh.n_items, n_annotators=hh.n_annotators,
                         percent_agreement=nan_to_none(hh.percent_agreement),
                         cohen_kappa=nan_to_none(hh.cohen_kappa),
                         krippendorff_alpha=nan_to_none(hh.krippendorff_alpha)),
        positional_bias=dict(human_share_left=nan_to_none(share), human_n=n_left,
                             llm_p_a_raw=positional_bias(p, 0.5)[0] if len(p) else None,
                             llm_p_a_debiased=positional_bias(p_at, tau, _share_at(p_at, tau))[0]
                             if len(p_at) else None),
        ranking_correlation=dict(spearman_x100=nan_to_none(rc.mean_x100) if rc else None,
                                 n_used=rc.n_used if rc else 0,
                                 spearman_x100_ci95=[nan_to_none(v) for v in rc_ci],
                                 human_votes_per_context=[int(votes.min()), int(votes.max())]
                                 if len(votes) else None,
                                 small_sample=bool(rc is None or rc.n_used < SMALL_SAMPLE_CONTEXTS)),
        intervals=dict(level=INTERVAL_LEVEL, n_boot=int(n_boot),
                       method=f"{CLUSTER_METHOD} for accuracy and kappa (tau* re-estimated in "
                              "each replicate when it is the threshold); contexts resampled for "
                              "the correlation"),
        kappa_chance_model=("kappa and alpha count every pair in both orientations: chance "
                            "agreement p_e = d1*d2/2 + t1*t2 (each side ties at its own tie rate "
                            "t, otherwise picks either candidate with probability 1/2); without "
                            "ties kappa = 2*agreement - 1"),
        small_sample_pairs=SMALL_SAMPLE_PAIRS, small_sample_contexts=SMALL_SAMPLE_CONTEXTS,
        caution=caution,
    )

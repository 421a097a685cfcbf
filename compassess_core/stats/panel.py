"""Panels of judges: several runs on the same dataset and aspect combined into one verdict per pair.

A panel (a "jury", Verga et al. 2024, "Replacing Judges with Juries: Evaluating LLM Generations
with a Panel of Diverse Models") pools the probabilities ``p_m = P(A better)`` of its members
``m = 1..M`` on every ordered pair any of them judged:

1. Each member's probability is put on a common, debiased scale, its log-odds
   ``z_m = (logit p_m - b_m) / T_m``. By default ``b_m = logit tau*_m`` and ``T_m = 1``: eq. 9 of
   Liusie, Manakul, Gales (EACL 2024) in log-odds, the reweighting whose 0.5 threshold is the
   balanced ``tau*`` of eq. 10, so each member's own positional bias is removed. Calibrated on
   human labels, ``b_m`` and ``T_m`` are the member's Platt bias and temperature
   (:mod:`compassess_core.stats.calibration`).
2. The members are combined (:data:`COMBINERS`, one protocol, one registry):

   * ``poe``: a Gaussian product of experts on the pair's log-odds (Liusie, Raina, Fathullah,
     Gales 2024, §4, the fit of :func:`solvers.solve_differences`): member ``m`` is the expert
     ``delta ~ N(z_m, sigma^2 / w_m)``; for one difference the product's mean is the weighted
     mean ``delta* = sum_m w_m z_m / sum_m w_m`` over the members that judged the pair, and the
     panel's ``p = sigmoid(delta*)``.
   * ``vote``: a (weighted) majority vote of the members' debiased verdicts ``z_m > 0`` (eq. 10
     at ``tau*``): ``p`` = the weighted share voting for A, a tied vote broken by the PoE's sign.

   A pair judged by only some members uses those members (their weights renormalised).
3. Member weights are equal by default, set by hand, or learnt from human labels
   (:func:`fit_weights`): the non-negative logistic regression of the humans' majority choice on
   the members' log-odds, a stacked Platt fit (Platt 1999) with a Gaussian prior around equal
   weights, normalised to sum to one. Its worth is measured on held-out folds of labelled pairs
   (:func:`cross_validated_panel`).

Agreement among the members (:func:`member_agreement`) is computed on their pair-level verdicts:
pairwise Cohen's kappa (Cohen 1960, ``agreement.pair_kappa``), Fleiss' kappa over the pairs all
members judged (Fleiss 1971, :func:`fleiss_kappa`) and Krippendorff's nominal alpha with missing
judgements (the ``krippendorff`` package, Krippendorff 2011), all three with every pair counted in
both orientations (``agreement_stats``' symmetrised coding: renaming candidates changes none of
them), beside the raw agreement; each member's agreement with the panel; and the pairs where the
members split (:func:`split_pairs`).

The judges' leaderboard's agreement with people comes with cluster-bootstrap intervals over the
labelled pairs (:func:`human_agreement_interval`, contexts then pairs).

Pure numpy/pandas/scipy: this module must never read or write storage or import a UI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Protocol, Sequence

import numpy as np
import pandas as pd
from scipy.special import expit

from . import agreement
from .agreement_stats import symmetric_counts
from .bias import balanced_threshold
from ..limits import MAX_BOOTSTRAP
from .calibration import (DEFAULT_FOLDS, P_CLIP, Calibration, fit_calibration, fit_on_labels,
                          held_out_folds, log_odds)
from ..errors import InputError
from .solvers import fit_soft_logistic
from ..types import ComparisonTable, FloatArray

__all__ = [
    "MIN_MEMBERS",
    "WEIGHT_MODES",
    "MEMBER_SCALINGS",
    "Combiner",
    "COMBINERS",
    "MemberScaling",
    "balanced_scaling",
    "calibrated_scaling",
    "aligned_log_odds",
    "poe_log_odds",
    "poe_probability",
    "vote_probability",
    "combine",
    "panel_table",
    "labelled_rows",
    "fit_weights",
    "cross_validated_panel",
    "PanelFit",
    "fit_panel",
    "member_probabilities",
    "own_pair_log_odds",
    "pooled_rate",
    "pooled_per_unit",
    "pair_verdicts",
    "fleiss_kappa",
    "MemberAgreement",
    "member_agreement",
    "split_pairs",
    "AgreementInterval",
    "human_agreement_interval",
    "parse_weights",
    "member_names",
    "weights_label",
    "panel_vs_best_member",
]

#: A panel combines at least this many runs, and at most this many (a bound on what one asks).
MIN_MEMBERS = 2
MAX_MEMBERS = 32
#: How member weights are set: ``equal``, ``learnt`` from human labels, or given by hand
#: (a list of numbers, one per member).
WEIGHT_MODES = ("equal", "learnt")
#: How each member's p is put on the common scale: its balanced tau* (eq. 9-10), calibrated on the
#: human labels (Platt), or ``auto`` (calibrated where the dataset's aspect has labels).
MEMBER_SCALINGS = ("balanced", "calibrated", "auto")
#: Strength of the Gaussian prior that pulls learnt weights towards equal ones, in units of the
#: log-loss summed over labelled comparisons (about one comparison's worth).
WEIGHT_PRIOR_STRENGTH = 1.0
#: Most bootstrap resamples of the labelled pairs (memory grows with resamples x pairs).
MAX_BOOT = MAX_BOOTSTRAP
#: Classes of a member's pair-level verdict (as ``agreement``): x (first in id order) better, y.
X_BETTER, Y_BETTER = agreement.X_BETTER, agreement.Y_BETTER
_PAIR = ["context_id", "x", "y"]
_KEY = ["context_id", "a_id", "b_id"]


# ------------------------------------------------------------------------ member scales

@dataclass(frozen=True)
class MemberScaling:
    """``z = (logit p - offset) / temperature``: a member's debiased (or calibrated) log-odds.
    ``how`` says which, in words (shown beside the member)."""

    offset: float
    temperature: float
    how: str

    def apply(self, p: FloatArray) -> FloatArray:
        """The member's log-odds on the common scale (``p`` clipped as ``calibration.log_odds``)."""
        return (log_odds(p) - self.offset) / self.temperature


def balanced_scaling(p: FloatArray) -> MemberScaling:
    """Eq. 9 of Liusie et al. (EACL 2024) in log-odds at the balanced tau* (eq. 10, the median
    of p): ``z = logit p - logit tau*``, so ``z > 0`` exactly where ``p > tau*``."""
    pp = np.asarray(p, dtype=np.float64)
    pp = pp[np.isfinite(pp)]
    if len(pp) == 0:
        raise InputError("a panel member has no comparison to debias")
    tau = float(np.clip(balanced_threshold(pp), P_CLIP, 1.0 - P_CLIP))
    return MemberScaling(float(log_odds(tau)), 1.0, f"balanced tau* = {tau:.3f}")


def calibrated_scaling(calibration: Calibration) -> MemberScaling:
    """Platt scaling on human labels, ``z = (logit p - b) / T`` (``calibration`` module)."""
    return MemberScaling(calibration.bias, calibration.temperature,
                         f"calibrated on {calibration.n_pairs} labelled pairs "
                         f"(bias {calibration.bias:.3f}, temperature {calibration.temperature:.3f})")


# ------------------------------------------------------------------------ aligning members

def aligned_log_odds(tables: Sequence[ComparisonTable], scalings: Sequence[MemberScaling]
                     ) -> tuple[pd.DataFrame, FloatArray]:
    """The members' log-odds on every ordered pair any of them judged.

    Returns
    -------
    tuple
        ``keys`` (``context_id, a_id, b_id``, sorted) and ``Z`` of shape ``(len(keys), M)``:
        member ``m``'s scaled log-odds of that ordered pair (the mean where it judged it more
        than once), NaN where it did not judge it.
    """
    if len(tables) != len(scalings):
        raise InputError(f"{len(tables)} member tables but {len(scalings)} scalings")
    frames = []
    for m, (t, s) in enumerate(zip(tables, scalings)):
        p = np.asarray(t.p, dtype=np.float64)
        ok = np.isfinite(p)
        frames.append(pd.DataFrame({
            "context_id": np.asarray(t.context_ids, dtype=object)[ok].astype(str),
            "a_id": np.asarray(t.a_ids, dtype=object)[ok].astype(str),
            "b_id": np.asarray(t.b_ids, dtype=object)[ok].astype(str),
            "member": m, "z": s.apply(p[ok])}))
    long = pd.concat(frames, ignore_index=True)
    wide = long.pivot_table(index=_KEY, columns="member", values="z", aggfunc="mean", sort=True)
    wide = wide.reindex(columns=range(len(tables)))
    keys = wide.index.to_frame(index=False)
    return keys, wide.to_numpy(dtype=np.float64)


def _weights(w: Sequence[float] | FloatArray, n_members: int) -> FloatArray:
    ww = np.asarray(w, dtype=np.float64).reshape(-1)
    if len(ww) != n_members:
        raise InputError(f"{len(ww)} weights for {n_members} members")
    if not np.isfinite(ww).all() or (ww < 0).any() or ww.sum() <= 0:
        raise InputError("member weights must be finite, >= 0 and not all 0")
    return ww / ww.sum()


# ------------------------------------------------------------------------ combining members

class Combiner(Protocol):
    """How a panel turns its members' log-odds ``Z`` (NaN: not judged) and weights into p."""

    def __call__(self, z: FloatArray, w: FloatArray) -> FloatArray: ...


def poe_log_odds(z: FloatArray, w: FloatArray) -> FloatArray:
    """The Gaussian product of experts' mean on each row's log-odds (PoE paper §4 with one
    difference and an expert per member, ``delta ~ N(z_m, sigma^2 / w_m)``):
    ``delta* = sum_m w_m z_m / sum_m w_m`` over the members that judged it (NaN when none did,
    or when every one that did weighs 0)."""
    z = np.asarray(z, dtype=np.float64)
    present = np.isfinite(z)
    wz = np.where(present, z, 0.0) * w
    den = (present * w).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, wz.sum(axis=1) / den, np.nan)


def poe_probability(z: FloatArray, w: FloatArray) -> FloatArray:
    """``p = sigmoid(delta*)`` of :func:`poe_log_odds`."""
    return expit(poe_log_odds(z, w))


def vote_probability(z: FloatArray, w: FloatArray) -> FloatArray:
    """The weighted share of the members that judged a row whose debiased verdict is A
    (``z_m > 0``, eq. 10 at their tau*); a tied vote is nudged by ``P_CLIP`` towards the sign of
    the PoE mean, so eq. 10 at 0.5 still gives the verdict the log-odds favour."""
    z = np.asarray(z, dtype=np.float64)
    present = np.isfinite(z)
    den = (present * w).sum(axis=1)
    votes = ((np.where(present, z, 0.0) > 0) * w).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(den > 0, votes / den, np.nan)
    tie = np.isclose(share, 0.5)
    share = np.where(tie, 0.5 + P_CLIP * np.sign(np.nan_to_num(poe_log_odds(z, w))), share)
    return np.clip(share, P_CLIP, 1.0 - P_CLIP)


#: The combiners a panel can use, by name (``compassess panel create --combine``).
COMBINERS: dict[str, Combiner] = {"poe": poe_probability, "vote": vote_probability}


def combine(z: FloatArray, w: Sequence[float] | FloatArray, method: str = "poe") -> FloatArray:
    """Each row's panel p by ``method`` (:data:`COMBINERS`) with weights ``w`` (normalised).

    Raises
    ------
    InputError
        An unknown method, or bad weights.
    """
    if method not in COMBINERS:
        raise InputError(f"unknown combination '{method}'; choose one of {', '.join(COMBINERS)}")
    z = np.asarray(z, dtype=np.float64)
    return COMBINERS[method](z, _weights(w, z.shape[1]))


def panel_table(keys: pd.DataFrame, p: FloatArray) -> ComparisonTable:
    """The panel's comparisons as a run's table (``p`` combined; no log-probabilities or label
    mass, which belong to one judge): rows where no member weighs in are left out."""
    p = np.asarray(p, dtype=np.float64)
    ok = np.isfinite(p)
    nan = np.full(int(ok.sum()), np.nan)
    return ComparisonTable(keys["context_id"].to_numpy(dtype=object)[ok],
                           keys["a_id"].to_numpy(dtype=object)[ok],
                           keys["b_id"].to_numpy(dtype=object)[ok], p[ok], nan, nan.copy(),
                           nan.copy())


def parse_weights(text: str | Sequence[float] | None, n_members: int) -> str | list[float]:
    """``equal``, ``learnt`` or one non-negative number per member (``"1,2,1"`` or a list).

    Raises
    ------
    InputError
        Anything else, naming what is wrong.
    """
    if text is None:
        return "equal"
    if isinstance(text, str):
        t = text.strip().lower()
        if t in WEIGHT_MODES:
            return t
        try:
            values = [float(v) for v in t.split(",")]
        except ValueError:
            raise InputError(f"weights must be 'equal', 'learnt' or {n_members} numbers "
                             f"separated by commas, not '{text}'") from None
    else:
        values = [float(v) for v in text]
    _weights(values, n_members)  # checks count, sign and finiteness
    return values


# ------------------------------------------------------------------------ learning weights

def labelled_rows(keys: pd.DataFrame, human_df: pd.DataFrame) -> pd.DataFrame:
    """The ordered pairs of ``keys`` whose unordered pair has a decisive human majority.

    Returns
    -------
    pandas.DataFrame
        ``row`` (index into ``keys``), ``y`` (1 when the majority preferred ``a_id``, shown
        first), ``pair`` (an integer id of the unordered pair, dense from 0).
    """
    majority = agreement.majority_vote(agreement.normalise_human_labels(human_df))
    decisive = majority.loc[majority["label"] != agreement.TIE_CODE,
                            ["context_id", "x", "y", "preferred"]]
    a = keys["a_id"].to_numpy(dtype=object).astype(str)
    b = keys["b_id"].to_numpy(dtype=object).astype(str)
    rows = pd.DataFrame({"row": np.arange(len(keys)),
                         "context_id": keys["context_id"].to_numpy(dtype=object).astype(str),
                         "a_id": a, "x": np.where(a < b, a, b), "y": np.where(a < b, b, a)})
    joined = rows.merge(decisive, on=_PAIR, how="inner").sort_values("row", kind="stable")
    pair = joined.groupby(_PAIR, sort=True).ngroup().to_numpy(np.int64)
    return pd.DataFrame({"row": joined["row"].to_numpy(np.int64),
                         "y": (joined["preferred"] == joined["a_id"]).to_numpy(np.float64),
                         "pair": pair})


def fit_weights(z: FloatArray, y: FloatArray, *,
                prior_strength: float = WEIGHT_PRIOR_STRENGTH) -> FloatArray:
    """Member weights learnt from human labels: the non-negative logistic regression
    ``P(y = 1) = sigmoid(sum_m beta_m z_m)`` (a member that did not judge a row contributes 0),
    with the Gaussian prior ``prior_strength / 2 ||beta - 1/M||^2`` (equal weights), fitted by
    ``solvers.fit_soft_logistic``; returned as ``beta / sum beta`` (equal when every
    ``beta`` is 0: no member predicts the labels).

    Raises
    ------
    InputError
        No labelled row, or ``z`` and ``y`` of different lengths.
    """
    z = np.asarray(z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if z.ndim != 2 or len(z) != len(y):
        raise InputError(f"weights need one label per row of log-odds: {len(z)} rows, "
                         f"{len(y)} labels")
    n_members = z.shape[1]
    equal = np.full(n_members, 1.0 / n_members)
    if len(y) == 0:
        raise InputError("no labelled pair was judged by the panel's members: weights cannot "
                         "be learnt (import labels or annotate, or use equal weights)")
    beta = fit_soft_logistic(np.nan_to_num(z, nan=0.0), y, np.full(n_members, prior_strength),
                             prior_mean=equal, start=equal, bounds=[(0.0, None)] * n_members)
    return beta / beta.sum() if beta.sum() > 0 else equal


@dataclass(frozen=True)
class HeldOut:
    """Held-out panel p of every labelled ordered pair (:func:`cross_validated_panel`):
    ``rows`` (index into the keys), ``p``, ``y``, ``pair``, and each fold's weights."""

    rows: np.ndarray
    p: FloatArray
    y: FloatArray
    pair: np.ndarray
    fold_weights: list[FloatArray]


def cross_validated_panel(z_raw: Sequence[FloatArray], p_all: Sequence[FloatArray],
                          keys: pd.DataFrame, human_df: pd.DataFrame, *, method: str = "poe",
                          learn_weights: bool = True, calibrate_members: bool = False,
                          weights: Sequence[float] | None = None, folds: int = DEFAULT_FOLDS,
                          seed: int = 0) -> HeldOut:
    """The panel's p on each labelled pair predicted without that pair's labels.

    The labelled pairs are dealt into folds (``calibration.fold_of_pairs``; both orders of a pair
    in one fold). For each fold, on the other folds' labels only: each member's calibration
    (when ``calibrate_members``; else its balanced tau* from all its comparisons, which uses no
    label) and the member weights (when ``learn_weights``; else ``weights`` or equal).

    Parameters
    ----------
    z_raw
        Each member's raw log-odds ``logit p`` aligned on ``keys`` (NaN: not judged), one array
        per member.
    p_all
        Each member's every p (for its balanced tau*).

    Raises
    ------
    InputError
        Fewer than 2 labelled pairs, ``folds < 2``, an unknown method.
    """
    rows = labelled_rows(keys, human_df)
    fold, k = held_out_folds(rows["pair"].to_numpy(np.int64), folds, seed,
                             "held-out panel predictions", "the members judged")
    r = rows["row"].to_numpy(np.int64)
    y = rows["y"].to_numpy(np.float64)
    raw = np.column_stack([np.asarray(zr, dtype=np.float64) for zr in z_raw])
    n_members = raw.shape[1]
    balanced = np.array([balanced_scaling(p).offset for p in p_all])
    fixed = _weights(weights if weights is not None else np.ones(n_members), n_members)
    out = np.full(len(rows), np.nan)
    fold_weights = []
    for f in range(k):
        test, train = fold == f, fold != f
        if calibrate_members:
            scale = np.empty((2, n_members))
            for m in range(n_members):
                zm = raw[r[train], m]
                ok = np.isfinite(zm)
                if ok.any():
                    cal = fit_calibration(zm[ok], y[train][ok])
                    scale[:, m] = cal.bias, cal.temperature
                else:  # no labelled pair of this member in the other folds: its tau*
                    scale[:, m] = balanced[m], 1.0
            z = (raw - scale[0]) / scale[1]
        else:
            z = raw - balanced
        w = fit_weights(z[r[train]], y[train]) if learn_weights else fixed
        out[test] = combine(z[r[test]], w, method)
        fold_weights.append(w)
    return HeldOut(rows=r, p=out, y=y, pair=rows["pair"].to_numpy(np.int64),
                   fold_weights=fold_weights)


# ------------------------------------------------------------------------ a panel fitted

@dataclass(frozen=True)
class PanelFit:
    """A panel fitted on its members' comparisons (:func:`fit_panel`): each member's scale, the
    weights (summing to one), the ordered pairs any member judged (``keys``) with every member's
    log-odds on the common scale (``z``, NaN: not judged) and the combined ``table``."""

    scalings: tuple[MemberScaling, ...]
    weights: FloatArray
    keys: pd.DataFrame
    z: FloatArray
    table: ComparisonTable


def fit_panel(tables: Sequence[ComparisonTable], *, scaling: str,
              weights: str | Sequence[float], combine_with: str,
              human_df: pd.DataFrame | None, who: str, labels_of: str) -> PanelFit:
    """Put each member on the common scale (step 1), set the weights (step 3) and combine
    (step 2): the panel's p on every ordered pair any member judged.

    ``scaling`` is one of :data:`MEMBER_SCALINGS` (``auto``: calibrated where a member has
    labelled pairs, else balanced), ``weights`` one of :data:`WEIGHT_MODES` or one number per
    member; ``human_df`` the stored human judgements of the dataset and aspect (None or empty:
    none); ``who`` names the panel and ``labels_of`` its dataset and aspect in the error.

    Raises
    ------
    InputError
        Calibrated members or learnt weights without human labels (or a member with no
        labelled pair under ``calibrated``).
    """
    has_labels = human_df is not None and len(human_df) > 0
    if not has_labels and (scaling == "calibrated" or weights == "learnt"):
        what = "calibrated members" if scaling == "calibrated" else "learnt weights"
        raise InputError(f"{who} needs human labels of {labels_of} ({what}); import some "
                         "or annotate pairs first")
    scalings = []
    for table in tables:
        if has_labels and scaling in ("calibrated", "auto"):
            try:
                scalings.append(calibrated_scaling(fit_on_labels(table, human_df)))
                continue
            except InputError:
                if scaling == "calibrated":
                    raise
        scalings.append(balanced_scaling(table.p))
    keys, z = aligned_log_odds(tables, scalings)
    n = len(tables)
    if weights == "learnt":
        rows = labelled_rows(keys, human_df)
        w = fit_weights(z[rows["row"].to_numpy()], rows["y"].to_numpy())
    elif weights == "equal":
        w = np.full(n, 1.0 / n)
    else:
        w = np.asarray(weights, dtype=float) / float(np.sum(weights))
    return PanelFit(scalings=tuple(scalings), weights=w, keys=keys, z=z,
                    table=panel_table(keys, combine(z, w, combine_with)))


def member_probabilities(fit: PanelFit) -> FloatArray:
    """Each member's own p back from its scaled log-odds, ``sigmoid(z T + b)`` (NaN: the member
    did not judge the pair); shape ``(len(keys), M)``."""
    scale = np.array([[s.temperature for s in fit.scalings], [s.offset for s in fit.scalings]])
    return expit(fit.z * scale[0] + scale[1])


def own_pair_log_odds(table: ComparisonTable, pairs: pd.DataFrame) -> FloatArray:
    """The panel's own pair-level log-odds on ``pairs`` (its combined p, order-averaged as a
    member's by :func:`pair_verdicts`); NaN where the panel has no verdict."""
    keys = pd.DataFrame({"context_id": table.context_ids, "a_id": table.a_ids,
                         "b_id": table.b_ids})
    own, lo = pair_verdicts(keys, log_odds(table.p)[:, None])
    merged = pairs.merge(own.assign(lo=lo[:, 0]), on=_PAIR, how="left")
    return merged["lo"].to_numpy(dtype=float)


def pooled_rate(counts: Sequence[float], rates: Sequence[float | None]) -> float | None:
    """Units per second of several runs together: every unit over the seconds they took,
    ``sum n_m / sum (n_m / rate_m)``; None when a run recorded no rate."""
    if any(not r for r in rates):
        return None
    n = np.asarray(counts, dtype=float)
    return float(n.sum() / (n / np.asarray(rates, dtype=float)).sum())


def pooled_per_unit(counts: Sequence[float], per_unit: Sequence[float | None]) -> float | None:
    """A per-unit quantity (prompt tokens per comparison) of several runs together, weighted by
    their units; None when one is unknown."""
    if any(v is None for v in per_unit):
        return None
    n = np.asarray(counts, dtype=float)
    return float((n * np.asarray(per_unit, dtype=float)).sum() / n.sum())


# ------------------------------------------------------------------------ agreement among members

def pair_verdicts(keys: pd.DataFrame, z: FloatArray) -> tuple[pd.DataFrame, FloatArray]:
    """Each member's verdict per unordered pair from its debiased log-odds.

    A pair judged in both orders reads ``(z_xy - z_yx) / 2`` (the order-averaged log-odds that
    x is better, which cancels what is left of the positional bias, as ``agreement.verdicts_at``
    does with probabilities); one order alone reads ``z_xy`` or ``-z_yx``.

    Returns
    -------
    tuple
        ``pairs`` (``context_id, x, y``) and ``L`` of shape ``(len(pairs), M)``: the pair-level
        log-odds that x is better (NaN: the member judged neither order).
    """
    z = np.asarray(z, dtype=np.float64)
    a = keys["a_id"].to_numpy(dtype=object).astype(str)
    b = keys["b_id"].to_numpy(dtype=object).astype(str)
    fwd = a < b
    signed = np.where(fwd[:, None], z, -z)
    frame = pd.DataFrame(signed, columns=range(z.shape[1]))
    frame["context_id"] = keys["context_id"].to_numpy(dtype=object).astype(str)
    frame["x"], frame["y"] = np.where(fwd, a, b), np.where(fwd, b, a)
    mean = frame.groupby(_PAIR, sort=True)[list(range(z.shape[1]))].mean()
    return mean.index.to_frame(index=False), mean.to_numpy(dtype=np.float64)


def _labels(pair_log_odds: FloatArray) -> FloatArray:
    """Class codes (``X_BETTER`` where the log-odds favour x, else ``Y_BETTER``), NaN missing;
    an exact 0 goes to y, as eq. 10 gives ``p == tau`` to the second position."""
    return np.where(np.isfinite(pair_log_odds),
                    np.where(pair_log_odds > 0, X_BETTER, Y_BETTER), np.nan)


def fleiss_kappa(counts: FloatArray) -> float:
    """Fleiss' kappa (Fleiss 1971) of ``counts[i, k]`` = raters putting item ``i`` in class
    ``k``, every item rated by the same number ``n`` of raters:
    ``P_i = (sum_k n_ik^2 - n) / (n (n - 1))``, ``P_bar = mean_i P_i``,
    ``p_k = sum_i n_ik / (N n)``, ``P_e = sum_k p_k^2``, ``kappa = (P_bar - P_e) / (1 - P_e)``.
    NaN without items, with fewer than 2 raters, or when one class takes every rating.

    Raises
    ------
    InputError
        Items rated by different numbers of raters.
    """
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim != 2 or len(c) == 0:
        return float("nan")
    n = c.sum(axis=1)
    if not np.allclose(n, n[0]):
        raise InputError("Fleiss' kappa needs every item rated by the same number of raters")
    n = float(n[0])
    if n < 2:
        return float("nan")
    p_i = ((c * c).sum(axis=1) - n) / (n * (n - 1.0))
    p_k = c.sum(axis=0) / (len(c) * n)
    p_e = float((p_k * p_k).sum())
    if p_e >= 1.0:
        return float("nan")
    return float((p_i.mean() - p_e) / (1.0 - p_e))


@dataclass(frozen=True)
class MemberAgreement:
    """How the panel's members agree on the pairs' verdicts (every number on unordered pairs).

    ``pairwise``: one row per two members, ``member_1, member_2, n_pairs, agreement, kappa``
    (Cohen) on the pairs both judged; ``fleiss_kappa`` on the ``n_pairs_all`` pairs every member
    judged; ``krippendorff_alpha`` (nominal) on every pair at least two judged
    (``n_pairs_alpha``); ``with_panel``: one row per member, ``member, n_pairs, agreement,
    kappa`` against the panel's own verdict.
    """

    members: tuple[str, ...]
    n_pairs: int
    pairwise: pd.DataFrame
    fleiss_kappa: float
    n_pairs_all: int
    krippendorff_alpha: float
    n_pairs_alpha: int
    with_panel: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-able (NaN as None)."""
        return dict(members=list(self.members), n_pairs=self.n_pairs,
                    fleiss_kappa=agreement.nan_to_none(self.fleiss_kappa),
                    n_pairs_all=self.n_pairs_all,
                    krippendorff_alpha=agreement.nan_to_none(self.krippendorff_alpha),
                    n_pairs_alpha=self.n_pairs_alpha,
                    pairwise=agreement.json_records(self.pairwise),
                    with_panel=agreement.json_records(self.with_panel),
                    notes=list(self.notes))


def _agree(a: FloatArray, b: FloatArray) -> tuple[int, float, float]:
    both = np.isfinite(a) & np.isfinite(b)
    if not both.any():
        return 0, float("nan"), float("nan")
    ai, bi = a[both].astype(np.int64), b[both].astype(np.int64)
    return int(both.sum()), float((ai == bi).mean()), agreement.pair_kappa(ai, bi)


def member_agreement(names: Sequence[str], pair_log_odds: FloatArray,
                     panel_log_odds: FloatArray) -> MemberAgreement:
    """Pairwise Cohen's kappa, Fleiss' kappa, Krippendorff's alpha among the members and each
    member's agreement with the panel, from :func:`pair_verdicts` (members' ``L`` and the
    panel's own pair-level log-odds)."""
    labels = _labels(np.asarray(pair_log_odds, dtype=np.float64))
    panel = _labels(np.asarray(panel_log_odds, dtype=np.float64).reshape(-1))
    n_members = labels.shape[1]
    rows = []
    for i in range(n_members):
        for j in range(i + 1, n_members):
            n, agree, kappa = _agree(labels[:, i], labels[:, j])
            rows.append(dict(member_1=names[i], member_2=names[j], n_pairs=n, agreement=agree,
                             kappa=kappa))
    pairwise = pd.DataFrame(rows, columns=["member_1", "member_2", "n_pairs", "agreement",
                                           "kappa"])
    judged = np.isfinite(labels)
    everyone = judged.all(axis=1)
    counts = np.stack([(labels[everyone] == k).sum(axis=1) for k in (X_BETTER, Y_BETTER)], axis=1)
    # every pair in both orientations (agreement_stats' symmetrised coding): renaming candidates
    # cannot change Fleiss' kappa or alpha
    fleiss = fleiss_kappa(symmetric_counts(counts))
    several = judged.sum(axis=1) >= 2
    notes = []
    alpha = agreement.pair_alpha(labels[several].T) if several.any() else float("nan")
    if not np.isfinite(alpha):
        notes.append("Krippendorff's alpha is undefined: every verdict is the same class or no "
                     "pair was judged by two members")
    if not everyone.any():
        notes.append("no pair was judged by every member: Fleiss' kappa is undefined")
    with_panel = pd.DataFrame(
        [dict(member=names[m], **dict(zip(("n_pairs", "agreement", "kappa"),
                                          _agree(labels[:, m], panel))))
         for m in range(n_members)], columns=["member", "n_pairs", "agreement", "kappa"])
    return MemberAgreement(members=tuple(names), n_pairs=int(len(labels)), pairwise=pairwise,
                           fleiss_kappa=fleiss, n_pairs_all=int(everyone.sum()),
                           krippendorff_alpha=alpha, n_pairs_alpha=int(several.sum()),
                           with_panel=with_panel, notes=notes)


def split_pairs(pairs: pd.DataFrame, names: Sequence[str], pair_log_odds: FloatArray,
                panel_log_odds: FloatArray) -> pd.DataFrame:
    """The pairs where the members' verdicts differ, most evenly split first.

    Returns
    -------
    pandas.DataFrame
        ``context_id, x, y, panel`` (the id the panel prefers), ``n_for_x, n_for_y``
        (members' verdicts), ``minority`` (share of the judging members in the minority), then
        one column per member with the id it prefers ("" where it judged neither order).
    """
    lo = np.asarray(pair_log_odds, dtype=np.float64)
    labels = _labels(lo)
    for_x = (labels == X_BETTER).sum(axis=1)
    for_y = (labels == Y_BETTER).sum(axis=1)
    split = (for_x > 0) & (for_y > 0)
    x = pairs["x"].to_numpy(dtype=object)
    y = pairs["y"].to_numpy(dtype=object)
    panel = np.asarray(panel_log_odds, dtype=np.float64).reshape(-1)
    out = pairs.loc[split, _PAIR].reset_index(drop=True)
    out["panel"] = np.where(panel[split] > 0, x[split], y[split])
    out["n_for_x"], out["n_for_y"] = for_x[split], for_y[split]
    out["minority"] = np.minimum(for_x, for_y)[split] / (for_x + for_y)[split]
    for m, name in enumerate(names):
        lab = labels[split, m]
        out[name] = np.where(np.isnan(lab), "", np.where(lab == X_BETTER, x[split], y[split]))
    return out.sort_values(["minority", "context_id", "x", "y"], ascending=[False, True, True,
                                                                            True],
                           kind="stable").reset_index(drop=True)


# ------------------------------------------------------------------------ agreement with people

@dataclass(frozen=True)
class AgreementInterval:
    """Accuracy (raw agreement) and the pair kappa (``agreement.pair_kappa``) of a judge's pair
    verdicts against the humans' decisive majority (ties left out, as ``AgreementScores``
    without ties), with cluster-bootstrap intervals (contexts, then the ``n_pairs`` labelled
    pairs within them; ``n_boot`` replicates, ``level``)."""

    accuracy: float
    accuracy_low: float
    accuracy_high: float
    kappa: float
    kappa_low: float
    kappa_high: float
    n_pairs: int
    n_boot: int
    level: float


def human_agreement_interval(human_df: pd.DataFrame, table: ComparisonTable, tau: float, *,
                             n_boot: int = 1000, level: float = 0.95,
                             seed: int = 0) -> AgreementInterval:
    """The judge's pair verdicts at ``tau`` (``agreement.llm_pair_verdicts``, eq. 9-10) against
    the humans' decisive majority: accuracy (raw agreement) and the pair kappa
    (``agreement.pair_kappa``), with the intervals of ``agreement.llm_vs_human`` (the cluster
    bootstrap over contexts, then pairs; tau* re-estimated in each replicate when ``tau`` is the
    balanced one).

    Raises
    ------
    InputError
        No labelled pair the judge judged, ``n_boot < 1`` or ``level`` outside (0, 1).
    """
    if not 1 <= n_boot <= MAX_BOOT or not 0.0 < level < 1.0:
        raise InputError(f"n_boot must be in 1..{MAX_BOOT} and level in (0, 1), got {n_boot}, "
                         f"{level}")
    s = agreement.llm_vs_human(human_df, table, tau, n_boot=n_boot, seed=seed,
                               level=level).debiased.majority
    if s.n_without_ties == 0:
        raise InputError("no labelled pair was judged: agreement with people cannot be measured")
    acc, kap = s.intervals["accuracy_without_ties"], s.intervals["kappa_without_ties"]
    return AgreementInterval(s.accuracy_without_ties, *acc, s.kappa_without_ties, *kap,
                             n_pairs=int(s.n_without_ties), n_boot=int(n_boot),
                             level=float(level))


def member_names(names: Sequence[str]) -> tuple[str, ...]:
    """The members' names, checked: at least :data:`MIN_MEMBERS`, none twice.

    Raises
    ------
    InputError
        Too few members, or one given twice (named).
    """
    names = tuple(names)
    if len(names) < MIN_MEMBERS:
        raise InputError(f"a panel needs at least {MIN_MEMBERS} runs; {len(names)} given")
    if len(names) > MAX_MEMBERS:
        raise InputError(f"a panel takes at most {MAX_MEMBERS} runs; {len(names)} given")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"run '{twice[0]}' is given twice")
    return names


def weights_label(weights: str | Sequence[float] | Mapping) -> str:
    """How a panel's weights read in words."""
    return weights if isinstance(weights, str) else ", ".join(f"{w:g}" for w in weights)


# ------------------------------------------------------------ the panel against its best member

def panel_vs_best_member(human_df: pd.DataFrame, panel: tuple[str, ComparisonTable, float],
                         members: Sequence[tuple[str, ComparisonTable, float]], *,
                         n_boot: int = 1000, level: float = 0.95,
                         seed: int = 0) -> "paired.PairedDifference":
    """Is the panel better than its best member? ``panel`` and each of ``members`` is (name,
    comparisons, tau); the best member is the one with the highest accuracy with the people's
    decisive majority (``paired.pair_correctness``; a member that judged no labelled pair is
    left out); then the panel's accuracy minus that member's on the labelled pairs both judged,
    with its paired cluster-bootstrap interval and McNemar's exact p (``paired.paired_accuracy``).

    Raises
    ------
    InputError
        No member judged a labelled pair, or none in common with the panel.
    """
    from . import paired
    best, best_acc = None, -1.0
    for name, table, tau in members:
        correct = paired.pair_correctness(human_df, table, tau)["correct"]
        if len(correct) and float(correct.mean()) > best_acc:
            best, best_acc = (name, table, tau), float(correct.mean())
    if best is None:
        raise InputError("no member judged a labelled pair with a decisive human majority: the "
                         "panel cannot be compared with its best member")
    name, table, tau = panel
    return paired.paired_accuracy(human_df, table, tau, best[1], best[2], name_a=name,
                                  name_b=best[0], n_boot=n_boot, level=level, seed=seed)

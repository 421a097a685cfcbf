"""Calibrating a judge on human A/B labels: a bias and a temperature on its log-odds.

A judge's ``p_ij = P(A better)`` (eq. 3 of Liusie, Manakul, Gales, EACL 2024) favours one position
and is over- or under-confident. Human labels of the same pairs fix both with two numbers:

    p_cal = sigmoid((z - b) / T),    z = logit p_ij = log P(w_A) - log P(w_B)

``b`` is the judge's positional bias in log-odds (``b > 0``: the first position is favoured) and
``T`` its temperature (``T > 1``: over-confident). This is Platt scaling (Platt 1999) with the
judge's log-odds as the one feature, i.e. temperature scaling (Guo et al. 2017, "On Calibration of
Modern Neural Networks") with a bias. It is fitted by maximum likelihood (log-loss) on every
comparison whose pair people labelled: ``y = 1`` when the candidate shown first is the humans'
majority choice. A pair judged in both orders gives two examples with opposite labels, which is
what identifies ``b``. Pairs whose majority is a tie are left out (the judge never answers tie).
A weak Gaussian prior pulls ``(1/T, -b/T)`` towards ``(1, 0)``, the judge as it is, so a handful of
labels cannot produce an extreme fit.

How much it helps is measured by K-fold cross-validation over labelled pairs (both orders of a
pair in the same fold): each fold is calibrated with parameters fitted on the other folds, and
accuracy, log-loss and expected calibration error (ECE, Naeini, Cooper, Hauskrecht 2015) are
computed on those held-out predictions, next to the raw judge and the label-free balanced
threshold (eq. 9-10). The parameters a ranking or an export uses are fitted on all labels.

Pure numpy/scipy/pandas; this module must never read or write storage or import a UI.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.special import expit, log_expit

from . import agreement
from .bias import balanced_threshold, debias_probabilities
from ..errors import InputError, LengthMismatchError
from .solvers import fit_soft_logistic
from ..types import ComparisonTable, FloatArray

__all__ = [
    "Calibration",
    "IDENTITY",
    "CalibrationScores",
    "CalibrationReport",
    "log_odds",
    "fit_calibration",
    "log_loss",
    "accuracy",
    "reliability_table",
    "expected_calibration_error",
    "labelled_comparisons",
    "fold_of_pairs",
    "cross_validated_probabilities",
    "calibrate",
    "fit_on_labels",
    "calibrated_table",
]

#: p is clipped into [P_CLIP, 1 - P_CLIP] before its logit (a judge can be exactly certain).
P_CLIP = 1e-6
#: Strength of the Gaussian prior on (1/T, -b/T) around (1, 0), in units of the log-loss summed
#: over comparisons: worth about one labelled comparison, negligible with dozens.
PRIOR_STRENGTH = 1.0
#: Smallest slope 1/T allowed: the temperature is at most 100 (a judge at chance gets T near 100,
#: i.e. a constant p near the humans' base rate). A negative slope (a judge that is reliably wrong)
#: is not allowed: it would turn the judge around, which calibration should not do.
MIN_SLOPE = 0.01
DEFAULT_FOLDS = 5
#: Replicates of the cluster-bootstrap intervals of the calibration scores.
CALIBRATION_BOOT = 1000
#: Equal-width bins of p on [0, 1] for the reliability diagram and the ECE.
ECE_BINS = 10


@dataclass(frozen=True)
class Calibration:
    """``p_cal = sigmoid((logit p - bias) / temperature)``, fitted on ``n_comparisons`` judge
    comparisons of ``n_pairs`` human-labelled pairs (0 and 0 for the identity)."""

    bias: float
    temperature: float
    n_comparisons: int = 0
    n_pairs: int = 0

    def apply(self, p: ArrayLike) -> FloatArray:
        """Calibrated probabilities of ``p`` (any shape)."""
        return expit((log_odds(p) - self.bias) / self.temperature)

    def to_dict(self) -> dict:
        """The parameters with the formula they enter (what exports and ``calibrate`` record)."""
        return {**asdict(self), "formula": "p_cal = sigmoid((logit p - bias) / temperature)"}


#: The judge as it is: ``p_cal = p`` (up to the clip of :data:`P_CLIP`).
IDENTITY = Calibration(0.0, 1.0)


def log_odds(p: ArrayLike) -> FloatArray:
    """``logit p = log p - log(1 - p)``, ``p`` clipped into ``[P_CLIP, 1 - P_CLIP]``."""
    q = np.clip(np.asarray(p, dtype=np.float64), P_CLIP, 1.0 - P_CLIP)
    return np.log(q) - np.log1p(-q)


def _check_xy(z: ArrayLike, y: ArrayLike) -> tuple[FloatArray, FloatArray]:
    zz = np.asarray(z, dtype=np.float64).reshape(-1)
    yy = np.asarray(y, dtype=np.float64).reshape(-1)
    if len(zz) != len(yy):
        raise LengthMismatchError(f"{len(zz)} predictions but {len(yy)} labels")
    if not np.isin(yy, (0.0, 1.0)).all():
        raise InputError("labels must be 0 or 1 (ties are left out before calibrating)")
    return zz, yy


def fit_calibration(z: ArrayLike, y: ArrayLike, *, prior_strength: float = PRIOR_STRENGTH,
                    n_pairs: int = 0) -> Calibration:
    """Maximum-likelihood bias and temperature of ``p_cal = sigmoid((z - b) / T)`` (Platt 1999).

    Minimises ``sum_k log(1 + exp(-s_k (a z_k + c))) + prior_strength / 2 ((a - 1)^2 + c^2)``
    with ``s_k = 2 y_k - 1``, over ``a >= MIN_SLOPE`` (L-BFGS-B with the exact gradient; the
    objective is convex, so the optimum is unique), then ``T = 1 / a`` and ``b = -c / a``.

    Parameters
    ----------
    z : array_like of float
        The judge's log-odds ``logit p`` of each comparison (:func:`log_odds`).
    y : array_like of {0, 1}
        1 when the candidate shown first is the one people preferred.
    prior_strength : float
        Weight of the Gaussian prior around the raw judge (``a = 1, c = 0``); 0 = plain maximum
        likelihood.
    n_pairs : int
        Labelled pairs behind the comparisons (recorded in the result).

    Returns
    -------
    Calibration
        The identity when there are no comparisons.

    Raises
    ------
    LengthMismatchError
        ``z`` and ``y`` differ in length.
    InputError
        A label is not 0 or 1, or ``prior_strength`` is negative.
    """
    zz, yy = _check_xy(z, y)
    if prior_strength < 0:
        raise InputError(f"prior_strength must be >= 0, got {prior_strength}")
    if len(zz) == 0:
        return IDENTITY
    # logit p_cal = a z + c: the logistic fit of the labels on (z, 1), the prior around the raw
    # judge (a = 1, c = 0)
    a, c = (float(v) for v in fit_soft_logistic(
        np.column_stack([zz, np.ones_like(zz)]), yy, np.full(2, float(prior_strength)),
        prior_mean=np.array([1.0, 0.0]), start=np.array([1.0, 0.0]),
        bounds=[(MIN_SLOPE, None), (None, None)], maxiter=500, gtol=1e-10))
    return Calibration(bias=-c / a, temperature=1.0 / a, n_comparisons=int(len(zz)),
                       n_pairs=int(n_pairs))


# --------------------------------------------------------------------------------- measures

def _check_py(p: ArrayLike, y: ArrayLike) -> tuple[FloatArray, FloatArray]:
    pp = np.asarray(p, dtype=np.float64).reshape(-1)
    _, yy = _check_xy(pp, y)
    return pp, yy


def log_loss(p: ArrayLike, y: ArrayLike) -> float:
    """Mean negative log-likelihood ``-mean(y log p + (1 - y) log(1 - p))`` in nats (``p``
    clipped into ``[P_CLIP, 1 - P_CLIP]``); NaN without examples. ``log 2 = 0.693`` is a coin."""
    pp, yy = _check_py(p, y)
    if len(pp) == 0:
        return float("nan")
    z = log_odds(pp)
    return float(-log_expit(np.where(yy == 1.0, z, -z)).mean())


def accuracy(p: ArrayLike, y: ArrayLike) -> float:
    """Share of examples whose verdict ``p > 0.5`` (eq. 10 at tau = 0.5) matches ``y``."""
    pp, yy = _check_py(p, y)
    return float(((pp > 0.5) == (yy == 1.0)).mean()) if len(pp) else float("nan")


def reliability_table(p: ArrayLike, y: ArrayLike, bins: int = ECE_BINS) -> pd.DataFrame:
    """The reliability diagram's numbers: ``bins`` equal-width bins of ``p`` on [0, 1].

    Returns
    -------
    pandas.DataFrame
        One row per bin: ``bin_low, bin_high, n, mean_p`` (mean predicted probability) and
        ``frequency`` (share of ``y = 1``); NaN means for empty bins. A calibrated judge has
        ``frequency == mean_p`` in every bin.
    """
    pp, yy = _check_py(p, y)
    if bins < 1:
        raise InputError(f"bins must be >= 1, got {bins}")
    edges = np.linspace(0.0, 1.0, bins + 1)
    idx = np.clip(np.digitize(pp, edges[1:-1], right=True), 0, bins - 1)
    n = np.bincount(idx, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_p = np.bincount(idx, weights=pp, minlength=bins) / n
        freq = np.bincount(idx, weights=yy, minlength=bins) / n
    return pd.DataFrame({"bin_low": edges[:-1], "bin_high": edges[1:], "n": n.astype(np.int64),
                         "mean_p": mean_p, "frequency": freq})


def expected_calibration_error(p: ArrayLike, y: ArrayLike, bins: int = ECE_BINS) -> float:
    """ECE = ``sum_b (n_b / n) |frequency_b - mean_p_b|`` over the bins of
    :func:`reliability_table` (Naeini et al. 2015); 0 for a calibrated judge, NaN without examples."""
    t = reliability_table(p, y, bins)
    n = t["n"].to_numpy()
    if n.sum() == 0:
        return float("nan")
    gap = np.abs(t["frequency"].to_numpy() - t["mean_p"].to_numpy())
    return float((n[n > 0] * gap[n > 0]).sum() / n.sum())


# ------------------------------------------------------------------------------ the labelled set

def labelled_comparisons(table: ComparisonTable, human_df: pd.DataFrame) -> pd.DataFrame:
    """The run's comparisons whose pair has a decisive human majority, with the label.

    Parameters
    ----------
    table
        A run's comparisons (each ordered pair once, or several times: each counts).
    human_df
        Human judgements in any shape ``agreement.as_human_table`` accepts.

    Returns
    -------
    pandas.DataFrame
        ``context_id, a_id, b_id, p, y, pair``: ``y = 1`` when the humans' majority preferred
        ``a_id`` (shown first), ``pair`` an integer id of the unordered pair (sorted order).
        ``attrs``: ``n_pairs_labelled`` (pairs with a vote), ``n_human_ties`` (majority tie, left
        out), ``n_pairs_unjudged`` (decisive pairs the run did not judge).

    Raises
    ------
    InputError
        As ``agreement.as_human_table``.
    """
    majority = agreement.majority_vote(agreement.normalise_human_labels(human_df))
    decisive = majority.loc[majority["label"] != agreement.TIE_CODE,
                            ["context_id", "x", "y", "preferred"]]
    p = np.asarray(table.p, dtype=np.float64)
    a = np.asarray(table.a_ids, dtype=object).astype(str)
    b = np.asarray(table.b_ids, dtype=object).astype(str)
    comps = pd.DataFrame({"context_id": np.asarray(table.context_ids, dtype=object).astype(str),
                          "a_id": a, "b_id": b, "p": p,
                          "x": np.where(a < b, a, b), "y_id": np.where(a < b, b, a)})
    comps = comps.loc[np.isfinite(p) & (a != b)]
    joined = comps.merge(decisive.rename(columns={"y": "y_id"}), on=["context_id", "x", "y_id"],
                         how="inner")
    joined = joined.sort_values(["context_id", "x", "y_id", "a_id"], kind="stable")
    pair = joined.groupby(["context_id", "x", "y_id"], sort=True).ngroup().to_numpy(np.int64)
    out = pd.DataFrame({"context_id": joined["context_id"].to_numpy(),
                        "a_id": joined["a_id"].to_numpy(), "b_id": joined["b_id"].to_numpy(),
                        "p": joined["p"].to_numpy(np.float64),
                        "y": (joined["preferred"] == joined["a_id"]).to_numpy(np.float64),
                        "pair": pair})
    out.attrs["n_pairs_labelled"] = int(len(majority))
    out.attrs["n_human_ties"] = int((majority["label"] == agreement.TIE_CODE).sum())
    out.attrs["n_pairs_unjudged"] = int(len(decisive) - (pair.max() + 1 if len(pair) else 0))
    return out


def held_out_folds(pair: np.ndarray, folds: int, seed: int, what: str,
                   judged_by: str) -> tuple[np.ndarray, int]:
    """The fold of each labelled row whose pair index (``0..n_pairs-1``) is ``pair``, held out by
    pair (:func:`fold_of_pairs`), and the number of folds: ``folds``, or fewer when there are
    fewer pairs. ``what`` and ``judged_by`` word the refusal ("cross-validated calibration",
    "the run judged").

    Raises
    ------
    InputError
        ``folds < 2``, or fewer than 2 labelled pairs.
    """
    n_pairs = int(pair.max()) + 1 if len(pair) else 0
    if folds < 2:
        raise InputError(f"cross-validation needs at least 2 folds, got {folds}")
    if n_pairs < 2:
        raise InputError(f"{what} needs at least 2 labelled pairs {judged_by}; there are "
                         f"{n_pairs}")
    k = min(folds, n_pairs)
    return fold_of_pairs(n_pairs, k, seed)[pair], k


def fold_of_pairs(n_pairs: int, folds: int, seed: int = 0) -> np.ndarray:
    """Fold (``0..folds-1``) of each pair: a seeded permutation dealt round-robin, so the folds
    differ in size by at most one pair (deterministic in ``n_pairs``, ``folds`` and ``seed``)."""
    order = np.random.default_rng(seed).permutation(n_pairs)
    fold = np.empty(n_pairs, dtype=np.int64)
    fold[order] = np.arange(n_pairs) % max(folds, 1)
    return fold


def cross_validated_probabilities(frame: pd.DataFrame, folds: int = DEFAULT_FOLDS, seed: int = 0,
                                  *, prior_strength: float = PRIOR_STRENGTH
                                  ) -> tuple[FloatArray, list[Calibration]]:
    """Held-out calibrated ``p`` of every row of a :func:`labelled_comparisons` frame.

    The pairs are dealt into ``folds`` folds (:func:`fold_of_pairs`; both orders of a pair in the
    same fold); each fold's rows are calibrated with :func:`fit_calibration` on the other folds.

    Returns
    -------
    tuple
        ``(p_heldout, per-fold calibrations)``.

    Raises
    ------
    InputError
        Fewer than 2 labelled pairs, or ``folds < 2``.
    """
    fold, k = held_out_folds(frame["pair"].to_numpy(np.int64), folds, seed,
                             "cross-validated calibration", "the run judged")
    z = log_odds(frame["p"].to_numpy(np.float64))
    y = frame["y"].to_numpy(np.float64)
    out = np.empty(len(frame))
    fits = []
    for f in range(k):
        test = fold == f
        train_pairs = len(np.unique(frame["pair"].to_numpy()[~test]))
        cal = fit_calibration(z[~test], y[~test], prior_strength=prior_strength, n_pairs=train_pairs)
        out[test] = cal.apply(frame["p"].to_numpy(np.float64)[test])
        fits.append(cal)
    return out, fits


# ---------------------------------------------------------------------------------- the report

@dataclass(frozen=True)
class CalibrationScores:
    """One way of reading the judge, scored on the labelled comparisons.

    Comparison level (each ordered comparison an example): ``accuracy``, ``log_loss`` (nats),
    ``ece``; pair level (the order-averaged verdict of each labelled pair against the humans'
    majority, ties left out, as the Agreement page): ``pair_accuracy``, ``pair_kappa`` (Cohen's,
    every pair in both orientations). ``intervals``: 95% intervals of ``accuracy``, ``log_loss``,
    ``pair_accuracy`` and ``pair_kappa`` from the cluster bootstrap every interval over labelled
    pairs uses (``agreement_stats.cluster_multiplicity``: contexts, then labelled pairs within
    them, a pair's comparisons together); empty when not computed.
    """

    accuracy: float
    log_loss: float
    ece: float
    n_comparisons: int
    pair_accuracy: float
    pair_kappa: float
    n_pairs: int
    intervals: dict = field(default_factory=dict)


@dataclass(frozen=True)
class CalibrationReport:
    """Raw, debiased (balanced tau, no labels) and calibrated (held-out folds) side by side.

    ``calibration`` is fitted on all labels (what rankings and exports use); ``fold_calibrations``
    are the per-fold fits behind ``calibrated``. ``reliability`` holds the reliability tables of
    ``raw`` and ``calibrated`` (held-out) predictions.
    """

    calibration: Calibration
    folds: int
    seed: int
    tau: float
    raw: CalibrationScores
    debiased: CalibrationScores
    calibrated: CalibrationScores
    fold_calibrations: list[Calibration]
    reliability: dict[str, pd.DataFrame]
    n_pairs_labelled: int
    n_human_ties: int
    n_pairs_unjudged: int
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-able (NaN as None): what ``compassess calibrate --json`` prints."""
        def clean(v):
            if isinstance(v, float) and not np.isfinite(v):
                return None
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, list):
                return [clean(x) for x in v]
            return v
        temps = np.array([c.temperature for c in self.fold_calibrations])
        biases = np.array([c.bias for c in self.fold_calibrations])
        return clean(dict(
            calibration=self.calibration.to_dict(), folds=self.folds, seed=self.seed,
            tau_balanced=self.tau,
            fold_calibrations=[c.to_dict() for c in self.fold_calibrations],
            fold_spread=dict(bias_sd=float(biases.std()), temperature_sd=float(temps.std())),
            raw=asdict(self.raw), debiased=asdict(self.debiased),
            calibrated=asdict(self.calibrated),
            reliability={k: t.to_dict(orient="records") for k, t in self.reliability.items()},
            n_pairs_labelled=self.n_pairs_labelled, n_human_ties=self.n_human_ties,
            n_pairs_unjudged=self.n_pairs_unjudged, notes=list(self.notes)))


def _comparison_intervals(frame: pd.DataFrame, p: FloatArray, n_boot: int,
                          seed: int) -> dict[str, list[float]]:
    """Cluster-bootstrap intervals of the per-comparison accuracy and log-loss: the labelled
    pairs resampled within resampled contexts, each pair with all its comparisons."""
    from .agreement_stats import cluster_weights, percentile_of

    pair = frame["pair"].to_numpy(np.int64)
    first = pd.Series(np.arange(len(frame))).groupby(pair).first().sort_index()
    ctx = frame["context_id"].astype(str).to_numpy()[first.to_numpy()]
    w = cluster_weights(ctx, len(first), n_boot, seed)[:, pair].astype(np.float64)
    y = frame["y"].to_numpy(np.float64)
    pp = np.clip(np.asarray(p, np.float64), P_CLIP, 1.0 - P_CLIP)
    loss = -(y * np.log(pp) + (1.0 - y) * np.log1p(-pp))
    right = ((pp > 0.5) == (y == 1.0)).astype(np.float64)
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"accuracy": list(percentile_of((w @ right) / total)),
                "log_loss": list(percentile_of((w @ loss) / total))}


def _scores(frame: pd.DataFrame, p: FloatArray, human_df: pd.DataFrame, n_boot: int = 0,
            seed: int = 0) -> CalibrationScores:
    y = frame["y"].to_numpy(np.float64)
    heldout = ComparisonTable(frame["context_id"].to_numpy(dtype=object),
                              frame["a_id"].to_numpy(dtype=object),
                              frame["b_id"].to_numpy(dtype=object), np.asarray(p, np.float64),
                              *(np.full(len(frame), np.nan) for _ in range(3)))
    pair = agreement.llm_vs_human(human_df, heldout, 0.5, n_boot=n_boot, seed=seed,
                                  tau_star=False).raw.majority
    intervals = {}
    if n_boot and len(frame["pair"].unique()) >= 2:
        intervals = _comparison_intervals(frame, p, n_boot, seed)
        for name, key in (("pair_accuracy", "accuracy_without_ties"),
                          ("pair_kappa", "kappa_without_ties")):
            intervals[name] = list(pair.intervals.get(key, (float("nan"), float("nan"))))
    return CalibrationScores(accuracy=accuracy(p, y), log_loss=log_loss(p, y),
                             ece=expected_calibration_error(p, y), n_comparisons=int(len(y)),
                             pair_accuracy=pair.accuracy_without_ties,
                             pair_kappa=pair.kappa_without_ties, n_pairs=pair.n_without_ties,
                             intervals=intervals)


def calibrate(table: ComparisonTable, human_df: pd.DataFrame, *, folds: int = DEFAULT_FOLDS,
              seed: int = 0, prior_strength: float = PRIOR_STRENGTH,
              n_boot: int = CALIBRATION_BOOT) -> CalibrationReport:
    """Fit the bias and temperature on all labels and measure them on held-out folds.

    Every score comes with a 95% cluster-bootstrap interval (``n_boot`` replicates; 0: none),
    :class:`CalibrationScores`.

    ``debiased`` is the label-free alternative: eq. 9 reweighting at the balanced threshold
    ``tau*`` of all the run's comparisons (Liusie et al. 2024, §5).

    Raises
    ------
    InputError
        Fewer than 2 labelled pairs that the run judged, ``folds < 2``, or a bad human table.
    """
    frame = labelled_comparisons(table, human_df)
    p_heldout, fold_fits = cross_validated_probabilities(frame, folds, seed,
                                                         prior_strength=prior_strength)
    p = frame["p"].to_numpy(np.float64)
    all_p = np.asarray(table.p, dtype=np.float64)
    tau = float(balanced_threshold(all_p[np.isfinite(all_p)]))
    n_pairs = int(frame["pair"].max()) + 1
    full = fit_calibration(log_odds(p), frame["y"].to_numpy(np.float64),
                           prior_strength=prior_strength, n_pairs=n_pairs)
    notes = []
    if frame.attrs["n_human_ties"]:
        notes.append(f"{frame.attrs['n_human_ties']} pair(s) whose human majority is a tie are left "
                     "out (the judge never answers tie)")
    if frame.attrs["n_pairs_unjudged"]:
        notes.append(f"{frame.attrs['n_pairs_unjudged']} labelled pair(s) were not judged by the run")
    one_order = frame.groupby("pair")["a_id"].nunique().eq(1).sum()
    if one_order:
        notes.append(f"{int(one_order)} of {n_pairs} labelled pairs were judged in one order only: "
                     "the bias is identified by the pairs judged in both")
    return CalibrationReport(
        calibration=full, folds=min(folds, n_pairs), seed=seed, tau=tau,
        raw=_scores(frame, p, human_df, n_boot, seed),
        debiased=_scores(frame, debias_probabilities(p, tau), human_df, n_boot, seed),
        calibrated=_scores(frame, p_heldout, human_df, n_boot, seed), fold_calibrations=fold_fits,
        reliability={"raw": reliability_table(p, frame["y"]),
                     "calibrated": reliability_table(p_heldout, frame["y"])},
        n_pairs_labelled=frame.attrs["n_pairs_labelled"], n_human_ties=frame.attrs["n_human_ties"],
        n_pairs_unjudged=frame.attrs["n_pairs_unjudged"], notes=notes)


def fit_on_labels(table: ComparisonTable, human_df: pd.DataFrame, *,
                  prior_strength: float = PRIOR_STRENGTH) -> Calibration:
    """The calibration rankings and exports use: :func:`fit_calibration` on every labelled
    comparison of the run (no folds).

    Raises
    ------
    InputError
        No labelled pair was judged by the run, or a bad human table.
    """
    frame = labelled_comparisons(table, human_df)
    if len(frame) == 0:
        raise InputError("no comparison of this run is of a pair with a decisive human label: "
                         "import labels or annotate some pairs first")
    return fit_calibration(log_odds(frame["p"].to_numpy(np.float64)),
                           frame["y"].to_numpy(np.float64), prior_strength=prior_strength,
                           n_pairs=int(frame["pair"].max()) + 1)


def calibrated_table(table: ComparisonTable, calibration: Calibration) -> ComparisonTable:
    """The run's comparisons with ``p`` replaced by ``calibration.apply(p)`` (log-probabilities
    and label mass kept as the judge gave them)."""
    return replace(table, p=calibration.apply(table.p))

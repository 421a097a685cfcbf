"""Length bias of a comparative judge: how much its verdicts follow the length of the texts.

LLM judges tend to prefer the longer of two texts whatever its quality; AlpacaEval made measuring
and removing this standard (Dubois, Galambosi, Liang, Hashimoto 2024, "Length-Controlled
AlpacaEval: A Simple Way to Debias Automatic Evaluators", arXiv:2404.04475). This module measures
it on a run's comparisons and fits a length-controlled system strength in the same spirit:

* :func:`longer_wins_share`: the share of comparisons (texts of different length) won by the
  longer text, under the eq. 10 verdicts of Liusie et al. 2024 at a threshold ``tau``;
* :func:`length_slope`: a logistic regression of ``p`` on ``log2(len_A / len_B)`` with an
  intercept: the change in log-odds of "A wins" per doubling of A's length relative to B's, and
  the position log-odds at equal lengths;
* :func:`length_controlled_strengths`: the generalised linear model
  ``logit p_k = theta_{s(A_k)} - theta_{s(B_k)} + gamma * tanh(d_k / sd(d)) + b`` with
  ``d_k = log(len_A / len_B)``, fitted to the judge's soft outcomes; the length-controlled
  strength is ``theta`` and the length-controlled win rate against the field is the model's
  prediction with the length term (and the position term) set to zero. AlpacaEval 2.0 fits
  ``logit p = (model term) + gamma * tanh(std_delta_len) + (instruction difficulty)`` per
  model against one baseline and averages the prediction at ``delta_len = 0``
  (``alpaca_eval/metrics/glm_winrate.py``); here every system meets every other in the same
  model, as in Bradley-Terry, so a per-context difficulty cancels in ``theta_s - theta_t`` and the
  judge's position preference is a covariate (the intercept ``b``) instead of a threshold.

Lengths are in characters (as AlpacaEval's ``str.len()``). Pure numpy/scipy: this module must
never read or write storage or know about the UI.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from .bias import as_probabilities, decisions
from .errors import InputError, LengthMismatchError
from .solvers import fit_soft_logistic
from .types import FloatArray

__all__ = [
    "text_lengths",
    "longer_wins_share",
    "length_slope",
    "LengthBias",
    "length_bias",
    "LengthControlled",
    "length_controlled_strengths",
    "win_rate_against_field",
    "comparison_lengths",
    "run_length_bias",
    "log2_length_ratio",
    "fitted_curve",
]

#: Ridge on the system strengths of the GLM: it fixes the gauge (strengths sum to zero) and keeps
#: a system that wins every comparison outright finite; small enough not to move the fit.
RIDGE = 1e-4


def text_lengths(texts: ArrayLike) -> FloatArray:
    """Length of each text in characters (AlpacaEval's measure), as float64."""
    return np.fromiter((len(str(t)) for t in np.asarray(texts, dtype=object).reshape(-1)),
                       dtype=np.float64)


def _aligned_lengths(len_a: ArrayLike, len_b: ArrayLike, p: ArrayLike
                     ) -> tuple[FloatArray, FloatArray, FloatArray]:
    la = np.asarray(len_a, dtype=np.float64).reshape(-1)
    lb = np.asarray(len_b, dtype=np.float64).reshape(-1)
    pp = as_probabilities(np.asarray(p, dtype=np.float64).reshape(-1))
    if not (len(la) == len(lb) == len(pp)):
        raise LengthMismatchError(f"len_a ({len(la)}), len_b ({len(lb)}) and p ({len(pp)}) must "
                                  "be aligned")
    if len(la) and (min(la.min(), lb.min()) <= 0):
        raise InputError("text lengths must be positive (an empty text has no length ratio)")
    return la, lb, pp


def longer_wins_share(len_a: ArrayLike, len_b: ArrayLike, p: ArrayLike,
                      tau: float = 0.5) -> tuple[float, int]:
    """Share of comparisons won by the longer text, under eq. 10 at ``tau``.

    Only comparisons whose two texts differ in length count. A judge blind to length gives 0.5;
    AlpacaEval's motivating finding is a share well above it for GPT-4 judges (Dubois et al.
    2024, §2).

    Parameters
    ----------
    len_a, len_b : array_like of float
        Length (characters) of the text in the first (A) and second (B) position.
    p : array_like of float
        P(A better) per comparison (eq. 3 of Liusie et al. 2024).
    tau : float
        Decision threshold (eq. 10); the balanced threshold removes positional bias first.

    Returns
    -------
    tuple of (float, int)
        ``(share, n_used)``; the share is NaN when every pair has equal lengths.

    Raises
    ------
    LengthMismatchError
        If the arrays are not aligned.
    InputError
        A length that is not positive, ``p`` not a probability, ``tau`` not in (0, 1).
    """
    la, lb, pp = _aligned_lengths(len_a, len_b, p)
    a_wins = decisions(pp, tau)
    differ = la != lb
    n_used = int(differ.sum())
    if n_used == 0:
        return float("nan"), 0
    longer_won = np.where(la > lb, a_wins, ~a_wins)[differ]
    return float(longer_won.mean()), n_used


def length_slope(len_a: ArrayLike, len_b: ArrayLike, p: ArrayLike) -> tuple[float, float]:
    """Logistic regression of ``p`` on ``log2(len_A / len_B)``: ``logit p = b + g * log2 ratio``.

    ``g`` is the change in the log-odds of "A wins" per doubling of A's length relative to B's
    (0 for a judge blind to length; positive when it prefers the longer text); ``b`` is the
    position log-odds at equal lengths (the positional bias of eq. 8 of Liusie et al. 2024 in
    log-odds). Fitted to the soft outcomes ``p`` by maximum likelihood, as AlpacaEval fits its
    length GLM (Dubois et al. 2024, §3).

    Returns
    -------
    tuple of float
        ``(g, b)`` in log-odds; ``(nan, nan)`` without comparisons, ``g`` NaN when every pair
        has equal lengths.

    Raises
    ------
    LengthMismatchError, InputError
        As :func:`longer_wins_share`.
    """
    la, lb, pp = _aligned_lengths(len_a, len_b, p)
    if len(pp) == 0:
        return float("nan"), float("nan")
    x = log2_length_ratio(la, lb)
    if not np.any(x != 0):
        return float("nan"), float(fit_soft_logistic(np.ones((len(pp), 1)), pp, np.zeros(1))[0])
    g, b = fit_soft_logistic(np.column_stack([x, np.ones_like(x)]), pp, np.zeros(2))
    return float(g), float(b)


@dataclass(frozen=True)
class LengthBias:
    """How much a run's verdicts follow text length (all numbers labelled in their docstrings).

    Attributes
    ----------
    longer_wins : float
        Share of comparisons (different lengths) won by the longer text at ``tau`` (eq. 10).
    n_length_differs : int
        Comparisons whose two texts differ in length (the base of ``longer_wins``).
    slope_per_doubling : float
        Log-odds of "A wins" per doubling of ``len_A / len_B`` (:func:`length_slope`).
    position_log_odds : float
        Log-odds of "A wins" at equal lengths (the intercept of the same fit).
    mean_log2_ratio_abs : float
        Mean ``|log2(len_A / len_B)|``: how different the lengths are at all.
    n_comparisons : int
    tau : float
    """

    longer_wins: float
    n_length_differs: int
    slope_per_doubling: float
    position_log_odds: float
    mean_log2_ratio_abs: float
    n_comparisons: int
    tau: float


def length_bias(len_a: ArrayLike, len_b: ArrayLike, p: ArrayLike, tau: float = 0.5) -> LengthBias:
    """:func:`longer_wins_share` and :func:`length_slope` of one set of comparisons.

    Raises
    ------
    LengthMismatchError, InputError
        As :func:`longer_wins_share`.
    """
    la, lb, pp = _aligned_lengths(len_a, len_b, p)
    share, n_used = longer_wins_share(la, lb, pp, tau)
    slope, intercept = length_slope(la, lb, pp)
    spread = float(np.abs(log2_length_ratio(la, lb)).mean()) if len(pp) else float("nan")
    return LengthBias(share, n_used, slope, intercept, spread, int(len(pp)), float(tau))


@dataclass(frozen=True)
class LengthControlled:
    """The length-controlled GLM of :func:`length_controlled_strengths`.

    Attributes
    ----------
    strengths : FloatArray
        ``theta`` per system, log-odds, mean zero over the systems that were compared (NaN for
        a system never compared).
    win_rate : FloatArray
        Length-controlled win rate against the field: ``mean_{t != s} sigmoid(theta_s - theta_t)``
        over the compared systems, in [0, 1] (:func:`win_rate_against_field`).
    length_coef : float
        ``gamma``: log-odds added by the length feature ``tanh(d / sd(d))`` at its maximum.
    position_coef : float
        ``b``: log-odds of the first position at equal lengths and strengths.
    length_scale : float
        ``sd(d)`` of ``d = log(len_A / len_B)`` (0 when every pair has equal lengths).
    """

    strengths: FloatArray
    win_rate: FloatArray
    length_coef: float
    position_coef: float
    length_scale: float


def win_rate_against_field(strengths: ArrayLike) -> FloatArray:
    """Predicted win rate of each system against every other, equally weighted.

    ``w_s = mean_{t != s} sigmoid(theta_s - theta_t)`` over the systems with a finite strength
    (the Bradley-Terry probability of Bradley & Terry 1952 in log-odds units; AlpacaEval's
    length-controlled win rate is the same prediction against one baseline). NaN for a system
    without a strength, 0.5 for a lone system.
    """
    theta = np.asarray(strengths, dtype=np.float64).reshape(-1)
    ok = np.isfinite(theta)
    out = np.full(len(theta), np.nan)
    k = int(ok.sum())
    if k == 1:
        out[ok] = 0.5
    elif k > 1:
        t = theta[ok]
        wins = expit(t[:, None] - t[None, :])
        out[ok] = (wins.sum(axis=1) - 0.5) / (k - 1)  # the diagonal is sigmoid(0) = 0.5
    return out


def length_controlled_strengths(n: int, i: ArrayLike, j: ArrayLike, p: ArrayLike,
                                len_a: ArrayLike, len_b: ArrayLike) -> LengthControlled:
    """System strengths with the length preference of the judge held out (Dubois et al. 2024).

    Fits ``logit p_k = theta_{i_k} - theta_{j_k} + gamma * tanh(d_k / sd(d)) + b`` to the soft
    outcomes ``p`` (raw, not debiased: the intercept ``b`` absorbs the positional bias of eq. 8 of
    Liusie et al. 2024, so the result does not depend on a threshold tau), with
    ``d_k = log(len_A / len_B)`` and a tiny ridge on ``theta`` (:data:`RIDGE`) fixing the gauge.
    The standardised, tanh-squashed length feature is AlpacaEval 2.0's
    (``np.tanh(std_delta_len)``), on the log ratio instead of the character difference so texts of
    different contexts compare on one scale. Setting the length and position terms to zero gives
    the length-controlled strengths ``theta`` and :func:`win_rate_against_field`.

    Parameters
    ----------
    n : int
        Number of systems.
    i, j : array_like of int
        System of the first (A) and second (B) text of each comparison.
    p : array_like of float
        P(A better) per comparison (eq. 3).
    len_a, len_b : array_like of float
        Lengths (characters) of the two texts.

    Returns
    -------
    LengthControlled

    Raises
    ------
    LengthMismatchError
        Arrays not aligned.
    InputError
        An index out of range or a system compared with itself, ``p`` not a probability, a
        length that is not positive.
    """
    from .bias import as_comparisons

    ii, jj, pp = as_comparisons(i, j, p, n)
    la, lb, _ = _aligned_lengths(len_a, len_b, pp)
    m = len(pp)
    compared = (np.bincount(ii, minlength=n) + np.bincount(jj, minlength=n)) > 0
    if m == 0:
        nan = np.full(n, np.nan)
        return LengthControlled(nan, nan.copy(), float("nan"), float("nan"), 0.0)
    d = np.log(la / lb)
    scale = float(d.std())
    feature = np.tanh(d / scale) if scale > 0 else np.zeros(m)
    design = np.zeros((m, n + 2))
    rows = np.arange(m)
    design[rows, ii] += 1.0
    design[rows, jj] -= 1.0
    design[:, n] = feature
    design[:, n + 1] = 1.0
    ridge = np.r_[np.full(n, RIDGE), 0.0, 0.0]
    w = fit_soft_logistic(design, pp, ridge)
    theta = np.where(compared, w[:n], np.nan)
    theta = theta - np.nanmean(theta)
    return LengthControlled(theta, win_rate_against_field(theta),
                            float(w[n]) if scale > 0 else 0.0, float(w[n + 1]), scale)


def comparison_lengths(dataset, table) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Lengths (characters) of the first and second text of every comparison of a run that
    matches its dataset, with its ``p``: ``(len_a, len_b, p)`` (``analysis.split_by_context``
    order)."""
    from .analysis import split_by_context

    la, lb, pp = [], [], []
    for cc in split_by_context(dataset, table):
        length = text_lengths([c.text for c in cc.context.candidates])
        la.append(length[cc.i])
        lb.append(length[cc.j])
        pp.append(cc.p)
    if not pp:
        empty = np.array([], dtype=np.float64)
        return empty, empty.copy(), empty.copy()
    return np.concatenate(la), np.concatenate(lb), np.concatenate(pp)


def run_length_bias(dataset, table, tau: float = 0.5) -> LengthBias:
    """:func:`length_bias` of every comparison of a run (``dataset``, ``table``)."""
    la, lb, pp = comparison_lengths(dataset, table)
    return length_bias(la, lb, pp, tau)


def log2_length_ratio(len_a: ArrayLike, len_b: ArrayLike) -> FloatArray:
    """``log2(len_A / len_B)`` per comparison: > 0 when the first text is longer."""
    return np.log2(np.asarray(len_a, dtype=np.float64) / np.asarray(len_b, dtype=np.float64))


def fitted_curve(log2_ratio: ArrayLike, slope: float, intercept: float,
                 points: int = 50) -> tuple[FloatArray, FloatArray]:
    """The curve of :func:`length_slope`'s fit, ``P(A wins) = sigmoid(b + g x)``, on ``points``
    values of ``x = log2(len_A / len_B)`` spanning the observed ratios (empty without any)."""
    x = np.asarray(log2_ratio, dtype=np.float64)
    if len(x) == 0 or not np.isfinite(slope):
        empty = np.array([], dtype=np.float64)
        return empty, empty.copy()
    grid = np.linspace(float(x.min()), float(x.max()), points)
    return grid, expit(intercept + slope * grid)

"""Candidate scores from one context's pairwise comparisons.

Methods: win ratio (eq. 6 of Liusie, Manakul, Gales, EACL 2024), average probability, Bradley-Terry
on soft probabilities (via evalica), and the Gaussian product-of-experts closed form (Liusie,
Raina, Fathullah, Gales 2024, "Efficient LLM Comparative Assessment: a Product of Experts
Framework for Pairwise Comparisons", §4). Every method takes ``tau`` and applies the positional
debiasing of eq. 9-10 (``tau = 0.5`` means none), and returns a :class:`RankingResult`.
Percentile bootstrap confidence intervals come from :func:`bootstrap_ci` (comparisons resampled)
and :func:`bootstrap_scores` (any resampling, e.g. whole contexts).

Higher score = better. Candidates without any comparison get a NaN score and rank last.
This module is pure numpy (plus evalica): it must never read or write storage or know about the UI.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.stats import rankdata

from .bias import as_comparisons, debias_probabilities, decisions
from ..errors import InputError
from ..limits import check_bootstrap
from .solvers import solve_differences
from ..types import FloatArray, IntArray

__all__ = [
    "RankingResult",
    "win_ratio",
    "average_probability",
    "bradley_terry",
    "evalica_bradley_terry",
    "poe_gaussian",
    "rank_scores",
    "METHODS",
    "get_method",
    "bootstrap_scores",
    "percentile_interval",
    "bootstrap_ci",
    "rank_candidates",
]


@dataclass(frozen=True)
class RankingResult:
    """Scores of one context's candidates (index = candidate position ``0..n-1``).

    Attributes
    ----------
    scores : FloatArray
        Higher is better; NaN for a candidate without comparisons.
    method : str
        Key of :data:`METHODS` that produced the scores.
    ci_low, ci_high : FloatArray or None
        Percentile bootstrap interval of each score (None until :func:`bootstrap_ci` is run).
    n_comparisons : IntArray
        Comparisons each candidate took part in (either position).
    covariance : FloatArray or None
        Posterior covariance of the scores (PoE only; gauge: scores sum to zero).
    tau : float
        Threshold used for debiasing (eq. 9-10); 0.5 means none.
    """

    scores: FloatArray
    method: str
    ci_low: FloatArray | None
    ci_high: FloatArray | None
    n_comparisons: IntArray
    covariance: FloatArray | None = None
    tau: float = 0.5

    @property
    def ranks(self) -> IntArray:
        """1 = best; ties share the smallest rank; NaN scores rank last (:func:`rank_scores`)."""
        return rank_scores(self.scores)


class RankingMethod(Protocol):
    def __call__(self, n: int, i: ArrayLike, j: ArrayLike, p: ArrayLike,
                 tau: float = 0.5) -> RankingResult: ...


def _counts(n: int, i: IntArray, j: IntArray) -> IntArray:
    return (np.bincount(i, minlength=n) + np.bincount(j, minlength=n)).astype(np.int64)


def _check_n(n: int) -> int:
    n = int(n)
    if n < 1:
        raise InputError(f"number of candidates must be >= 1, got {n}")
    return n


def _ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def win_ratio(n: int, i: ArrayLike, j: ArrayLike, p: ArrayLike, tau: float = 0.5) -> RankingResult:
    """Win ratio ``s_k = wins_k / comparisons_k`` (eq. 6 of Liusie et al. 2024, EACL).

    A comparison ``(i, j, p)`` is a win for ``i`` when ``p > tau`` and for ``j`` otherwise (eq. 10).

    Parameters
    ----------
    n : int
        Number of candidates.
    i, j : array_like of int
        First (A) and second (B) candidate of each comparison.
    p : array_like of float
        P(A better) per comparison (eq. 3).
    tau : float
        Decision threshold (eq. 10); the balanced threshold removes positional bias.

    Returns
    -------
    RankingResult
        Scores in [0, 1]; NaN for candidates never compared.

    Raises
    ------
    LengthMismatchError
        If ``i``, ``j``, ``p`` are not aligned.
    InputError
        If an index is out of range, ``p`` is not a probability or ``tau`` not in (0, 1).
    """
    n = _check_n(n)
    ii, jj, pp = as_comparisons(i, j, p, n)
    return _share_of_wins(n, ii, jj, decisions(pp, tau).astype(np.float64), "win-ratio", tau)


def average_probability(n: int, i: ArrayLike, j: ArrayLike, p: ArrayLike,
                        tau: float = 0.5) -> RankingResult:
    """Mean probability of winning: ``s_k = mean`` of ``p^`` where k is first, ``1 - p^`` where second.

    ``p^`` is ``p`` reweighted by eq. 9 of Liusie et al. 2024 with ``a = (1 - tau) / tau`` (the
    identity at ``tau = 0.5``): the soft analogue of the win ratio (eq. 6). Returns and raises
    as :func:`win_ratio` (scores in [0, 1]; NaN for candidates never compared).
    """
    n = _check_n(n)
    ii, jj, pp = as_comparisons(i, j, p, n)
    return _share_of_wins(n, ii, jj, debias_probabilities(pp, tau), "avg-prob", tau)


def _share_of_wins(n: int, ii: IntArray, jj: IntArray, first_share: FloatArray, method: str,
                   tau: float) -> RankingResult:
    """Each candidate's mean share of its comparisons: ``first_share`` of a comparison goes to
    its first candidate and the rest to its second (eq. 6 with hard wins, or soft ones)."""
    won = (np.bincount(ii, weights=first_share, minlength=n)
           + np.bincount(jj, weights=1.0 - first_share, minlength=n))
    counts = _counts(n, ii, jj)
    return RankingResult(_ratio(won, counts.astype(np.float64)), method, None, None, counts,
                         tau=float(tau))


#: Soft outcomes are clipped into [BT_EPS, 1 - BT_EPS]: a candidate that wins (or loses) every
#: comparison outright has no finite Bradley-Terry maximum-likelihood strength.
BT_EPS = 1e-3


def bradley_terry(n: int, i: ArrayLike, j: ArrayLike, p: ArrayLike, tau: float = 0.5,
                  *, tolerance: float = 1e-10, limit: int = 1000) -> RankingResult:
    """Bradley-Terry log-strengths fitted to soft outcomes (Bradley & Terry 1952; MM of Newman 2023).

    Model ``P(k beats l) = pi_k / (pi_k + pi_l)``. Each comparison contributes a fractional win of
    weight ``p^`` to A and ``1 - p^`` to B, where ``p^`` is ``p`` debiased by eq. 9 of Liusie et al.
    2024 and clipped to ``[BT_EPS, 1 - BT_EPS]``. Fitted with ``evalica.bradley_terry`` (weighted
    wins), restricted to the candidates that were compared.

    Returns
    -------
    RankingResult
        ``log(pi_k)``, normalised by evalica so the compared candidates' log-strengths have mean
        zero (geometric mean of pi is 1); NaN for candidates never compared. With a disconnected
        comparison graph, scores are comparable only within a component.

    Raises
    ------
    LengthMismatchError, InputError
        As :func:`win_ratio`.
    """
    n = _check_n(n)
    ii, jj, pp = as_comparisons(i, j, p, n)
    counts = _counts(n, ii, jj)
    scores = np.full(n, np.nan)
    compared = np.flatnonzero(counts > 0)
    if len(compared) >= 2:
        ph = np.clip(debias_probabilities(pp, tau), BT_EPS, 1.0 - BT_EPS)
        # evalica's MM fails (NaN for everyone) if the index holds a candidate with no comparisons:
        # the fit is over the compared candidates only, numbered 0..len(compared)-1.
        position = np.full(n, -1, dtype=np.int64)
        position[compared] = np.arange(len(compared))
        strengths = evalica_bradley_terry(position[ii], position[jj], ph, len(compared),
                                          tolerance=tolerance, limit=limit)
        with np.errstate(divide="ignore"):
            scores[compared] = np.log(strengths)
    return RankingResult(scores, "bradley-terry", None, None, counts, tau=float(tau))


def evalica_bradley_terry(x: IntArray, y: IntArray, p: FloatArray, total: int, *,
                          tolerance: float, limit: int, solver: str = "direct") -> FloatArray:
    """``evalica.bradley_terry`` of ``total`` candidates numbered ``0..total-1``, comparison ``k``
    a win of ``x[k]`` over ``y[k]`` of weight ``p[k]`` and of ``y[k]`` over ``x[k]`` of weight
    ``1 - p[k]``: the strengths ``pi`` in candidate order (Newman 2023's iteration, evalica's
    Rust solver).

    ``solver="direct"`` hands the numbered comparisons to that solver (``evalica._brzo``) as
    the public function would after mapping labels to numbers, which it does through pandas:
    nine tenths of a small fit's time, and a bootstrap fits hundreds. ``solver="public"`` calls
    ``evalica.bradley_terry`` itself (and is used when the direct entry is not there); both give
    the same numbers (``tests/stats/test_ranking.py``)."""
    import evalica  # imported lazily: the Rust extension is only needed by this method

    m = len(x)
    xs = np.concatenate((x, x)).tolist()
    ys = np.concatenate((y, y)).tolist()
    winners = [evalica.Winner.X] * m + [evalica.Winner.Y] * m
    weights = np.concatenate((p, 1.0 - p)).tolist()
    direct = getattr(getattr(evalica, "_brzo", None), "bradley_terry", None)
    if solver == "direct" and direct is not None and evalica.PYO3_AVAILABLE:
        strengths, _ = direct(xs=xs, ys=ys, winners=winners, weights=weights, total=int(total),
                              win_weight=1.0, tie_weight=0.5, tolerance=tolerance, limit=limit)
        return np.asarray(strengths, dtype=np.float64)
    result = evalica.bradley_terry(xs, ys, winners, index=pd.RangeIndex(int(total)),
                                   weights=weights, tolerance=tolerance, limit=limit)
    return result.scores.reindex(range(int(total))).to_numpy(dtype=np.float64)


def poe_gaussian(n: int, i: ArrayLike, j: ArrayLike, p: ArrayLike, tau: float = 0.5,
                 *, scale: float = 1.0, variance: float = 1.0) -> RankingResult:
    """Gaussian product-of-experts scores (Liusie, Raina, Fathullah, Gales 2024, §4).

    Each comparison ``k = (i, j, p)`` is an expert on the score difference,
    ``p(s_i - s_j | p_k) = N(mu_k, sigma^2)`` with the linear mean ``mu_k = scale * (p^_k - 0.5)``
    (``p^`` debiased by eq. 9 of Liusie et al. 2024 EACL, so ``mu_k > 0`` iff ``p_k > tau``) and
    constant variance ``sigma^2 = variance``. The product of experts is
    ``p(s | C) ∝ exp(-||W s - mu||^2 / (2 sigma^2))`` with ``W`` the ``m x n`` matrix of rows
    ``e_i - e_j``; its maximiser is the least-squares solution
    ``s* = (W^T W)^+ W^T mu`` and its covariance ``sigma^2 (W^T W)^+`` (the PoE paper's closed form
    with constant variance). The paper fixes the gauge by pinning one score; the pseudo-inverse
    fixes it by making the scores of each connected component sum to zero, which changes no
    difference ``s_i - s_j`` nor its variance ``(e_i - e_j)^T Cov (e_i - e_j)``.

    ``W^T W`` is the graph Laplacian of the comparisons (degree on the diagonal, minus the number
    of comparisons of each pair off it); :func:`solvers.solve_differences` solves it.

    Parameters
    ----------
    scale : float
        Slope of the linear mean (does not change the ranking, only the score units).
    variance : float
        Expert variance ``sigma^2`` (scales the covariance only).

    Returns
    -------
    RankingResult
        ``scores`` = ``s*`` (NaN for candidates never compared) and ``covariance`` (``n x n``).

    Raises
    ------
    LengthMismatchError, InputError
        As :func:`win_ratio`; also if ``scale`` or ``variance`` is not positive.
    """
    n = _check_n(n)
    if not (scale > 0 and variance > 0):
        raise InputError(f"PoE scale and variance must be > 0, got scale={scale}, variance={variance}")
    ii, jj, pp = as_comparisons(i, j, p, n)
    mu = scale * (debias_probabilities(pp, tau) - 0.5)
    counts = _counts(n, ii, jj)
    scores, lap_pinv = solve_differences(n, ii, jj, mu)  # no prior: the pseudo-inverse
    scores[counts == 0] = np.nan
    return RankingResult(scores, "poe", None, None, counts, covariance=variance * lap_pinv,
                         tau=float(tau))


#: Decimals to which :func:`rank_scores` compares scores.
TIE_DECIMALS = 9


def rank_scores(scores: ArrayLike) -> IntArray:
    """Ranks of scores: 1 = best (highest), ties share the smallest rank, NaN ranks last.
    Scores equal to :data:`TIE_DECIMALS` decimals tie (a solver's float noise, such as
    Bradley-Terry strengths of 1e-16 and -2e-15 for equal records, is no order).

    Examples: ``[0.2, 0.9, 0.2, nan] -> [2, 1, 2, 4]``.
    """
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    ranks = np.empty(len(s), dtype=np.int64)
    ok = ~np.isnan(s)
    ranks[ok] = rankdata(-np.round(s[ok], TIE_DECIMALS), method="min").astype(np.int64)
    ranks[~ok] = int(ok.sum()) + 1
    return ranks


METHODS: dict[str, RankingMethod] = {
    "win-ratio": win_ratio,
    "avg-prob": average_probability,
    "bradley-terry": bradley_terry,
    "poe": poe_gaussian,
}


def get_method(method: str | RankingMethod) -> tuple[str, RankingMethod]:
    """Resolve a method name (key of :data:`METHODS`) or callable to ``(name, function)``.

    Raises
    ------
    InputError
        If the name is unknown.
    """
    if callable(method):
        return getattr(method, "__name__", "custom"), method
    if method not in METHODS:
        raise InputError(f"unknown ranking method {method!r}; choose one of {', '.join(METHODS)}")
    return method, METHODS[method]


def _bootstrap_fast(name: str, n: int, ii: IntArray, jj: IntArray, pp: FloatArray, tau: float,
                    multiplicity: IntArray) -> FloatArray:
    """Win ratio / average probability of every bootstrap replicate at once: shape (B, n).

    ``multiplicity[b, k]`` is how often comparison ``k`` enters replicate ``b``; each replicate's
    wins and counts are weighted sums, so no replicate is materialised.
    """
    n_boot = multiplicity.shape[0]
    a_share = (decisions(pp, tau).astype(np.float64) if name == "win-ratio"
               else debias_probabilities(pp, tau))
    offset = (np.arange(n_boot, dtype=np.int64) * n)[:, None]
    fi = (offset + ii[None, :]).ravel()
    fj = (offset + jj[None, :]).ravel()
    mult = multiplicity.astype(np.float64)
    w = (mult * a_share[None, :]).ravel()
    size = n_boot * n
    total = (np.bincount(fi, weights=w, minlength=size)
             + np.bincount(fj, weights=mult.ravel() - w, minlength=size))
    count = (np.bincount(fi, weights=mult.ravel(), minlength=size)
             + np.bincount(fj, weights=mult.ravel(), minlength=size))
    return _ratio(total, count).reshape(n_boot, n)


def bootstrap_scores(method: str | RankingMethod, n: int, i: ArrayLike, j: ArrayLike,
                     p: ArrayLike, tau: float, multiplicity: ArrayLike) -> FloatArray:
    """Scores of ``method`` on every bootstrap replicate described by ``multiplicity``.

    A replicate is a multiset of the comparisons: ``multiplicity[b, k]`` copies of comparison
    ``k`` in replicate ``b``. Resampling comparisons (Efron 1979) draws each row from a
    multinomial over the comparisons; resampling whole groups (contexts: a cluster bootstrap)
    gives every comparison of a group its group's draw count. Win ratio and average probability
    are computed for all replicates in one vectorised pass; Bradley-Terry and PoE are refitted
    per replicate.

    Parameters
    ----------
    multiplicity : array_like of int, shape (B, m)
        Copies of each of the ``m`` comparisons in each of the ``B`` replicates.

    Returns
    -------
    FloatArray
        Shape ``(B, n)``; NaN for a candidate absent from a replicate.

    Raises
    ------
    InputError
        Unknown method, a multiplicity that is not ``(B, m)`` with non-negative counts, or as
        :func:`win_ratio`.
    LengthMismatchError
        If ``i``, ``j``, ``p`` are not aligned.
    """
    _, fn = get_method(method)
    n = _check_n(n)
    ii, jj, pp = as_comparisons(i, j, p, n)
    mult = np.asarray(multiplicity, dtype=np.int64)
    if mult.ndim != 2 or mult.shape[1] != len(ii) or (mult < 0).any():
        raise InputError(f"multiplicity must be a (replicates, {len(ii)}) array of counts >= 0, "
                         f"got shape {mult.shape}")
    if fn is win_ratio or fn is average_probability:
        return _bootstrap_fast("win-ratio" if fn is win_ratio else "avg-prob", n, ii, jj, pp,
                               float(tau), mult)
    rows = np.arange(len(ii))
    reps = []
    for counts in mult:
        pick = np.repeat(rows, counts)
        reps.append(fn(n, ii[pick], jj[pick], pp[pick], tau).scores)
    return np.stack(reps) if reps else np.empty((0, n))


def percentile_interval(replicates: ArrayLike, level: float = 0.95) -> tuple[FloatArray, FloatArray]:
    """Percentile bootstrap interval of each column of ``replicates`` (Efron 1979).

    The ``(1 - level)/2`` and ``(1 + level)/2`` percentiles of each column, NaN replicates left
    out (a candidate absent from a replicate); NaN for a column without any finite replicate.

    Raises
    ------
    InputError
        If ``level`` is not in (0, 1).
    """
    if not 0.0 < level < 1.0:
        raise InputError(f"confidence level must lie in (0, 1), got {level}")
    reps = np.asarray(replicates, dtype=np.float64)
    q = 100.0 * np.array([(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    low = np.full(reps.shape[1], np.nan)
    high = np.full(reps.shape[1], np.nan)
    seen = ~np.isnan(reps).all(axis=0)
    if seen.any():
        low[seen], high[seen] = np.nanpercentile(reps[:, seen], q, axis=0)
    return low, high


def bootstrap_ci(method: str | RankingMethod, n: int, i: ArrayLike, j: ArrayLike, p: ArrayLike,
                 tau: float = 0.5, n_boot: int = 200, level: float = 0.95,
                 seed: int | np.random.Generator = 0) -> tuple[FloatArray, FloatArray]:
    """Percentile bootstrap confidence intervals of each candidate's score (Efron 1979).

    Comparisons are resampled with replacement ``n_boot`` times, the method is re-run on each
    replicate (:func:`bootstrap_scores`), and the ``(1 - level)/2`` and ``(1 + level)/2``
    percentiles of each candidate's score are returned (:func:`percentile_interval`). A
    candidate absent from a replicate is left out of that replicate's percentiles (NaN when
    absent from all).

    Returns
    -------
    tuple of FloatArray
        ``(low, high)``, each of length ``n``.

    Raises
    ------
    InputError
        Unknown method, ``n_boot < 1``, ``level`` not in (0, 1), or as :func:`win_ratio`.
    LengthMismatchError
        If ``i``, ``j``, ``p`` are not aligned.
    """
    get_method(method)
    n = _check_n(n)
    check_bootstrap(n_boot)
    if not 0.0 < level < 1.0:
        raise InputError(f"confidence level must lie in (0, 1), got {level}")
    ii, jj, pp = as_comparisons(i, j, p, n)
    m = len(ii)
    if m == 0:
        nan = np.full(n, np.nan)
        return nan, nan.copy()
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, m, size=(int(n_boot), m))
    offset = (np.arange(int(n_boot), dtype=np.int64) * m)[:, None]
    multiplicity = np.bincount((offset + idx).ravel(), minlength=int(n_boot) * m).reshape(-1, m)
    reps = bootstrap_scores(method, n, ii, jj, pp, tau, multiplicity)
    return percentile_interval(reps, level)


def rank_candidates(method: str | RankingMethod, n: int, i: ArrayLike, j: ArrayLike, p: ArrayLike,
                    tau: float = 0.5, *, ci: bool = False, n_boot: int = 200, level: float = 0.95,
                    seed: int | np.random.Generator = 0) -> RankingResult:
    """Run ``method`` and, when ``ci`` is true, attach :func:`bootstrap_ci` intervals.

    Raises
    ------
    InputError, LengthMismatchError
        As the method and :func:`bootstrap_ci`.
    """
    name, fn = get_method(method)
    result = fn(n, i, j, p, tau)
    if not ci:
        return result
    low, high = bootstrap_ci(fn, n, i, j, p, tau, n_boot=n_boot, level=level, seed=seed)
    return replace(result, ci_low=low, ci_high=high)

"""Positional bias of a comparative judge and its removal (Liusie, Manakul, Gales, EACL 2024, §5).

An LLM judge shown the pair (A, B) tends to prefer one position regardless of content. This module
measures that bias (P(A), P(B), eq. 8; the flip rate when the order is swapped), finds the
threshold that balances it (tau*, eq. 10) and reweights soft probabilities with the equivalent
prior shift (eq. 9). It also builds the per-context comparison matrix the UI shows.

Conventions: per context the candidates are indexed ``0..n-1``; a comparison is ``(i[k], j[k],
p[k])`` with ``i`` the candidate shown first ("A"), ``j`` second ("B") and ``p`` = P(A better)
(eq. 3). This module is pure numpy: it must never read or write storage or know about the UI.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InputError, LengthMismatchError
from ..types import FloatArray, IntArray

__all__ = [
    "as_probabilities",
    "as_comparisons",
    "positional_bias",
    "balanced_threshold",
    "balanced_split",
    "split_decisions",
    "balanced_thresholds",
    "alpha_from_tau",
    "debias_probabilities",
    "debias_by_threshold",
    "decisions",
    "flip_pairs",
    "flip_rate",
    "comparison_matrix",
]


def as_probabilities(p: ArrayLike, name: str = "p") -> FloatArray:
    """Return ``p`` as a 1-D float64 array, checking every value is a probability.

    Raises
    ------
    InputError
        If ``p`` is not 1-D or holds NaN or values outside [0, 1].
    """
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim != 1:
        raise InputError(f"{name} must be a 1-D array of probabilities, got shape {arr.shape}")
    bad = ~((arr >= 0.0) & (arr <= 1.0))  # also catches NaN
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise InputError(f"{name} must hold probabilities in [0, 1]: {int(bad.sum())} value(s) are "
                         f"not, the first at position {k} ({arr[k]!r})")
    return arr


def as_comparisons(i: ArrayLike, j: ArrayLike, p: ArrayLike,
                   n: int | None = None) -> tuple[IntArray, IntArray, FloatArray]:
    """Validate and convert one context's comparisons ``(i, j, p)``.

    Parameters
    ----------
    i, j : array_like of int
        Candidate shown first (A) and second (B) for each comparison.
    p : array_like of float
        P(A better) for each comparison (eq. 3 of Liusie et al. 2024).
    n : int, optional
        Number of candidates; when given, every index must lie in ``[0, n)``.

    Returns
    -------
    tuple of (IntArray, IntArray, FloatArray)

    Raises
    ------
    LengthMismatchError
        If ``i``, ``j`` and ``p`` do not have the same length.
    InputError
        If an index is negative, ``>= n``, a candidate is compared with itself, or ``p`` is not a
        probability.
    """
    ii = np.asarray(i, dtype=np.int64).reshape(-1)
    jj = np.asarray(j, dtype=np.int64).reshape(-1)
    pp = as_probabilities(np.asarray(p, dtype=np.float64).reshape(-1))
    if not (len(ii) == len(jj) == len(pp)):
        raise LengthMismatchError(
            f"comparison arrays must be aligned: len(i)={len(ii)}, len(j)={len(jj)}, len(p)={len(pp)}")
    if len(ii):
        if min(ii.min(), jj.min()) < 0:
            raise InputError("candidate indices must be >= 0")
        if n is not None and max(ii.max(), jj.max()) >= n:
            raise InputError(f"candidate index {int(max(ii.max(), jj.max()))} is out of range for "
                             f"n={n} candidates")
        same = ii == jj
        if same.any():
            k = int(np.flatnonzero(same)[0])
            raise InputError(f"comparison {k} compares candidate {int(ii[k])} with itself")
    return ii, jj, pp


def _check_tau(tau: float) -> float:
    tau = float(tau)
    if not 0.0 < tau < 1.0:
        raise InputError(f"threshold tau must lie strictly between 0 and 1, got {tau!r}")
    return tau


def decisions(p: ArrayLike, tau: float = 0.5) -> NDArray[np.bool_]:
    """Hard verdicts ``y = 1 (A wins) iff p > tau`` (eq. 10 of Liusie et al. 2024).

    Parameters
    ----------
    p : array_like of float
        P(A better) per comparison.
    tau : float
        Decision threshold in (0, 1); 0.5 is the plain argmax, tau* removes positional bias.

    Returns
    -------
    NDArray[bool]
        True where the first position (A) wins. ``p == tau`` counts as a win for B.

    Raises
    ------
    InputError
        If ``tau`` is not in (0, 1) or ``p`` is not a probability array.
    """
    return as_probabilities(p) > _check_tau(tau)


def positional_bias(p: ArrayLike, tau: float = 0.5, at_tau: float = 0.0) -> tuple[float, float]:
    """Share of comparisons decided for the first and the second position (eq. 8).

    ``P(A) = mean(y)``, ``P(B) = 1 - P(A)`` with ``y`` the eq. 10 decisions at ``tau``. An unbiased
    judge on a symmetric comparison set gives 0.5 / 0.5 (Liusie et al. 2024, eq. 8 and Table 9).
    ``at_tau``: the share of the comparisons with ``p`` exactly at ``tau`` counted for A
    (:func:`split_decisions`; 0, the default, is eq. 10 as written; :func:`balanced_split`
    gives the share that makes the balanced P(A) exactly 0.5).

    Returns
    -------
    tuple of float
        ``(P(A), P(B))``; ``(nan, nan)`` when ``p`` is empty.

    Raises
    ------
    InputError
        If ``tau`` is not in (0, 1) or ``p`` is not a probability array.
    """
    y = split_decisions(p, tau, at_tau)
    if len(y) == 0:
        return float("nan"), float("nan")
    pa = float(y.mean())
    return pa, 1.0 - pa


def split_decisions(p: ArrayLike, tau: float = 0.5, at_tau: float = 0.0) -> FloatArray:
    """Eq. 10 decisions as shares of a win for A: 1 where ``p > tau``, 0 where ``p < tau``, and
    ``at_tau`` (in [0, 1]) where ``p == tau`` exactly: the mass at the threshold split between
    the positions (a sampled judge whose p is a share of K samples puts many comparisons exactly
    at 0.5, and eq. 10 alone gives all of them to B).

    Raises
    ------
    InputError
        ``tau`` not in (0, 1), ``at_tau`` not in [0, 1], or ``p`` not a probability array.
    """
    arr = as_probabilities(p)
    tau = _check_tau(tau)
    share = float(at_tau)
    if not 0.0 <= share <= 1.0:
        raise InputError(f"the share of the comparisons at the threshold given to A must be in "
                         f"[0, 1], got {at_tau!r}")
    return np.where(arr > tau, 1.0, np.where(arr == tau, share, 0.0))


def balanced_split(p: ArrayLike) -> tuple[float, float]:
    """tau* (:func:`balanced_threshold`) and the share of the comparisons exactly at tau* to
    count for A so that P(A) = 0.5 exactly (eq. 8 with :func:`split_decisions`).

    With ``m`` the share of ``p`` equal to tau* and ``a`` the share above it, the split is
    ``(0.5 - a) / m`` (clipped into [0, 1]; 0 when no p sits at tau*, where P(A) is eq. 10's).
    Example: a judge sampled 4 times per comparison with p in {0, 0.25, 0.5, 0.75, 1} and 21%
    of its p at the median 0.5, 39.5% above: eq. 10 leaves P(A) at 0.395; the split gives
    (0.5 - 0.395) / 0.21 = 0.5 of that mass to A and P(A) = 0.5.

    Returns
    -------
    tuple of float
        ``(tau_star, share_at_tau)``; ``(nan, 0.0)`` for an empty ``p``.

    Raises
    ------
    InputError
        If ``p`` is not a probability array.
    """
    arr = as_probabilities(p)
    tau = balanced_threshold(arr)
    if len(arr) == 0:
        return tau, 0.0
    at = float(np.mean(arr == tau))
    if at == 0.0:
        return tau, 0.0
    above = float(np.mean(arr > tau))
    return tau, float(np.clip((0.5 - above) / at, 0.0, 1.0))


def balanced_threshold(p: ArrayLike) -> float:
    """The threshold tau* making P(A) = P(B) = 0.5 under eq. 10 (Liusie et al. 2024, §5).

    Defined as the median of ``p`` (the paper's choice for a symmetric comparison set, used here
    for any set). With an even count of distinct values the median is the midpoint of the two
    middle values, so exactly half of ``p`` is strictly above it and P(A) is exactly 0.5. With an
    odd count the median is the middle value itself, which is not above itself: P(A) is
    ``(m - 1) / (2m)``, the closest a threshold can get. Ties at the median push P(A) below 0.5.

    Returns
    -------
    float
        tau*, clipped into the open interval (0, 1) so it is always a valid threshold;
        NaN when ``p`` is empty.

    Raises
    ------
    InputError
        If ``p`` is not a probability array.
    """
    arr = as_probabilities(p)
    if len(arr) == 0:
        return float("nan")
    # A judge that always says 0 or 1 would put the median on the boundary, where eq. 9 is undefined.
    eps = np.finfo(np.float64).eps
    return float(np.clip(np.median(arr), eps, 1.0 - eps))


def balanced_thresholds(p: ArrayLike, groups: ArrayLike) -> tuple[NDArray, FloatArray]:
    """tau* of eq. 10 applied group by group (e.g. per context): the median of each group's ``p``.

    The global tau* (:func:`balanced_threshold`) balances P(A) over all comparisons together, so a
    context where the judge leans further towards A than the rest keeps a P(A) far from 0.5; one
    threshold per group balances every group on its own (same median rule, same clipping).

    Parameters
    ----------
    p : array_like of float
        P(A better) per comparison.
    groups : array_like
        The group (context id) of each comparison, aligned with ``p``.

    Returns
    -------
    tuple of (NDArray, FloatArray)
        The distinct groups (sorted) and each one's tau*.

    Raises
    ------
    LengthMismatchError
        If ``p`` and ``groups`` are not aligned.
    InputError
        If ``p`` is not a probability array.
    """
    from scipy import ndimage

    arr = as_probabilities(p)
    g = np.asarray(groups).reshape(-1)
    if len(g) != len(arr):
        raise LengthMismatchError(f"groups and p must be aligned: len(groups)={len(g)}, "
                                  f"len(p)={len(arr)}")
    labels, inverse = np.unique(g, return_inverse=True)
    if len(labels) == 0:
        return labels, np.array([], dtype=np.float64)
    medians = np.asarray(ndimage.median(arr, labels=inverse, index=np.arange(len(labels))),
                         dtype=np.float64).reshape(-1)
    eps = np.finfo(np.float64).eps
    return labels, np.clip(medians, eps, 1.0 - eps)


def alpha_from_tau(tau: float) -> float:
    """Prior-shift weight ``a = (1 - tau) / tau`` (eq. 9 of Liusie et al. 2024).

    Raises
    ------
    InputError
        If ``tau`` is not in (0, 1).
    """
    tau = _check_tau(tau)
    return (1.0 - tau) / tau


def debias_probabilities(p: ArrayLike, tau: float) -> FloatArray:
    """Reweighted probabilities ``p^ = a p / (a p + 1 - p)``, ``a = (1 - tau) / tau`` (eq. 9).

    The reweighting is the soft counterpart of eq. 10: ``p^ > 0.5`` exactly when ``p > tau``
    (``a p > (a p + 1 - p) / 2  <=>  p (a + 1) > 1  <=>  p > tau``), so methods that use soft
    probabilities see the same balanced verdicts as the win ratio at ``tau``. ``tau = 0.5`` is the
    identity.

    Raises
    ------
    InputError
        If ``tau`` is not in (0, 1) or ``p`` is not a probability array.
    """
    a = alpha_from_tau(tau)
    arr = as_probabilities(p)
    # The denominator is >= min(a, 1) > 0 on [0, 1], so no division guard is needed.
    return a * arr / (a * arr + 1.0 - arr)


def debias_by_threshold(p: ArrayLike, tau: ArrayLike) -> FloatArray:
    """Eq. 9 with a threshold per comparison: ``p^_k = a_k p_k / (a_k p_k + 1 - p_k)``,
    ``a_k = (1 - tau_k) / tau_k``.

    With one threshold per context (:func:`balanced_thresholds`) the reweighted ``p^`` are read
    at 0.5: ``p^_k > 0.5`` exactly when ``p_k > tau_k`` (eq. 10), which rounding alone would not
    guarantee for a ``p_k`` equal to its threshold, so that case is pinned to 0.5 (a win for B).

    Raises
    ------
    LengthMismatchError
        If ``tau`` is neither one value nor aligned with ``p``.
    InputError
        If a ``tau`` is not in (0, 1) or ``p`` is not a probability array.
    """
    arr = as_probabilities(p)
    t = np.broadcast_to(np.asarray(tau, dtype=np.float64), arr.shape) if np.ndim(tau) == 0 \
        else np.asarray(tau, dtype=np.float64).reshape(-1)
    if len(t) != len(arr):
        raise LengthMismatchError(f"tau must be one value or one per comparison: len(tau)="
                                  f"{len(t)}, len(p)={len(arr)}")
    bad = ~((t > 0.0) & (t < 1.0))
    if bad.any():
        raise InputError(f"threshold tau must lie strictly between 0 and 1, got "
                         f"{t[np.flatnonzero(bad)[0]]!r}")
    a = (1.0 - t) / t
    out = a * arr / (a * arr + 1.0 - arr)
    above = arr > t
    half = np.float64(0.5)
    return np.where(above, np.maximum(out, np.nextafter(half, 1.0)), np.minimum(out, half))


def flip_pairs(i: ArrayLike, j: ArrayLike, p: ArrayLike, tau: float = 0.5
               ) -> tuple[IntArray, IntArray, FloatArray, FloatArray, NDArray[np.bool_]]:
    """Unordered pairs judged in both orders, with their two probabilities and whether they flip.

    For a pair ``{u, v}`` (``u < v``) with both ``(u, v)`` and ``(v, u)`` present, the verdict
    "u beats v" is ``p_uv > tau`` from the first order and ``p_vu <= tau`` from the swapped one
    (eq. 10); the pair flips when the two verdicts disagree, i.e. the verdict depends on position.

    Returns
    -------
    tuple
        ``(u, v, p_uv, p_vu, flipped)``, one entry per such pair, sorted by ``(u, v)``.

    Raises
    ------
    LengthMismatchError
        If the arrays are not aligned.
    InputError
        If an ordered pair appears twice, or on the conditions of :func:`as_comparisons`.
    """
    ii, jj, pp = as_comparisons(i, j, p)
    tau = _check_tau(tau)
    empty = np.array([], dtype=np.int64)
    if len(ii) == 0:
        return empty, empty, pp[:0], pp[:0], np.array([], dtype=bool)
    n = int(max(ii.max(), jj.max())) + 1
    key = ii * n + jj
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    dup = sorted_key[1:] == sorted_key[:-1]
    if dup.any():
        k = sorted_key[1:][dup][0]
        raise InputError(f"ordered pair ({int(k // n)}, {int(k % n)}) appears more than once; "
                         "flip rate needs one judgement per ordered pair")
    fwd = np.flatnonzero(ii < jj)
    rev_key = jj[fwd] * n + ii[fwd]
    pos = np.searchsorted(sorted_key, rev_key)
    pos_clipped = np.minimum(pos, len(sorted_key) - 1)
    found = sorted_key[pos_clipped] == rev_key
    fwd = fwd[found]
    rev = order[pos_clipped[found]]
    u, v, p_uv, p_vu = ii[fwd], jj[fwd], pp[fwd], pp[rev]
    flipped = (p_uv > tau) != (p_vu <= tau)
    srt = np.lexsort((v, u))
    return u[srt], v[srt], p_uv[srt], p_vu[srt], flipped[srt]


def flip_rate(i: ArrayLike, j: ArrayLike, p: ArrayLike, tau: float = 0.5) -> tuple[float, int]:
    """Share of unordered pairs, judged in both orders, whose verdict changes with the order.

    See :func:`flip_pairs` for the verdict rule (eq. 10 of Liusie et al. 2024 in both orders).

    Returns
    -------
    tuple of (float, int)
        ``(rate, n_pairs)``; the rate is NaN when no pair was judged in both orders.

    Raises
    ------
    LengthMismatchError, InputError
        As :func:`flip_pairs`.
    """
    *_, flipped = flip_pairs(i, j, p, tau)
    if len(flipped) == 0:
        return float("nan"), 0
    return float(flipped.mean()), int(len(flipped))


def comparison_matrix(n: int, i: ArrayLike, j: ArrayLike, p: ArrayLike) -> FloatArray:
    """The ``n x n`` matrix of ``p_ij`` (row = first position, column = second), NaN where missing.

    An ordered pair judged more than once shows the mean of its probabilities. The diagonal is NaN.

    Raises
    ------
    LengthMismatchError, InputError
        As :func:`as_comparisons`.
    """
    ii, jj, pp = as_comparisons(i, j, p, n)
    sums = np.zeros((n, n))
    counts = np.zeros((n, n))
    np.add.at(sums, (ii, jj), pp)
    np.add.at(counts, (ii, jj), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1.0), np.nan)

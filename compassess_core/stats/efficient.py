"""Efficient pair selection beyond the paper: product-of-experts (PoE) and adaptive strategies.

``poe`` (Liusie, Raina, Fathullah, Gales 2024, "Efficient LLM Comparative Assessment: a Product of
Experts Framework", §5): with Gaussian experts of constant variance the posterior covariance of
the scores is ``Sigma = (W^T W / sigma^2 + I / prior)^-1`` (``ranking.poe_gaussian``, plus a weak
Gaussian prior so that an empty or disconnected comparison graph has finite variances). It does
not depend on the outcomes, so the pairs can be chosen before any model call: greedily add the
pair with the largest variance of the score difference ``(e_i - e_j)^T Sigma (e_i - e_j)``, then
update ``Sigma`` by Sherman-Morrison. Each unordered pair may be used twice (both orders); its
first use puts first the candidate that has been first less often (positional balance).

``adaptive`` uses the outcomes so far: the posterior mean ``mu`` of the same Gaussian model from
the stored ``p`` (``y_k = p_k - 1/2``) and its covariance. The next pairs maximise
``0.5 log(1 + v_ij / sigma^2) * 4 q (1 - q)``, ``q = Phi((mu_i - mu_j) / sqrt(v_ij + sigma^2))``:
the information a comparison gives about the scores, weighted by how uncertain its outcome is, so
comparisons of near-tied candidates whose order is still unsure come first. A batch of ``k`` pairs
is chosen greedily with the covariance updated between picks (the mean is held: no outcome is
known yet). The choice depends only on the set of stored pairs, their p and the seed, so a
resumed run continues exactly as an uninterrupted one would.

Everything is vectorised over the ``n x n`` pair matrix per pick; this module must never call a
model or touch storage.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from ..errors import InputError
from .solvers import solve_differences
from ..types import FloatArray, IntArray

__all__ = ["poe_pairs", "adaptive_next_pairs", "adaptive_pairs_from_matrix", "posterior",
           "difference_posterior", "NOISE_VAR", "PRIOR_VAR"]

#: Expert variance sigma^2 of one comparison's score difference (in units of p - 1/2). A small
#: judge's p spreads ~0.1-0.2 around its mean, so one comparison is weak evidence.
NOISE_VAR = 0.05
#: Prior variance of each score: large against NOISE_VAR so it only regularises.
PRIOR_VAR = 1.0


def _check(n: int, budget: int) -> None:
    if n < 2:
        raise InputError(f"a context needs at least 2 candidates to compare, got {n}")
    if budget < 0 or budget > n * (n - 1):
        raise InputError(f"budget {budget} is outside 0..{n * (n - 1)} for {n} candidates")


def posterior(n: int, i: IntArray, j: IntArray, p: FloatArray | None = None, *,
              noise_var: float = NOISE_VAR, prior_var: float = PRIOR_VAR
              ) -> tuple[FloatArray, FloatArray]:
    """Gaussian PoE posterior (mean, covariance) of the scores given comparisons (i, j, p).

    Each comparison is the expert ``s_i - s_j ~ N(p - 1/2, noise_var)`` (the linear mean of the
    PoE paper with unit slope), the prior ``s ~ N(0, prior_var I)``: :func:`difference_posterior`
    with ``y = p - 1/2`` and unit weights. With ``p`` None the mean is zero.
    """
    i = np.asarray(i, dtype=np.int64)
    y = None if p is None else np.nan_to_num(np.asarray(p, dtype=np.float64) - 0.5)
    return difference_posterior(n, i, j, y, noise_var=noise_var, prior_var=prior_var)


def difference_posterior(n: int, i: IntArray, j: IntArray, y: FloatArray | None,
                         weights: FloatArray | None = None, *, noise_var: float = NOISE_VAR,
                         prior_var: float = PRIOR_VAR) -> tuple[FloatArray, FloatArray]:
    """Gaussian posterior of scores ``s`` from noisy observations of their differences.

    Observation ``k`` is the expert ``s_i - s_j ~ N(y_k, noise_var / w_k)`` (PoE paper, §4, with
    a weight per expert), the prior ``s ~ N(0, prior_var I)``. Precision
    ``A = sum_k w_k u_k u_k^T / noise_var + I / prior_var`` (``u_k = e_i - e_j``: the weighted
    Laplacian of the comparison graph), covariance ``A^-1``, mean ``A^-1 sum_k w_k y_k u_k /
    noise_var``. With ``y`` None the mean is zero (:func:`solvers.solve_differences` with a prior).

    Raises
    ------
    InputError
        A negative weight.
    """
    return solve_differences(n, i, j, y, weights, noise_var=noise_var, prior_var=prior_var)


def _diff_variance(cov: FloatArray) -> FloatArray:
    d = np.diag(cov)
    return d[:, None] + d[None, :] - 2.0 * cov


def _update(cov: FloatArray, a: int, b: int, noise_var: float) -> FloatArray:
    """Sherman-Morrison: covariance after one more comparison of a and b."""
    u = cov[:, a] - cov[:, b]
    return cov - np.outer(u, u) / (noise_var + u[a] - u[b])


def _pick(score: FloatArray, allowed: np.ndarray, jitter: FloatArray) -> tuple[int, int]:
    s = np.where(allowed, score, -np.inf)
    best = s.max()
    # Near-ties (float noise) are broken by the seeded jitter, never by index order alone.
    cand = allowed & (s >= best - 1e-12 * max(1.0, abs(best)))
    flat = np.flatnonzero(np.where(cand, jitter, -np.inf) == np.where(cand, jitter, -np.inf).max())
    a, b = divmod(int(flat[0]), score.shape[0])
    return a, b


def _orient(a: int, b: int, uses: np.ndarray, firsts: np.ndarray, rng_bit: bool) -> tuple[int, int]:
    lo, hi = min(a, b), max(a, b)
    if uses[lo, hi] == 1:  # second use: the order not used yet
        return (hi, lo) if firsts_pair_order(uses, lo, hi) else (lo, hi)
    if firsts[a] != firsts[b]:
        return (a, b) if firsts[a] < firsts[b] else (b, a)
    return (lo, hi) if rng_bit else (hi, lo)


def firsts_pair_order(uses: np.ndarray, lo: int, hi: int) -> bool:
    """True when the pair's first use was (lo, hi) (kept in the lower triangle as a flag)."""
    return bool(uses[hi, lo] == 1)


def _greedy(n: int, k: int, cov: FloatArray, acquisition, used_pairs: IntArray,
            rng: np.random.Generator, noise_var: float) -> IntArray:
    """Greedily choose k ordered pairs maximising ``acquisition(cov)`` (an n x n matrix)."""
    # uses[lo, hi] counts uses of the unordered pair; uses[hi, lo] = 1 marks "first was (lo, hi)".
    uses = np.zeros((n, n), dtype=np.int64)
    firsts = np.zeros(n, dtype=np.int64)
    for a, b in used_pairs:
        lo, hi = min(a, b), max(a, b)
        uses[lo, hi] += 1
        if uses[lo, hi] == 1 and a == lo:
            uses[hi, lo] = 1
        firsts[a] += 1
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    jitter = rng.random((n, n))
    bits = rng.random(k) < 0.5
    out = np.empty((k, 2), dtype=np.int64)
    for t in range(k):
        allowed = upper & (uses < 2)
        if not allowed.any():
            raise InputError(f"no pair left to compare after {len(used_pairs) + t} comparisons")
        a, b = _pick(acquisition(cov), allowed, jitter)
        first, second = _orient(a, b, uses, firsts, bool(bits[t]))
        lo, hi = min(a, b), max(a, b)
        uses[lo, hi] += 1
        if uses[lo, hi] == 1 and first == lo:
            uses[hi, lo] = 1
        firsts[first] += 1
        out[t] = first, second
        cov = _update(cov, a, b, noise_var)
    return out


def poe_pairs(n: int, budget: int, seed: int | np.random.Generator = 0, *,
              noise_var: float = NOISE_VAR, prior_var: float = PRIOR_VAR) -> IntArray:
    """Outcome-independent PoE selection of ``budget`` ordered pairs (PoE paper, §5).

    Greedy maximisation of the posterior variance of ``s_i - s_j`` (which for a constant-variance
    Gaussian PoE depends on the comparison graph only). Returns ``(budget, 2)`` rows
    ``(first, second)`` sorted like ``selection.select_pairs``; no ordered pair repeats.

    Raises
    ------
    InputError
        ``n < 2`` or ``budget`` outside ``0..n(n-1)``.
    """
    _check(n, budget)
    rng = np.random.default_rng(seed)
    _, cov = posterior(n, np.array([], np.int64), np.array([], np.int64),
                       noise_var=noise_var, prior_var=prior_var)
    pairs = _greedy(n, budget, cov, _diff_variance, np.empty((0, 2), np.int64), rng, noise_var)
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    return np.ascontiguousarray(pairs[order])


def adaptive_acquisition(mu: FloatArray, noise_var: float = NOISE_VAR):
    """The adaptive criterion as a function of the covariance (mean held fixed), see module doc."""
    dmu = mu[:, None] - mu[None, :]

    def acq(cov: FloatArray) -> FloatArray:
        v = np.maximum(_diff_variance(cov), 0.0)
        q = ndtr(dmu / np.sqrt(v + noise_var))
        return 0.5 * np.log1p(v / noise_var) * 4.0 * q * (1.0 - q)
    return acq


def adaptive_next_pairs(n: int, i: IntArray, j: IntArray, p: FloatArray, k: int,
                        seed: int | np.random.Generator = 0, *, noise_var: float = NOISE_VAR,
                        prior_var: float = PRIOR_VAR) -> IntArray:
    """The next ``k`` ordered pairs to compare given the stored comparisons ``(i, j, p)``.

    Deterministic in (stored set, p, seed): the stored comparisons are canonically sorted first,
    so the order they were stored in does not matter. Never returns a stored ordered pair.

    Raises
    ------
    InputError
        ``n < 2``, or fewer than ``k`` ordered pairs remain.
    """
    _check(n, 0)
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    p = np.asarray(p, dtype=np.float64)
    order = np.lexsort((j, i))
    i, j, p = i[order], j[order], p[order]
    if len(i) + k > n * (n - 1):
        raise InputError(f"only {n * (n - 1) - len(i)} ordered pairs remain, {k} asked")
    mu, cov = posterior(n, i, j, p, noise_var=noise_var, prior_var=prior_var)
    # A fresh generator per step, seeded by the seed and the step, so resumption is exact.
    rng = np.random.default_rng([int(seed) if not isinstance(seed, np.random.Generator)
                                 else int(seed.integers(2**31)), len(i)])
    return _greedy(n, k, cov, adaptive_acquisition(mu, noise_var), np.column_stack((i, j)), rng,
                   noise_var)


def adaptive_pairs_from_matrix(matrix: FloatArray, budget: int, seed: int = 0, batch: int = 1
                               ) -> IntArray:
    """Simulate an adaptive run against a full stored matrix ``p[i, j]`` (no model calls):
    the first ``batch`` pairs come from an empty history, every next batch from the outcomes so far.

    Returns the chosen ordered pairs in the order they were chosen.
    """
    n = matrix.shape[0]
    _check(n, budget)
    chosen = np.empty((0, 2), dtype=np.int64)
    while len(chosen) < budget:
        k = min(batch, budget - len(chosen))
        nxt = adaptive_next_pairs(n, chosen[:, 0], chosen[:, 1],
                                  matrix[chosen[:, 0], chosen[:, 1]], k, seed)
        chosen = np.concatenate((chosen, nxt))
    return chosen

"""The two fits several analyses share: Gaussian score differences and the soft-label logistic.

* :func:`solve_differences`: the Gaussian product of experts on score differences (Liusie, Raina,
  Fathullah, Gales 2024, "Efficient LLM Comparative Assessment: a Product of Experts Framework",
  §4), with or without a Gaussian prior: ``ranking.poe_gaussian``, ``efficient.posterior`` and the
  fused rankings of ``fusion`` all solve it here.
* :func:`fit_soft_logistic`: logistic regression on soft (or hard) labels with a Gaussian prior on
  the coefficients: ``length_bias`` (the length slope and the length-adjusted scores) and
  ``calibration`` (Platt scaling of the judge) both fit it here.

Small pure numpy/scipy functions; nothing here reads storage or knows about runs.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from ..errors import InputError
from ..types import FloatArray, IntArray


def difference_laplacian(n: int, i: IntArray, j: IntArray,
                         weights: FloatArray | None = None) -> FloatArray:
    """The weighted Laplacian ``L = sum_k w_k u_k u_k^T`` of the comparison graph, ``u_k = e_i -
    e_j`` (``W^T diag(w) W`` of the PoE paper's §4 with ``W`` the rows ``e_i - e_j``), built with
    ``np.add.at`` without forming ``W``.

    Raises
    ------
    InputError
        A negative weight.
    """
    w = np.ones(len(i)) if weights is None else np.asarray(weights, dtype=np.float64)
    if (w < 0).any():
        raise InputError("expert weights must be >= 0")
    lap = np.zeros((n, n))
    np.add.at(lap, (i, j), -w)
    np.add.at(lap, (j, i), -w)
    np.add.at(lap, (i, i), w)
    np.add.at(lap, (j, j), w)
    return lap


def solve_differences(n: int, i: IntArray, j: IntArray, y: FloatArray | None,
                      weights: FloatArray | None = None, *, noise_var: float = 1.0,
                      prior_var: float = np.inf) -> tuple[FloatArray, FloatArray]:
    """Gaussian posterior ``(mean, covariance)`` of scores ``s`` from noisy score differences.

    Observation ``k`` is the expert ``s_i - s_j ~ N(y_k, noise_var / w_k)`` (PoE paper, §4, eq. of
    the Gaussian experts, with a weight per expert); the prior is ``s ~ N(0, prior_var I)``.
    Precision ``A = L / noise_var + I / prior_var`` (``L``: :func:`difference_laplacian`),
    covariance ``A^-1``, mean ``A^-1 sum_k w_k y_k u_k / noise_var``.

    ``prior_var = inf`` is the PoE paper's closed form without a prior, ``s* = L^+ W^T y``: the
    pseudo-inverse fixes the gauge by making the scores of each connected component sum to zero,
    which changes no difference ``s_i - s_j`` nor its variance. With ``y`` None the mean is zero.

    Raises
    ------
    InputError
        A negative weight.
    """
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    w = np.ones(len(i)) if weights is None else np.asarray(weights, dtype=np.float64)
    lap = difference_laplacian(n, i, j, w)
    if np.isinf(prior_var):
        cov = np.linalg.pinv(lap / noise_var, hermitian=True)
    else:
        cov = np.linalg.inv(lap / noise_var + np.eye(n) / prior_var)
    if y is None or len(i) == 0:
        return np.zeros(n), cov
    wy = w * np.asarray(y, dtype=np.float64)
    rhs = np.bincount(i, weights=wy, minlength=n) - np.bincount(j, weights=wy, minlength=n)
    return cov @ rhs / noise_var, cov


def fit_soft_logistic(design: FloatArray, p: FloatArray, ridge: FloatArray, *,
                      prior_mean: FloatArray | None = None, start: FloatArray | None = None,
                      bounds: Sequence[tuple[float | None, float | None]] | None = None,
                      maxiter: int = 2000, gtol: float = 1e-9) -> FloatArray:
    """Coefficients ``w`` minimising the soft-label cross-entropy with a Gaussian prior

        -sum_k [p_k log s(z_k) + (1 - p_k) log s(-z_k)] + sum_c ridge_c (w_c - m_c)^2 / 2

    with ``z = design @ w``, ``s`` the logistic function and ``m`` the prior mean (zero when
    None). Hard labels ``p in {0, 1}`` make it Platt's logistic fit (Platt 1999); soft ``p`` is
    AlpacaEval's soft-preference fit without duplicating each row with weights ``p``, ``1 - p``.
    L-BFGS-B with the exact gradient ``design^T (s(z) - p) + ridge (w - m)``; the objective is
    convex, so the optimum is unique (within ``bounds`` when given).
    """
    m = np.zeros(design.shape[1]) if prior_mean is None else np.asarray(prior_mean, np.float64)

    def loss(w: FloatArray) -> tuple[float, FloatArray]:
        z = design @ w
        d = w - m
        value = -(p @ log_expit(z) + (1.0 - p) @ log_expit(-z)) + 0.5 * ridge @ (d * d)
        grad = design.T @ (expit(z) - p) + ridge * d
        return float(value), grad

    x0 = np.zeros(design.shape[1]) if start is None else np.asarray(start, np.float64)
    result = minimize(loss, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                      options=dict(maxiter=maxiter, gtol=gtol, ftol=1e-14))
    return result.x

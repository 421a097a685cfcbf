"""Agreement of predicted scores with reference (human) scores, by the paper's protocol.

Liusie, Manakul, Gales (EACL 2024), §4 and appendix B: Spearman (or Kendall) correlation between
predicted and reference scores within each context, averaged over contexts and reported x100,
skipping contexts whose reference scores are all equal; system-level correlation of per-system mean
scores; correlation of all candidates pooled; and pairwise accuracy on pairs whose reference scores
differ (Table 7).

Convention for degenerate inputs: a correlation with a constant input is undefined, NaN (as
scipy returns), shown as n/a. In the mean over contexts, a context whose *reference* is constant
carries no ranking information and is skipped; a context whose *prediction* is constant against a
varying reference (a ranking that says nothing) counts 0 there, so a judge cannot raise its mean
by declining to discriminate, unless no context has a defined correlation: then the mean is NaN
too (n/a), not a measured 0. Candidates whose prediction or reference is NaN (e.g. never
compared) are left out of their context.

Pure numpy/scipy: this module must never read or write storage or know about the UI.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import kendalltau, spearmanr

from .bias import as_comparisons, decisions
from ..errors import InputError, LengthMismatchError
from ..types import FloatArray

__all__ = [
    "CORRELATIONS",
    "CorrelationResult",
    "correlation",
    "per_context_correlation",
    "system_level_correlation",
    "pooled_correlation",
    "pairwise_accuracy",
]

CORRELATIONS: tuple[str, ...] = ("spearman", "kendall")


@dataclass(frozen=True)
class CorrelationResult:
    """Per-context correlation summary.

    Attributes
    ----------
    mean_x100 : float
        Mean over used contexts, x100 (NaN when no context could be used).
    per_context : list of float
        Correlation of each context in input order (not x100); NaN for skipped contexts.
    n_used, n_skipped : int
        Contexts that entered the mean / were skipped (constant reference or < 2 candidates).
    n_constant_prediction : int
        Contexts with a varying reference whose prediction is constant: their ``per_context``
        value is NaN (undefined); they enter the mean as 0 when another context has a defined
        correlation, else nothing does and the mean is NaN.
    method : str
        ``"spearman"`` or ``"kendall"``.
    """

    mean_x100: float
    per_context: list[float]
    n_used: int
    n_skipped: int
    method: str
    n_constant_prediction: int = 0


def _check_method(method: str) -> None:
    if method not in CORRELATIONS:
        raise InputError(f"unknown correlation {method!r}; choose one of {', '.join(CORRELATIONS)}")


def _aligned(pred: ArrayLike, ref: ArrayLike, where: str) -> tuple[FloatArray, FloatArray]:
    x = np.asarray(pred, dtype=np.float64).reshape(-1)
    y = np.asarray(ref, dtype=np.float64).reshape(-1)
    if len(x) != len(y):
        raise LengthMismatchError(f"{where}: {len(x)} predicted scores but {len(y)} reference scores")
    return x, y


def correlation(pred: ArrayLike, ref: ArrayLike, method: str = "spearman") -> float:
    """Spearman or Kendall (tau-b) correlation, with the module's conventions (not x100).

    NaN pairs are dropped. Returns NaN (undefined) when fewer than 2 pairs remain or either
    side is constant, as scipy does (without its warning).

    Raises
    ------
    InputError
        Unknown ``method``.
    LengthMismatchError
        ``pred`` and ``ref`` differ in length.
    """
    _check_method(method)
    x, y = _aligned(pred, ref, "correlation")
    ok = ~(np.isnan(x) | np.isnan(y))
    x, y = x[ok], y[ok]
    if len(x) < 2 or np.all(y == y[0]) or np.all(x == x[0]):
        return float("nan")
    stat = spearmanr(x, y).statistic if method == "spearman" else kendalltau(x, y).statistic
    return float(stat)


def per_context_correlation(pred: Sequence[ArrayLike], ref: Sequence[ArrayLike],
                            method: str = "spearman") -> CorrelationResult:
    """Correlation within each context, averaged over contexts, x100 (Liusie et al. 2024, §4).

    Parameters
    ----------
    pred, ref : sequence of array_like
        One array per context: predicted and reference scores of that context's candidates.
    method : {"spearman", "kendall"}

    Returns
    -------
    CorrelationResult

    Raises
    ------
    LengthMismatchError
        Different numbers of contexts, or of candidates within a context.
    InputError
        Unknown ``method``.
    """
    _check_method(method)
    if len(pred) != len(ref):
        raise LengthMismatchError(f"{len(pred)} predicted contexts but {len(ref)} reference contexts")
    per: list[float] = []
    flat = []   # a constant prediction against a varying reference: undefined, counted 0
    for k, (x, y) in enumerate(zip(pred, ref)):
        xa, ya = _aligned(x, y, f"context {k}")
        per.append(correlation(xa, ya, method))
        ok = ~(np.isnan(xa) | np.isnan(ya))
        xa, ya = xa[ok], ya[ok]
        flat.append(len(xa) >= 2 and not np.all(ya == ya[0]) and bool(np.all(xa == xa[0])))
    values = np.array(per, dtype=np.float64)
    defined = ~np.isnan(values)
    constant = np.array(flat, dtype=bool)
    used = defined | constant if defined.any() else defined
    mean = (float(100.0 * np.where(constant, 0.0, values)[used].mean()) if used.any()
            else float("nan"))
    return CorrelationResult(mean, per, int(used.sum()), int((~defined & ~constant).sum()),
                             method, int(constant.sum()))


def system_level_correlation(pred: Sequence[ArrayLike], ref: Sequence[ArrayLike],
                             systems: Sequence[ArrayLike], method: str = "spearman") -> float:
    """System-level correlation x100 (Liusie et al. 2024, appendix B).

    Each system's predicted and reference scores are averaged over all contexts (NaN scores
    ignored), then the per-system means are correlated.

    Parameters
    ----------
    pred, ref : sequence of array_like
        Per-context predicted and reference scores.
    systems : sequence of array_like
        Per-context system label of each candidate.

    Returns
    -------
    float
        Correlation x100; NaN with fewer than 2 systems or a constant reference mean.

    Raises
    ------
    LengthMismatchError
        Misaligned contexts or candidates.
    InputError
        Unknown ``method``.
    """
    _check_method(method)
    if not (len(pred) == len(ref) == len(systems)):
        raise LengthMismatchError(f"contexts: {len(pred)} predicted, {len(ref)} reference, "
                                  f"{len(systems)} system lists")
    xs, ys, ss = [], [], []
    for k, (x, y, s) in enumerate(zip(pred, ref, systems)):
        xa, ya = _aligned(x, y, f"context {k}")
        sa = np.asarray(s, dtype=object).reshape(-1)
        if len(sa) != len(xa):
            raise LengthMismatchError(f"context {k}: {len(xa)} scores but {len(sa)} system labels")
        xs.append(xa)
        ys.append(ya)
        ss.append(sa)
    if not xs:
        return float("nan")
    x, y = np.concatenate(xs), np.concatenate(ys)
    labels = np.concatenate(ss).astype(str)
    _, inv = np.unique(labels, return_inverse=True)
    n_sys = int(inv.max()) + 1 if len(inv) else 0

    def group_mean(v: FloatArray) -> FloatArray:
        ok = ~np.isnan(v)
        tot = np.bincount(inv[ok], weights=v[ok], minlength=n_sys)
        cnt = np.bincount(inv[ok], minlength=n_sys)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan)

    return 100.0 * correlation(group_mean(x), group_mean(y), method)


def pooled_correlation(pred: Sequence[ArrayLike], ref: Sequence[ArrayLike],
                       method: str = "spearman") -> float:
    """Correlation x100 of all candidates of all contexts pooled ("summary level", appendix B).
    Raises as :func:`system_level_correlation` (misaligned contexts or candidates, an unknown
    ``method``)."""
    _check_method(method)
    if len(pred) != len(ref):
        raise LengthMismatchError(f"{len(pred)} predicted contexts but {len(ref)} reference contexts")
    pairs = [_aligned(x, y, f"context {k}") for k, (x, y) in enumerate(zip(pred, ref))]
    if not pairs:
        return float("nan")
    x = np.concatenate([a for a, _ in pairs])
    y = np.concatenate([b for _, b in pairs])
    return 100.0 * correlation(x, y, method)


def pairwise_accuracy(i: ArrayLike, j: ArrayLike, p: ArrayLike, ref: ArrayLike,
                      tau: float = 0.5) -> tuple[float, int]:
    """Share of compared pairs whose verdict agrees with the reference order (Table 7).

    Only ordered comparisons whose two reference scores differ (and are not NaN) count; the
    verdict ``p > tau`` (eq. 10) says the first candidate ``i`` is better and is correct when
    ``ref[i] > ref[j]``.

    Parameters
    ----------
    i, j : array_like of int
        First and second candidate of each comparison (indices into ``ref``).
    p : array_like of float
        P(first better).
    ref : array_like of float
        Reference score of every candidate of the context.
    tau : float
        Decision threshold (eq. 10).

    Returns
    -------
    tuple of (float, int)
        ``(accuracy, n_pairs_used)``; accuracy is NaN when no pair is usable.

    Raises
    ------
    LengthMismatchError
        ``i``, ``j``, ``p`` not aligned.
    InputError
        An index outside ``ref``, ``p`` not a probability, ``tau`` not in (0, 1).
    """
    r = np.asarray(ref, dtype=np.float64).reshape(-1)
    ii, jj, pp = as_comparisons(i, j, p, len(r))
    y = decisions(pp, tau)
    ri, rj = r[ii], r[jj]
    usable = (ri != rj) & ~np.isnan(ri) & ~np.isnan(rj)
    n_used = int(usable.sum())
    if n_used == 0:
        return float("nan"), 0
    correct = y[usable] == (ri[usable] > rj[usable])
    return float(correct.mean()), n_used

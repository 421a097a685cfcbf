"""Agreement statistics on class codes: confusion matrices, Cohen's kappa (Cohen 1960) and the
percentile-bootstrap intervals of accuracy, kappa and a mean correlation (``scipy.stats.bootstrap``).

Classes are codes relative to each unordered pair's canonical order ``x < y``: ``0`` = x better,
``1`` = y better, ``2`` = tie (:data:`CLASS_NAMES`). ``agreement`` builds the codes from human and
LLM verdicts; ``compare``, ``campaigns`` and ``panel`` use the kappa.

Pure numpy/scipy: this module must never read or write storage or import a UI.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .errors import InputError, LengthMismatchError
from .types import FloatArray, IntArray

__all__ = ["CLASS_NAMES", "N_CLASSES", "X_BETTER", "Y_BETTER", "TIE_CODE", "AGREEMENT_BOOT",
           "INTERVAL_LEVEL", "confusion_matrix", "cohen_kappa", "bootstrap_interval",
           "agreement_intervals", "correlation_interval"]

#: Class names of codes 0, 1, 2 (relative to the canonical order x < y of each pair).
CLASS_NAMES: tuple[str, ...] = ("first-listed better", "second-listed better", "tie")
N_CLASSES = len(CLASS_NAMES)
X_BETTER, Y_BETTER, TIE_CODE = 0, 1, 2

#: Bootstrap resamples behind every agreement interval (percentile intervals, scipy).
AGREEMENT_BOOT = 1000
#: Coverage of the agreement intervals.
INTERVAL_LEVEL = 0.95


# ----------------------------------------------------------------------------- agreement math

def _codes(labels: ArrayLike, name: str) -> IntArray:
    arr = np.asarray(labels).reshape(-1)
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise InputError(f"{name} must hold integer class codes 0..{N_CLASSES - 1}")
    arr = arr.astype(np.int64)
    if (arr.min() < 0 or arr.max() >= N_CLASSES):
        raise InputError(f"{name} must hold class codes 0..{N_CLASSES - 1}, found {int(arr.min())}"
                         f"..{int(arr.max())}")
    return arr


def confusion_matrix(rows: ArrayLike, cols: ArrayLike) -> IntArray:
    """3 x 3 counts ``C[r, c]`` of items with row class ``r`` and column class ``c`` (codes 0-2).

    Raises
    ------
    LengthMismatchError
        If the label arrays differ in length.
    InputError
        If a code is outside 0..2.
    """
    r, c = _codes(rows, "rows"), _codes(cols, "cols")
    if len(r) != len(c):
        raise LengthMismatchError(f"confusion matrix: {len(r)} row labels but {len(c)} column labels")
    return np.bincount(r * N_CLASSES + c, minlength=N_CLASSES ** 2).reshape(N_CLASSES, N_CLASSES)


def _kappa_from_confusion(conf: IntArray) -> float:
    n = conf.sum()
    if n == 0:
        return float("nan")
    p_o = np.trace(conf) / n
    p_e = float(conf.sum(axis=1) @ conf.sum(axis=0)) / n ** 2
    if p_e >= 1.0:
        return float("nan")  # both raters constant and equal: chance explains everything
    return float((p_o - p_e) / (1.0 - p_e))


def cohen_kappa(a: ArrayLike, b: ArrayLike) -> float:
    """Cohen's kappa ``(p_o - p_e) / (1 - p_e)`` of two raters on the same items (Cohen 1960).

    ``p_o`` is the observed share of agreement and ``p_e = sum_k (n_ak / n)(n_bk / n)`` the
    agreement expected by chance from each rater's class frequencies.

    Parameters
    ----------
    a, b : array_like of int
        Class codes 0..2 of each item by each rater.

    Returns
    -------
    float
        NaN when there are no items or both raters give one and the same class to every item
        (``p_e = 1``; scikit-learn's ``cohen_kappa_score`` is NaN there too).

    Raises
    ------
    LengthMismatchError, InputError
        As :func:`confusion_matrix`.
    """
    return _kappa_from_confusion(confusion_matrix(a, b))


def bootstrap_interval(statistic, data: Sequence[ArrayLike], *, n_boot: int = AGREEMENT_BOOT,
                       level: float = INTERVAL_LEVEL, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval (Efron 1979) of ``statistic`` over paired observations.

    ``data`` are aligned arrays (one entry per observation: a pair, or a context); each
    resample draws observations with replacement, keeping them paired
    (``scipy.stats.bootstrap``, ``paired=True``, vectorised). Resamples where the statistic is
    undefined (NaN, e.g. a kappa whose raters are constant) are left out of the percentiles.

    Returns
    -------
    tuple of float
        ``(low, high)``; NaN when there are fewer than 2 observations or no resample gives a
        value.

    Raises
    ------
    InputError
        ``n_boot < 1`` or ``level`` outside (0, 1).
    """
    from scipy.stats import bootstrap

    if int(n_boot) < 1 or not 0.0 < level < 1.0:
        raise InputError(f"a bootstrap needs n_boot >= 1 and a level in (0, 1), got n_boot="
                         f"{n_boot}, level={level}")
    arrays = [np.asarray(a).reshape(-1) for a in data]
    nan = float("nan")
    if not arrays or len(arrays[0]) < 2:
        return nan, nan
    import warnings

    from scipy.stats import DegenerateDataWarning

    with warnings.catch_warnings():
        # all resamples alike (e.g. every pair agrees): the interval is that value, as it should
        warnings.simplefilter("ignore", DegenerateDataWarning)
        res = bootstrap(arrays, statistic, n_resamples=int(n_boot), paired=True,
                        vectorized=True, confidence_level=level, method="percentile", batch=200,
                        rng=np.random.default_rng(seed))
    dist = np.asarray(res.bootstrap_distribution, dtype=np.float64)
    dist = dist[np.isfinite(dist)]
    if len(dist) == 0:
        return nan, nan
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(dist, [tail, 100.0 - tail])
    return float(low), float(high)


def _accuracy_stat(h: IntArray, llm: IntArray, axis: int = -1) -> FloatArray:
    """Share of items on which the two label arrays agree, along ``axis`` (vectorised)."""
    return np.mean(h == llm, axis=axis)


def _kappa_stat(h: IntArray, llm: IntArray, axis: int = -1) -> FloatArray:
    """Cohen's kappa (Cohen 1960) along ``axis``: ``(p_o - p_e) / (1 - p_e)`` with ``p_e =
    sum_k`` of the two raters' shares of class ``k``; NaN where ``p_e = 1``."""
    p_o = np.mean(h == llm, axis=axis)
    p_e = sum(np.mean(h == k, axis=axis) * np.mean(llm == k, axis=axis) for k in range(N_CLASSES))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(p_e < 1.0, (p_o - p_e) / np.where(p_e < 1.0, 1.0 - p_e, 1.0), np.nan)


def agreement_intervals(human_label: ArrayLike, llm_label: ArrayLike, *,
                        n_boot: int = AGREEMENT_BOOT, level: float = INTERVAL_LEVEL,
                        seed: int = 0) -> dict[str, tuple[float, float]]:
    """95% percentile bootstrap intervals of the accuracy and Cohen's kappa of two label arrays,
    resampling the scored pairs (:func:`bootstrap_interval`), with and without the pairs the
    humans called a tie (as :class:`AgreementScores` reports them).

    Returns
    -------
    dict
        ``accuracy_with_ties``, ``kappa_with_ties``, ``accuracy_without_ties``,
        ``kappa_without_ties`` -> ``(low, high)``.

    Raises
    ------
    LengthMismatchError, InputError
        As :func:`confusion_matrix`; a bad ``n_boot`` or ``level``.
    """
    h, llm = _codes(human_label, "human labels"), _codes(llm_label, "LLM labels")
    if len(h) != len(llm):
        raise LengthMismatchError(f"{len(h)} human labels but {len(llm)} LLM labels")
    keep = h != TIE_CODE
    out = {}
    for suffix, (a, b) in (("with_ties", (h, llm)), ("without_ties", (h[keep], llm[keep]))):
        out[f"accuracy_{suffix}"] = bootstrap_interval(_accuracy_stat, (a, b), n_boot=n_boot,
                                                       level=level, seed=seed)
        out[f"kappa_{suffix}"] = bootstrap_interval(_kappa_stat, (a, b), n_boot=n_boot,
                                                    level=level, seed=seed)
    return out


def correlation_interval(per_context: ArrayLike, *, n_boot: int = AGREEMENT_BOOT,
                         level: float = INTERVAL_LEVEL, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of a mean per-context correlation x100 (§4 of Liusie et
    al. 2024), resampling the contexts; contexts whose correlation is undefined are left out."""
    values = np.asarray(per_context, dtype=np.float64).reshape(-1)
    values = 100.0 * values[np.isfinite(values)]
    return bootstrap_interval(lambda v, axis=-1: np.mean(v, axis=axis), (values,),
                              n_boot=n_boot, level=level, seed=seed)



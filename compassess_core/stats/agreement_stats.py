"""Agreement statistics on class codes: confusion matrices, Cohen's kappa (Cohen 1960), its
symmetrised form for unordered pairs, Krippendorff's alpha on the same coding, and the intervals:
one two-stage cluster bootstrap (contexts, then pairs within them) for every figure over labelled
pairs, and a percentile bootstrap of a mean correlation over contexts.

Classes are codes relative to each unordered pair's canonical order ``x < y``: ``0`` = x better,
``1`` = y better, ``2`` = tie (:data:`CLASS_NAMES`). ``agreement`` builds the codes from human and
LLM verdicts; ``campaigns`` and ``panel`` use the pair kappa and alpha.

**Symmetrised coding (why and what).** Which candidate of a pair is "x" is an accident of its
name, so a statistic over these codes must not change when the two are swapped. Accuracy (raw
agreement) does not; Cohen's kappa and Krippendorff's alpha do, because their chance term reads
each rater's class marginals ("x better" 60%, "y better" 40% only says how the ids happen to
sort). :func:`pair_kappa` and :func:`pair_alpha` count every pair in both orientations (each code
once as it is and once with "x better" and "y better" swapped, ties kept). The marginals of the
doubled data are symmetric, so a renaming (or any reordering) of candidates cannot change them.
The chance model this gives: each rater calls a tie at their observed tie rate and otherwise
picks either candidate with probability 1/2, so ``p_e = d_1 d_2 / 2 + t_1 t_2`` (``d`` decisive
share, ``t`` tie share of each rater); without ties ``p_e = 1/2`` and ``kappa = 2 p_o - 1``.
Agreement coded by displayed position (A/B as shown: ``compare``'s two judges on the same ordered
pairs) is a different question, with real position marginals; it keeps the classic
:func:`cohen_kappa`.

Pure numpy/scipy: this module must never read or write storage or import a UI.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InputError, LengthMismatchError
from ..limits import check_bootstrap
from ..types import FloatArray, IntArray

__all__ = ["CLASS_NAMES", "N_CLASSES", "X_BETTER", "Y_BETTER", "TIE_CODE", "AGREEMENT_BOOT",
           "INTERVAL_LEVEL", "confusion_matrix", "cohen_kappa", "swap_sides", "pair_kappa",
           "pair_kappa_from_confusion", "pair_alpha", "symmetric_counts", "context_draws",
           "within_contexts", "cluster_multiplicity", "cluster_weights", "weighted_median",
           "percentile_of", "weighted_agreement", "bootstrap_interval", "agreement_intervals", "correlation_interval",
           "CLUSTER_METHOD"]

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


#: Swaps "x better" and "y better" (codes 0 and 1), keeps "tie" (2): the other orientation.
_SWAP = np.array([Y_BETTER, X_BETTER, TIE_CODE], dtype=np.int64)


def swap_sides(codes: ArrayLike) -> np.ndarray:
    """The codes as the other orientation of each pair reads them: 0 and 1 swapped, 2 (tie) and
    NaN (missing) kept; float input stays float (a reliability matrix with NaN)."""
    arr = np.asarray(codes)
    if arr.dtype.kind == "f":
        out = arr.copy()
        out[arr == X_BETTER] = Y_BETTER
        out[arr == Y_BETTER] = X_BETTER
        return out
    return _SWAP[_codes(arr, "codes").reshape(arr.shape)] if arr.size else arr.astype(np.int64)


def pair_kappa_from_confusion(conf: IntArray) -> float:
    """Cohen's kappa of the symmetrised confusion matrix ``C + S C S`` (``S`` swaps the classes
    x better / y better): every pair counted in both orientations (see the module docstring).

    Equal to :func:`cohen_kappa` on the doubled data (each item once as coded, once swapped),
    whose chance agreement is ``p_e = d_1 d_2 / 2 + t_1 t_2``. NaN without items, or when both
    raters call every pair a tie."""
    conf = np.asarray(conf)
    sym = conf + conf[np.ix_(_SWAP, _SWAP)]
    return _kappa_from_confusion(sym)


def pair_kappa(a: ArrayLike, b: ArrayLike) -> float:
    """Cohen's kappa of two raters on unordered pairs, invariant to the names and the order of
    the two candidates: kappa on the pairs counted in both orientations
    (:func:`pair_kappa_from_confusion`; Cohen 1960 on the doubled data).

    Parameters
    ----------
    a, b : array_like of int
        Class codes 0..2 (x better, y better, tie) of each pair by each rater.

    Raises
    ------
    LengthMismatchError, InputError
        As :func:`confusion_matrix`.
    """
    return pair_kappa_from_confusion(confusion_matrix(a, b))


def pair_alpha(reliability_data: ArrayLike) -> float:
    """Krippendorff's nominal alpha (Krippendorff 2011; the ``krippendorff`` package) of a raters
    x pairs matrix of codes (NaN: not rated), every pair counted in both orientations (the
    matrix side by side with :func:`swap_sides` of it), so renaming candidates cannot change it.

    Returns
    -------
    float
        NaN when no pair has two ratings or only one class occurs.
    """
    import krippendorff  # lazily: only the alpha needs it

    data = np.asarray(reliability_data, dtype=np.float64)
    if data.ndim != 2 or data.shape[1] == 0:
        return float("nan")
    doubled = np.concatenate([data, swap_sides(data)], axis=1)
    try:
        return float(krippendorff.alpha(reliability_data=doubled, level_of_measurement="nominal"))
    except ValueError:
        return float("nan")  # one class only, or nothing pairable: alpha is undefined


def symmetric_counts(counts: ArrayLike) -> FloatArray:
    """An items x classes count table with every item added again in the other orientation
    (columns x better and y better swapped): what Fleiss' kappa reads for unordered pairs."""
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim != 2 or c.shape[1] < 2:
        return c
    swapped = c.copy()
    swapped[:, [X_BETTER, Y_BETTER]] = c[:, [Y_BETTER, X_BETTER]]
    return np.concatenate([c, swapped], axis=0)


# ----------------------------------------------------------------------------- cluster bootstrap

#: How every interval over labelled pairs is drawn, in words for pages, CLI and report.
CLUSTER_METHOD = ("two-stage cluster bootstrap: contexts resampled with replacement, then the "
                  "pairs within each context drawn; percentile interval")


def context_draws(n_contexts: int, n_boot: int,
                  rng: np.random.Generator) -> IntArray:
    """First stage of the cluster bootstrap: how often each of ``n_contexts`` contexts is drawn
    in each of ``n_boot`` replicates (``n_contexts`` draws with replacement), ``(n_boot, C)``."""
    check_bootstrap(n_boot)
    if n_contexts < 1:
        raise InputError("a bootstrap over contexts needs at least one context")
    return rng.multinomial(n_contexts, np.full(n_contexts, 1.0 / n_contexts), size=int(n_boot))


def within_contexts(context: ArrayLike, draws: IntArray, rng: np.random.Generator) -> IntArray:
    """Second stage: copies of each item in each replicate, given the first stage's ``draws``.

    A context drawn ``c`` times with ``m`` items contributes ``c`` independent draws of ``m``
    items with replacement, i.e. one multinomial draw of ``c * m`` over its items (Davison &
    Hinkley 1997, "Bootstrap Methods and their Application", §3.8: resampling at both stages when
    the clusters are few). One vectorised draw per context, over all replicates.

    Returns
    -------
    IntArray
        ``(n_boot, len(context))``.
    """
    context = np.asarray(context, dtype=np.int64).reshape(-1)
    draws = np.asarray(draws, dtype=np.int64)
    out = np.zeros((len(draws), len(context)), dtype=np.int64)
    for k in range(draws.shape[1]):
        members = np.flatnonzero(context == k)
        if len(members):
            out[:, members] = rng.multinomial(draws[:, k] * len(members),
                                              np.full(len(members), 1.0 / len(members)))
    return out


def cluster_multiplicity(context: ArrayLike, n_contexts: int, n_boot: int,
                         seed: int | np.random.Generator = 0) -> IntArray:
    """Replicates of the two-stage cluster bootstrap (:func:`context_draws`, then
    :func:`within_contexts`), as copies of each item: the one resampling behind every interval
    over labelled pairs and the leaderboard's.

    Parameters
    ----------
    context : array_like of int
        The context index (``0..n_contexts-1``) of each item.

    Returns
    -------
    IntArray
        Shape ``(n_boot, len(context))``.

    Raises
    ------
    InputError
        ``n_boot < 1`` or no context.
    """
    rng = np.random.default_rng(seed)
    return within_contexts(context, context_draws(n_contexts, n_boot, rng), rng)


def cluster_weights(contexts: ArrayLike | None, n: int, n_boot: int,
                    seed: int | np.random.Generator = 0) -> IntArray:
    """:func:`cluster_multiplicity` for ``n`` items labelled by ``contexts`` (any hashable ids);
    ``None`` makes every item its own context (the plain bootstrap of the items)."""
    if contexts is None:  # one item per context: one multinomial draw per replicate
        if int(n_boot) < 1 or n < 1:
            raise InputError(f"a bootstrap needs n_boot >= 1 and an item, got n_boot={n_boot}, "
                             f"{n} item(s)")
        return np.random.default_rng(seed).multinomial(n, np.full(n, 1.0 / n), size=int(n_boot))
    else:
        ids = np.asarray(contexts, dtype=object).reshape(-1)
        if len(ids) != n:
            raise LengthMismatchError(f"{len(ids)} context ids for {n} items")
        _, index = np.unique(ids.astype(str), return_inverse=True)
    n_ctx = int(index.max()) + 1 if n else 0
    return cluster_multiplicity(index, max(n_ctx, 1), n_boot, seed)


def weighted_median(values: ArrayLike, weights: IntArray, *, batch: int = 100) -> FloatArray:
    """``np.median`` of each replicate's multiset (``weights[b, k]`` copies of ``values[k]``),
    vectorised: for an even count the midpoint of the two middle values, as ``np.median``.
    NaN for an empty replicate."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    w = np.asarray(weights, dtype=np.int64)
    order = np.argsort(v, kind="stable")
    sv = v[order]
    out = np.full(len(w), np.nan)
    for start in range(0, len(w), batch):
        cum = np.cumsum(w[start:start + batch, order], axis=1)
        total = cum[:, -1] if cum.shape[1] else np.zeros(len(cum), dtype=np.int64)
        lo_k = (total - 1) // 2
        hi_k = total // 2
        lo = np.minimum((cum <= lo_k[:, None]).sum(axis=1), len(sv) - 1)
        hi = np.minimum((cum <= hi_k[:, None]).sum(axis=1), len(sv) - 1)
        med = 0.5 * (sv[lo] + sv[hi]) if len(sv) else np.full(len(cum), np.nan)
        out[start:start + batch] = np.where(total > 0, med, np.nan)
    return out


def percentile_of(replicates: ArrayLike, level: float = INTERVAL_LEVEL) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates (Efron 1979), undefined ones (NaN) left out;
    ``(nan, nan)`` when none is defined."""
    dist = np.asarray(replicates, dtype=np.float64).reshape(-1)
    dist = dist[np.isfinite(dist)]
    if len(dist) == 0:
        return float("nan"), float("nan")
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(dist, [tail, 100.0 - tail])
    return float(low), float(high)


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


def weighted_agreement(human_label: IntArray, llm_label: IntArray,
                       weights: ArrayLike) -> dict[str, FloatArray]:
    """Accuracy (raw agreement) and the pair kappa (:func:`pair_kappa`) of every replicate, with
    and without ties, vectorised: ``weights[b, k]`` copies of pair ``k`` in replicate ``b``.

    ``llm_label`` is one label per pair, or one row per replicate (verdicts re-derived in each
    replicate, e.g. at a re-estimated tau*). "Without ties" leaves out a pair where either side
    says tie, as MT-Bench's agreement without ties does (Zheng et al. 2023). NaN for a
    replicate with no pair left.
    """
    h = np.asarray(human_label, dtype=np.int64)
    llm = np.asarray(llm_label, dtype=np.int64)
    w = np.asarray(weights, dtype=np.float64)
    agree = (h == llm)
    tie_h = np.broadcast_to(h == TIE_CODE, w.shape)
    tie_l = np.broadcast_to(llm == TIE_CODE, w.shape)
    out = {}
    for suffix, ww in (("with_ties", w), ("without_ties", w * ~(tie_h | tie_l))):
        total = ww.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            p_o = (ww * agree).sum(axis=1) / total
            t_h = (ww * tie_h).sum(axis=1) / total
            t_l = (ww * tie_l).sum(axis=1) / total
            # chance agreement of the symmetrised coding (module docstring)
            p_e = (1.0 - t_h) * (1.0 - t_l) / 2.0 + t_h * t_l
            kappa = np.where(p_e < 1.0, (p_o - p_e) / np.where(p_e < 1.0, 1.0 - p_e, 1.0),
                             np.nan)
        out[f"accuracy_{suffix}"] = np.where(total > 0, p_o, np.nan)
        out[f"kappa_{suffix}"] = np.where(total > 0, kappa, np.nan)
    return out


def agreement_intervals(human_label: ArrayLike, llm_label: ArrayLike,
                        contexts: ArrayLike | None = None, *, n_boot: int = AGREEMENT_BOOT,
                        level: float = INTERVAL_LEVEL, seed: int = 0,
                        multiplicity: ArrayLike | None = None) -> dict[str, tuple[float, float]]:
    """95% intervals of the accuracy and the pair kappa of two label arrays, with and without
    ties (:func:`weighted_agreement`), by the two-stage cluster bootstrap over ``contexts``
    (:func:`cluster_weights`; ``None``: every pair its own context, the plain pair bootstrap).

    Parameters
    ----------
    human_label : array_like of int
        Codes 0..2 of the pairs.
    llm_label : array_like of int
        Codes 0..2, one per pair, or ``(n_boot, n)`` when the verdicts are re-derived in each
        replicate; then ``multiplicity`` gives the replicates they were derived for.
    multiplicity : array_like of int, optional
        ``(n_boot, n)`` copies of each pair in each replicate (:func:`cluster_multiplicity`);
        drawn here when not given.

    Returns
    -------
    dict
        ``accuracy_with_ties``, ``kappa_with_ties``, ``accuracy_without_ties``,
        ``kappa_without_ties`` -> ``(low, high)``; NaN with fewer than 2 pairs.

    Raises
    ------
    LengthMismatchError, InputError
        Labels of different lengths, codes outside 0..2, a bad ``n_boot`` or ``level``.
    """
    h = _codes(human_label, "human labels")
    llm_arr = np.asarray(llm_label)
    llm = _codes(llm_arr, "LLM labels").reshape(llm_arr.shape) if llm_arr.size else llm_arr
    if llm.shape[-1:] != h.shape:
        raise LengthMismatchError(f"{len(h)} human labels but {llm.shape[-1]} LLM labels")
    if int(n_boot) < 1 or not 0.0 < level < 1.0:
        raise InputError(f"a bootstrap needs n_boot >= 1 and a level in (0, 1), got n_boot="
                         f"{n_boot}, level={level}")
    names = ("accuracy_with_ties", "kappa_with_ties", "accuracy_without_ties",
             "kappa_without_ties")
    nan = (float("nan"), float("nan"))
    if len(h) < 2:
        return {k: nan for k in names}
    w = (cluster_weights(contexts, len(h), n_boot, seed) if multiplicity is None
         else np.asarray(multiplicity, dtype=np.int64))
    if w.shape[1] != len(h) or (llm.ndim == 2 and llm.shape[0] != w.shape[0]):
        raise LengthMismatchError(f"replicates of shape {w.shape} do not fit {len(h)} pairs and "
                                  f"LLM labels of shape {llm.shape}")
    reps = weighted_agreement(h, llm, w)
    return {k: percentile_of(reps[k], level) for k in names}


def correlation_interval(per_context: ArrayLike, *, n_boot: int = AGREEMENT_BOOT,
                         level: float = INTERVAL_LEVEL, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of a mean per-context correlation x100 (§4 of Liusie et
    al. 2024), resampling the contexts; contexts whose correlation is undefined are left out."""
    values = np.asarray(per_context, dtype=np.float64).reshape(-1)
    values = 100.0 * values[np.isfinite(values)]
    return bootstrap_interval(lambda v, axis=-1: np.mean(v, axis=axis), (values,),
                              n_boot=n_boot, level=level, seed=seed)



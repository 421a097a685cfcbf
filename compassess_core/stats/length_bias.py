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
* :func:`alpaca_eval_lc_win_rates`: AlpacaEval 2.0's length-controlled win rate against one
  baseline system, computed as its package does (``alpaca_eval/metrics/glm_winrate.py``): one L1,
  5-fold cross-validated GLM per system with ``tanh(std_delta_len)`` and the instruction
  difficulty of :func:`instruction_difficulty`, regularised toward the baseline only when the
  run holds verbose and concise rewrites of it (see :data:`LC_ESTIMATOR`);
* :func:`length_controlled_strengths`: CompAssess's own joint length-adjusted GLM (not
  AlpacaEval's estimator)
  ``logit p_k = theta_{s(A_k)} - theta_{s(B_k)} + gamma * tanh(d_k / sd(d)) + b`` with
  ``d_k = log(len_A / len_B)``, fitted to the judge's soft outcomes; the length-controlled
  strength is ``theta`` and the length-controlled win rate against the field is the model's
  prediction with the length term (and the position term) set to zero. AlpacaEval 2.0 fits
  ``logit p = (model term) + gamma * tanh(std_delta_len) + (instruction difficulty)`` per
  model against one baseline and averages the prediction at ``delta_len = 0``
  (``alpaca_eval/metrics/glm_winrate.py``); here every system meets every other in the same
  model, as in Bradley-Terry, so a per-context difficulty cancels in ``theta_s - theta_t`` and the
  judge's position preference is a covariate (the intercept ``b``) instead of a threshold.

Lengths are in characters (as AlpacaEval's ``str.len()``). numpy, scipy and scikit-learn only:
this module must never read or write storage or know about the UI.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from .bias import as_probabilities, decisions
from ..errors import InputError, LengthMismatchError
from .solvers import fit_soft_logistic
from ..types import FloatArray

__all__ = [
    "BaselineAnnotations",
    "baseline_annotations",
    "fit_soft_l1_cv",
    "instruction_difficulty",
    "AlpacaEvalLC",
    "alpaca_eval_lc_win_rates",
    "LC_ESTIMATOR",
    "LC_ESTIMATOR_REGULARISED",
    "is_gamed_baseline",
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
    (the Bradley-Terry probability of Bradley & Terry 1952 in log-odds units). NaN for a system
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
    """System strengths with the length preference of the judge held out: CompAssess's joint
    length-adjusted GLM after Dubois et al. 2024's length feature, not AlpacaEval's estimator
    (that is :func:`alpaca_eval_lc_win_rates`).

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


# ---------------------------------------------------------------- AlpacaEval 2.0's estimator
#: Cross-validation folds and the solver's seed of AlpacaEval 2.0's GLM fit
#: (``fit_LogisticRegressionCV(..., n_splits=5)`` with ``random_state=123`` in
#: ``alpaca_eval/metrics/glm_winrate.py``).
LC_FOLDS = 5
LC_SEED = 123

#: What :func:`alpaca_eval_lc_win_rates` computes, for labels (the estimator's honest name).
LC_ESTIMATOR = ("AlpacaEval 2.0's length-controlled GLM per system against the baseline "
                "(alpaca_eval's glm_winrate: tanh of the standardised length difference + "
                "instruction difficulty, L1, 5-fold cross-validated), without its regularisation "
                "toward the baseline, which needs the judge's verdicts on verbose and concise "
                "rewrites of the baseline (their length_controlled_noreg; systems named like "
                "BASELINE_verbose and BASELINE_concise turn it on); instruction difficulty "
                "estimated from this run")
#: :data:`LC_ESTIMATOR` when the run holds verbose and concise rewrites of the baseline.
LC_ESTIMATOR_REGULARISED = (
    "AlpacaEval 2.0's length-controlled GLM per system against the baseline (alpaca_eval's "
    "glm_winrate length_controlled_v1: tanh of the standardised length difference + "
    "instruction difficulty, L1, 5-fold cross-validated, regularised toward the baseline by "
    "the judge's verdicts on the run's verbose and concise rewrites of it); instruction "
    "difficulty estimated from this run")


@dataclass(frozen=True)
class BaselineAnnotations:
    """A run's comparisons with one baseline system, as AlpacaEval's annotations: one row per
    (system, context) where the system met the baseline.

    Attributes
    ----------
    system, context : IntArray
        System (never the baseline) and context index of each row.
    preference : FloatArray
        P(the system's text is better than the baseline's), mean over that context's comparisons
        of the two (both orders): AlpacaEval's ``preference - 1`` in [0, 1].
    len_baseline, len_system : FloatArray
        Lengths (characters) of the two texts (means when a system has several in the context):
        AlpacaEval's ``output_1`` and ``output_2``.
    """

    system: np.ndarray
    context: np.ndarray
    preference: FloatArray
    len_baseline: FloatArray
    len_system: FloatArray


def baseline_annotations(i: ArrayLike, j: ArrayLike, p: ArrayLike, context: ArrayLike,
                         len_a: ArrayLike, len_b: ArrayLike, baseline: int) -> BaselineAnnotations:
    """The comparisons that involve ``baseline``, one row per (system, context) (see
    :class:`BaselineAnnotations`), in (system, context) order. ``p`` is P(A better) (eq. 3),
    debiased by the caller if wanted; a comparison with the baseline in position A counts with
    ``1 - p``."""
    ii = np.asarray(i, dtype=np.int64).reshape(-1)
    jj = np.asarray(j, dtype=np.int64).reshape(-1)
    cc = np.asarray(context, dtype=np.int64).reshape(-1)
    la, lb, pp = _aligned_lengths(len_a, len_b, p)
    if not (len(ii) == len(jj) == len(cc) == len(pp)):
        raise LengthMismatchError(f"i ({len(ii)}), j ({len(jj)}), context ({len(cc)}) and p "
                                  f"({len(pp)}) must be aligned")
    base_a, base_b = ii == baseline, jj == baseline
    keep = base_a ^ base_b
    system = np.where(base_a, jj, ii)[keep]
    pref = np.where(base_a, 1.0 - pp, pp)[keep]
    l_base = np.where(base_a, la, lb)[keep]
    l_sys = np.where(base_a, lb, la)[keep]
    keys, inverse = np.unique(np.column_stack([system, cc[keep]]), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    count = np.bincount(inverse, minlength=len(keys)).astype(np.float64)

    def mean(x: FloatArray) -> FloatArray:
        return np.bincount(inverse, weights=x, minlength=len(keys)) / count

    return BaselineAnnotations(keys[:, 0], keys[:, 1], mean(pref), mean(l_base), mean(l_sys))


def _soft_log_loss(y_true, y_pred, true_prob, true_sample_weight=None) -> float:
    """AlpacaEval's cross-validation score (``logloss_continuous``): the log loss of the soft
    preference, each original row counted once per duplicate (see :func:`fit_soft_l1_cv`)."""
    y = np.where(np.asarray(y_true) == 1, true_prob, 1.0 - np.asarray(true_prob))
    q = np.clip(np.asarray(y_pred, dtype=np.float64), 1e-15, 1 - 1e-15)
    loss = y * np.log(q) + (1.0 - y) * np.log(1.0 - q)
    if true_sample_weight is not None:
        loss = loss * np.asarray(true_sample_weight)
    return float(-np.mean(loss))


def fit_soft_l1_cv(design: FloatArray, preference: FloatArray,
                   weight: FloatArray | None = None, folds: int = LC_FOLDS) -> FloatArray:
    """AlpacaEval 2.0's GLM fit: an L1 logistic regression without intercept of a soft
    preference, its penalty picked by ``folds``-fold cross-validation (scikit-learn's
    ``LogisticRegressionCV``, liblinear, 10 penalties on a log grid from 1e-4 to 1e4, seed 123),
    exactly as ``fit_LogisticRegressionCV(is_ytrue_proba=True)`` of
    ``alpaca_eval/metrics/glm_winrate.py``: each row appears twice, once as a win weighted by
    its preference and once as a loss weighted by one minus it, both in one fold.

    ``design`` may be a scipy sparse matrix (the joint fit's one-hot columns): liblinear then
    reads it as it is, with the same result as the dense matrix and a fraction of the time.

    Returns the coefficients, one per column of ``design``.
    """
    import scipy.sparse as sparse
    import sklearn
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import GroupKFold

    y = np.asarray(preference, dtype=np.float64)
    m = len(y)
    if sparse.issparse(design):
        x = sparse.csr_matrix(design, dtype=np.float64)
        doubled = sparse.vstack([x, x], format="csr")
    else:
        x = np.asarray(design, dtype=np.float64)
        doubled = np.vstack([x, x])
    label = np.r_[np.ones(m, dtype=np.int64), np.zeros(m, dtype=np.int64)]
    prob = np.r_[y, 1.0 - y]
    true_weight = None if weight is None else np.r_[weight, weight].astype(np.float64)
    groups = np.r_[np.arange(m), np.arange(m)]
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = make_scorer(_soft_log_loss, response_method="predict_proba",
                             greater_is_better=False).set_score_request(
                                 true_sample_weight=True, true_prob=True)
        model = LogisticRegressionCV(cv=GroupKFold(n_splits=folds), scoring=scorer,
                                     l1_ratios=(1.0,), solver="liblinear", dual=False,
                                     fit_intercept=False, random_state=LC_SEED,
                                     use_legacy_attributes=False)
        model.set_fit_request(sample_weight=True)
        model.fit(doubled, label, sample_weight=prob if true_weight is None else prob * true_weight,
                  groups=groups, true_sample_weight=true_weight, true_prob=prob)
    return np.asarray(model.coef_, dtype=np.float64).reshape(-1)


def _std_delta_len(len_baseline: FloatArray, len_system: FloatArray) -> FloatArray:
    """AlpacaEval's ``std_delta_len``: ``(len_1 - len_2) / std(len_1 - len_2)`` (sample standard
    deviation, no centring; output_1 is the baseline); 0 where the differences do not vary."""
    d = np.asarray(len_baseline, dtype=np.float64) - np.asarray(len_system, dtype=np.float64)
    sd = float(d.std(ddof=1)) if len(d) > 1 else 0.0
    return d / sd if sd > 0 else np.zeros_like(d)


def instruction_difficulty(ann: BaselineAnnotations, n_contexts: int,
                           gamed: ArrayLike | None = None) -> FloatArray:
    """Per-context difficulty: AlpacaEval 2.0's joint GLM of every system against the baseline
    (``notebooks/instruction_difficulty.ipynb`` of alpaca_eval, ``joint_formula``):
    ``logit pref = a_m + b_m tanh(delta_len / sd_m) + d_c``, one bias ``a_m`` and length slope
    ``b_m`` per system, one effect ``d_c`` per context (the first context in index order at 0,
    dummy coding) and the all-ones ``not_gamed_baseline`` column, fitted by
    :func:`fit_soft_l1_cv`; ``d`` is the instruction difficulty. ``sd_m`` is the sample standard
    deviation of system ``m``'s length differences; ``not_gamed_baseline`` is 0 on the rows of
    a system flagged in ``gamed`` (a rewrite of the baseline, :func:`is_gamed_baseline`). NaN for
    a context without a row. The
    baseline's comparisons with itself (all ties), which AlpacaEval's notebook includes, do not
    exist in a run and are not made up.
    """
    systems = np.unique(ann.system)
    ctx = np.unique(ann.context)
    m = len(ann.preference)
    s_idx = np.searchsorted(systems, ann.system)
    c_idx = np.searchsorted(ctx, ann.context)
    feature = np.zeros(m)
    for k in range(len(systems)):  # one standardisation per system (a handful of systems)
        rows = s_idx == k
        feature[rows] = np.tanh(_std_delta_len(ann.len_baseline[rows], ann.len_system[rows]))
    ns, nc = len(systems), len(ctx)
    # patsy's column order for the formula: system dummies, context dummies (reduced),
    # system x tanh(length), not_gamed_baseline. Sparse: one context column per row.
    import scipy.sparse as sparse

    rows = np.arange(m)
    has_ctx = c_idx > 0
    r = np.concatenate([rows, rows[has_ctx], rows, rows])
    c = np.concatenate([s_idx, ns + c_idx[has_ctx] - 1, ns + nc - 1 + s_idx,
                        np.full(m, 2 * ns + nc - 1)])
    not_gamed = (np.ones(m) if gamed is None
                 else 1.0 - np.asarray(gamed, dtype=bool)[ann.system].astype(np.float64))
    v = np.concatenate([np.ones(m), np.ones(int(has_ctx.sum())), feature, not_gamed])
    design = sparse.csr_matrix((v, (r, c)), shape=(m, 2 * ns + nc))
    coef = fit_soft_l1_cv(design, ann.preference)
    out = np.full(int(n_contexts), np.nan)
    out[ctx] = np.r_[0.0, coef[ns:ns + nc - 1]]
    return out


@dataclass(frozen=True)
class AlpacaEvalLC:
    """AlpacaEval 2.0's length-controlled win rate of every system against one baseline
    (:func:`alpaca_eval_lc_win_rates`); arrays indexed by system.

    Attributes
    ----------
    win_rate : FloatArray
        Length-controlled win rate, a share in [0, 1] (AlpacaEval prints it x100); NaN for the
        baseline, a system that never met it, or one that met it in fewer than
        :data:`LC_FOLDS` contexts (the cross-validation needs one context per fold).
    standard_error : FloatArray
        AlpacaEval's ``lc_standard_error``: the standard error of the mean of the predicted
        preferences over the system's contexts (a share); it ignores the fit's own uncertainty.
    n_contexts : np.ndarray
        Contexts in which the system met the baseline (the GLM's rows).
    length_coef, difficulty_coef, system_coef : FloatArray
        The fitted weights of ``tanh(std_delta_len)``, ``instruction_difficulty`` and
        ``not_gamed_baseline`` (the system's own term), log-odds.
    difficulty : FloatArray
        Instruction difficulty per context (:func:`instruction_difficulty`); all NaN when it
        was not used.
    uses_difficulty : bool
        Whether the GLM has the instruction-difficulty term: only when at least two systems met
        the baseline (with one, it would be that system's own per-context preference).
    estimator : str
        :data:`LC_ESTIMATOR`, or its variant without instruction difficulty.
    """

    win_rate: FloatArray
    standard_error: FloatArray
    n_contexts: np.ndarray
    length_coef: FloatArray
    difficulty_coef: FloatArray
    system_coef: FloatArray
    difficulty: FloatArray
    uses_difficulty: bool
    estimator: str


#: AlpacaEval 2.0's weight of the gamed-baseline rows (``regularize_to_baseline_lambda``), split
#: over its two rewrites (verbose and concise): each such row weighs ``LC_LAMBDA / 2``.
LC_LAMBDA = 0.2


def is_gamed_baseline(system: str, baseline: str) -> bool:
    """AlpacaEval's rule for a rewrite of the baseline (``fn_is_gamed_baseline`` of its
    notebooks): the name holds the baseline's and ``verbose`` or ``concise``."""
    return baseline in system and ("verbose" in system or "concise" in system)


def alpaca_eval_lc_win_rates(n: int, baseline: int, ann: BaselineAnnotations,
                             n_contexts: int, gamed: ArrayLike | None = None) -> AlpacaEvalLC:
    """AlpacaEval 2.0's length-controlled win rate against ``baseline`` (Dubois, Galambosi,
    Liang, Hashimoto 2024, "Length-Controlled AlpacaEval", §3, eq. 2;
    ``get_length_controlled_winrate`` of ``alpaca_eval/metrics/glm_winrate.py``).

    For each system ``m`` on its own rows (the contexts where it met the baseline), the GLM
    ``logit pref = w_len tanh(std_delta_len) + w_diff difficulty_c + w_m`` (no intercept
    beyond ``w_m``, AlpacaEval's ``not_gamed_baseline`` column) is fitted by
    :func:`fit_soft_l1_cv`, with ``std_delta_len = (len_baseline - len_m) / sd`` over ``m``'s
    rows; the length-controlled win rate is the mean over those rows of the prediction at
    ``std_delta_len = 0``: ``mean_c sigmoid(w_m + w_diff difficulty_c)``.

    The instruction difficulty comes from :func:`instruction_difficulty` when at least two
    systems met the baseline; with one, the term is left out (AlpacaEval's
    ``length_controlled_minimal`` formula). AlpacaEval's regularisation toward the baseline
    (``length_controlled_v1``) needs the judge's verdicts on verbose and concise rewrites of the
    baseline: when the run has such systems (``gamed``, a flag per system; the leaderboard
    flags them by :func:`is_gamed_baseline`), their rows join every system's fit with
    ``not_gamed_baseline = 0`` and weight :data:`LC_LAMBDA` / 2, so the length and difficulty
    slopes lean toward the baseline's own; without them the regularisation is not applied
    (``length_controlled_noreg``).

    Raises
    ------
    InputError
        ``baseline`` out of range.
    """
    if not 0 <= int(baseline) < n:
        raise InputError(f"baseline index {baseline} out of range for {n} systems")
    nan = lambda: np.full(n, np.nan)  # noqa: E731
    rate, se, w_len, w_diff, w_sys = nan(), nan(), nan(), nan(), nan()
    counts = np.bincount(ann.system, minlength=n).astype(np.int64)
    flags = np.zeros(n, dtype=bool) if gamed is None else np.asarray(gamed, dtype=bool).copy()
    flags[int(baseline)] = False
    flags &= counts > 0
    fitted = [s for s in range(n) if s != baseline and counts[s] >= LC_FOLDS]
    uses = len(np.unique(ann.system)) >= 2 and bool(fitted)
    difficulty = (instruction_difficulty(ann, n_contexts, flags) if uses
                  else np.full(int(n_contexts), np.nan))
    regularised = uses and bool(flags.any())

    def features(rows: np.ndarray, not_gamed: float) -> FloatArray:
        cols = [np.tanh(_std_delta_len(ann.len_baseline[rows], ann.len_system[rows]))]
        if uses:
            cols.append(difficulty[ann.context[rows]])
        cols.append(np.full(int(rows.sum()), not_gamed))
        return np.column_stack(cols)

    if regularised:  # every rewrite standardised on its own rows, as AlpacaEval's df_gamed
        parts = [features(ann.system == g, 0.0) for g in np.flatnonzero(flags)]
        gamed_x = np.vstack(parts)
        gamed_y = np.concatenate([ann.preference[ann.system == g] for g in np.flatnonzero(flags)])
    for s in fitted:  # one GLM per system, as AlpacaEval (a handful of systems)
        rows = ann.system == s
        own = features(rows, 1.0)
        if regularised:
            coef = fit_soft_l1_cv(np.vstack([gamed_x, own]),
                                  np.concatenate([gamed_y, ann.preference[rows]]),
                                  np.r_[np.full(len(gamed_y), LC_LAMBDA / 2), np.ones(len(own))])
        else:
            coef = fit_soft_l1_cv(own, ann.preference[rows])
        if uses:
            w_len[s], w_diff[s], w_sys[s] = coef
            pred = expit(w_sys[s] + w_diff[s] * difficulty[ann.context[rows]])
        else:
            w_len[s], w_sys[s] = coef
            pred = np.full(len(own), expit(w_sys[s]))
        rate[s] = float(pred.mean())
        se[s] = float(pred.std(ddof=1) / np.sqrt(len(pred))) if len(pred) > 1 else np.nan
    if regularised:
        estimator = LC_ESTIMATOR_REGULARISED
    elif uses:
        estimator = LC_ESTIMATOR
    else:
        estimator = LC_ESTIMATOR.replace(
            "+ instruction difficulty", "(no instruction difficulty: one system met the baseline)"
        ).replace("; instruction difficulty estimated from this run", "")
    counts[baseline] = 0
    return AlpacaEvalLC(rate, se, counts, w_len, w_diff, w_sys, difficulty, uses, estimator)

"""A leaderboard of systems: which system (model, prompt, checkpoint) is best across all contexts of
a run, and how sure we are.

Every comparison of a run is a comparison between the *systems* of its two candidates; pooled over
the contexts, these give one row per system, as Chatbot Arena and AlpacaEval report models
(Chiang et al. 2024, "Chatbot Arena: An Open Platform for Evaluating LLMs by Human Preference",
§5; Dubois et al. 2024, "Length-Controlled AlpacaEval"):

* a strength from any ranking method of :data:`compassess_core.stats.ranking.METHODS` on the system
  comparisons (Bradley-Terry through evalica by default, as the Arena), with the positional
  debiasing of eq. 9-10 of Liusie, Manakul, Gales (EACL 2024) at a threshold tau;
* the win rate against the field: the share of its comparisons a system won (eq. 10 verdicts,
  the win ratio of eq. 6 over systems);
* 95% percentile bootstrap intervals of both that resample *contexts* with replacement, and the
  comparisons within each context drawn (a two-stage cluster bootstrap, the one
  ``agreement_stats.cluster_multiplicity`` every interval over labelled pairs uses too: the
  comparisons of one context share its candidates and are not independent; the Arena resamples
  battles, which are independent there), with tau* re-estimated in every replicate when the
  threshold is the balanced one, and the share of replicates in which each system ranks first;
* comparisons, contexts and the mean text length of each system, with reference scores the mean
  reference score and the system-level correlation (Liusie et al. 2024, appendix B);
* the system x system win-rate matrix and the vote counts of every pair of systems (Chatbot
  Arena's battle counts), the run's length bias and a length-adjusted strength against the
  field (:func:`compassess_core.stats.length_bias.length_controlled_strengths`: one joint GLM over all
  systems with one shared length slope; CompAssess's own, not AlpacaEval's estimator);
* with a baseline system, AlpacaEval's headline numbers (Dubois et al. 2024, §2 and §3): each
  system's win rate against the baseline with its context-bootstrap interval, and AlpacaEval
  2.0's length-controlled win rate against it
  (:func:`compassess_core.stats.length_bias.alpaca_eval_lc_win_rates`: one GLM per system, as
  ``alpaca_eval/metrics/glm_winrate.py``, regularised toward the baseline only when the run
  holds verbose and concise rewrites of it).

Pure: no I/O, no UI, no store.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import expit

from . import analysis, metrics, ranking
from .agreement_stats import cluster_multiplicity, weighted_median
from .bias import debias_by_threshold, debias_probabilities, decisions
from ..errors import InputError
from .length_bias import (LC_FOLDS, AlpacaEvalLC, LengthBias, LengthControlled,
                          alpaca_eval_lc_win_rates, baseline_annotations, is_gamed_baseline,
                          length_bias, length_controlled_strengths)
from ..types import ComparisonTable, Dataset, FloatArray, IntArray

__all__ = [
    "NoSystemsError",
    "SystemComparisons",
    "system_comparisons",
    "context_multiplicity",
    "win_rates",
    "win_rate_matrix",
    "pair_counts",
    "pair_count_table",
    "win_rates_against",
    "lc_win_rates_against",
    "baseline_index",
    "system_strengths",
    "Leaderboard",
    "leaderboard",
    "DEFAULT_METHOD",
    "STRENGTH_UNITS",
]

#: The default strength of the leaderboard and the app's default ranking method: Bradley-Terry, as
#: Chatbot Arena; on our TopicalChat runs it ranked above the win ratio in 8 of 8 cells
#: (docs/results.md, "Ranking method", the paper's Table 11 analogue).
DEFAULT_METHOD = "bradley-terry"

#: What a strength of each method is, for labels.
STRENGTH_UNITS = {
    "bradley-terry": "Bradley-Terry log-strength (P(s beats t) = 1 / (1 + exp(t - s)); mean 0)",
    "win-ratio": "win ratio (share of comparisons won, eq. 6)",
    "avg-prob": "mean probability of winning (eq. 9 debiased p)",
    "poe": "product-of-experts Gaussian score (sums to 0)",
}


class NoSystemsError(InputError):
    """The run's candidates carry no ``system``: a leaderboard of systems cannot be built."""


@dataclass(frozen=True)
class SystemComparisons:
    """A run's comparisons seen as comparisons between systems.

    One entry per comparison whose two candidates both have a system, and different ones.

    Attributes
    ----------
    systems : tuple of str
        System names, in the order they first appear in the dataset.
    i, j : IntArray
        System index of the first (A) and second (B) candidate of each comparison.
    p : FloatArray
        P(A better) of each comparison (eq. 3).
    context : IntArray
        Index into ``context_ids`` of each comparison's context.
    context_ids : tuple of str
        The contexts with at least one such comparison.
    len_a, len_b : FloatArray
        Lengths (characters) of the two texts.
    n_without_system, n_same_system : int
        Comparisons left out: a candidate without a system; both candidates of one system.
    """

    systems: tuple[str, ...]
    i: IntArray
    j: IntArray
    p: FloatArray
    context: IntArray
    context_ids: tuple[str, ...]
    len_a: FloatArray
    len_b: FloatArray
    n_without_system: int = 0
    n_same_system: int = 0

    @property
    def n(self) -> int:
        return len(self.systems)


def system_comparisons(dataset: Dataset, table: ComparisonTable) -> SystemComparisons:
    """The run's comparisons between systems (see :class:`SystemComparisons`).

    Raises
    ------
    NoSystemsError
        When no compared candidate has a system.
    """
    systems: dict[str, int] = {}
    for ctx in dataset.contexts:
        for cand in ctx.candidates:
            if cand.system:
                systems.setdefault(cand.system, len(systems))
    parts = analysis.split_by_context(dataset, table)
    si, sj, p, ctx_index, len_a, len_b, ctx_ids = [], [], [], [], [], [], []
    no_system = same = 0
    for cc in parts:
        code = np.array([systems.get(c.system, -1) if c.system else -1
                         for c in cc.context.candidates], dtype=np.int64)
        length = np.array([len(c.text) for c in cc.context.candidates], dtype=np.float64)
        a, b = code[cc.i], code[cc.j]
        known = (a >= 0) & (b >= 0)
        differ = known & (a != b)
        no_system += int((~known).sum())
        same += int((known & (a == b)).sum())
        if not differ.any():
            continue
        si.append(a[differ])
        sj.append(b[differ])
        p.append(cc.p[differ])
        len_a.append(length[cc.i[differ]])
        len_b.append(length[cc.j[differ]])
        ctx_index.append(np.full(int(differ.sum()), len(ctx_ids), dtype=np.int64))
        ctx_ids.append(cc.context.context_id)
    if not systems or not si:
        n_all = sum(len(cc.p) for cc in parts)
        raise NoSystemsError(
            f"dataset '{dataset.name}' has no system column (or no comparison between two "
            f"different systems among {n_all:,} comparisons): a leaderboard ranks systems "
            "across contexts. See the per-context rankings instead.")
    cat = np.concatenate
    return SystemComparisons(tuple(systems), cat(si), cat(sj), cat(p), cat(ctx_index),
                             tuple(ctx_ids), cat(len_a), cat(len_b), no_system, same)


def context_multiplicity(context: IntArray, n_contexts: int, n_boot: int,
                         seed: int | np.random.Generator = 0) -> IntArray:
    """Replicates of a two-stage cluster bootstrap over contexts, as copies of each comparison:
    ``agreement_stats.cluster_multiplicity`` (contexts drawn with replacement, then each drawn
    context's comparisons; Davison & Hinkley 1997, §3.8). The result feeds
    :func:`compassess_core.stats.ranking.bootstrap_scores`.

    Returns
    -------
    IntArray
        Shape ``(n_boot, len(context))``: copies of each comparison in each replicate.

    Raises
    ------
    InputError
        ``n_boot < 1`` or no context.
    """
    return cluster_multiplicity(context, n_contexts, n_boot, seed)


def replicate_taus(p: FloatArray, mult: IntArray) -> FloatArray:
    """tau* (``bias.balanced_threshold``: the median of p, clipped into (0, 1)) of every bootstrap
    replicate, from its copies ``mult`` of each comparison."""
    eps = np.finfo(np.float64).eps
    return np.clip(weighted_median(p, mult), eps, 1.0 - eps)


def replicate_scores(method: str, n: int, i: IntArray, j: IntArray, p: FloatArray, tau: float,
                     mult: IntArray, taus: FloatArray | None = None) -> FloatArray:
    """``ranking.bootstrap_scores`` at ``tau``, or, with ``taus`` (one per replicate), each
    replicate at its own threshold: its p reweighted by eq. 9 at that tau and read at 0.5
    (``bias.debias_by_threshold``: above 0.5 exactly where p is above its tau, eq. 10)."""
    if taus is None:
        return ranking.bootstrap_scores(method, n, i, j, p, tau, mult)
    return np.concatenate([ranking.bootstrap_scores(method, n, i, j, debias_by_threshold(p, t),
                                                    0.5, mult[b:b + 1])
                           for b, t in enumerate(taus)], axis=0)


def win_rates(n: int, i: IntArray, j: IntArray, p: FloatArray, tau: float = 0.5) -> FloatArray:
    """Share of its comparisons each system won (eq. 10 verdicts at ``tau``; eq. 6 over systems).

    Raises
    ------
    InputError, LengthMismatchError
        As :func:`compassess_core.stats.ranking.win_ratio`.
    """
    return ranking.win_ratio(n, i, j, p, tau).scores


def pair_counts(n: int, i: IntArray, j: IntArray, p: FloatArray, tau: float = 0.5
                ) -> tuple[IntArray, FloatArray]:
    """Comparisons and wins of every pair of systems (both orders, all contexts), eq. 10 at ``tau``.

    Chatbot Arena's battle counts per pair of models (Chiang et al. 2024, §4, Figure 2), with the
    verdicts of Liusie et al. 2024 (eq. 10): A wins when ``p > tau``; ``p == tau`` is a win for B,
    so over both orders of a pair a tie at ``tau`` counts once for each system.

    Returns
    -------
    met : IntArray
        ``(n, n)``, symmetric: comparisons between ``s`` and ``t``; 0 on the diagonal.
    wins : FloatArray
        ``(n, n)``: comparisons between ``s`` and ``t`` won by ``s``; ``wins + wins.T == met``.

    Raises
    ------
    InputError, LengthMismatchError
        As :func:`compassess_core.stats.bias.as_comparisons`.
    """
    from .bias import as_comparisons

    ii, jj, pp = as_comparisons(i, j, p, n)
    a_wins = decisions(pp, tau).astype(np.float64)
    wins = (np.bincount(ii * n + jj, weights=a_wins, minlength=n * n)
            + np.bincount(jj * n + ii, weights=1.0 - a_wins, minlength=n * n)).reshape(n, n)
    met = (np.bincount(ii * n + jj, minlength=n * n)
           + np.bincount(jj * n + ii, minlength=n * n)).reshape(n, n)
    return met.astype(np.int64), wins


def win_rate_matrix(n: int, i: IntArray, j: IntArray, p: FloatArray, tau: float = 0.5) -> FloatArray:
    """``W[s, t]``: share of the comparisons between ``s`` and ``t`` (both orders, all contexts)
    won by ``s`` under eq. 10 at ``tau``; NaN where they never met, and on the diagonal.

    ``W[s, t] + W[t, s] = 1`` wherever they met.

    Raises
    ------
    InputError, LengthMismatchError
        As :func:`compassess_core.stats.bias.as_comparisons`.
    """
    met, wins = pair_counts(n, i, j, p, tau)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(met > 0, wins / np.where(met > 0, met, 1), np.nan)


def pair_count_table(systems: list[str], met: IntArray, wins: FloatArray) -> pd.DataFrame:
    """:func:`pair_counts` as one row per pair of systems that met, in the order of ``systems``
    (``met`` and ``wins`` indexed alike): ``system_a``, ``system_b``, ``n_comparisons``,
    ``wins_a``, ``wins_b`` (comparisons won by each at tau) and ``win_rate_a`` (``wins_a /
    n_comparisons``)."""
    a, b = np.triu_indices(len(systems), k=1)
    keep = met[a, b] > 0
    a, b = a[keep], b[keep]
    names = np.asarray(systems, dtype=object)
    return pd.DataFrame({
        "system_a": names[a], "system_b": names[b], "n_comparisons": met[a, b].astype(np.int64),
        "wins_a": wins[a, b].round().astype(np.int64), "wins_b": wins[b, a].round().astype(np.int64),
        "win_rate_a": wins[a, b] / met[a, b]})


def baseline_index(systems: tuple[str, ...] | list[str], baseline: str) -> int:
    """Index of the system ``baseline``.

    Raises
    ------
    InputError
        ``baseline`` is not one of ``systems`` (the message names them).
    """
    if baseline not in systems:
        raise InputError(f"unknown baseline system '{baseline}': the run's systems are "
                         f"{', '.join(repr(s) for s in systems)}")
    return list(systems).index(baseline)


def win_rates_against(n: int, i: IntArray, j: IntArray, p: FloatArray, baseline: int,
                      tau: float = 0.5) -> tuple[FloatArray, IntArray]:
    """Each system's win rate against one baseline system: AlpacaEval's headline number (Dubois
    et al. 2024, §2: the share of instructions on which the judge prefers the system's output to
    the baseline's), here over every comparison of the two systems, in all contexts where both
    appear and both orders pooled, with the eq. 10 verdicts of Liusie et al. 2024 at ``tau``
    (``p == tau`` is a win for the second text, so over both orders a tie counts once each way).

    It is the win ratio (eq. 6) on the comparisons that involve the baseline.

    Returns
    -------
    tuple of (FloatArray, IntArray)
        ``(rate, count)`` of shape ``(n,)``: the share of its comparisons with the baseline each
        system won, and their number. NaN rate (count 0) for the baseline itself and for a system
        that never met it.

    Raises
    ------
    InputError, LengthMismatchError
        ``baseline`` out of range, or as :func:`compassess_core.stats.bias.as_comparisons`.
    """
    met, wins = pair_counts(n, i, j, p, tau)
    if not 0 <= int(baseline) < n:
        raise InputError(f"baseline index {baseline} out of range for {n} systems")
    count = met[:, baseline].copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(count > 0, wins[:, baseline] / np.maximum(count, 1), np.nan)
    rate[baseline] = np.nan
    count[baseline] = 0
    return rate, count


def lc_win_rates_against(strengths: FloatArray, baseline: int) -> FloatArray:
    """``sigmoid(theta_s - theta_baseline)`` of the joint length-adjusted strengths of
    :func:`compassess_core.stats.length_bias.length_controlled_strengths` (CompAssess's one-GLM
    estimator with one shared length slope, not AlpacaEval's: the leaderboard's
    ``lc_win_rate_vs_baseline`` is :func:`compassess_core.stats.length_bias.alpaca_eval_lc_win_rates`).
    NaN for the baseline itself and for a system without a strength.
    """
    theta = np.asarray(strengths, dtype=np.float64).reshape(-1)
    out = expit(theta - theta[int(baseline)])
    out[int(baseline)] = np.nan
    return out


@dataclass(frozen=True)
class Leaderboard:
    """One row per system of a run, and what the rows were computed on.

    ``frame`` columns: ``rank`` (1 = best by strength, ties share the smallest; missing, ``<NA>``,
    for a system with no comparison in the run: unranked, listed last), ``system``, ``strength`` with
    ``strength_ci_low``/``strength_ci_high``, ``win_rate`` (share, 0-1) with its interval,
    ``p_best`` (share of bootstrap replicates in which the system ranks first),
    ``n_comparisons``, ``n_contexts``, ``mean_length`` (characters), ``lc_strength`` and
    ``lc_win_rate`` (length-adjusted against the field by CompAssess's joint GLM,
    :func:`compassess_core.stats.length_bias.length_controlled_strengths`; not AlpacaEval's), and
    with a reference column ``mean_reference``.
    ``win_matrix`` is :func:`win_rate_matrix` as a frame (row system's share of wins against the
    column system); ``pair_counts`` is :func:`pair_count_table` (comparisons and wins at tau of
    every pair of systems that met), in leaderboard order.

    With a ``baseline`` system the frame also holds ``win_rate_vs_baseline`` (share of the
    system's comparisons with the baseline it won, 0-1; :func:`win_rates_against`) with
    ``win_rate_vs_baseline_low``/``_high`` (the same context bootstrap), ``n_vs_baseline``
    (those comparisons), ``lc_win_rate_vs_baseline`` (AlpacaEval 2.0's length-controlled win
    rate, a share 0-1: :func:`compassess_core.stats.length_bias.alpaca_eval_lc_win_rates` on the
    comparisons with the baseline, p debiased at tau by eq. 9 and averaged over the orders of
    each context) and ``lc_win_rate_vs_baseline_se`` (AlpacaEval's ``lc_standard_error``: the
    standard error of the mean prediction over the system's contexts, not a bootstrap
    interval). The baseline's own row holds NaN (``n_vs_baseline`` blank), not 0.5: a system is
    not compared with itself; so does a system that met the baseline in fewer than
    :data:`~compassess_core.stats.length_bias.LC_FOLDS` contexts (AlpacaEval's 5-fold
    cross-validation needs one context per fold). ``alpaca_lc`` holds the fit
    (coefficients, instruction difficulty, the estimator's name).
    """

    frame: pd.DataFrame
    win_matrix: pd.DataFrame
    method: str
    tau: float
    n_boot: int
    level: float
    n_comparisons: int
    n_contexts: int
    reference: str | None
    system_spearman_x100: float | None
    system_kendall_x100: float | None
    length: LengthBias
    length_controlled: LengthControlled
    notes: list[str] = field(default_factory=list)
    pair_counts: pd.DataFrame = field(default_factory=pd.DataFrame)
    baseline: str | None = None
    alpaca_lc: AlpacaEvalLC | None = None

    def to_dict(self) -> dict:
        """What ``compassess leaderboard --format json`` prints (NaN as null)."""
        rows = self.frame.astype(object).where(self.frame.notna(), None).to_dict(orient="records")
        lb, lc = self.length, self.length_controlled
        return dict(
            method=self.method, strength_unit=STRENGTH_UNITS.get(self.method, self.method),
            tau=_none(self.tau), n_comparisons=self.n_comparisons, n_contexts=self.n_contexts,
            n_systems=len(self.frame), ci_level=self.level, n_bootstrap=self.n_boot,
            ci_resamples="contexts, then comparisons within each", reference=self.reference,
            system_spearman_x100=_none(self.system_spearman_x100),
            system_kendall_x100=_none(self.system_kendall_x100),
            length_bias=dict(longer_wins=_none(lb.longer_wins),
                             n_length_differs=lb.n_length_differs,
                             slope_log_odds_per_doubling=_none(lb.slope_per_doubling),
                             position_log_odds=_none(lb.position_log_odds), tau=lb.tau),
            length_controlled=dict(length_coef=_none(lc.length_coef),
                                   position_coef=_none(lc.position_coef)),
            baseline=self.baseline,
            lc_win_rate_vs_baseline_estimator=(None if self.alpaca_lc is None
                                               else self.alpaca_lc.estimator),
            win_rate_vs_baseline_unit=(None if self.baseline is None else
                                       "share of the system's comparisons with the baseline "
                                       "it won at tau, both orders, contexts where both appear"),
            notes=list(self.notes), systems=rows,
            pair_counts=self.pair_counts.to_dict(orient="records"))


def _none(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def leaderboard(dataset: Dataset, table: ComparisonTable, *, method: str = DEFAULT_METHOD,
                tau: float = 0.5, reference: str | None = None, baseline: str | None = None,
                n_boot: int = 200, level: float = 0.95, seed: int = 0,
                tau_star: bool = False) -> Leaderboard:
    """The run's leaderboard of systems (see the module docstring).

    Parameters
    ----------
    method : str
        Key of :data:`compassess_core.stats.ranking.METHODS` giving the strength.
    tau : float
        Decision threshold (eq. 10) and debiasing (eq. 9) of strengths and win rates.
    reference : str, optional
        A reference-score column of the dataset: adds each system's mean reference score and
        the system-level Spearman and Kendall (x100) of strength against it.
    baseline : str, optional
        A system: adds each other system's win rate against it with its interval, the number of
        those comparisons and the length-controlled win rate against it (see
        :class:`Leaderboard`).
    n_boot, level, seed
        Context-bootstrap replicates, interval level and seed.
    tau_star : bool
        ``tau`` is the balanced tau* (the median of p): every replicate re-estimates it from its
        resampled comparisons (:func:`replicate_taus`) instead of holding it fixed.

    Raises
    ------
    NoSystemsError
        The candidates have no system.
    InputError
        Unknown method, reference column or baseline system, tau not in (0, 1), ``n_boot < 1``.
    """
    _, fn = ranking.get_method(method)
    analysis.check_reference(dataset, reference)
    sc = system_comparisons(dataset, table)
    n = sc.n
    base = None if baseline is None else baseline_index(sc.systems, baseline)
    strength = fn(n, sc.i, sc.j, sc.p, tau).scores
    wins = win_rates(n, sc.i, sc.j, sc.p, tau)
    mult = context_multiplicity(sc.context, len(sc.context_ids), n_boot, seed)
    taus = replicate_taus(sc.p, mult) if tau_star else None
    reps = _align_gauge(method, replicate_scores(method, n, sc.i, sc.j, sc.p, tau, mult, taus),
                        strength)
    win_reps = replicate_scores("win-ratio", n, sc.i, sc.j, sc.p, tau, mult, taus)
    s_low, s_high = ranking.percentile_interval(reps, level)
    w_low, w_high = ranking.percentile_interval(win_reps, level)
    # Rank 1 in a replicate: the highest finite strength (ties share it).
    best = np.where(np.isnan(reps), -np.inf, reps)
    p_best = (best == best.max(axis=1, keepdims=True)).mean(axis=0)

    counts = np.bincount(sc.i, minlength=n) + np.bincount(sc.j, minlength=n)
    pair_ctx = np.zeros((n, len(sc.context_ids)), dtype=bool)
    pair_ctx[sc.i, sc.context] = True
    pair_ctx[sc.j, sc.context] = True
    n_contexts = pair_ctx.sum(axis=1)
    lengths, refs = _system_means(dataset, sc, reference)
    lc = length_controlled_strengths(n, sc.i, sc.j, sc.p, sc.len_a, sc.len_b)
    # A system with no comparison (or no finite strength) is unranked: its rank is missing
    # (blank in a table, null in JSON), not one past the last.
    unranked = (counts == 0) | ~np.isfinite(strength)
    ranks = pd.array(ranking.rank_scores(np.where(unranked, np.nan, strength)), dtype="Int64")
    ranks[unranked] = pd.NA
    frame = pd.DataFrame({
        "rank": ranks, "system": list(sc.systems), "strength": strength,
        "strength_ci_low": s_low, "strength_ci_high": s_high, "win_rate": wins,
        "win_rate_ci_low": w_low, "win_rate_ci_high": w_high, "p_best": p_best,
        "n_comparisons": counts.astype(np.int64), "n_contexts": n_contexts,
        "mean_length": lengths, "lc_strength": lc.strengths, "lc_win_rate": lc.win_rate})
    if base is not None:
        against, alpaca_lc = _against_baseline(sc, base, tau, mult, level, taus)
        frame = frame.join(against)
    else:
        alpaca_lc = None
    sp = kd = None
    if reference is not None:
        frame["mean_reference"] = refs
        if n > 2:
            sp = 100.0 * metrics.correlation(strength, refs, "spearman")
            kd = 100.0 * metrics.correlation(strength, refs, "kendall")
    frame = frame.sort_values(["rank", "system"], kind="stable").reset_index(drop=True)
    met, wins = pair_counts(n, sc.i, sc.j, sc.p, tau)
    order = frame["system"].map({s: k for k, s in enumerate(sc.systems)}).to_numpy()
    matrix = pd.DataFrame(win_rate_matrix(n, sc.i, sc.j, sc.p, tau), index=list(sc.systems),
                          columns=list(sc.systems)).iloc[order, order]
    counts_table = pair_count_table(list(frame["system"]), met[np.ix_(order, order)],
                                    wins[np.ix_(order, order)])
    notes = _notes(sc, n, int((n_contexts < 2).sum()))
    if base is not None:
        never = int((frame["n_vs_baseline"].fillna(0) == 0).sum()) - 1
        if never > 0:
            notes.append(f"{never} system(s) never met the baseline '{baseline}': no win rate "
                         "and no length-controlled win rate against it (AlpacaEval's GLM is "
                         "fitted on a system's own comparisons with the baseline)")
        few = int(((frame["n_vs_baseline"].fillna(0) > 0)
                   & frame["lc_win_rate_vs_baseline"].isna()).sum())
        if few > 0:
            notes.append(f"{few} system(s) met the baseline in fewer than {LC_FOLDS} contexts: "
                         "no length-controlled win rate against it (AlpacaEval's GLM is "
                         f"{LC_FOLDS}-fold cross-validated over contexts)")
    return Leaderboard(frame, matrix, method, float(tau), int(n_boot),
                       float(level), int(len(sc.p)), len(sc.context_ids), reference, sp, kd,
                       length_bias(sc.len_a, sc.len_b, sc.p, tau), lc, notes, counts_table,
                       baseline, alpaca_lc)


def _against_baseline(sc: SystemComparisons, base: int, tau: float, mult: IntArray,
                      level: float, taus: FloatArray | None = None
                      ) -> tuple[pd.DataFrame, AlpacaEvalLC]:
    """The baseline columns of :class:`Leaderboard`, indexed like the unsorted frame, and
    AlpacaEval's length-controlled fit. The interval reuses the leaderboard's replicates
    ``mult`` (and their re-estimated tau* ``taus``): the win ratio (eq. 6) of each replicate on
    the comparisons with the baseline is the win rate against it."""
    n = sc.n
    rate, count = win_rates_against(n, sc.i, sc.j, sc.p, base, tau)
    with_base = (sc.i == base) | (sc.j == base)
    if with_base.any():
        reps = replicate_scores("win-ratio", n, sc.i[with_base], sc.j[with_base],
                                sc.p[with_base], tau, mult[:, with_base], taus)
        low, high = ranking.percentile_interval(reps, level)
    else:
        low, high = np.full(n, np.nan), np.full(n, np.nan)
    low[base] = high[base] = np.nan
    n_vs = pd.array(count, dtype="Int64")
    n_vs[base] = pd.NA
    ann = baseline_annotations(sc.i, sc.j, debias_probabilities(sc.p, tau), sc.context,
                               sc.len_a, sc.len_b, base)
    gamed = [is_gamed_baseline(s, sc.systems[base]) for s in sc.systems]
    alpaca = alpaca_eval_lc_win_rates(n, base, ann, len(sc.context_ids), gamed)
    return pd.DataFrame({"win_rate_vs_baseline": rate, "win_rate_vs_baseline_low": low,
                         "win_rate_vs_baseline_high": high, "n_vs_baseline": n_vs,
                         "lc_win_rate_vs_baseline": alpaca.win_rate,
                         "lc_win_rate_vs_baseline_se": alpaca.standard_error}), alpaca


#: Methods whose scores are defined up to an additive constant (mean or sum fixed to zero over the
#: candidates present): a replicate without some systems fixes that constant differently.
GAUGE_FREE = frozenset({"bradley-terry", "poe"})


def _align_gauge(method: str, replicates: FloatArray, strength: FloatArray) -> FloatArray:
    """Shift each replicate of a gauge-free method so the systems it holds have the same mean
    strength as in the full fit; otherwise a context draw that misses a strong system would lift
    every other system's score in that replicate."""
    if method not in GAUGE_FREE:
        return replicates
    with np.errstate(invalid="ignore"):
        shift = np.nanmean(replicates - strength[None, :], axis=1, keepdims=True)
    return replicates - np.nan_to_num(shift)


def system_strengths(dataset: Dataset, table: ComparisonTable, *, method: str = DEFAULT_METHOD,
                     tau: float = 0.5) -> pd.Series:
    """Each system's strength (``method`` at ``tau``, no interval), indexed by system name.

    Raises
    ------
    NoSystemsError, InputError
        As :func:`leaderboard`.
    """
    _, fn = ranking.get_method(method)
    sc = system_comparisons(dataset, table)
    return pd.Series(fn(sc.n, sc.i, sc.j, sc.p, tau).scores, index=list(sc.systems),
                     name="strength")


def _system_means(dataset: Dataset, sc: SystemComparisons, reference: str | None
                  ) -> tuple[FloatArray, FloatArray]:
    """Mean text length (characters) and mean reference score of each system's candidates in
    the compared contexts."""
    index = {s: k for k, s in enumerate(sc.systems)}
    used = set(sc.context_ids)
    codes, lengths, refs = [], [], []
    for ctx in dataset.contexts:
        if ctx.context_id not in used:
            continue
        for cand in ctx.candidates:
            if cand.system in index:
                codes.append(index[cand.system])
                lengths.append(len(cand.text))
                refs.append(cand.scores.get(reference, np.nan) if reference else np.nan)
    codes_a = np.asarray(codes, dtype=np.int64)

    def mean(values: list[float]) -> FloatArray:
        v = np.asarray(values, dtype=np.float64)
        ok = ~np.isnan(v)
        total = np.bincount(codes_a[ok], weights=v[ok], minlength=sc.n)
        count = np.bincount(codes_a[ok], minlength=sc.n)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, total / np.maximum(count, 1), np.nan)

    return mean(lengths), mean(refs)


def _notes(sc: SystemComparisons, n: int, n_lone: int) -> list[str]:
    notes = []
    if n_lone:
        notes.append(f"{n_lone} system(s) met in one context only: their intervals show the "
                     "spread of that context's comparisons, not of contexts")
    if sc.n_without_system:
        notes.append(f"{sc.n_without_system:,} comparison(s) left out: a candidate without a system")
    if sc.n_same_system:
        notes.append(f"{sc.n_same_system:,} comparison(s) left out: both candidates of the same "
                     "system (they say nothing about the systems' order)")
    if len(sc.context_ids) < 10:
        notes.append(f"only {len(sc.context_ids)} context(s): the context bootstrap has few "
                     "clusters to resample, so its intervals are rough")
    if n < 2:
        notes.append("a single system: nothing to rank")
    return notes

"""A leaderboard of systems: which system (model, prompt, checkpoint) is best across all contexts of
a run, and how sure we are.

Every comparison of a run is a comparison between the *systems* of its two candidates; pooled over
the contexts, these give one row per system, as Chatbot Arena and AlpacaEval report models
(Chiang et al. 2024, "Chatbot Arena: An Open Platform for Evaluating LLMs by Human Preference",
§5; Dubois et al. 2024, "Length-Controlled AlpacaEval"):

* a strength from any ranking method of :data:`compassess_core.ranking.METHODS` on the system
  comparisons (Bradley-Terry through evalica by default, as the Arena), with the positional
  debiasing of eq. 9-10 of Liusie, Manakul, Gales (EACL 2024) at a threshold tau;
* the win rate against the field: the share of its comparisons a system won (eq. 10 verdicts,
  the win ratio of eq. 6 over systems);
* 95% percentile bootstrap intervals of both that resample *contexts* with replacement, and the
  comparisons within each context drawn (a two-stage cluster bootstrap: the comparisons of one
  context share its candidates and are not independent; the Arena resamples battles, which are
  independent there), and the share of replicates in which each system ranks first;
* comparisons, contexts and the mean text length of each system, with reference scores the mean
  reference score and the system-level correlation (Liusie et al. 2024, appendix B);
* the system x system win-rate matrix, the run's length bias and a length-controlled strength
  (:mod:`compassess_core.length_bias`).

Pure: no I/O, no UI, no store.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import analysis, metrics, ranking
from .bias import decisions
from .errors import InputError
from .length_bias import LengthBias, LengthControlled, length_bias, length_controlled_strengths
from .types import ComparisonTable, Dataset, FloatArray, IntArray

__all__ = [
    "NoSystemsError",
    "SystemComparisons",
    "system_comparisons",
    "context_multiplicity",
    "win_rates",
    "win_rate_matrix",
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
            "across contexts. See the per-context rankings instead (Rankings page, "
            "`compassess rank --run NAME`).")
    cat = np.concatenate
    return SystemComparisons(tuple(systems), cat(si), cat(sj), cat(p), cat(ctx_index),
                             tuple(ctx_ids), cat(len_a), cat(len_b), no_system, same)


def context_multiplicity(context: IntArray, n_contexts: int, n_boot: int,
                         seed: int | np.random.Generator = 0) -> IntArray:
    """Replicates of a two-stage cluster bootstrap over contexts, as copies of each comparison.

    Each replicate draws ``n_contexts`` contexts with replacement, then, for every context drawn,
    its comparisons with replacement (Davison & Hinkley 1997, "Bootstrap Methods and their
    Application", §3.8: resampling at both stages when the clusters are few, as the contexts of
    a run often are). A context drawn ``c`` times with ``m`` comparisons contributes
    ``c`` independent multinomial draws of ``m`` over its comparisons, i.e. one multinomial draw
    of ``c * m``. The result feeds :func:`compassess_core.ranking.bootstrap_scores`.

    Returns
    -------
    IntArray
        Shape ``(n_boot, len(context))``: copies of each comparison in each replicate.

    Raises
    ------
    InputError
        ``n_boot < 1`` or no context.
    """
    if int(n_boot) < 1:
        raise InputError(f"n_boot must be >= 1, got {n_boot}")
    if n_contexts < 1:
        raise InputError("a bootstrap over contexts needs at least one context")
    context = np.asarray(context, dtype=np.int64)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n_contexts, np.full(n_contexts, 1.0 / n_contexts), size=int(n_boot))
    out = np.zeros((int(n_boot), len(context)), dtype=np.int64)
    for k in range(n_contexts):  # one vectorised draw per context, over all replicates
        members = np.flatnonzero(context == k)
        if len(members):
            out[:, members] = rng.multinomial(draws[:, k] * len(members),
                                              np.full(len(members), 1.0 / len(members)))
    return out


def win_rates(n: int, i: IntArray, j: IntArray, p: FloatArray, tau: float = 0.5) -> FloatArray:
    """Share of its comparisons each system won (eq. 10 verdicts at ``tau``; eq. 6 over systems).

    Raises
    ------
    InputError, LengthMismatchError
        As :func:`compassess_core.ranking.win_ratio`.
    """
    return ranking.win_ratio(n, i, j, p, tau).scores


def win_rate_matrix(n: int, i: IntArray, j: IntArray, p: FloatArray, tau: float = 0.5) -> FloatArray:
    """``W[s, t]``: share of the comparisons between ``s`` and ``t`` (both orders, all contexts)
    won by ``s`` under eq. 10 at ``tau``; NaN where they never met, and on the diagonal.

    ``W[s, t] + W[t, s] = 1`` wherever they met.

    Raises
    ------
    InputError, LengthMismatchError
        As :func:`compassess_core.bias.as_comparisons`.
    """
    from .bias import as_comparisons

    ii, jj, pp = as_comparisons(i, j, p, n)
    a_wins = decisions(pp, tau).astype(np.float64)
    wins = (np.bincount(ii * n + jj, weights=a_wins, minlength=n * n)
            + np.bincount(jj * n + ii, weights=1.0 - a_wins, minlength=n * n)).reshape(n, n)
    met = (np.bincount(ii * n + jj, minlength=n * n)
           + np.bincount(jj * n + ii, minlength=n * n)).reshape(n, n).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(met > 0, wins / np.where(met > 0, met, 1.0), np.nan)


@dataclass(frozen=True)
class Leaderboard:
    """One row per system of a run, and what the rows were computed on.

    ``frame`` columns: ``rank`` (1 = best by strength), ``system``, ``strength`` with
    ``strength_ci_low``/``strength_ci_high``, ``win_rate`` (share, 0-1) with its interval,
    ``p_best`` (share of bootstrap replicates in which the system ranks first),
    ``n_comparisons``, ``n_contexts``, ``mean_length`` (characters), ``lc_strength`` and
    ``lc_win_rate`` (length-controlled), and with a reference column ``mean_reference``.
    ``win_matrix`` is :func:`win_rate_matrix` as a frame (row system's share of wins against the
    column system).
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

    def to_dict(self) -> dict:
        """What ``compassess leaderboard --format json`` prints (NaN as null)."""
        rows = self.frame.astype(object).where(self.frame.notna(), None).to_dict(orient="records")
        lb, lc = self.length, self.length_controlled
        return dict(
            method=self.method, strength_unit=STRENGTH_UNITS.get(self.method, self.method),
            tau=self.tau, n_comparisons=self.n_comparisons, n_contexts=self.n_contexts,
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
            notes=list(self.notes), systems=rows)


def _none(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def leaderboard(dataset: Dataset, table: ComparisonTable, *, method: str = DEFAULT_METHOD,
                tau: float = 0.5, reference: str | None = None, n_boot: int = 200,
                level: float = 0.95, seed: int = 0) -> Leaderboard:
    """The run's leaderboard of systems (see the module docstring).

    Parameters
    ----------
    method : str
        Key of :data:`compassess_core.ranking.METHODS` giving the strength.
    tau : float
        Decision threshold (eq. 10) and debiasing (eq. 9) of strengths and win rates.
    reference : str, optional
        A reference-score column of the dataset: adds each system's mean reference score and
        the system-level Spearman and Kendall (x100) of strength against it.
    n_boot, level, seed
        Context-bootstrap replicates, interval level and seed.

    Raises
    ------
    NoSystemsError
        The candidates have no system.
    InputError
        Unknown method or reference column, tau not in (0, 1), ``n_boot < 1``.
    """
    _, fn = ranking.get_method(method)
    analysis.check_reference(dataset, reference)
    sc = system_comparisons(dataset, table)
    n = sc.n
    strength = fn(n, sc.i, sc.j, sc.p, tau).scores
    wins = win_rates(n, sc.i, sc.j, sc.p, tau)
    mult = context_multiplicity(sc.context, len(sc.context_ids), n_boot, seed)
    reps = _align_gauge(method, ranking.bootstrap_scores(method, n, sc.i, sc.j, sc.p, tau, mult),
                        strength)
    win_reps = ranking.bootstrap_scores("win-ratio", n, sc.i, sc.j, sc.p, tau, mult)
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
    frame = pd.DataFrame({
        "rank": ranking.rank_scores(strength), "system": list(sc.systems), "strength": strength,
        "strength_ci_low": s_low, "strength_ci_high": s_high, "win_rate": wins,
        "win_rate_ci_low": w_low, "win_rate_ci_high": w_high, "p_best": p_best,
        "n_comparisons": counts.astype(np.int64), "n_contexts": n_contexts,
        "mean_length": lengths, "lc_strength": lc.strengths, "lc_win_rate": lc.win_rate})
    sp = kd = None
    if reference is not None:
        frame["mean_reference"] = refs
        if n > 2:
            sp = 100.0 * metrics.correlation(strength, refs, "spearman")
            kd = 100.0 * metrics.correlation(strength, refs, "kendall")
    frame = frame.sort_values(["rank", "system"], kind="stable").reset_index(drop=True)
    matrix = pd.DataFrame(win_rate_matrix(n, sc.i, sc.j, sc.p, tau), index=list(sc.systems),
                          columns=list(sc.systems))
    order = list(frame["system"])
    notes = _notes(sc, n, int((n_contexts < 2).sum()))
    return Leaderboard(frame, matrix.loc[order, order], method, float(tau), int(n_boot),
                       float(level), int(len(sc.p)), len(sc.context_ids), reference, sp, kd,
                       length_bias(sc.len_a, sc.len_b, sc.p, tau), lc, notes)


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

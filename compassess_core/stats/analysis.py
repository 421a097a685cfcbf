"""Join a dataset and a run's comparisons into what people look at: rankings, bias, evaluation.

Everything the CLI prints and the pages show is computed here (pages never recompute it), from a
``Dataset`` and a ``ComparisonTable``. Pure: no I/O, no UI, no store.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Sequence

import numpy as np
import pandas as pd

from . import bias, metrics, ranking
from .diagnosis import diagnose_position
from ..errors import InputError
from ..types import ComparisonTable, Context, Dataset, FloatArray, IntArray

#: eq. 10 applied context by context: one balanced threshold tau* per context (the median of
#: that context's p), beside the global one, which balances P(A) over all comparisons together
#: and can leave single contexts far from 0.5.
BALANCED_PER_CONTEXT = "balanced-per-context"
#: The debias modes (besides a number in (0, 1)): eq. 3's 0.5, the global tau*, tau* per context.
DEBIAS_CHOICES = ("none", "balanced", BALANCED_PER_CONTEXT)


@dataclass(frozen=True)
class ContextComparisons:
    """One context's comparisons as candidate indices (for the math modules)."""

    context: Context
    i: IntArray
    j: IntArray
    p: FloatArray

    @property
    def n(self) -> int:
        return len(self.context.candidates)


def split_by_context(dataset: Dataset, table: ComparisonTable) -> list[ContextComparisons]:
    """Map string ids to per-context candidate indices; contexts without comparisons are left out."""
    out = []
    if len(table) == 0:
        return out
    order = pd.Index(table.context_ids)
    for ctx in dataset.contexts:
        mask = np.asarray(order == ctx.context_id)
        if not mask.any():
            continue
        index = pd.Index(ctx.candidate_ids)
        i = index.get_indexer(table.a_ids[mask])
        j = index.get_indexer(table.b_ids[mask])
        p = table.p[mask]
        # unknown ids (a candidate deleted since) and non-finite p are left out of every statistic
        keep = (i >= 0) & (j >= 0) & np.isfinite(p)
        out.append(ContextComparisons(ctx, i[keep].astype(np.int64), j[keep].astype(np.int64),
                                      p[keep].astype(np.float64)))
    return out


def split_with_p(dataset: Dataset, table: ComparisonTable
                 ) -> tuple[list[ContextComparisons], FloatArray]:
    """:func:`split_by_context` and the p of every context concatenated (in that order): what the
    thresholds (tau*, eq. 10) and :func:`evaluate_at` read."""
    parts = split_by_context(dataset, table)
    all_p = np.concatenate([cc.p for cc in parts]) if parts else np.array([], dtype=float)
    return parts, all_p


def is_per_context(debias: str | float | None) -> bool:
    """Whether ``debias`` asks for one threshold per context (:data:`BALANCED_PER_CONTEXT`)."""
    return isinstance(debias, str) and debias == BALANCED_PER_CONTEXT


def resolve_tau(debias: str | float | None, p: FloatArray) -> float:
    """``none`` -> 0.5 (eq. 3's natural threshold), ``balanced`` -> tau* (eq. 10), or a number in
    (0, 1). ``balanced-per-context`` has no single threshold: read it through
    :func:`threshold_view`."""
    if debias is None or debias == "none":
        return 0.5
    if debias == "balanced":
        return float(bias.balanced_threshold(p)) if len(p) else 0.5
    if is_per_context(debias):
        raise InputError("balanced-per-context has one threshold per context, not one tau; "
                         "read the comparisons through analysis.threshold_view")
    try:
        tau = float(debias)
    except (TypeError, ValueError):
        raise InputError(f"--debias must be none, balanced, {BALANCED_PER_CONTEXT} or a number "
                         f"in (0, 1), not '{debias}'") from None
    if not 0.0 < tau < 1.0:
        raise InputError(f"--debias (the threshold tau) must be strictly between 0 and 1, "
                         f"got {tau}")
    return tau


@dataclass(frozen=True)
class ThresholdView:
    """A run's comparisons as one debias mode reads them: the ``table`` whose p every statistic
    reads, at the one threshold ``tau``, and the threshold each context is decided at.

    For ``none``, ``balanced`` and a number the table is the run's own at that tau. For
    ``balanced-per-context`` each p is reweighted by eq. 9 at its own context's tau*
    (:func:`bias.balanced_thresholds`, :func:`bias.debias_by_threshold`) and read at 0.5: the
    reweighted p is above 0.5 exactly where p is above its context's tau*, so every function that
    takes one tau (rankings, P(A), flip rate, leaderboard, agreement, comparison of runs) applies
    one threshold per context without knowing it.
    """

    debias: str
    table: ComparisonTable
    tau: float
    #: context id -> the threshold its comparisons are decided at (the same for a global mode).
    context_taus: dict[str, float]

    @property
    def per_context(self) -> bool:
        return self.debias == BALANCED_PER_CONTEXT

    def label(self, digits: int = 4) -> str:
        """How the threshold reads in text: ``tau = 0.4123`` or the per-context range."""
        return threshold_label(self.debias, self.tau, self.context_taus.values(), digits)


def threshold_label(debias: str | float, tau: float, context_taus=(), digits: int = 4) -> str:
    """``tau = 0.4123``, or for per-context balancing ``tau* per context (0.31 to 0.62)``."""
    if is_per_context(debias):
        taus = np.array(list(context_taus), dtype=float)
        span = (f" ({taus.min():.{digits}f} to {taus.max():.{digits}f})" if len(taus) else "")
        return f"tau* per context{span}"
    return f"tau = {tau:.{digits}f}"


def threshold_view(table: ComparisonTable, debias: str | float | None) -> ThresholdView:
    """The comparisons and the threshold that ``debias`` reads them at (:class:`ThresholdView`).

    Raises
    ------
    InputError
        An unknown mode or a tau outside (0, 1).
    """
    p = np.asarray(table.p, dtype=np.float64)
    finite = np.isfinite(p)
    contexts = np.asarray(table.context_ids, dtype=object)
    if not is_per_context(debias):
        tau = resolve_tau(debias, p[finite])
        name = "none" if debias is None else str(debias)
        return ThresholdView(name, table, tau, {str(c): tau for c in pd.unique(contexts)})
    labels, taus = bias.balanced_thresholds(p[finite], contexts[finite].astype(str))
    per = dict(zip(labels.tolist(), taus.tolist()))
    reweighted = p.copy()
    if finite.any():
        # eq. 10 per context: each p reweighted (eq. 9) at its own context's tau*, read at 0.5
        tau_k = pd.Series(contexts[finite].astype(str)).map(per).to_numpy(dtype=np.float64)
        reweighted[finite] = bias.debias_by_threshold(p[finite], tau_k)
    view = ComparisonTable(table.context_ids, table.a_ids, table.b_ids, reweighted,
                           table.logp_a, table.logp_b, table.label_mass)
    return ThresholdView(BALANCED_PER_CONTEXT, view, 0.5, per)


@dataclass(frozen=True)
class TauEffect:
    """What the threshold does to a run's numbers for one ranking method (:func:`tau_effect`).

    ``hard``: the method counts eq. 10 verdicts. ``balanced_design``: in every context every
    ordered pair of its candidates was judged exactly once (the full design).
    ``contexts_reordered``: contexts whose ranking at this threshold differs from tau = 0.5, of
    ``n_contexts``. ``reason``: the same, in words.
    """

    # Fields, then a yes/no property: alike in shape to speed.TimeEstimate by accident.
    method: str
    debias: str
    hard: bool
    balanced_design: bool
    contexts_reordered: int
    n_contexts: int
    reason: str

    @property
    def ranking_moves(self) -> bool:
        return self.contexts_reordered > 0


def tau_effect(raw: Sequence[ContextComparisons], at: ThresholdView,
               parts_at: Sequence[ContextComparisons], method: str) -> TauEffect:
    """Which numbers the threshold moves, derived from the method, the design and the rankings.

    P(A), the verdicts, win rates and accuracy always follow tau (eq. 10). The ranking does by
    construction when the method counts verdicts (win ratio, eq. 6). A soft method (average
    probability, Bradley-Terry, PoE) sees tau only through eq. 9's reweighting; on the full design
    (every ordered pair judged exactly once), each candidate's score is a function of its
    total soft wins over both orders, ``sum_l p^_kl + (1 - p^_lk)`` (average probability and the
    PoE least squares by their formulas; Bradley-Terry because a complete balanced design's
    maximum-likelihood strengths order the candidates by those totals), and eq. 9 raises p^ in
    both orders of each pair alike, so the change mostly cancels. Whether it cancelled is not
    assumed: the rankings at tau = 0.5 and at ``at`` are compared context by context.

    Raises
    ------
    InputError
        An unknown method.
    """
    if method not in ranking.METHODS:
        raise InputError(f"unknown ranking method '{method}'; choose one of {', '.join(ranking.METHODS)}")
    fn = ranking.METHODS[method]
    hard = method == "win-ratio"
    balanced_design = bool(raw) and all(_full_design(cc) for cc in raw)
    moved = 0
    for before, after in zip(raw, parts_at):
        r0 = ranking.rank_scores(fn(before.n, before.i, before.j, before.p, tau=0.5).scores)
        r1 = ranking.rank_scores(fn(after.n, after.i, after.j, after.p, tau=at.tau).scores)
        moved += int(not np.array_equal(r0, r1))
    where = f"{moved} of {len(raw)} context(s) ranked differently than at tau = 0.5"
    if hard:
        why = (f"{method} counts eq. 10 verdicts (A wins when p > tau), so tau moves its "
               "ranking directly")
    elif balanced_design:
        why = (f"{method} reads soft probabilities on a full design (every pair judged once in "
               "each order): a candidate's score follows its soft wins summed over both orders, "
               "which eq. 9's reweighting raises alike in both orders, so the ranking rarely "
               "moves; tau still moves P(A), the verdicts, win rates and accuracy")
    else:
        why = (f"{method} reads soft probabilities reweighted by eq. 9; the design is not full "
               "(not every pair judged once in each order), so the reweighting does not cancel "
               "between orders and can move the ranking")
    return TauEffect(method=method, debias=at.debias, hard=hard,
                     balanced_design=balanced_design, contexts_reordered=moved,
                     n_contexts=len(raw), reason=f"{why}. Here: {where}.")


def _full_design(cc: ContextComparisons) -> bool:
    """Every ordered pair of the context's compared candidates judged exactly once (the paper's
    full design, §3.4): each pair in both orders, every candidate against every other."""
    if len(cc.i) == 0:
        return False
    key = cc.i * cc.n + cc.j
    m = len(np.unique(np.concatenate((cc.i, cc.j))))
    return len(np.unique(key)) == len(key) == m * (m - 1)


def rank_contexts(dataset: Dataset, table: ComparisonTable, *, method: str = "win-ratio",
                  tau: float = 0.5, with_ci: bool = False, n_boot: int = 200,
                  seed: int = 0) -> pd.DataFrame:
    """One row per candidate: context_id, rank (1 = best, ties share the smallest; missing,
    ``<NA>``, for a candidate never compared in its context: unranked, listed last),
    candidate_id, system, text, score, ci_low, ci_high, n_comparisons, and every
    reference-score column of the dataset."""
    if method not in ranking.METHODS:
        raise InputError(f"unknown ranking method '{method}'; choose one of {', '.join(ranking.METHODS)}")
    fn = ranking.METHODS[method]
    rows = []
    for cc in split_by_context(dataset, table):
        res = fn(cc.n, cc.i, cc.j, cc.p, tau=tau)
        low = high = np.full(cc.n, np.nan)
        if with_ci and len(cc.p):
            low, high = ranking.bootstrap_ci(method, cc.n, cc.i, cc.j, cc.p, tau=tau,
                                             n_boot=n_boot, seed=seed)
        ranks = ranking.rank_scores(res.scores)
        for k, cand in enumerate(cc.context.candidates):
            # a candidate never compared in its context is unranked: no rank, not one past last
            unranked = res.n_comparisons[k] == 0 or not np.isfinite(res.scores[k])
            row = dict(context_id=cc.context.context_id, rank=pd.NA if unranked else int(ranks[k]),
                       candidate_id=cand.candidate_id, system=cand.system, text=cand.text,
                       score=float(res.scores[k]), ci_low=float(low[k]), ci_high=float(high[k]),
                       n_comparisons=int(res.n_comparisons[k]))
            for col in dataset.score_columns:
                row[col] = cand.scores.get(col, np.nan)
            rows.append(row)
    cols = ["context_id", "rank", "candidate_id", "system", "text", "score", "ci_low", "ci_high",
            "n_comparisons", *dataset.score_columns]
    df = pd.DataFrame(rows, columns=cols).astype({"rank": "Int64"})
    return df.sort_values(["context_id", "rank"], kind="stable", key=_context_order(dataset)).reset_index(drop=True)


def _context_order(dataset: Dataset):
    pos = {c.context_id: k for k, c in enumerate(dataset.contexts)}

    def key(col: pd.Series) -> pd.Series:
        return col.map(pos) if col.name == "context_id" else col
    return key


@dataclass(frozen=True)
class Evaluation:
    """Numbers of one run at one threshold (all labelled; x100 where the paper reports x100)."""

    tau: float
    p_a: float
    p_b: float
    spearman_x100: float | None = None
    kendall_x100: float | None = None
    system_spearman_x100: float | None = None
    pooled_spearman_x100: float | None = None
    pairwise_accuracy: float | None = None
    n_pairs_accuracy: int = 0
    contexts_used: int = 0
    contexts_skipped: int = 0
    #: Contexts whose ranking gives every candidate the same score (the correlation there is
    #: undefined: ``metrics.per_context_correlation``).
    contexts_constant: int = 0


@dataclass(frozen=True)
class EvaluationReport:
    run: str
    method: str
    reference: str | None
    n_comparisons: int
    n_contexts: int
    balanced_tau: float
    flip_rate: float
    n_pairs_both_orders: int
    raw: Evaluation
    debiased: Evaluation
    notes: list[str] = field(default_factory=list)
    #: Plain warnings about the judge (``diagnosis.PositionDiagnosis``), each with its remedy.
    warnings: list[str] = field(default_factory=list)
    #: The debias mode of ``debiased`` and its threshold in words (``tau = 0.4123`` or the
    #: per-context range); ``context_taus``: context id -> threshold its comparisons were decided
    #: at (``debiased.tau`` is 0.5 on eq. 9's reweighted p under per-context balancing).
    debias: str = "balanced"
    threshold: str = ""
    context_taus: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        out = asdict(self)
        if self.debias == BALANCED_PER_CONTEXT:  # no single tau: JSON null, not NaN
            out["debiased"]["tau"] = None
        return out


def evaluate_at(dataset: Dataset, parts: Sequence[ContextComparisons], *, method: str,
                reference: str | None, tau: float, all_p: FloatArray,
                balanced: bool = False) -> Evaluation:
    # ``balanced``: tau is the balanced threshold, and the comparisons with p exactly at tau* (a
    # sampled judge's p = 0.5) are split so that P(A) is 0.5 as balancing promises, instead of
    # all counting for B (eq. 10 as written).
    at_tau = bias.balanced_split(all_p)[1] if balanced and len(all_p) else 0.0
    p_a, p_b = bias.positional_bias(all_p, tau, at_tau)
    if reference is None:
        return Evaluation(tau=tau, p_a=p_a, p_b=p_b)
    fn = ranking.METHODS[method]
    preds, refs, systems = [], [], []
    acc_hits = acc_n = 0
    for cc in parts:
        preds.append(fn(cc.n, cc.i, cc.j, cc.p, tau=tau).scores)
        ref = np.array([c.scores.get(reference, np.nan) for c in cc.context.candidates], dtype=float)
        refs.append(ref)
        systems.append([c.system for c in cc.context.candidates])
        acc, n_used = metrics.pairwise_accuracy(cc.i, cc.j, cc.p, ref, tau)
        if n_used:
            acc_hits += acc * n_used
            acc_n += n_used
    sp = metrics.per_context_correlation(preds, refs, method="spearman")
    kd = metrics.per_context_correlation(preds, refs, method="kendall")
    flat_sys = [s for ss in systems for s in ss]
    system_x100 = None
    if all(s is not None for s in flat_sys) and len(set(flat_sys)) > 2:
        system_x100 = metrics.system_level_correlation(preds, refs, systems, method="spearman")
    pooled = metrics.pooled_correlation(preds, refs, method="spearman")
    return Evaluation(tau=tau, p_a=p_a, p_b=p_b, spearman_x100=sp.mean_x100,
                      kendall_x100=kd.mean_x100, system_spearman_x100=system_x100,
                      pooled_spearman_x100=pooled,
                      pairwise_accuracy=(acc_hits / acc_n) if acc_n else None,
                      n_pairs_accuracy=acc_n, contexts_used=sp.n_used, contexts_skipped=sp.n_skipped,
                      contexts_constant=sp.n_constant_prediction)


def check_reference(dataset: Dataset, reference: str | None) -> None:
    """Raise ``InputError`` unless ``reference`` is None or a score column of ``dataset``."""
    if reference is not None and reference not in dataset.score_columns:
        raise InputError(f"reference column '{reference}' is not in dataset '{dataset.name}'; "
                         f"it has: {', '.join(dataset.score_columns) or 'no score columns'}")


def evaluate_run(dataset: Dataset, table: ComparisonTable, *, run: str = "", method: str = "win-ratio",
                 reference: str | None = None, debias: str | float = "balanced") -> EvaluationReport:
    """Raw (tau = 0.5) and debiased numbers for a run: the content of ``compassess evaluate``."""
    check_reference(dataset, reference)
    parts, all_p = split_with_p(dataset, table)
    tau_star = float(bias.balanced_threshold(all_p)) if len(all_p) else 0.5
    view = threshold_view(table, debias)
    parts_at, all_p_at = split_with_p(dataset, view.table) if view.per_context else (parts, all_p)
    i_all, j_all, p_all = _global_pairs(parts)
    fr, n_both = bias.flip_rate(i_all, j_all, p_all, 0.5) if len(p_all) else (float("nan"), 0)
    notes = []
    if reference is None:
        notes.append("no --reference column given: correlations not computed")
    raw = evaluate_at(dataset, parts, method=method, reference=reference, tau=0.5, all_p=all_p)
    deb = evaluate_at(dataset, parts_at, method=method, reference=reference, tau=view.tau,
                      all_p=all_p_at, balanced=view.debias == "balanced")
    if view.per_context:  # no single tau: the contexts' own are in ``context_taus``
        deb = replace(deb, tau=float("nan"))
    warning = position_diagnosis(parts, view.tau, parts_at,
                                 view.label(3) if view.per_context else "").warning()
    warnings = [warning] if warning else []
    return EvaluationReport(run=run, method=method, reference=reference, n_comparisons=int(len(all_p)),
                            n_contexts=len(parts), balanced_tau=tau_star, flip_rate=float(fr),
                            n_pairs_both_orders=int(n_both), raw=raw, debiased=deb, notes=notes,
                            warnings=warnings, debias=view.debias,
                            threshold=view.label(4), context_taus=view.context_taus)


def _global_pairs(parts: Sequence[ContextComparisons]) -> tuple[IntArray, IntArray, FloatArray]:
    """Concatenate contexts with offset indices so pair-level functions work across contexts."""
    if not parts:
        e = np.array([], dtype=np.int64)
        return e, e, np.array([], dtype=float)
    offsets = np.cumsum([0] + [cc.n for cc in parts[:-1]])
    i = np.concatenate([cc.i + o for cc, o in zip(parts, offsets)])
    j = np.concatenate([cc.j + o for cc, o in zip(parts, offsets)])
    p = np.concatenate([cc.p for cc in parts])
    return i, j, p


def bias_by_context(dataset: Dataset, table: ComparisonTable, tau: float | str) -> pd.DataFrame:
    """P(A), P(B) and flip rate per context at threshold ``tau`` (eq. 8), with the threshold each
    context was decided at (``tau``: a number, or any debias mode :func:`threshold_view` reads,
    e.g. ``balanced-per-context``, one tau* per context)."""
    view = threshold_view(table, tau if isinstance(tau, str) else float(tau))
    rows = []
    for cc in split_by_context(dataset, view.table):
        p_a, p_b = bias.positional_bias(cc.p, view.tau)
        fr, n_both = bias.flip_rate(cc.i, cc.j, cc.p, view.tau)
        rows.append(dict(context_id=cc.context.context_id, n_comparisons=len(cc.p),
                         tau=view.context_taus.get(cc.context.context_id, view.tau), p_a=p_a,
                         p_b=p_b, flip_rate=fr, n_pairs_both_orders=n_both))
    return pd.DataFrame(rows, columns=["context_id", "n_comparisons", "p_a", "p_b", "flip_rate",
                                       "n_pairs_both_orders", "tau"])


def order_dependence(dataset: Dataset, table: ComparisonTable,
                     tau: float | dict[str, float] = 0.5) -> pd.DataFrame:
    """Unordered pairs judged in both orders, most order-dependent first.

    ``inconsistency`` = |p_ij - (1 - p_ji)|: 0 for a judge that ignores order; ``flips`` marks pairs
    whose verdict at ``tau`` (one value, or context id -> threshold) changes with the order.
    """
    cols = ["context_id", "first", "second", "p_first_second", "p_second_first", "inconsistency",
            "flips"]
    parts = []
    for cc in split_by_context(dataset, table):
        t = tau.get(cc.context.context_id, 0.5) if isinstance(tau, dict) else tau
        m = bias.comparison_matrix(cc.n, cc.i, cc.j, cc.p)
        a, b = np.triu_indices(cc.n, 1)
        pij, pji = m[a, b], m[b, a]
        ok = ~np.isnan(pij) & ~np.isnan(pji)
        a, b, pij, pji = a[ok], b[ok], pij[ok], pji[ok]
        ids = np.array(cc.context.candidate_ids, dtype=object)
        parts.append(pd.DataFrame({
            "context_id": cc.context.context_id, "first": ids[a], "second": ids[b],
            "p_first_second": pij, "p_second_first": pji,
            "inconsistency": np.abs(pij - (1.0 - pji)),
            # consistent iff exactly one order is decided for the pair's first-listed candidate
            "flips": (pij > t) == (pji > t)}, columns=cols))
    df = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)
    return df.sort_values("inconsistency", ascending=False, kind="stable").reset_index(drop=True)


def context_matrix(dataset: Dataset, table: ComparisonTable, context_id: str) -> tuple[list[str], FloatArray]:
    """Candidate ids and the n x n matrix of p_ij (row = first position, column = second; nan = not compared)."""
    ctx = dataset.context(context_id)
    for cc in split_by_context(dataset, table.for_context(context_id)):
        return ctx.candidate_ids, bias.comparison_matrix(cc.n, cc.i, cc.j, cc.p)
    n = len(ctx.candidates)
    return ctx.candidate_ids, np.full((n, n), np.nan)


def decision_matrix(matrix: FloatArray, tau: float) -> FloatArray:
    """Eq. 10 decisions of a p_ij matrix: 1 where the first position wins (p_ij > tau), 0 where the
    second does, NaN where the pair was not compared (Liusie et al. 2024, eq. 10)."""
    tau = resolve_tau(tau, np.array([], dtype=float))
    m = np.asarray(matrix, dtype=np.float64)
    return np.where(np.isnan(m), np.nan, (m > tau).astype(np.float64))


def consistency_matrix(matrix: FloatArray) -> FloatArray:
    """``p_ij - (1 - p_ji)`` per cell: 0 for a judge that ignores order, > 0 where the pair's first
    position is favoured in both orders; NaN unless both orders were compared."""
    m = np.asarray(matrix, dtype=np.float64)
    return m - (1.0 - m.T)


def overall_flip_rate(parts: Sequence[ContextComparisons], tau: float) -> tuple[float, int]:
    """Flip rate over every context at threshold ``tau``: share of unordered pairs judged in both
    orders whose eq. 10 verdict changes with the order; ``(nan, 0)`` without such pairs."""
    i, j, p = _global_pairs(parts)
    if len(p) == 0:
        return float("nan"), 0
    return bias.flip_rate(i, j, p, tau)


def position_diagnosis(parts: Sequence[ContextComparisons], tau: float,
                       parts_at: Sequence[ContextComparisons] | None = None, threshold: str = ""):
    """The run's ``diagnosis.PositionDiagnosis`` (P(A) and flip rate, raw and at ``tau``) over
    every context: what the result pages and ``compassess evaluate`` warn about. ``parts_at``:
    the comparisons as the threshold reads them when they differ (a per-context
    :class:`ThresholdView`), named ``threshold``."""
    i, j, p = _global_pairs(parts)
    p_at = None if parts_at is None else _global_pairs(parts_at)[2]
    return diagnose_position(i, j, p, tau, p_at, threshold)

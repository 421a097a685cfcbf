"""Pure table and curve code of the paper reproduction (benchmarks/reproduce_paper.py, docs/results.md).

Everything here works on stored results (full comparison matrices, score tables) and reference
scores: Spearman x100 of comparative assessment, prompt scoring and G-Eval (Tables 1/3 of Liusie
et al. 2024, EACL), positional bias and raw vs debiased quality (Tables 5-7, 9), fewer candidates
(Table 8), win ratio vs maximum likelihood (Table 11), and Spearman against the number of
comparisons for each selection strategy, averaged over draws, from the stored full matrices
(Figure 4), plus a simulated judge. This module must never call a model or open a store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from compassess_core.stats import bias, ranking
from compassess_core.stats.efficient import adaptive_pairs_from_matrix, poe_pairs
from compassess_core.errors import InputError
from compassess_core.stats.metrics import correlation
from compassess_core.runs.selection import max_budget, select_pairs
from compassess_core.types import ComparisonTable, Dataset, FloatArray

CURVE_STRATEGIES = ("random", "no-repeat", "symmetric", "poe", "adaptive")


@dataclass(frozen=True)
class ContextMatrix:
    """One context's full matrix ``p[i, j]`` (first i, second j; NaN on the diagonal and where
    not stored) and its candidates' reference scores."""

    context_id: str
    p: FloatArray
    ref: FloatArray


def context_matrices(dataset: Dataset, table: ComparisonTable, reference: str) -> list[ContextMatrix]:
    """The stored matrix of every context that has comparisons, in dataset order.

    Raises
    ------
    InputError
        ``reference`` is not a score column of the dataset.
    """
    if reference not in dataset.score_columns:
        raise InputError(f"reference column '{reference}' is not in dataset '{dataset.name}'")
    out = []
    present = set(table.context_ids.tolist())
    for ctx in dataset.contexts:
        if ctx.context_id not in present:
            continue
        t = table.for_context(ctx.context_id)
        pos = {c: k for k, c in enumerate(ctx.candidate_ids)}
        n = len(pos)
        m = np.full((n, n), np.nan)
        i = np.fromiter((pos[a] for a in t.a_ids), dtype=np.int64, count=len(t))
        j = np.fromiter((pos[b] for b in t.b_ids), dtype=np.int64, count=len(t))
        m[i, j] = t.p
        ref = np.array([c.scores.get(reference, np.nan) for c in ctx.candidates], dtype=np.float64)
        out.append(ContextMatrix(ctx.context_id, m, ref))
    return out


def _entries(m: FloatArray, pairs: np.ndarray | None = None):
    if pairs is None:
        i, j = np.nonzero(~np.isnan(m))
    else:
        i, j = pairs[:, 0], pairs[:, 1]
        ok = ~np.isnan(m[i, j])
        i, j = i[ok], j[ok]
    return i, j, m[i, j]


def pooled_tau(mats: Sequence[ContextMatrix], pairs: Sequence[np.ndarray] | None = None) -> float:
    """Balancing threshold (P(A) = P(B) = 0.5, eq. 10) over the comparisons of all contexts."""
    ps = [_entries(c.p, None if pairs is None else pairs[k])[2] for k, c in enumerate(mats)]
    allp = np.concatenate(ps) if ps else np.array([])
    return float(bias.balanced_threshold(allp)) if len(allp) else 0.5


def spearman_x100(mats: Sequence[ContextMatrix], *, method: str = "win-ratio", tau: float = 0.5,
                  pairs: Sequence[np.ndarray] | None = None,
                  against: Sequence[FloatArray] | None = None) -> float:
    """Per-context Spearman of the ranking from (a subset of) each matrix with the reference,
    averaged over contexts, x100 (§4 of Liusie et al. 2024). Contexts with a constant reference
    are skipped; a constant ranking against a varying one counts 0 (as
    :func:`compassess_core.stats.metrics.per_context_correlation`). Candidates a subset never compared get their context's mean score (the PoE
    prior mean / a neutral win ratio), so every budget is judged on all candidates: dropping them
    would score small budgets on an easier, smaller set.

    ``against``: one score vector per context to correlate with instead of the reference (e.g.
    the full matrix's own scores, for how much of the full ranking a subset keeps)."""
    fn = ranking.METHODS[method]
    vals = []
    for k, c in enumerate(mats):
        i, j, p = _entries(c.p, None if pairs is None else pairs[k])
        if len(p) == 0:
            continue
        s = fn(len(c.ref), i, j, p, tau=tau).scores
        s = np.where(np.isnan(s), np.nanmean(s), s)
        ref = c.ref if against is None else against[k]
        r = correlation(s, ref)
        if np.isnan(r) and np.ptp(ref) > 0 and np.ptp(s) == 0:
            r = 0.0   # a constant ranking against a varying reference: counted 0, as the engine's
                      # per_context_correlation counts it (and as the tables of 2026-11-21 did)
        if not np.isnan(r):
            vals.append(r)
    return float(100.0 * np.mean(vals)) if vals else float("nan")


def full_matrix_scores(mats: Sequence[ContextMatrix], *, method: str = "win-ratio",
                       tau: float = 0.5) -> list[FloatArray]:
    """Each context's scores from its whole stored matrix (the target of ``against="full-matrix"``)."""
    fn = ranking.METHODS[method]
    out = []
    for c in mats:
        i, j, p = _entries(c.p)
        out.append(fn(len(c.ref), i, j, p, tau=tau).scores if len(p) else np.full(len(c.ref), np.nan))
    return out


@dataclass(frozen=True)
class QualityRow:
    """Tables 5/6/7/9 for one run: P(A), Spearman and pairwise accuracy raw and debiased."""

    n_contexts: int
    n_comparisons: int
    p_a_raw: float
    tau: float
    spearman_raw: float
    spearman_debiased: float
    accuracy_raw: float
    accuracy_debiased: float


def quality_row(mats: Sequence[ContextMatrix], method: str = "win-ratio") -> QualityRow:
    """Positional bias and quality raw (tau = 0.5) vs debiased (balanced tau, eq. 10)."""
    from compassess_core.stats.metrics import pairwise_accuracy

    tau = pooled_tau(mats)
    allp = np.concatenate([_entries(c.p)[2] for c in mats]) if mats else np.array([])
    acc = {}
    for name, t in (("raw", 0.5), ("deb", tau)):
        correct = total = 0
        for c in mats:
            i, j, p = _entries(c.p)
            a, n_used = pairwise_accuracy(i, j, p, c.ref, tau=t)
            if n_used:
                correct += a * n_used
                total += n_used
        acc[name] = correct / total if total else float("nan")
    return QualityRow(len(mats), int(len(allp)),
                      float(bias.positional_bias(allp, 0.5)[0]) if len(allp) else float("nan"),
                      tau, spearman_x100(mats, method=method, tau=0.5),
                      spearman_x100(mats, method=method, tau=tau), acc["raw"], acc["deb"])


def mean_matrices(*runs: Sequence[ContextMatrix]) -> list[ContextMatrix]:
    """Average p over templates for the contexts every run has (the "mean" column of Table 1)."""
    common = set.intersection(*(set(c.context_id for c in r) for r in runs))
    by = [{c.context_id: c for c in r} for r in runs]
    out = []
    for c in runs[0]:
        if c.context_id in common:
            stack = np.stack([b[c.context_id].p for b in by])
            out.append(ContextMatrix(c.context_id, stack.mean(axis=0), c.ref))
    return out


def fewer_candidates(mats: Sequence[ContextMatrix], sizes: Sequence[int], draws: int = 50,
                     seed: int = 0, method: str = "win-ratio") -> dict[int, float]:
    """Table 8 analogue: Spearman x100 when only ``k`` of a context's candidates are ranked (their
    submatrix), averaged over ``draws`` random subsets per context."""
    rng = np.random.default_rng(seed)
    out = {}
    for k in sizes:
        vals = []
        for _ in range(draws):
            sub = []
            for c in mats:
                n = len(c.ref)
                if k > n:
                    continue
                idx = np.sort(rng.choice(n, size=k, replace=False))
                sub.append(ContextMatrix(c.context_id, c.p[np.ix_(idx, idx)], c.ref[idx]))
            v = spearman_x100(sub, method=method)
            if not np.isnan(v):
                vals.append(v)
        out[int(k)] = float(np.mean(vals)) if vals else float("nan")
    return out


def method_comparison(mats: Sequence[ContextMatrix], methods: Sequence[str] = (
        "win-ratio", "bradley-terry", "poe")) -> dict[str, tuple[float, float]]:
    """Table 11 analogue: Spearman x100 (raw, debiased) of each ranking method on the full matrices."""
    tau = pooled_tau(mats)
    return {m: (spearman_x100(mats, method=m, tau=0.5), spearman_x100(mats, method=m, tau=tau))
            for m in methods}


# ------------------------------------------------------------------------------ curves

def budgets_for(n: int, fractions: Sequence[float]) -> list[int]:
    """Even budgets (so symmetric works) at the given fractions of n(n-1), at least 2."""
    total = n * (n - 1)
    return [int(max(2, min(total, 2 * round(f * total / 2)))) for f in fractions]


def _select(strategy: str, m: FloatArray, budget: int, seed: int) -> np.ndarray:
    n = m.shape[0]
    if budget >= n * (n - 1) and strategy != "no-repeat":
        # every ordered pair: the same full matrix whatever the strategy (and no greedy O(n^4))
        i, j = np.nonzero(~np.eye(n, dtype=bool))
        return np.column_stack((i, j))
    if strategy == "adaptive":
        return adaptive_pairs_from_matrix(m, budget, seed, batch=max(2, n // 2))
    if strategy == "poe":
        return poe_pairs(n, budget, seed)
    return select_pairs(n, strategy, min(budget, max_budget(n, strategy)), seed)


def selection_curve(mats: Sequence[ContextMatrix], strategy: str, fractions: Sequence[float],
                    draws: int = 50, debias: bool = False, method: str = "win-ratio",
                    seed: int = 0, against: str = "reference") -> tuple[FloatArray, FloatArray]:
    """Figure 4 analogue: mean and std over ``draws`` of the Spearman x100 when each context keeps
    only the comparisons ``strategy`` selects at ``fraction * n(n-1)`` comparisons.

    ``debias``: decide at the balanced threshold of the selected comparisons (pooled over
    contexts); otherwise at 0.5. Every context must have the same number of candidates.
    ``against``: ``"reference"`` (the human scores, Figure 4) or ``"full-matrix"`` (the same
    method's ranking from the whole matrix, at its own balanced threshold when ``debias``): how
    much of the full ranking the subset keeps, a measure that does not depend on how good the
    judge is.

    Raises
    ------
    InputError
        Unknown strategy or ``against``, or contexts of different sizes.
    """
    if strategy not in CURVE_STRATEGIES:
        raise InputError(f"unknown curve strategy {strategy!r}; choose one of {', '.join(CURVE_STRATEGIES)}")
    if against not in ("reference", "full-matrix"):
        raise InputError(f"against must be 'reference' or 'full-matrix', got {against!r}")
    targets = None
    if against == "full-matrix":
        targets = full_matrix_scores(mats, method=method, tau=pooled_tau(mats) if debias else 0.5)
    sizes = {len(c.ref) for c in mats}
    if len(sizes) != 1:
        raise InputError(f"contexts have different numbers of candidates {sorted(sizes)}")
    n = sizes.pop()
    means, stds = [], []
    for budget in budgets_for(n, fractions):
        vals = []
        for d in range(draws):
            pairs = [_select(strategy, c.p, budget, seed * 100_003 + d * 7919 + k)
                     for k, c in enumerate(mats)]
            tau = pooled_tau(mats, pairs) if debias else 0.5
            vals.append(spearman_x100(mats, method=method, tau=tau, pairs=pairs, against=targets))
        means.append(np.nanmean(vals))
        stds.append(np.nanstd(vals))
    return np.array(means), np.array(stds)


def fraction_to_reach(fractions: Sequence[float], curve: FloatArray, target: float) -> float:
    """Smallest fraction of comparisons whose mean Spearman reaches ``target`` (NaN if none)."""
    ok = np.flatnonzero(np.asarray(curve) >= target)
    return float(fractions[ok[0]]) if len(ok) else float("nan")


# ------------------------------------------------------------------------------ simulated judge

def simulated_matrices(n: int, contexts: int, *, slope: float = 1.0, noise: float = 1.0,
                       bias_logit: float = 0.4, rho: float = 1.0, seed: int = 0) -> list[ContextMatrix]:
    """A judge with known scores.

    The reference (human) scores are ``h ~ N(0, 1)``; the judge's own latent scores are
    ``a = slope (rho h + sqrt(1 - rho^2) z)``, ``z ~ N(0, 1)``, so ``rho`` is how far the judge
    agrees with people even when it sees every pair (1: only comparison noise separates them);
    ``logit p_ij = a_i - a_j + bias_logit + e_ij`` with ``e_ij ~ N(0, noise^2)`` independent per
    ordered pair (so the two orders of a pair disagree as a real judge's do) and a positional bias
    towards the first position. This is the model :func:`fit_judge` fits to stored matrices.
    """
    if not (-1.0 <= rho <= 1.0):
        raise InputError(f"rho must be in [-1, 1], got {rho}")
    rng = np.random.default_rng(seed)
    out = []
    for k in range(contexts):
        h = rng.normal(size=n)
        z = rng.normal(size=n)
        a = slope * (rho * h + np.sqrt(1.0 - rho * rho) * z)
        logit = (a[:, None] - a[None, :]) + bias_logit + rng.normal(scale=noise, size=(n, n))
        p = 1.0 / (1.0 + np.exp(-logit))
        np.fill_diagonal(p, np.nan)
        out.append(ContextMatrix(f"sim{k}", p, h))
    return out


@dataclass(frozen=True)
class JudgeFit:
    """A stored judge summarised by the model of :func:`simulated_matrices` (all in log-odds)."""

    bias_logit: float   #: mean log-odds of the first position, ``b``
    noise_sd: float     #: sd of one comparison's residual ``e_ij``
    signal_sd: float    #: sd of the judge's latent scores ``a`` (noise of their estimate removed)
    rho: float          #: Pearson correlation of ``a`` with the reference, corrected for that noise
    n_contexts: int
    n_comparisons: int

    @property
    def noise_to_signal(self) -> float:
        """``noise_sd / signal_sd``: how many comparisons a ranking needs (lower is easier)."""
        return self.noise_sd / self.signal_sd if self.signal_sd > 0 else float("inf")


def fit_judge(mats: Sequence[ContextMatrix], eps: float = 1e-4) -> JudgeFit:
    """Fit ``logit p_ij = a_i - a_j + b + e_ij`` to full matrices by least squares.

    On a complete matrix the least-squares solution is closed form: ``b`` the mean of
    ``(L_ij + L_ji) / 2``, ``a_i`` the row mean of ``D_ij = (L_ij - L_ji) / 2`` (sum-zero gauge),
    residual variance ``sigma^2 = sum e^2 / (n(n-1) - n)`` (``n - 1`` scores and ``b`` fitted).
    Each ``a_i`` is a mean of ``n - 1`` differences, so its estimate carries noise of variance
    ``sigma^2 / (2 (n - 1))``: it is subtracted from the observed variance of ``a`` (signal) and
    the observed correlation with the reference is divided by ``sqrt(reliability)`` (Spearman's
    correction for attenuation). ``p`` is clipped to ``[eps, 1 - eps]`` before the logit; contexts
    with missing entries or a constant reference are skipped.

    Raises
    ------
    InputError
        No context has a complete matrix.
    """
    biases, noise, sig, rel_r = [], [], [], []
    m_total = 0
    for c in mats:
        n = len(c.ref)
        off = ~np.eye(n, dtype=bool)
        if n < 3 or np.isnan(c.p[off]).any():
            continue
        lg = np.log(np.clip(c.p, eps, 1 - eps) / (1 - np.clip(c.p, eps, 1 - eps)))
        lg[~off] = 0.0
        sym = (lg + lg.T) / 2.0
        d = (lg - lg.T) / 2.0
        b = sym[off].mean()
        a = d.sum(axis=1) / n
        resid = lg - (a[:, None] - a[None, :]) - b
        s2 = float((resid[off] ** 2).sum() / (n * (n - 1) - n))
        est_var = s2 / (2.0 * (n - 1))
        signal = max(float(a.var(ddof=1)) - est_var, 1e-12)
        biases.append(b)
        noise.append(s2)
        sig.append(signal)
        m_total += n * (n - 1)
        if np.std(c.ref) > 0:
            r = float(np.corrcoef(a, c.ref)[0, 1])
            rel_r.append((r, signal / (signal + est_var)))
    if not biases:
        raise InputError("fit_judge needs at least one context with a complete comparison matrix")
    rel = float(np.mean([x[1] for x in rel_r])) if rel_r else 1.0
    r_obs = float(np.mean([x[0] for x in rel_r])) if rel_r else float("nan")
    rho = float(np.clip(r_obs / np.sqrt(rel), -1.0, 1.0)) if rel > 0 else float("nan")
    return JudgeFit(float(np.mean(biases)), float(np.sqrt(np.mean(noise))), float(np.sqrt(np.mean(sig))),
                    rho, len(biases), m_total)


def simulated_like(fit: JudgeFit, n: int, contexts: int, seed: int = 0, *,
                   rho: float | None = None) -> list[ContextMatrix]:
    """Matrices of a simulated judge with a fitted judge's bias, noise and signal (and its ``rho``
    unless given)."""
    return simulated_matrices(n, contexts, slope=fit.signal_sd, noise=fit.noise_sd,
                              bias_logit=fit.bias_logit, rho=fit.rho if rho is None else rho,
                              seed=seed)


def score_spearman_x100(vectors: Mapping[str, FloatArray], mats_or_refs: Mapping[str, FloatArray]) -> float:
    """Per-context Spearman x100 of absolute scores (prompt scoring / G-Eval) with references."""
    vals = [correlation(vectors[c], r) for c, r in mats_or_refs.items() if c in vectors]
    vals = [v for v in vals if not np.isnan(v)]
    return float(100.0 * np.mean(vals)) if vals else float("nan")


def curve_table(curves: Mapping[str, FloatArray], fractions: Sequence[float],
                fmt: Callable[[float], str] = lambda v: f"{v:.1f}") -> str:
    """A markdown table: one row per curve, one column per fraction of comparisons."""
    head = "| strategy | " + " | ".join(f"{100 * f:g}%" for f in fractions) + " |"
    sep = "|---" * (len(fractions) + 1) + "|"
    rows = [f"| {k} | " + " | ".join(fmt(v) for v in c) + " |" for k, c in curves.items()]
    return "\n".join([head, sep, *rows])

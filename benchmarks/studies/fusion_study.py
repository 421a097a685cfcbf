"""Pure curve code of the human-label study (``benchmarks/judges_study.py``, docs/results.md).

How good a ranking gets with a budget of human labels, with and without the judge, and how the
pairs to label should be chosen. Expert scores stand in for the annotators (an oracle: the
candidate with the higher expert score is preferred, equal scores are a fair coin, and with
``error_rate`` each label is flipped with that probability). For every budget the study reports
Spearman x100 (per-context mean, the paper's protocol, Liusie et al. 2024 §4) against the same
expert scores of three rankings from :mod:`compassess_core.stats.fusion`: the humans alone (``w = inf``),
the judge alone (``w = 0``) and the two fused (``w`` by leave-one-out cross-validation on the
labels so far), with the labels chosen at random or by the fused posterior's uncertainty
(:func:`fusion.label_value`, greedily, one label at a time; the weight it assumes is the one
cross-validated at the previous budget).

This module must never call a model or open a store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from compassess_core.stats import analysis, fusion, metrics
from compassess_core.stats.bias import balanced_threshold, debias_probabilities
from compassess_core.stats.efficient import NOISE_VAR
from compassess_core.errors import InputError
from compassess_core.types import ComparisonTable, Dataset, FloatArray, IntArray

__all__ = ["POLICIES", "StudyContext", "study_contexts", "study_contexts_from_matrices",
           "oracle_votes", "BudgetCurve", "budget_curve", "labels_to_reach"]

#: How the pairs to label are chosen.
POLICIES: tuple[str, ...] = ("random", "uncertainty")


@dataclass(frozen=True)
class StudyContext:
    """One context of the study: the judge's comparisons (``llm_p`` already debiased) and the
    candidates' expert scores ``ref``."""

    context_id: str
    llm_i: IntArray
    llm_j: IntArray
    llm_p: FloatArray
    ref: FloatArray

    @property
    def n(self) -> int:
        return len(self.ref)


def study_contexts(dataset: Dataset, table: ComparisonTable, reference: str,
                   tau: float = 0.5) -> list[StudyContext]:
    """The contexts the run judged, with their comparisons at ``tau`` (eq. 9) and the
    ``reference`` column as expert scores.

    Raises
    ------
    InputError
        ``reference`` is not a score column of the dataset.
    """
    analysis.check_reference(dataset, reference)
    out = []
    for ctx, x in fusion.context_inputs(dataset, table, None, tau):
        ref = np.array([c.scores.get(reference, np.nan) for c in ctx.candidates], dtype=np.float64)
        out.append(StudyContext(ctx.context_id, x.llm_i, x.llm_j, x.llm_p, ref))
    return out


def study_contexts_from_matrices(mats: Sequence) -> list[StudyContext]:
    """Study contexts from full matrices (``reproduction.ContextMatrix``, e.g. a simulated judge
    with known scores), every stored ``p`` reweighted at the balancing threshold of all of them
    (eq. 9-10 of Liusie et al. 2024)."""
    entries = [np.nonzero(~np.isnan(m.p)) for m in mats]
    all_p = np.concatenate([m.p[i, j] for m, (i, j) in zip(mats, entries)]) if mats else np.zeros(0)
    tau = float(balanced_threshold(all_p)) if len(all_p) else 0.5
    return [StudyContext(m.context_id, i.astype(np.int64), j.astype(np.int64),
                         debias_probabilities(m.p[i, j], tau), np.asarray(m.ref, dtype=np.float64))
            for m, (i, j) in zip(mats, entries)]


def oracle_votes(ref: FloatArray, a: IntArray, b: IntArray, rng: np.random.Generator,
                 error_rate: float = 0.0) -> FloatArray:
    """An expert-score annotator's votes on pairs ``(a, b)``: +1 when ``a`` has the higher score,
    -1 when ``b`` has, a fair coin on equal scores; each vote flipped with ``error_rate``."""
    d = np.sign(ref[a] - ref[b])
    coin = np.where(rng.random(len(d)) < 0.5, 1.0, -1.0)
    vote = np.where(d == 0, coin, d)
    flip = rng.random(len(d)) < error_rate
    return np.where(flip, -vote, vote)


@dataclass(frozen=True)
class BudgetCurve:
    """Spearman x100 against the expert scores, mean over draws, at each total label budget.

    ``humans``, ``fused`` (and their per-draw values ``*_draws``) follow ``budgets``; ``judge`` is
    the judge alone (no labels); ``weights`` the cross-validated weight of a vote at each budget in
    each draw (``inf`` = humans alone).
    """

    policy: str
    budgets: IntArray
    n_contexts: int
    judge: float
    humans: FloatArray
    fused: FloatArray
    humans_draws: FloatArray
    fused_draws: FloatArray
    weights: FloatArray

    @property
    def per_context(self) -> FloatArray:
        """Labels per context at each budget."""
        return self.budgets / self.n_contexts


def _spearman(contexts: Sequence[StudyContext], means: Sequence[FloatArray]) -> float:
    return metrics.per_context_correlation(list(means), [c.ref for c in contexts]).mean_x100


def _inputs(c: StudyContext, votes: list[tuple[int, int, float]]) -> fusion.FusionInputs:
    v = np.array(votes, dtype=np.float64).reshape(-1, 3)
    return fusion.FusionInputs.build(c.n, c.llm_i, c.llm_j, c.llm_p, v[:, 0], v[:, 1], v[:, 2])


class _Greedy:
    """Uncertainty-driven choice: the unlabelled pair whose vote most reduces its context's total
    posterior variance, over all contexts, the covariance updated by Sherman-Morrison per vote."""

    def __init__(self, contexts: Sequence[StudyContext], rng: np.random.Generator) -> None:
        self.contexts = contexts
        self.rng = rng
        self.open = [np.triu(np.ones((c.n, c.n), dtype=bool), 1) for c in contexts]
        self.cov: list[FloatArray] = []
        self.best = np.full(len(contexts), -np.inf)
        self.arg = np.zeros((len(contexts), 2), dtype=np.int64)
        self.noise = NOISE_VAR

    def reset(self, weight: float, votes: Sequence[list]) -> None:
        w = fusion.DEFAULT_HUMAN_WEIGHT if weight == 0 else weight
        self.noise = NOISE_VAR / (1.0 if np.isinf(w) else w)
        self.cov = [fusion.fused_posterior(_inputs(c, v), w)[1] for c, v in zip(self.contexts, votes)]
        for k in range(len(self.contexts)):
            self._rescore(k)

    def _rescore(self, k: int) -> None:
        value = np.where(self.open[k], fusion.label_value(self.cov[k], self.noise), -np.inf)
        # Equal values (symmetric designs) are broken by a seeded jitter, not by index order.
        value = value + np.where(self.open[k], 1e-12 * self.rng.random(value.shape), 0.0)
        flat = int(np.argmax(value))
        self.best[k] = value.flat[flat]
        self.arg[k] = divmod(flat, value.shape[0])

    def pick(self) -> tuple[int, int, int]:
        k = int(np.argmax(self.best))
        a, b = (int(v) for v in self.arg[k])
        self.open[k][a, b] = False
        cov = self.cov[k]
        u = cov[:, a] - cov[:, b]
        self.cov[k] = cov - np.outer(u, u) / (self.noise + u[a] - u[b])
        self._rescore(k)
        return k, a, b


def _draw(contexts: Sequence[StudyContext], budgets: IntArray, policy: str,
          rng: np.random.Generator, error_rate: float) -> tuple[FloatArray, FloatArray, FloatArray]:
    pairs = [(k, a, b) for k, c in enumerate(contexts) for a, b in zip(*np.triu_indices(c.n, 1))]
    truth = {}
    for k, c in enumerate(contexts):
        a, b = np.triu_indices(c.n, 1)
        for x, y, v in zip(a, b, oracle_votes(c.ref, a, b, rng, error_rate)):
            truth[k, int(x), int(y)] = float(v)
    order = rng.permutation(len(pairs)) if policy == "random" else None
    greedy = _Greedy(contexts, rng) if policy == "uncertainty" else None
    votes: list[list] = [[] for _ in contexts]
    weight = fusion.DEFAULT_HUMAN_WEIGHT
    if greedy is not None:
        greedy.reset(weight, votes)
    humans, fused, weights = [], [], []
    taken = 0
    for budget in budgets:
        while taken < budget:
            k, a, b = (pairs[order[taken]] if order is not None else greedy.pick())
            votes[k].append((a, b, truth[k, a, b]))
            taken += 1
        problems = [_inputs(c, v) for c, v in zip(contexts, votes)]
        choice = fusion.choose_human_weight(problems)
        weight = choice.weight
        fused.append(_spearman(contexts, [fusion.fused_posterior(x, weight)[0] for x in problems]))
        humans.append(_spearman(contexts, [fusion.fused_posterior(x, np.inf)[0] for x in problems]))
        weights.append(weight)
        if greedy is not None:
            greedy.reset(weight, votes)
    return np.array(humans), np.array(fused), np.array(weights)


def budget_curve(contexts: Sequence[StudyContext], budgets: Sequence[int], policy: str, *,
                 draws: int = 10, seed: int = 0, error_rate: float = 0.0) -> BudgetCurve:
    """Spearman x100 of the humans-only, judge-only and fused rankings at each total budget of
    labels chosen by ``policy``, averaged over ``draws`` (each draw: its own coin for equal expert
    scores and errors, and its own random order or tie-breaking).

    Raises
    ------
    InputError
        Unknown policy, a budget larger than the number of pairs, or ``error_rate`` not in [0, 1].
    """
    if policy not in POLICIES:
        raise InputError(f"unknown labelling policy {policy!r}; choose one of {', '.join(POLICIES)}")
    if not 0.0 <= error_rate <= 1.0:
        raise InputError(f"error_rate must be in [0, 1], got {error_rate}")
    total = sum(c.n * (c.n - 1) // 2 for c in contexts)
    budgets = np.asarray(sorted(int(b) for b in budgets), dtype=np.int64)
    if len(budgets) and (budgets[0] < 0 or budgets[-1] > total):
        raise InputError(f"budgets must lie in 0..{total} (the unordered pairs of all contexts)")
    judge = _spearman(contexts, [fusion.fused_posterior(_inputs(c, []), 0.0)[0] for c in contexts])
    runs = [_draw(contexts, budgets, policy, np.random.default_rng([seed, d]), error_rate)
            for d in range(draws)]
    h = np.array([r[0] for r in runs])
    f = np.array([r[1] for r in runs])
    w = np.array([r[2] for r in runs])
    return BudgetCurve(policy, budgets, len(contexts), judge, h.mean(axis=0), f.mean(axis=0), h, f, w)


def labels_to_reach(budgets: Sequence[float], curve: Sequence[float], target: float) -> float:
    """The smallest budget at which ``curve`` reaches ``target``, linearly interpolated between
    budgets (NaN when it never does; the first budget when it starts there)."""
    x = np.asarray(budgets, dtype=np.float64)
    y = np.asarray(curve, dtype=np.float64)
    hit = np.flatnonzero(y >= target)
    if len(hit) == 0:
        return float("nan")
    k = int(hit[0])
    if k == 0:
        return float(x[0])
    return float(x[k - 1] + (target - y[k - 1]) * (x[k] - x[k - 1]) / (y[k] - y[k - 1]))

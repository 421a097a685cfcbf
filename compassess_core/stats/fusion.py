"""Rankings that fuse an LLM judge's comparisons with human A/B labels in one product of experts.

Every comparison is a Gaussian expert on a score difference (Liusie, Raina, Fathullah, Gales
2024, "Efficient LLM Comparative Assessment: a Product of Experts Framework", §4):

- the judge's comparison ``(i, j, p)`` says ``s_i - s_j ~ N(p^ - 1/2, sigma^2)``, ``p^`` its
  probability debiased by eq. 9 of Liusie, Manakul, Gales (EACL 2024) or calibrated on human labels
  (:mod:`compassess_core.stats.calibration`);
- a human vote says ``s_x - s_y ~ N(+-m, sigma^2 / w)`` (``0`` for a tie), with ``m`` the judge's
  typical margin ``mean |p^ - 1/2|`` in that ranking problem: a vote reads like a typical judge
  verdict for the person's choice, worth ``w`` judge comparisons. (A fixed margin such as 1/2
  would put the two candidates of every labelled pair far apart on the judge's scale, whatever
  their true difference, and distort the rest of the ranking.)

With the prior ``s ~ N(0, prior I)`` the product is Gaussian in closed form
(``efficient.difference_posterior``): the fused scores are its mean, their uncertainty its
covariance. ``w = 0`` is the judge alone and ``w = inf`` (the judge left out) the humans alone.

The weight ``w`` is chosen by leave-one-out cross-validation over the human votes, also in closed
form: a vote's own influence on its fitted difference is its leverage ``h = w u^T Sigma u /
sigma^2`` (``u = e_x - e_y``), and the prediction of the fit without it is ``(yhat - h y) / (1 - h)``
(the leave-one-out identity of a linear smoother). Among the weights whose held-out predictions
agree in sign with the most held-out votes (within one standard error) the largest wins; the
judge is left out altogether only when it agrees with at most half of the votes
(:func:`choose_human_weight`).

The pair a person should judge next is the one whose label most reduces the posterior uncertainty:
a vote on ``(x, y)`` turns ``Sigma`` into ``Sigma - Sigma u u^T Sigma / (sigma^2 / w + u^T Sigma
u)`` (Sherman-Morrison), so the total variance ``trace Sigma`` drops by
``||Sigma u||^2 / (sigma^2 / w + u^T Sigma u)`` (:func:`label_value`), for every pair at once.

Pure numpy/pandas: this module must never read or write storage or import a UI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from . import agreement, metrics
from .analysis import split_by_context
from .bias import debias_probabilities
from .efficient import NOISE_VAR, PRIOR_VAR, difference_posterior
from ..errors import InputError
from ..types import ComparisonTable, Context, Dataset, FloatArray, IntArray

__all__ = [
    "WEIGHT_GRID",
    "DEFAULT_HUMAN_WEIGHT",
    "MIN_CV_VOTES",
    "FusionInputs",
    "fused_posterior",
    "loo_vote_predictions",
    "WeightChoice",
    "choose_human_weight",
    "label_value",
    "context_inputs",
    "system_inputs",
    "FusedRanking",
    "fused_rankings",
    "fused_system_ranking",
    "fused_correlation",
    "informative_pairs",
    "weight_label",
]

#: Weights ``w`` of a human vote (in judge comparisons) tried by cross-validation; ``inf`` leaves
#: the judge out (the humans alone).
WEIGHT_GRID: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0,
                                  1024.0, np.inf)
#: Weight used when too few votes are there to cross-validate: large, so that people decide the
#: pairs they voted on and the judge the rest (what cross-validation settles on as well when a few
#: votes cannot tell the weights apart, see :func:`choose_human_weight`).
DEFAULT_HUMAN_WEIGHT = 64.0
#: Fewest decisive votes for which the weight is cross-validated.
MIN_CV_VOTES = 6
#: Fewest decisive votes on which the judge may be found no better than a coin and left out: with
#: fewer, a useful judge (agreeing with 60% of people) too often agrees with half of them by chance.
MIN_VOTES_TO_DROP_JUDGE = 20
#: What a vote says about ``s_x - s_y`` when there is no judge comparison to take the margin from.
VOTE_MARGIN = 0.5


@dataclass(frozen=True)
class FusionInputs:
    """One ranking problem: ``n`` items, the judge's comparisons ``(llm_i, llm_j, llm_p)`` with
    ``llm_p`` already debiased or calibrated, and human votes ``(human_i, human_j, human_y)`` with
    ``human_y`` = +1 (``human_i`` better), -1 (``human_j`` better) or 0 (tie)."""

    n: int
    llm_i: IntArray
    llm_j: IntArray
    llm_p: FloatArray
    human_i: IntArray
    human_j: IntArray
    human_y: FloatArray

    @staticmethod
    def build(n: int, llm_i=(), llm_j=(), llm_p=(), human_i=(), human_j=(), human_y=()
              ) -> "FusionInputs":
        """Typed arrays from any sequences (empty by default)."""
        def ints(v):
            return np.asarray(v, dtype=np.int64).reshape(-1)

        def floats(v):
            return np.asarray(v, dtype=np.float64).reshape(-1)
        return FusionInputs(int(n), ints(llm_i), ints(llm_j), floats(llm_p), ints(human_i),
                            ints(human_j), floats(human_y))

    @property
    def vote_margin(self) -> float:
        """``m``: the judge's mean ``|p^ - 1/2|`` here (:data:`VOTE_MARGIN` without comparisons)."""
        if len(self.llm_p) == 0:
            return VOTE_MARGIN
        return float(max(np.abs(self.llm_p - 0.5).mean(), 1e-6))


def _observations(x: FusionInputs, weight: float) -> tuple[IntArray, IntArray, FloatArray, FloatArray]:
    if weight < 0 or np.isnan(weight):
        raise InputError(f"the weight of a human vote must be >= 0 (or inf), got {weight}")
    y_h = x.vote_margin * x.human_y
    if np.isinf(weight):
        return x.human_i, x.human_j, y_h, np.ones(len(y_h))
    return (np.concatenate((x.llm_i, x.human_i)), np.concatenate((x.llm_j, x.human_j)),
            np.concatenate((x.llm_p - 0.5, y_h)),
            np.concatenate((np.ones(len(x.llm_p)), np.full(len(y_h), float(weight)))))


def fused_posterior(x: FusionInputs, weight: float, *, noise_var: float = NOISE_VAR,
                    prior_var: float = PRIOR_VAR) -> tuple[FloatArray, FloatArray]:
    """Posterior mean and covariance of the fused product of experts (module docstring).

    ``weight``: worth of one human vote in judge comparisons; 0 = the judge alone, ``inf`` = the
    humans alone.

    Raises
    ------
    InputError
        A negative weight.
    """
    i, j, y, w = _observations(x, weight)
    return difference_posterior(x.n, i, j, y, w, noise_var=noise_var, prior_var=prior_var)


def _vote_weight(weight: float) -> float:
    return 1.0 if np.isinf(weight) else float(weight)


def loo_vote_predictions(x: FusionInputs, weight: float, *, noise_var: float = NOISE_VAR,
                         prior_var: float = PRIOR_VAR) -> FloatArray:
    """Each human vote's predicted ``s_x - s_y`` from the fit without that vote.

    With leverage ``h_k = w u_k^T Sigma u_k / noise_var`` and fitted ``yhat_k = u_k^T mu``, the
    leave-one-out prediction is ``(yhat_k - h_k y_k) / (1 - h_k)`` (exact for this Gaussian model:
    a ridge regression with known noise). At ``weight = 0`` the votes do not enter the fit and the
    prediction is the judge's.
    """
    mean, cov = fused_posterior(x, weight, noise_var=noise_var, prior_var=prior_var)
    a, b = x.human_i, x.human_j
    fitted = mean[a] - mean[b]
    var = cov[a, a] + cov[b, b] - 2.0 * cov[a, b]
    h = _vote_weight(weight) * var / noise_var if weight > 0 else np.zeros(len(a))
    return (fitted - h * x.vote_margin * x.human_y) / (1.0 - h)


@dataclass(frozen=True)
class WeightChoice:
    """The weight of a human vote and how it was chosen.

    ``loo_accuracy[k]`` / ``loo_squared_error[k]``: share of decisive held-out votes whose sign
    the fit without them predicts (a 0 prediction counts half), and mean squared error of all
    held-out votes, at ``grid[k]`` (NaN when not cross-validated).
    """

    weight: float
    chosen_by: str
    n_votes: int
    n_decisive: int
    grid: tuple[float, ...] = WEIGHT_GRID
    loo_accuracy: FloatArray = field(default_factory=lambda: np.full(len(WEIGHT_GRID), np.nan))
    loo_squared_error: FloatArray = field(default_factory=lambda: np.full(len(WEIGHT_GRID), np.nan))

    def table(self) -> pd.DataFrame:
        """One row per weight tried: ``weight`` (as text), ``loo_accuracy, loo_squared_error,
        chosen``."""
        return pd.DataFrame({"weight": [str(weight_label(w)) for w in self.grid],
                             "loo_accuracy": self.loo_accuracy,
                             "loo_squared_error": self.loo_squared_error,
                             "chosen": [w == self.weight for w in self.grid]})

    def to_dict(self) -> dict:
        acc = [None if not np.isfinite(v) else float(v) for v in self.loo_accuracy]
        err = [None if not np.isfinite(v) else float(v) for v in self.loo_squared_error]
        return dict(weight=weight_label(self.weight), chosen_by=self.chosen_by,
                    n_votes=self.n_votes, n_decisive=self.n_decisive,
                    grid=[weight_label(w) for w in self.grid], loo_accuracy=acc,
                    loo_squared_error=err)


def weight_label(weight: float) -> str | float:
    """``inf`` as the string ``"humans only"`` (JSON has no infinity); other weights as floats."""
    return "humans only" if np.isinf(weight) else float(weight)


def choose_human_weight(problems: Sequence[FusionInputs], grid: Sequence[float] = WEIGHT_GRID, *,
                        default: float = DEFAULT_HUMAN_WEIGHT, noise_var: float = NOISE_VAR,
                        prior_var: float = PRIOR_VAR) -> WeightChoice:
    """The weight of a human vote by leave-one-out cross-validation over all problems' votes.

    Criterion: the share of decisive held-out votes whose sign the fit without them predicts
    (:func:`loo_vote_predictions`), with the one-standard-error rule (Breiman et al. 1984,
    *Classification and Regression Trees*, §3.4.3): the largest weight whose held-out accuracy is
    within one binomial standard error of the best. With one or two votes per context the
    held-out votes are mostly predicted by the judge alone, whatever the weight, so the accuracies
    differ by noise; the rule then trusts people where they voted, and a small weight wins only
    when it predicts the votes clearly better (a good judge and inconsistent people). With fewer
    than :data:`MIN_CV_VOTES` decisive votes, ``default``.

    The humans alone (``inf``) are chosen when, and only when, the judge alone (``w = 0``)
    agrees with at most half of at least :data:`MIN_VOTES_TO_DROP_JUDGE` decisive votes: its
    order of the candidates nobody labelled is then no better than a coin, and leaving it out keeps them tied instead of
    shuffled. Otherwise the best finite weight wins: a large one already lets the votes decide
    wherever there are some, and the judge still orders the rest (with a few votes the held-out
    accuracies are noisy, and dropping a useful judge loses far more than keeping a useless one).

    Raises
    ------
    InputError
        A negative weight in ``grid``.
    """
    grid = tuple(float(w) for w in grid)
    ys = [p.human_y for p in problems]
    y = np.concatenate(ys) if ys else np.zeros(0)
    n_dec = int((y != 0).sum())
    if n_dec < MIN_CV_VOTES:
        return WeightChoice(float(default), f"default (fewer than {MIN_CV_VOTES} decisive votes "
                            "to cross-validate)", int(len(y)), n_dec, grid,
                            np.full(len(grid), np.nan), np.full(len(grid), np.nan))
    acc = np.empty(len(grid))
    err = np.empty(len(grid))
    for k, w in enumerate(grid):
        preds = [loo_vote_predictions(p, w, noise_var=noise_var, prior_var=prior_var)
                 for p in problems if len(p.human_y)]
        pred = np.concatenate(preds)
        target = np.concatenate([p.vote_margin * p.human_y for p in problems if len(p.human_y)])
        decisive = y != 0
        hit = np.where(pred[decisive] == 0, 0.5,
                       (np.sign(pred[decisive]) == np.sign(y[decisive])).astype(np.float64))
        acc[k] = hit.mean()
        err[k] = float(((pred - target) ** 2).mean())
    judge_alone = acc[grid.index(0.0)] if 0.0 in grid else 0.0
    finite = np.array([np.isfinite(w) for w in grid])
    if judge_alone <= 0.5 and n_dec >= MIN_VOTES_TO_DROP_JUDGE and not finite.all():
        best = int(np.flatnonzero(~finite)[0])
    else:
        se = np.sqrt(max(acc[finite].max() * (1.0 - acc[finite].max()), 1e-12) / n_dec)
        near = finite & (acc >= acc[finite].max() - se - 1e-12)
        best = int(np.flatnonzero(near)[-1])
    return WeightChoice(grid[best], "leave-one-out cross-validation", int(len(y)), n_dec, grid,
                        acc, err)


def label_value(cov: FloatArray, vote_noise_var: float) -> FloatArray:
    """Drop of the total posterior variance ``trace Sigma`` if pair ``(x, y)`` got one more vote.

    ``||Sigma u||^2 / (vote_noise_var + u^T Sigma u)`` with ``u = e_x - e_y`` (Sherman-Morrison;
    module docstring), for all pairs at once: ``||Sigma u||^2 = M_xx + M_yy - 2 M_xy`` with
    ``M = Sigma^2``. Symmetric, 0 on the diagonal.
    """
    cov = np.asarray(cov, dtype=np.float64)
    sq = cov @ cov
    d2 = np.diag(sq)
    d = np.diag(cov)
    num = d2[:, None] + d2[None, :] - 2.0 * sq
    var = d[:, None] + d[None, :] - 2.0 * cov
    out = num / (vote_noise_var + var)
    np.fill_diagonal(out, 0.0)
    return np.maximum(out, 0.0)


# ------------------------------------------------------------------------- from a run and labels

def _votes(human_df: pd.DataFrame | None) -> pd.DataFrame:
    """One vote per annotator and pair (skips dropped): ``context_id, x, y, label``."""
    if human_df is None or len(human_df) == 0:
        return pd.DataFrame(columns=["context_id", "x", "y", "label"])
    return agreement.normalise_human_labels(human_df)[["context_id", "x", "y", "label"]]


def _vote_sign(label: np.ndarray) -> FloatArray:
    return np.select([label == agreement.X_BETTER, label == agreement.Y_BETTER], [1.0, -1.0], 0.0)


def context_inputs(dataset: Dataset, table: ComparisonTable | None, human_df: pd.DataFrame | None,
                   tau: float = 0.5) -> list[tuple[Context, FusionInputs]]:
    """One :class:`FusionInputs` per context with a judge comparison or a human vote (dataset
    order); the judge's ``p`` reweighted by eq. 9 at ``tau`` (0.5 = as stored).

    Raises
    ------
    InputError
        A vote names a candidate or context that is not in ``dataset``, or ``tau`` is not in (0, 1).
    """
    llm = {cc.context.context_id: cc for cc in
           (split_by_context(dataset, table) if table is not None else [])}
    votes = _votes(human_df)
    by_ctx = dict(tuple(votes.groupby("context_id", sort=False))) if len(votes) else {}
    unknown = sorted(set(by_ctx) - {c.context_id for c in dataset.contexts})
    if unknown:
        raise InputError(f"human votes name context(s) not in dataset '{dataset.name}': "
                         f"{', '.join(map(str, unknown[:5]))}")
    out = []
    for ctx in dataset.contexts:
        cc, g = llm.get(ctx.context_id), by_ctx.get(ctx.context_id)
        if cc is None and g is None:
            continue
        index = pd.Index(ctx.candidate_ids)
        hi = index.get_indexer(g["x"]) if g is not None else np.zeros(0, np.int64)
        hj = index.get_indexer(g["y"]) if g is not None else np.zeros(0, np.int64)
        if (hi < 0).any() or (hj < 0).any():
            raise InputError(f"a human vote names a candidate that is not in context '{ctx.context_id}'")
        hy = _vote_sign(g["label"].to_numpy(np.int64)) if g is not None else np.zeros(0)
        p = debias_probabilities(cc.p, tau) if cc is not None else np.zeros(0)
        out.append((ctx, FusionInputs.build(len(index), *((cc.i, cc.j) if cc is not None else ((), ())),
                                            p, hi, hj, hy)))
    return out


def system_inputs(dataset: Dataset, table: ComparisonTable | None, human_df: pd.DataFrame | None,
                  tau: float = 0.5) -> tuple[list[str], FusionInputs]:
    """The system-level problem: items are the systems, and every comparison or vote between
    candidates of two different systems (in any context) is an expert on their difference.

    Raises
    ------
    InputError
        Candidates without a system, fewer than 2 systems, or as :func:`context_inputs`.
    """
    systems = sorted({str(c.system) for ctx in dataset.contexts for c in ctx.candidates
                      if c.system is not None})
    if any(c.system is None for ctx in dataset.contexts for c in ctx.candidates) or len(systems) < 2:
        raise InputError(f"dataset '{dataset.name}' does not name a system for every candidate "
                         "(or has fewer than 2 systems): no system-level ranking")
    pos = {s: k for k, s in enumerate(systems)}
    parts = {k: [] for k in ("li", "lj", "lp", "hi", "hj", "hy")}
    for ctx, x in context_inputs(dataset, table, human_df, tau):
        sys_of = np.array([pos[str(c.system)] for c in ctx.candidates], dtype=np.int64)
        for pre, i, j, v in (("l", x.llm_i, x.llm_j, x.llm_p), ("h", x.human_i, x.human_j, x.human_y)):
            si, sj = sys_of[i], sys_of[j]
            keep = si != sj
            parts[pre + "i"].append(si[keep])
            parts[pre + "j"].append(sj[keep])
            parts[pre + ("p" if pre == "l" else "y")].append(v[keep])
    cat = {k: np.concatenate(v) if v else np.zeros(0) for k, v in parts.items()}
    return systems, FusionInputs.build(len(systems), cat["li"], cat["lj"], cat["lp"], cat["hi"],
                                       cat["hj"], cat["hy"])


@dataclass(frozen=True)
class FusedRanking:
    """Fused scores with their posterior sd, and the weight of a human vote they used.

    ``frame``: per context ``context_id, rank, candidate_id, system, text, score, sd,
    n_comparisons, n_votes`` and the dataset's reference columns; at system level ``rank,
    system, score, sd, n_comparisons, n_votes`` and the mean reference score of each system.
    """

    frame: pd.DataFrame
    choice: WeightChoice
    level: str

    def correlation(self, reference: str, method: str = "spearman") -> metrics.CorrelationResult:
        """:func:`fused_correlation` of this ranking with ``reference``."""
        return fused_correlation(self, reference, method)

    def by_rank(self) -> pd.DataFrame:
        """:attr:`frame` best first: by rank within each context, contexts in the order the
        frame has them (the dataset's); by rank alone at system level. What the CLI prints
        and the Rankings page shows."""
        df = self.frame
        if "context_id" not in df.columns:
            return df.sort_values("rank", kind="stable")
        order = pd.factorize(df["context_id"])[0]
        return (df.assign(_ctx=order).sort_values(["_ctx", "rank"], kind="stable")
                .drop(columns="_ctx"))


def _resolve(problems: Sequence[FusionInputs], weight: float | None) -> WeightChoice:
    if weight is None:
        return choose_human_weight(problems)
    ys = np.concatenate([p.human_y for p in problems]) if problems else np.zeros(0)
    return WeightChoice(float(weight), "set", int(len(ys)), int((ys != 0).sum()))


def _counts(n: int, i: IntArray, j: IntArray) -> IntArray:
    return (np.bincount(i, minlength=n) + np.bincount(j, minlength=n)).astype(np.int64)


def fused_rankings(dataset: Dataset, table: ComparisonTable | None, human_df: pd.DataFrame | None,
                   *, tau: float = 0.5, weight: float | None = None) -> FusedRanking:
    """Per-context rankings from the judge's comparisons and the human votes together.

    ``weight`` None chooses it by cross-validation over every context's votes
    (:func:`choose_human_weight`); a number sets it (``inf``: the humans alone).

    Raises
    ------
    InputError
        As :func:`context_inputs`, or a negative weight.
    """
    from .ranking import rank_scores

    problems = context_inputs(dataset, table, human_df, tau)
    choice = _resolve([x for _, x in problems], weight)
    rows = []
    for ctx, x in problems:
        mean, cov = fused_posterior(x, choice.weight)
        ranks = rank_scores(mean)
        n_llm, n_votes = _counts(x.n, x.llm_i, x.llm_j), _counts(x.n, x.human_i, x.human_j)
        for k, cand in enumerate(ctx.candidates):
            row = dict(context_id=ctx.context_id, rank=int(ranks[k]), candidate_id=cand.candidate_id,
                       system=cand.system, text=cand.text, score=float(mean[k]),
                       sd=float(np.sqrt(cov[k, k])), n_comparisons=int(n_llm[k]),
                       n_votes=int(n_votes[k]))
            for col in dataset.score_columns:
                row[col] = cand.scores.get(col, np.nan)
            rows.append(row)
    cols = ["context_id", "rank", "candidate_id", "system", "text", "score", "sd", "n_comparisons",
            "n_votes", *dataset.score_columns]
    return FusedRanking(pd.DataFrame(rows, columns=cols), choice, "context")


def fused_system_ranking(dataset: Dataset, table: ComparisonTable | None,
                         human_df: pd.DataFrame | None, *, tau: float = 0.5,
                         weight: float | None = None) -> FusedRanking:
    """One ranking of the systems from every comparison and vote between two systems'
    candidates (:func:`system_inputs`), the weight cross-validated at this level unless set.

    Raises
    ------
    InputError
        As :func:`system_inputs`, or a negative weight.
    """
    from .ranking import rank_scores

    systems, x = system_inputs(dataset, table, human_df, tau)
    choice = _resolve([x], weight)
    mean, cov = fused_posterior(x, choice.weight)
    frame = pd.DataFrame({"rank": rank_scores(mean), "system": systems, "score": mean,
                          "sd": np.sqrt(np.diag(cov)),
                          "n_comparisons": _counts(x.n, x.llm_i, x.llm_j),
                          "n_votes": _counts(x.n, x.human_i, x.human_j)})
    for col in dataset.score_columns:
        ref = pd.DataFrame([(str(c.system), c.scores.get(col, np.nan)) for ctx in dataset.contexts
                            for c in ctx.candidates], columns=["system", col])
        frame = frame.merge(ref.groupby("system", as_index=False)[col].mean(), on="system",
                            how="left")
    return FusedRanking(frame.sort_values(["rank", "system"], kind="stable").reset_index(drop=True),
                        choice, "system")


def fused_correlation(fused: FusedRanking, reference: str,
                      method: str = "spearman") -> metrics.CorrelationResult:
    """Per-context correlation x100 of a context-level fused ranking's scores with the
    ``reference`` column (the paper's protocol, ``metrics.per_context_correlation``).

    Raises
    ------
    InputError
        A system-level ranking, or ``reference`` not a column of it.
    """
    if fused.level != "context" or reference not in fused.frame.columns:
        raise InputError(f"no per-context '{reference}' scores in this {fused.level}-level ranking")
    groups = [g for _, g in fused.frame.groupby("context_id", sort=False)]
    return metrics.per_context_correlation([g["score"].to_numpy(np.float64) for g in groups],
                                           [g[reference].to_numpy(np.float64) for g in groups],
                                           method=method)


def informative_pairs(dataset: Dataset, table: ComparisonTable | None,
                      human_df: pd.DataFrame | None, *, tau: float = 0.5,
                      weight: float | None = None) -> pd.DataFrame:
    """Every unordered pair of every context with the drop of its context's total posterior
    variance if one more person labelled it (:func:`label_value`), largest first.

    The posterior is the fused one (judge comparisons at ``tau`` and all votes so far, the weight
    cross-validated unless set; a weight of 0 or ``inf`` is scored with
    :data:`DEFAULT_HUMAN_WEIGHT` and with the humans alone respectively).

    Returns
    -------
    pandas.DataFrame
        ``context_id, x, y, value`` with ``x < y`` (string order, as ``annotation`` keys pairs).
    """
    present = {ctx.context_id: x for ctx, x in context_inputs(dataset, table, human_df, tau)}
    choice = _resolve(list(present.values()), weight)
    w = choice.weight if choice.weight > 0 else DEFAULT_HUMAN_WEIGHT
    parts = []
    for ctx in dataset.contexts:
        n = len(ctx.candidates)
        x = present.get(ctx.context_id) or FusionInputs.build(n)
        _, cov = fused_posterior(x, w)
        value = label_value(cov, NOISE_VAR / _vote_weight(w))
        a, b = np.triu_indices(n, 1)
        ids = np.array(ctx.candidate_ids, dtype=object)
        first = np.where(ids[a] < ids[b], ids[a], ids[b])
        second = np.where(ids[a] < ids[b], ids[b], ids[a])
        parts.append(pd.DataFrame({"context_id": ctx.context_id, "x": first, "y": second,
                                   "value": value[a, b]}))
    if not parts:
        return pd.DataFrame(columns=["context_id", "x", "y", "value"])
    out = pd.concat(parts, ignore_index=True)
    return out.sort_values("value", ascending=False, kind="stable").reset_index(drop=True)

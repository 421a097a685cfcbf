"""Pure code of the wording-tuning study (``benchmarks/tune_study.py``): does the wording picked
by fairness alone (ZEPO, ``compassess_core.runs.tuning``) agree better with people than T1 on
contexts the pick never saw, and how close does it come to the best wording in hindsight?

Every number is computed from a wording's stored comparisons on the held-out contexts:
per-context Spearman x100 of the win ratio (eq. 6) with the reference column (the paper's §4),
or Cohen's kappa with the majority of the human A/B labels (the product's agreement: each pair's
two orders averaged, eq. 9-10), raw (tau = 0.5) and at the held-out comparisons' balanced tau*.
Differences between two wordings are paired (the same contexts, or the same labelled pairs,
resampled together: a percentile bootstrap of the difference).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from compassess_core.stats import bias, ranking
from compassess_core.stats.agreement import (bootstrap_interval, majority_vote,
                                             normalise_human_labels, pair_kappa, pair_probabilities,
                                             verdicts_at)
from compassess_core.stats.analysis import split_by_context
from compassess_core.stats.metrics import correlation
from compassess_core.runs.tuning import table_for_contexts
from compassess_core.types import ComparisonTable, Dataset

#: Bootstrap resamples of every interval of the study.
N_BOOT = 2000


def _tau(table: ComparisonTable, balanced: bool) -> float:
    p = table.p[np.isfinite(table.p)]
    return float(bias.balanced_threshold(p)) if balanced and len(p) else 0.5


def spearman_per_context(dataset: Dataset, table: ComparisonTable, context_ids: Sequence[str],
                         reference: str, *, balanced: bool = False) -> pd.Series:
    """Spearman (not x100) of the win ratio with ``reference`` in each of ``context_ids``
    (NaN where undefined), at 0.5 or the comparisons' tau*."""
    held = table_for_contexts(table, context_ids)
    tau = _tau(held, balanced)
    out = {}
    for cc in split_by_context(dataset, held):
        pred = ranking.win_ratio(cc.n, cc.i, cc.j, cc.p, tau=tau).scores
        ref = np.array([c.scores.get(reference, np.nan) for c in cc.context.candidates])
        out[cc.context.context_id] = correlation(pred, ref, "spearman")
    return pd.Series(out, dtype=np.float64).reindex(list(context_ids))


def label_verdicts(table: ComparisonTable, human: pd.DataFrame, context_ids: Sequence[str], *,
                   balanced: bool = False) -> pd.DataFrame:
    """Per labelled pair of ``context_ids`` (human ties left out): the people's majority label
    and the judge's verdict (``human``, ``llm``: 0 = x better, 1 = y better)."""
    held = table_for_contexts(table, context_ids)
    tau = _tau(held, balanced)
    llm = verdicts_at(pair_probabilities(held), tau)[["context_id", "x", "y", "llm_label"]]
    votes = normalise_human_labels(human[human["context_id"].isin(list(context_ids))])
    maj = majority_vote(votes)
    maj = maj[maj["label"] < 2][["context_id", "x", "y", "label"]]
    out = maj.merge(llm, on=["context_id", "x", "y"], how="inner")
    return out.rename(columns={"label": "human", "llm_label": "llm"})


@dataclass(frozen=True)
class Difference:
    """``a - b`` of one agreement measure on the same held-out contexts or pairs, with its 95%
    paired percentile bootstrap interval and the contexts or pairs it rests on."""

    value: float
    low: float
    high: float
    n: int


def spearman_difference(a: pd.Series, b: pd.Series, *, seed: int = 0) -> Difference:
    """Mean over contexts of ``a - b`` (per-context Spearman, x100), contexts resampled."""
    both = pd.concat([a, b], axis=1).dropna()
    d = 100.0 * (both.iloc[:, 0] - both.iloc[:, 1]).to_numpy()
    if len(d) == 0:
        return Difference(float("nan"), float("nan"), float("nan"), 0)
    low, high = bootstrap_interval(lambda v, axis=-1: np.mean(v, axis=axis), (d,),
                                   n_boot=N_BOOT, seed=seed)
    return Difference(float(d.mean()), low, high, len(d))


def _pair_kappa_along(h: np.ndarray, llm: np.ndarray, axis: int = -1) -> np.ndarray:
    """:func:`~compassess_core.stats.agreement.pair_kappa` (the product's kappa: every pair counted in
    both orientations) of each slice along ``axis``: what a bootstrap's resamples need."""
    h, llm = np.moveaxis(np.asarray(h), axis, -1), np.moveaxis(np.asarray(llm), axis, -1)
    flat = zip(h.reshape(-1, h.shape[-1]), llm.reshape(-1, llm.shape[-1]))
    return np.array([pair_kappa(x, y) for x, y in flat], dtype=np.float64).reshape(h.shape[:-1])


def kappa_difference(a: pd.DataFrame, b: pd.DataFrame, *, seed: int = 0) -> Difference:
    """kappa(a) - kappa(b) (the pair kappa, :func:`kappa_of`) on the labelled pairs both judged,
    pairs resampled together."""
    m = a.merge(b, on=["context_id", "x", "y", "human"], suffixes=("_a", "_b"))
    if len(m) == 0:
        return Difference(float("nan"), float("nan"), float("nan"), 0)
    h, la, lb = (m[c].to_numpy(np.int64) for c in ("human", "llm_a", "llm_b"))

    def stat(h, la, lb, axis=-1):
        return _pair_kappa_along(h, la, axis) - _pair_kappa_along(h, lb, axis)
    low, high = bootstrap_interval(stat, (h, la, lb), n_boot=N_BOOT, seed=seed)
    return Difference(float(stat(h, la, lb)), low, high, len(m))


def kappa_of(v: pd.DataFrame) -> float:
    """Cohen's kappa of a :func:`label_verdicts` table as the product computes it
    (:func:`~compassess_core.stats.agreement.pair_kappa`: the pairs counted in both orientations, so
    which candidate is x does not change it)."""
    return float(pair_kappa(v["human"].to_numpy(np.int64), v["llm"].to_numpy(np.int64)))


def rank_correlation(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman of fairness and agreement across wordings (NaN pairs dropped; NaN under 3)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    return correlation(x[ok], y[ok], "spearman") if ok.sum() >= 3 else float("nan")

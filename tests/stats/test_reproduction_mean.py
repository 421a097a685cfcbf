"""The paper-reproduction study's per-context Spearman mean (benchmarks/studies/reproduction.py)
counts a constant ranking 0, as the engine's ``per_context_correlation`` does: checked on a
hand-worked case and against the engine on the same scores."""
import numpy as np

from benchmarks.studies.reproduction import ContextMatrix, spearman_x100
from compassess_core.stats.metrics import per_context_correlation


def _matrix(p_first_wins: np.ndarray) -> np.ndarray:
    p = p_first_wins.astype(float).copy()
    np.fill_diagonal(p, np.nan)
    return p


def test_a_constant_ranking_counts_zero_and_a_constant_reference_is_left_out():
    ref = np.array([1.0, 2.0, 3.0])
    # Context a: candidate k beats every lower one in both orders: win ratios 0, 0.5, 1 ->
    # Spearman 1 with ref. Context b: the judge says "A" always: every win ratio 0.5 -> constant
    # ranking, counted 0. Context c: a constant reference, left out. Mean (1 + 0) / 2 = 50.
    order = np.array([[0.5, 0.0, 0.0], [1.0, 0.5, 0.0], [1.0, 1.0, 0.5]])
    always_a = np.ones((3, 3))
    mats = [ContextMatrix("a", _matrix(order), ref),
            ContextMatrix("b", _matrix(always_a), ref),
            ContextMatrix("c", _matrix(order), np.array([2.0, 2.0, 2.0]))]
    assert spearman_x100(mats) == 50.0
    engine = per_context_correlation([[0.0, 0.5, 1.0], [0.5, 0.5, 0.5]], [ref, ref])
    assert engine.mean_x100 == 50.0

"""Tests of compassess_core.stats.metrics on hand-worked examples (the paper's evaluation protocol)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from compassess_core.errors import InputError, LengthMismatchError
from compassess_core.stats.metrics import (
    correlation,
    pairwise_accuracy,
    per_context_correlation,
    pooled_correlation,
    system_level_correlation,
)

# ctx0: identical order -> 1
# ctx1: pred [1,3,2] vs ref [1,2,3]: d = [0,1,-1], sum d^2 = 2, rho = 1 - 6*2/(3*8) = 0.5
# ctx2: reference constant -> skipped
# ctx3: prediction constant against a varying reference -> undefined (NaN), 0 in the mean
PRED = [np.array([1.0, 2, 3]), np.array([1.0, 3, 2]), np.array([3.0, 1, 2]), np.array([5.0, 5, 5])]
REF = [np.array([1.0, 2, 3]), np.array([1.0, 2, 3]), np.array([2.0, 2, 2]), np.array([1.0, 2, 3])]


def test_per_context_spearman_skips_constant_reference():
    r = per_context_correlation(PRED, REF)
    assert r.mean_x100 == pytest.approx(100 * (1 + 0.5 + 0) / 3)  # 50.0
    assert r.n_used == 3 and r.n_skipped == 1 and r.n_constant_prediction == 1
    assert r.per_context[:2] == pytest.approx([1.0, 0.5])
    assert math.isnan(r.per_context[2]) and math.isnan(r.per_context[3])


@pytest.mark.parametrize("method", ["spearman", "kendall"])
def test_a_constant_prediction_has_no_correlation_as_scipy_says(method):
    from scipy import stats
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # scipy warns of the constant input
        ref = getattr(stats, "spearmanr" if method == "spearman" else "kendalltau")(
            [5.0, 5, 5], [1.0, 2, 3]).statistic
    assert math.isnan(ref) and math.isnan(correlation([5.0, 5, 5], [1.0, 2, 3], method))
    # every context's prediction constant: no mean to take (n/a), not a measured 0
    r = per_context_correlation([[5.0, 5, 5], [2.0, 2]], [[1.0, 2, 3], [1.0, 2]], method)
    assert math.isnan(r.mean_x100) and r.n_used == 0 and r.n_constant_prediction == 2
    assert math.isnan(system_level_correlation([[5.0, 5, 5]], [[1.0, 2, 3]], [["a", "b", "c"]],
                                               method))
    assert math.isnan(pooled_correlation([[5.0, 5, 5]], [[1.0, 2, 3]], method))


def test_per_context_kendall():
    # ctx1 pairs: (a,b) concordant, (a,c) concordant, (b,c) discordant -> (2-1)/3
    r = per_context_correlation(PRED, REF, method="kendall")
    assert r.mean_x100 == pytest.approx(100 * (1 + 1 / 3 + 0) / 3)
    assert r.method == "kendall"


def test_spearman_with_tied_reference():
    # ref ranks [1.5,1.5,3,4]; pearson of ranks = 4.5 / sqrt(5 * 4.5) = sqrt(0.9)
    assert correlation([1, 2, 3, 4], [1, 1, 2, 3]) == pytest.approx(math.sqrt(0.9))


def test_nan_prediction_is_left_out():
    r = per_context_correlation([[np.nan, 1, 2, 3]], [[5, 1, 2, 3]])
    assert r.mean_x100 == pytest.approx(100.0) and r.n_used == 1


def test_all_contexts_skipped_gives_nan():
    r = per_context_correlation([[1, 2]], [[3, 3]])
    assert math.isnan(r.mean_x100) and r.n_used == 0 and r.n_skipped == 1


def test_system_level_hand_example():
    # system means over two contexts (ctx1 lists systems in another order):
    #   pred: a (1+2)/2=1.5, b (2+2)/2=2, c (3+5)/2=4       -> ranks 1, 2, 3
    #   ref:  a (.1+.5)/2=.3, b (.5+.1)/2=.3, c (.4+.9)/2=.65 -> ranks 1.5, 1.5, 3
    #   rho = 1.5 / sqrt(2 * 1.5) = 0.866025...
    pred = [[1.0, 2, 3], [5.0, 2, 2]]
    ref = [[0.1, 0.5, 0.4], [0.9, 0.5, 0.1]]
    systems = [["a", "b", "c"], ["c", "a", "b"]]
    assert system_level_correlation(pred, ref, systems) == pytest.approx(100 * 1.5 / math.sqrt(3))


def test_pooled_hand_example():
    # pooled ranks: pred 1..6, ref [1,3,2,4,5,6]: sum d^2 = 2, rho = 1 - 12/(6*35)
    got = pooled_correlation([[1, 2, 3], [4, 5, 6]], [[1, 3, 2], [4, 5, 6]])
    assert got == pytest.approx(100 * (1 - 12 / 210))


def test_pairwise_accuracy_hand_example():
    # ref = [3,1,2,2]
    # (0,1) .8 says 0 better: ref 3>1 correct   (1,0) .6 says 1 better: wrong
    # (1,2) .3 says 2 better: 2>1 correct      (2,3) .9: equal reference -> not counted
    # (3,1) .7 says 3 better: 2>1 correct      => 3/4 on 4 pairs
    i, j, p, ref = [0, 1, 1, 2, 3], [1, 0, 2, 3, 1], [0.8, 0.6, 0.3, 0.9, 0.7], [3.0, 1, 2, 2]
    assert pairwise_accuracy(i, j, p, ref) == (0.75, 4)
    # tau = 0.65: (1,0) .6 now says 0 better -> correct; all four agree
    assert pairwise_accuracy(i, j, p, ref, tau=0.65) == (1.0, 4)


def test_pairwise_accuracy_no_usable_pair():
    acc, n = pairwise_accuracy([0], [1], [0.9], [2.0, 2.0])
    assert math.isnan(acc) and n == 0


def test_errors():
    with pytest.raises(LengthMismatchError):
        per_context_correlation([[1, 2]], [[1, 2, 3]])
    with pytest.raises(LengthMismatchError):
        per_context_correlation([[1, 2]], [])
    with pytest.raises(InputError, match="unknown correlation"):
        per_context_correlation(PRED, REF, method="pearson")
    with pytest.raises(LengthMismatchError):
        system_level_correlation([[1, 2]], [[1, 2]], [["a"]])
    with pytest.raises(InputError, match="out of range"):
        pairwise_accuracy([0], [2], [0.5], [1.0, 2.0])

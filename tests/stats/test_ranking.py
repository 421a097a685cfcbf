"""Tests of compassess_core.stats.ranking on hand-worked comparison matrices."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from compassess_core.errors import InputError, LengthMismatchError
from compassess_core.stats.ranking import (
    METHODS,
    RankingResult,
    average_probability,
    bootstrap_ci,
    bradley_terry,
    poe_gaussian,
    rank_candidates,
    rank_scores,
    win_ratio,
)
from compassess_core.runs.selection import select_pairs

# Full matrix over 3 candidates (row = first position A, column = second B):
#          0     1     2
#   0      -    0.9   0.8
#   1     0.2    -    0.7
#   2     0.4   0.6    -
I3 = np.array([0, 1, 0, 2, 1, 2])
J3 = np.array([1, 0, 2, 0, 2, 1])
P3 = np.array([0.9, 0.2, 0.8, 0.4, 0.7, 0.6])


def test_win_ratio_hand_matrix():
    # tau=0.5 winners: (0,1)->0 (1,0)->0 (0,2)->0 (2,0)->0 (1,2)->1 (2,1)->2; 4 comparisons each
    r = win_ratio(3, I3, J3, P3)
    np.testing.assert_allclose(r.scores, [1.0, 0.25, 0.25])
    np.testing.assert_array_equal(r.n_comparisons, [4, 4, 4])
    np.testing.assert_array_equal(r.ranks, [1, 2, 2])
    assert r.method == "win-ratio" and r.ci_low is None


def test_win_ratio_with_threshold():
    # tau=0.65: (1,2)=0.7 -> 1, (2,1)=0.6 <= 0.65 -> 1 as well: wins 4, 2, 0
    np.testing.assert_allclose(win_ratio(3, I3, J3, P3, tau=0.65).scores, [1.0, 0.5, 0.0])


def test_average_probability_hand_matrix():
    # 0: 0.9 + (1-0.2) + 0.8 + (1-0.4) = 3.1 -> 0.775
    # 1: (1-0.9) + 0.2 + 0.7 + (1-0.6) = 1.4 -> 0.35
    # 2: (1-0.8) + 0.4 + (1-0.7) + 0.6 = 1.5 -> 0.375
    r = average_probability(3, I3, J3, P3)
    np.testing.assert_allclose(r.scores, [0.775, 0.35, 0.375])
    np.testing.assert_array_equal(r.ranks, [1, 3, 2])


def test_average_probability_debiased_uses_eq9():
    # two comparisons only: (0,1) p=0.8, (1,0) p=0.8; tau=0.8 -> a=0.25 -> p^=0.5 for both
    r = average_probability(2, [0, 1], [1, 0], [0.8, 0.8], tau=0.8)
    np.testing.assert_allclose(r.scores, [0.5, 0.5])


def test_poe_gaussian_hand_matrix():
    # mu = p - 0.5: (0,1) .4 (1,0) -.3 (0,2) .3 (2,0) -.1 (1,2) .2 (2,1) .1
    # W^T mu: b0 = (.4+.3) - (-.3-.1) = 1.1; b1 = (-.3+.2) - (.4+.1) = -.6; b2 = (-.1+.1) - (.3+.2) = -.5
    # every pair twice: W^T W = 2(3I - J), whose pseudo-inverse is (I - J/3)/6, so s* = b/6
    r = poe_gaussian(3, I3, J3, P3)
    np.testing.assert_allclose(r.scores, [1.1 / 6, -0.6 / 6, -0.5 / 6], atol=1e-12)
    np.testing.assert_array_equal(r.ranks, [1, 3, 2])
    expected_cov = (np.eye(3) - 1 / 3) / 6  # diag 1/9, off-diagonal -1/18
    np.testing.assert_allclose(r.covariance, expected_cov, atol=1e-12)
    # Var(s0 - s1) = 1/9 + 1/9 + 2/18 = 1/3
    d = np.array([1.0, -1.0, 0.0])
    assert d @ r.covariance @ d == pytest.approx(1 / 3)


def test_poe_scale_and_variance():
    r = poe_gaussian(3, I3, J3, P3, scale=2.0, variance=0.5)
    np.testing.assert_allclose(r.scores, 2 * np.array([1.1, -0.6, -0.5]) / 6, atol=1e-12)
    np.testing.assert_allclose(r.covariance, 0.5 * (np.eye(3) - 1 / 3) / 6, atol=1e-12)
    with pytest.raises(InputError):
        poe_gaussian(3, I3, J3, P3, variance=0.0)


def test_poe_chain_recovers_differences():
    # a path 0-1-2 with one comparison each: exactly determined, s0-s1 = .3, s1-s2 = .1, sum 0
    r = poe_gaussian(3, [0, 1], [1, 2], [0.8, 0.6])
    np.testing.assert_allclose(r.scores, [0.7 / 3, -0.2 / 3, -0.5 / 3], atol=1e-12)


def test_bradley_terry_two_candidates_hand_value():
    # soft wins: 0 gets 0.8 + (1-0.4) = 1.4 of 2 -> pi0/(pi0+pi1) = 0.7 -> log ratio log(7/3)
    r = bradley_terry(2, [0, 1], [1, 0], [0.8, 0.4])
    half = 0.5 * math.log(7 / 3)
    np.testing.assert_allclose(r.scores, [half, -half], atol=1e-6)


def test_bradley_terry_recovers_consistent_matrix():
    # p_ij = sigmoid(s_i - s_j) from true log-strengths: the soft-outcome MLE is s itself (centred)
    s = np.array([1.0, -0.5, 0.25, -0.75])
    pairs = select_pairs(4)
    i, j = pairs[:, 0], pairs[:, 1]
    p = 1 / (1 + np.exp(-(s[i] - s[j])))
    r = bradley_terry(4, i, j, p)
    np.testing.assert_allclose(r.scores, s - s.mean(), atol=1e-5)
    np.testing.assert_array_equal(r.ranks, [1, 3, 2, 4])


def test_bradley_terry_through_evalicas_solver_equals_its_public_function():
    """The fit hands numbered comparisons to evalica's solver directly (the bootstrap refits
    hundreds of times); evalica's public ``bradley_terry`` on the same comparisons, labels
    mapped by its own pandas indexing, gives the same strengths to the bit."""
    import evalica
    import pandas as pd
    from compassess_core.stats.ranking import evalica_bradley_terry
    rng = np.random.default_rng(20261128)
    for _ in range(40):
        total = int(rng.integers(2, 9))
        m = int(rng.integers(1, 60))
        x = rng.integers(0, total, m)
        y = (x + 1 + rng.integers(0, total - 1, m)) % total
        p = rng.uniform(1e-3, 1 - 1e-3, m)
        if len(np.union1d(x, y)) < total:
            continue   # evalica's MM needs every indexed candidate compared
        direct = evalica_bradley_terry(x, y, p, total, tolerance=1e-10, limit=1000)
        labels = np.array([f"c{k}" for k in range(total)])
        public = evalica.bradley_terry(np.concatenate((labels[x], labels[x])),
                                       np.concatenate((labels[y], labels[y])),
                                       [evalica.Winner.X] * m + [evalica.Winner.Y] * m,
                                       index=pd.Index(labels),   # numbered as the direct call
                                       weights=np.concatenate((p, 1 - p)), tolerance=1e-10,
                                       limit=1000).scores
        np.testing.assert_array_equal(direct, public.reindex(labels).to_numpy())
        np.testing.assert_array_equal(
            direct, evalica_bradley_terry(x, y, p, total, tolerance=1e-10, limit=1000,
                                          solver="public"))


def test_bradley_terry_hard_outcomes_stay_finite_and_ordered():
    r = bradley_terry(3, [0, 1], [1, 2], [1.0, 1.0])
    assert np.isfinite(r.scores).all()
    np.testing.assert_array_equal(r.ranks, [1, 2, 3])


@pytest.mark.parametrize("name", list(METHODS))
def test_uncompared_candidate_is_nan_and_last(name):
    r = METHODS[name](4, I3, J3, P3)
    assert isinstance(r, RankingResult) and r.method == name
    assert math.isnan(r.scores[3]) and np.isfinite(r.scores[:3]).all()
    assert r.n_comparisons[3] == 0 and r.ranks[3] == 4


@pytest.mark.parametrize("name", list(METHODS))
def test_methods_agree_on_dominant_candidate(name):
    assert METHODS[name](3, I3, J3, P3).ranks[0] == 1


def test_rank_scores():
    np.testing.assert_array_equal(rank_scores([0.2, 0.9, 0.2, np.nan]), [2, 1, 2, 4])
    np.testing.assert_array_equal(rank_scores([3.0, np.nan, np.nan, 5.0]), [2, 3, 3, 1])


def test_input_errors():
    with pytest.raises(LengthMismatchError):
        win_ratio(3, [0, 1], [1], [0.5, 0.5])
    with pytest.raises(InputError, match="out of range"):
        win_ratio(2, [0], [2], [0.5])
    with pytest.raises(InputError):
        win_ratio(2, [0], [1], [1.5])
    with pytest.raises(InputError, match="unknown ranking method"):
        bootstrap_ci("elo", 3, I3, J3, P3)


def test_bootstrap_degenerate_and_reproducible():
    # candidate 0 wins every comparison it is in: every replicate gives it win ratio 1
    low, high = bootstrap_ci("win-ratio", 3, I3, J3, P3, n_boot=100, seed=1)
    assert low[0] == 1.0 and high[0] == 1.0
    assert (low <= high).all()
    low2, high2 = bootstrap_ci("win-ratio", 3, I3, J3, P3, n_boot=100, seed=1)
    np.testing.assert_array_equal(low, low2)
    np.testing.assert_array_equal(high, high2)


def test_bootstrap_fast_path_matches_per_replicate_loop():
    # the vectorised avg-prob bootstrap must equal refitting each replicate one by one
    rng = np.random.default_rng(0)
    pairs = select_pairs(6, "random", 20, seed=0)
    p = rng.random(20)
    low, high = bootstrap_ci("avg-prob", 6, pairs[:, 0], pairs[:, 1], p, tau=0.4, n_boot=50, seed=3)
    slow_low, slow_high = bootstrap_ci(lambda *a: average_probability(*a), 6, pairs[:, 0],
                                       pairs[:, 1], p, tau=0.4, n_boot=50, seed=3)
    np.testing.assert_allclose(low, slow_low)
    np.testing.assert_allclose(high, slow_high)


@pytest.mark.parametrize("name", list(METHODS))
def test_bootstrap_intervals_bracket_estimates(name):
    s = np.linspace(1.5, -1.5, 8)
    pairs = select_pairs(8)
    i, j = pairs[:, 0], pairs[:, 1]
    p = 1 / (1 + np.exp(-(s[i] - s[j])))
    r = rank_candidates(name, 8, i, j, p, ci=True, n_boot=60, seed=0)
    assert r.ci_low is not None and r.ci_high is not None
    assert (r.ci_low <= r.scores + 1e-9).all() and (r.scores <= r.ci_high + 1e-9).all()


def test_bootstrap_win_ratio_is_fast_for_ui_size():
    pairs = select_pairs(16, "random", 240, seed=0)
    p = np.random.default_rng(0).random(240)
    # This process's CPU seconds, not the wall clock: another process on the machine can delay
    # the call but not make it compute more (measured: about 0.003 s).
    start = time.process_time()
    bootstrap_ci("win-ratio", 16, pairs[:, 0], pairs[:, 1], p, n_boot=200)
    assert time.process_time() - start < 0.5

"""Tests of compassess_core.stats.bias against hand-worked values (eq. 8-10 of Liusie et al. 2024)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from compassess_core.stats.bias import (
    alpha_from_tau,
    balanced_threshold,
    comparison_matrix,
    debias_probabilities,
    decisions,
    flip_pairs,
    flip_rate,
    positional_bias,
)
from compassess_core.errors import InputError, LengthMismatchError

# A symmetric comparison set over 3 candidates (both orders of every pair) from a judge that
# prefers position A: at tau = 0.5, five of six comparisons go to A.
#   (0,1)=0.9 (1,0)=0.8 (0,2)=0.7 (2,0)=0.6 (1,2)=0.65 (2,1)=0.3
SYM_I = np.array([0, 1, 0, 2, 1, 2])
SYM_J = np.array([1, 0, 2, 0, 2, 1])
SYM_P = np.array([0.9, 0.8, 0.7, 0.6, 0.65, 0.3])


def test_positional_bias_counts_strictly_above_tau():
    # p > 0.5: 0.9, 0.6, 0.7 -> P(A) = 3/4
    assert positional_bias([0.9, 0.6, 0.4, 0.7]) == (0.75, 0.25)
    # p > 0.65: 0.9, 0.7 -> 2/4
    assert positional_bias([0.9, 0.6, 0.4, 0.7], tau=0.65) == (0.5, 0.5)
    # p == tau is a win for B (eq. 10 uses a strict '>')
    assert positional_bias([0.5, 0.5]) == (0.0, 1.0)


def test_positional_bias_of_biased_symmetric_set():
    pa, pb = positional_bias(SYM_P)
    assert pa == pytest.approx(5 / 6) and pb == pytest.approx(1 / 6)


def test_positional_bias_empty_is_nan():
    pa, pb = positional_bias([])
    assert math.isnan(pa) and math.isnan(pb)


def test_balanced_threshold_balances_symmetric_set_exactly():
    # sorted p: 0.3 0.6 0.65 | 0.7 0.8 0.9 -> median = (0.65 + 0.7) / 2 = 0.675
    tau = balanced_threshold(SYM_P)
    assert tau == pytest.approx(0.675)
    assert positional_bias(SYM_P, tau) == (0.5, 0.5)  # exactly, not approximately


def test_balanced_threshold_odd_count_is_middle_value():
    # median of [0.2, 0.5, 0.9] is 0.5 itself; only 0.9 is above it -> P(A) = 1/3
    assert balanced_threshold([0.9, 0.2, 0.5]) == 0.5
    assert positional_bias([0.9, 0.2, 0.5], 0.5)[0] == pytest.approx(1 / 3)


def test_balanced_threshold_stays_inside_open_interval():
    tau = balanced_threshold([1.0, 1.0, 1.0, 1.0])
    assert 0.0 < tau < 1.0
    assert math.isnan(balanced_threshold([]))


def test_alpha_from_tau_hand_values():
    assert alpha_from_tau(0.5) == 1.0
    assert alpha_from_tau(0.8) == pytest.approx(0.25)  # (1 - 0.8) / 0.8
    assert alpha_from_tau(0.25) == pytest.approx(3.0)  # 0.75 / 0.25


@pytest.mark.parametrize("tau", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_bad_tau_is_input_error(tau):
    with pytest.raises(InputError):
        alpha_from_tau(tau)
    with pytest.raises(InputError):
        decisions([0.5], tau)


def test_debias_probabilities_hand_values():
    # tau = 0.8, a = 0.25: p = 0.8 -> 0.2 / (0.2 + 0.2) = 0.5 (the threshold maps to 0.5)
    # tau = 0.6, a = 2/3:  p = 0.9 -> 0.6 / (0.6 + 0.1) = 6/7
    assert debias_probabilities([0.8], 0.8)[0] == pytest.approx(0.5)
    assert debias_probabilities([0.9], 0.6)[0] == pytest.approx(6 / 7)
    # endpoints stay put, and tau = 0.5 is the identity
    np.testing.assert_allclose(debias_probabilities([0.0, 1.0], 0.3), [0.0, 1.0])
    np.testing.assert_allclose(debias_probabilities(SYM_P, 0.5), SYM_P)


@pytest.mark.parametrize("tau", [0.13, 0.45, 0.5, 0.675, 0.9])
def test_eq9_reweighting_gives_eq10_decisions(tau):
    p = np.random.default_rng(7).random(2000)
    np.testing.assert_array_equal(debias_probabilities(p, tau) > 0.5, decisions(p, tau))


def test_bad_probabilities_are_input_errors():
    with pytest.raises(InputError, match="position 1"):
        positional_bias([0.5, 1.2])
    with pytest.raises(InputError):
        decisions([float("nan")])


def test_flip_pairs_and_rate_hand_example():
    # pairs in both orders: {0,1}: p01=0.8, p10=0.7; {0,2}: 0.9, 0.2; {1,2}: 0.3, 0.6; (2,3) one order.
    # tau=0.5, verdict "u beats v": {0,1}: 0.8>0.5 T vs 0.7<=0.5 F -> flip
    #                               {0,2}: T vs T -> no;  {1,2}: F vs 0.6<=0.5 F -> no   => 1/3
    i = [1, 0, 2, 0, 2, 1, 2]
    j = [0, 1, 3, 2, 0, 2, 1]
    p = [0.7, 0.8, 0.9, 0.9, 0.2, 0.3, 0.6]
    u, v, p_uv, p_vu, flipped = flip_pairs(i, j, p)
    np.testing.assert_array_equal(u, [0, 0, 1])
    np.testing.assert_array_equal(v, [1, 2, 2])
    np.testing.assert_allclose(p_uv, [0.8, 0.9, 0.3])
    np.testing.assert_allclose(p_vu, [0.7, 0.2, 0.6])
    np.testing.assert_array_equal(flipped, [True, False, False])
    rate, n_pairs = flip_rate(i, j, p)
    assert rate == pytest.approx(1 / 3) and n_pairs == 3
    # tau=0.65: {0,1}: T vs 0.7<=0.65 F -> flip; {0,2}: T vs T; {1,2}: F vs 0.6<=0.65 T -> flip
    rate, n_pairs = flip_rate(i, j, p, tau=0.65)
    assert rate == pytest.approx(2 / 3) and n_pairs == 3


def test_flip_rate_without_both_orders_is_nan():
    rate, n_pairs = flip_rate([0, 1], [1, 2], [0.9, 0.1])
    assert math.isnan(rate) and n_pairs == 0


def test_flip_rate_rejects_duplicate_ordered_pair():
    with pytest.raises(InputError, match=r"\(0, 1\)"):
        flip_rate([0, 0, 1], [1, 1, 0], [0.9, 0.8, 0.2])


def test_length_mismatch():
    with pytest.raises(LengthMismatchError):
        flip_rate([0, 1], [1], [0.5, 0.5])


def test_comparison_matrix_with_missing_and_duplicate_cells():
    m = comparison_matrix(3, [0, 1, 0, 0], [1, 0, 2, 2], [0.9, 0.2, 0.6, 0.8])
    expected = np.array([[np.nan, 0.9, 0.7],  # (0,2) judged twice: (0.6 + 0.8) / 2
                         [0.2, np.nan, np.nan],
                         [np.nan, np.nan, np.nan]])
    np.testing.assert_allclose(m, expected)
    with pytest.raises(InputError, match="out of range"):
        comparison_matrix(2, [0], [2], [0.5])
    with pytest.raises(InputError, match="itself"):
        comparison_matrix(2, [1], [1], [0.5])

"""Tests of compassess_core.stats.length_bias on hand-worked comparisons and a simulated judge with a known
length preference (a judge made up for these tests: its p is a formula of the systems' known
strengths, the length ratio and a position term)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from compassess_core.errors import InputError, LengthMismatchError
from compassess_core.stats.length_bias import (fitted_curve, length_bias,
                                               length_controlled_strengths, length_slope,
                                               longer_wins_share, text_lengths,
                                               win_rate_against_field)
from compassess_core.stats.ranking import bradley_terry


def test_text_lengths_are_characters():
    np.testing.assert_array_equal(text_lengths(["abc", "", "héllo"]), [3.0, 0.0, 5.0])


def test_longer_wins_share_hand_worked():
    # (A len, B len, p): A longer & A wins; A longer & B wins; B longer & B wins; equal lengths.
    la, lb, p = [20, 20, 10, 15], [10, 10, 20, 15], [0.9, 0.2, 0.3, 0.99]
    share, n = longer_wins_share(la, lb, p, tau=0.5)
    assert (share, n) == (pytest.approx(2 / 3), 3)
    # at tau = 0.25 the second comparison (p = 0.2) still goes to B; the third (0.3) now goes to A
    share, n = longer_wins_share(la, lb, p, tau=0.25)
    assert (share, n) == (pytest.approx(1 / 3), 3)


def test_longer_wins_share_without_length_differences_is_nan():
    share, n = longer_wins_share([5, 5], [5, 5], [0.7, 0.2])
    assert np.isnan(share) and n == 0


def test_length_slope_recovers_a_known_logistic():
    rng = np.random.default_rng(0)
    la = rng.integers(20, 400, 500).astype(float)
    lb = rng.integers(20, 400, 500).astype(float)
    p = expit(0.3 + 0.8 * np.log2(la / lb))          # soft outcomes exactly on the curve
    g, b = length_slope(la, lb, p)
    assert g == pytest.approx(0.8, abs=1e-5) and b == pytest.approx(0.3, abs=1e-5)
    grid, curve = fitted_curve(np.log2(la / lb), g, b, points=5)
    np.testing.assert_allclose(curve, expit(0.3 + 0.8 * grid), atol=1e-5)


def test_length_slope_of_a_length_blind_judge_is_zero():
    rng = np.random.default_rng(1)
    la = rng.integers(20, 400, 300).astype(float)
    lb = rng.integers(20, 400, 300).astype(float)
    g, b = length_slope(la, lb, np.full(300, 0.8))
    assert g == pytest.approx(0.0, abs=1e-6) and b == pytest.approx(np.log(4.0), abs=1e-6)


def test_inputs_are_checked():
    with pytest.raises(LengthMismatchError):
        length_slope([1, 2], [1], [0.5, 0.5])
    with pytest.raises(InputError, match="positive"):
        longer_wins_share([0, 2], [1, 1], [0.5, 0.5])
    with pytest.raises(InputError):
        length_bias([1, 2], [1, 1], [0.5, 1.5])


def test_win_rate_against_the_field_hand_worked():
    # theta = (0, ln 3): sigmoid(-ln 3) = 0.25, sigmoid(ln 3) = 0.75; a third system absent
    np.testing.assert_allclose(win_rate_against_field([0.0, np.log(3.0), np.nan]), [0.25, 0.75, np.nan])
    # three systems: mean over the two opponents
    theta = np.array([1.0, 0.0, -1.0])
    expected = [(expit(1) + expit(2)) / 2, (expit(-1) + expit(1)) / 2, (expit(-2) + expit(-1)) / 2]
    np.testing.assert_allclose(win_rate_against_field(theta), expected)


def simulated_length_judge(theta, lengths, gamma, position, n_contexts=40, seed=0,
                           feature="tanh"):
    """All ordered pairs of the systems in each context; each system's text length varies around
    its own typical length (log-normal, sd 0.3); p = sigmoid(theta_a - theta_b + gamma * f(d) +
    position) with f the GLM's own feature (tanh) or a plain log2 ratio (a judge whose length
    preference has another shape than the model's)."""
    rng = np.random.default_rng(seed)
    n = len(theta)
    a, b = np.array([(x, y) for x in range(n) for y in range(n) if x != y]).T
    i = np.tile(a, n_contexts)
    j = np.tile(b, n_contexts)
    text_len = np.asarray(lengths, dtype=float)[None, :] * np.exp(rng.normal(0, 0.3, (n_contexts, n)))
    ctx = np.repeat(np.arange(n_contexts), len(a))
    la, lb = text_len[ctx, i], text_len[ctx, j]
    d = np.log(la / lb)
    f = np.tanh(d / d.std()) if feature == "tanh" else np.log2(la / lb)
    p = expit(np.asarray(theta)[i] - np.asarray(theta)[j] + gamma * f + position)
    return i, j, p, la, lb


def test_length_controlled_glm_recovers_the_simulated_judge_exactly():
    theta = np.array([0.6, 0.1, -0.2, -0.5])          # mean zero
    i, j, p, la, lb = simulated_length_judge(theta, [100, 150, 300, 600], gamma=1.5, position=0.4)
    lc = length_controlled_strengths(4, i, j, p, la, lb)
    np.testing.assert_allclose(lc.strengths, theta, atol=2e-3)
    assert lc.length_coef == pytest.approx(1.5, abs=2e-3)
    assert lc.position_coef == pytest.approx(0.4, abs=2e-3)
    np.testing.assert_allclose(lc.win_rate, win_rate_against_field(theta), atol=1e-3)


def test_length_control_undoes_a_length_preference_that_reorders_the_systems():
    # The weakest system writes the longest texts; a judge that loves length ranks it first.
    theta = np.array([0.5, 0.0, -0.5])
    i, j, p, la, lb = simulated_length_judge(theta, [100, 200, 400], gamma=1.2, position=0.0,
                                             feature="log2")
    raw = bradley_terry(3, i, j, p).scores
    assert np.argmax(raw) == 2, raw                    # fooled by length
    lc = length_controlled_strengths(3, i, j, p, la, lb)
    assert list(np.argsort(-lc.strengths)) == [0, 1, 2], lc.strengths
    np.testing.assert_allclose(lc.strengths, theta, atol=0.1)
    assert lc.length_coef > 1.0
    bias = length_bias(la, lb, p)
    # The marginal slope (no system terms) sees the preference, attenuated because the longer
    # systems are the weaker ones: only the GLM with system terms recovers gamma.
    assert bias.longer_wins > 0.8 and 0.5 < bias.slope_per_doubling < 1.2


def test_length_controlled_without_length_differences_has_no_length_term():
    i, j = np.array([0, 1, 0, 2, 1, 2]), np.array([1, 0, 2, 0, 2, 1])
    theta = np.array([0.4, 0.0, -0.4])
    p = expit(theta[i] - theta[j])
    lc = length_controlled_strengths(3, i, j, p, np.full(6, 50.0), np.full(6, 50.0))
    assert lc.length_coef == 0.0 and lc.length_scale == 0.0
    np.testing.assert_allclose(lc.strengths, theta, atol=2e-3)


def test_a_system_never_compared_gets_nan():
    lc = length_controlled_strengths(3, [0, 1], [1, 0], [0.7, 0.4], [10, 20], [20, 10])
    assert np.isnan(lc.strengths[2]) and np.isnan(lc.win_rate[2])
    assert np.isfinite(lc.strengths[:2]).all()

"""Tests of compassess_core.runs.selection (paper §3.4): counts, uniqueness, order, reproducibility."""

from __future__ import annotations

import numpy as np
import pytest

from compassess_core.errors import InputError
from compassess_core.runs.selection import STRATEGIES, max_budget, select_pairs


def _assert_valid(pairs: np.ndarray, n: int) -> None:
    assert pairs.dtype == np.int64 and pairs.ndim == 2 and pairs.shape[1] == 2
    assert (pairs >= 0).all() and (pairs < n).all()
    assert (pairs[:, 0] != pairs[:, 1]).all()
    assert len({tuple(r) for r in pairs.tolist()}) == len(pairs), "repeated ordered pair"
    key = pairs[:, 0] * n + pairs[:, 1]
    assert (np.diff(key) > 0).all(), "rows must be sorted by (first, second)"


def test_full_three_candidates_exact_rows():
    np.testing.assert_array_equal(select_pairs(3), [[0, 1], [0, 2], [1, 0], [1, 2], [2, 0], [2, 1]])


def test_full_counts_and_order():
    pairs = select_pairs(5, "full")
    assert len(pairs) == 20  # 5 * 4
    _assert_valid(pairs, 5)
    assert len(select_pairs(300)) == 89_700


@pytest.mark.parametrize("n,budget", [(4, 5), (16, 240), (10, 90)])
def test_random_counts_uniqueness_reproducibility(n, budget):
    pairs = select_pairs(n, "random", budget, seed=3)
    assert len(pairs) == budget
    _assert_valid(pairs, n)
    np.testing.assert_array_equal(pairs, select_pairs(n, "random", budget, seed=3))
    np.testing.assert_array_equal(
        pairs, select_pairs(n, "random", budget, seed=np.random.default_rng(3)))


def test_random_full_budget_is_full_set_and_seeds_differ():
    np.testing.assert_array_equal(select_pairs(6, "random", 30, seed=1), select_pairs(6))
    a = select_pairs(30, "random", 50, seed=1)
    b = select_pairs(30, "random", 50, seed=2)
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("n,budget", [(4, 6), (16, 60), (50, 1225), (7, 0)])
def test_no_repeat_never_both_orders(n, budget):
    pairs = select_pairs(n, "no-repeat", budget, seed=5)
    assert len(pairs) == budget
    _assert_valid(pairs, n)
    unordered = {frozenset(r) for r in pairs.tolist()}
    assert len(unordered) == budget


def test_no_repeat_chooses_both_orientations():
    pairs = select_pairs(40, "no-repeat", 400, seed=0)
    first_smaller = (pairs[:, 0] < pairs[:, 1]).mean()
    assert 0.35 < first_smaller < 0.65


@pytest.mark.parametrize("n,budget", [(4, 12), (16, 60), (5, 2)])
def test_symmetric_always_both_orders(n, budget):
    pairs = select_pairs(n, "symmetric", budget, seed=9)
    assert len(pairs) == budget
    _assert_valid(pairs, n)
    rows = {tuple(r) for r in pairs.tolist()}
    assert all((b, a) in rows for a, b in rows)


def test_max_budget():
    assert max_budget(5, "random") == 20
    assert max_budget(5, "symmetric") == 20
    assert max_budget(5, "no-repeat") == 10


def test_errors():
    with pytest.raises(InputError, match="needs a budget"):
        select_pairs(5, "random")
    with pytest.raises(InputError, match="maximum of 10"):
        select_pairs(5, "no-repeat", 11)
    with pytest.raises(InputError, match="maximum of 20"):
        select_pairs(5, "random", 21)
    with pytest.raises(InputError, match="even"):
        select_pairs(5, "symmetric", 7)
    with pytest.raises(InputError, match="unknown selection strategy"):
        select_pairs(5, "greedy", 4)
    with pytest.raises(InputError, match="at least 2"):
        select_pairs(1)
    with pytest.raises(InputError):
        select_pairs(5, "random", -1)
    assert set(STRATEGIES) == {"full", "random", "no-repeat", "symmetric", "poe", "adaptive"}


def test_large_n_random_small_budget_is_cheap():
    pairs = select_pairs(20_000, "no-repeat", 1000, seed=0)
    _assert_valid(pairs, 20_000)

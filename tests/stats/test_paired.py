"""Paired tests (compassess_core.stats.paired) against references computed another way: McNemar's exact
test against statsmodels and a hand-worked binomial sum; the paired cluster bootstrap and the
per-context A-rate interval against simulations with known truth; ZEPO's per-context A-rate
against a hand-worked case where it differs from the pooled share."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from compassess_core.stats import paired
from compassess_core.errors import InputError, LengthMismatchError
from compassess_core.types import ComparisonTable


# ------------------------------------------------------------------------------ McNemar

def test_mcnemar_hand_worked():
    # 1 pair only A right, 9 only B right: p = 2 * P(X <= 1), X ~ Bin(10, 1/2) = 2 * 11 / 1024
    a = np.array([1] * 1 + [0] * 9 + [1] * 5 + [0] * 3)
    b = np.array([0] * 1 + [1] * 9 + [1] * 5 + [0] * 3)
    m = paired.mcnemar_exact(a, b)
    assert (m.n_a_only, m.n_b_only) == (1, 9)
    assert m.p_value == pytest.approx(2 * 11 / 1024, abs=1e-12)
    # no discordant unit: nothing speaks against equality
    assert paired.mcnemar_exact([1, 0, 1], [1, 0, 1]).p_value == 1.0


def test_mcnemar_matches_statsmodels():
    from statsmodels.stats.contingency_tables import mcnemar
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 80))
        a = rng.random(n) < rng.random()
        b = rng.random(n) < rng.random()
        table = [[int(np.sum(a & b)), int(np.sum(a & ~b))],
                 [int(np.sum(~a & b)), int(np.sum(~a & ~b))]]
        ours = paired.mcnemar_exact(a, b).p_value
        if table[0][1] + table[1][0] == 0:
            assert ours == 1.0
            continue
        assert ours == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-9, abs=1e-12)


def test_mcnemar_lengths_must_match():
    with pytest.raises(LengthMismatchError):
        paired.mcnemar_exact([1, 0], [1])


# ------------------------------------------------------------------------------ the bootstrap

def test_two_stage_weights_draw_whole_contexts():
    codes = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    w = paired.two_stage_weights(codes, 3, 500, np.random.default_rng(0))
    assert w.shape == (500, 9)
    sizes = np.array([3, 2, 4])
    per_context = np.stack([w[:, codes == k].sum(axis=1) for k in range(3)], axis=1)
    # each context is drawn a whole number of times, n_k units per draw, K draws in all
    times = per_context / sizes
    assert np.allclose(times, np.round(times))
    assert np.allclose(times.sum(axis=1), 3)
    # and some replicates leave a context out entirely: contexts, not pairs, are resampled
    assert (times == 0).any()


def _clustered_study(rng, n_contexts=20, per_context=30, true_diff=0.05, spread=0.15):
    """Two judges on the same pairs; each context has its own accuracies (uniform around the
    means, so the true difference of the expected accuracies is ``true_diff`` exactly) and the
    two judges' successes share a per-pair difficulty (correlated, as on real pairs)."""
    base_a = 0.75 + rng.uniform(-spread, spread, n_contexts)
    base_b = base_a - true_diff + rng.uniform(-0.05, 0.05, n_contexts)
    ctx = np.repeat(np.arange(n_contexts), per_context)
    u = rng.random(len(ctx))  # the pair's difficulty, shared by both judges
    a = (u < base_a[ctx]).astype(float)
    b = (np.where(rng.random(len(ctx)) < 0.6, u, rng.random(len(ctx))) < base_b[ctx])
    return a, b.astype(float), ctx.astype(str)


def test_paired_bootstrap_covers_the_known_difference():
    rng = np.random.default_rng(11)
    covered = []
    for study in range(150):
        a, b, ctx = _clustered_study(rng)
        *_, d = paired.paired_mean_difference(a, b, ctx, n_boot=400, seed=study)
        covered.append(d.low <= 0.05 <= d.high)
    assert 0.90 <= np.mean(covered) <= 0.99, np.mean(covered)


def test_paired_beats_two_separate_intervals():
    # the same pairs make the paired interval of the difference narrower than the two separate
    # intervals suggest: the reason to pair
    rng = np.random.default_rng(2)
    a, b, ctx = _clustered_study(rng, n_contexts=30)
    ia, ib, d = paired.paired_mean_difference(a, b, ctx, n_boot=1000, seed=0)
    assert d.high - d.low < (ia.high - ia.low) + (ib.high - ib.low)
    assert d.estimate == pytest.approx(a.mean() - b.mean())


def test_paired_bootstrap_checks_its_input():
    with pytest.raises(LengthMismatchError):
        paired.paired_mean_difference([1, 0], [1], ["c", "c"])
    with pytest.raises(InputError):
        paired.paired_mean_difference([], [], [])
    with pytest.raises(InputError):
        paired.paired_mean_difference([1.0], [0.0], ["c"], n_boot=0)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.booleans(), st.booleans()), min_size=1,
                max_size=40), st.randoms(use_true_random=False))
def test_estimates_do_not_depend_on_names_or_order(units, rnd):
    ctx = np.array([f"c{k}" for k, _, _ in units], dtype=object)
    a = np.array([x for _, x, _ in units], dtype=float)
    b = np.array([y for _, _, y in units], dtype=float)
    order = list(range(len(units)))
    rnd.shuffle(order)
    renamed = np.array([f"other-{c}" for c in ctx], dtype=object)
    one = paired.paired_mean_difference(a, b, ctx, n_boot=20)
    two = paired.paired_mean_difference(a[order], b[order], renamed[order], n_boot=20)
    assert [i.estimate for i in one] == pytest.approx([i.estimate for i in two])
    assert paired.mcnemar_exact(a, b) == paired.mcnemar_exact(a[order], b[order])
    r1, _ = paired.per_context_rate(a, ctx)
    r2, _ = paired.per_context_rate(a[order], renamed[order])
    assert r1 == pytest.approx(r2)


# ------------------------------------------------------------------------------ ZEPO's A-rate

def test_per_context_a_rate_is_zepos_not_the_pooled_share():
    # context 1: 9 of 10 decisions for A; context 2: 0 of 2. ZEPO: mean(0.9, 0.0) = 0.45,
    # fairness -0.05; pooled: 9 / 12 = 0.75, fairness -0.25.
    first = np.array([1.0] * 9 + [0.0] + [0.0, 0.0])
    ctx = ["c1"] * 10 + ["c2"] * 2
    rate, rates = paired.per_context_rate(first, ctx)
    assert rate == pytest.approx(0.45)
    assert rates.tolist() == pytest.approx([0.9, 0.0])
    fair = paired.fairness_interval(first, ctx, n_boot=200)
    assert fair.estimate == pytest.approx(-0.05)
    assert fair.low <= fair.estimate + 1e-12 and fair.high <= 0.0


def test_a_rate_interval_covers_the_known_rate():
    rng = np.random.default_rng(5)
    covered = []
    for study in range(150):
        rates = np.clip(0.65 + rng.uniform(-0.2, 0.2, 16), 0, 1)  # expected mean 0.65
        ctx = np.repeat(np.arange(16), 12)
        first = (rng.random(len(ctx)) < rates[ctx]).astype(float)
        iv, _ = paired.rate_interval(first, ctx.astype(str), n_boot=400, seed=study)
        covered.append(iv.low <= 0.65 <= iv.high)
    assert 0.90 <= np.mean(covered) <= 0.99, np.mean(covered)


def test_paired_fairness_difference():
    # wording A: fair in every context (half its decisions for A); B: always A
    ctx = np.repeat([f"c{k}" for k in range(10)], 6)
    a = np.tile([1.0, 0.0], 30)
    b = np.ones(60)
    fa, fb, d = paired.paired_fairness_difference(a, b, ctx, n_boot=300)
    assert fa.estimate == pytest.approx(0.0) and fb.estimate == pytest.approx(-0.5)
    assert d.estimate == pytest.approx(0.5) and d.low > 0
    # the same wording against itself: difference exactly 0 in every replicate
    *_, same = paired.paired_fairness_difference(b, b, ctx, n_boot=50)
    assert (same.estimate, same.low, same.high) == (0.0, 0.0, 0.0)
    assert same.covers_zero


# ------------------------------------------------------------------------------ from tables

def _table(rows):
    ctx, a, b, p = (np.array(col, dtype=object) for col in zip(*rows))
    p = p.astype(np.float64)
    z = np.zeros(len(p))
    return ComparisonTable(ctx, a, b, p, z, z, z)


def test_paired_accuracy_on_labelled_pairs():
    # 3 contexts, 2 pairs each, the people prefer the alphabetically first candidate in each
    human = pd.DataFrame({"context_id": ["c1", "c1", "c2", "c2", "c3", "c3"],
                          "left_id": ["a", "a", "a", "a", "a", "b"],
                          "right_id": ["b", "c", "b", "c", "b", "c"],
                          "winner_id": ["a", "a", "a", "a", "a", "b"]})
    pairs = [(c, x, y) for c, x, y in zip(human.context_id, human.left_id, human.right_id)]
    right = _table([(c, x, y, 0.9) for c, x, y in pairs])  # always the people's choice
    half = _table([(c, x, y, 0.9 if k % 2 else 0.1) for k, (c, x, y) in enumerate(pairs)])
    result = paired.paired_accuracy(human, right, 0.5, half, 0.5, name_a="good", name_b="half",
                                    n_boot=200)
    assert (result.value_a, result.value_b) == (1.0, 0.5)
    assert result.difference == pytest.approx(0.5)
    assert (result.n_pairs, result.n_contexts) == (6, 3)
    assert (result.mcnemar.n_a_only, result.mcnemar.n_b_only) == (3, 0)
    assert result.mcnemar.p_value == pytest.approx(0.25)  # 2 * (1/2)^3
    text = result.sentence()
    assert "percentage points" in text and "50.0" in text and "McNemar" in text
    assert "3 context(s)" in text and "6 labelled pairs judged by both" in text
    assert result.to_dict()["mcnemar"]["n_a_only"] == 3
    with pytest.raises(InputError, match="no labelled pair"):
        paired.paired_accuracy(human, right, 0.5, _table([("c9", "a", "b", 0.9)]), 0.5)


def test_paired_first_position():
    rows = [(f"c{k}", "x", "y") for k in range(8)] + [(f"c{k}", "y", "x") for k in range(8)]
    always_a = _table([(*r, 0.8) for r in rows])
    fair = _table([(*r, 0.8 if r[1] == "x" else 0.2) for r in rows])
    result = paired.paired_first_position(always_a, 0.5, fair, 0.5, n_boot=200)
    assert (result.value_a, result.value_b) == (1.0, 0.5)
    assert (result.mcnemar.n_a_only, result.mcnemar.n_b_only) == (8, 0)
    assert result.mcnemar.p_value == pytest.approx(2 * 0.5 ** 8)
    assert not result.indistinguishable
    assert math.isclose(result.n_pairs, 16) and result.n_contexts == 8

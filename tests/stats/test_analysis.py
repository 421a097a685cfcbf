"""analysis.py: rankings, evaluation and bias tables joined from a dataset and a comparison table,
checked against hand-worked values."""

import numpy as np
import pytest

from compassess_core.stats import analysis
from compassess_core.errors import InputError
from compassess_core.types import Candidate, ComparisonTable, Context, Dataset


def dataset():
    cands = tuple(Candidate(c, f"text {c}", system=f"S{k}", scores={"q": float(s)})
                  for k, (c, s) in enumerate([("x", 3), ("y", 2), ("z", 1)]))
    return Dataset("d", (Context("C", "ctx", cands),), ("q",))


def table(rows):
    ctx, a, b, p = zip(*rows)
    o = lambda v: np.array(v, dtype=object)  # noqa: E731
    f = np.array(p, dtype=float)
    return ComparisonTable(o(ctx), o(a), o(b), f, np.log(f), np.log1p(-f), np.ones_like(f))


# A judge that always prefers the first position a bit: p(first wins) = 0.8 when first is better,
# 0.6 when first is worse. Order of quality: x > y > z.
FULL = [("C", "x", "y", 0.8), ("C", "y", "x", 0.6), ("C", "x", "z", 0.8), ("C", "z", "x", 0.6),
        ("C", "y", "z", 0.8), ("C", "z", "y", 0.6)]


def test_order_dependence_hand_worked():
    od = analysis.order_dependence(dataset(), table(FULL), tau=0.5)
    # every pair: |0.8 - (1 - 0.6)| = 0.4, and at tau 0.5 both orders pick the first: flips
    assert len(od) == 3
    assert np.allclose(od["inconsistency"], 0.4)
    assert od["flips"].all()
    # at tau = 0.7 (between 0.6 and 0.8) each pair is decided for the better candidate both ways
    assert not analysis.order_dependence(dataset(), table(FULL), tau=0.7)["flips"].any()


def test_rank_and_evaluate_raw_vs_balanced():
    ds, tb = dataset(), table(FULL)
    raw = analysis.rank_contexts(ds, tb, method="win-ratio", tau=0.5)
    assert raw["score"].tolist() == [0.5, 0.5, 0.5]  # every comparison won by the first position
    rep = analysis.evaluate_run(ds, tb, reference="q", debias="balanced")
    assert rep.balanced_tau == pytest.approx(0.7)
    assert rep.raw.p_a == 1.0 and rep.debiased.p_a == 0.5
    assert rep.debiased.spearman_x100 == pytest.approx(100.0)
    assert rep.debiased.pairwise_accuracy == 1.0 and rep.raw.pairwise_accuracy == 0.5
    assert rep.flip_rate == 1.0 and rep.n_pairs_both_orders == 3
    ranked = analysis.rank_contexts(ds, tb, method="win-ratio", tau=rep.balanced_tau)
    assert ranked["candidate_id"].tolist() == ["x", "y", "z"] and ranked["rank"].tolist() == [1, 2, 3]


def test_bad_reference_and_tau_are_input_errors():
    with pytest.raises(InputError, match="reference column 'nope'"):
        analysis.evaluate_run(dataset(), table(FULL), reference="nope")
    with pytest.raises(InputError, match="between 0 and 1"):
        analysis.resolve_tau(1.5, np.array([0.5]))


def test_balanced_p_a_of_a_sampled_judge_is_one_half():
    """A judge whose p is a share of 4 samples: 2 of the 6 comparisons sit exactly at the median
    0.5 and 2 above it. Eq. 10 at tau* = 0.5 counts the two at 0.5 for B, P(A) = 2/6; balanced,
    half of them count for A (hand-worked: (0.5 - 2/6) / (2/6) = 0.5), so P(A) = 0.5, while the
    raw P(A) at tau = 0.5 stays eq. 10's 2/6."""
    rows = [("C", "x", "y", 0.75), ("C", "y", "x", 0.5), ("C", "x", "z", 1.0),
            ("C", "z", "x", 0.25), ("C", "y", "z", 0.5), ("C", "z", "y", 0.0)]
    rep = analysis.evaluate_run(dataset(), table(rows), reference="q", debias="balanced")
    assert rep.debiased.tau == pytest.approx(0.5)
    assert rep.debiased.p_a == pytest.approx(0.5)
    assert rep.raw.p_a == pytest.approx(2 / 6)

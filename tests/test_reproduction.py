"""Table and curve code of the reproduction (compassess_core.reproduction) on a small stored matrix.

The matrix is written to a real SQLite store and read back, as benchmarks/reproduce_paper.py does.
tiny_dataset references (coherence): doc1 c1 4.0, c2 2.5, c3 5.0; doc2 c1 3.0, c2 4.5, c3 1.0.
doc1 is judged perfectly (p = 0.8 when the first is better, 0.4 when worse). doc2 gets c1-vs-c2
wrong in both orders (p(c1, c2) = 0.6, p(c2, c1) = 0.45), the rest right.
"""

from __future__ import annotations

import numpy as np
import pytest

from compassess_core import reproduction as rp
from compassess_core.types import ComparisonResult, Judgement, PairKey

P = {
    "doc1": {("c1", "c2"): 0.8, ("c2", "c1"): 0.4, ("c1", "c3"): 0.4, ("c3", "c1"): 0.8,
             ("c2", "c3"): 0.4, ("c3", "c2"): 0.8},
    "doc2": {("c1", "c2"): 0.6, ("c2", "c1"): 0.45, ("c1", "c3"): 0.8, ("c3", "c1"): 0.4,
             ("c2", "c3"): 0.8, ("c3", "c2"): 0.4},
}


@pytest.fixture
def mats(store, tiny_dataset):
    from compassess_core.settings import RunSettings
    ds = store.save_dataset(tiny_dataset)
    s = RunSettings(dataset="tiny", aspect="coherence", aspect_adjective="coherent",
                    template_name="t1", template_text="{context}{a}{b}", primer="Answer: Summary",
                    model="m")
    rid = store.create_run("r", ds, s.to_dict())
    store.add_comparisons(rid, [
        ComparisonResult(PairKey(c, a, b), Judgement(p, np.log(p), np.log(1 - p), 1.0), f"{c}{a}{b}")
        for c, d in P.items() for (a, b), p in d.items()])
    return rp.context_matrices(store.load_dataset(ds), store.comparison_table(rid), "coherence")


def test_matrices_read_back(mats):
    assert [m.context_id for m in mats] == ["doc1", "doc2"]
    assert mats[1].p[0, 1] == pytest.approx(0.6) and mats[1].p[1, 0] == pytest.approx(0.45)
    assert np.isnan(np.diag(mats[0].p)).all()
    np.testing.assert_array_equal(mats[1].ref, [3.0, 4.5, 1.0])


def test_spearman_and_quality_hand_worked(mats):
    # doc1: perfect order -> rho 1. doc2: win ratio c1 1, c2 .5, c3 0 vs reference c2 > c1 > c3
    # -> d^2 = 2, rho = 1 - 6*2/(3*8) = 0.5. Mean x100 = 75.
    assert rp.spearman_x100(mats) == pytest.approx(75.0)
    q = rp.quality_row(mats)
    assert (q.n_contexts, q.n_comparisons) == (2, 12)
    assert q.p_a_raw == pytest.approx(0.5)              # 6 of 12 have p > 0.5
    assert 0.45 < q.tau < 0.6                           # balancing threshold: between .45 and .6
    assert q.spearman_raw == q.spearman_debiased == pytest.approx(75.0)
    assert q.accuracy_raw == pytest.approx(10 / 12)      # doc1 6/6, doc2 4/6


def test_mean_fewer_candidates_and_methods(mats):
    assert rp.spearman_x100(rp.mean_matrices(mats, mats)) == pytest.approx(75.0)
    assert rp.fewer_candidates(mats, [3], draws=3) == {3: pytest.approx(75.0)}
    two = rp.fewer_candidates(mats, [2], draws=20, seed=1)[2]
    assert -100.0 <= two <= 100.0
    mc = rp.method_comparison(mats)
    assert mc["win-ratio"] == (pytest.approx(75.0), pytest.approx(75.0))
    assert set(mc) == {"win-ratio", "bradley-terry", "poe"}


def test_curves_reach_the_full_matrix_at_100_percent(mats):
    assert rp.budgets_for(3, [0.1, 0.5, 1.0]) == [2, 4, 6]
    for s in rp.CURVE_STRATEGIES:
        mu, sd = rp.selection_curve(mats, s, [1.0], draws=3,
                                    method="win-ratio")
        if s == "no-repeat":  # one order per pair: at most half the matrix
            continue
        assert mu[0] == pytest.approx(75.0) and sd[0] == pytest.approx(0.0)
    assert rp.fraction_to_reach([0.1, 0.5, 1.0], np.array([10.0, 72.0, 75.0]), 0.95 * 75) == 0.5


def test_simulated_judge_has_its_bias_and_signal():
    mats = rp.simulated_matrices(8, 30, noise=0.5, bias_logit=1.0, seed=0)
    q = rp.quality_row(mats)
    assert q.p_a_raw > 0.6                               # positional bias towards A
    assert q.spearman_raw > 80 and q.tau > 0.5


def test_curve_table_markdown():
    t = rp.curve_table({"random": np.array([1.0, 2.0])}, [0.1, 1.0])
    assert t.splitlines() == ["| strategy | 10% | 100% |", "|---|---|---|", "| random | 1.0 | 2.0 |"]

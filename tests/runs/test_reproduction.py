"""Table and curve code of the reproduction (benchmarks/studies/reproduction.py) on a small stored matrix.

The matrix is written to a real SQLite store and read back, as benchmarks/reproduce_paper.py does.
tiny_dataset references (coherence): doc1 c1 4.0, c2 2.5, c3 5.0; doc2 c1 3.0, c2 4.5, c3 1.0.
doc1 is judged perfectly (p = 0.8 when the first is better, 0.4 when worse). doc2 gets c1-vs-c2
wrong in both orders (p(c1, c2) = 0.6, p(c2, c1) = 0.45), the rest right.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.studies import reproduction as rp
from compassess_core.types import ComparisonResult, Judgement, PairKey

P = {
    "doc1": {("c1", "c2"): 0.8, ("c2", "c1"): 0.4, ("c1", "c3"): 0.4, ("c3", "c1"): 0.8,
             ("c2", "c3"): 0.4, ("c3", "c2"): 0.8},
    "doc2": {("c1", "c2"): 0.6, ("c2", "c1"): 0.45, ("c1", "c3"): 0.8, ("c3", "c1"): 0.4,
             ("c2", "c3"): 0.8, ("c3", "c2"): 0.4},
}


@pytest.fixture
def mats(store, tiny_dataset):
    from compassess_core.runs.settings import RunSettings
    ds = store.save_dataset(tiny_dataset)
    s = RunSettings(dataset="tiny", aspect="coherence", aspect_adjective="coherent",
                    template_name="t1", template_text="{context}{a}{b}", primer="Answer: Summary",
                    model="m")
    rid = store.create_run("r", ds, s.to_dict())
    store.add_results(rid, "comparative", [
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


def test_against_full_matrix_is_100_at_the_full_budget(mats):
    # The full budget keeps every comparison, so the ranking equals the full matrix's own: rho 1
    # in both contexts whatever the judge got wrong (doc2 is wrong against the reference).
    mu, _ = rp.selection_curve(mats, "random", [1.0], draws=2, against="full-matrix")
    assert mu[0] == pytest.approx(100.0)
    full = rp.full_matrix_scores(mats)
    np.testing.assert_allclose(full[1], [1.0, 0.5, 0.0])      # doc2 win ratios, as hand-worked above
    with pytest.raises(rp.InputError, match="against"):
        rp.selection_curve(mats, "random", [1.0], against="humans")


def test_fit_judge_hand_worked():
    # Three candidates, a = (0.3, 0, -0.3), b = 0.2, and residuals +-0.1 that cancel per row:
    # logit p_ij = a_i - a_j + b + e_ij with e = +0.1 on (0,1), (1,2), (2,0) and -0.1 on the rest.
    a = np.array([0.3, 0.0, -0.3])
    e = np.array([[0, 0.1, -0.1], [-0.1, 0, 0.1], [0.1, -0.1, 0]])
    lg = a[:, None] - a[None, :] + 0.2 + e
    p = 1 / (1 + np.exp(-lg))
    np.fill_diagonal(p, np.nan)
    f = rp.fit_judge([rp.ContextMatrix("x", p, np.array([3.0, 2.0, 1.0]))])
    assert f.bias_logit == pytest.approx(0.2)
    # residual variance: 6 residuals of 0.1^2 over 6 - 3 degrees of freedom = 0.02
    assert f.noise_sd == pytest.approx(np.sqrt(0.02))
    # signal: var(a, ddof=1) = 0.09 minus the estimate noise 0.02 / (2 * 2) = 0.005
    assert f.signal_sd == pytest.approx(np.sqrt(0.085))
    assert f.rho == pytest.approx(1.0)                       # clipped after the attenuation fix
    assert (f.n_contexts, f.n_comparisons) == (1, 6)


def test_fit_judge_recovers_a_simulated_judge():
    mats = rp.simulated_matrices(16, 40, slope=0.5, noise=0.3, bias_logit=0.4, rho=0.6, seed=3)
    f = rp.fit_judge(mats)
    assert f.bias_logit == pytest.approx(0.4, abs=0.02)
    assert f.noise_sd == pytest.approx(0.3, rel=0.05)
    assert f.signal_sd == pytest.approx(0.5, rel=0.15)
    assert f.rho == pytest.approx(0.6, abs=0.1)
    again = rp.simulated_like(f, 8, 2, seed=1)
    assert len(again) == 2 and again[0].p.shape == (8, 8)
    with pytest.raises(rp.InputError, match="complete"):
        rp.fit_judge([rp.ContextMatrix("x", np.full((3, 3), np.nan), np.arange(3.0))])
    with pytest.raises(rp.InputError, match="rho"):
        rp.simulated_matrices(4, 1, rho=1.5)


def test_benchmark_tables_command_reads_the_store(store, db_url, tiny_dataset, capsys):
    """benchmarks/reproduce_paper.py tables, end to end on two stored templates (no model)."""
    import importlib.util
    from pathlib import Path

    from compassess_core.runs.settings import RunSettings
    spec = importlib.util.spec_from_file_location(
        "reproduce_paper", Path(__file__).resolve().parents[2] / "benchmarks" / "reproduce_paper.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    ds = store.save_dataset(tiny_dataset)
    for t in ("t1", "t2"):
        s = RunSettings(dataset="tiny", aspect="coherence", aspect_adjective="coherent",
                        template_name=t, template_text="{context}{a}{b}" + t, primer="Answer: Summary",
                        model="m")
        rid = store.create_run(bench.run_name("summeval", "coherence", t, "smollm2", 2), ds, s.to_dict())
        store.add_results(rid, "comparative", [
            ComparisonResult(PairKey(c, a, b), Judgement(p, np.log(p), np.log(1 - p), 1.0), f"{t}{c}{a}{b}")
            for c, d in P.items() for (a, b), p in d.items()])
    assert bench.main(["tables", "--dataset", "summeval", "--contexts", "2", "--aspects", "coherence",
                       "--db", db_url, "--draws", "2"]) == 0
    out = capsys.readouterr().out
    # per-aspect row: t1 = t2 = 75.0 (the hand-worked value above), mean raw/debiased, paper 51.2
    assert "| coherence | 75.0 (2) | 75.0 (2) | 75.0 / 75.0 (2) | – | – | – | – | 51.2 |" in out
    assert "| coherence | t1 | 2 | 12 | 0.500 |" in out          # Tables 5/6/7 row: P(A) 0.5
    assert "### The judge as a model" in out and "| coherence | t1 | 2 |" in out
    assert "**coherence / t1** (2 contexts; full matrix 75.0 win ratio raw" in out
    assert "| poe / PoE debiased, vs full matrix |" in out

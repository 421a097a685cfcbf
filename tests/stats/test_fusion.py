"""Rankings fused from the judge's comparisons and human votes (compassess_core.stats.fusion), the
'informative' annotation mode, ``compassess rank --with-humans``, and the label-budget study
(benchmarks/studies/fusion_study.py) on simulated judges with known truth."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from benchmarks.studies import fusion_study, reproduction
from compassess_core.stats import efficient, fusion, ranking
from compassess_core.people.annotation import next_pairs
from compassess_core.cli import main as cli
from compassess_core.errors import InputError
from tests.app.test_app_pages import seed_run  # noqa: F401
from tests.stats.test_calibration import label_sample, votes


def brute_force_posterior(n, i, j, y, w, noise_var, prior_var):
    """Weighted ridge least squares written out with the design matrix."""
    X = np.zeros((len(i), n))
    X[np.arange(len(i)), i] = 1.0
    X[np.arange(len(i)), j] = -1.0
    W = np.diag(w) / noise_var
    A = X.T @ W @ X + np.eye(n) / prior_var
    cov = np.linalg.inv(A)
    return cov @ X.T @ W @ y, cov


def test_difference_posterior_is_weighted_ridge_least_squares():
    i, j = np.array([0, 1, 2, 0]), np.array([1, 2, 0, 2])
    y, w = np.array([0.3, -0.1, 0.2, 0.05]), np.array([1.0, 4.0, 0.5, 2.0])
    mean, cov = efficient.difference_posterior(3, i, j, y, w, noise_var=0.05, prior_var=1.0)
    m2, c2 = brute_force_posterior(3, i, j, y, w, 0.05, 1.0)
    np.testing.assert_allclose(mean, m2)
    np.testing.assert_allclose(cov, c2)
    # hand-worked: one comparison, unit weights, noise 1, prior 1: precision [[2,-1],[-1,2]],
    # mean = Sigma [y, -y] = [y/3, -y/3]
    mean, cov = efficient.difference_posterior(2, [0], [1], [0.6], noise_var=1.0, prior_var=1.0)
    np.testing.assert_allclose(mean, [0.2, -0.2])
    np.testing.assert_allclose(cov, np.array([[2, 1], [1, 2]]) / 3)


def problem(seed=0, n=6):
    rng = np.random.default_rng(seed)
    s = rng.normal(size=n)
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    p = 1 / (1 + np.exp(-(0.4 * (s[i] - s[j]) + rng.normal(0, 0.4, len(i)))))
    hi, hj = np.array([0, 1, 2, 3, 0]), np.array([1, 2, 3, 4, 5])
    return s, fusion.FusionInputs.build(n, i, j, p, hi, hj, np.sign(s[hi] - s[hj]))


def test_vote_is_read_as_a_typical_judge_verdict_worth_w_comparisons():
    _, x = problem()
    m = np.abs(x.llm_p - 0.5).mean()
    assert x.vote_margin == pytest.approx(m)
    mean, cov = fusion.fused_posterior(x, 8.0)
    i = np.concatenate((x.llm_i, x.human_i))
    j = np.concatenate((x.llm_j, x.human_j))
    y = np.concatenate((x.llm_p - 0.5, m * x.human_y))
    w = np.concatenate((np.ones(len(x.llm_p)), np.full(len(x.human_y), 8.0)))
    m2, c2 = brute_force_posterior(x.n, i, j, y, w, efficient.NOISE_VAR, efficient.PRIOR_VAR)
    np.testing.assert_allclose(mean, m2)
    np.testing.assert_allclose(cov, c2)


def test_weight_zero_is_the_judge_and_inf_the_humans():
    _, x = problem()
    judge, _ = fusion.fused_posterior(x, 0.0)
    poe = ranking.poe_gaussian(x.n, x.llm_i, x.llm_j, x.llm_p).scores
    # the same Gaussian product of experts (up to the weak prior): the same order
    np.testing.assert_array_equal(np.argsort(judge), np.argsort(poe))
    humans, _ = fusion.fused_posterior(x, math.inf)
    alone, _ = fusion.fused_posterior(fusion.FusionInputs.build(x.n, human_i=x.human_i,
                                                                human_j=x.human_j,
                                                                human_y=x.human_y), 1.0)
    np.testing.assert_allclose(humans * fusion.VOTE_MARGIN / x.vote_margin, alone)


@pytest.mark.parametrize("weight", [0.0, 1.0, 8.0, math.inf])
def test_leave_one_out_predictions_equal_refits_without_the_vote(weight):
    _, x = problem(seed=3)
    loo = fusion.loo_vote_predictions(x, weight)
    for k in range(len(x.human_y)):
        keep = np.arange(len(x.human_y)) != k
        xk = fusion.FusionInputs(x.n, x.llm_i, x.llm_j, x.llm_p, x.human_i[keep], x.human_j[keep],
                                 x.human_y[keep])
        mean, _ = fusion.fused_posterior(xk, weight)
        assert loo[k] == pytest.approx(mean[x.human_i[k]] - mean[x.human_j[k]], abs=1e-10)


def test_label_value_is_the_drop_of_the_total_variance():
    _, x = problem(seed=4)
    _, cov = fusion.fused_posterior(x, 8.0)
    noise = efficient.NOISE_VAR / 8.0
    value = fusion.label_value(cov, noise)
    for a, b in [(0, 5), (2, 4), (1, 3)]:
        u = np.zeros(x.n)
        u[a], u[b] = 1.0, -1.0
        after = np.linalg.inv(np.linalg.inv(cov) + np.outer(u, u) / noise)
        assert value[a, b] == pytest.approx(np.trace(cov) - np.trace(after))
        assert value[b, a] == pytest.approx(value[a, b])
    assert np.all(np.diag(value) == 0)


def test_cross_validation_keeps_a_useful_judge_and_drops_a_coin():
    rng = np.random.default_rng(5)
    good, coin = [], []
    for _ in range(30):
        s = rng.normal(size=6)
        i, j = np.nonzero(~np.eye(6, dtype=bool))
        hi, hj = np.array([0, 2, 4]), np.array([1, 3, 5])
        hy = np.sign(s[hi] - s[hj])
        good.append(fusion.FusionInputs.build(6, i, j, 1 / (1 + np.exp(-(s[i] - s[j]))), hi, hj, hy))
        coin.append(fusion.FusionInputs.build(6, i, j, rng.uniform(0.4, 0.6, len(i)), hi, hj, hy))
    g = fusion.choose_human_weight(good)
    assert g.chosen_by == "leave-one-out cross-validation" and math.isfinite(g.weight)
    assert g.loo_accuracy[list(g.grid).index(0.0)] > 0.8  # the judge alone predicts held-out votes
    c = fusion.choose_human_weight(coin)
    # a coin agrees with about half of the votes: at most half, and it is left out
    judge_alone = c.loo_accuracy[list(c.grid).index(0.0)]
    assert abs(judge_alone - 0.5) < 0.15
    assert math.isinf(c.weight) == (judge_alone <= 0.5)
    anti = [fusion.FusionInputs(x.n, x.llm_i, x.llm_j, x.llm_p, x.human_i, x.human_j, -x.human_y)
            for x in good]  # people who always disagree with the judge
    assert math.isinf(fusion.choose_human_weight(anti).weight)
    few = fusion.choose_human_weight(good[:1])
    assert few.weight == fusion.DEFAULT_HUMAN_WEIGHT and few.chosen_by.startswith("default")
    assert fusion.weight_label(math.inf) == "humans only"


# ------------------------------------------------------------------ from a real run and labels

def test_fused_rankings_and_system_level_from_a_store(db_url):
    store, dataset_id, run_id = seed_run(db_url)
    dataset, table = store.load_dataset(dataset_id), store.comparison_table(run_id)
    assert len(fusion.fused_rankings(dataset, table, None).frame) == 15  # no votes: the judge
    label_sample(store, dataset_id)
    human = store.human_judgements_frame(dataset_id, "coherence")
    fused = fusion.fused_rankings(dataset, table, human, tau=0.725)
    f = fused.frame
    assert len(f) == 15 and f["n_votes"].tolist() == [4] * 15
    # every vote and the debiased judge agree with the coherence order: rank 1 = most coherent
    for _, g in f.groupby("context_id"):
        assert g.sort_values("rank")["coherence"].is_monotonic_decreasing
    assert fusion.fused_correlation(fused, "coherence").mean_x100 == pytest.approx(100.0)
    systems = fusion.fused_system_ranking(dataset, table, human, tau=0.725)
    assert set(systems.frame.columns) >= {"rank", "system", "score", "sd", "coherence"}
    assert systems.frame["n_votes"].sum() > 0


def test_informative_mode_asks_for_the_pair_that_most_reduces_uncertainty(db_url):
    store, dataset_id, run_id = seed_run(db_url)
    dataset, table = store.load_dataset(dataset_id), store.comparison_table(run_id)
    ctx = dataset.contexts[0]
    a, b = sorted(ctx.candidate_ids)[:2]
    human = votes([(ctx.context_id, a, b, a, "bob")])
    value = fusion.informative_pairs(dataset, table, human, tau=0.725)
    got = next_pairs(dataset, table, human, "alice", "informative", 0.725, limit=len(value))
    value_of = {(r.context_id, r.x, r.y): r.value for r in value.itertuples()}
    # the first pair offered has the largest value (equal values come in a seeded random order)
    assert value_of[got[0]] == pytest.approx(value["value"].max())
    assert [value_of[g] for g in got] == sorted(value_of.values(), reverse=True)[:len(got)]
    # the pair bob labelled is the least useful of its context for the next vote
    mine = value[value["context_id"] == ctx.context_id]
    assert (mine.iloc[-1]["x"], mine.iloc[-1]["y"]) == (a, b)
    with pytest.raises(InputError):
        next_pairs({"q": ["a", "b"]}, None, None, "alice", "informative")


def test_cli_rank_with_humans_uses_stored_labels(db_url, capsys):
    store, dataset_id, run_id = seed_run(db_url)
    assert cli(["rank", "--run", "hand-run", "--with-humans", "--db", db_url]) == 2
    assert "no human labels" in capsys.readouterr().err
    label_sample(store, dataset_id)
    assert cli(["rank", "--run", "hand-run", "--with-humans", "--format", "json", "--debias",
                "balanced", "--db", db_url]) == 0
    out = json.loads(capsys.readouterr().out)
    want = fusion.fused_rankings(store.load_dataset(dataset_id), store.comparison_table(run_id),
                                 store.human_judgements_frame(dataset_id, "coherence"),
                                 tau=out["tau"])
    assert out["human_weight"] == want.choice.to_dict()
    # a score that is zero up to rounding differs by ~1e-12 between the two paths: absolute tolerance
    # (the command lists each context best first; compared by candidate)
    got = {(r["context_id"], r["candidate_id"]): r["score"] for r in out["rankings"]}
    assert [got[k] for k in zip(want.frame["context_id"], want.frame["candidate_id"])] == \
        pytest.approx(want.frame["score"].tolist(), abs=1e-9)
    for context in {r["context_id"] for r in out["rankings"]}:
        ranks = [r["rank"] for r in out["rankings"] if r["context_id"] == context]
        assert ranks == sorted(ranks)
    assert cli(["rank", "--run", "hand-run", "--with-humans", "--human-weight", "inf",
                "--level", "system", "--db", db_url]) == 0
    text = capsys.readouterr().out
    assert "system-level ranking fused" in text and "the humans alone" in text
    assert cli(["rank", "--run", "hand-run", "--with-humans", "--human-weight", "-1",
                "--db", db_url]) == 2


# ------------------------------------------------------------------ the study, with known truth

def simulated_contexts(slope, rho, n=6, contexts=20, seed=0):
    return fusion_study.study_contexts_from_matrices(reproduction.simulated_matrices(
        n, contexts, slope=slope, noise=1.0, bias_logit=0.3, rho=rho, seed=seed))


def test_oracle_votes_follow_the_expert_scores():
    rng = np.random.default_rng(0)
    ref = np.array([3.0, 1.0, 3.0])
    v = fusion_study.oracle_votes(ref, np.array([0, 1]), np.array([1, 2]), rng)
    assert v.tolist() == [1.0, -1.0]
    ties = [fusion_study.oracle_votes(ref, np.array([0]), np.array([2]), rng)[0] for _ in range(400)]
    assert 0.4 < np.mean(np.array(ties) > 0) < 0.6
    wrong = fusion_study.oracle_votes(ref, np.zeros(1000, int), np.ones(1000, int), rng, 0.2)
    assert 0.15 < np.mean(wrong < 0) < 0.25


def test_study_curves_with_a_known_judge():
    contexts = simulated_contexts(slope=0.5, rho=0.5, n=16, contexts=10)
    total = 10 * 120
    budgets = [0, 40, total]
    rnd = fusion_study.budget_curve(contexts, budgets, "random", draws=3)
    unc = fusion_study.budget_curve(contexts, budgets, "uncertainty", draws=3)
    for c in (rnd, unc):
        # no label: the humans alone give no ranking, whose correlation is undefined (NaN)
        assert np.isnan(c.humans[0]) and c.fused[0] == pytest.approx(c.judge)
        # every pair labelled by a perfect oracle: the humans alone rank by the expert scores
        assert c.humans[-1] == pytest.approx(100.0)
        assert c.fused[-1] >= c.humans[-1] - 1.0
        assert c.judge > 30  # the simulated judge is informative
    # spreading the labels over pairs and contexts beats drawing them at random
    assert unc.humans[1] > rnd.humans[1] + 3 and unc.fused[1] > rnd.fused[1]
    assert fusion_study.labels_to_reach([0, 10, 20], [0.0, 40.0, 80.0], 60.0) == pytest.approx(15.0)
    assert math.isnan(fusion_study.labels_to_reach([0, 10], [0.0, 1.0], 5.0))
    with pytest.raises(InputError):
        fusion_study.budget_curve(contexts, [total + 1], "random")

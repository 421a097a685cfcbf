"""Panels of judges: the engine (member scales, product of experts and majority vote, learnt
weights, agreement among members), the store's panels, ``Store.panel``/``Store.judges`` and the
``compassess panel|judges`` commands on a tiny real store with human labels.

The judges here are SIMULATED: stored comparisons synthesised from known true scores with a known
noise and positional bias per judge (the tests are about combining judges, not about a model)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from compassess_core import panel
from compassess_core.errors import InputError
from compassess_core.solvers import solve_differences
from compassess_core.types import ComparisonTable

REPO = Path(__file__).resolve().parents[1]

#: Simulated judges: (name, noise sd on the log-odds, positional bias in log-odds).
SIMULATED = (("simulated-sharp", 0.5, 1.0), ("simulated-middling", 1.5, -0.5),
             ("simulated-noisy", 3.0, 0.3))


def simulated_problem(n_contexts: int = 30, n_candidates: int = 6, seed: int = 0):
    """True scores and every ordered pair of each context, as arrays."""
    rng = np.random.default_rng(seed)
    true = rng.normal(size=(n_contexts, n_candidates))
    c, i, j = np.meshgrid(np.arange(n_contexts), np.arange(n_candidates),
                          np.arange(n_candidates), indexing="ij")
    keep = i != j
    c, i, j = c[keep], i[keep], j[keep]
    ids = np.array([f"k{k}" for k in range(n_candidates)], dtype=object)
    ctx = np.array([f"c{k}" for k in range(n_contexts)], dtype=object)
    return dict(rng=rng, true=true, ctx=ctx[c], a=ids[i], b=ids[j],
                diff=true[c, i] - true[c, j])


def simulated_table(problem, noise: float, bias: float) -> ComparisonTable:
    """A SIMULATED judge: logit p = 2 (s_a - s_b) + bias + N(0, noise^2)."""
    z = 2.0 * problem["diff"] + bias + problem["rng"].normal(size=len(problem["diff"])) * noise
    p = 1.0 / (1.0 + np.exp(-z))
    nan = np.full(len(p), np.nan)
    return ComparisonTable(problem["ctx"], problem["a"], problem["b"], p, nan, nan, nan)


def truth_labels(keys: pd.DataFrame, problem) -> pd.DataFrame:
    """One person's label per unordered pair: the candidate with the higher true score."""
    lookup = {(c, a, b): d for c, a, b, d in zip(problem["ctx"], problem["a"], problem["b"],
                                                   problem["diff"])}
    d = np.array([lookup[k] for k in keys.itertuples(index=False, name=None)])
    frame = pd.DataFrame({"context_id": keys["context_id"], "left_id": keys["a_id"],
                          "right_id": keys["b_id"],
                          "winner_id": np.where(d > 0, keys["a_id"], keys["b_id"]),
                          "annotator": "person", "seconds": np.nan})
    return frame.loc[(keys["a_id"] < keys["b_id"]).to_numpy()].reset_index(drop=True), d


def accuracy(p, d) -> float:
    ok = np.isfinite(p)
    return float(((p[ok] > 0.5) == (d[ok] > 0)).mean())


# ------------------------------------------------------------------------------------ engine

def test_learnt_weights_favour_the_better_judge():
    problem = simulated_problem()
    tables = [simulated_table(problem, noise, bias) for _, noise, bias in SIMULATED]
    keys, z = panel.aligned_log_odds(tables, [panel.balanced_scaling(t.p) for t in tables])
    human, _ = truth_labels(keys, problem)
    rows = panel.labelled_rows(keys, human)
    w = panel.fit_weights(z[rows["row"]], rows["y"])
    assert w.sum() == pytest.approx(1.0)
    assert w[0] > w[1] > w[2]
    assert w[0] > 0.6
    # held out: the learnt panel is as good as the best judge; equal weights are dragged down
    # each member's raw log-odds on the aligned pairs
    aligned = [z[:, m] + panel.balanced_scaling(t.p).offset for m, t in enumerate(tables)]
    learnt = panel.cross_validated_panel(aligned, [t.p for t in tables], keys, human)
    equal = panel.cross_validated_panel(aligned, [t.p for t in tables], keys, human,
                                        learn_weights=False)
    acc = lambda h: float(((h.p > 0.5) == (h.y == 1)).mean())  # noqa: E731
    assert acc(learnt) > acc(equal)
    assert all(fw[0] > fw[2] for fw in learnt.fold_weights)


def test_equal_panel_of_independent_judges_beats_each_member():
    problem = simulated_problem(seed=1)
    tables = [simulated_table(problem, 1.5, bias) for bias in (1.0, -0.5, 0.3)]
    keys, z = panel.aligned_log_odds(tables, [panel.balanced_scaling(t.p) for t in tables])
    _, d = truth_labels(keys, problem)
    members = [accuracy(1 / (1 + np.exp(-z[:, m])), d) for m in range(3)]
    for method in panel.COMBINERS:
        assert accuracy(panel.combine(z, [1, 1, 1], method), d) > max(members), method


def test_each_member_is_debiased_at_its_own_tau_star():
    problem = simulated_problem(n_contexts=10, seed=2)
    t = simulated_table(problem, 0.5, 2.0)  # strongly favours position A
    assert (t.p > 0.5).mean() > 0.7
    s = panel.balanced_scaling(t.p)
    z = s.apply(t.p)
    assert (z > 0).mean() == pytest.approx(0.5, abs=0.01)
    assert "balanced tau*" in s.how


def test_poe_is_the_gaussian_product_of_experts_and_uses_only_who_judged():
    z = np.array([[1.0, 3.0, np.nan], [np.nan, np.nan, -2.0], [np.nan, np.nan, np.nan]])
    w = np.array([1.0, 3.0, 2.0])
    delta = panel.poe_log_odds(z, w / w.sum())
    assert delta[0] == pytest.approx((1 * 1 + 3 * 3) / 4)
    assert delta[1] == pytest.approx(-2.0) and np.isnan(delta[2])
    # the same as solvers.solve_differences on one difference with an expert per member
    mean, _ = solve_differences(2, np.array([0, 0]), np.array([1, 1]), np.array([1.0, 3.0]),
                                np.array([1.0, 3.0]))
    assert mean[0] - mean[1] == pytest.approx(delta[0])
    vote = panel.combine(np.array([[1.0, -1.0, 2.0], [1.0, -3.0, np.nan]]), [1, 1, 1], "vote")
    assert vote[0] == pytest.approx(2 / 3)
    assert 0.5 < vote[1] < 0.5 + 1e-5 or 0.5 - 1e-5 < vote[1] < 0.5  # a tie, nudged by the PoE
    assert vote[1] < 0.5  # mean log-odds -1: towards B


def test_weights_and_names_are_checked():
    assert panel.parse_weights("equal", 3) == "equal"
    assert panel.parse_weights(" Learnt", 2) == "learnt"
    assert panel.parse_weights("1,2,1", 3) == [1.0, 2.0, 1.0]
    for bad in ("1,2", "1,-1,1", "a,b,c", "0,0,0", "nan,1,1"):
        with pytest.raises(InputError):
            panel.parse_weights(bad, 3)
    with pytest.raises(InputError, match="at least 2"):
        panel.member_names(["a"])
    with pytest.raises(InputError, match="'a' is given twice"):
        panel.member_names(["a", "b", "a"])
    with pytest.raises(InputError, match="unknown combination"):
        panel.combine(np.zeros((1, 2)), [1, 1], "median")


def test_fleiss_kappa_matches_the_worked_example():
    # Fleiss (1971) as worked on Wikipedia's "Fleiss' kappa" page: 10 items, 14 raters, 5 classes
    counts = np.array([[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0],
                       [2, 2, 8, 1, 1], [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2],
                       [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]])
    assert panel.fleiss_kappa(counts) == pytest.approx(0.210, abs=5e-4)
    assert np.isnan(panel.fleiss_kappa(np.array([[3, 0], [3, 0]])))
    with pytest.raises(InputError, match="same number of raters"):
        panel.fleiss_kappa(np.array([[2, 0], [1, 0]]))


def test_member_agreement_kappas_and_split_pairs():
    keys = pd.DataFrame({"context_id": ["d"] * 4, "a_id": ["p", "p", "q", "r"],
                         "b_id": ["q", "r", "r", "p"]})
    # three members, pair-level: (p,q): +,+,-   (p,r): +,-,-(from r,p order)   (q,r): +,+,+
    z = np.array([[1.0, 2.0, -1.0], [1.0, np.nan, np.nan], [0.5, 0.5, 2.0],
                  [np.nan, 1.0, 1.0]])
    pairs, lo = panel.pair_verdicts(keys, z)
    assert list(pairs["x"] + pairs["y"]) == ["pq", "pr", "qr"]
    assert lo[1, 0] == pytest.approx(1.0) and lo[1, 1] == pytest.approx(-1.0)
    names = ["m1", "m2", "m3"]
    panel_lo = panel.poe_log_odds(lo, np.full(3, 1 / 3))
    agree = panel.member_agreement(names, lo, panel_lo)
    labels = (lo <= 0).astype(int)
    row = agree.pairwise.iloc[0]
    assert row["n_pairs"] == 3 and row["agreement"] == pytest.approx(2 / 3)
    assert row["kappa"] == pytest.approx(cohen_kappa_score(labels[:, 0], labels[:, 1]))
    import krippendorff
    assert agree.krippendorff_alpha == pytest.approx(krippendorff.alpha(
        reliability_data=labels.T.astype(float), level_of_measurement="nominal"))
    assert agree.n_pairs_all == 3
    split = panel.split_pairs(pairs, names, lo, panel_lo)
    assert len(split) == 2 and set(split["x"] + split["y"]) == {"pq", "pr"}
    assert split.loc[0, "minority"] == pytest.approx(1 / 3)
    assert set(agree.with_panel["member"]) == set(names)
    json.dumps(agree.to_dict())


def test_human_agreement_interval_brackets_the_estimate():
    problem = simulated_problem(n_contexts=10, seed=3)
    t = simulated_table(problem, 1.0, 0.0)
    keys, _ = panel.aligned_log_odds([t], [panel.balanced_scaling(t.p)])
    human, _ = truth_labels(keys, problem)
    a = panel.human_agreement_interval(human, t, 0.5, n_boot=300)
    assert a.accuracy_low <= a.accuracy <= a.accuracy_high
    assert a.kappa_low <= a.kappa <= a.kappa_high
    assert a.n_pairs == 150 and 0.6 < a.accuracy < 1.0

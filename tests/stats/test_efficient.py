"""PoE and adaptive pair selection (compassess_core.stats.efficient) and their run-loop integration."""

from __future__ import annotations

import numpy as np
import pytest

from compassess_core.stats.efficient import (adaptive_next_pairs, adaptive_pairs_from_matrix,
                                             poe_pairs, posterior)
from compassess_core.errors import InputError, RunCancelled
from compassess_core.runs.selection import STRATEGIES, max_budget, select_pairs
from compassess_core.runs.sink import MemorySink
from compassess_core.runs.executor import execute_with
from tests.fakes import FakeLengthJudge


def _valid(pairs: np.ndarray, n: int) -> None:
    assert pairs.dtype == np.int64 and pairs.shape[1] == 2
    assert (pairs[:, 0] != pairs[:, 1]).all() and pairs.min() >= 0 and pairs.max() < n
    assert len({tuple(r) for r in pairs.tolist()}) == len(pairs)  # no ordered pair twice


def test_posterior_hand_worked_two_candidates():
    # one comparison 0 vs 1 with p = 0.9, noise 0.05, prior 1: precision [[21, -20], [-20, 21]]
    mu, cov = posterior(2, np.array([0]), np.array([1]), np.array([0.9]))
    prec = np.array([[21.0, -20.0], [-20.0, 21.0]])
    np.testing.assert_allclose(cov, np.linalg.inv(prec))
    np.testing.assert_allclose(mu, np.linalg.inv(prec) @ np.array([0.4, -0.4]) / 0.05)
    assert mu[0] > 0 > mu[1]


def test_poe_first_picks_form_a_spanning_cycle_before_any_repeat():
    # With no comparisons all pair variances are equal; after that the greedy variance criterion
    # never compares two candidates already linked while some candidate is still uncompared.
    pairs = poe_pairs(6, 6, seed=3)
    _valid(pairs, 6)
    assert set(pairs.ravel().tolist()) == set(range(6))
    deg = np.bincount(pairs.ravel(), minlength=6)
    assert (deg == 2).all()                                 # every candidate in exactly 2 pairs


def test_poe_balances_positions_uses_both_orders_and_is_deterministic():
    n = 8
    full = poe_pairs(n, n * (n - 1), seed=0)
    _valid(full, n)
    assert len(full) == n * (n - 1)                          # every ordered pair once
    half = poe_pairs(n, 28, seed=1)
    assert len({(min(a, b), max(a, b)) for a, b in half.tolist()}) == 28  # unordered first
    firsts = np.bincount(half[:, 0], minlength=n)
    assert firsts.max() - firsts.min() <= 1                  # positional balance
    np.testing.assert_array_equal(poe_pairs(n, 20, seed=5), poe_pairs(n, 20, seed=5))
    with pytest.raises(InputError, match="outside 0..56"):
        poe_pairs(n, 57)


def test_strategies_registered_and_select_pairs_dispatch():
    assert {"poe", "adaptive"} <= set(STRATEGIES)
    assert max_budget(5, "poe") == 20 and max_budget(5, "adaptive") == 20
    np.testing.assert_array_equal(select_pairs(5, "poe", 6, seed=2), poe_pairs(5, 6, seed=2))
    with pytest.raises(InputError, match="cannot be planned up front"):
        select_pairs(5, "adaptive", 6)


def test_adaptive_depends_on_outcomes_not_on_storage_order():
    n = 6
    i = np.array([0, 1, 2, 3, 4, 5])
    j = np.array([1, 2, 3, 4, 5, 0])
    p1 = np.array([0.9, 0.9, 0.9, 0.9, 0.9, 0.1])   # a clear chain 0 > 1 > ... > 5
    p2 = np.array([0.5, 0.5, 0.5, 0.5, 0.5, 0.5])   # all ties
    a = adaptive_next_pairs(n, i, j, p1, 3, seed=0)
    b = adaptive_next_pairs(n, i[::-1], j[::-1], p1[::-1], 3, seed=0)
    np.testing.assert_array_equal(a, b)
    _valid(np.concatenate([np.column_stack([i, j]), a]), n)
    assert not np.array_equal(a, adaptive_next_pairs(n, i, j, p2, 3, seed=0))


def test_adaptive_simulation_finds_the_order_of_a_clean_judge():
    rng = np.random.default_rng(0)
    s = rng.normal(size=10)
    m = 1.0 / (1.0 + np.exp(-4.0 * (s[:, None] - s[None, :])))
    chosen = adaptive_pairs_from_matrix(m, 30, seed=0, batch=5)
    _valid(chosen, 10)
    mu, _ = posterior(10, chosen[:, 0], chosen[:, 1], m[chosen[:, 0], chosen[:, 1]])
    from scipy.stats import spearmanr
    assert spearmanr(mu, s).statistic > 0.9


# ------------------------------------------------------------------ the run loop

def score_judge(**kw) -> FakeLengthJudge:
    """FAKE judge for selection tests: p grows with the first summary's length over the second's."""
    def p_of(pr):
        a = pr.text.split("Summary A: ")[1].split("\n")[0]
        b = pr.text.split("Summary B: ")[1].split("\n")[0]
        return float(1.0 / (1.0 + np.exp(-(len(a) - len(b)) / 5.0)))
    return FakeLengthJudge(p_of=p_of, **kw)


def _settings(strategy: str, budget: int):
    from compassess_core.runs.prompts import Aspect, builtin_template
    from compassess_core.runs.settings import RunSettings
    t = builtin_template("t1")
    a = Aspect.from_name("coherence")
    return RunSettings(dataset="tiny", aspect=a.name, aspect_adjective=a.adjective,
                       template_name=t.name, template_text=t.text, primer=t.primer, model="fake",
                       strategy=strategy, budget=budget, seed=4)


def test_adaptive_run_is_resumable_and_matches_an_uninterrupted_run(store, tiny_dataset):
    settings = _settings("adaptive", 4)
    ref_sink = MemorySink()
    execute_with(ref_sink, tiny_dataset, settings, score_judge(), 1)
    ref = set(ref_sink.stored_results(1, "comparative"))
    assert len(ref) == 8                                    # 4 per context

    ds = store.save_dataset(tiny_dataset)
    rid = store.create_run("adaptive", ds, settings.to_dict())
    first = score_judge(on_batch=lambda k: store.request_cancel(rid) if k == 0 else None)
    with pytest.raises(RunCancelled):
        execute_with(store, tiny_dataset, settings, first, rid, dataset_id=ds)
    assert 0 < len(store.stored_results(rid, "comparative")) < 8
    judge = score_judge()
    summary = execute_with(store, tiny_dataset, settings, judge, rid, dataset_id=ds)
    assert summary.total == 8 and set(store.stored_results(rid, "comparative")) == ref
    assert len(judge.seen) == 8 - summary.already_stored    # nothing recomputed
    again = score_judge()
    assert execute_with(store, tiny_dataset, settings, again, rid, dataset_id=ds).already_stored == 8
    assert again.seen == []


def test_poe_run_plans_poe_pairs(tiny_dataset):
    sink = MemorySink()
    s = execute_with(sink, tiny_dataset, _settings("poe", 3), score_judge(), 7)
    assert s.total == 6
    per_ctx = {}
    for k in sink.stored_results(7, "comparative"):
        per_ctx.setdefault(k.context_id, set()).update({k.a_id, k.b_id})
    assert all(v == {"c1", "c2", "c3"} for v in per_ctx.values())  # 3 pairs cover all 3 candidates

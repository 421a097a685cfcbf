"""AppTest tests of the Compare runs page on a real SQLite store: two hand-made runs of the bundled
sample (``test_app_pages.seed_run``), the second with some verdicts reversed."""

from __future__ import annotations

import numpy as np
import pytest

from compassess_core.stats.compare import compare_runs
from compassess_core.types import ComparisonResult, Judgement, PairKey
from db.store import Store
from tests.app.test_app_pages import app_env, metric, open_page, seed_run, texts  # noqa: F401

#: Pairs of the first article that the second run judges the other way round (p -> 1 - p).
REVERSED = 4


def seed_two_runs(url: str):
    store, dataset_id, run_a = seed_run(url, run="judge-a")
    dataset = store.load_dataset(dataset_id)
    table = store.comparison_table(run_a)
    run_b = store.create_run("judge-b", dataset_id, store.get_run(run_a).settings)
    results = []
    for k, (c, a, b, p) in enumerate(zip(table.context_ids, table.a_ids, table.b_ids, table.p)):
        p = 1.0 - p if k < REVERSED else p
        results.append(ComparisonResult(PairKey(c, a, b), Judgement(float(p), np.log(0.5 * p),
                                                                    np.log(0.5 * (1 - p)), 0.5),
                                        f"b-{c}-{a}-{b}"))
    store.add_results(run_b, "comparative", results)
    store.set_run_status(run_b, "completed", done=len(results), total=len(results))
    return store, dataset, run_a, run_b


def test_numbers_equal_the_engine_and_disagreements_open_both_runs(app_env):
    store, dataset, run_a, run_b = seed_two_runs(app_env)
    at = open_page("compare")
    at.selectbox(key="run_pick_w").set_value(run_a).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="run_b_pick_w").value == run_b
    ta, tb = store.comparison_table(run_a), store.comparison_table(run_b)
    tau_a, tau_b = float(np.median(ta.p)), float(np.median(tb.p))
    engine = compare_runs(dataset, ta, dataset, tb, tau_a=tau_a, tau_b=tau_b)
    assert metric(at, "Verdict agreement") == f"{engine.agreement:.1%}"
    assert metric(at, "Cohen's kappa") == f"{engine.kappa:.3f}"
    assert metric(at, "Pairs with different verdicts") == f"{len(engine.disagreements):,}"
    assert metric(at, "Rank Spearman x100 per context") == f"{engine.rank_spearman_x100:.1f}"
    assert 0 < len(engine.disagreements) < 60
    assert "compare_scatter" in [c.key for c in at.get("plotly_chart")]
    # the paired test of P(A) on the same pairs, as the engine computes it
    table = next(d.value for d in at.dataframe if "McNemar exact p" in d.value.columns)
    pos = engine.paired_position
    row = table.iloc[0]
    assert row["A - B (percentage points)"] == pytest.approx(100 * pos.difference)
    assert (row["95% low"], row["95% high"]) == pytest.approx((100 * pos.low, 100 * pos.high))
    assert row["McNemar exact p"] == pytest.approx(pos.mcnemar.p_value)
    assert (row["contexts"], row["pairs"]) == (pos.n_contexts, pos.n_pairs)
    assert any("McNemar's exact p" in c.value for c in at.caption)
    dis = next(d.value for d in at.dataframe if "winner_b" in d.value.columns)
    assert len(dis) == len(engine.disagreements)
    at.selectbox(key="compare_pick").set_value(0).run()
    assert not at.exception, at.exception
    first, second = dis.iloc[0]["first"], dis.iloc[0]["second"]
    # the comparison view of each run: p in both orders, once per run
    shown = [m.label for m in at.metric if m.label.startswith(f"p(`{first}` first beats `{second}`)")]
    assert len(shown) == 2
    assert len(at.tabs) == 2


def test_a_lone_run_asks_for_a_second_one(app_env):
    seed_run(app_env)
    at = open_page("compare")
    assert "is the only pairwise run on dataset" in texts(at.info)


@pytest.mark.parametrize("mode", ["off", "balanced"])
def test_the_threshold_mode_applies_to_each_run(app_env, mode):
    seed_two_runs(app_env)
    at = open_page("compare")
    at.radio(key="tau_mode_w").set_value(mode).run()
    caption = texts(at.caption)
    if mode == "off":
        assert "at tau = 0.500; B = run" in caption
    else:
        assert "balanced = each run's own tau*" in caption


def test_b_runs_partial_state_and_judge_are_reported(app_env):
    _, _, run_a, run_b = seed_two_runs(app_env)
    Store(app_env).set_run_status(run_b, "cancelled", done=60, total=80)
    at = open_page("compare")
    at.selectbox(key="run_pick_w").set_value(run_a).run()
    assert "Run `judge-b`: Partial run (cancelled)" in texts(at.warning)


def test_scatter_axes_span_the_data_and_a_running_run_b_is_said(app_env):
    import json
    _, _, run_a, run_b = seed_two_runs(app_env)
    Store(app_env).set_run_status(run_b, "running", done=60, total=80)   # a live worker's beat
    at = open_page("compare")
    at.selectbox(key="run_pick_w").set_value(run_a).run()
    assert not at.exception, at.exception
    assert "Run `judge-b` is still running (60/80 comparisons stored)" in texts(at.info)
    spec = json.loads(next(c for c in at.get("plotly_chart")
                           if "compare_scatter" in (c.proto.id or "")).proto.spec)
    # run A's p are 0.55 and 0.9, run B's also 0.1 and 0.45: each axis ends just beyond its
    # run's values (and its tau), not at 0 and 1
    low, high = spec["layout"]["xaxis"]["range"]
    assert 0.5 <= low < 0.55 and 0.9 < high < 1.0, (low, high)
    low, high = spec["layout"]["yaxis"]["range"]
    assert 0.0 < low < 0.1 and 0.9 < high < 1.0, (low, high)

"""The Run page before Start: the planned number of comparisons (from the engine's plan) and an
estimate of the time from the judge's measured speed, Start and the run status near the top, and
the live preview collapsed so a long context cannot push them out of sight. AppTest on a real
store; earlier runs' speeds are recorded rates, as a worker stores them."""

from __future__ import annotations

import pytest

from compassess_core.comparative import ComparativeKind
from compassess_core.data import load_candidates
from db.store import Store
from test_app_pages import SAMPLE, app_env, open_page, seed_run, settings_for, texts  # noqa: F401


def flat(node, out=None) -> list:
    """Every element of the page in document order."""
    out = [] if out is None else out
    for child in getattr(node, "children", {}).values():
        out.append(child)
        flat(child, out)
    return out


def position(elements, kind: str, label: str) -> int:
    return next(k for k, e in enumerate(elements)
                if type(e).__name__ == kind and (getattr(e, "label", None) or "").startswith(label))


def test_start_and_status_come_before_the_settings_and_the_preview_is_collapsed(app_env):
    seed_run(app_env)
    at = open_page("run")
    elements = flat(at.main)
    start = position(elements, "Button", "Start")
    assert start < position(elements, "Selectbox", "Aspect")
    assert position(elements, "Subheader", "") < position(elements, "Selectbox", "Aspect")
    assert any(type(e).__name__ == "Markdown" and "Status: completed" in e.value
               for e in elements[:position(elements, "Selectbox", "Aspect")])
    preview = next(e for e in at.expander if e.label.startswith("Live preview"))
    assert preview.proto.expanded is False


def test_the_plan_counts_the_engines_pairs(app_env):
    seed_run(app_env)
    at = open_page("run")
    # full matrix on 3 contexts of 5 summaries: 3 x 20 ordered pairs
    assert "Plan: 60 comparisons** on 3 context(s)" in texts(at.info)
    assert "no run of this model has measured its speed on this machine yet" in texts(at.info)
    at.selectbox(key="strategy_1").set_value("symmetric").run()
    at.number_input(key="budget_1").set_value(6).run()
    at.number_input(key="n_contexts_1").set_value(2).run()
    store = Store(app_env)
    dataset = load_candidates(SAMPLE, name="sample_summeval")
    planned = ComparativeKind().planned_total(
        dataset, settings_for("sample_summeval", strategy="symmetric", budget=6, contexts=2))
    assert planned == 12
    assert "Plan: 12 comparisons** on 2 context(s)" in texts(at.info)
    assert store.list_runs()  # nothing was started by looking
    # settings the engine cannot plan are refused before Start, with the engine's reason
    at.number_input(key="budget_1").set_value(5).run()
    assert "symmetric' needs an even budget" in texts(at.error)
    assert [b for b in at.button if b.label == "Start"][0].disabled


def test_the_estimate_uses_the_measured_token_rate_of_the_model(app_env):
    store, _, run_id = seed_run(app_env)
    store.set_run_status(run_id, "completed", done=60, total=60, rate=2.0, judge_s=30.0,
                         token_rate=250.0)
    store.record_plan(run_id, {"work_chars": 4000, "work_tokens": 1000})
    at = open_page("run")
    info = texts(at.info)
    # the prompts' tokens (their characters at the measured 4.0 per token) at 250 tokens/s
    assert "at 250 prompt tokens/s and 4.0 characters per token, the median of 1 earlier run(s)" in info
    at.radio(key="run_mode_1").set_value("prompt scoring (baseline)").run()
    assert "Plan: 15 candidates scored" in texts(at.info)
    assert "250 prompt tokens/s" in texts(at.info)      # a prompt token costs the same in any kind


@pytest.mark.parametrize("settings", [
    dict(), dict(strategy="random", budget=7), dict(strategy="symmetric", budget=6),
    dict(strategy="no-repeat", budget=100), dict(strategy="poe", budget=6),
    dict(strategy="adaptive", budget=6), dict(contexts=2)])
def test_the_planned_total_is_what_the_run_then_plans(settings):
    """The number the page shows before Start equals the total of the run the worker executes
    (here with the FAKE judge of tests/fakes.py, which is not what this test is about)."""
    from compassess_core.run_kinds import kind_of
    from compassess_core.sink import MemorySink
    from compassess_core.worker import execute_with
    from fakes import FakeLengthJudge
    from test_run_loop import comparative, make_dataset

    dataset, run_settings = make_dataset(3, 5), comparative(**settings)
    planned = kind_of(run_settings).planned_total(dataset, run_settings)
    summary = execute_with(MemorySink(), dataset, run_settings, FakeLengthJudge(), run_id=1)
    assert summary.total == planned


def test_the_planned_total_of_scoring_and_absolute_runs():
    from compassess_core.absolute import absolute_settings, planned_keys
    from compassess_core.prompts import Aspect
    from compassess_core.run_kinds import kind_of
    from test_run_loop import make_dataset, scoring

    dataset = make_dataset(3, 4)
    assert kind_of(scoring()).planned_total(dataset, scoring()) == 12
    settings = absolute_settings("toy", Aspect.from_name("coherence"), model="fake", n_levels=3)
    assert kind_of(settings).planned_total(dataset, settings) == len(planned_keys(dataset, settings)) \
        == 12 * 3 * 2   # every candidate against 3 references, in both orders


def test_a_selection_that_leaves_candidates_unjudged_is_warned_of_at_planning(app_env):
    # random selection may leave candidates out even at a budget of a few per candidate: the
    # plan says how many before Start, with the engine's words (the CLI prints the same)
    seed_run(app_env)
    at = open_page("run")
    at.selectbox(key="strategy_1").set_value("random").run()
    at.number_input(key="budget_1").set_value(4).run()
    dataset = load_candidates(SAMPLE, name="sample_summeval")
    advice = ComparativeKind().advice(dataset, settings_for("sample_summeval", strategy="random",
                                                             budget=4))
    unjudged = [line for line in advice if "unjudged" in line]
    assert unjudged, advice
    assert unjudged[0] in texts(at.warning)

"""The Run page before Start: the planned number of comparisons (from the engine's plan) and an
estimate of the time from the judge's measured speed, Start and the run status near the top, and
the live preview collapsed so a long context cannot push them out of sight. AppTest on a real
store; earlier runs' speeds are recorded rates, as a worker stores them."""

from __future__ import annotations

import pytest

from compassess_core.runs.comparative import ComparativeKind
from compassess_core.data.candidates import load_candidates
from db.store import Store
from tests.app.test_app_pages import SAMPLE, app_env, open_page, seed_run, settings_for, texts  # noqa: F401


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
    assert "`symmetric` needs an even budget" in texts(at.error)   # prose, the name inert
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
    from compassess_core.runs.run_kinds import kind_of
    from compassess_core.runs.sink import MemorySink
    from compassess_core.runs.executor import execute_with
    from tests.fakes import FakeLengthJudge
    from tests.runs.test_run_loop import comparative, make_dataset

    dataset, run_settings = make_dataset(3, 5), comparative(**settings)
    planned = kind_of(run_settings).planned_total(dataset, run_settings)
    summary = execute_with(MemorySink(), dataset, run_settings, FakeLengthJudge(), run_id=1)
    assert summary.total == planned


def test_the_planned_total_of_scoring_and_absolute_runs():
    from compassess_core.runs.absolute import absolute_settings, planned_keys
    from compassess_core.runs.prompts import Aspect
    from compassess_core.runs.run_kinds import kind_of
    from tests.runs.test_run_loop import make_dataset, scoring

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
    from pages._plain import plain_message
    assert plain_message(unjudged[0]) in texts(at.warning)   # the engine's words, as prose


def test_the_plan_of_a_partly_stored_run_states_what_is_left_and_a_running_run_is_no_speed(app_env):
    """Start with the plan's name resumes a run that stores 20 of its 60 comparisons: the plan
    says so and times the 40 left; a run still judging is no earlier run to take a speed from."""
    from compassess_core import api
    from compassess_core.judges.models import BUNDLED_MODEL
    from compassess_core.runs.options import ComparativeOptions, ModelOptions
    store, dataset_id, run_id = seed_run(app_env)
    handle = api.open_store(app_env)
    plan = handle.plan_run(dataset_id, ComparativeOptions(aspect="coherence"),
                           ModelOptions(model=BUNDLED_MODEL))
    partial = handle.create_run(dataset_id, plan.settings)
    results = list(store.stored_results(run_id, "comparative").values())[:20]
    store.add_results(partial.id, "comparative", results)
    store.set_run_status(partial.id, "cancelled", done=20, total=60)
    # the hand-made run "is running" with a rate of its own: not a finished run's speed
    store.set_run_status(run_id, "running", done=30, total=60, rate=2.0, judge_s=10.0,
                         token_rate=999.0)
    store.record_plan(run_id, {"work_chars": 4000, "work_tokens": 1000})
    at = open_page("run")
    info = texts(at.info)
    assert f"run `{plan.default_name}` stores 20 of them already, so Start resumes it" in info
    assert "999 prompt tokens/s" not in info and "no run of this model has measured" in info
    full = handle.plan_run(dataset_id, ComparativeOptions(aspect="coherence"),
                           ModelOptions(model=BUNDLED_MODEL))
    assert full.stored == 20
    assert full.estimate_left.tokens == pytest.approx(full.estimate.tokens * 40 / 60)


def test_a_finished_runs_line_says_which_session_its_time_is_and_no_button_lingers(app_env):
    store, _, run_id = seed_run(app_env)
    store.set_run_status(run_id, "completed", done=60, total=60, rate=2.0, judge_s=10.0)
    at = open_page("run")
    line = " ".join(p.proto.text for p in at.get("progress"))
    assert "its last session judged 20 of them at 2.00 comparisons/s in 10 s" in line, line
    assert not [b for b in at.button if b.label in ("Cancel", "Resume")]
    links = [str(link.proto.label) for link in at.get("page_link")]
    assert "See rankings" in links
    latest = next(d for d in at.dataframe if "latency_ms" in d.value.columns)
    import json
    assert json.loads(latest.proto.columns)["latency_ms"]["type_config"]["format"] == "%.0f"
    store.set_run_status(run_id, "completed", done=60, total=60, rate=2.0, judge_s=30.0)
    at = open_page("run")
    line = " ".join(p.proto.text for p in at.get("progress"))
    assert "2.00 comparisons/s over 30 s of judging (loading the judge not included)" in line


def test_the_plan_of_a_complete_run_says_it_is_complete_and_plans_nothing(app_env):
    """Start with the plan's name would resume a run that stores all 60 comparisons: the page
    says it is complete, with no time and no tokens planned."""
    from compassess_core import api
    from compassess_core.judges.models import BUNDLED_MODEL
    from compassess_core.runs.options import ComparativeOptions, ModelOptions
    store, dataset_id, run_id = seed_run(app_env)
    handle = api.open_store(app_env)
    plan = handle.plan_run(dataset_id, ComparativeOptions(aspect="coherence"),
                           ModelOptions(model=BUNDLED_MODEL))
    complete = handle.create_run(dataset_id, plan.settings)
    store.add_results(complete.id, "comparative",
                      list(store.stored_results(run_id, "comparative").values()))
    store.set_run_status(complete.id, "completed", done=60, total=60)
    at = open_page("run")
    shown = texts(at.success)
    assert f"Complete: run `{plan.default_name}` already stores all 60 comparisons" in shown
    assert "Nothing is left to judge" in shown
    assert "Plan:" not in texts(at.info) and "tokens" not in texts(at.info)
    assert "for 0" not in shown + texts(at.info)

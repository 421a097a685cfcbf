"""The Run page's live view: each phase of the worker with its elapsed time, no stale rate while a
resumed run's judge loads, several aspects started as one pass (one worker) and watched, cancelled
and resumed together. AppTest on a real store; the worker's statuses are written as a worker
writes them, and starting a worker is replaced by a recorder (no model here)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest

from compassess_core import api
from compassess_core.runs import run_loop
from compassess_core.api.progress import RunProgress, phase_seconds
from tests.app.test_app_pages import app_env, open_page, seed_run, settings_for  # noqa: F401


def bars(at) -> str:
    return "\n".join(str(p.proto.text) for p in at.get("progress"))


def test_each_phase_shows_with_its_elapsed_time_and_no_stale_rate_while_loading(app_env):
    store, _, run_id = seed_run(app_env)
    # the previous session's rate stays stored while a resumed run's judge loads
    store.set_run_status(run_id, "running", done=20, total=60, rate=9.0, message="loading the judge",
                         phase=run_loop.LOADING_PHASE)
    shown = bars(open_page("run"))
    assert re.search(r"20/60 comparisons \(33%\) · loading the judge · \d+ s", shown), shown
    assert "ETA" not in shown and "9.00" not in shown
    store.set_run_status(run_id, "running", message="planning the run", phase=run_loop.PLANNING_PHASE)
    assert re.search(r"20/60 comparisons \(33%\) · planning the run · \d+ s", bars(open_page("run")))
    # judging: the rate the loop writes (the plan's estimate first), and the ETA from it
    store.set_run_status(run_id, "running", done=20, total=60, rate=2.0,
                         message=run_loop.JUDGING_MESSAGE, phase=run_loop.JUDGING_PHASE)
    assert "20/60 comparisons (33%) · 2.00 comparisons/s · ETA 20 s" in bars(open_page("run"))


def test_the_phase_line_counts_from_when_the_phase_began():
    class Info:
        phase, message = run_loop.LOADING_PHASE, "loading the judge"
        phase_at = datetime(2026, 1, 1, 12, 0, 0)            # naive: UTC, as SQLite gives it
    now = datetime(2026, 1, 1, 12, 0, 7, tzinfo=timezone.utc)
    assert _progress("working", 0, 0, phase_s=phase_seconds(Info(), now)).doing == \
        "loading the judge · 7 s"
    Info.phase_at += timedelta(seconds=5)
    assert _progress("working", 0, 0, phase_s=phase_seconds(Info(), now)).doing == \
        "loading the judge · 2 s"


def _progress(state: str, done: int, total: int, **more) -> RunProgress:
    fields = dict(state=state, state_text=state, done=done, total=total, unit="comparisons",
                  rate_unit="comparisons/s", rate=None, eta_s=None, judge_s=None,
                  phase=run_loop.LOADING_PHASE, message=None)
    return RunProgress(**{**fields, **more})


def test_several_aspects_start_one_worker_and_are_watched_cancelled_and_resumed_together(
        app_env, monkeypatch):
    seed_run(app_env)
    started: list[list[str]] = []
    monkeypatch.setattr(api.Job, "start", lambda job, *a, **k: started.append(
        [job.store.get_run(i).name for i in job.ids]))
    at = open_page("run")
    more = next(m for m in at.multiselect if m.label == "Also judge in the same pass")
    more.set_value(["fluency", "relevance"]).run()
    assert "for 3 aspects (`coherence, fluency, relevance`), one run each, judged in one " \
           "pass" in "\n".join(str(i.value) for i in at.info)
    name = next(t for t in at.text_input if t.label == "Run name")
    name.set_value("pass").run()
    next(b for b in at.button if b.label == "Start").click().run()
    assert not at.exception, at.exception
    assert started == [["pass-coherence", "pass-fluency", "pass-relevance"]]
    # the worker judges them together: it records the group and its status in each run
    from db.store import Store
    store = Store(app_env)
    runs = [store.get_run(f"pass-{a}") for a in ("coherence", "fluency", "relevance")]
    for r in runs:
        store.record_plan(r.id, {"run_group": [x.id for x in runs]})
        store.set_run_status(r.id, "running", done=4, total=60, rate=1.0, message="judging",
                             phase=run_loop.JUDGING_PHASE)
    at = open_page("run")
    shown = bars(at)
    for a in ("coherence", "fluency", "relevance"):     # each run of the pass, with its own bar
        # each bar names its run and aspect as inert text (a code span): names are user text
        assert f"`pass-{a} ({a})`: 4/60 comparisons (7%) · 1.00 comparisons/s · ETA 56 s" in shown
    next(b for b in at.button if b.label == "Cancel").click().run()
    assert all(store.get_run(r.id).cancel_requested for r in runs), "one Cancel stops them all"
    for r in runs:
        store.set_run_status(r.id, "cancelled")
    at = open_page("run")
    next(b for b in at.button if b.label == "Resume").click().run()
    assert started[-1] == ["pass-coherence", "pass-fluency", "pass-relevance"]


@pytest.mark.parametrize("state,done,total,expected", [
    ("cancelled", 3, 60, True), ("completed", 60, 60, False), ("working", 3, 60, False),
    ("completed", 3, 60, True)])
def test_what_resume_starts(state, done, total, expected):
    assert _progress(state, done, total).can_resume is expected


def test_compassess_runs_says_what_a_live_worker_does(app_env, capsys):
    from compassess_core.cli import main
    store, _, run_id = seed_run(app_env)
    store.set_run_status(run_id, "running", done=20, total=60, message="loading the judge",
                         phase=run_loop.LOADING_PHASE)
    assert main(["runs", "--db", app_env]) == 0
    assert "running (loading the judge)\t20/60 comparisons" in capsys.readouterr().out
    assert main(["runs", "--json", "--db", app_env]) == 0
    assert '"phase": "loading"' in capsys.readouterr().out


def test_start_waits_while_a_live_worker_judges_the_run_of_that_name(app_env, monkeypatch):
    """The walk found Start enabled while the run it names was being judged (pressing it only
    said so): it is disabled, saying why, until the worker stops."""
    seed_run(app_env)
    started: list[list[int]] = []
    monkeypatch.setattr(api.Job, "start", lambda job, *a, **k: started.append(list(job.ids)))
    at = open_page("run")
    name = next(t for t in at.text_input if t.label == "Run name")
    name.set_value("busy").run()
    start = next(b for b in at.button if b.label == "Start")
    assert not start.disabled
    start.click().run()
    assert len(started) == 1
    from db.store import Store
    store = Store(app_env)
    run_id = store.get_run("busy").id
    store.set_run_status(run_id, "running", done=4, total=60, rate=1.0, message="judging",
                         phase=run_loop.JUDGING_PHASE)
    at = open_page("run")
    next(t for t in at.text_input if t.label == "Run name").set_value("busy").run()
    assert next(b for b in at.button if b.label == "Start").disabled
    assert any("is being judged by a live worker now" in str(c.value) for c in at.caption)
    store.set_run_status(run_id, "cancelled")
    at = open_page("run")
    next(t for t in at.text_input if t.label == "Run name").set_value("busy").run()
    assert not next(b for b in at.button if b.label == "Start").disabled

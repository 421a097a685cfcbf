"""The worker: a stored run executed from its settings, into a real store, resumed, cached; the
judge's identity recorded once; a worker process started like the app starts it.

The in-process tests use the FAKE judge of ``tests/fakes.py``; the worker-process test runs the
real bundled model (marked ``model``).
"""

from __future__ import annotations

import contextlib
import io
import time
from pathlib import Path

import numpy as np
import pytest

from compassess_core.runs import run_loop
from compassess_core.runs.context_window import UNDECLARED_WINDOW_TOKENS
from compassess_core.errors import InputError, RunCancelled
from compassess_core.runs.prompts import Aspect, builtin_template
from compassess_core.runs.settings import RunSettings
from compassess_core.types import Candidate, Context, Dataset
from compassess_core.runs.executor import ConsoleReporter, execute_run
from compassess_core.api.background import start_worker
from compassess_core.worker import worker_threads
from tests.fakes import FakeLengthJudge

ROOT = Path(__file__).resolve().parents[2]


def quiet() -> ConsoleReporter:
    return ConsoleReporter(stream=io.StringIO())


def settings(**kw) -> RunSettings:
    t, a = builtin_template("t1"), Aspect.from_name("coherence")
    return RunSettings(**{**dict(dataset="tiny", aspect=a.name, aspect_adjective=a.adjective,
                                 template_name=t.name, template_text=t.text, primer=t.primer,
                                 model="fake"), **kw})


def test_a_stored_run_streams_into_the_store_resumes_and_is_cached(store, tiny_dataset):
    ds_id = store.save_dataset(tiny_dataset)
    rid = store.create_run("loop", ds_id, settings().to_dict())

    # a cancel requested while the second micro-batch computes: two batches stored (the small
    # first one and one of 2), then it stops
    first = FakeLengthJudge(batch_size=2, on_batch=lambda k: store.request_cancel(rid) if k == 1 else None)
    with pytest.raises(RunCancelled):
        execute_run(store, rid, judge=first, reporter=quiet())
    stopped = store.get_run(rid)
    first_two = run_loop.FIRST_BATCH_PROMPTS + 2
    assert (stopped.status, stopped.n_comparisons, stopped.done) == ("cancelled", first_two, first_two)
    assert stopped.cancel_requested is False and stopped.judge_key == first.model_key
    # the fake judge declares no window: its prompts are held to the bound for such models
    assert stopped.rate and stopped.rate > 0
    assert stopped.plan["context_window"] == UNDECLARED_WINDOW_TOKENS

    # resume: only the missing pairs are judged; all 2 x 3 x 2 ordered pairs end up stored once
    second = FakeLengthJudge()
    summary = execute_run(store, rid, judge=second, reporter=quiet())
    done = store.get_run(rid)
    assert (done.status, done.done, done.total, done.n_comparisons) == ("completed", 12, 12, 12)
    assert (summary.already_stored, summary.computed) == (first_two, 12 - first_two)
    assert len(second.seen) == 12 - first_two

    # a second run with the same judge, label words and prompts is served from the cache
    rid2 = store.create_run("loop-again", ds_id, settings(seed=1).to_dict())
    third = FakeLengthJudge()
    assert execute_run(store, rid2, judge=third, reporter=quiet()).cached == 12 and third.seen == []
    t1, t2 = store.comparison_table(rid), store.comparison_table(rid2)
    order = {k: i for i, k in enumerate(zip(t1.context_ids, t1.a_ids, t1.b_ids))}
    np.testing.assert_array_equal(t2.p, t1.p[[order[k] for k in zip(t2.context_ids, t2.a_ids, t2.b_ids)]])


def test_resuming_with_another_judge_is_refused_and_marks_the_run_failed(store, tiny_dataset):
    rid = store.create_run("r", store.save_dataset(tiny_dataset), settings().to_dict())
    execute_run(store, rid, judge=FakeLengthJudge(), reporter=quiet())
    other = FakeLengthJudge()
    other.model_key = 'another-model|fp32|labels=[" A", " B"]'
    with pytest.raises(InputError, match="the model changed; start a new run"):
        execute_run(store, rid, judge=other, reporter=quiet())
    run = store.get_run(rid)
    assert run.status == "failed" and "the model changed" in run.message
    assert run.judge_key.startswith("fake-length-judge")


def test_a_prompt_too_long_fails_the_run_at_planning_with_nothing_stored(store, tiny_dataset):
    rid = store.create_run("long", store.save_dataset(tiny_dataset), settings().to_dict())
    with pytest.raises(InputError, match="longer than the context window"):
        execute_run(store, rid, judge=FakeLengthJudge(context_window=100), reporter=quiet())
    run = store.get_run(rid)
    assert run.status == "failed" and "context 'doc1'" in run.message and run.n_comparisons == 0


def test_truncation_is_recorded_in_the_run_plan(store):
    long = Dataset("long", (Context("D1", "A long passage about the river. " * 20, (
        Candidate("a", "The river."), Candidate("b", "A passage about a river."))),))
    rid = store.create_run("cut", store.save_dataset(long), settings(truncate_context=True).to_dict())
    execute_run(store, rid, judge=FakeLengthJudge(context_window=500), reporter=quiet())
    run = store.get_run(rid)
    assert run.status == "completed" and run.n_comparisons == 2
    assert 0 < run.plan["truncated_contexts"]["D1"] < len(long.contexts[0].text)
    assert 400 < run.plan["longest_prompt_tokens"] <= 498 and run.plan["context_window"] == 500


@pytest.mark.model
def test_the_app_starts_a_low_priority_worker_without_the_database_url_in_argv(store, tiny_dataset,
                                                                                 tmp_path):
    rid = store.create_run("proc", store.save_dataset(tiny_dataset),
                           settings(model="bundled:SmolLM2-135M-Instruct", strategy="random",
                                    budget=2).to_dict())
    proc = start_worker(rid, store.url, tmp_path / "worker.log")
    try:
        argv: list[str] = []
        for _ in range(50):  # the command line shows once the new process has exec'd
            argv = [a for a in Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode().split("\0") if a]
            if argv:
                break
            time.sleep(0.1)
        assert store.url not in " ".join(argv) and argv[-2:] == ["run", f"--id={rid}"]
        deadline, nices, group_nices = time.monotonic() + 240, set(), set()
        autogroup = Path(f"/proc/{proc.pid}/autogroup")
        while proc.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError, IndexError):  # the process may end meanwhile
                nices.add(int(Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[16]))
            with contextlib.suppress(OSError, IndexError, ValueError):  # "/autogroup-N nice K"
                group_nices.add(int(autogroup.read_text().split("nice")[1]))
            time.sleep(0.2)
        assert proc.wait(timeout=60) == 0, (tmp_path / "worker.log").read_text()
        assert 10 in nices, f"the worker lowers its priority once it starts (saw {nices})"
        if Path("/proc/self/autogroup").exists():  # Linux autogroup scheduling: the session too
            assert 10 in group_nices, f"the worker's session is lowered too (saw {group_nices})"
    finally:
        if proc.poll() is None:
            proc.kill()
    run = store.get_run(rid)
    assert (run.status, run.done, run.total) == ("completed", 4, 4)
    assert "worker" in (tmp_path / "worker.log").read_text()


def test_a_worker_leaves_a_core_to_the_web_server():
    assert [worker_threads(n) for n in (1, 2, 4, 16)] == [1, 1, 3, 15]


def test_a_finished_worker_is_reaped_without_anyone_waiting_for_it(db_url, tmp_path):
    """A worker that ends (here at once: its run does not exist) leaves no zombie behind in the
    process that started it (the web server starts many and waits for none)."""
    proc = start_worker(999_999, db_url, tmp_path / "logs" / "worker-999999.log")
    deadline = time.monotonic() + 60
    while proc.returncode is None and time.monotonic() < deadline:
        time.sleep(0.2)   # no wait() or poll() here: the reaper thread collects it
    assert proc.returncode is not None
    assert not Path(f"/proc/{proc.pid}").exists()

"""One worker for every background job: a run, a tuning and the judge's reasons are started,
watched, cancelled and resumed through the one API call (``Store.job(KIND, target)``:
``.start()``, ``.status()``, ``.cancel()``, ``.resume()``) in real worker processes (``python -m
compassess_core.worker KIND --id N``) on a real SQLite store, as the app starts them.

The judge is served by the test OpenAI server (``tests/openai_server.py``) with a FAKE backend
(no model): its answers wait at a gate the test opens, so a job is caught mid-way without
timing. The worker's command line and its refusals are tested in the process."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from compassess_core import api, worker
from compassess_core.api import background
from compassess_core.api.jobs import JOB_KINDS
from compassess_core.errors import InputError, RunCancelled
from compassess_core.runs import executor
from tests.fakes import FakeWritingJudge
from tests.openai_server import FakeBackend, OpenAIServer

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "assets" / "sample_summeval.csv"


class GatedFakeBackend(FakeBackend):
    """FAKE served model (``FakeBackend``'s answers) that answers ``open_for`` more requests,
    then holds every other one until :meth:`open` (or five minutes pass, however loaded the
    machine: the fixture opens it in its teardown)."""

    def __init__(self) -> None:
        super().__init__(latency_s=0.0)
        self.answered = 0
        self.open_for: int | None = None   # None: open
        self.gate = threading.Event()
        self.lock = threading.Lock()

    def hold_after(self, n: int) -> None:
        with self.lock:
            self.gate.clear()
            self.open_for = self.answered + n

    def open(self) -> None:
        with self.lock:
            self.open_for = None
        self.gate.set()

    def generate(self, *args, **kw):
        with self.lock:
            held = self.open_for is not None and self.answered >= self.open_for
            self.answered += 1
        if held:
            self.gate.wait(300)
        return super().generate(*args, **kw)


@pytest.fixture
def served(monkeypatch, tmp_path):
    backend = GatedFakeBackend()
    with OpenAIServer(backend, model_name="fake") as srv:
        for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "COMPASSESS_OPENAI_API_KEY"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("COMPASSESS_OPENAI_BASE_URL", srv.base_url)  # configured here
        monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))   # the workers' logs
        monkeypatch.setenv("COMPASSESS_WORKER_NICE", "0")
        srv.judge = f"openai:{srv.base_url}#fake"
        try:
            yield srv
        finally:
            backend.open()


def wait_for(job: api.Job, *states: str, timeout_s: float = 180) -> api.JobStatus:
    """The job's status once it is in one of ``states`` (polled from the store)."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = job.status()
        if status.state in states:
            return status
        assert time.monotonic() < deadline, f"{status.line}; its log:\n{job.log(20)}"
        time.sleep(0.1)


def wait_until(check, what: str, timeout_s: float = 180):
    deadline = time.monotonic() + timeout_s
    while not (found := check()):
        assert time.monotonic() < deadline, what
        time.sleep(0.1)
    return found


def small_run(store: api.Store, judge: str, name: str) -> api.Run:
    settings = api.run_settings(store.read_data(SAMPLE)[0], aspect="coherence", model=judge,
                                contexts=1, strategy="random", budget=12)
    return store.create_run(SAMPLE, settings, name=name)


def test_one_entry_point_serves_every_kind():
    assert set(JOB_KINDS) == {"run", "tuning", "explanation"}
    parser = worker.build_parser(JOB_KINDS)
    assert parser.parse_args(["run", "--id=3", "--id=4"]).ids == [3, 4]
    assert parser.parse_args(["run", "--run-id=3"]).ids == [3]   # the older form still works
    args = parser.parse_args(["explanation", "--id=5", "--context=-c", "--first=a",
                              "--second=-b"])
    assert (args.context, args.second, args.max_tokens) == ("-c", "-b", None)
    # what a starter passes: --name=value, so a value starting with "-" stays a value
    assert background.job_argv("explanation", [5], {"context": "-c", "max_tokens": 9}) == [
        "explanation", "--id=5", "--context=-c", "--max-tokens=9"]
    with pytest.raises(SystemExit):
        parser.parse_args(["explanation", "--id=5"])   # its pair is required


def test_the_one_call_refuses_what_no_job_can_do(db_url, tmp_path, monkeypatch):
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))
    store = api.open_store(db_url)
    run = small_run(store, "fake-judge-missing", "r")
    with pytest.raises(InputError, match="unknown job kind 'ranking'"):
        store.job("ranking", run)
    with pytest.raises(InputError, match="takes no context"):
        store.job("run", run, context="A0")
    with pytest.raises(InputError, match="needs first"):
        store.job("explanation", run, context="A0", second="S1")
    with pytest.raises(InputError, match="no recorded judge"):   # checked before starting
        store.job("explanation", run, context="A0", first="S0", second="S1").start()
    assert store.job("run", [run.name, run.id]).ids == (run.id,)
    assert store.job("run", run).status().state == "pending"
    memory = api.open_store(":memory:")
    with pytest.raises(InputError, match="in-memory store"):
        memory.job("run", small_run(memory, "fake-judge-missing", "m")).start()
    # A worker's exit code says how it ended: 2 for bad input (here: no such tuning).
    monkeypatch.setenv(worker.DATABASE_URL_ENV, db_url)
    assert worker.main(["tuning", "--id=999"]) == worker.EXIT_INPUT


@pytest.mark.slow  # worker processes
def test_a_run_job_is_started_watched_cancelled_and_resumed_with_a_fake_served_judge(served, db_url):
    store = api.open_store(db_url)
    run = small_run(store, served.judge, "bg-run")
    job = store.job("run", run)
    assert job.status().state == "pending" and job.status().can_resume
    served.backend.hold_after(3)
    proc = job.start()
    with pytest.raises(InputError, match="already has a live worker"):
        job.start()   # marked working at once: no second worker
    status = wait_until(lambda: (s := job.status()).done and s, "the run judged nothing")
    assert status.active and status.unit == "comparisons" and status.total == 12
    assert 0 < status.done < 12
    job.cancel()
    assert job.status().state == "cancelling"
    served.backend.open()
    stopped = wait_for(job, "cancelled")
    assert stopped.can_resume and stopped.done < 12
    assert proc.wait(timeout=60) == worker.EXIT_INTERRUPTED
    job.resume()
    done = wait_for(job, "completed", "failed")
    assert (done.state, done.done, done.total) == ("completed", 12, 12), job.log(20)
    assert store.get_run("bg-run").n_comparisons == 12
    assert "worker " in job.log(50) and "on run 'bg-run'" in job.log(50)
    with pytest.raises(InputError, match="nothing to resume"):
        job.resume()


@pytest.mark.slow  # worker processes
def test_a_tuning_job_is_started_watched_cancelled_and_resumed_with_a_fake_served_judge(served, db_url):
    store = api.open_store(db_url)
    tuning = store.create_tuning(SAMPLE, aspect="coherence", name="bg-tune", contexts=1,
                                 pairs=2, rounds=0, model=served.judge)
    job = store.job("tuning", "bg-tune")
    assert job.status().state == "pending"
    served.backend.hold_after(5)    # the first wording's comparisons, then one more
    job.start(cwd=ROOT)
    status = wait_until(lambda: (s := job.status()).done and s, "no wording was judged")
    assert status.active and status.unit == "wordings" and status.total == 7
    job.cancel()
    served.backend.open()
    stopped = wait_for(job, "cancelled")
    assert 1 <= stopped.done < 7 and stopped.can_resume
    job.resume()
    done = wait_for(job, "completed", "failed")
    assert (done.state, done.done, done.total) == ("completed", 7, 7), job.log(20)
    assert store.tuning(tuning.id).result(n_boot=20).picked is not None
    assert job.log_path == tuning.worker_log_path


@pytest.mark.slow  # worker processes
def test_an_explanation_job_is_started_watched_cancelled_and_resumed_with_a_fake_served_judge(served, db_url):
    store = api.open_store(db_url)
    run = small_run(store, served.judge, "explained")
    store.job("run", run).execute(progress=False)   # here, as a command does
    row = run.refresh().comparisons().iloc[0]
    pair = dict(context=row["context_id"], first=row["a_id"], second=row["b_id"])
    job = store.job("explanation", run, **pair)
    assert job.status().state == "pending"
    served.backend.hold_after(0)
    proc = job.start()
    working = wait_for(job, "working")
    assert working.unit == "orders" and working.done == 0
    wait_until(lambda: "for its reasons" in job.log(), "the worker never asked the judge")
    with pytest.raises(InputError, match="already asking"):
        job.start()
    job.cancel()   # no row to flag: its worker process is stopped (SIGTERM)
    served.backend.open()
    stopped = wait_for(job, "cancelled")
    assert stopped.can_resume and stopped.message.startswith("stopped")
    assert proc.wait(timeout=60) == worker.EXIT_INTERRUPTED
    job.resume()
    done = wait_for(job, "completed", "failed", "stale")
    assert done.state == "completed" and done.done == done.total >= 1, job.log(20)
    assert run.explanation(**{"context_id": pair["context"], "first": pair["first"],
                              "second": pair["second"]}).complete


@pytest.mark.slow  # a worker process
def test_the_command_line_starts_watches_cancels_and_resumes_a_job_the_same_way_fake_judge(
        served, db_url, capsys):
    from compassess_core.cli import main
    store = api.open_store(db_url)
    small_run(store, served.judge, "cli-run")
    job = store.job("run", "cli-run")
    served.backend.hold_after(3)
    assert main(["job", "start", "run", "cli-run", "--db", db_url]) == 0
    assert "started run 'cli-run': worker process" in capsys.readouterr().out
    wait_until(lambda: job.status().done, "the run judged nothing")
    assert main(["job", "cancel", "run", "cli-run", "--db", db_url]) == 0
    assert "asked run 'cli-run' to stop" in capsys.readouterr().out
    served.backend.open()
    wait_for(job, "cancelled")
    assert main(["job", "status", "run", "cli-run", "--json", "--db", db_url]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["state"] == "cancelled" and said["can_resume"] and said["total"] == 12
    assert main(["job", "start", "run", "cli-run", "--db", db_url]) == 0   # resumes
    wait_for(job, "completed")
    capsys.readouterr()
    assert main(["job", "status", "run", "cli-run", "--db", db_url]) == 0
    assert capsys.readouterr().out.strip() == "run 'cli-run': completed, 12/12 comparisons"
    assert main(["job", "log", "run", "cli-run", "--lines", "50", "--db", db_url]) == 0
    assert "done: 12 comparisons in the run" in capsys.readouterr().out
    # a parameter the kind does not take is refused, naming it
    assert main(["job", "start", "run", "cli-run", "--context", "A0", "--db", db_url]) == 2
    assert "takes no context" in capsys.readouterr().err


# ------------------------------------------------------- the same jobs executed in this process

def test_each_kind_executes_cancels_and_resumes_here_through_the_one_job_with_a_fake_judge(
        db_url, tmp_path, monkeypatch):
    """``Job.execute`` (what the worker process and the commands run) of each kind, here, with
    a FAKE writing judge: status before, a cancel through ``Job.cancel`` stops it with what was
    done kept, the status says it can resume, and executing it again completes it."""
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))
    judge = FakeWritingJudge(batch_size=2)
    store = api.open_store(db_url)
    # run: cancelled after its second micro-batch, resumed
    run = small_run(store, "fake-judge", "here")
    job = store.job("run", run)
    assert (job.status().state, job.status().done) == ("pending", 0)
    judge.on_batch = lambda k: job.cancel() if k == 2 else None
    with pytest.raises(RunCancelled):
        job.execute(judge=judge, progress=False)
    stopped = job.status()
    assert stopped.state == "cancelled" and stopped.can_resume and 0 < stopped.done < 12
    judge.on_batch = None
    [done_run] = job.execute(judge=judge, progress=False)
    status = job.status()
    assert (status.state, status.done, status.total) == ("completed", 12, 12)
    assert done_run.n_comparisons == 12 and not status.can_resume
    # tuning: cancelled in its second wording, resumed
    tuning = store.create_tuning(SAMPLE, aspect="coherence", name="here-tune", contexts=1,
                                 pairs=2, rounds=0, model="fake-judge")
    job = store.job("tuning", tuning)
    assert job.status().state == "pending"   # its wordings are made when it first executes
    first = len(judge.batches)   # the judge counts its micro-batches over its life
    judge.on_batch = lambda k: job.cancel() if k == first + 3 else None
    with pytest.raises(RunCancelled):
        job.execute(judge=judge, progress=False)
    stopped = job.status()
    assert stopped.state == "cancelled" and stopped.can_resume and stopped.done < 7
    judge.on_batch = None
    result = job.execute(judge=judge, progress=False)
    assert result.status == "completed"
    assert (job.status().state, job.status().done) == ("completed", 7)
    # explanation: asked once, then complete (no worker to cancel here)
    row = done_run.comparisons().iloc[0]
    job = store.job("explanation", done_run, context=row["context_id"], first=row["a_id"],
                    second=row["b_id"])
    assert job.status().state == "pending" and job.status().done == 0
    found = job.execute(judge=judge, progress=False)
    assert found.complete and job.status().state == "completed"
    assert job.status().done == job.status().total >= 1


def test_the_commands_execute_runs_tunings_and_reasons_through_the_job_with_a_fake_judge(
        db_url, tmp_path, monkeypatch, capsys):
    """``compassess worker``, ``tune``, ``explain`` (and ``run``) execute the registry's job in
    their own process, as the worker process does: ``Job.execute`` of each kind (a FAKE judge
    loaded in place of the model)."""
    from compassess_core.cli import main
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))
    judge = FakeWritingJudge()
    monkeypatch.setattr(executor, "load_run_judge", lambda settings: judge)
    executed, depth = [], []
    real = api.Job.execute

    def spy(job, **kw):   # the jobs a command executes (a tuning's own wording runs left out)
        if not depth:
            executed.append(job.kind.name)
        depth.append(job)
        try:
            return real(job, **kw)
        finally:
            depth.pop()
    monkeypatch.setattr(api.Job, "execute", spy)
    store = api.open_store(db_url)
    small_run(store, "fake-judge", "cli-here")
    assert main(["worker", "--run", "cli-here", "--chunk-size", "4", "--db", db_url]) == 0
    assert store.get_run("cli-here").n_comparisons == 12
    assert main(["tune", str(SAMPLE), "--aspect", "coherence", "--contexts", "1", "--holdout",
                 "1", "--rounds", "0", "--pairs", "2", "--name", "cli-tune", "--db",
                 db_url]) == 0
    row = store.get_run("cli-here").comparisons().iloc[0]
    assert main(["explain", "--run", "cli-here", "--context", row["context_id"], "--a",
                 row["a_id"], "--b", row["b_id"], "--db", db_url]) == 0
    assert "in position A" in capsys.readouterr().out
    assert main(["run", str(SAMPLE), "--aspect", "coherence", "--contexts", "1", "--budget",
                 "4", "--strategy", "random", "--run", "cli-run-here", "--db", db_url]) == 0
    assert executed == ["run", "tuning", "explanation", "run"]
    # `compassess runs` lists each run's own job status, as `compassess job status` reads it
    capsys.readouterr()
    assert main(["runs", "--json", "--db", db_url]) == 0
    listed = {r["name"]: r["state"] for r in json.loads(capsys.readouterr().out)}
    assert listed["cli-here"] == store.job("run", "cli-here").status().state == "completed"
    # a kind's own parameter on `compassess job`; another kind's is refused, naming it
    assert main(["job", "status", "run", "cli-here", "--chunk-size", "8", "--db", db_url]) == 0
    assert main(["job", "status", "run", "cli-here", "--threads", "2", "--db", db_url]) == 2
    assert "takes no threads" in capsys.readouterr().err

"""The worker: every background job's one entry point, and the executor of stored runs.

A job is one of the kinds of one registry (``api.jobs.JOB_KINDS``, as ``ranking.METHODS``):
``run`` (stored runs, several judged together), ``tuning`` (a tuning of the judge's
instruction) and ``explanation`` (the judge's reasons for its verdicts on one pair). The app,
the CLI and the API start, watch, cancel and resume every kind the same way
(``api.Store.job(KIND, target).start()``, ``.status()``, ``.cancel()``), and a job started in
the background runs here: ``python -m compassess_core.worker KIND --id N [...]`` (:func:`main`),
a process of its own in a session of its own (it outlives the page that started it), at lower
priority, with one CPU thread fewer than the cores, its output in a log only its owner may read.

A run is where the engine meets the store: its settings and dataset come from the store, its
kind (``run_kinds``) plans what is missing, and the one run loop (``run_loop.run_plan``)
computes and stores it (:func:`execute_runs`). Information flows one way: the page or the CLI
creates the run with its settings; the worker only records what it finds out (the judge that
ran it, what planning found, status, progress and a heartbeat).

Stopping: SIGTERM, Ctrl-C and the store's cancel request all stop a run after the micro-batch
in flight (a second signal stops at once); everything computed is stored and the same command
resumes. The database URL reaches a worker process through its environment, never its command
line (it may hold a password). The store is reached through the API or ``sink.open_store``
(an entry point): this module never imports ``db``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence, TextIO

from .errors import CompAssessError, InputError, RunCancelled, RunInterrupted
from .judges.servers import redact_secrets
from .runs.pacing import BatchPacer
from .runs.run_kinds import RunJob, kind_of
from .runs.run_loop import (LOADING_PHASE, PLANNING_PHASE, Heartbeat, Member, Progress, RunSummary,
                       run_group)
from .runs.settings import RunSettings
from .judges.speed import characters, estimate_time, shared_work, work_size

EXIT_OK, EXIT_FAILURE, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
#: Niceness of a worker process started by the app (COMPASSESS_WORKER_NICE overrides): the model
#: then yields the CPU to the web server, whose pages took 15-35 s to load during a run otherwise.
WORKER_NICE = 10
#: Where a worker process finds its database (never on its command line).
DATABASE_URL_ENV = "COMPASSESS_DATABASE_URL"
#: The one entry point of every background job (``python -m compassess_core.worker KIND ...``).
WORKER_MODULE = "compassess_core.worker"
#: How a worker's log says it ended, first on its last line (``api.jobs`` reads it back).
STOPPED, FAILED = "stopped", "error"


class Reporter(Protocol):
    """What a run tells its watcher: the judge loaded, progress, and messages."""

    def loaded(self, description: str) -> None: ...

    def progress(self, progress: Progress) -> None: ...

    def message(self, text: str) -> None: ...


class ConsoleReporter:
    """Progress as ``done/total UNIT (x%) | rate | ETA`` on a terminal (one line, redrawn) or a log
    (a line at most every ``log_every_s`` seconds, and the last one)."""

    def __init__(self, unit: str = "comparisons", rate_unit: str | None = None,
                 stream: TextIO | None = None, log_every_s: float = 5.0) -> None:
        self.stream = stream or sys.stderr  # looked up now: a caller (or pytest) may replace it
        self.unit = unit
        self.rate_unit = rate_unit or f"{unit.split()[0]}/s"
        self.tty = self.stream.isatty()
        self.log_every_s = log_every_s
        self._last = 0.0

    def loaded(self, description: str) -> None:
        self.message(f"judge: {description}")

    def message(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def progress(self, pr: Progress) -> None:
        now = time.monotonic()
        final = pr.done >= pr.total
        if not self.tty and not final and now - self._last < self.log_every_s:
            return
        self._last = now
        width = 30
        filled = int(width * pr.fraction)
        eta = "--:--:--" if pr.eta_s is None else time.strftime("%H:%M:%S", time.gmtime(pr.eta_s))
        rate = f"{pr.rate:.2f} {self.rate_unit}" if pr.computed else f"-- {self.rate_unit}"
        line = (f"[{'#' * filled}{'.' * (width - filled)}] {pr.done}/{pr.total} {self.unit} "
                f"({100 * pr.fraction:.0f}%) | {rate} | ETA {eta}"
                + (f" | {pr.cached} from cache" if pr.cached else ""))
        self.stream.write(("\r" + line) if self.tty else (line + "\n"))
        if self.tty and final:
            self.stream.write("\n")
        self.stream.flush()


@contextlib.contextmanager
def stop_on_signals(event: threading.Event, working: threading.Event
                    ) -> Iterator[threading.Event]:
    """SIGTERM and SIGINT, once the run is ``working`` (planned and judging), set ``event``: the
    run stops after its micro-batch in flight and keeps it. Before that (the model still loading:
    nothing to keep) and at a second signal they raise ``KeyboardInterrupt`` at once. Handlers are
    restored on exit; outside the main thread (where Python allows no handlers) the event alone
    is used."""

    def handler(signum, frame):  # noqa: ANN001
        if event.is_set() or not working.is_set():
            raise KeyboardInterrupt
        event.set()

    with signal_handlers(handler, (signal.SIGTERM, signal.SIGINT)):
        yield event


@contextlib.contextmanager
def signal_handlers(handler, signals: Sequence[int]) -> Iterator[None]:
    """``handler`` for ``signals`` while inside, the handlers before restored on exit; outside
    the main thread (where Python allows no handlers) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, handler) for s in signals}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def load_run_judge(settings: RunSettings):
    """The judge a run's settings name (model, device, dtype, batch size, the kind's label words).

    Raises
    ------
    ModelLoadError, InputError
        The model cannot be found or loaded, or the label words do not fit its tokenizer; or
        it needs more memory than this machine has available (``model_catalog.memory_plan``: checked
        before loading, so a judge that cannot fit is refused with the reason, not killed).
    """
    from .judges import load_judge
    from .judges.model_catalog import memory_plan
    memory = memory_plan(settings.model, settings.dtype, settings.device,
                         batch_size=settings.batch_size)
    if memory.problem is not None:
        raise InputError(memory.problem)
    return load_judge(settings.model, device=settings.device, dtype=settings.dtype,
                      batch_size=settings.batch_size,
                      label_words=kind_of(settings).judge_label_words(settings))


def largest_batch_size(settings: Sequence[RunSettings]) -> int | None:
    """The largest batch size runs judged together ask for (it changes speed, never results);
    None when none names one: the judge sizes its batches itself."""
    return max((s.batch_size for s in settings if s.batch_size), default=None)


def judge_fields(settings: RunSettings) -> tuple:
    """What a run's judge is loaded from (model, device, dtype, label words): runs judged
    together by one worker must agree on it."""
    return (settings.model, settings.device, settings.dtype,
            tuple(kind_of(settings).judge_label_words(settings) or ()))


def check_one_judge(settings: Sequence[RunSettings], names: Sequence[str]) -> None:
    """Refuse runs that one loaded judge cannot execute together.

    Raises
    ------
    InputError
        Two runs whose model, device, dtype or label words differ (the message names them).
    """
    first = judge_fields(settings[0])
    for s, name in zip(settings[1:], names[1:]):
        if judge_fields(s) != first:
            raise InputError(f"runs '{names[0]}' and '{name}' need different judges (model, "
                             "device, dtype or label words): one worker judges runs of one judge "
                             "only; start them separately")


def execute(job: RunJob, sink, *, reporter: Reporter | None = None,
            cancel: threading.Event | None = None,
            working: threading.Event | None = None) -> RunSummary:
    """Plan ``job`` with its kind and run the loop on ``sink`` (:func:`execute_group` of one)."""
    return execute_group([job], sink, reporter=reporter, cancel=cancel, working=working)[0]


def execute_group(jobs: Sequence[RunJob], sink, *, reporter: Reporter | None = None,
                  cancel: threading.Event | None = None,
                  working: threading.Event | None = None) -> list[RunSummary]:
    """Plan each job with its kind and run the loop on all of them together (``run_loop.
    run_group``: one judge, shared prompt prefixes); each run's status says how it ended (the
    loop marks them while judging; planning, which may write references, is marked here). The
    jobs share one loaded judge. A run that cannot be planned fails the group: nothing is
    judged and every run is marked failed with the reason.

    Raises
    ------
    RunCancelled
        Stopped on request (what was computed is stored; the runs are marked cancelled).
    InputError
        Settings, judge or prompts a run cannot use (the runs are marked failed with the message).
    """
    reporter = reporter or ConsoleReporter()
    cancel = cancel or threading.Event()
    ids = [job.run_id for job in jobs]
    if working is not None:
        working.set()  # from here a stop keeps what was computed (references, micro-batches)
    plans = []
    try:
        for job in jobs:
            sink.set_run_status(job.run_id, "running", message="planning the run",
                                phase=PLANNING_PHASE)
        with Heartbeat(sink, ids):
            for job in jobs:
                plans.append(kind_of(job.settings).plan(job))
    except BaseException as e:
        _mark_stopped_or_failed(sink, ids, e, "before judging")
        raise
    counter = TokenCounter(getattr(jobs[0].judge, "tokenizer", None))
    works = [kind_of(job.settings).prompt_work(job.dataset, job.settings) for job in jobs]
    shared = shared_work(works)
    # Runs judged together record the group's shared work: their token rate is then the judge's,
    # as a later plan's estimate takes it.
    notes = work_notes_of(shared, counter)
    for job, plan in zip(jobs, plans):
        plan.notes.update(notes)
        if len(jobs) > 1:
            plan.notes["run_group"] = ids
        sink.record_plan(job.run_id, plan.notes)
        for cid, kept in plan.notes.get("truncated_contexts", {}).items():
            reporter.message(f"context '{cid}' truncated to its first {kept:,} characters to fit "
                             "the model's context window")
    estimate = estimate_time(shared, _recorded_runs(sink), jobs[0].settings.model,
                             jobs[0].settings.device)
    members = [Member(job.run_id, plan, plan.total / estimate.seconds
                      if estimate.seconds > 0 and plan.total else None)
               for job, plan in zip(jobs, plans)]
    pacer = BatchPacer(jobs[0].judge, estimate.token_rate)
    try:
        return run_group(members, sink, progress=reporter.progress, cancel=cancel,
                         pace=pacer.paced)
    finally:
        pacer.restore()


def _recorded_runs(sink) -> list:
    """The runs a store recorded (their rates: what an estimate rests on); none in memory."""
    list_runs = getattr(sink, "list_runs", None)
    if list_runs is None:
        return []
    with contextlib.suppress(Exception):  # an estimate is never worth failing a run for
        return list(list_runs())
    return []


class TokenCounter:
    """Each text's prompt tokens with the judge's tokenizer, each distinct text counted once
    (the runs of a group share their contexts and candidates); None without a tokenizer."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self._known: dict[str, int] = {}

    def __call__(self, texts: list[str]) -> list[int]:
        new = list(dict.fromkeys(t for t in texts if t not in self._known))
        if new:
            ids = self.tokenizer(new, add_special_tokens=False)["input_ids"]
            self._known.update(zip(new, (len(x) for x in ids)))
        return [self._known[t] for t in texts]


def work_notes(kind, job: RunJob) -> dict:
    """The size of the run's whole plan (``RunKind.prompt_work``) in characters and, with the
    judge's tokenizer, in prompt tokens: what the token rate is measured on (``run_loop``) and
    what a later plan's estimate converts characters to tokens with (``speed.estimate_time``).
    A judge without a tokenizer (a served model) gives characters only."""
    return work_notes_of(kind.prompt_work(job.dataset, job.settings),
                         TokenCounter(getattr(job.judge, "tokenizer", None)))


def work_notes_of(work, counter: TokenCounter) -> dict:
    """:func:`work_notes` of a plan's ``work`` (``RunKind.prompt_work``), tokens by ``counter``."""
    notes = {"work_chars": int(work_size(work, characters))}
    if counter.tokenizer is not None and work:
        with contextlib.suppress(Exception):  # a tokenizer that cannot count leaves no rate
            notes["work_tokens"] = int(work_size(work, counter))
    return notes


def execute_with(sink, dataset, settings: RunSettings, judge, run_id: int, *, dataset_id: int = 0,
                 reporter: Reporter | None = None, cancel: threading.Event | None = None,
                 chunk_prompts: int | None = None) -> RunSummary:
    """:func:`execute` run ``run_id`` of ``settings`` on ``dataset`` with a judge already loaded,
    resuming from what ``sink`` holds (a notebook's ``MemorySink``, or a store)."""
    return execute_group_with(sink, dataset, [settings], judge, [run_id], dataset_id=dataset_id,
                              reporter=reporter, cancel=cancel, chunk_prompts=chunk_prompts)[0]


def execute_group_with(sink, dataset, settings: Sequence[RunSettings], judge,
                       run_ids: Sequence[int], *, dataset_id: int = 0,
                       reporter: Reporter | None = None, cancel: threading.Event | None = None,
                       chunk_prompts: int | None = None) -> list[RunSummary]:
    """:func:`execute_group`: runs ``run_ids`` of ``settings`` (one each: e.g. the aspects of one
    dataset) on ``dataset`` judged together by a judge already loaded, resuming from what
    ``sink`` holds."""
    jobs = [run_job(sink, dataset, dataset_id, s, judge, run_id, chunk_prompts=chunk_prompts,
                    cancelled=lambda: bool(cancel is not None and cancel.is_set()))
            for s, run_id in zip(settings, run_ids, strict=True)]
    return execute_group(jobs, sink, reporter=reporter, cancel=cancel)


def run_job(sink, dataset, dataset_id: int, settings: RunSettings, judge, run_id: int, *,
            cancelled, chunk_prompts: int | None = None, report=None) -> RunJob:
    """Run ``run_id`` of ``settings`` on ``dataset`` as its kind plans it (a ``RunJob``): what
    ``sink`` holds of it already, the judge loaded for it, and ``cancelled`` (a callable) asked
    between micro-batches."""
    extra = {} if report is None else {"report": report}
    job = RunJob(dataset=dataset, dataset_id=dataset_id, settings=settings, judge=judge,
                 run_id=run_id, stored=sink.stored_results(run_id, kind_of(settings).name),
                 store=sink, cancelled=cancelled, **extra)
    if chunk_prompts:
        job.chunk_prompts = chunk_prompts
    return job


def _mark_failed(sink, run_id: int, e: BaseException) -> None:
    message = str(e) if isinstance(e, CompAssessError) else f"{type(e).__name__}: {e}"
    sink.set_run_status(run_id, "failed", message=redact_secrets(message))


def execute_run(store, run_id: int, *, judge=None, reporter: Reporter | None = None,
                cancel: threading.Event | None = None, chunk_prompts: int | None = None,
                working: threading.Event | None = None) -> RunSummary:
    """Execute (or resume) stored run ``run_id`` (:func:`execute_runs` of one)."""
    return execute_runs(store, [run_id], judge=judge, reporter=reporter, cancel=cancel,
                        chunk_prompts=chunk_prompts, working=working)[0]


def execute_runs(store, run_ids: Sequence[int], *, judge=None, reporter: Reporter | None = None,
                 cancel: threading.Event | None = None, chunk_prompts: int | None = None,
                 working: threading.Event | None = None) -> list[RunSummary]:
    """Execute (or resume) stored runs ``run_ids`` together: load their one judge unless given,
    record it for each, plan and run them in one pass (:func:`execute_group`).

    Raises
    ------
    RunCancelled, InputError
        As :func:`execute_group`; runs that need different judges, a model that cannot load, or
        that is not the judge that started a run, are an ``InputError`` too (the runs are
        marked failed with the message).
    """
    reporter = reporter or ConsoleReporter()
    cancel = cancel or threading.Event()
    run_ids = list(dict.fromkeys(int(r) for r in run_ids))
    runs = [store.get_run(run_id) for run_id in run_ids]
    # Nothing left: say so without loading a judge. A judge handed in is still checked against
    # the one that made the runs (a caller resuming with another model is told, as always).
    if judge is None and all(run.status == "completed" and kind_of(run.settings).completed_is_final
                             for run in runs):
        return [completed_summary(run, reporter) for run in runs]
    settings = [RunSettings.from_dict(run.settings) for run in runs]
    for run_id in run_ids:
        store.set_run_status(run_id, "running", message="loading the judge", phase=LOADING_PHASE)
    try:
        with Heartbeat(store, run_ids):
            check_one_judge(settings, [run.name for run in runs])
            if judge is None:
                # The largest batch size any of them asks for (it changes speed, never results).
                judge = load_run_judge(settings[0].with_changes(
                    batch_size=largest_batch_size(settings)))
            datasets: dict[int, Any] = {}
            jobs = []
            for run, s in zip(runs, settings):
                store.record_judge(run.id, kind_of(s).judge_key(judge))
                if run.dataset_id not in datasets:
                    datasets[run.dataset_id] = store.load_dataset(run.dataset_id)
                jobs.append(run_job(store, datasets[run.dataset_id], run.dataset_id, s, judge,
                                    run.id, chunk_prompts=chunk_prompts, report=reporter.message,
                                    cancelled=lambda: cancel.is_set() or any(
                                        store.cancel_requested(r) for r in run_ids)))
    except BaseException as e:
        _mark_stopped_or_failed(store, run_ids, e, "while loading the judge")
        raise
    reporter.loaded(judge.description)
    if len(runs) > 1:
        reporter.message(f"judging {len(runs)} runs together: "
                         + ", ".join(f"'{run.name}'" for run in runs))
    return execute_group(jobs, store, reporter=reporter, cancel=cancel, working=working)


def _mark_stopped_or_failed(sink, run_ids, error: BaseException, when: str) -> None:
    """Before the loop runs, a stop asked for (Ctrl-C, a cancel) marks the runs cancelled, any
    other error marks them failed with its message (redacted)."""
    for run_id in run_ids:
        if isinstance(error, (RunCancelled, KeyboardInterrupt)):
            sink.set_run_status(run_id, "cancelled", message=f"stopped on request {when}; "
                                "resuming it starts again")
        else:
            _mark_failed(sink, run_id, error)


def completed_summary(run, reporter: Reporter) -> RunSummary:
    """What resuming a completed run computes: nothing; said, and the judge not loaded (every
    result of a completed run is stored, and its settings cannot change under its name)."""
    reporter.message(f"run '{run.name}' is complete: nothing left to compute, so the judge is "
                     "not loaded")
    stored = int(run.done or 0)
    return RunSummary("completed", total=int(run.total or stored), already_stored=stored,
                      computed=0, cached=0, elapsed_s=0.0)


def summary_line(summary: RunSummary, unit: str) -> str:
    rate = (f", {summary.computed / summary.judging_s:.2f} {unit.split()[0]}/s over "
            f"{summary.judging_s:.1f} s of judging" if summary.computed and summary.judging_s
            else "")
    return (f"done: {summary.total} {unit} in the run ({summary.already_stored} already stored, "
            f"{summary.computed} computed, {summary.cached} from cache) in "
            f"{summary.elapsed_s:.1f} s{rate}")


def stopped_line(unit: str) -> str:
    return (f"stopped: every one of the {unit} computed so far is stored; run the same command "
            "to resume")


def execute_until_stopped(store, run_id: int, *, reporter: Reporter, judge=None,
                          chunk_prompts: int | None = None) -> RunSummary:
    """:func:`execute_runs_until_stopped` of one run."""
    return execute_runs_until_stopped(store, [run_id], reporter=reporter, judge=judge,
                                      chunk_prompts=chunk_prompts)[0]


def execute_runs_until_stopped(store, run_ids: Sequence[int], *, reporter: Reporter, judge=None,
                               chunk_prompts: int | None = None) -> list[RunSummary]:
    """:func:`execute_runs` under :func:`stop_on_signals`, telling its reporter how it ended.

    What a command, a script or a notebook cell runs: Ctrl-C, SIGTERM or a notebook's stop
    button stop the runs after the micro-batch in flight (a second one at once).

    Raises
    ------
    RunInterrupted
        Stopped by a signal, or a ``KeyboardInterrupt`` raised while it ran (everything
        computed is stored; the runs are marked cancelled).
    RunCancelled
        Stopped by a cancel request in the store (the app's Cancel) for any of the runs.
    InputError
        As :func:`execute_runs`.
    """
    runs = [store.get_run(run_id) for run_id in run_ids]
    unit = kind_of(runs[0].settings).unit
    working = threading.Event()
    with stop_on_signals(threading.Event(), working) as cancel:
        try:
            summaries = execute_runs(store, run_ids, judge=judge, reporter=reporter,
                                     cancel=cancel, chunk_prompts=chunk_prompts, working=working)
        except (RunCancelled, KeyboardInterrupt) as e:
            reporter.message(stopped_line(unit))
            if isinstance(e, KeyboardInterrupt) or cancel.is_set():
                raise RunInterrupted(stopped_line(unit)) from None
            raise
    for run, summary in zip(runs, summaries):
        line = summary_line(summary, kind_of(run.settings).unit)
        reporter.message(line if len(runs) == 1 else f"run '{run.name}': {line}")
    return summaries


# ------------------------------------------------------------------------- the worker process

def worker_nice() -> int:
    raw = os.environ.get("COMPASSESS_WORKER_NICE", "").strip()
    return int(raw) if raw.lstrip("-").isdigit() else WORKER_NICE


def lower_priority(nice: int) -> None:
    """Give the CPU to the web server first: niceness ``nice`` for this process and, on Linux,
    for its autogroup.

    The worker runs in a session of its own, and with Linux's autogroup scheduling (on by
    default on most distributions) a process's nice value only orders it among the processes of
    its own session: against the web server's session a nice 10 worker still took half the CPU.
    Raising the session's autogroup nice (``/proc/self/autogroup``, see sched(7)) is what makes
    the lower priority hold; lowering priority needs no privilege."""
    if nice <= 0:
        return
    with contextlib.suppress(OSError):
        os.nice(nice)
    with contextlib.suppress(OSError):
        Path("/proc/self/autogroup").write_text(str(nice))


def worker_threads(cores: int | None = None) -> int:
    """The judge's CPU threads in a worker process: one fewer than the cores this process may use
    (at least one), so a core stays free for the web server; ``COMPASSESS_THREADS`` overrides."""
    if cores is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:
            cores = os.cpu_count() or 1
    return max(1, cores - 1)


def worker_log_path(run_id: int) -> Path:
    """The log of a run's worker processes: ``$COMPASSESS_HOME/logs/worker-<run id>.log``
    (``COMPASSESS_HOME`` defaults to ``~/.local/share/compassess``, as the database). One per
    run id, not name: names that differ only in characters a file name cannot hold would share
    a file, and a renamed run keeps its log."""
    home = os.environ.get("COMPASSESS_HOME", "").strip()
    root = Path(home).expanduser() if home else Path.home() / ".local" / "share" / "compassess"
    return root / "logs" / f"worker-{int(run_id)}.log"


def log_tail(path: Path, n_lines: int = 12) -> str:
    """The last ``n_lines`` lines of a worker's log ("" when there is none yet)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n_lines:])


def job_argv(kind: str, ids: Sequence[int], params: Mapping[str, object] | None = None
             ) -> list[str]:
    """The worker's arguments for a job of ``kind`` on ``ids`` with its ``params`` (what
    ``python -m compassess_core.worker`` parses). Every value is given as ``--name=value``, so
    a user's text starting with ``-`` stays a value."""
    return [kind, *(f"--id={int(i)}" for i in ids),
            *(f"--{name.replace('_', '-')}={value}" for name, value in (params or {}).items()
              if value is not None)]


def start_job(kind: str, ids: Sequence[int], params: Mapping[str, object] | None,
              database_url: str, log_path: Path, *,
              cwd: str | os.PathLike | None = None) -> subprocess.Popen:
    """Start ``python -m compassess_core.worker KIND --id=N ...`` (:func:`job_argv`) in its own
    session (it outlives the page that started it), writing to ``log_path`` (a file only its
    owner may read: logs name datasets, models and servers). The database URL goes through the
    environment, never the command line (it may hold a password)."""
    log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(log_path.parent, 0o700)
    env = dict(os.environ)
    env[DATABASE_URL_ENV] = database_url
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", WORKER_MODULE,
                                 *job_argv(kind, ids, params)],
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=str(cwd or root), env=env)
    # Reaped as soon as it ends, so a long-lived starter keeps no zombie.
    threading.Thread(target=proc.wait, name=f"reap-{kind}", daemon=True).start()
    return proc


def start_worker(run_id: int | Sequence[int], database_url: str, log_path: Path, *,
                 cwd: str | os.PathLike | None = None) -> subprocess.Popen:
    """:func:`start_job` of the ``run`` kind: stored run ``run_id`` (or several, judged
    together) executed in a worker process of its own."""
    run_ids = [int(run_id)] if isinstance(run_id, int) else [int(r) for r in run_id]
    return start_job("run", run_ids, None, database_url, log_path, cwd=cwd)


def prepare_process(nice: int | None = None) -> str:
    """What a worker process does first: lower its priority (the web server's pages come
    first) and choose its CPU threads; returns its database URL (from the environment)."""
    lower_priority(worker_nice() if nice is None else nice)
    os.environ.setdefault("COMPASSESS_THREADS", str(worker_threads()))
    return os.environ.get(DATABASE_URL_ENV, "")


def exit_code(work: Callable[[], object]) -> int:
    """Do a worker process's ``work`` (a callable) and say how it ended as the CLI's exit code,
    the reason as the last line of its log (no traceback): 0 done, 2 bad input, 130 stopped on
    request (everything done is stored), 1 any other failure."""
    try:
        work()
        return EXIT_OK
    except (RunCancelled, RunInterrupted, KeyboardInterrupt):
        print(f"{STOPPED}: everything done is stored; start it again to resume", flush=True)
        return EXIT_INTERRUPTED
    except InputError as e:
        # the log is read back on the page: a served judge's error may echo its key
        print(f"{FAILED}: {redact_secrets(str(e))}", flush=True)
        return EXIT_INPUT
    except Exception as e:  # noqa: BLE001 - the worker's log shows the reason, not a traceback
        print(f"{FAILED}: {type(e).__name__}: {redact_secrets(str(e))}", flush=True)
        return EXIT_FAILURE


def build_parser(kinds: Mapping[str, Any]) -> argparse.ArgumentParser:
    """The worker's command line: one sub-command per job kind of ``kinds`` (the registry,
    ``api.jobs.JOB_KINDS``), each with ``--id`` and the kind's own parameters."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {WORKER_MODULE}",
        description="execute (or resume) a stored job: runs, a tuning, the judge's reasons")
    sub = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    for name, kind in kinds.items():
        p = sub.add_parser(name, help=kind.description)
        ids = ("--id", "--run-id") if name == "run" else ("--id",)  # --run-id: the older form
        p.add_argument(*ids, dest="ids", type=int, required=True, action="append",
                       metavar="N", help=kind.id_help)
        for param in kind.params:
            p.add_argument(f"--{param.name.replace('_', '-')}", dest=param.name,
                           type=param.type, required=param.required, help=param.help)
    return parser


def main(argv: list[str] | None = None) -> int:
    """``python -m compassess_core.worker KIND --id N [...]``: execute (or resume) one job of a
    kind of the registry (``api.jobs.JOB_KINDS``: ``run``, ``tuning``, ``explanation``) at
    lowered priority; ``--run-id N`` alone is a run's job, as before kinds had names."""
    from .api.jobs import JOB_KINDS
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith("--run-id"):
        argv = ["run", *argv]
    args = build_parser(JOB_KINDS).parse_args(argv)
    params = {p.name: getattr(args, p.name) for p in JOB_KINDS[args.kind].params}
    nice = worker_nice()
    url = prepare_process(nice)

    def work() -> None:
        from .api import open_store
        job = open_store(url or None).job(args.kind, args.ids, **params)
        reporter = job.reporter(sys.stdout)
        reporter.message(f"worker {os.getpid()} (nice {nice}, {os.environ['COMPASSESS_THREADS']} "
                         f"CPU thread(s)) on {job.name}")
        job.execute(progress=reporter)
    with interrupted_by_sigterm():
        return exit_code(work)


@contextlib.contextmanager
def interrupted_by_sigterm() -> Iterator[None]:
    """SIGTERM (``Job.cancel`` of a kind without a stored cancel request, or a system
    stopping) raises ``KeyboardInterrupt``, as Ctrl-C does: the job stops as on a cancel, and
    says so (a run after its micro-batch in flight, ``stop_on_signals``)."""
    def handler(signum, frame):  # noqa: ANN001
        raise KeyboardInterrupt

    with signal_handlers(handler, (signal.SIGTERM,)):
        yield


if __name__ == "__main__":
    sys.exit(main())

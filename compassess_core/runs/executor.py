"""The executor of stored runs: where a run's settings, its dataset and a loaded judge meet the
one run loop. A run's kind (``run_kinds``) plans what is missing, and ``run_loop.run_group``
computes it into a ``sink.ResultSink`` (a store reached through the API, or a notebook's
``MemorySink``): :func:`execute_runs` loads the runs' one judge, records it, plans and runs the
loop; :func:`execute_with` does so with a judge already loaded, on any sink;
:func:`execute_runs_until_stopped` runs it under signal handlers, as a command, a notebook cell
and the worker process (``python -m compassess_core.worker run``, through ``api.jobs``) do.

Information flows one way: the page or the CLI creates the run with its settings; the executor
only records what it finds out (the judge that ran it, what planning found, status, progress
and a heartbeat). Stopping: SIGTERM, Ctrl-C and the store's cancel request all stop a run after
the micro-batch in flight (a second signal stops at once); everything computed is stored and
executing it again resumes.

Rule: the engine's, as every module of ``runs``: the sink is handed in (duck-typed: ``get_run``,
``load_dataset``, ``record_judge``, ...), never opened or imported here (no ``db``, no wiring).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from typing import Any, Iterator, Protocol, Sequence, TextIO

from ..errors import CompAssessError, InputError, RunCancelled, RunInterrupted
from ..judges.servers import redact_secrets
from ..judges.speed import characters, estimate_time, shared_work, work_size
from .pacing import BatchPacer
from .run_kinds import RunJob, kind_of
from .run_loop import (LOADING_PHASE, PLANNING_PHASE, Heartbeat, Member, Progress, RunSummary,
                       run_group)
from .settings import RunSettings


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
    from ..judges import load_judge
    from ..judges.model_catalog import memory_plan
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

"""Background jobs through the API: running, tuning and explaining are the kinds of one
registry (:data:`JOB_KINDS`, a :class:`JobKind` each, as ``ranking.METHODS`` holds the ranking
methods), and a :class:`Job` (``Store.job(KIND, target, ...)``) starts, watches, cancels and
resumes any of them the same way: the app's pages, the CLI (``compassess job``) and a notebook
all call it. A job started in the background runs in the one worker entry point, ``python -m
compassess_core.worker KIND --id N ...`` (``worker.main``), which executes it with
:meth:`Job.execute`, as a command does in its own process.

Nothing new is stored for a job: a run's job writes its runs' rows, a tuning's its tuning's, an
explanation's the judge's stored reasons; each kind reads its state back from those (an
explanation, which has no row of its own, from its stored reasons and its worker's log and
process). Wiring: each kind delegates to the API's objects (``Run``, ``Tuning``) through the
:class:`~compassess_core.api.handle.StoreHandle` the job holds; this module imports neither
``store`` nor those objects' modules.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, TextIO

from ..runs import explanations
from ..errors import InputError
from ..runs.run_loop import STARTING_PHASE, WORKER_STATE_TEXT, is_active
from ..runs import executor
from ..runs.executor import ConsoleReporter, Reporter
from . import background
from .progress import _reporter
from .settings import _check_at_least
from .handle import StoreHandle

#: What a job's state says in words (a run's worker states, which every kind shares).
STATE_TEXT = {**WORKER_STATE_TEXT, "working": "working"}


@dataclass(frozen=True)
class JobParam:
    """A parameter a kind's job takes besides its target (e.g. an explanation's pair):
    ``--NAME=VALUE`` on the worker's command line, a keyword of ``Store.job``."""

    name: str
    help: str
    type: Callable[[str], Any] = str
    required: bool = True
    default: Any = None


@dataclass(frozen=True)
class JobStatus:
    """Where a job stands, read afresh from the store (:meth:`Job.status`): ``state`` one of
    ``pending`` (never started), ``working``, ``cancelling`` (asked to stop, finishing what is
    in flight), ``stale`` (marked working but its worker stopped answering), ``completed``,
    ``cancelled``, ``failed``; ``done`` of ``total`` ``unit`` (None where the kind cannot count
    yet); ``message`` the job's last words (a worker's, or an error's)."""

    kind: str
    name: str
    state: str
    done: int | None
    total: int | None
    unit: str
    message: str | None = None
    detail: Any = field(default=None, repr=False, compare=False)

    @property
    def state_text(self) -> str:
        return STATE_TEXT.get(self.state, self.state)

    @property
    def active(self) -> bool:
        """A worker is alive for the job (nobody may start another)."""
        return is_active(self.state)

    @property
    def can_resume(self) -> bool:
        """No worker is alive and the job is not complete: starting it again resumes it
        (what is stored is never done again)."""
        return self.state in ("pending", "cancelled", "failed", "stale")

    @property
    def line(self) -> str:
        """The status in one line: ``KIND NAME: STATE, DONE/TOTAL UNIT (MESSAGE)``."""
        count = ("" if self.done is None else
                 f", {self.done:,}" + ("" if self.total is None else f"/{self.total:,}")
                 + f" {self.unit}")
        said = f" ({self.message})" if self.message else ""
        return f"{self.kind} {self.name}: {self.state_text}{count}{said}"


class JobKind(Protocol):
    """One kind of background job. ``name`` is its word on the worker's command line and in
    ``Store.job``; ``params`` what it takes besides its target."""

    name: str
    description: str
    id_help: str
    params: tuple[JobParam, ...]

    def ids_of(self, store: StoreHandle, target: Any) -> tuple[int, ...]:
        """The stored ids a target names (objects, names or ids).

        Raises
        ------
        InputError
            Nothing stored of that name or id, or a target this kind cannot take.
        """

    def name_of(self, job: "Job") -> str: ...

    def log_path(self, job: "Job") -> Path: ...

    def check_startable(self, job: "Job") -> None:
        """Refuse (``InputError``) a job that may not start: a live worker, a judge server not
        configured here, a target that cannot be done. Nothing is written when it refuses
        (but the kind's own record of why, where it keeps one)."""

    def mark_starting(self, job: "Job") -> None:
        """Record that a worker is starting, so a second click sees a live job at once."""

    def started(self, job: "Job", process: subprocess.Popen) -> None: ...

    def recheck(self, job: "Job") -> None:
        """Refuse (``InputError``) in a worker process, before it executes, what a stored job
        may not do here (a stored job is not trusted: it may come from an imported store or a
        changed configuration). A command executing what its user just asked checks nothing
        more."""

    def execute(self, job: "Job", *, judge: Any, progress: bool | Reporter) -> Any: ...

    def reporter(self, job: "Job", stream: TextIO) -> Reporter: ...

    def status(self, job: "Job") -> JobStatus: ...

    def cancel(self, job: "Job") -> None: ...


def _ids(target: Any, id_of: Callable[[Any], int], *, one: str | None = None
         ) -> tuple[int, ...]:
    """The ids of ``target`` (one or a list: objects, names, ids) by ``id_of``, each once;
    ``one``: the message refusing more than one."""
    targets = list(target) if isinstance(target, (list, tuple)) else [target]
    if not targets:
        raise InputError("a job needs at least one target")
    ids = tuple(dict.fromkeys(id_of(t) for t in targets))
    if one is not None and len(ids) != 1:
        raise InputError(one)
    return ids


def _run_ids(store: StoreHandle, target: Any, *, one: str | None = None) -> tuple[int, ...]:
    return _ids(target, lambda t: int(t.id) if hasattr(t, "id") else store.get_run(t).id,
                one=one)


# --------------------------------------------------------------------------------- runs

class RunJobs:
    """Stored runs executed by one judge in one pass (``Store.execute``; one run, or one per
    aspect judged together). State, progress and cancel are the runs' own rows."""

    name = "run"
    description = "execute (or resume) stored runs, several judged together by one judge"
    id_help = "a stored run's id; several are judged together by one judge"
    params = (JobParam("chunk_size", "prompts per judge call (default 128): the scope of the "
                       "judge's prefix cache; results are stored after every micro-batch", int,
                       False),)

    def ids_of(self, store: StoreHandle, target: Any) -> tuple[int, ...]:
        return _run_ids(store, target)

    def runs(self, job: "Job") -> list:
        return [job.store.get_run(i) for i in job.ids]

    def name_of(self, job: "Job") -> str:
        return ", ".join(f"'{r.name}'" for r in self.runs(job))

    def log_path(self, job: "Job") -> Path:
        return job.store.get_run(job.ids[0]).worker_log_path

    def check_startable(self, job: "Job") -> None:
        for run in self.runs(job):  # every run checked before any starts
            run.check_startable()

    def mark_starting(self, job: "Job") -> None:
        for run_id in job.ids:
            job.store.backend.set_run_status(run_id, "running", message="worker starting",
                                             phase=STARTING_PHASE)

    def started(self, job: "Job", process: subprocess.Popen) -> None:
        pass

    def recheck(self, job: "Job") -> None:
        pass   # a run's judge server is checked when it starts (``check_startable``); a worker
        # started by hand may talk to any server its user chose, but never with another's key

    def execute(self, job: "Job", *, judge: Any, progress: bool | Reporter) -> list:
        """The runs executed together in this process (``runs.executor``: one judge, loaded
        once unless given, under signal handlers), returned refreshed: what ``Store.execute``,
        ``Run.execute``, ``compassess worker`` and the worker process all do."""
        chunk_size = job.params.get("chunk_size")
        _check_at_least("chunk_size", chunk_size, 1)
        runs = self.runs(job)
        reporter = _reporter(progress, runs[0]._kind)
        try:
            executor.execute_runs_until_stopped(job.store.backend, list(job.ids), judge=judge,
                                                reporter=reporter, chunk_prompts=chunk_size)
        finally:
            close = getattr(reporter, "close", None)
            if close is not None:
                close()
        return [r.refresh() for r in runs]

    def reporter(self, job: "Job", stream: TextIO) -> Reporter:
        kind = job.store.get_run(job.ids[0])._kind
        return ConsoleReporter(kind.unit, kind.rate_unit, stream=stream)

    def status(self, job: "Job") -> JobStatus:
        return self.status_of(self.runs(job))

    def status_of(self, runs: list, *, refresh: bool = True) -> JobStatus:
        """The status of the job of ``runs`` (``Run`` handles), read afresh unless ``refresh=False``
        (as the handles were read: a list of runs, read once)."""
        progress = [r.progress(refresh=refresh) for r in runs]
        states = [p.state for p in progress]
        # Together they are as far as the least advanced: alive while any worker is, else the
        # first of failed, stale, cancelled, pending that any run is in.
        state = next((s for s in ("cancelling", "working", "failed", "stale", "cancelled",
                                  "pending") if s in states), states[0])
        first = next((p for p in progress if p.state == state), progress[0])
        return JobStatus(self.name, ", ".join(f"'{r.name}'" for r in runs), state,
                         sum(p.done for p in progress), sum(p.total for p in progress),
                         progress[0].unit, first.message,
                         detail=progress[0] if len(progress) == 1 else progress)

    def cancel(self, job: "Job") -> None:
        for run in self.runs(job):
            run.cancel()


# ------------------------------------------------------------------------------- tunings

class TuningJob:
    """A stored tuning of the judge's instruction (``Tuning.execute``): each wording a run of
    its own. State, heartbeat and cancel are the tuning's row; done counts wordings judged."""

    name = "tuning"
    description = "execute (or resume) a stored tuning of the judge's instruction"
    id_help = "the stored tuning's id"
    params = (JobParam("threads", "CPU threads for the model (default: the process's)", int,
                       False),)

    def ids_of(self, store: StoreHandle, target: Any) -> tuple[int, ...]:
        return _ids(target, lambda t: int(t.id) if hasattr(t, "id") else store.tuning(t).id,
                    one="a tuning job works on one tuning")

    def tuning(self, job: "Job"):
        return job.store.tuning(job.ids[0])

    def name_of(self, job: "Job") -> str:
        return f"'{self.tuning(job).name}'"

    def log_path(self, job: "Job") -> Path:
        return self.tuning(job).worker_log_path

    def check_startable(self, job: "Job") -> None:
        tuning = self.tuning(job)
        # The app's allowlist of judge servers holds for a tuning as for a run: refused before
        # anything is asked of that server, and the tuning's message says why.
        tuning.refuse_unconfigured_judge()
        if tuning.state == "working":
            raise InputError(f"tuning '{tuning.name}' is already being worked on")

    def mark_starting(self, job: "Job") -> None:
        job.store.backend.set_tuning_status(job.ids[0], "running", message="worker starting")

    def started(self, job: "Job", process: subprocess.Popen) -> None:
        pass

    def recheck(self, job: "Job") -> None:
        # Checked again where it executes: a stored tuning is not trusted (it may come from an
        # imported store or a changed configuration), as in ``check_startable``.
        self.tuning(job).refuse_unconfigured_judge()

    def execute(self, job: "Job", *, judge: Any, progress: bool | Reporter):
        return self.tuning(job).execute(judge=judge, progress=progress,
                                        threads=job.params.get("threads") or None)

    def reporter(self, job: "Job", stream: TextIO) -> Reporter:
        return ConsoleReporter("comparisons", stream=stream)

    def status(self, job: "Job") -> JobStatus:
        tuning = self.tuning(job)
        state = {"running": "working"}.get(tuning.state, tuning.state)
        if state == "working" and job.store.backend.tuning_cancel_requested(tuning.id):
            state = "cancelling"
        runs = tuning.runs()
        done = sum(1 for r in runs.values() if r.info.status == "completed")
        return JobStatus(self.name, f"'{tuning.name}'", state, done, len(tuning.wordings),
                         "wordings", tuning.info.message)

    def cancel(self, job: "Job") -> None:
        self.tuning(job).cancel()


# --------------------------------------------------------------------------- explanations

class ExplanationJob:
    """The judge's reasons for a run's verdicts on one pair, both orders (``Run.explain``). It
    has no row of its own: it is complete when the reasons are stored; a live worker is found
    by the process id its starter wrote beside the log (checked against the process's command
    line), and how the last one ended by the last line of that log. Cancel stops that process
    (SIGTERM); what it stored stays, and starting it again asks only what is missing."""

    name = "explanation"
    description = "ask a run's judge for the reasons of its verdicts on one pair, and store them"
    id_help = "the stored run's id"
    params = (JobParam("context", "the context's id"),
              JobParam("first", "the candidate in position A"),
              JobParam("second", "the candidate in position B"),
              JobParam("max_tokens", "tokens the judge may write per order", int, False,
                       explanations.EXPLAIN_TOKENS))

    def ids_of(self, store: StoreHandle, target: Any) -> tuple[int, ...]:
        return _run_ids(store, target, one="an explanation job works on one run")

    def pair(self, job: "Job") -> tuple[str, str, str]:
        return job.params["context"], job.params["first"], job.params["second"]

    def name_of(self, job: "Job") -> str:
        context, first, second = self.pair(job)
        return (f"run '{job.store.get_run(job.ids[0]).name}', '{first}' vs '{second}' in "
                f"context '{context}'")

    def log_path(self, job: "Job") -> Path:
        return job.store.get_run(job.ids[0]).explain_log_path(*self.pair(job))

    def pid_path(self, job: "Job") -> Path:
        return self.log_path(job).with_suffix(".pid")

    def found(self, job: "Job") -> explanations.Explanation:
        return job.store.get_run(job.ids[0]).explanation(
            *self.pair(job), max_tokens=job.params["max_tokens"])

    def check_startable(self, job: "Job") -> None:
        self.found(job)  # the pair was compared, the run has a judge, max_tokens in bounds
        if self.process(job) is not None:
            raise InputError(f"a worker is already asking for the reasons on {self.name_of(job)}")

    def mark_starting(self, job: "Job") -> None:
        pass

    def started(self, job: "Job", process: subprocess.Popen) -> None:
        path = self.pid_path(job)
        path.write_text(str(process.pid))
        os.chmod(path, 0o600)

    def process(self, job: "Job") -> int | None:
        """The live worker process of this job (its id), None when there is none: the id its
        starter wrote, if a process of that id runs this very job (its command line)."""
        try:
            pid = int(self.pid_path(job).read_text().strip())
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except (OSError, ValueError):
            return None
        expected = [background.WORKER_MODULE, *background.job_argv(self.name, job.ids, job.params)]
        return pid if all(a in argv for a in expected) else None

    def recheck(self, job: "Job") -> None:
        pass   # as a run's: the run's judge, whose server its user chose

    def execute(self, job: "Job", *, judge: Any, progress: bool | Reporter):
        run = job.store.get_run(job.ids[0])
        say = progress.message if not isinstance(progress, bool) else (
            (lambda text: print(text, flush=True)) if progress else (lambda text: None))
        say(f"asking the judge of {self.name_of(job)} for its reasons")
        done = run.explain(*self.pair(job), max_tokens=job.params["max_tokens"], judge=judge)
        say(f"stored: {sum(o.text is not None for o in done.orders)} order(s)")
        return done

    def reporter(self, job: "Job", stream: TextIO) -> Reporter:
        return ConsoleReporter("orders", stream=stream)

    def status(self, job: "Job") -> JobStatus:
        found = self.found(job)
        done = sum(o.text is not None for o in found.orders)
        message = None
        if found.complete:
            state = "completed"
        elif self.process(job) is not None:
            state = "working"
        else:
            last = background.log_tail(self.log_path(job), 1)
            state = ("pending" if not last else "failed" if last.startswith(background.FAILED)
                     else "cancelled" if last.startswith(background.STOPPED) else "stale")
            message = last or None
        return JobStatus(self.name, self.name_of(job), state, done, len(found.orders), "orders",
                         message, detail=found)

    def cancel(self, job: "Job") -> None:
        pid = self.process(job)
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        # Said in its log too: a worker stopped before it could say so itself (still
        # starting) leaves this line as its last word.
        with contextlib.suppress(OSError), open(self.log_path(job), "a", encoding="utf-8") as log:
            log.write(f"{background.STOPPED}: cancelled on request (process {pid}); start it again "
                      "to resume\n")


#: The kinds of background job, by name: the registry the worker's entry point, ``Store.job``
#: and ``compassess job`` read.
_RUNS = RunJobs()
JOB_KINDS: dict[str, JobKind] = {k.name: k for k in (_RUNS, TuningJob(), ExplanationJob())}


def listed_run_status(run) -> JobStatus:
    """What ``store.job("run", run).status()`` says of a listed run's own job, from the run as
    it was listed (``Store.list_runs``), without reading it again: what a list of runs shows
    (``compassess runs``); ``detail`` is its ``RunProgress``."""
    return _RUNS.status_of([run], refresh=False)


def get_job_kind(name: str) -> JobKind:
    """The job kind called ``name``.

    Raises
    ------
    InputError
        No such kind (the message lists them).
    """
    try:
        return JOB_KINDS[name]
    except KeyError:
        raise InputError(f"unknown job kind '{name}': one of {', '.join(JOB_KINDS)}") from None


class Job:
    """One background job of a kind of :data:`JOB_KINDS` on a stored target: what the app, the
    CLI and a notebook start (:meth:`start`, in a worker process of its own), execute here
    (:meth:`execute`), watch (:meth:`status`, :meth:`log`), cancel (:meth:`cancel`) and resume
    (:meth:`start` or :meth:`execute` again: what is stored is never done again). Get one from
    ``Store.job(KIND, target, **params)``."""

    def __init__(self, store: StoreHandle, kind: str, target: Any,
                 params: Mapping[str, Any] | None = None) -> None:
        self.store = store
        self.kind = get_job_kind(kind)
        self.ids = self.kind.ids_of(store, target)
        given = dict(params or {})
        unknown = sorted(set(given) - {p.name for p in self.kind.params})
        if unknown:
            raise InputError(f"a {self.kind.name} job takes no {', '.join(unknown)} (it takes: "
                             f"{', '.join(p.name for p in self.kind.params) or 'nothing'})")
        self.params: dict[str, Any] = {}
        for p in self.kind.params:
            value = p.default if given.get(p.name) is None else given[p.name]
            if value is None and p.required:
                raise InputError(f"a {self.kind.name} job needs {p.name} ({p.help})")
            self.params[p.name] = None if value is None else p.type(value)

    def __repr__(self) -> str:
        return f"<Job {self.kind.name} {list(self.ids)}>"

    @property
    def name(self) -> str:
        """What the job works on, in words (``run 'x'``, ``tuning 'y'``, ...)."""
        return f"{self.kind.name} {self.kind.name_of(self)}"

    @property
    def log_path(self) -> Path:
        """Where its worker processes write (``$COMPASSESS_HOME/logs/``, one file per job)."""
        return self.kind.log_path(self)

    def start(self, log_path: str | os.PathLike | None = None, *,
              cwd: str | os.PathLike | None = None) -> subprocess.Popen:
        """Start (or resume) the job in a worker process of its own (``python -m
        compassess_core.worker KIND --id N ...``: lower priority, outliving this one), as the
        app does; it writes to the store and its output to ``log_path`` (default
        :attr:`log_path`).

        Raises
        ------
        InputError
            An in-memory store, which no other process can reach; a live worker on the job;
            a judge server that is not configured here; what the kind cannot do (nothing
            starts).
        """
        if self.store.in_memory:
            raise InputError("a worker process cannot reach an in-memory store: open a file or "
                             "a database server with open_store(...) to run in the background")
        self.kind.check_startable(self)
        self.kind.mark_starting(self)
        process = background.start_job(self.kind.name, self.ids, self.params, self.store.url,
                                   Path(log_path or self.log_path), cwd=cwd)
        self.kind.started(self, process)
        return process

    def resume(self, log_path: str | os.PathLike | None = None, *,
               cwd: str | os.PathLike | None = None) -> subprocess.Popen:
        """:meth:`start` a job that can be resumed (:attr:`JobStatus.can_resume`).

        Raises
        ------
        InputError
            The job is complete or has a live worker, or what :meth:`start` raises.
        """
        status = self.status()
        if not status.can_resume:
            raise InputError(f"{self.name} is {status.state_text}: nothing to resume")
        return self.start(log_path, cwd=cwd)

    def execute(self, *, judge: Any = None, progress: bool | Reporter = True) -> Any:
        """Execute (or resume) the job in this process (what the worker process does, and a
        command): ``judge`` one already loaded (else the target's own is loaded); returns what
        the kind's object returns (the runs, the tuning's result, the reasons).

        Raises
        ------
        RunInterrupted, RunCancelled
            Stopped (everything done is stored; executing it again resumes it).
        InputError
            What the kind's object refuses.
        """
        return self.kind.execute(self, judge=judge, progress=progress)

    def recheck(self) -> None:
        """What a worker process checks before it executes the stored job (``JobKind.recheck``).

        Raises
        ------
        InputError
            The job may not be done here (e.g. a tuning's judge server is not configured).
        """
        self.kind.recheck(self)

    def status(self) -> JobStatus:
        """Where the job stands, read from the store afresh (:class:`JobStatus`)."""
        return self.kind.status(self)

    def cancel(self) -> None:
        """Ask the job's worker to stop (a run after its micro-batch in flight); what it did is
        kept, and starting it again resumes it."""
        self.kind.cancel(self)

    def log(self, n_lines: int = 12, log_path: str | os.PathLike | None = None) -> str:
        """The last ``n_lines`` lines its worker wrote ("" before any)."""
        return background.log_tail(Path(log_path or self.log_path), max(int(n_lines), 1))

    def reporter(self, stream: TextIO | None = None) -> Reporter:
        """The console reporter of this kind's progress (on ``stream``, default stderr)."""
        return self.kind.reporter(self, stream or sys.stderr)


__all__ = ["JOB_KINDS", "Job", "JobKind", "JobParam", "JobStatus", "get_job_kind",
           "listed_run_status"]

"""The one entry point of every background job: ``python -m compassess_core.worker KIND --id N
[...]`` (:func:`main`).

A job is one of the kinds of one registry (``api.jobs.JOB_KINDS``, as ``ranking.METHODS``):
``run`` (stored runs, several judged together), ``tuning`` (a tuning of the judge's
instruction) and ``explanation`` (the judge's reasons for its verdicts on one pair). The app,
the CLI and the API start, watch, cancel and resume every kind the same way
(``api.Store.job(KIND, target).start()``, ``.status()``, ``.cancel()``, ``.resume()``), and a
job started in the background runs here: a process of its own in a session of its own (it
outlives the page that started it; ``api.background.start_job`` starts it), at lower priority,
with one CPU thread fewer than the cores, its output in a log only its owner may read. This
module only parses the job's command line, lowers its priority, opens the store its
environment names and executes the job with ``Job.execute``; what a job does is its kind's
(a run's: ``runs.executor``).

SIGTERM stops a job as Ctrl-C does (a run after the micro-batch in flight); everything done is
stored and starting it again resumes. The database URL reaches a worker process through its
environment, never its command line (it may hold a password). Arrows: this module imports the
API (``api.jobs``, ``api.background``), never the reverse.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from .api.background import DATABASE_URL_ENV, FAILED, STOPPED, WORKER_MODULE
from .errors import InputError, RunCancelled, RunInterrupted
from .judges.servers import redact_secrets
from .runs.executor import signal_handlers

EXIT_OK, EXIT_FAILURE, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
#: Niceness of a worker process started by the app (COMPASSESS_WORKER_NICE overrides): the model
#: then yields the CPU to the web server, whose pages took 15-35 s to load during a run otherwise.
WORKER_NICE = 10

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
                           type=param.type, required=param.required, help=param.help,
                           metavar="N" if param.type is int else "ID")
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
        job.recheck()
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


#: Names this module held before the run executor moved to ``runs.executor`` and the starting
#: of worker processes to ``api.background``: still importable from here (looked up on use), so
#: a script or notebook written against the older layout keeps working.
_MOVED = {**dict.fromkeys(
    ("Reporter", "ConsoleReporter", "stop_on_signals", "load_run_judge", "largest_batch_size",
     "judge_fields", "check_one_judge", "execute", "execute_group", "TokenCounter", "work_notes",
     "work_notes_of", "execute_with", "execute_group_with", "run_job", "execute_run",
     "execute_runs", "completed_summary", "summary_line", "stopped_line",
     "execute_until_stopped", "execute_runs_until_stopped"), "compassess_core.runs.executor"),
    **dict.fromkeys(("worker_log_path", "log_tail", "job_argv", "start_job", "start_worker"),
                    "compassess_core.api.background")}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        import importlib
        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    sys.exit(main())

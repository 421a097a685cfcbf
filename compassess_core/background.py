"""Work the app hands to a process of its own: a run's worker (``worker.start_worker``), a tuning
of the judge's instruction (``python -m compassess_core.tuning_worker``) and the judge's reasons
for a verdict (``python -m compassess_core.explain_worker``), all started by :func:`start`.
The process lives in a session of its own (it outlives the page that started it), at lower
priority, with one CPU thread fewer than the cores, and finds its database through its
environment, never its command line (the URL may hold a password).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Sequence

from .errors import InputError, RunCancelled, RunInterrupted
from .worker import (DATABASE_URL_ENV, EXIT_FAILURE, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK,
                     lower_priority, start_process, worker_nice, worker_threads)


def start(module: str, args: Sequence[str], database_url: str, log_path: Path, *,
          cwd: str | os.PathLike | None = None) -> subprocess.Popen:
    """Start ``python -m module args...`` in its own session, writing to ``log_path``
    (``worker.start_process``, as a run's worker starts)."""
    return start_process(module, args, database_url, log_path, cwd=cwd)


def prepare_process() -> str:
    """What a background process does first: lower its priority (the web server's pages come
    first) and choose its CPU threads; returns its database URL (from the environment)."""
    lower_priority(worker_nice())
    os.environ.setdefault("COMPASSESS_THREADS", str(worker_threads()))
    return os.environ.get(DATABASE_URL_ENV, "")


def exit_code(work) -> int:
    """Do a background process's ``work`` (a callable) and say how it ended as the CLI's exit
    code, the reason as the last line of its log (no traceback): 0 done, 2 bad input, 130
    stopped on request (everything done is stored), 1 any other failure."""
    try:
        work()
        return EXIT_OK
    except (RunCancelled, RunInterrupted):
        print("stopped: everything judged is stored; start it again to resume", flush=True)
        return EXIT_INTERRUPTED
    except InputError as e:
        print(f"error: {e}", flush=True)
        return EXIT_INPUT
    except Exception as e:  # noqa: BLE001 - the log shows the reason, not a traceback
        print(f"error: {type(e).__name__}: {e}", flush=True)
        return EXIT_FAILURE

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
import sys
import threading
from pathlib import Path
from typing import Sequence

from .errors import InputError, RunCancelled, RunInterrupted
from .worker import (DATABASE_URL_ENV, EXIT_FAILURE, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK,
                     lower_priority, worker_nice, worker_threads)


def start(module: str, args: Sequence[str], database_url: str, log_path: Path, *,
          cwd: str | os.PathLike | None = None) -> subprocess.Popen:
    """Start ``python -m module args...`` in its own session, writing to ``log_path`` (a file
    only its owner may read: logs name datasets, models and servers). Arguments that carry a
    user's text are given as ``--name=value``, so a value starting with ``-`` stays a value."""
    log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(log_path.parent, 0o700)
    env = dict(os.environ)
    env[DATABASE_URL_ENV] = database_url
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", module, *args], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=str(cwd or root), env=env)
    # Reaped as soon as it ends, so a long-lived starter keeps no zombie.
    threading.Thread(target=proc.wait, name=f"reap-{module}", daemon=True).start()
    return proc


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

"""A job's worker process as its starter sees it: how it is started (:func:`start_job`, ``python
-m compassess_core.worker KIND --id N ...``: :func:`job_argv`), where it writes
(:func:`worker_log_path`) and what its log last said (:func:`log_tail`; its last line begins
with :data:`STOPPED` or :data:`FAILED` when it ended so). ``api.jobs`` starts and reads jobs
through it; the worker's entry point (``compassess_core.worker``) imports it for the same words,
so the two agree. Wiring: imports no other module of the API, and never the worker (the worker
imports the API, not the reverse).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Mapping, Sequence

#: Where a worker process finds its database (never on its command line).
DATABASE_URL_ENV = "COMPASSESS_DATABASE_URL"
#: The one entry point of every background job (``python -m compassess_core.worker KIND ...``).
WORKER_MODULE = "compassess_core.worker"
#: How a worker's log says it ended, first on its last line (``api.jobs`` reads it back).
STOPPED, FAILED = "stopped", "error"


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
    root = str(Path(__file__).resolve().parents[2])   # the checkout holding compassess_core
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

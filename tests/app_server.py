"""The real app in a process of its own, as the browser and HTTP tests start it.

:class:`AppServer` is ``streamlit run app.py`` on a loopback port against a store, its home and
log in a folder of the test's; it is ready once its health endpoint answers (a wait for that
state, bounded only to end a failing wait), and :meth:`AppServer.stop` ends its whole process
group (the app and any worker it started). :func:`app_server` is the same as a ``with`` block.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A free loopback port, the kernel's choice."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AppServer:
    """``streamlit run app.py`` on ``port`` (a free one by default) against ``db_url``.

    ``env`` adds to the test process's environment, ``unset`` removes names from it (e.g.
    ``COMPASSESS_ALLOW_ANONYMOUS``, so that a server's mode is the one the test sets up), and
    ``secrets_file`` is the server's ``secrets.toml`` (sign-in settings). ``--secrets.files``
    is always given, so that a developer's own ``~/.streamlit/secrets.toml`` never reaches a
    test: without a file of the test's it names one that does not exist.
    """

    def __init__(self, folder: Path, db_url: str, *, port: int | None = None,
                 env: Mapping[str, str] | None = None, unset: tuple[str, ...] = (),
                 secrets_file: Path | None = None, start_timeout_s: float = 90) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = folder / f"streamlit-{self.port}.log"
        full_env = dict(os.environ, COMPASSESS_DATABASE_URL=db_url,
                        COMPASSESS_HOME=str(folder / "home"), PYTHONPATH=str(ROOT), **(env or {}))
        for name in unset:
            full_env.pop(name, None)
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
                 "--server.port", str(self.port), "--server.address", "127.0.0.1",
                 "--server.headless", "true", "--browser.gatherUsageStats", "false",
                 "--server.fileWatcherType", "none",
                 "--secrets.files", str(secrets_file or folder / "no-secrets.toml")],
                cwd=ROOT, env=full_env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
        try:
            self._wait_healthy(start_timeout_s)
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2).read() == b"ok":
                    return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"streamlit did not start on {self.url}: "
                                     + self.log.read_text(errors="replace")[-2000:])
            time.sleep(0.1)   # the next look at the health endpoint

    def stop(self) -> None:
        """End the server's process group: SIGTERM, then SIGKILL after 10 s."""
        with contextlib.suppress(ProcessLookupError):   # a worker may outlive the app
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@contextlib.contextmanager
def app_server(folder: Path, db_url: str, **options) -> Iterator[AppServer]:
    """:class:`AppServer` for the ``with`` block, stopped at its end."""
    server = AppServer(folder, db_url, **options)
    try:
        yield server
    finally:
        server.stop()

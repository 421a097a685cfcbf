"""The server's CPU time per anonymous rerun of the sign-in page: what a visitor without a
signed-in person costs a team server (docs/deploy.md's threat model). A team server
(``streamlit run app.py`` with sign-in configured, on loopback) gets anonymous WebSocket sessions
that each ask for reruns as a browser on the sign-in page does (``rerun_script``, within the
guard's rate for such connections), one after the other, each waited for until its script
finished. The server process's CPU time (user + system, all threads) is read before and after,
less what it spends idle over the same time (measured first, with the sessions open).

Prints the CPU milliseconds per rerun, the same for a signed-in admin's Home page, and for a
bare Streamlit script (a title and a button, no app and no guard) served the same way: the
floor any Streamlit rerun costs on this machine, the baseline of the same run. About 2-4 minutes:

    PYTHONPATH=. .venv/bin/python benchmarks/sign_in_cost.py
"""

from __future__ import annotations

import secrets
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from tests.people.test_http_guard import (ADMIN, Server, Session, free_port, secrets_toml,  # noqa: E402
                             sign_in_cookie)

#: Sessions, and reruns each (under the guard's burst for a connection without a role).
SESSIONS, RERUNS = 4, 15
#: Seconds the server's idle CPU is measured over.
IDLE_S = 10.0


def rerun_until_finished(session: Session) -> None:
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    msg = BackMsg()
    msg.rerun_script.query_string = ""
    session.ws.send(msg.SerializeToString())
    while True:
        out = ForwardMsg()
        out.ParseFromString(session.ws.recv(timeout=120))
        if out.WhichOneof("type") == "script_finished":
            return


def cpu_ms_per_rerun(server: Server, cookie: str = "") -> tuple[float, float]:
    """CPU milliseconds per rerun (the server's idle CPU over the same time taken off), and the
    idle CPU milliseconds per second."""
    import psutil
    sessions = [Session(server, cookie) for _ in range(SESSIONS)]
    for session in sessions:  # the first run of each (Session's) is not counted
        rerun_until_finished(session)
    process = psutil.Process(server.proc.pid)
    # What the server spends idle (its own timers, the open sessions' heartbeats), per second.
    before, start = sum(process.cpu_times()[:2]), time.monotonic()
    time.sleep(IDLE_S)
    idle_per_s = (sum(process.cpu_times()[:2]) - before) / (time.monotonic() - start)
    before, start = sum(process.cpu_times()[:2]), time.monotonic()
    for session in sessions:
        for _ in range(RERUNS):
            rerun_until_finished(session)
    spent = sum(process.cpu_times()[:2]) - before - idle_per_s * (time.monotonic() - start)
    for session in sessions:
        session.close()
    return 1000 * spent / (SESSIONS * RERUNS), 1000 * idle_per_s


#: The floor: a bare Streamlit script (a title and a button), served the same way.
BARE_SCRIPT = "import streamlit as st\nst.title('CompAssess')\nst.button('Sign in')\n"


class BareServer(Server):
    """``streamlit run`` of :data:`BARE_SCRIPT` on a free loopback port (no app, no guard)."""

    def __init__(self, folder: Path, port: int) -> None:
        import subprocess

        import httpx
        script = folder / "bare.py"
        script.write_text(BARE_SCRIPT)
        self.port, self.url = port, f"http://127.0.0.1:{port}"
        self.log = folder / "bare.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", str(script), "--server.port",
                 str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
                 "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                cwd=folder, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{self.url}/_stcore/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and self.proc.poll() is None, self.log.read_text()
            time.sleep(0.3)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db_url = f"sqlite:///{folder / 'compassess.db'}"
        port = free_port()
        cookie_secret = secrets.token_hex(32)
        secrets_file = folder / "secrets.toml"
        secrets_file.write_text(secrets_toml(port, cookie_secret))
        server = Server(folder, db_url, secrets_file, port)
        try:
            anonymous = cpu_ms_per_rerun(server)
            admin = cpu_ms_per_rerun(server, sign_in_cookie(ADMIN, cookie_secret, port))
        finally:
            server.stop()
        bare_server = BareServer(folder, free_port())
        try:
            bare = cpu_ms_per_rerun(bare_server)
        finally:
            bare_server.stop()
    print(f"server CPU per rerun: a bare Streamlit script (the floor) {bare[0]:.1f} ms")
    print(f"server CPU per rerun: sign-in page (anonymous) {anonymous[0]:.1f} ms; admin's Home "
          f"(baseline, empty store) {admin[0]:.1f} ms; {SESSIONS} sessions x {RERUNS} reruns "
          f"each; idle CPU taken off: {anonymous[1]:.1f} and {admin[1]:.1f} ms a second")


if __name__ == "__main__":
    main()

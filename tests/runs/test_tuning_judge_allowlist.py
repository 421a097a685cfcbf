"""A stored tuning whose judge is a server not configured for this deployment is refused, as a
run is (``Run.judge_problem``): by ``Tuning.start_worker`` (the Tune page's Start and Resume)
and by the worker process itself (its tuning job), before any request reaches that server. Real SQLite
store, the real worker process; the "server" is a listening socket that counts connections."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a worker process of its own

from compassess_core import api
from compassess_core.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "assets" / "sample_summeval.csv"


@pytest.fixture
def listener():
    """A port that accepts connections (and is never answered): any contact is counted."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    s.settimeout(0.5)
    yield s
    s.close()


def contacted(listener: socket.socket) -> bool:
    try:
        conn, _ = listener.accept()
    except (socket.timeout, TimeoutError):
        return False
    conn.close()
    return True


def test_a_tuning_on_an_unconfigured_server_is_refused_before_any_request(db_url, listener,
                                                                          monkeypatch, tmp_path):
    for var in ("COMPASSESS_OPENAI_BASE_URL", "COMPASSESS_OPENAI_API_KEY", "OPENAI_BASE_URL",
                "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    store = api.open_store(db_url)
    tuning = store.create_tuning(SAMPLE, aspect="coherence", name="elsewhere", contexts=1,
                                 rounds=0, model=f"openai:{url}#judge")
    assert tuning.judge_problem is not None and "not configured" in tuning.judge_problem
    with pytest.raises(InputError, match="not configured"):
        tuning.start_worker()
    again = store.tuning("elsewhere")
    assert again.info.message == tuning.judge_problem and again.state != "working"
    # The worker process, started by hand on the stored tuning, refuses it too.
    env = dict(os.environ, COMPASSESS_DATABASE_URL=db_url, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "compassess_core.worker", "tuning",
                           f"--id={tuning.id}"], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "not configured" in done.stdout + done.stderr
    assert not contacted(listener)
    # Configured, the same tuning may start (its check passes; nothing is started here).
    monkeypatch.setenv("COMPASSESS_OPENAI_BASE_URL", url)
    assert store.tuning("elsewhere").judge_problem is None
    store.close()

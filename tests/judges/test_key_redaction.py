"""A judge server that echoes the API key in its errors: the key is never shown, stored or
logged (``servers.redact_secrets``, applied by the served judge's HTTP client to every message
from the server).

The server here is FAKE (``EchoingServer``: it lists one model and answers every completion
with an error that quotes the request's ``Authorization`` header and the key, as some gateways
do); the client, the run loop, the store and the command line are the real ones.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from compassess_core.judges.servers import REDACTED, redact_secrets

KEY = "cpk-9f8e7d6c5b4a39281706f5e4d3c2b1a0"


class EchoingServer:
    """FAKE OpenAI-protocol server: ``/v1/models`` lists ``fake``; every POST answers
    ``status`` with an error message that repeats the request's credentials."""

    def __init__(self, status: int = 401) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _send(self, code: int, payload: dict) -> None:
                body = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                auth = self.headers.get("Authorization", "")
                key = auth.split(" ", 1)[-1]
                self._send(outer.status, {"error": {"message": (
                    f"Incorrect API key provided: {key}. Header was '{auth}'; "
                    "another looks like sk-proj-AbCdEf0123456789xyz.")}})

        self.status = status
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def echoing(monkeypatch):
    server = EchoingServer()
    monkeypatch.setenv("COMPASSESS_OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("COMPASSESS_OPENAI_API_KEY", KEY)
    yield server
    server.stop()


def test_redact_secrets_takes_out_keys_bearer_tokens_and_sk_keys():
    env = {"COMPASSESS_OPENAI_API_KEY": KEY, "OPENAI_API_KEY": "sk-abcdef0123456789"}
    text = (f"bad key {KEY}; Authorization: Bearer abc.def-123; url ?auth=Bearer%20zzzz9999; "
            "sk-abcdef0123456789 and sk-proj-XYZ_0123456789")
    out = redact_secrets(text, environ=env)
    for secret in (KEY, "abc.def-123", "zzzz9999", "sk-abcdef0123456789", "XYZ_0123456789"):
        assert secret not in out, out
    assert out.count(REDACTED) >= 5
    # Words that only resemble a key stay (a short key is not searched for).
    assert redact_secrets("the task is on a desk", environ={"OPENAI_API_KEY": "task"}) == \
        "the task is on a desk"


@pytest.mark.parametrize("status", [401, 500])
def test_the_served_judge_never_repeats_the_key_of_an_error(echoing, status):
    from compassess_core.errors import CompAssessError
    from compassess_core.judges.openai_judge import load_openai_judge
    from compassess_core.types import ComparisonPrompt

    echoing.status = status
    judge = load_openai_judge(f"openai:{echoing.base_url}#fake?max_retries=1&samples=1")
    with pytest.raises(CompAssessError) as failed:
        judge.judge([ComparisonPrompt("Which is better? A: x B: y", "Answer:")])
    judge.close()
    message = str(failed.value)
    assert "Incorrect API key provided" in message  # the server's words are kept...
    assert KEY not in message and "sk-proj-AbCdEf" not in message  # ...without the key
    assert REDACTED in message


def test_a_run_that_fails_on_it_stores_and_prints_no_key(echoing, db_url, monkeypatch, capsys,
                                                        tmp_path, caplog):
    from compassess_core.cli import main
    from db.store import Store

    monkeypatch.setenv("COMPASSESS_DATABASE_URL", db_url)
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))
    code = main(["run", "assets/sample_summeval.csv", "--aspect", "coherence", "--contexts",
                 "1", "--run", "echo", "--model",
                 f"openai:{echoing.base_url}#fake?max_retries=0&samples=1"])
    out = capsys.readouterr()
    assert code != 0
    [run] = [r for r in Store(db_url).list_runs() if r.name == "echo"]
    shown = "\n".join([out.out, out.err, run.message or "", caplog.text])
    assert "Incorrect API key provided" in shown
    assert KEY not in shown and "sk-proj-AbCdEf" not in shown, shown


def test_the_store_keeps_no_key_whoever_writes_the_message(db_url, monkeypatch):
    """Redaction at the write, not only at the judge: an exception from anywhere (a proxy, a
    library, a loader) that the worker stores as a run's message, a run's status written
    directly, and a tuning's message all lose the configured key, ``Bearer ...`` and
    ``sk-...``."""
    from compassess_core.data.candidates import load_candidates
    from compassess_core.runs.executor import _mark_failed
    from db.store import Store

    monkeypatch.setenv("COMPASSESS_OPENAI_API_KEY", KEY)
    store = Store(db_url)
    dataset_id = store.save_dataset(load_candidates("assets/sample_summeval.csv"))
    run_id = store.create_run("leaky", dataset_id, {"aspect": "coherence"})
    said = f"proxy said: key {KEY}, Authorization: Bearer abc.def-123, sk-proj-AbCdEf0123456789"
    _mark_failed(store, run_id, RuntimeError(said))
    message = store.get_run(run_id).message
    assert message.startswith("RuntimeError: proxy said") and REDACTED in message
    store.set_run_status(run_id, "failed", message=said)
    tuning_id = store.create_tuning("leaky-tune", dataset_id, "coherence", {})
    store.set_tuning_status(tuning_id, "failed", message=said)
    for stored in (store.get_run(run_id).message, store.get_tuning(tuning_id).message):
        assert KEY not in stored and "abc.def-123" not in stored and "AbCdEf" not in stored, \
            stored

"""The served judge's API key is bound to its configured base URL: it never reaches another URL,
from the CLI, from the app (its Run page and the worker it starts) or from a stored run.

Two real HTTP servers on 127.0.0.1: the configured judge server (``tests/openai_server.py`` with
a FAKE backend that answers without a model, requiring the key) and a listener that records every
request it receives, standing for a URL of a visitor's choosing. The listener answers like an
OpenAI server without auth, so a client that reached it would go on talking to it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from compassess_core.cli import main
from compassess_core.errors import InputError
from compassess_core.judges import servers
from compassess_core.judges.openai_judge import load_openai_judge
from tests.openai_server import FakeBackend, OpenAIServer
from tests.app.test_app_pages import APP, app_env, seed_run, settings_for, texts  # noqa: F401 - app_env is a fixture
from tests.app.test_app_run import wait_for

KEY = "sk-bound-KEY-must-not-leave-7c1d"


class RecordingListener:
    """An HTTP server on 127.0.0.1 that records method, path and headers of every request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                listener.requests.append((self.command, self.path, dict(self.headers.items())))
                body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            do_GET = do_POST = _answer

            def log_message(self, *args) -> None:  # quiet
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def leaked(self) -> list[tuple[str, str]]:
        """Requests that carried the key anywhere in their headers."""
        return [(m, p) for m, p, h in self.requests if any(KEY in v for v in h.values())]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def listener():
    srv = RecordingListener()
    yield srv
    srv.close()


@pytest.fixture
def bound_server(monkeypatch):
    with OpenAIServer(FakeBackend(0.0), model_name="fake", api_key=KEY) as srv:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
        monkeypatch.setenv("COMPASSESS_OPENAI_API_KEY", KEY)
        monkeypatch.setenv("COMPASSESS_OPENAI_BASE_URL", srv.base_url)
        yield srv


# ------------------------------------------------------------------------------ the binding itself

def test_a_key_belongs_to_exactly_its_base_url():
    env = {"COMPASSESS_OPENAI_API_KEY": KEY, "COMPASSESS_OPENAI_BASE_URL": "http://Judge:80/v1/"}
    assert servers.api_key_for("http://judge/v1", env) == KEY  # one server, two spellings
    for other in ("http://judge/v2", "http://judge:8000/v1", "https://judge/v1",
                  "http://judge.evil.example/v1", "http://evil.example/v1", "http://judge/v1/x"):
        assert servers.api_key_for(other, env) is None, other
    # A key without its base URL is bound to nothing; OpenAI's own key defaults to OpenAI's URL.
    assert servers.api_key_for("http://judge/v1", {"COMPASSESS_OPENAI_API_KEY": KEY}) is None
    assert servers.api_key_for("https://api.openai.com/v1", {"OPENAI_API_KEY": KEY}) == KEY
    assert servers.api_key_for("http://judge/v1", {"OPENAI_API_KEY": KEY}) is None
    [only] = servers.configured_servers(env)
    assert only.base_url == "http://judge/v1" and only.has_key and KEY not in repr(only)
    with pytest.raises(InputError, match="not configured for this app"):
        servers.check_configured("http://127.0.0.1:9/v1", env)
    assert "bound to nothing" in servers.unsent_key_note("http://x/v1",
                                                          {"COMPASSESS_OPENAI_API_KEY": KEY})


def test_served_model_names_cannot_carry_options():
    assert servers.model_name_problem("Qwen/Qwen2.5-7B-Instruct") is None
    assert servers.model_name_problem("qwen2.5:7b") is None
    for bad in ("m?tokenizer=evil/x", "m#x", "a b", "", "-m", "x" * 201):
        assert servers.model_name_problem(bad), bad


# ------------------------------------------------------------------------------ CLI

def test_cli_sends_the_key_to_its_server_only(bound_server, listener, tmp_path, tiny_dataset,
                                              capsys):
    rows = [dict(context_id=c.context_id, context=c.text, candidate_id=k.candidate_id, text=k.text)
            for c in tiny_dataset.contexts for k in c.candidates]
    data = tmp_path / "tiny.csv"
    pd.DataFrame(rows).to_csv(data, index=False)
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    common = ["--aspect", "coherence", "--contexts", "1", "--batch-size", "2", "--db", db]
    # The configured server gets the key (it refuses requests without it).
    assert main(["run", str(data), "--model", f"openai:{bound_server.base_url}#fake",
                 "--run", "bound", *common]) == 0, capsys.readouterr().err
    assert bound_server.posts > 0
    # Another URL gets the requests the user asked for, but never the key.
    main(["run", str(data), "--model", f"openai:{listener.base_url}#m?max_retries=0",
          "--run", "elsewhere", *common])
    assert listener.requests, "the listener should have been asked (without the key)"
    assert listener.leaked() == []
    assert all("Authorization" not in h for _, _, h in listener.requests)


def test_judge_loader_never_attaches_the_key_elsewhere(bound_server, listener):
    for spec in (f"openai:{listener.base_url}#m", f"openai-completions:{listener.base_url}/#m"):
        judge = load_openai_judge(spec, max_retries=0)
        judge.close()
    assert len(listener.requests) == 2 and listener.leaked() == []


# ------------------------------------------------------------------------------ the app

def test_app_offers_only_configured_servers_and_refuses_any_other(app_env, bound_server, listener,
                                                                  tmp_path, monkeypatch):
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))
    store, dataset_id, _ = seed_run(app_env)
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("pages/run.py").run()
    at.radio[[r.label for r in at.radio].index("Model")].set_value(
        "served (OpenAI-compatible API)").run()
    served = at.selectbox(key="served_url_1")
    assert served.value == bound_server.base_url
    assert served.options == [f"{bound_server.base_url} (API key bound to it)"]
    assert not [t for t in at.text_input if "URL" in t.label]  # nothing to type a URL into
    at.text_input(key="served_name_1").set_value("fake").run()
    at.number_input(key="n_contexts_1").set_value(1).run()
    [name_box] = [t for t in at.text_input if t.label == "Run name"]
    name_box.set_value("served-from-the-app").run()
    at.button[[b.label for b in at.button].index("Start")].click().run()
    assert not at.exception, at.exception
    run = wait_for(store, "served-from-the-app", {"completed", "failed"}, timeout_s=120.0)
    assert run.status == "completed", run.message
    assert bound_server.posts > 0  # the worker the app started used the key on its own server

    # A stored run pointing elsewhere (written by anyone with the database) is refused by the
    # app before a single request, whether started or resumed.
    settings = settings_for("sample_summeval", contexts=1)
    crafted = settings.to_dict() | {"model": f"openai:{listener.base_url}#m"}
    store.create_run("crafted", dataset_id, crafted)
    at.run()
    at.selectbox[[s.label for s in at.selectbox].index("Watch run")].set_value(
        store.get_run("crafted").id).run()
    at.button(key=f"resume_{store.get_run('crafted').id}").click().run()
    assert not at.exception, at.exception
    assert "not configured for this app" in texts(at.error)
    time.sleep(1.0)
    assert listener.requests == [] and store.get_run("crafted").status == "pending"


def test_a_worker_resuming_a_run_elsewhere_sends_no_key(bound_server, listener, store,
                                                        tiny_dataset, tmp_path):
    """The worker process (as the app starts it) on a run whose URL is not the key's server:
    it may talk to that URL (a CLI user chose it), but never with the key."""
    from compassess_core.api.background import start_worker

    dataset_id = store.save_dataset(tiny_dataset)
    settings = settings_for(tiny_dataset.name, contexts=1)
    run_id = store.create_run("elsewhere", dataset_id,
                              settings.to_dict()
                              | {"model": f"openai:{listener.base_url}#m?max_retries=0"})
    proc = start_worker(run_id, store.url, tmp_path / "worker.log", cwd=Path.cwd())
    proc.wait(timeout=120)
    assert listener.requests and listener.leaked() == []
    assert KEY not in (tmp_path / "worker.log").read_text()
    assert os.environ["COMPASSESS_OPENAI_API_KEY"] == KEY  # the worker had it in its environment

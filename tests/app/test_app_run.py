"""The Run page with the real bundled model: start a run on a tiny slice of the sample from the page,
let the worker process store it, and see it on the page and in the store.

Needs the bundled SmolLM2 GGUF (``make model``); skipped with the reason when it is absent.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from compassess_core.judges.models import default_model_path
from db.store import Store

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")

pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(not default_model_path().is_file(),
                       reason=f"bundled model not fetched ({default_model_path()}); run `make model`"),
]


def wait_for(store: Store, name: str, statuses: set[str], timeout_s: float = 240.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = store.get_run(name)
        if run.status in statuses:
            return run
        time.sleep(0.2)
    raise AssertionError(f"run {name} still {store.get_run(name).status} after {timeout_s} s")


def test_start_a_run_from_the_page_with_the_bundled_model(db_url, tmp_path, monkeypatch):
    monkeypatch.setenv("COMPASSESS_DATABASE_URL", db_url)
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.button[0].click().run()  # Home: load the sample
    at.switch_page("pages/run.py").run()
    assert not at.exception, at.exception
    at.number_input(key="n_contexts_1").set_value(1).run()
    at.selectbox(key="strategy_1").set_value("symmetric").run()
    at.number_input(key="budget_1").set_value(2).run()
    start = [b for b in at.button if b.label == "Start"][0]
    start.click().run()
    assert not at.exception, at.exception
    store = Store(db_url)
    [run] = store.list_runs()
    assert run.settings["contexts"] == 1 and run.settings["budget"] == 2
    # the page shows the run while the worker works, then its result
    assert "Status:" in "\n".join(m.value for m in at.markdown)
    done = wait_for(store, run.name, {"completed", "failed"})
    assert done.status == "completed", done.message
    assert done.n_comparisons == 2 and done.total == 2
    table = store.comparison_table(run.id)
    assert set(table.context_ids) == {"A0"} and ((table.p > 0) & (table.p < 1)).all()

    at.run()
    assert "Status: completed" in "\n".join(m.value for m in at.markdown)
    shown = "\n".join(str(p.proto.text) for p in at.get("progress"))
    # a finished run: its own rate over its seconds of judging, no ETA
    assert "2/2 comparisons (100%)" in shown and "comparisons/s over" in shown
    assert "of judging" in shown and "ETA" not in shown
    # Start again with the same settings: nothing is duplicated, no second worker
    [b for b in at.button if b.label == "Start"][0].click().run()
    assert any("already complete" in i.value for i in at.info)
    assert store.get_run(run.id).n_comparisons == 2 and len(store.list_runs()) == 1

    at.switch_page("pages/rankings.py").run()
    assert not at.exception, at.exception
    assert len(at.dataframe[-1].value) == 5  # the 5 summaries of A0, ranked


def test_cancel_then_resume_from_the_page_repeats_nothing(db_url, tmp_path, monkeypatch):
    monkeypatch.setenv("COMPASSESS_DATABASE_URL", db_url)
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.button[0].click().run()
    at.switch_page("pages/run.py").run()
    at.number_input(key="n_contexts_1").set_value(1).run()
    at.selectbox(key="strategy_1").set_value("no-repeat").run()
    at.number_input(key="budget_1").set_value(3).run()
    [b for b in at.button if b.label == "Start"][0].click().run()
    # Cancel at once: the worker is still loading the model, so it stops before its first batch;
    # the page says "cancelling…" at once.
    [b for b in at.button if b.label == "Cancel"][0].click().run()
    assert "Status: cancelling…" in "\n".join(m.value for m in at.markdown)
    store = Store(db_url)
    [run] = store.list_runs()
    stopped = wait_for(store, run.name, {"cancelled", "completed", "failed"})
    assert stopped.status == "cancelled", stopped.message
    at.run()
    assert "Status: cancelled" in "\n".join(m.value for m in at.markdown)
    [b for b in at.button if b.label == "Resume"][0].click().run()
    done = wait_for(store, run.name, {"completed", "failed"})
    assert done.status == "completed", done.message
    assert done.n_comparisons == done.total == 3
    table = store.comparison_table(run.id)
    pairs = set(zip(table.a_ids, table.b_ids))
    assert len(pairs) == 3 and not any((b, a) in pairs for a, b in pairs)  # no-repeat: one order

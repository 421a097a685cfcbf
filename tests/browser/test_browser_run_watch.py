"""The Run page watching a silent run, in a real browser: a run marked running whose worker has
not beaten for ``run_loop.STALE_AFTER_S`` (dead, or starved by a loaded machine: the store cannot
tell them apart) is shown as "worker stopped responding", and the open page keeps looking, so
that when the worker beats again its progress streams there without a reload.

The worker's writes are simulated straight into the store (what its heartbeat writes), so the test
is about the page, not the judge. ``streamlit run app.py`` on a free loopback port, local mode.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update

from tests.browser.test_browser import (STATE_WAIT_MS, CHROMIUM, CHROMIUM_ARGS,  # noqa: F401
                                        playwright_api, server, simulate_finished_run)

pytestmark = pytest.mark.browser


def test_a_silent_run_is_watched_until_its_worker_beats_again(server, chromium):
    from compassess_core.data.candidates import load_candidates
    from compassess_core.runs.run_loop import STALE_AFTER_S
    from db.schema import RunRow, utcnow
    from db.store import Store
    from tests.browser.test_browser import ROOT

    url, db_url = server
    store = Store(db_url)
    store.save_dataset(load_candidates(ROOT / "assets" / "sample_summeval.csv",
                                       name="sample_summeval"))
    simulate_finished_run(db_url)
    [run] = store.list_runs()
    # A worker's last beat, 8 of 400 done, longer ago than STALE_AFTER_S.
    store.set_run_status(run.id, "running", done=8, total=400)
    with store.engine.begin() as conn:
        conn.execute(update(RunRow).where(RunRow.id == run.id).values(
            heartbeat_at=utcnow() - timedelta(seconds=STALE_AFTER_S + 5)))

    page = chromium.new_page(viewport={"width": 1300, "height": 1100})
    page.goto(f"{url}/run")
    page.get_by_text("Status: worker stopped responding").first.wait_for(timeout=STATE_WAIT_MS)
    page.get_by_text("8/400 comparisons").first.wait_for(timeout=STATE_WAIT_MS)

    store.set_run_status(run.id, "running", done=12, total=400)   # the worker beats again
    page.get_by_text("12/400 comparisons").first.wait_for(timeout=STATE_WAIT_MS)
    page.get_by_text("Status: running").first.wait_for(timeout=STATE_WAIT_MS)
    store.set_run_status(run.id, "running", done=20, total=400)   # and goes on: it streams
    page.get_by_text("20/400 comparisons").first.wait_for(timeout=STATE_WAIT_MS)

    store.set_run_status(run.id, "completed", done=400, total=400)   # leave nothing running
    page.get_by_text("Status: completed").first.wait_for(timeout=STATE_WAIT_MS)

"""The Panel and Judges pages in a real browser: one ``streamlit run app.py`` server on a store
with two simulated runs of the sample (two templates of one judge, written straight into the store;
no model is loaded). In Chromium an admin (local mode) creates a panel of the two runs on the Panel
page and reads its members and agreement, then opens the Judges page, which ranks both runs and
the panel.

Skipped when ``/usr/bin/chromium`` is absent, unless ``COMPASSESS_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

from tests.browser.test_browser import (STATE_WAIT_MS, CHROMIUM, CHROMIUM_ARGS, ROOT, nav,  # noqa: F401
                                        playwright_api, choose, script_idle, server, settle, shot,
                                        simulate_finished_run)


def test_create_a_panel_and_rank_the_judges_in_chromium(server, chromium):
    from compassess_core import api
    from compassess_core.data.candidates import load_candidates
    from db.store import Store

    url, db_url = server
    store = Store(db_url)
    if not store.list_datasets():
        store.save_dataset(load_candidates(ROOT / "assets" / "sample_summeval.csv",
                                           name="sample_summeval"))
    simulate_finished_run(db_url, name="judge-t1", template="t1", seed=1)
    simulate_finished_run(db_url, name="judge-t2", template="t2", seed=2)
    browser = chromium   # the module's Chromium (tests/browser/conftest.py)
    page = browser.new_page(viewport={"width": 1400, "height": 1500})
    page.goto(f"{url}/panel")
    settle(page, "Create a panel")
    for run in ("judge-t1", "judge-t2"):
        choose(page, run)
    page.get_by_label("Panel name").fill("jury")
    page.get_by_label("Panel name").press("Enter")
    script_idle(page)
    page.get_by_role("button", name="Create panel").click()
    settle(page, "Panel jury created.")
    body = page.locator("body").inner_text()
    assert "judge-t1" in body and "judge-t2" in body
    assert [m.name for m in api.open_store(db_url).panel("jury").members] == ["judge-t1",
                                                                            "judge-t2"]
    shot(page, "panel")
    nav(page, "Judges")
    settle(page, "Judges")
    # The table is drawn on a canvas; its cells are also in the page, for screen readers.
    cells = page.locator('td[role="gridcell"]')
    cells.filter(has_text="jury").first.wait_for(state="attached", timeout=STATE_WAIT_MS)
    for judge in ("judge-t1", "judge-t2"):
        assert cells.filter(has_text=judge).count() > 0, judge
    shot(page, "judges")

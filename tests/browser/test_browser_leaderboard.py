"""The Leaderboard and Compare runs pages in a real browser: ``streamlit run app.py`` against a
temporary database, driven by Debian's chromium through Playwright (the server and helpers of
``tests/browser/test_browser.py``).

Two judges' outputs are simulated by writing comparisons straight into the store (the model itself
is exercised by the tests marked ``model``): the position-biased judge of ``test_browser`` and a
second one that loves length, so the two runs disagree on some pairs. Saves
``test-artifacts/leaderboard.png`` and ``compare.png`` (the docs' screenshots come from ``tests/browser/test_browser_screens.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

from compassess_core import api

from tests.browser.test_browser import (ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, load_the_sample, nav, playwright_api, server,  # noqa: F401
                          script_idle, settle, shot, simulate_finished_run, visible)

pytestmark = pytest.mark.browser


def choose_first_option(page, label: str, tries: int = 4) -> None:
    """Open the selectbox labelled ``label`` and pick its first option (again if a rerun of the
    page closed the list before the click)."""
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text=label)
    for _ in range(tries):
        box.scroll_into_view_if_needed()
        box.click()
        try:
            page.get_by_role("option").first.click(timeout=5_000)
            return
        except playwright_api.TimeoutError:
            script_idle(page)   # the rerun that closed the list has ended: open it again
    raise AssertionError(f"the selectbox {label!r} did not open")


def length_loving_logit(x, y, rng) -> float:
    """A second judge: less positional bias, half the coherence signal, and a preference for the
    longer summary (0.8 log-odds per doubling of the length ratio)."""
    return (0.2 + 0.5 * (x.scores["coherence"] - y.scores["coherence"])
            + 0.8 * np.log2(len(x.text) / len(y.text)) + rng.normal(0, 0.6))


def test_leaderboard_and_compare_in_chromium(server, chromium):
    url, db_url = server
    browser = chromium   # the module's Chromium (tests/browser/conftest.py)
    page = browser.new_page(viewport={"width": 1400, "height": 1500})
    load_the_sample(page, url)
    first = simulate_finished_run(db_url)
    second = simulate_finished_run(db_url, "sample-coherence-t2", "t2", length_loving_logit, 11)

    nav(page, "Leaderboard")
    settle(page, "Head to head")
    # the newest run is selected; the leaderboard names every system of the sample
    visible(page.get_by_text("Systems", exact=True).first)
    visible(page.locator('[data-testid="stDataFrame"]').first)
    visible(page.get_by_text("bootstrap replicates that resample the 3 contexts").first)
    assert page.locator('[data-testid="stPlotlyChart"]').count() >= 1
    assert f"run={api.open_store(db_url).get_run(second).id}" in page.url
    page.get_by_role("button", name="Download leaderboard.csv").wait_for()
    shot(page, "leaderboard")

    nav(page, "Compare runs")
    settle(page, "Pairs the two runs disagree on")
    visible(page.get_by_text("Verdict agreement").first)
    visible(page.get_by_text("Cohen's kappa").first)
    # open the first disagreement: the comparison view of both runs, in two tabs
    choose_first_option(page, "Open a disagreement")
    settle(page, "The exact prompt sent")
    tabs = page.get_by_role("tab")
    assert tabs.count() == 2
    assert second in tabs.nth(0).inner_text() and first in tabs.nth(1).inner_text()
    tabs.nth(1).click()
    visible(page.get_by_text("Summary A:").filter(visible=True).first)
    shot(page, "compare")

    # the threshold set here holds on every page and in the URL
    nav(page, "Bias")
    settle(page, "Length bias")
    assert "tau_mode=balanced" in page.url
    for name in ("leaderboard", "compare"):
        assert (ARTIFACTS / f"{name}.png").stat().st_size > 10_000, name

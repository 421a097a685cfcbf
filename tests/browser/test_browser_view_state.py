"""The view lives in the URL, in a real browser: a manual tau set on Rankings survives a switch to
Bias and a reload with the same numbers; a run started on Run is still the one shown, with its
progress and the form's choices, after a visit to Rankings.

``streamlit run app.py`` on a free localhost port, driven by Debian's chromium through Playwright
(the set-up of ``tests/browser/test_browser.py``); the run is a real worker with the bundled SmolLM2
judge. One test, one server and one browser for both, to keep the suite's time down.
"""

from __future__ import annotations

import re
import time

import pytest

from tests.browser.test_browser import (STATE_WAIT_MS, STATE_WAIT_S, CHROMIUM, CHROMIUM_ARGS,  # noqa: F401
                                        load_the_sample, nav, playwright_api, server, settle,
                                        simulate_finished_run, visible)

pytestmark = pytest.mark.browser


def _metric(page, label: str) -> str:
    """The value of the metric whose label starts with ``label``."""
    box = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    visible(box)
    return box.locator('[data-testid="stMetricValue"]').inner_text()


def _current_tau(page) -> str:
    caption = page.get_by_text(re.compile(r"Current tau = \d\.\d{4}")).first
    visible(caption)
    return re.search(r"Current tau = (\d\.\d{4})", caption.inner_text()).group(1)


#: The page shows a P(A) metric at the current tau the sidebar shows.
_TAU_AND_P_A_AGREE_JS = r"""() => {
  const m = document.body.innerText.match(/Current tau = (\d\.\d{4})/);
  if (!m) return false;
  const label = 'P(A) at tau = ' + Number(m[1]).toFixed(3);
  return [...document.querySelectorAll('[data-testid="stMetric"]')]
    .some(e => e.innerText.includes(label));
}"""


def _settled_tau_and_p_a(page, timeout_s: float = STATE_WAIT_S) -> tuple[str, str]:
    """The sidebar's current tau and the page's P(A) at that tau, once the page shows both for
    the same tau (key presses on the slider queue reruns; the sidebar may be drawn first)."""
    deadline = time.monotonic() + timeout_s
    while True:
        settle(page, "Current tau")
        tau = _current_tau(page)
        label = f"P(A) at tau = {float(tau):.3f}"
        found = page.locator('[data-testid="stMetric"]').filter(has_text=label)
        if found.count():
            return tau, found.first.locator('[data-testid="stMetricValue"]').inner_text()
        left_s = deadline - time.monotonic()
        if left_s <= 0:
            raise AssertionError(f"no metric {label!r} on the page")
        try:   # until the page shows a P(A) at the tau it shows (then read both again)
            page.wait_for_function(_TAU_AND_P_A_AGREE_JS, timeout=left_s * 1000)
        except playwright_api.TimeoutError:
            raise AssertionError(f"no metric {label!r} on the page") from None


@pytest.mark.model
def test_the_view_lives_in_the_url_and_the_run_page_keeps_the_live_run(server, bundled_model, chromium):
    """A manual tau set on Rankings survives a switch to Bias and a reload, with the same
    numbers; then a run started on Run is still the one shown after a visit to Rankings."""
    url, db_url = server
    browser = chromium   # the module's Chromium (tests/browser/conftest.py)
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    load_the_sample(page, url)
    simulate_finished_run(db_url)
    nav(page, "Rankings")
    settle(page, "Agreement with coherence")
    page.get_by_text("manual", exact=True).first.click()
    settle(page, "Current tau")
    page.wait_for_url(re.compile(r"tau_mode=manual"), timeout=STATE_WAIT_MS)
    thumb = page.get_by_role("slider").first
    thumb.focus()
    for _ in range(3):   # 0.003 above the starting value (tau*), one step of 0.001 a key
        thumb.press("ArrowRight")
        settle(page, "Current tau")
    tau, p_a = _settled_tau_and_p_a(page)

    nav(page, "Bias")
    settle(page, "Most order-dependent comparisons")
    assert "tau_mode=manual" in page.url and f"tau={float(tau):g}" in page.url, page.url
    assert _settled_tau_and_p_a(page) == (tau, p_a)

    page.reload()
    settle(page, "Most order-dependent comparisons")
    assert _settled_tau_and_p_a(page) == (tau, p_a)

    # A run started on Run stays the one shown there after a visit to Rankings.
    _start_a_run_and_come_back(page)


def _start_a_run_and_come_back(page) -> None:
    """Start a small run of the bundled judge on Run, visit Rankings, come back: the started run
    is shown with its progress and the form keeps its values."""
    earlier = "sample-coherence-t1"   # the simulated run of simulate_finished_run
    nav(page, "Run")
    settle(page, "Watch run")
    # The form: pairwise, symmetric selection of 2 comparisons on the first context.
    strategy = page.get_by_role("combobox", name="Selection strategy")
    strategy.click()
    page.keyboard.type("symmetric")   # the select box filters its options as one types
    # Click the offered option once it is drawn: Enter pressed before the list is filtered
    # would pick whatever option was first.
    page.get_by_role("option").filter(has_text="symmetric").first.click(timeout=STATE_WAIT_MS)
    settle(page, "Watch run")
    assert strategy.input_value() == "symmetric"
    budget = page.get_by_role("spinbutton", name="Budget R (comparisons per context)")
    budget.fill("2")
    budget.press("Enter")
    settle(page, "Watch run")
    contexts = page.get_by_role("spinbutton", name=re.compile(r"Contexts to judge"))
    contexts.fill("1")
    contexts.press("Enter")
    settle(page, "Plan: 2 comparisons")
    page.get_by_role("button", name="Start").click()
    settle(page, "Watch run")
    visible(page.get_by_text(re.compile(r"Status: (running|completed)")).first, STATE_WAIT_MS)
    started = page.locator('[data-testid="stSelectbox"]').filter(has_text="Watch run").first
    name = started.inner_text().split(" [")[0]   # the label goes on with the run's state
    assert earlier not in name

    # Rankings shows the run just started (the view's run), not the earlier one: its results
    # once a comparison is stored, until then a line that says why nothing is shown.
    nav(page, "Rankings")
    visible(page.get_by_text(re.compile(r"Agreement with coherence|has no stored comparison yet"))
            .first, STATE_WAIT_MS)
    assert "run=2" in page.url or f"run={name}" in page.url, page.url

    nav(page, "Run")
    settle(page, "Watch run")
    watched = page.locator('[data-testid="stSelectbox"]').filter(has_text="Watch run").first
    assert earlier not in watched.inner_text()
    assert watched.inner_text().split(" [")[0] == name
    # The worker loads the judge (torch and the weights) before its first "N/2": minutes on a
    # machine loaded by other work, where the page says "0 comparisons · loading the judge".
    visible(page.get_by_text(re.compile(r"\d+/2 comparisons")).first, 240_000)
    assert page.get_by_role("combobox", name="Selection strategy").input_value() == "symmetric"
    budget = page.get_by_role("spinbutton", name="Budget R (comparisons per context)")
    assert budget.input_value() == "2"
    assert page.get_by_role("spinbutton", name=re.compile(r"Contexts to judge")).input_value() == "1"
    # Leave nothing running: cancel if the worker has not finished yet.
    cancel = page.get_by_role("button", name="Cancel")
    if cancel.count():
        cancel.first.click()
    visible(page.get_by_text(re.compile(r"Status: (completed|cancelled)")).first, 120_000)

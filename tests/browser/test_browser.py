"""One real-browser test: ``streamlit run app.py`` on a free localhost port against a temporary
database, driven by Debian's chromium through Playwright.

It clicks Home -> Load the sample -> Rankings -> Matrix (opens a comparison) -> Bias -> Export and
saves a screenshot of each page under ``test-artifacts/`` (gitignored; the docs' screenshots come from ``tests/browser/test_browser_screens.py``).
A judge's output is simulated by writing comparisons straight into the store (the model itself is
exercised by ``tests/app/test_app_run.py``), so the pages have a complete 3-context run to show.

Skipped when ``/usr/bin/chromium`` is absent, unless ``COMPASSESS_REQUIRE_BROWSER=1`` (then it fails).
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from compassess_core import api
from tests.app_server import app_server

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.browser

if not CHROMIUM.exists():
    if os.environ.get("COMPASSESS_REQUIRE_BROWSER") == "1":
        raise RuntimeError(f"COMPASSESS_REQUIRE_BROWSER=1 but {CHROMIUM} is missing "
                           "(apt-get install chromium)")
    pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium); "
                "set COMPASSESS_REQUIRE_BROWSER=1 to make this a failure", allow_module_level=True)

playwright_api = pytest.importorskip("playwright.sync_api", reason="python package playwright missing")


@pytest.fixture
def server(tmp_path: Path, db_url: str):
    with app_server(tmp_path, db_url) as app:
        yield app.url, db_url


def biased_judge_logit(x, y, rng) -> float:
    """A small biased judge: a first-position bias plus the coherence difference plus noise."""
    return 0.8 + 0.9 * (x.scores["coherence"] - y.scores["coherence"]) + rng.normal(0, 0.7)


def simulate_finished_run(db_url: str, name: str = "sample-coherence-t1", template: str = "t1",
                          logit_of=biased_judge_logit, seed: int = 7) -> str:
    """A complete run on the stored sample with judge-like probabilities ``sigmoid(logit_of(x, y,
    rng))`` for x shown first (by default what a small biased judge produces)."""
    from compassess_core.runs.prompts import Aspect, builtin_template
    from compassess_core.runs.settings import RunSettings
    from compassess_core.types import ComparisonResult, Judgement, PairKey
    from db.store import Store

    store = Store(db_url)
    [info] = store.list_datasets()
    dataset = store.load_dataset(info.id)
    t, a = builtin_template(template, "summary"), Aspect.from_name("coherence")
    settings = RunSettings(dataset=dataset.name, aspect=a.name, aspect_adjective=a.adjective,
                           template_name=t.name, template_text=t.text, primer=t.primer,
                           model="bundled:SmolLM2-135M-Instruct")
    run_id = store.create_run(name, info.id, settings.to_dict())
    rng = np.random.default_rng(seed)
    results = []
    for ctx in dataset.contexts:
        for x in ctx.candidates:
            for y in ctx.candidates:
                if x is y:
                    continue
                p = float(1 / (1 + np.exp(-logit_of(x, y, rng))))
                mass = float(rng.uniform(0.4, 0.9))
                results.append(ComparisonResult(PairKey(ctx.context_id, x.candidate_id, y.candidate_id),
                                                Judgement(p, float(np.log(mass * p)),
                                                          float(np.log(mass * (1 - p))), mass),
                                                f"sim-{name}-{ctx.context_id}-{x.candidate_id}-{y.candidate_id}"))
    store.add_results(run_id, "comparative", results)
    store.set_run_status(run_id, "completed", done=len(results), total=len(results))
    return name


#: Streamlit's script states (``data-test-script-state`` on the app's root, ``stApp``, in
#: Streamlit's frontend App.tsx) in which no script runs and none is asked for: ``initial``
#: (not connected yet), ``rerunRequested``, ``running`` and ``stopRequested`` are not.
SCRIPT_IDLE_STATES = ("notRunning", "compilationError")

#: The page at rest, read from what Streamlit's frontend marks: no script runs or is asked for,
#: no element of the run before is still shown greyed (``data-stale="true"``, what Streamlit
#: marks until the new run draws or drops it), no spinner, every Plotly chart shown has drawn its
#: SVG (one in a hidden tab has no size and is left out), every image loaded (but a lazy one
#: below the window, which the browser has not asked for).
AT_REST_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || !%s.includes(app.getAttribute('data-test-script-state'))) return false;
  if (document.querySelector('[data-stale="true"], [data-testid="stSpinner"]')) return false;
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
    .filter(c => c.getBoundingClientRect().width > 0);
  if (!charts.every(c => c.querySelector('.main-svg'))) return false;
  return [...document.images].every(i => i.complete || (i.loading === 'lazy'
    && i.getBoundingClientRect().top > window.innerHeight));   // a lazy one below: not asked for
}""" % list(SCRIPT_IDLE_STATES)

#: At rest and unchanged over ``need`` readings in a row (the same elements, charts and text):
#: a page that reruns once after its first draw (a component that reports its value, a link
#: updated) is caught moving. ``token`` is new for every wait, so no earlier wait counts.
STEADY_JS = """([token, need]) => {
  const w = window;
  if (w.__steadyToken !== token) { w.__steadyToken = token; w.__steadySig = null; w.__steadyN = 0; }
  if (!(%s)()) { w.__steadySig = null; w.__steadyN = 0; return false; }
  const main = document.querySelector('[data-testid="stMain"]');
  const sig = [document.querySelectorAll('[data-testid]').length,
               document.querySelectorAll('.main-svg').length,
               main ? main.innerText.length : 0].join(':');
  if (sig === w.__steadySig) w.__steadyN += 1; else { w.__steadySig = sig; w.__steadyN = 1; }
  return w.__steadyN >= need;
}""" % AT_REST_JS


#: How long a browser test waits for a state before it fails (ms; :data:`STATE_WAIT_S` in
#: seconds). Every wait ends as soon as its state is reached, so only a failing wait lasts this
#: long; it is long because on a machine loaded by other processes (two test suites on two cores)
#: a starved Chromium renderer has taken over 30 s to draw a page or send a click's rerun.
STATE_WAIT_MS = 120_000
STATE_WAIT_S = STATE_WAIT_MS / 1000


#: How often :func:`at_rest` reads the page (ms). Five readings in a row span 0.2 s: a slider
#: moved from the keyboard asks for its rerun only after Streamlit's 0.2 s debounce, and the page
#: must not look at rest before that.
STEADY_POLL_MS = 50


def at_rest(page, timeout_ms: int = STATE_WAIT_MS, need: int = 5) -> None:
    """Wait until the page is at rest (:data:`AT_REST_JS`) and stays so over ``need`` readings
    :data:`STEADY_POLL_MS` apart: what a screenshot or an assertion about the page should see."""
    page.wait_for_function(STEADY_JS, arg=[uuid.uuid4().hex, need], polling=STEADY_POLL_MS,
                           timeout=timeout_ms)


def settle(page, text: str, timeout_ms: int = STATE_WAIT_MS) -> None:
    """Wait until ``text`` shows and the page is at rest (:func:`at_rest`): the script done,
    nothing greyed, every chart drawn."""
    page.get_by_text(text, exact=False).first.wait_for(timeout=timeout_ms)
    at_rest(page, timeout_ms)


def script_idle(page, timeout_ms: int = STATE_WAIT_MS) -> None:
    """Wait until no script runs and none is asked for (Streamlit's ``data-test-script-state``
    on ``stApp``, :data:`SCRIPT_IDLE_STATES`)."""
    page.wait_for_function(
        "(idle) => { const app = document.querySelector('[data-testid=\"stApp\"]');"
        " return !!app && idle.includes(app.getAttribute('data-test-script-state')); }",
        arg=list(SCRIPT_IDLE_STATES), timeout=timeout_ms)


def poll_until(page, check, what: str, timeout_s: float = STATE_WAIT_S):
    """Wait for a state only Python sees (what Playwright's events brought, the store): check
    ``check()`` every 20 ms while Playwright delivers the page's events, until it is truthy
    (returned); fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"never reached: {what}")
        page.wait_for_timeout(20)   # the poll's tick: Playwright delivers events meanwhile


def pause_as_a_person(page, seconds: float) -> None:
    """A person's pause between two acts: test input (the app may still be redrawing, which is
    what such a test is about), never a wait for the app's state."""
    page.wait_for_timeout(int(seconds * 1000))


def next_frame(page) -> None:
    """Wait until the browser has drawn the next frame (what an event just changed is on the
    screen)."""
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def choose(page, option: str, nth: int = 0, timeout_ms: int = STATE_WAIT_MS) -> None:
    """Add one option to the ``nth`` multiselect of the page: type it, click the offered option
    whose text holds it, then wait for its chip and for the rerun the pick starts to end. Typing
    the next pick while that rerun redraws the widget can lose it on a loaded machine."""
    box = page.locator('[data-testid="stMultiSelect"]').nth(nth)
    field = box.locator("input").first
    field.click()
    field.fill(option)
    offered = page.locator('[role="option"]').filter(has_text=option).first
    offered.wait_for(timeout=timeout_ms)
    offered.click()
    box.locator('[data-tag]').filter(has_text=option).first.wait_for(timeout=timeout_ms)
    page.keyboard.press("Escape")
    script_idle(page, timeout_ms)


def visible(locator, timeout_ms: int = STATE_WAIT_MS) -> None:
    """Wait until the element is shown (a page may rerun once after its first draw)."""
    locator.wait_for(state="visible", timeout=timeout_ms)


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def nav(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()


def load_the_sample(page, url: str) -> None:
    """Open the app's Home page and load the bundled sample dataset with its button."""
    page.goto(url)
    settle(page, "Try it in a minute")
    page.get_by_role("button", name="Load the sample dataset").click()
    settle(page, "Sample dataset 'sample_summeval' is in the store")


def test_click_through_the_app_in_chromium(server, chromium):
    url, db_url = server
    browser = chromium   # the module's Chromium (tests/browser/conftest.py)
    page = browser.new_page(viewport={"width": 1400, "height": 1500})
    page.goto(url)
    settle(page, "Try it in a minute")
    visible(page.get_by_text("No dataset yet").first)
    shot(page, "home-empty")

    page.get_by_role("button", name="Load the sample dataset").click()
    settle(page, "Sample dataset 'sample_summeval' is in the store")
    shot(page, "home")

    run_name = simulate_finished_run(db_url)

    nav(page, "Run")
    settle(page, "Watch run")
    visible(page.get_by_text("Status: completed").first)
    shot(page, "run")

    nav(page, "Rankings")
    settle(page, "Agreement with coherence")
    # the selection is in the URL (by the run's id, which a rename keeps), so a refresh keeps it
    assert f"run={api.open_store(db_url).get_run(run_name).id}" in page.url
    # the balanced tau* is the default (docs/results.md); 'off' shows the raw verdicts
    page.get_by_text("off (tau = 0.5)").first.click()
    settle(page, "P(A) at tau = 0.500")
    page.get_by_text("balanced (tau*").first.click()
    settle(page, "P(A) at tau = 0.")
    visible(page.get_by_text("0.50", exact=True).first)
    shot(page, "rankings")

    nav(page, "Matrix")
    settle(page, "Click a cell to open that comparison")
    visible(page.locator('[data-testid="stPlotlyChart"] .nsewdrag').first)
    # Click the cell (row 1 = first position, column 2 = second) of the heatmap.
    box = page.locator('[data-testid="stPlotlyChart"] .nsewdrag').first.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 1.5 / 5, box["y"] + box["height"] * 0.5 / 5)
    settle(page, "The exact prompt sent")
    visible(page.get_by_text("Summary A:").first)
    shot(page, "matrix")

    nav(page, "Bias")
    settle(page, "Most order-dependent comparisons")
    visible(page.locator('[data-testid="stPlotlyChart"]').nth(5))  # at least 6 charts
    shot(page, "bias")

    nav(page, "Export")
    settle(page, "Settings recorded with every file")
    visible(page.get_by_role("button", name="Download rankings.csv"))
    shot(page, "export")

    nav(page, "Upload")
    settle(page, "Upload candidates")
    shot(page, "upload")
    for name in ("home", "run", "rankings", "matrix", "bias", "export", "upload"):
        assert (ARTIFACTS / f"{name}.png").stat().st_size > 10_000, name

"""Every page of the app at the two window widths people use (1024 and 1280 px) in a real browser,
with no label cut: ``streamlit run app.py`` on a store that gives each page something to show (the
sample, two simulated judges, an absolute-score run, human labels of two people, a panel of the
two judges and a campaign), driven by Debian's chromium through Playwright (the server and helpers
of ``tests/browser/test_browser.py``).

Each page is opened once in a 1024 px window, then the window is widened to 1280 px (the browser
lays the same page out again; the app runs nothing). At both widths the test waits until the page
has drawn (at 1280 px: every chart drawn again at its new width), then asks the browser for
every label that shows less than its text (a metric's label, a widget's label, a tab, a button:
Streamlit cuts those with an ellipsis, ``scrollWidth > clientWidth``) and for any sideways scroll
of the page; there must be none. The viewport of each page is saved as
``test-artifacts/screens/page-<name>-<width>.png``; with ``COMPASSESS_DOCS_SCREENSHOTS=1`` the
same images are written to ``docs/img/`` (256 colours: small files), which is how the docs'
screenshots are made.

The audit report is opened the same way at 1280 px: it must not scroll sideways.

Skipped when ``/usr/bin/chromium`` is absent, unless ``COMPASSESS_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from compassess_core import api
from tests.browser.test_browser import (STATE_WAIT_MS, STATE_WAIT_S, ARTIFACTS, CHROMIUM,  # noqa: F401
                                        CHROMIUM_ARGS, ROOT, playwright_api, script_idle, server,
                                        simulate_finished_run)

pytestmark = pytest.mark.browser

SCREENS = ARTIFACTS / "screens"
DOCS_IMG = ROOT / "docs" / "img"
WIDTHS = {1024: 768, 1280: 900}
#: URL path of each page (app.py names them after their files) and a text it shows once drawn.
PAGES = {"home": ("", "Datasets in the store"),
         "upload": ("upload", "Upload candidates"),
         "run": ("run", "Watch run"),
         "leaderboard": ("leaderboard", "Head to head"),
         "rankings": ("rankings", "Agreement with"),
         "scores": ("scores", "Scores"),
         "matrix": ("matrix", "Click a cell to open that comparison"),
         "bias": ("bias", "Most order-dependent comparisons"),
         "compare": ("compare", "Pairs the two runs disagree on"),
         "panel": ("panel", "Fleiss"),
         "judges": ("judge_leaderboard", "Ranked by"),
         "annotate": ("annotate", "Judge pairs"),
         "campaigns": ("campaigns", "Progress per annotator"),
         "agreement": ("agreement", "Agreement with people"),
         "export": ("export", "Settings recorded with every file")}

#: Labels Streamlit draws in one line and cuts with an ellipsis when they do not fit.
CUT_LABELS_JS = """() => {
  const selectors = ['[data-testid="stMetricLabel"]', '[data-testid="stWidgetLabel"] p',
                     'button[role="tab"] p', '[data-testid="stExpander"] summary p',
                     '[data-testid="stBaseButton-secondary"] p', '[data-testid="stBaseButton-primary"] p',
                     '[data-testid="stMetricValue"] div'];
  const cut = [];
  for (const sel of selectors) {
    for (const el of document.querySelectorAll(sel)) {
      const box = el.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) continue;   // hidden (another tab)
      for (const e of [el, ...el.querySelectorAll('*')]) {
        if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible'
            && getComputedStyle(e).overflowX !== 'auto' && getComputedStyle(e).overflowX !== 'scroll') {
          cut.push(sel + ': ' + el.innerText.slice(0, 80));
          break;
        }
      }
    }
  }
  return cut;
}"""
SIDEWAYS_JS = "() => document.documentElement.scrollWidth - window.innerWidth"
#: Pages whose chart lies below the first screen: a second screenshot scrolled to it.
CHARTS = {"bias": "hist", "leaderboard": "board_heatmap", "compare": "compare_scatter"}
#: A file of user-shaped summaries whose score column says "no score" in several ways.
WITH_MISSING = ("doc_id,article,summary,coherence\n"
                "d1,The council met on Monday and voted to repair the bridge.,Council votes.,4\n"
                "d1,The council met on Monday and voted to repair the bridge.,Meeting Monday.,n/a\n"
                "d2,Rain is expected all week in the north.,A rainy week up north.,NA\n"
                "d2,Rain is expected all week in the north.,Weather.,-\n")
#: Every table in view drawn (Streamlit shows a grey placeholder until a table's grid is on the
#: page; one in a hidden tab is never drawn).
TABLES_DRAWN_JS = """() => [...document.querySelectorAll('[data-testid="stDataFrame"]')]
  .filter(t => { const r = t.getBoundingClientRect();
                 return r.width > 0 && r.top < window.innerHeight && r.bottom > 0; })
  .every(t => t.querySelector('canvas'))
  && !document.querySelector('[data-testid="stSkeleton"]')"""
NO_SPINNER_JS = "() => !document.querySelector('[data-testid=\"stSpinner\"]')"
#: Every Plotly chart shown drawn (its SVG is there: what a screenshot shows; one in a hidden tab
#: has no size and is left out).
CHARTS_DRAWN_JS = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
  .filter(c => c.getBoundingClientRect().width > 0)
  .every(c => c.querySelector('.main-svg'))"""


#: Tables, by the heading above them, that fit the width a 1024 px window leaves beside the
#: sidebar (Streamlit's grid scrolls inside itself: the page does not, so SIDEWAYS_JS misses it).
#: Wider tables by design (the leaderboard, the paired tests, the exports' first rows, the runs
#: of the store with their ten columns) pin what names a row instead.
FIT_AT_1024 = ("Datasets in the store", "Most order-dependent comparisons",
               "Positional bias: people vs the LLM", "Rankings: people alone vs the LLM")
#: Each table in view that scrolls sideways inside itself: the heading above it and by how much.
TABLES_SIDEWAYS_JS = """() => [...document.querySelectorAll('[data-testid="stDataFrame"]')]
  .filter(t => t.getBoundingClientRect().width > 0).map(t => {
    const s = t.querySelector('.dvn-scroller');
    const above = [...document.querySelectorAll('h1, h2, h3')]
      .filter(h => h.getBoundingClientRect().top < t.getBoundingClientRect().top);
    return {head: above.length ? above[above.length - 1].innerText : '',
            over: s ? s.scrollWidth - s.clientWidth : 0}; })
  .filter(t => t.over > 2)"""
#: A run whose name a sidebar select box cannot show on one line (a sweep's).
LONG_RUN = "summeval-coherence-t1-smollm2-135m-instruct-bf16-sweep-2024-11-27-final"


def drawn(page, text: str, timeout_ms: int = 120_000) -> None:
    """The page has drawn: ``text`` shows, no script runs, no spinner, every table in view and
    every chart drawn (the states themselves, no fixed wait)."""
    page.get_by_text(text, exact=False).first.wait_for(timeout=timeout_ms)
    script_idle(page, timeout_ms)
    page.wait_for_function(NO_SPINNER_JS, timeout=timeout_ms)   # cached reads done
    page.wait_for_function(TABLES_DRAWN_JS, timeout=STATE_WAIT_MS)
    page.wait_for_function(CHARTS_DRAWN_JS, timeout=STATE_WAIT_MS)
    tables_laid_out(page)


#: Each table's grid: its width and how far it scrolls inside itself (the grid sizes its
#: columns after it first draws, so these change for a while after the table shows).
TABLE_LAYOUT_JS = """() => [...document.querySelectorAll('[data-testid="stDataFrame"]')].map(t => {
    const s = t.querySelector('.dvn-scroller');
    return [t.getBoundingClientRect().width, s ? s.scrollWidth : -1, s ? s.clientWidth : -1]; })"""


def tables_laid_out(page, timeout_s: float = STATE_WAIT_S) -> None:
    """Wait until every table's layout is the same in five readings in a row 50 ms apart (0.2 s):
    the grid has sized its columns (what the sideways check measures)."""
    import time
    readings: list = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        readings = (readings + [page.evaluate(TABLE_LAYOUT_JS)])[-5:]
        if len(readings) == 5 and all(r == readings[0] for r in readings):
            return
        page.wait_for_timeout(50)   # a poll interval between readings, not a wait for a state
    raise AssertionError(f"the tables' layout kept changing for {timeout_s:.0f} s: {readings}")


def build_store(db_url: str) -> dict:
    """A store in which every page has something to show; returns the ids the links name."""
    from tests.fakes import FakeLengthJudge
    from tests.browser.test_browser_leaderboard import length_loving_logit

    store = api.open_store(db_url)
    store.add_dataset(ROOT / "assets" / "sample_summeval.csv", name="sample_summeval")
    simulate_finished_run(db_url, name="sample-coherence-t1", template="t1", seed=1)
    simulate_finished_run(db_url, "sample-coherence-t2", "t2", length_loving_logit, 11)
    dataset = store.dataset("sample_summeval")
    anchors = pd.DataFrame([dict(context_id=c.context_id, level=level, text="reference " * 4 * level)
                            for c in dataset.contexts for level in (1, 2, 3)])
    store.score("sample_summeval", aspect="coherence", anchors=anchors, references=3,
                judge=FakeLengthJudge(), progress=False, name="sample-coherence-absolute")
    # Two people label every pair by coherence; the second one disagrees now and then.
    rng = np.random.default_rng(3)
    rows = []
    for ctx in dataset.contexts:
        cands = ctx.candidates
        for i, x in enumerate(cands):
            for y in cands[i + 1:]:
                better = "A" if x.scores["coherence"] > y.scores["coherence"] else "B"
                for who, flip in (("alice", 0.1), ("bob", 0.3)):
                    winner = ({"A": "B", "B": "A"}[better] if rng.random() < flip else better)
                    rows.append(dict(context_id=ctx.context_id, candidate_left=x.candidate_id,
                                     candidate_right=y.candidate_id, winner=winner, annotator=who,
                                     aspect="coherence", seconds=4.0, shown_order="ab",
                                     source="app"))
    store.add_judgements("sample_summeval", rows)
    panel = store.create_panel("jury", ["sample-coherence-t1", "sample-coherence-t2"],
                               created_by="test")
    from compassess_core.people.access import local_identity
    campaign = store.create_campaign("round1", "sample_summeval", "coherence", [local_identity()],
                                     overlap=1, pairs="sample", n_pairs=12, created_by="test")
    simulate_finished_run(db_url, LONG_RUN, "t1", seed=5)
    runs = {r.name: r.id for r in store.list_runs()}
    return dict(run=runs["sample-coherence-t2"], run_b=runs["sample-coherence-t1"],
                long_run=runs[LONG_RUN],
                abs_run=runs["sample-coherence-absolute"], panel=panel.panel_info.id,
                campaign=campaign.id, dataset=store.dataset_id("sample_summeval"))


def save(page, name: str) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    path = SCREENS / f"{name}.png"
    page.screenshot(path=str(path))
    if os.environ.get("COMPASSESS_DOCS_SCREENSHOTS") == "1":
        from PIL import Image
        with Image.open(path) as image:
            image.convert("RGB").quantize(256, dither=Image.Dither.NONE).save(
                DOCS_IMG / f"{name}.png", optimize=True)


#: Each visible chart's width and its drawing's (a Plotly chart draws again at its container's
#: new width a moment after the window is resized).
CHART_WIDTHS_JS = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
  .filter(c => c.getBoundingClientRect().width > 0)
  .map(c => { const s = c.querySelector('.main-svg');
              return [c.getBoundingClientRect().width, s ? s.getBoundingClientRect().width : -1]; })"""
#: Every visible chart drawn again since ``before`` (CHART_WIDTHS_JS) where its container's
#: width changed.
CHARTS_REDRAWN_JS = """(before) => {
  const now = (%s)();
  return now.length === before.length && now.every(([box, svg], k) =>
    Math.abs(box - before[k][0]) <= 1 || Math.abs(svg - before[k][1]) > 1);
}""" % CHART_WIDTHS_JS


def widen(page, width: int, height: int, text: str) -> None:
    """The same page in a window resized to ``width`` x ``height`` (no new script run: the
    browser lays the page out again) and scrolled to its top, once it has drawn again: the
    charts at their new width, the tables laid out (:func:`drawn`)."""
    before = page.evaluate(CHART_WIDTHS_JS)
    page.set_viewport_size({"width": width, "height": height})
    page.evaluate("() => document.querySelectorAll('*').forEach(e => { if (e.scrollTop) e.scrollTop = 0; })")
    page.wait_for_function(f"() => window.innerWidth === {width}", timeout=STATE_WAIT_MS)
    page.wait_for_function(CHARTS_REDRAWN_JS, arg=before, timeout=STATE_WAIT_MS)
    drawn(page, text)


def test_every_page_at_1024_and_1280_px_cuts_no_label(server, tmp_path, chromium):
    url, db_url = server
    ids = build_store(db_url)
    link = "&".join(f"{k}={v}" for k, v in ids.items() if k != "long_run")
    problems = []
    browser = chromium   # the module's Chromium (tests/browser/conftest.py)
    sizes = list(WIDTHS.items())
    # Each page is opened once and looked at in both windows (resized: one script run each).
    page = browser.new_page(viewport={"width": sizes[0][0], "height": sizes[0][1]})
    for name, (path, text) in PAGES.items():
        page.set_viewport_size({"width": sizes[0][0], "height": sizes[0][1]})
        page.goto(f"{url}/{path}?{link}")
        drawn(page, text)
        for k, (width, height) in enumerate(sizes):
            if k:
                widen(page, width, height, text)
            cut = page.evaluate(CUT_LABELS_JS)
            sideways = page.evaluate(SIDEWAYS_JS)
            problems += [f"{name} at {width}px: {c}" for c in cut]
            if sideways > 0:
                problems.append(f"{name} at {width}px scrolls {sideways}px sideways")
            problems += [f"{name} at {width}px: table under {t['head']!r} scrolls "
                         f"{t['over']}px sideways" for t in page.evaluate(TABLES_SIDEWAYS_JS)
                         if t["head"] in FIT_AT_1024]
            save(page, f"page-{name}-{width}")
        if name in CHARTS:
            for k, (width, height) in enumerate(reversed(sizes)):
                if k:
                    widen(page, width, height, text)
                chart = page.locator(f".st-key-{CHARTS[name]}")   # the chart by its key
                chart.locator(".main-svg").first.wait_for()
                chart.evaluate("e => e.scrollIntoView({block: 'center'})")
                save(page, f"page-{name}-chart-{width}")
    page.close()
    for width, height in WIDTHS.items():
        page = browser.new_page(viewport={"width": width, "height": height})
        # A run named with 72 characters: its sidebar box shows one cut line, so the name
        # is written out below it, and the box's list wraps it instead of cutting it.
        page.goto(f"{url}/rankings?run={ids['long_run']}")
        drawn(page, "Agreement with")
        sidebar = page.locator('[data-testid="stSidebar"]')
        if not sidebar.get_by_text(LONG_RUN, exact=False).count():
            problems.append(f"the long run name is not written out at {width}px")
        box = sidebar.locator('[data-testid="stSelectbox"]').first
        box.evaluate("e => e.scrollIntoView({block: 'center'})")
        box.locator('button[aria-label="Open"]').click()
        option = page.locator('[role="option"]').filter(has_text=LONG_RUN).first
        option.wait_for(timeout=STATE_WAIT_MS)
        clipped = option.evaluate(
            "o => [...o.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1"
            " || e.scrollHeight > e.clientHeight + 1)")
        if clipped or option.evaluate("o => o.getBoundingClientRect().height") < 50:
            problems.append(f"the run list cuts the long run name at {width}px")
        save(page, f"page-run-list-{width}")
        page.keyboard.press("Escape")
        # Two states a newcomer meets: the validation report of a file with missing
        # scores, and a new campaign in local mode.
        upload = tmp_path / "summaries.csv"
        upload.write_text(WITH_MISSING, encoding="utf-8")
        page.goto(f"{url}/upload?{link}")
        drawn(page, "Choose a file")
        page.locator('input[type="file"]').set_input_files(str(upload))
        drawn(page, "Missing reference scores")
        page.get_by_text("Validation report").first.evaluate(
            "e => e.scrollIntoView({block: 'start'})")
        problems += [f"upload report at {width}px: {c}" for c in page.evaluate(CUT_LABELS_JS)]
        save(page, f"page-upload-report-{width}")
        page.goto(f"{url}/campaigns?{link}")
        drawn(page, "Progress per annotator")
        page.get_by_role("tab", name="New campaign").click()
        drawn(page, "Campaigns hand pairs to signed-in annotators")
        problems += [f"new campaign at {width}px: {c}" for c in page.evaluate(CUT_LABELS_JS)]
        save(page, f"page-campaigns-new-{width}")
        page.close()
    report = tmp_path / "report.html"
    report.write_bytes(api.open_store(db_url).get_run(ids["run"]).report_html())
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(report.as_uri())
    page.locator(".plotly").first.wait_for(timeout=STATE_WAIT_MS)
    if page.evaluate(SIDEWAYS_JS) > 0:
        problems.append(f"the report scrolls {page.evaluate(SIDEWAYS_JS)}px sideways at 1280px")
    save(page, "report-1280")
    page.get_by_text("Histogram of the").first.evaluate(
        "e => e.scrollIntoView({block: 'end'})")   # the histogram above its caption
    save(page, "report-chart-1280")
    assert not problems, "\n".join(problems)

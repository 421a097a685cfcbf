"""A corpus of hostile strings in every field a user controls, on every page, in real chromium:
no request leaves for another host, and no payload becomes a link, an image or a tag.

The payloads (Markdown images and links, HTML tags, ``javascript:`` links, bare URLs, Streamlit's
own icon and math syntax, a bidirectional override, a 250-character id) are the dataset's name
(uploaded through the Upload page and saved), context and candidate ids, system names, a score
column's name, the aspect, the run's name and its stored message (what a judge server's error
body becomes), annotators' names and the guidelines; a second run of another hostile aspect judged
in one pass with the first (the Run page's progress bars of runs judged together), and a hostile
system chosen as the Leaderboard's baseline that another system never met (the note quoting it).
"Another host" is 127.0.0.2 (loopback, never
contacted: nothing listens there, and any request to it is recorded by the browser).

Skipped when ``/usr/bin/chromium`` is absent, unless ``COMPASSESS_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import csv
import io
import itertools
from urllib.parse import quote

import numpy as np
import pytest

from tests.browser.test_browser import (STATE_WAIT_MS, CHROMIUM, CHROMIUM_ARGS, nav, playwright_api,  # noqa: F401
                                        server, settle, shot)

pytestmark = pytest.mark.browser

OUTSIDE = "127.0.0.2"
IMG = f"![img](http://{OUTSIDE}:9/img.png)"
LINK = f"[lnk](http://{OUTSIDE}:9/lnk)"
TAG = f"<b>PWN</b><img src=http://{OUTSIDE}:9/tag.png>"
JS = "[js](javascript:alert(1))"
BARE = f"http://{OUTSIDE}:9/auto www.example.com"
ICON = ":material/home: $x^2$ **PWN**"
BIDI = "a\u202egnp.exe"
LONG = "L" * 250
CANDIDATES = [LINK, JS, BARE, ICON, BIDI, LONG]
CONTEXTS = [IMG, TAG]
#: A system only in a context of its own: it never meets the baseline (:data:`ICON`'s system).
LONER = f"![loner](http://{OUTSIDE}:9/loner.png) **PWN**"
DATASET = f"<img src=http://{OUTSIDE}:9/ds.png>"  # the upload's file name (its stem)
SCORE_COLUMN = f"<img src=http://{OUTSIDE}:9/col.png>"
ASPECT = f"**PWN** [aspect](http://{OUTSIDE}:9/aspect)"
RUN = f"[run](http://{OUTSIDE}:9/run) <b>PWN</b>"
ASPECT2 = f"__PWN__ [other aspect](http://{OUTSIDE}:9/aspect2)"
RUN2 = f"![run2](http://{OUTSIDE}:9/run2.png) **PWN**"
MESSAGE = f"HTTP 401: <img src=http://{OUTSIDE}:9/msg.png> see [docs](http://{OUTSIDE}:9/msg)"
ANNOTATORS = [f"![ann](http://{OUTSIDE}:9/ann.png)", "<b>PWN</b>"]
GUIDELINES = f"Read [this](http://{OUTSIDE}:9/g) <img src=http://{OUTSIDE}:9/g.png>"


def payload_csv() -> bytes:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["context_id", "context", "candidate_id", "text", "system", "coherence",
                SCORE_COLUMN])
    for k, cid in enumerate(CONTEXTS):
        for j, cand in enumerate(CANDIDATES):
            w.writerow([cid, f"Context {k} about things. {TAG}", cand, f"Text {j} {IMG}",
                        ICON if j % 2 else LINK, j + 1, (j * 7) % 5])
    for j in range(2):
        w.writerow(["alone", "A context of its own.", f"solo{j}", f"Solo text {j}.",
                    LONER if j else LINK, j + 1, j])
    return out.getvalue().encode()


def store_run_and_labels(db_url: str) -> None:
    """A finished run on the uploaded dataset, its message, labels and guidelines."""
    from compassess_core.runs.prompts import Aspect, builtin_template
    from compassess_core.runs.settings import RunSettings
    from compassess_core.types import ComparisonResult, Judgement, PairKey
    from db.store import Store

    store = Store(db_url)
    [info] = store.list_datasets()
    dataset = store.load_dataset(info.id)
    t, a = builtin_template("t1", "summary"), Aspect.from_name(ASPECT)
    settings = RunSettings(dataset=dataset.name, aspect=a.name, aspect_adjective=a.adjective,
                           template_name=t.name, template_text=t.text, primer=t.primer,
                           model="bundled:SmolLM2-135M-Instruct")
    rng = np.random.default_rng(1)
    results = [ComparisonResult(PairKey(c.context_id, x.candidate_id, y.candidate_id),
                                Judgement(float(p), float(np.log(p)), float(np.log(1 - p)), 0.8),
                                f"h-{c.context_id}-{x.candidate_id}-{y.candidate_id}")
               for c in dataset.contexts for x, y in itertools.permutations(c.candidates, 2)
               for p in [rng.uniform(0.05, 0.95)]]
    # A second aspect judged in the same pass (one worker, two runs): the Run page draws a bar
    # per run, each named by its run and aspect. Stored first, so the pages open RUN (newest).
    a2 = Aspect.from_name(ASPECT2)
    settings2 = RunSettings(dataset=dataset.name, aspect=a2.name, aspect_adjective=a2.adjective,
                            template_name=t.name, template_text=t.text, primer=t.primer,
                            model="bundled:SmolLM2-135M-Instruct")
    run2_id = store.create_run(RUN2, info.id, settings2.to_dict())
    store.add_results(run2_id, "comparative", results)
    store.set_run_status(run2_id, "failed", done=len(results) // 2, total=len(results),
                         message=MESSAGE)
    run_id = store.create_run(RUN, info.id, settings.to_dict())
    store.add_results(run_id, "comparative", results)
    store.set_run_status(run_id, "failed", done=len(results), total=len(results), message=MESSAGE)
    for rid in (run_id, run2_id):
        store.record_plan(rid, {"run_group": [run_id, run2_id]})
    rows = []
    for ctx in dataset.contexts:
        for (x, y), who in zip(itertools.combinations(ctx.candidate_ids, 2),
                               itertools.cycle(ANNOTATORS)):
            rows.append(dict(context_id=ctx.context_id, candidate_left=x, candidate_right=y,
                             winner=["A", "B", "tie"][int(rng.integers(0, 3))], annotator=who,
                             aspect=a.name, shown_order="ab", seconds=3.0))
    store.add_human_judgements(info.id, rows)
    store.set_guidelines(info.id, GUIDELINES)


FIND_ACTIVE = """() => {
  // A link or image that leaves the app's origin (or runs script), or a payload's tag.
  const main = document.querySelector('[data-testid="stApp"]') || document.body;
  const leaves = (u) => { if (!u) return false;
    const t = new URL(u, location.href); return t.origin !== location.origin; };
  const out = [];
  for (const a of main.querySelectorAll('a')) {
    const href = a.getAttribute('href') || a.getAttribute('xlink:href') || '';
    if (leaves(href)) out.push('link ' + a.outerHTML.slice(0, 120));
  }
  for (const img of main.querySelectorAll('img, image')) {
    const src = img.getAttribute('src') || img.getAttribute('href') || '';
    if (!src.startsWith('data:') && leaves(src)) out.push('image ' + img.outerHTML.slice(0, 120));
  }
  for (const el of main.querySelectorAll('b, strong, em, script, iframe')) {
    if ((el.textContent || '').includes('PWN')) out.push('tag ' + el.outerHTML.slice(0, 120));
  }
  return out;
}"""


def check(page, url: str, where: str, requests: list[str]) -> None:
    active = page.evaluate(FIND_ACTIVE)
    assert active == [], (where, active)
    outside = [r for r in requests if OUTSIDE in r or "example.com" in r]
    assert outside == [], (where, outside)


def test_hostile_strings_stay_inert_on_every_page(server, chromium):
    url, db_url = server
    requests: list[str] = []
    browser = chromium   # the module's Chromium (tests/browser/conftest.py)
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    page.on("request", lambda r: requests.append(r.url))

    # Upload -> Save: the file name becomes the dataset's name.
    page.goto(f"{url}/upload")
    settle(page, "Upload candidates")
    page.locator('[data-testid="stFileUploader"] input[type=file]').set_input_files(
        files=[{"name": f"{DATASET}.csv", "mimeType": "text/csv", "buffer": payload_csv()}])
    settle(page, "No problem found")
    check(page, url, "upload", requests)
    page.get_by_role("button", name="Save to the store").click()
    settle(page, "Saved as dataset")
    check(page, url, "upload saved", requests)
    store_run_and_labels(db_url)

    visits = [("Home", "Runs in the store"), ("Run", "Watch run"),
              ("Rankings", "Ranking"), ("Matrix", "Click a cell"),
              ("Bias", "Most order-dependent comparisons"), ("Annotate", "Which text"),
              ("Agreement", "LLM vs humans"), ("Scores", "Scores"), ("Export", "Export")]
    for title, marker in visits:
        nav(page, title)
        settle(page, marker)
        check(page, url, title, requests)
        if title == "Run":
            assert page.get_by_text("Message: HTTP 401: <img src=").first.is_visible()
        if title == "Matrix":
            page.get_by_text("Or choose a comparison by name").click()
            page.get_by_role("button", name="Open comparison").click()
            settle(page, "The exact prompt sent")
            check(page, url, "comparison view", requests)
            assert "\u202e" not in page.locator('[data-testid="stMain"]').inner_text()
        if title == "Annotate":
            page.get_by_text("Guidelines", exact=True).last.click()
            settle(page, "Read [this]")
            check(page, url, "guidelines", requests)
            page.get_by_role("tab", name="Import labels").click()
            page.get_by_role("tab", name="Guidelines").click()
            settle(page, "Annotation guidelines for this dataset")
            check(page, url, "guidelines editor", requests)
        if title == "Bias":
            # The charts above it load on demand and move it down: wait for them, then open it.
            page.locator('[data-testid="stPlotlyChart"] .nsewdrag').last.wait_for(timeout=STATE_WAIT_MS)
            box = page.locator('[data-testid="stSelectbox"]').filter(has_text="Open comparison")
            box.scroll_into_view_if_needed()
            box.click()
            page.get_by_role("option").first.wait_for(timeout=STATE_WAIT_MS)  # the list opens
            options = " ".join(page.get_by_role("option").all_inner_texts())
            # The override is shown, not obeyed: no option displays "aexe.png".
            assert "a\u27e8U+202E\u27e9gnp.exe" in options and "\u202e" not in options
            assert LONG in options
            page.get_by_role("option").first.click()
            settle(page, "The exact prompt sent")
            check(page, url, "bias comparison", requests)
    # The progress bars of the two runs judged together, each named by run and aspect.
    nav(page, "Run")
    settle(page, "Judged in one pass with 1 other run")
    bars = page.locator('[data-testid="stProgress"]')
    assert bars.count() >= 2
    bar_text = " ".join(bars.all_inner_texts())
    assert "[run](http://" in bar_text and "![run2](http://" in bar_text, bar_text
    check(page, url, "progress bars of runs judged together", requests)
    # The Leaderboard with a hostile system as the baseline: the note quoting it is inert.
    page.goto(f"{url}/leaderboard?baseline={quote(ICON)}")
    settle(page, "Against the baseline")
    settle(page, "never met the baseline")
    check(page, url, "leaderboard baseline note", requests)
    note = page.get_by_text("never met the baseline").first.inner_text()
    assert "**PWN**" in note and "$x^2$" in note, note  # shown as typed
    # Ids display as stored: the bidi override is shown, not obeyed; the long id is whole.
    nav(page, "Rankings")
    settle(page, "Ranking")
    page.locator('[data-testid="stSelectbox"]').filter(
        has=page.get_by_text("Context", exact=True)).click()
    page.get_by_role("option").first.wait_for(timeout=STATE_WAIT_MS)   # the list is drawn
    options = page.get_by_role("option").all_inner_texts()
    assert any(t.startswith("<b>PWN</b><img") for t in options), options
    page.keyboard.press("Escape")
    shot(page, "payloads-rankings")

"""The audit report in a real browser: downloaded from the Export page of ``streamlit run app.py``
and written by ``compassess report``, then opened from ``file://`` in Debian's chromium through
Playwright with every request the page makes recorded (the server and helpers of
``tests/browser/test_browser.py``).

The report must open offline: the only request is the file itself (and ``data:``/``blob:`` URLs,
which never leave the machine), and its charts must draw from the plotly.js inside it. Saves
``test-artifacts/report.png``.

Skipped when ``/usr/bin/chromium`` is absent, unless ``COMPASSESS_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest

from compassess_core import api
from compassess_core.cli import main
from tests.browser.test_browser import (STATE_WAIT_MS, STATE_WAIT_S, CHROMIUM, CHROMIUM_ARGS,  # noqa: F401
                                        load_the_sample, nav, playwright_api, server, next_frame,
                                        poll_until, settle, shot, simulate_finished_run, visible)

pytestmark = pytest.mark.browser

EPOCH = 1_772_600_767  # 2026-03-04 05:06:07 UTC


def test_the_report_downloads_and_opens_offline_with_its_charts(server, tmp_path, monkeypatch, chromium):
    url, db_url = server
    browser = chromium   # the module's Chromium (tests/browser/conftest.py)
    app = browser.new_page(viewport={"width": 1400, "height": 1500})
    load_the_sample(app, url)
    run_name = simulate_finished_run(db_url)

    # The Export page's download is the API's report, byte for byte, at the date it states.
    nav(app, "Export")
    settle(app, "Audit report (one HTML file)")
    app.get_by_role("button", name="Prepare the audit report").click()
    button = app.get_by_role("button", name="Download the audit report (HTML)")
    visible(button, 120_000)   # made in the page's run, which a busy machine slows
    with app.expect_download(timeout=120_000) as download:
        button.click()
    downloaded = tmp_path / "downloaded.html"
    download.value.save_as(downloaded)
    made = re.search(r"made (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC",
                     downloaded.read_text(encoding="utf-8")).group(1)
    when = datetime.strptime(made, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    run = api.open_store(db_url).get_run(run_name)
    assert downloaded.read_bytes() == run.report_html(generated_at=when)
    # Two downloads clicked one right after the other both arrive: a click does not rerun
    # the page, so the second button's file is still the one it names.
    arrived = []
    app.on("download", lambda d: arrived.append(d))
    app.get_by_role("button", name="Download rankings.csv").click()
    button.click()
    poll_until(app, lambda: len(arrived) >= 2, "both downloads arrived", timeout_s=STATE_WAIT_S)
    names = sorted(d.suggested_filename for d in arrived)
    assert len(names) == 2 and names[0].endswith("rankings.csv") \
        and names[1].endswith("-report.html"), names
    again = tmp_path / "again.html"
    next(d for d in arrived if d.suggested_filename.endswith(".html")).save_as(again)
    assert again.read_bytes() == downloaded.read_bytes()
    assert app.locator('[data-testid="stDownloadButtonError"]').count() == 0

    # The CLI's file, opened from disk in a fresh context with every request recorded.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    written = tmp_path / "report.html"
    assert main(["report", "--run", run_name, "-o", str(written), "--db", db_url]) == 0
    assert written.read_bytes() == run.report_html(
        generated_at=datetime.fromtimestamp(EPOCH, timezone.utc))
    offline = browser.new_context(viewport={"width": 1200, "height": 1000})
    page = offline.new_page()
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(written.as_uri())
    page.wait_for_function(   # every chart of the file drawn (its SVG), none still to come
        "() => { const c = [...document.querySelectorAll('.js-plotly-plot')];"
        " return c.length >= 4 && c.every(e => e.querySelector('svg.main-svg')); }",
        timeout=STATE_WAIT_MS)
    # every chart drew: the leaderboard, the p histogram, P(A) per context, the length scatter
    assert page.locator(".js-plotly-plot").count() == 4
    assert page.locator(".js-plotly-plot svg.main-svg").count() >= 4
    # open a prompt and hover a chart: still nothing fetched
    page.locator("details summary").filter(has_text="The exact prompt").first.click()
    visible(page.get_by_text("Summary A:").first)
    page.locator(".js-plotly-plot").first.hover()
    next_frame(page)   # the hover handled and drawn: anything it fetched is requested
    shot(page, "report")
    offline.close()
    assert requests and requests[0] == written.as_uri()
    outside = [u for u in requests if u != written.as_uri() and not u.startswith(("data:", "blob:"))]
    assert not outside, outside
    assert not [e for e in errors if "Content Security Policy" in e], errors

"""Attacks on a served app that need a real browser: ``streamlit run app.py`` (sign-in configured,
or local mode) and Debian's chromium through Playwright.

* A person removed, or a configuration broken, while their Run page streams an active run's
  progress: the page shows the gate's page at the next tick, and no more progress.
* An admin's export fetched with an annotator's cookie: 403; an admin's upload from the browser
  passes the upload check.
* A cookie copied before a sign-out (the real OpenID Connect provider of
  ``tests/browser/test_browser_sign_in.py``) is refused after it, in a browser and for files.
* A page of another origin cannot frame the app, and a page on another localhost port cannot open
  the local app's WebSocket.
* A page load makes no request outside the app's own origin (no third-party font or icon host).

Signed-in browsers get Streamlit's sign-in cookie signed with the test server's secret (what an
OpenID Connect sign-in leaves, ``test_http_guard.sign_in_cookie``), except where the sign-out
itself is tested. Skipped when ``/usr/bin/chromium`` is absent, unless
``COMPASSESS_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import http.server
import threading
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.browser.test_browser import (STATE_WAIT_MS, CHROMIUM, CHROMIUM_ARGS, nav, playwright_api,  # noqa: F401
                                        settle, simulate_finished_run)
from tests.browser.test_browser_sign_in import oidc_provider, sign_in, team_server  # noqa: F401 - fixtures
from tests.app_server import free_port
from tests.people.test_http_guard import (ADMIN, local_app, secrets_toml,  # noqa: F401
                             sign_in_cookie, team_app)

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "assets" / "sample_summeval.csv"


def store_sample_and_run(db_url: str):
    from compassess_core.data.candidates import load_candidates
    from db.store import Store
    store = Store(db_url)
    store.save_dataset(load_candidates(SAMPLE, name="sample_summeval"))
    simulate_finished_run(db_url)
    return store


def signed_in_page(browser, server, identity: str, cookie_secret: str):
    """A browser context holding ``identity``'s sign-in cookie for ``server``."""
    context = browser.new_context(viewport={"width": 1300, "height": 1100})
    name, value = sign_in_cookie(identity, cookie_secret, server.port).split("=", 1)
    context.add_cookies([{"name": name, "value": value, "url": server.url}])
    return context.new_page()


def body(page) -> str:
    return page.locator("body").inner_text()


def test_the_run_page_stops_streaming_for_a_removed_person_or_a_broken_configuration(
        chromium, team_app, db_url):
    server, secrets_file, cookie_secret = team_app
    store = store_sample_and_run(db_url)
    store.set_role(ADMIN, "admin", "test")
    store.set_role("watcher@example.org", "admin", ADMIN)
    [run] = store.list_runs()

    def progress(done: int) -> None:  # the worker's heartbeat, as a live run writes it
        store.set_run_status(run.id, "running", done=done, total=400)

    progress(8)
    browser = chromium
    watcher = signed_in_page(browser, server, "watcher@example.org", cookie_secret)
    admin = signed_in_page(browser, server, ADMIN, cookie_secret)
    for page in (watcher, admin):
        page.goto(f"{server.url}/run")
        page.get_by_text("8/400 comparisons").first.wait_for(timeout=STATE_WAIT_MS)
    progress(12)
    watcher.get_by_text("12/400 comparisons").first.wait_for(timeout=STATE_WAIT_MS)  # it streams
    # Removed while the page streams: the next tick gives the no-role page, no progress.
    store.remove_person("watcher@example.org")
    progress(48)
    watcher.get_by_text("nobody has given this account a role yet").wait_for(timeout=STATE_WAIT_MS)
    assert "/400 comparisons" not in body(watcher) and "Worker log" not in body(watcher)
    admin.get_by_text("48/400 comparisons").first.wait_for(timeout=STATE_WAIT_MS)
    # A secrets file that no longer parses: the open page locks at its next tick.
    secrets_file.write_text(secrets_toml(server.port, cookie_secret).replace("[auth]",
                                                                             "[auth"))
    progress(60)
    admin.get_by_text("Configuration error").first.wait_for(timeout=STATE_WAIT_MS)
    assert "/400 comparisons" not in body(admin) and "Worker log" not in body(admin)


def test_an_annotator_gets_403_for_an_admins_export(chromium, team_app, db_url):
    server, _, cookie_secret = team_app
    store = store_sample_and_run(db_url)
    store.set_role("ann@example.org", "annotator", ADMIN)
    browser = chromium
    admin = signed_in_page(browser, server, ADMIN, cookie_secret)
    admin.goto(f"{server.url}/export")
    settle(admin, "Download rankings.csv")
    with admin.expect_download() as download:
        admin.get_by_role("button", name="Download rankings.csv").click()
    url = download.value.url
    assert "/media/" in url

    def fetch(identity: str | None) -> int:
        cookie = sign_in_cookie(identity, cookie_secret, server.port) if identity else ""
        return httpx.get(url, headers={"Cookie": cookie}).status_code

    assert fetch(ADMIN) == 200
    assert fetch("ann@example.org") == 403
    assert fetch(None) == 403


def test_an_admin_uploads_through_the_browser_with_the_guard_in_front(chromium, team_app,
                                                                    db_url):
    """The file uploader's own request carries the sign-in cookie: an admin's upload passes."""
    from db.store import Store
    server, _, cookie_secret = team_app
    browser = chromium
    admin = signed_in_page(browser, server, ADMIN, cookie_secret)
    admin.goto(f"{server.url}/upload")
    settle(admin, "Upload candidates")
    admin.locator('[data-testid="stFileUploader"] input[type=file]').set_input_files(
        str(SAMPLE))
    settle(admin, "No problem found")
    admin.get_by_role("button", name="Save to the store").click()
    settle(admin, "Saved as dataset")
    assert [d.name for d in Store(db_url).list_datasets()] == ["sample_summeval"]


def test_a_cookie_copied_before_sign_out_is_refused_after_it(chromium, team_server):
    from db.store import Store

    url, db_url = team_server
    store_sample_and_run(db_url)
    browser = chromium
    context = browser.new_context(viewport={"width": 1300, "height": 1000})
    page = context.new_page()
    sign_in(page, url, ADMIN)
    copied = context.cookies()
    nav(page, "Export")
    settle(page, "Download rankings.csv")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download rankings.csv").click()
    media = download.value.url
    cookie_header = "; ".join(f"{c['name']}={c['value']}" for c in copied)
    assert httpx.get(media, headers={"Cookie": cookie_header}).status_code == 200
    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("button", name="End session").click(timeout=STATE_WAIT_MS)
    page.get_by_role("button", name="Sign in").wait_for(timeout=STATE_WAIT_MS)
    assert Store(db_url).signed_out_through(ADMIN) is not None
    # Someone kept a copy of the cookie: after the sign-out it opens nothing.
    thief = browser.new_context(viewport={"width": 1300, "height": 1000})
    thief.add_cookies(copied)
    stolen = thief.new_page()
    stolen.goto(f"{url}/export")
    stolen.get_by_role("button", name="Sign in").wait_for(timeout=STATE_WAIT_MS)
    stolen.get_by_text("you signed out since this sign-in").wait_for(timeout=STATE_WAIT_MS)
    assert "Download rankings.csv" not in body(stolen)
    assert stolen.locator('[data-testid="stSidebarNav"]').count() == 0
    assert httpx.get(media, headers={"Cookie": cookie_header}).status_code == 403
    # Signing in again works (a new token, issued after the sign-out).
    sign_in(page, url, ADMIN)
    nav(page, "Export")
    settle(page, "Download rankings.csv")


class _OtherSite:
    """A page of another origin (another port of 127.0.0.1): ``/`` is ``html``."""

    def __init__(self, html: str) -> None:
        page = html.encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_another_origin_can_neither_frame_the_app_nor_open_its_websocket(chromium, local_app):
    """A page on another localhost port: its frame of the app stays empty (anti-framing headers)
    and its WebSocket to the app is refused (local mode checks the Origin)."""
    app = local_app.url
    site = _OtherSite(f"""<!doctype html><html><body>
<iframe id="app" src="{app}/" width="800" height="600"
        onload="window.frameLoaded = true"></iframe>
<script>
  const ws = new WebSocket("ws://127.0.0.1:{local_app.port}/_stcore/stream", ["streamlit"]);
  ws.onopen = () => {{ window.socket = "open"; }};
  ws.onclose = () => {{ window.socket = window.socket || "refused"; }};
</script></body></html>""")
    try:
        browser = chromium
        page = browser.new_page()
        page.goto(site.url)
        page.wait_for_function("() => window.socket !== undefined", timeout=STATE_WAIT_MS)
        assert page.evaluate("window.socket") == "refused"
        page.wait_for_function("() => window.frameLoaded === true", timeout=STATE_WAIT_MS)
        [framed] = [f for f in page.frames if f != page.main_frame]
        assert not framed.url.startswith(app)  # chromium shows its error page instead
        assert framed.locator('[data-testid="stApp"]').count() == 0
        # The app's own page opens its WebSocket (and frames itself) as before.
        page.goto(app)
        settle(page, "Try it in a minute")
    finally:
        site.close()


def test_a_page_load_makes_no_request_outside_the_apps_origin(chromium, local_app, db_url):
    store_sample_and_run(db_url)
    app = urlsplit(local_app.url)
    requests: list[str] = []
    browser = chromium
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    page.on("request", lambda r: requests.append(r.url))
    for path, heading in (("", "Try it in a minute"), ("rankings", "Rankings"),
                          ("annotate", "Annotate"), ("bias", "Positional bias audit")):
        page.goto(f"{local_app.url}/{path}")
        settle(page, heading)
    outside = sorted({u for u in requests if urlsplit(u).scheme not in ("data", "blob")
                      and (urlsplit(u).scheme, urlsplit(u).netloc) != (app.scheme, app.netloc)
                      and urlsplit(u).scheme not in ("ws", "wss")})
    assert requests and not outside, outside

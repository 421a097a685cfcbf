"""Sign-in with a real OpenID Connect provider in real chromium: ``streamlit run app.py`` with an
``[auth]`` section (Streamlit's ``st.login``/``st.user``, served in its ASGI ``st.App`` mode)
against ``oidc-provider-mock`` (a real OIDC provider for tests, its own process on 127.0.0.1,
where a person signs in by typing their identity on its authorisation page).

* An anonymous visitor gets the sign-in page and no data, whatever the URL.
* The first admin (``COMPASSESS_ADMINS``) signs in, reaches every page and gives a person the
  annotator role on People.
* That annotator, assigned to a campaign, signs in, gets only Annotate and Agreement (a deep link
  to Upload, Run or Export shows none of them), judges a pair of the campaign, and the label
  carries the signed-in identity whatever the URL says; signing out leaves an anonymous visitor
  again.

Skipped when ``/usr/bin/chromium`` is absent, unless ``COMPASSESS_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.app_server import app_server, free_port
from tests.browser.test_browser import (STATE_WAIT_MS, CHROMIUM, CHROMIUM_ARGS, ROOT, nav,  # noqa: F401
                                        playwright_api, script_idle, settle, shot,
                                        simulate_finished_run)

pytestmark = pytest.mark.browser

SAMPLE = ROOT / "assets" / "sample_summeval.csv"
ADMIN = "admin@example.org"
#: URL paths of the pages (app.py names them after their files) and the heading each shows.
PAGES = {"": "CompAssess", "upload": "Upload candidates", "run": "Run the judge",
         "rankings": "Rankings", "scores": "Scores", "matrix": "Comparison matrix",
         "bias": "Positional bias audit", "annotate": "Annotate",
         "agreement": "Agreement with people", "export": "Export", "people": "People"}


#: The test server's cookie secret: new for every test session, never one printed anywhere.
COOKIE_SECRET = secrets.token_hex(32)

ADMIN_NAV = {"Home", "Upload", "Run", "Leaderboard", "Rankings", "Scores", "Matrix", "Bias",
             "Compare runs", "Panel", "Judges", "Tune wording", "Annotate", "Campaigns",
             "Agreement", "Export", "People"}


def _wait_http(url: str, proc: subprocess.Popen, log: Path, what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            time.sleep(0.1)   # the next look at the server
    proc.terminate()
    raise AssertionError(f"{what} did not start: {log.read_text()[-2000:]}")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def oidc_provider(tmp_path: Path):
    """``python -m oidc_provider_mock`` on a free loopback port; yields its issuer URL."""
    port = free_port()
    log = tmp_path / "oidc.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "oidc_provider_mock", "--host", "127.0.0.1",
                                 "--port", str(port)], stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    issuer = f"http://127.0.0.1:{port}"
    _wait_http(f"{issuer}/.well-known/openid-configuration", proc, log, "the OIDC provider")
    yield issuer
    _stop(proc)


@pytest.fixture
def team_server(tmp_path: Path, db_url: str, oidc_provider: str):
    """The app with sign-in configured (a secrets.toml of its own), the first admin from
    COMPASSESS_ADMINS; yields (url, db_url)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(
        "[auth]\n"
        f'redirect_uri = "{url}/oauth2callback"\n'
        f'cookie_secret = "{COOKIE_SECRET}"\n'
        'client_id = "compassess"\n'
        'client_secret = "test-client-secret"\n'
        f'server_metadata_url = "{oidc_provider}/.well-known/openid-configuration"\n')
    # The mock provider sends e-mail without email_verified, like Entra ID.
    env = dict(COMPASSESS_ADMINS=ADMIN, COMPASSESS_VERIFIED_EMAIL_ISSUERS=oidc_provider)
    with app_server(tmp_path, db_url, port=port, env=env, unset=("COMPASSESS_ALLOW_ANONYMOUS",),
                    secrets_file=secrets) as server:
        yield server.url, db_url


def sign_in(page, url: str, identity: str) -> None:
    """Sign in through the provider's own page, as a person would, and wait for the app."""
    page.goto(url)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/oauth2/authorize**", timeout=STATE_WAIT_MS)
    page.fill("input[name=sub]", identity)
    page.get_by_role("button", name="Authorize").first.click()
    page.get_by_text(f"Signed in as {identity}").first.wait_for(timeout=STATE_WAIT_MS)


def sidebar_pages(page) -> set[str]:
    nav_box = page.locator('[data-testid="stSidebarNav"]')
    # Each entry reads "<icon name>\n\n<title>": the icon is a ligature of the icon font.
    return {t.strip().split("\n")[-1] for t in nav_box.locator("a").all_inner_texts()}


def assert_only_sign_in(page, path: str) -> None:
    page.get_by_role("button", name="Sign in").wait_for(timeout=STATE_WAIT_MS)
    script_idle(page)   # what the page shows once its script has ended, not mid-draw
    body = page.locator("body").inner_text()
    for data in ("sample_summeval", "sample-coherence-t1", "Watch run", "Datasets in the store"):
        assert data not in body, (path, data)
    assert page.locator('[data-testid="stDataFrame"]').count() == 0, path
    assert page.locator('[data-testid="stSidebarNav"]').count() == 0, path
    assert page.get_by_text("Page not found").count() == 0, path  # a deep link is welcome


def store_sample_and_run(db_url: str) -> int:
    from compassess_core.data.candidates import load_candidates
    from db.store import Store
    dataset_id = Store(db_url).save_dataset(load_candidates(SAMPLE, name="sample_summeval"))
    simulate_finished_run(db_url)
    return dataset_id


def test_sign_in_roles_and_identity_in_chromium(team_server, chromium):
    from db.store import Store

    url, db_url = team_server
    dataset_id = store_sample_and_run(db_url)
    browser = chromium   # the module's Chromium (tests/browser/conftest.py)

    # An anonymous visitor: the sign-in page and nothing else, on every URL.
    anon = browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()
    for path in PAGES:
        anon.goto(f"{url}/{path}?run=sample-coherence-t1")
        assert_only_sign_in(anon, path)
    shot(anon, "sign-in")

    # The first admin (from configuration) reaches every page and adds an annotator.
    admin = browser.new_context(viewport={"width": 1300, "height": 1100}).new_page()
    sign_in(admin, url, ADMIN)
    assert sidebar_pages(admin) == ADMIN_NAV
    for title in ("Upload", "Run", "Export"):
        nav(admin, title)
        settle(admin, {"Upload": "Upload candidates", "Run": "Run the judge",
                       "Export": "Export"}[title])
    nav(admin, "People")
    settle(admin, "Add a person or change a role")
    admin.get_by_label("E-mail address").fill("Ann@Example.org")
    admin.get_by_role("button", name="Save").click()
    settle(admin, "ann@example.org is now annotator.")
    assert Store(db_url).role_of("ann@example.org") == "annotator"
    shot(admin, "people")
    from compassess_core import api
    api.Store(Store(db_url)).create_campaign("round1", "sample_summeval", "coherence",
                                             ["ann@example.org"], overlap=1, created_by=ADMIN)

    # The annotator: Annotate and their own Agreement only; the URL cannot name anyone else.
    ann = browser.new_context(viewport={"width": 1300, "height": 1100}).new_page()
    sign_in(ann, url, "ann@example.org")
    settle(ann, "Which text is more coherent?")
    assert sidebar_pages(ann) == {"Annotate", "Agreement"}
    for path in ("upload", "run", "export", "people", "rankings"):
        ann.goto(f"{url}/{path}")
        settle(ann, "Which text is more coherent?")  # not theirs: they land on Annotate
        body = ann.locator("body").inner_text()
        assert PAGES[path] not in body.split("\n")[:3], path
        assert ann.locator('[data-testid="stFileUploader"]').count() == 0, path
        assert ann.get_by_role("button", name="Start").count() == 0, path
    ann.goto(f"{url}/annotate?annotator=mallory")
    settle(ann, "ann@example.org: 0 / ")
    ann.get_by_role("button", name="A is better").click()
    settle(ann, "ann@example.org: 1 / ")
    df = Store(db_url).human_judgements_frame(dataset_id)
    assert df["annotator"].tolist() == ["ann@example.org"]
    shot(ann, "annotate-signed-in")

    # Signing out (the provider's end-session page confirms it) leaves an anonymous visitor.
    ann.get_by_role("button", name="Sign out").click()
    ann.get_by_role("button", name="End session").click(timeout=STATE_WAIT_MS)
    assert_only_sign_in(ann, "after sign-out")
    ann.goto(f"{url}/annotate")
    assert_only_sign_in(ann, "annotate after sign-out")

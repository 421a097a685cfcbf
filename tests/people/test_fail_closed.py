"""Team mode fails closed (AppTest on app.py, a real SQLite store, a real secrets file, and one real
``streamlit run`` server):

* whether sign-in is required is decided once per process; a secrets file that stops parsing, or an
  ``[auth]`` section that disappears, locks every URL with a "configuration error" page and no data;
* an identity is a verified e-mail address or the provider's issuer+subject, never a subject
  lower-cased into the e-mail namespace;
* a role removed while a page is open stops the next action (a callback runs before the gate);
* a missing, short or placeholder ``cookie_secret`` is refused at start and locks a session;
* local mode answers localhost Host names only, ``/_stcore/metrics`` is closed, tracebacks are hidden;
* the SQLite store and the worker logs are the owner's only, one log per run id.
"""

from __future__ import annotations

import json
import secrets
import socket
import stat
import tomllib
from pathlib import Path

import httpx
import pytest
from streamlit import config
from streamlit.runtime.secrets import secrets_singleton
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.util import patch_config_options

from compassess_core.people import access
from db.store import Store
from tests.app.test_app_pages import APP, ROOT, app_env, seed_run, texts  # noqa: F401 - app_env is a fixture
from tests.app.test_app_sign_in import AUTH_SECRETS, ISSUER, app_as, page_titles, token_times
from tests.answer_buttons import answer_button, has_answer_button
from tests.app_server import app_server

GOOD_SECRET = secrets.token_hex(24)  # random per run: a fixed one would be a published one
SECRETS_TOML = f"""[auth]
redirect_uri = "http://127.0.0.1:8501/oauth2callback"
cookie_secret = "{GOOD_SECRET}"
client_id = "compassess"
client_secret = "test-client-secret"
server_metadata_url = "http://127.0.0.1:9/.well-known/openid-configuration"
"""


def user(email: str, **claims) -> dict:
    return {"is_logged_in": True, "email": email, "email_verified": True, "iss": ISSUER,
            "sub": f"sub-{email}", "name": email, **token_times(), **claims}


def assert_locked(at: AppTest) -> None:
    """The lock page and nothing else: no data, no sign-in, no page of the app."""
    assert not at.exception, at.exception
    assert "Configuration error" in texts(at.error), texts(at.error)
    assert not at.dataframe and not at.selectbox and not at.text and not at.button
    shown = texts(at.markdown) + texts(at.caption) + texts(at.title) + texts(at.error)
    assert "sample_summeval" not in shown and "hand-run" not in shown
    assert page_titles(at) == {"CompAssess"}  # every URL answers with the lock page


@pytest.fixture
def secrets_file(tmp_path: Path):
    """A real secrets.toml that Streamlit's own secrets object reads (as a server's would)."""
    path = tmp_path / "secrets.toml"
    path.write_text(SECRETS_TOML)
    secrets_singleton._reset()
    with patch_config_options({"secrets.files": [str(path)]}):
        yield path
    secrets_singleton._reset()


# ------------------------------------------------------------------------ fail closed on secrets

def test_secrets_made_unparseable_while_the_app_runs_lock_it(app_env, secrets_file):
    store, _, _ = seed_run(app_env)
    store.set_role("admin@example.org", "admin", "test")
    at = AppTest.from_file(APP, default_timeout=60)
    at.user = user("admin@example.org")
    at.run()
    assert not at.exception, at.exception
    assert "Home" in page_titles(at)
    # Someone edits secrets.toml and leaves a typo; Streamlit re-reads the file.
    secrets_file.write_text(SECRETS_TOML.replace('client_id = "compassess"', 'client_id = "comp'))
    secrets_singleton._reset()
    at.run()
    assert_locked(at)
    # An anonymous visitor (a new session) on any URL: locked too, never an open local admin.
    anon = AppTest.from_file(APP, default_timeout=60)
    anon.user = {"is_logged_in": False}
    anon.run()
    assert_locked(anon)
    # A secrets path that cannot be read (here a folder where the file was) locks as well.
    secrets_file.unlink()
    secrets_file.mkdir()
    secrets_singleton._reset()
    anon.run()
    assert_locked(anon)


def test_every_change_to_the_secrets_file_counts_at_the_next_run_and_request(app_env,
                                                                          secrets_file):
    """No restart and no reliance on Streamlit's file watcher (it stops after a bad edit): an
    unparseable edit locks, the fix unlocks, a deleted file or a folder in its place locks, and a
    rotated cookie_secret ends the sessions and cookies signed with the old one."""
    from pages._http_guard import HttpGuard
    from pages._store import api_store

    store, _, _ = seed_run(app_env)
    store.set_role("admin@example.org", "admin", "test")
    guard = HttpGuard(_inner_app, local=False, sign_in=True)
    old_cookie = signed_cookie(user("admin@example.org"))

    def session() -> AppTest:
        at = AppTest.from_file(APP, default_timeout=60)
        at.user = user("admin@example.org")
        return at

    open_page = session().run()
    assert "Home" in page_titles(open_page)
    assert _asgi_status(guard, "/media/0123abcd.csv", old_cookie) == 200
    secrets_file.write_text(SECRETS_TOML.replace('client_id = "compassess"', 'client_id = "comp'))
    assert_locked(open_page.run())
    assert _asgi_status(guard, "/media/0123abcd.csv", old_cookie) == 403
    rotated = secrets.token_hex(32)
    secrets_file.write_text(SECRETS_TOML.replace(GOOD_SECRET, rotated))  # fixed, and rotated
    # The open session was signed in under the old secret: it must sign in again.
    open_page.run()
    assert [b.label for b in open_page.button] == ["Sign in"]
    assert "sign-in key was changed" in texts(open_page.info)
    assert "Home" in page_titles(session().run())  # a session signed in under the new one
    assert _asgi_status(guard, "/media/0123abcd.csv", old_cookie) == 403
    new_cookie = signed_cookie(user("admin@example.org"), secret=rotated)
    assert _asgi_status(guard, "/media/0123abcd.csv", new_cookie) == 200
    secrets_file.unlink()
    assert_locked(session().run())
    assert _asgi_status(guard, "/media/0123abcd.csv", new_cookie) == 403
    secrets_file.mkdir()
    assert_locked(session().run())
    secrets_file.rmdir()
    secrets_file.write_text(SECRETS_TOML.replace(GOOD_SECRET, rotated))
    assert "Home" in page_titles(session().run())
    assert _asgi_status(guard, "/media/0123abcd.csv", new_cookie) == 200
    assert api_store().role_of("admin@example.org") == "admin"


def test_auth_section_removed_after_start_keeps_sign_in_required(app_env):
    seed_run(app_env)
    at = app_as(None)
    assert [b.label for b in at.button] == ["Sign in"]
    at.secrets = {"general": {"note": "the [auth] section was deleted"}}
    at.run()
    assert_locked(at)


def test_a_broken_first_look_at_the_secrets_never_opens_local_mode(app_env, secrets_file):
    seed_run(app_env)
    secrets_file.write_text("[auth\n")
    secrets_singleton._reset()
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert_locked(at)


# ------------------------------------------------------------------------ identities

@pytest.mark.parametrize("claims", [
    {"iss": ISSUER, "sub": "ADMIN@EXAMPLE.ORG"},  # a subject is not an e-mail address
    {"iss": ISSUER, "sub": "x", "email": "admin@example.org"},  # email_verified missing
    {"iss": ISSUER, "sub": "x", "email": "admin@example.org", "email_verified": "false"},
    {"iss": ISSUER, "sub": "x", "email": "admin@example.org", "email_verified": "true"},
    {"iss": ISSUER, "sub": "x", "email": "admin@example.org", "email_verified": 1},
    {"iss": ISSUER, "sub": "x", "email": "admin@example.org", "email_verified": False},
])
def test_forged_or_unverified_claims_never_give_an_e_mail_identity(claims, monkeypatch):
    monkeypatch.delenv("COMPASSESS_VERIFIED_EMAIL_ISSUERS", raising=False)
    identity = access.identity_from_claims(claims)
    assert identity != "admin@example.org"
    assert identity == f"{ISSUER}#{claims['sub']}"  # case kept, issuer included


def test_verified_e_mail_and_declared_issuers():
    claims = {"iss": ISSUER, "sub": "x", "email": "Admin@Example.org"}
    assert access.identity_from_claims(dict(claims, email_verified=True), frozenset()) == \
        "admin@example.org"
    # A provider that omits email_verified (Entra ID) counts once the admin declares its issuer.
    assert access.identity_from_claims(claims, frozenset({ISSUER})) == "admin@example.org"
    # ... but never over the provider's own word that the address is not verified.
    for said in (False, "false", "true", 0):
        assert access.identity_from_claims(dict(claims, email_verified=said),
                                           frozenset({ISSUER})) == f"{ISSUER}#x", said
    assert access.verified_email_issuers(
        {access.VERIFIED_EMAIL_ISSUERS_ENV: f"{ISSUER}/, https://b.example"}) == \
        {ISSUER, "https://b.example"}
    # An e-mail that could pass for a subject identity is never used as an address.
    assert access.identity_from_claims(
        {"iss": ISSUER, "sub": "x", "email": f"{ISSUER}#y@e.org", "email_verified": True},
        frozenset()) == f"{ISSUER}#x"
    with pytest.raises(access.AccessError):
        access.identity_from_claims({"email": "a@example.org"}, frozenset())
    # Subject identities keep their case; e-mail identities are lower-cased.
    assert access.normalise_identity(f" {ISSUER}#AbC ") == f"{ISSUER}#AbC"
    assert access.configured_admins({access.ADMINS_ENV: f"Boss@X.org {ISSUER}#AbC"}) == \
        {"boss@x.org", f"{ISSUER}#AbC"}


def test_a_subject_spelled_like_the_admins_address_is_not_the_admin(app_env, monkeypatch):
    store, _, _ = seed_run(app_env)
    monkeypatch.setenv("COMPASSESS_ADMINS", "admin@example.org")
    for claims in ({"is_logged_in": True, "iss": ISSUER, "sub": "ADMIN@EXAMPLE.ORG"},
                   {"is_logged_in": True, "iss": ISSUER, "sub": "x", "email": "admin@example.org"},
                   {"is_logged_in": True, "iss": ISSUER, "sub": "x", "email": "admin@example.org",
                    "email_verified": "false"}):
        at = AppTest.from_file(APP, default_timeout=60)
        at.secrets = {k: dict(v) for k, v in AUTH_SECRETS.items()}
        at.user = dict(claims, **token_times())
        at.run()
        assert not at.exception, at.exception
        assert "nobody has given this account a role yet" in texts(at.warning), claims
        assert "Home" not in page_titles(at)
    assert store.role_of("admin@example.org") is None


# ------------------------------------------------------------------------ roles at every action

def test_a_removed_annotator_cannot_store_a_label(app_env):
    from compassess_core import api
    store, dataset_id, _ = seed_run(app_env)
    store.set_role("admin@example.org", "admin", "test")
    store.set_role("ann@example.org", "annotator", "test")
    api.Store(store).create_campaign("round1", "sample_summeval", "coherence",
                                     ["ann@example.org"], overlap=1)
    at = app_as("ann@example.org", "pages/annotate.py")
    answer_button(at, "answer_a").click().run()
    assert not at.exception, at.exception
    assert len(store.human_judgements_frame(dataset_id)) == 1
    store.remove_person("ann@example.org")  # while their page is open
    answer_button(at, "answer_b").click().run()
    assert len(store.human_judgements_frame(dataset_id)) == 1  # nothing stored
    assert "no longer have the rights" in texts(at.error)
    at.run()  # the next run: the page is closed to them
    assert not any(has_answer_button(at, k) for k in ("answer_a", "answer_b"))


def test_a_demoted_admin_cannot_label_freely_from_a_page_left_open(app_env):
    """Free annotation (any dataset, no campaign) is an admin's: an admin demoted to annotator
    while the page is open stores nothing more there, and cannot undo there either."""
    store, dataset_id, _ = seed_run(app_env)
    store.set_role("boss@example.org", "admin", "test")
    store.set_role("admin@example.org", "admin", "test")
    at = app_as("admin@example.org", "pages/annotate.py")
    answer_button(at, "answer_a").click().run()
    assert not at.exception, at.exception
    assert len(store.human_judgements_frame(dataset_id)) == 1
    store.set_role("admin@example.org", "annotator", "boss@example.org")
    answer_button(at, "answer_b").click().run()
    assert not at.exception, at.exception
    assert len(store.human_judgements_frame(dataset_id)) == 1  # nothing stored
    assert "no longer have the rights" in texts(at.error)
    at = app_as("admin@example.org", "pages/annotate.py")  # the annotator's own page now
    assert not any(has_answer_button(at, k) for k in ("answer_a", "answer_b", "undo"))


def test_a_demoted_admin_cannot_start_a_run(app_env, monkeypatch):
    store, _, _ = seed_run(app_env)
    store.set_role("boss@example.org", "admin", "test")
    store.set_role("admin@example.org", "admin", "test")
    started = []
    import pages._common as common
    monkeypatch.setattr(common.api.Job, "start", lambda *a, **k: started.append(a))
    at = app_as("admin@example.org", "pages/run.py")
    n_runs = len(store.list_runs())
    store.set_role("admin@example.org", "annotator", "boss@example.org")
    at.button[[b.label for b in at.button].index("Start")].click().run()
    assert not at.exception, at.exception
    assert len(store.list_runs()) == n_runs and not started


def test_require_checks_the_role_stored_now(app_env):
    """``_auth.require`` itself, as a fragment's rerun or a callback reaches it (without app.py's
    gate in front): the role in the store at that moment decides."""
    store, _, _ = seed_run(app_env)
    store.set_role("boss@example.org", "admin", "test")
    store.set_role("admin@example.org", "admin", "test")

    def script():
        import streamlit as st

        from pages import _auth
        if not st.session_state.get("drawn"):
            _auth.gate()
            st.session_state["drawn"] = True
        else:
            _auth.require()
            st.success("action done")

    at = AppTest.from_function(script, default_timeout=60)
    at.secrets = {k: dict(v) for k, v in AUTH_SECRETS.items()}
    at.user = user("admin@example.org")
    at.run()
    assert not at.exception, at.exception
    store.remove_person("admin@example.org")
    at.run()
    assert "no longer have the rights" in texts(at.error)
    assert "action done" not in texts(at.success)


# ------------------------------------------------------------------------ the cookie secret

@pytest.mark.parametrize("secret", ["REPLACE-WITH-A-LONG-RANDOM-STRING", "short-but-real",
                                    "replace-me-0123456789abcdef0123456789abcdef", "",
                                    # the trial secret an earlier docs/deploy.md printed
                                    "a-long-random-test-secret-0123456789",
                                    # the test suite's own fixed secrets of before
                                    "0123456789abcdef0123456789abcdef0123456789abcdef",
                                    "test-cookie-secret-0123456789abcdef0123",
                                    # long enough, but guessable
                                    "a" * 32, "password" * 4, "f" * 64,
                                    "my-cookie-secret-is-long-enough-1"])
def test_unfit_cookie_secret_refused_at_start_and_locks_a_session(app_env, secrets_file, secret):
    from pages import _auth
    secrets_file.write_text(SECRETS_TOML.replace(GOOD_SECRET, secret))
    secrets_singleton._reset()
    with pytest.raises(SystemExit) as stopped:
        _auth.check_serving()
    assert stopped.value.code == 2
    _auth.forget_startup()
    at = AppTest.from_file(APP, default_timeout=60)
    at.user = user("admin@example.org")
    at.run()
    assert_locked(at)


def test_good_cookie_secret_starts(secrets_file):
    from pages import _auth
    _auth.check_serving()  # no SystemExit
    assert access.cookie_secret_problem({"cookie_secret": GOOD_SECRET}) is None


# ------------------------------------------------------------------------ the server

def test_uncaught_errors_show_no_details():
    conf = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert conf["client"]["showErrorDetails"] == "none"
    from pages import _http_guard
    saved = {k: config.get_option(k) for k in ("client.showErrorDetails", "server.allowedHosts")}
    try:
        config.set_option("client.showErrorDetails", "full")
        _http_guard.harden_server(local=True)
        assert config.get_option("client.showErrorDetails") == "none"
        assert set(config.get_option("server.allowedHosts")) == {"localhost", "127.0.0.1", "::1"}
    finally:
        for k, v in saved.items():
            config.set_option(k, v)


def test_the_toolbar_has_no_deploy_menu_in_any_mode():
    conf = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert conf["client"]["toolbarMode"] == "minimal"
    from pages import _http_guard
    saved = {k: config.get_option(k) for k in ("client.toolbarMode", "client.showErrorDetails",
                                               "server.allowedHosts")}
    try:
        for local in (True, False):
            config.set_option("client.toolbarMode", "developer")
            _http_guard.harden_server(local=local)
            assert config.get_option("client.toolbarMode") == "minimal"
    finally:
        for k, v in saved.items():
            config.set_option(k, v)


def _upgrade_status(port: int, host: str) -> str:
    """The status line a WebSocket upgrade to Streamlit's stream gets with this Host header."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall((f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                   "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        return s.recv(200).split(b"\r\n", 1)[0].decode()


def test_local_mode_answers_localhost_names_only(tmp_path):
    """A real `streamlit run` in local mode: a foreign Host (DNS rebinding) is refused on HTTP and
    on the WebSocket, and the metrics endpoint is closed."""
    db_url = f"sqlite:///{tmp_path / 'compassess.db'}"
    with app_server(tmp_path, db_url, unset=("COMPASSESS_ALLOW_ANONYMOUS",)) as server:
        base, port = server.url, server.port
        assert httpx.get(f"{base}/", headers={"Host": f"localhost:{port}"}).status_code == 200
        assert httpx.get(f"{base}/", headers={"Host": f"[::1]:{port}"}).status_code == 200
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example"):
            r = httpx.get(f"{base}/", headers={"Host": host})
            assert r.status_code == 400, (host, r.status_code)
            assert httpx.get(f"{base}/_stcore/health", headers={"Host": host}).status_code == 400
        assert " 101 " not in _upgrade_status(port, "evil.example") + " "
        assert " 101 " in _upgrade_status(port, f"127.0.0.1:{port}") + " "
        assert httpx.get(f"{base}/_stcore/metrics").status_code == 404


# ------------------------------------------------------------------------ files

def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_store_file_and_folder_are_the_owners_only(tmp_path, monkeypatch):
    from db.connection import default_database_url
    monkeypatch.delenv("COMPASSESS_DATABASE_URL", raising=False)
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))
    url = default_database_url()
    assert _mode(tmp_path / "home") == 0o700
    store = Store(url)
    store.set_role("a@example.org", "admin", "test")
    assert _mode(tmp_path / "home" / "compassess.db") == 0o600
    for extra in ("compassess.db-wal", "compassess.db-shm"):
        if (tmp_path / "home" / extra).exists():
            assert _mode(tmp_path / "home" / extra) == 0o600, extra
    store.close()
    Store(f"sqlite:///{tmp_path / 'elsewhere' / 'runs.db'}").close()
    assert _mode(tmp_path / "elsewhere") == 0o700
    assert _mode(tmp_path / "elsewhere" / "runs.db") == 0o600


def test_one_private_worker_log_per_run_id(tmp_path, monkeypatch):
    from compassess_core.api import background
    from compassess_core.api.background import worker_log_path
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))
    # Names that a file name would spell alike ("a/b", "a_b") get their own logs.
    assert worker_log_path(7).name == "worker-7.log"
    assert worker_log_path(7) != worker_log_path(8)
    log = worker_log_path(7)
    proc = background.start_worker(7, f"sqlite:///{tmp_path / 'none.db'}", log)
    proc.wait(timeout=120)
    assert _mode(log.parent) == 0o700
    assert _mode(log) == 0o600


def test_the_comparison_view_contacts_no_judge_server_outside_the_allowlist(db_url, tmp_path,
                                                                           monkeypatch):
    """A run's stored judge URL (an imported store, an edited row) is not trusted: the view does
    not offer to render through it, so no request can leave for that server."""
    from sqlalchemy import create_engine, text

    from tests.app.test_app_pages import open_page, seed_run
    monkeypatch.setenv("COMPASSESS_DATABASE_URL", db_url)
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("COMPASSESS_OPENAI_BASE_URL", raising=False)
    store, _, run_id = seed_run(db_url)
    info = store.get_run(run_id)
    settings = dict(info.settings, model="openai:http://evil.example:8000/v1#judge")
    engine = create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE runs SET settings = :s WHERE id = :i"),
                     {"s": json.dumps(settings), "i": run_id})
    engine.dispose()
    at = open_page("matrix")
    at.button(key="open_pick").click().run()
    assert not at.exception, at.exception
    assert any("not one of the servers configured" in c.value for c in at.caption)
    assert not [c for c in at.checkbox if "chat template" in c.label]


# ------------------------------------------------------------------------ files under /media


def _asgi_status(guard, path: str, cookie: str | None = None) -> int:
    """The status the guard's ASGI app answers a GET of ``path`` with (the inner app answers 200)."""
    import asyncio

    sent: list[dict] = []
    headers = [(b"host", b"127.0.0.1:8501")]
    if cookie is not None:
        headers.append((b"cookie", cookie.encode("latin-1")))
    scope = {"type": "http", "method": "GET", "path": path, "headers": headers}

    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        sent.append(message)

    asyncio.run(guard(scope, receive, send))
    return sent[0]["status"]


def signed_cookie(claims: dict, secret: str = GOOD_SECRET) -> str:
    """A ``Cookie`` header with Streamlit's sign-in cookie for ``claims``, signed as Streamlit
    signs it (the test knows the secret, as an admin of the deployment would)."""
    from streamlit.web.server.starlette.starlette_app_utils import create_signed_value
    value = create_signed_value(secret, "_streamlit_user", json.dumps(claims))
    return f"_streamlit_user={value.decode()}"


async def _inner_app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"file"})


def test_media_files_need_a_signed_in_person_with_the_files_role(app_env, secrets_file):
    """Streamlit serves downloads and images under ``/media/`` to whoever has the URL; with sign-in
    the guard answers 403 unless the request carries Streamlit's signed sign-in cookie of a person
    who holds, now, the role of the viewer the file was made for (no cookie, a forged one, an
    unverified claim, a removed person, an annotator asking for an admin's file, an expired or
    signed-out token)."""
    from pages import _http_guard
    from pages._http_guard import HttpGuard
    from pages._store import api_store

    guard = HttpGuard(_inner_app, local=False, sign_in=True)
    media = "/media/0123abcd.csv"
    api_store().set_role("ann@example.org", access.ANNOTATOR, "test")
    api_store().set_role("boss@example.org", access.ADMIN, "test")
    admin, ann = signed_cookie(user("boss@example.org")), signed_cookie(user("ann@example.org"))
    assert _asgi_status(guard, media) == 403
    assert _asgi_status(guard, media, signed_cookie(user("boss@example.org"), "x" * 48)) == 403
    assert _asgi_status(guard, media, signed_cookie(user("boss@example.org",
                                                         email_verified="true"))) == 403
    assert _asgi_status(guard, media, signed_cookie(user("nobody@example.org"))) == 403
    assert _asgi_status(guard, media, "_streamlit_user=not-a-signed-value") == 403
    assert _asgi_status(guard, media, admin) == 200
    # A file nobody recorded (an admin page's export) is an admin's: an annotator gets 403.
    assert _asgi_status(guard, media, ann) == 403
    # A file made on an annotator's page is theirs (and an admin's) to fetch.
    with _http_guard._media_lock:
        _http_guard._media_roles["feedbeef"] = access.ANNOTATOR
    assert _asgi_status(guard, "/media/feedbeef.png", ann) == 200
    assert _asgi_status(guard, "/media/feedbeef.png", admin) == 200
    assert _asgi_status(guard, "/_stcore/health") == 200  # only media files are behind sign-in
    # The provider's token bounds the cookie: expired, or without times, it no longer counts.
    assert _asgi_status(guard, media, signed_cookie(user(
        "boss@example.org", **token_times(age_s=7200)))) == 403
    assert _asgi_status(guard, media, signed_cookie(
        {k: v for k, v in user("boss@example.org").items() if k not in ("iat", "exp")})) == 403
    api_store().remove_person("ann@example.org")
    assert _asgi_status(guard, "/media/feedbeef.png", ann) == 403
    # Local and anonymous modes serve files as they serve pages.
    assert _asgi_status(HttpGuard(_inner_app, local=True), media) == 200


def test_media_files_remember_the_role_of_the_viewer_they_were_made_for():
    """The role recorded for a file is that of the viewer of the run that made it; outside a run
    (or forgotten) a file is an admin's."""
    from pages import _http_guard

    def script():
        import streamlit as st

        from compassess_core.people.access import ANNOTATOR, SIGN_IN
        from pages import _http_guard
        from pages._auth import VIEWER_KEY, Viewer
        st.session_state[VIEWER_KEY] = Viewer("ann@example.org", ANNOTATOR, SIGN_IN)
        _http_guard._remember_media("/media/a1b2.csv")
        st.session_state[VIEWER_KEY] = Viewer("boss@example.org", "admin", SIGN_IN)
        _http_guard._remember_media("/media/c3d4.csv")

    at = AppTest.from_function(script, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    assert _http_guard.media_role("a1b2.csv") == access.ANNOTATOR
    assert _http_guard.media_role("c3d4.csv") == access.ADMIN
    assert _http_guard.media_role("never-made.csv") == access.ADMIN
    _http_guard._remember_media("/media/e5f6.csv")  # no run: nobody to make it for
    assert _http_guard.media_role("e5f6.csv") == access.ADMIN


# ------------------------------------------------------------------------ sign-out, token expiry

def test_sign_out_ends_every_earlier_sign_in_of_that_person(app_env):
    """Streamlit's cookie holds the provider's claims for 30 days; the app counts a sign-in only
    while the provider's token is valid (``exp``) and issued (``iat``) after the person's last
    sign-out, kept in the store."""
    store, _, _ = seed_run(app_env)
    store.set_role("admin@example.org", "admin", "test")
    claims = user("admin@example.org")

    def browser() -> AppTest:
        at = AppTest.from_file(APP, default_timeout=60)
        at.secrets = {k: dict(v) for k, v in AUTH_SECRETS.items()}
        at.user = claims
        return at

    assert "Home" in page_titles(browser().run())

    def gate_only():
        from pages import _auth
        _auth.gate()

    # The gate's sidebar alone (AppTest reruns app.py's own page in Streamlit's legacy folder
    # mode, without the gate): its Sign out button.
    at = AppTest.from_function(gate_only, default_timeout=60)
    at.secrets = {k: dict(v) for k, v in AUTH_SECRETS.items()}
    at.user = claims
    at.run()
    at.button(key="sign_out").click().run()
    assert store.signed_out_through("admin@example.org") >= claims["iat"]
    # The same cookie, copied before the sign-out, in another browser: the sign-in page.
    copied = browser().run()
    assert not copied.exception, copied.exception
    assert [b.label for b in copied.button] == ["Sign in"]
    assert "you signed out since this sign-in" in texts(copied.info)
    assert page_titles(copied) == {"CompAssess"}
    # Signing in again (a new token, issued after the sign-out) works.
    claims = user("admin@example.org", **token_times(age_s=-1))
    again = browser().run()
    assert "Home" in page_titles(again)


def test_an_expired_provider_token_ends_the_sign_in(app_env):
    store, _, _ = seed_run(app_env)
    store.set_role("admin@example.org", "admin", "test")
    for claims in (user("admin@example.org", **token_times(age_s=3601)),
                   {k: v for k, v in user("admin@example.org").items() if k != "exp"},
                   user("admin@example.org", iat="yesterday")):
        at = AppTest.from_file(APP, default_timeout=60)
        at.secrets = {k: dict(v) for k, v in AUTH_SECRETS.items()}
        at.user = claims
        at.run()
        assert not at.exception, at.exception
        assert [b.label for b in at.button] == ["Sign in"], claims
        assert "Your sign-in ended" in texts(at.info)


def test_signed_out_through_keeps_the_newest_and_spares_a_new_sign_in():
    # Signed out at 1000.5 with a token issued at 900: every token issued up to second 999 ends.
    assert access.signed_out_through(900, 1000.5) == 999
    # A token issued in the second of the sign-out (or later) is a new sign-in.
    assert access.sign_in_problem({"iat": 1000, "exp": 5000}, 1000.7, 999) is None
    assert "signed out" in access.sign_in_problem({"iat": 999, "exp": 5000}, 1000.7, 999)
    # A sign-out with a token from the future (clock skew) still ends that token.
    assert access.signed_out_through(2000, 1000.5) == 2000
    assert "expired" in access.sign_in_problem({"iat": 1, "exp": 10}, 10.0, None)
    assert access.sign_in_problem({"iat": True, "exp": 5000}, 1.0, None) is not None

"""Sign-in and roles in the app: who is looking, which pages they get, and the refusal to serve
without sign-in beyond this machine.

``app.py`` calls :func:`gate` before it declares the pages: with sign-in configured (``[auth]`` in
``.streamlit/secrets.toml``, Streamlit's OpenID Connect support through ``st.login``/``st.user``) an
anonymous visitor gets the sign-in page and nothing else, a signed-in person without a role gets
a page saying so, and everyone else gets the pages of their role (:func:`allowed`). Without
sign-in the app is single-user (``local``, served on 127.0.0.1 only) or, when explicitly allowed,
``anonymous``; that one person is an admin. Pages ask :func:`viewer` who is looking; an
annotator's identity is always the viewer's, never a URL parameter or a typed name.

:func:`check_serving` runs in the server process when it imports ``app.py`` (before the first
session): it decides once whether sign-in is required (:func:`decide_startup`; a session run
without that import, as under AppTest, decides at the first session) and stops a server with a
broken sign-in configuration or one that would serve without sign-in on a non-loopback address.
What Streamlit serves without running a page (files under ``/media/``, uploads, the WebSocket's
handshake) is checked by the middleware in ``pages/_http_guard.py``, against the same
configuration (:func:`sign_in_required`).

Fail closed: every run checks the configuration against that decision
(:func:`sign_in_required`); secrets that no longer parse or read, an ``[auth]`` that disappeared or
an unfit ``cookie_secret`` lock every URL (:func:`lock_page`), never open it. Every action that
changes something starts with :func:`require`, which reads the person's role as stored at that
moment.

The policy itself (modes, identities, first admins) is ``compassess_core.people.access``; roles are
stored by ``db.people``. This module must never render a user string as markdown unless through
``pages._plain.plain``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from compassess_core.api import access
from compassess_core.api.access import ADMIN, ANNOTATOR
from pages._plain import plain
from pages._store import api_store


#: Where the viewer of the current run is kept (set by :func:`gate`, read by :func:`viewer`).
VIEWER_KEY = "compassess_viewer"
#: Pages an annotator may open; admins and single-user modes get every page.
ANNOTATOR_PAGES = frozenset({"pages/annotate.py", "pages/agreement.py"})
#: Pages that exist only with sign-in (there is nobody to manage otherwise).
SIGN_IN_PAGES = frozenset({"pages/people.py"})


@dataclass(frozen=True)
class Viewer:
    """Who is looking: their identity, their role (None: signed in without one) and the mode."""

    identity: str
    role: str | None
    mode: str
    name: str = ""

    @property
    def is_admin(self) -> bool:
        return self.role == ADMIN

    @property
    def signed_in(self) -> bool:
        return self.mode == access.SIGN_IN


# ------------------------------------------------------------------------------ configuration

class ConfigurationError(Exception):
    """The sign-in configuration cannot be trusted now: the app is locked (:func:`lock_page`)."""


@dataclass(frozen=True)
class Startup:
    """What the configuration said when this process started (:func:`decide_startup`)."""

    sign_in: bool


#: Decided once per process: by :func:`check_serving` when the server imports app.py, else by the
#: first session (AppTest, or an ASGI server that skipped it). Never changed afterwards.
_startup: Startup | None = None
_startup_lock = threading.Lock()


def decide_startup(sign_in: bool) -> Startup:
    """Whether sign-in is required, decided by the first caller and kept for the process."""
    global _startup
    with _startup_lock:
        if _startup is None:
            _startup = Startup(sign_in)
        return _startup


def forget_startup() -> None:
    """Forget the start-up decision (tests only: each test stands for a fresh server)."""
    global _startup
    with _startup_lock:
        _startup = None


def _secrets_files_exist() -> bool:
    from streamlit import config
    return any(Path(p).exists() for p in (config.get_option("secrets.files") or []))


#: The secrets files as last seen by :func:`notice_secrets_changes` (None: not looked at yet, which
#: counts as a change: what Streamlit parsed before the first look is parsed again).
_secrets_seen: tuple | None = None
_secrets_seen_lock = threading.Lock()
#: Larger secrets files are compared by their size and times only.
_HASHED_SECRETS_BYTES = 1 << 20


def _path_state(path: str, depth: int = 0) -> tuple:
    """What ``path`` holds now, as a value that changes whenever its content does: kind, size,
    times and (small files) a hash of the bytes; a folder (Streamlit's one-folder-per-secret
    layout) with its entries two levels down."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return (path, "missing")
    except OSError as e:
        return (path, "unreadable", type(e).__name__)
    state: tuple = (path, info.st_mode, info.st_ino, info.st_size, info.st_mtime_ns,
                    info.st_ctime_ns)
    if stat.S_ISDIR(info.st_mode):
        if depth >= 2:
            return state
        try:
            names = sorted(os.listdir(path))
        except OSError as e:
            return (*state, "unlistable", type(e).__name__)
        return (*state, tuple(_path_state(os.path.join(path, n), depth + 1) for n in names))
    if stat.S_ISREG(info.st_mode) and info.st_size <= _HASHED_SECRETS_BYTES:
        try:
            with open(path, "rb") as f:
                return (*state, hashlib.sha256(f.read()).hexdigest())
        except OSError as e:
            return (*state, "unreadable", type(e).__name__)
    return state


def notice_secrets_changes() -> None:
    """Make Streamlit read the secrets files again when they changed since the last look: called
    on every request (``pages/_http_guard.py``) and every run (:func:`_auth_section`).

    Streamlit watches the secrets files itself, but its watcher stops after one edit that does
    not parse, or when the file is deleted or replaced by a folder: later edits (the fix, a
    rotated ``cookie_secret``) went unnoticed until a restart and a cookie signed with the old
    secret kept working. Looking at the files' state here (a few ``stat`` calls and the hash of a
    small file) does not depend on that watcher. Only the real secrets object is reset (AppTest
    replaces ``st.secrets`` with its own)."""
    from streamlit import config
    from streamlit.runtime.secrets import secrets_singleton

    global _secrets_seen
    now = tuple(_path_state(p) for p in (config.get_option("secrets.files") or []))
    with _secrets_seen_lock:
        if now == _secrets_seen:
            return
        _secrets_seen = now
    if st.secrets is secrets_singleton:
        # Streamlit's own reset (private in 1.67, as its watcher's callback uses it): the next
        # read parses the files again, or fails and locks the app (sign_in_required).
        secrets_singleton._reset()


def unreadable_secrets_lock() -> None:
    """Make a secrets path that exists but cannot be read (a folder where ``secrets.toml`` was,
    a file the app's user may not read) count for Streamlit as secrets that do not load, the
    way a file that does not parse counts, instead of an ``OSError`` out of its secrets loader.

    Streamlit 1.67's ``Secrets._parse_toml_file`` catches ``FileNotFoundError`` only, and its
    WebSocket handler asks the secrets on every connection (``is_xsrf_enabled``): any other
    ``OSError`` escaped from there and killed every connection, so no page could say that the
    app is locked. Counted as not loading, each run reaches :func:`sign_in_required`, which
    locks the app (:func:`lock_page`), and the HTTP guard keeps files and uploads closed.
    Installed once per process (``pages/_http_guard.harden_server``), on the real secrets
    object only (a private method, wrapped as :func:`notice_secrets_changes` uses ``_reset``)."""
    from streamlit.errors import StreamlitSecretNotFoundError
    from streamlit.runtime.secrets import secrets_singleton

    parse = secrets_singleton._parse_toml_file
    if getattr(parse, "_compassess_locks", False):
        return

    def parse_or_refuse(path: str):
        try:
            return parse(path)
        except FileNotFoundError:
            raise
        except OSError as e:
            raise StreamlitSecretNotFoundError(
                "The secrets file {path} cannot be read: {error}", path=path,
                error=type(e).__name__, error_id="unreadable-secrets-file") from e

    parse_or_refuse._compassess_locks = True
    # Secrets refuses attribute assignment (its own __setattr__): set it on the instance.
    object.__setattr__(secrets_singleton, "_parse_toml_file", parse_or_refuse)


def _auth_section() -> dict:
    """The ``[auth]`` section of the secrets, read now ({} when there is no secrets file at all).

    Raises
    ------
    ConfigurationError
        A secrets file exists but cannot be read or parsed (a typo while someone edits it, wrong
        permissions): never taken for "no sign-in".
    """
    notice_secrets_changes()
    try:
        section = st.secrets.get("auth")
    except FileNotFoundError as e:  # StreamlitSecretNotFoundError: none found, or unparseable
        if _secrets_files_exist():
            raise ConfigurationError(f"the secrets file cannot be parsed ({type(e).__name__})") from e
        return {}
    except Exception as e:  # noqa: BLE001 - unreadable: locked, never open
        raise ConfigurationError(f"the secrets cannot be read ({type(e).__name__})") from e
    if section is None:
        return {}
    if not hasattr(section, "to_dict") and not isinstance(section, dict):
        raise ConfigurationError("[auth] in the secrets is not a section")
    return section.to_dict() if hasattr(section, "to_dict") else dict(section)


def sign_in_required() -> bool:
    """Whether every page requires a signed-in person: the start-up decision, checked against the
    configuration as it is now.

    Raises
    ------
    ConfigurationError
        The secrets cannot be read, ``[auth]`` disappeared (or appeared) since start-up, or its
        ``cookie_secret`` is unfit. The app is locked until an admin fixes it (and restarts).
    """
    try:
        section = _auth_section()
    except ConfigurationError:
        decide_startup(True)  # a first look that fails: sign-in stays required in this process
        raise
    startup = decide_startup(bool(section))
    if startup.sign_in and not section:
        raise ConfigurationError("the [auth] section was removed from the secrets while the app "
                                 "runs; sign-in stays required")
    if section and not startup.sign_in:
        raise ConfigurationError("sign-in ([auth]) was configured after the app started; restart "
                                 "the app to use it")
    if section:
        problem = access.cookie_secret_problem(section)
        if problem is not None:
            raise ConfigurationError(problem)
    return startup.sign_in


def sign_in_configured() -> bool:
    """Every page requires a signed-in person (:func:`sign_in_required`; True when locked)."""
    try:
        return sign_in_required()
    except ConfigurationError:
        return True


def providers() -> list[str]:
    """The identity providers of ``[auth]``: ``"default"`` when its keys are at the top, else the
    names of its sub-sections that configure a client (``[auth.company]``)."""
    try:
        section = _auth_section()
    except ConfigurationError:
        return []
    if "client_id" in section:
        return ["default"]
    return [name for name, sub in section.items() if isinstance(sub, dict) and "client_id" in sub]


def server_address() -> str | None:
    from streamlit import config
    return config.get_option("server.address") or None


def check_serving() -> bool:
    """The server process's start-up check, once, when it imports app.py: decides whether sign-in
    is required (:func:`decide_startup`), and refuses to start (exit status 2) with a secrets file
    that cannot be parsed, an unfit ``cookie_secret``, or without sign-in on a non-loopback
    address (unless ``COMPASSESS_ALLOW_ANONYMOUS=1``). Returns whether the server is in local
    mode (no sign-in, on a loopback address): ``pages._http_guard`` then answers localhost only."""
    from streamlit import config

    try:
        configured = sign_in_required()
    except ConfigurationError as e:
        _refuse(f"refusing to start: {e} (docs/deploy.md).")
    # `streamlit run` binds the socket to server.address before it imports app.py (and says so in
    # config._server_mode); any other ASGI server (`uvicorn app:app --host ...`) binds where its
    # own options say, which this process cannot see: then the address counts as unknown.
    launched_by_streamlit = getattr(config, "_server_mode", None) is not None
    address = server_address() if launched_by_streamlit else None
    problem = access.serving_problem(configured, address)
    if problem is not None:
        _refuse(problem)
    return not configured and access.is_loopback(address)


def _refuse(problem: str) -> None:
    print(f"CompAssess: {problem}", file=sys.stderr, flush=True)
    raise SystemExit(2)


# ------------------------------------------------------------------------------ the viewer

#: Why this session's sign-in ended (shown on the sign-in page it gets instead).
ENDED_KEY = "compassess_sign_in_ended"
#: The ``cookie_secret`` (its hash) this session's sign-in was accepted under.
SIGNED_UNDER_KEY = "compassess_signed_under"


def signed_out_through(identity: str) -> int | None:
    """The store's record of ``identity``'s last sign-out (``access.signed_out_through``)."""
    return api_store().signed_out_through(identity)


def record_sign_out(identity: str, token_issued_at: object) -> None:
    """``identity`` signs out now with a token issued at ``token_issued_at``: that token and the
    person's earlier ones stop signing them in (:func:`sign_in_ended`)."""
    api_store().record_sign_out(identity, token_issued_at)


def sign_in_ended(identity: str, claims) -> str | None:
    """Why the sign-in that ``claims`` (the provider's ID-token claims, from Streamlit's cookie)
    stand for no longer counts (None while it does): the token expired, or the person signed out
    since it was issued (``access.sign_in_problem``)."""
    return access.sign_in_problem(claims, time.time(), signed_out_through(identity))


def _cookie_secret_hash() -> str:
    secret = str(_auth_section().get("cookie_secret") or "")
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _signed_in_viewer() -> Viewer | None:
    """The signed-in person with their role (the first admins' role is written on the way), or
    None for an anonymous visitor and for a sign-in that no longer counts: the provider's token
    expired, the person signed out since (from another tab, or a copied cookie), or the
    ``cookie_secret`` changed since this session was signed in (Streamlit checked its cookie
    only when the session connected). The sign-in page then says why (:data:`ENDED_KEY`)."""
    if not st.user.is_logged_in:
        return None
    claims = st.user.to_dict()
    identity = access.identity_from_claims(claims)
    secret_now = _cookie_secret_hash()
    signed_under = st.session_state.setdefault(SIGNED_UNDER_KEY, secret_now)
    ended = ("the app's sign-in key was changed; sign in again"
             if signed_under != secret_now else sign_in_ended(identity, claims))
    if ended is not None:
        st.session_state[ENDED_KEY] = ended
        return None
    if identity in access.configured_admins() and api_store().role_of(identity) != ADMIN:
        api_store().set_role(identity, ADMIN, access.FROM_CONFIGURATION)
    name = str(claims.get("name") or identity)
    return Viewer(identity, api_store().role_of(identity), access.SIGN_IN, name)


def current_viewer() -> Viewer | None:
    """Who is looking now (None: sign-in is required and nobody is signed in), read afresh: the
    configuration, the provider's claims and the role stored now.

    Without sign-in the server only started on a loopback address (:func:`check_serving`) or with
    anonymous access allowed, so the mode follows from that variable and the address.

    Raises
    ------
    ConfigurationError
        The configuration cannot be trusted now (:func:`sign_in_required`).
    access.AccessError
        The signed-in account gives no identity that can be trusted.
    """
    if sign_in_required():
        return _signed_in_viewer()
    mode = (access.ANONYMOUS if access.anonymous_allowed()
            and not access.is_loopback(server_address()) else access.LOCAL)
    identity = access.local_identity()
    return Viewer(identity, ADMIN, mode, identity)


def has_role(who: Viewer | None, role: str) -> bool:
    """``who`` holds ``role`` or more (an admin may do what an annotator may)."""
    if who is None or who.role is None:
        return False
    return who.role == ADMIN or who.role == role


def require(role: str = ADMIN) -> Viewer:
    """The first line of every action that changes something (a widget callback, an ``if
    st.button(...)`` branch): the signed-in person, with their role as stored at this moment,
    when they still hold ``role`` (or more) and are the person this session's pages were drawn
    for; otherwise the run stops here with a refusal and nothing is changed.

    Pages are drawn for the role a person had when the page was drawn, and Streamlit runs widget
    callbacks (and a fragment's reruns) before app.py's gate: without this, a removed admin could
    still start a run from a page left open, and a removed annotator could still store labels.
    """
    refusal = "You no longer have the rights for this action; nothing was changed."
    try:
        who = current_viewer()
    except ConfigurationError:
        who, refusal = None, "The app's configuration is broken; nothing was changed. Ask an admin."
    except access.AccessError:
        who = None
    drawn_for = st.session_state.get(VIEWER_KEY)
    same_person = (who is not None and isinstance(drawn_for, Viewer)
                   and drawn_for.identity == who.identity)
    if not has_role(who, role) or not same_person:
        if who is not None:
            st.session_state[VIEWER_KEY] = who
        st.error(refusal, icon=":material/lock:")
        st.stop()
    st.session_state[VIEWER_KEY] = who
    return who


def recheck(role: str = ADMIN) -> Viewer:
    """The first line of every refresh of a live view (a fragment with ``run_every``, such as the
    Run page's progress): the viewer read afresh, when they still hold ``role`` (or more) and are
    the person the page was drawn for. Otherwise the whole app reruns, so app.py's gate draws the
    lock page, the sign-in page or the no-role page instead of the page, and the refreshes stop
    with it: a removed person, or a configuration that broke, gets no more data.

    A fragment's refresh runs without app.py's gate (like a callback), which is why it must ask.
    """
    try:
        who = current_viewer()
    except (ConfigurationError, access.AccessError):
        who = None
    drawn_for = st.session_state.get(VIEWER_KEY)
    if (not has_role(who, role) or not isinstance(drawn_for, Viewer)
            or drawn_for.identity != who.identity):
        st.rerun(scope="app")
    return who


def viewer() -> Viewer:
    """The viewer of this run, as :func:`gate` found them (pages call this)."""
    found = st.session_state.get(VIEWER_KEY)
    return found if isinstance(found, Viewer) else gate()


def allowed(page: str, who: Viewer) -> bool:
    """May ``who`` open ``page`` (a path such as ``pages/run.py``)?"""
    if page in SIGN_IN_PAGES and not who.signed_in:
        return False
    if who.role == ADMIN:
        return True
    return who.role == ANNOTATOR and page in ANNOTATOR_PAGES


def page_link(page: str, where=st, **kwargs) -> None:
    """``st.page_link`` to ``page`` when the viewer may open it (a link to a page outside their
    role would be an error: the page is not declared for them)."""
    if allowed(page, viewer()):
        where.page_link(page, **kwargs)


def guard(page_file: str) -> Viewer:
    """The first line of every page: the viewer, read afresh, when they may open this page;
    otherwise the run stops here (sign-in page, or a refusal).

    ``app.py`` only declares the pages a viewer may open, so this never refuses in a normal run;
    it keeps a page closed if it is ever run without app.py's navigation (Streamlit's legacy
    ``pages/`` folder mode, which ``AppTest.switch_page`` uses).
    """
    who = _viewer_or_sign_in()
    page = f"pages/{Path(page_file).name}"
    if who.role is None or not allowed(page, who):
        st.error("This page is not available to your account.", icon=":material/lock:")
        st.stop()
    return who


# ------------------------------------------------------------------------------ the gate

def gate() -> Viewer:
    """The viewer of this run, with the sidebar's account box; stops the run with the sign-in
    page (anonymous visitor) or the no-role page (signed in without a role)."""
    who = _viewer_or_sign_in()
    _account_box(who)
    if who.role is None:
        _only_page(lambda: no_role_page(who), "no-role")
    return who


def _viewer_or_sign_in() -> Viewer:
    """The viewer (kept for this run's pages), or the run stops with the lock page (configuration
    broken), the sign-in page (nobody signed in) or the page saying why the account cannot be
    used."""
    try:
        who = current_viewer()
    except ConfigurationError as e:
        st.session_state.pop(VIEWER_KEY, None)
        print(f"CompAssess: configuration error, the app is locked: {e}", file=sys.stderr,
              flush=True)
        _only_page(lock_page, "configuration-error")
    except access.AccessError as e:
        st.session_state.pop(VIEWER_KEY, None)
        refused = e  # ``e`` is unbound once the except block ends; the page may draw later
        _only_page(lambda: account_error_page(refused), "account")
    if who is None:
        st.session_state.pop(VIEWER_KEY, None)
        _only_page(sign_in_page, "sign-in")
    st.session_state[VIEWER_KEY] = who
    return who


@functools.cache
def page_names() -> tuple[str, ...]:
    """The URL names of the app's pages (``pages/*.py`` but ``_*``), read from the folder once per
    process: every anonymous run draws the sign-in page at each of them, and listing the folder
    on each run made that run cost a visitor nothing and the server much."""
    return tuple(sorted(p.stem for p in Path(__file__).parent.glob("*.py")
                        if not p.name.startswith("_")))


def _only_page(render, url_path: str) -> None:
    """Serve ``render`` as the app's one page, whatever the URL asks for, and stop the run.

    Declared through ``st.navigation`` like every other page, so no URL can reach a page file
    directly (Streamlit's legacy ``pages/`` folder mode stays off, see app.py).
    """
    # Every page's own URL answers with this page too (a deep link from a colleague shows the
    # sign-in page, not "page not found").
    others = page_names()
    st.navigation([st.Page(render, title="CompAssess", url_path=url_path, default=True)]
                  + [st.Page(render, title="CompAssess", url_path=name, visibility="hidden")
                     for name in others if name != url_path], position="hidden").run()
    st.stop()


def lock_page() -> None:
    """What everyone sees while the configuration cannot be trusted: no data, no sign-in, no
    detail (the server log says what is wrong)."""
    st.title("CompAssess")
    st.error("Configuration error: this app is locked until its configuration is fixed. "
             "Ask an admin of this deployment.", icon=":material/lock:")


def account_error_page(error: Exception) -> None:
    st.title("CompAssess")
    st.error(f"This account cannot be used: {plain(str(error))}", icon=":material/block:")
    if st.button("Sign out", icon=":material/logout:"):
        st.logout()


def sign_in_page() -> None:
    """What an anonymous visitor sees: what the app is and how to sign in, no data."""
    st.title("CompAssess")
    ended = st.session_state.pop(ENDED_KEY, None)
    if ended:
        st.info(f"Your sign-in ended: {ended}.", icon=":material/logout:")
    st.markdown("LLM comparative assessment for a team. **Sign in** with your organisation's "
                "account to annotate pairs or to run and audit judges.")
    names = providers()
    for name in names:
        label = "Sign in" if name == "default" or len(names) == 1 else f"Sign in with {name}"
        if st.button(label, type="primary", icon=":material/login:", key=f"login_{name}"):
            st.login() if name == "default" else st.login(name)
    st.caption("Access is given by an admin of this deployment. Nothing is shown before you sign in.")


def no_role_page(who: Viewer) -> None:
    st.title("CompAssess")
    st.warning(f"You are signed in as {plain(who.identity)}, but nobody has given this account "
               "a role yet. Ask an admin of this deployment to add you on the People page "
               "(as an annotator or an admin).", icon=":material/person_off:")


def _account_box(who: Viewer) -> None:
    with st.sidebar:
        if who.mode == access.SIGN_IN:
            role = who.role or "no role"
            st.caption(f"Signed in as {plain(who.identity)} ({role})")
            if st.button("Sign out", icon=":material/logout:", key="sign_out"):
                # Ended here as well as by the middleware at /auth/logout: the cookie stops
                # counting even if the browser never follows the sign-out redirect.
                record_sign_out(who.identity, st.user.to_dict().get("iat"))
                st.logout()
        elif who.mode == access.LOCAL:
            st.caption(f"Single-user local mode (this machine only, no sign-in): you are "
                       f"{plain(who.identity)}.")
        else:
            st.warning(f"Anonymous access ({access.ALLOW_ANONYMOUS_ENV}=1): anyone who reaches "
                       "this server can do everything.", icon=":material/warning:")

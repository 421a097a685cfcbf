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
session) and stops a server that would serve without sign-in on a non-loopback address.

The policy itself (modes, identities, first admins) is ``compassess_core.access``; roles are
stored by ``db.people``. This module must never render a user string as markdown unless through
``pages._plain.plain``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from compassess_core import access
from compassess_core.access import ADMIN, ANNOTATOR
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

def _auth_section() -> dict:
    """The ``[auth]`` section of the secrets ({} when there is none or no secrets file)."""
    try:
        section = st.secrets.get("auth")
    except Exception:  # noqa: BLE001 - no secrets file, or one that cannot be read: no sign-in
        return {}
    return section.to_dict() if hasattr(section, "to_dict") else dict(section or {})


def sign_in_configured() -> bool:
    """``[auth]`` is configured: every page requires a signed-in person."""
    return bool(_auth_section())


def providers() -> list[str]:
    """The identity providers of ``[auth]``: ``"default"`` when its keys are at the top, else the
    names of its sub-sections that configure a client (``[auth.company]``)."""
    section = _auth_section()
    if "client_id" in section:
        return ["default"]
    return [name for name, sub in section.items() if isinstance(sub, dict) and "client_id" in sub]


def server_address() -> str | None:
    from streamlit import config
    return config.get_option("server.address") or None


def check_serving() -> None:
    """Refuse to start a server without sign-in on a non-loopback address (unless
    ``COMPASSESS_ALLOW_ANONYMOUS=1``); called once by the server process."""
    from streamlit.runtime.secrets import secrets_singleton

    try:
        configured = secrets_singleton.load_if_toml_exists() and bool(secrets_singleton.get("auth"))
    except Exception:  # noqa: BLE001 - an unreadable secrets file configures nothing
        configured = False
    from streamlit import config

    # `streamlit run` binds the socket to server.address before it imports app.py (and says so in
    # config._server_mode); any other ASGI server (`uvicorn app:app --host ...`) binds where its
    # own options say, which this process cannot see: then the address counts as unknown.
    launched_by_streamlit = getattr(config, "_server_mode", None) is not None
    problem = access.serving_problem(configured, server_address() if launched_by_streamlit else None)
    if problem is not None:
        print(f"CompAssess: {problem}", file=sys.stderr, flush=True)
        raise SystemExit(2)


def apply_upload_limit() -> None:
    """Streamlit's own upload limit follows ``COMPASSESS_MAX_UPLOAD_MB`` (the server refuses a
    larger request body before it reaches a page)."""
    from streamlit import config

    from compassess_core.limits import max_upload_mb
    config.set_option("server.maxUploadSize", max_upload_mb())


# ------------------------------------------------------------------------------ the viewer

def _signed_in_viewer() -> Viewer | None:
    """The signed-in person with their role (the first admins' role is written on the way), or
    None for an anonymous visitor."""
    if not st.user.is_logged_in:
        return None
    claims = st.user.to_dict()
    identity = access.identity_from_claims(claims)
    if identity in access.configured_admins() and api_store().role_of(identity) != ADMIN:
        api_store().set_role(identity, ADMIN, access.FROM_CONFIGURATION)
    name = str(claims.get("name") or identity)
    return Viewer(identity, api_store().role_of(identity), access.SIGN_IN, name)


def current_viewer() -> Viewer | None:
    """Who is looking now (None: sign-in is required and nobody is signed in).

    Without sign-in the server only started on a loopback address (:func:`check_serving`) or with
    anonymous access allowed, so the mode follows from that variable and the address.
    """
    if sign_in_configured():
        return _signed_in_viewer()
    mode = (access.ANONYMOUS if access.anonymous_allowed()
            and not access.is_loopback(server_address()) else access.LOCAL)
    identity = access.local_identity()
    return Viewer(identity, ADMIN, mode, identity)


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
    """The viewer (kept for this run's pages), or the run stops with the sign-in page (nobody
    signed in) or the page saying why the account cannot be used."""
    try:
        who = current_viewer()
    except access.AccessError as e:
        refused = e  # ``e`` is unbound once the except block ends; the page may draw later
        _only_page(lambda: account_error_page(refused), "account")
    if who is None:
        _only_page(sign_in_page, "sign-in")
    st.session_state[VIEWER_KEY] = who
    return who


def _only_page(render, url_path: str) -> None:
    """Serve ``render`` as the app's one page, whatever the URL asks for, and stop the run.

    Declared through ``st.navigation`` like every other page, so no URL can reach a page file
    directly (Streamlit's legacy ``pages/`` folder mode stays off, see app.py).
    """
    # Every page's own URL answers with this page too (a deep link from a colleague shows the
    # sign-in page, not "page not found").
    others = sorted(p.stem for p in Path(__file__).parent.glob("*.py") if not p.name.startswith("_"))
    st.navigation([st.Page(render, title="CompAssess", url_path=url_path, default=True)]
                  + [st.Page(render, title="CompAssess", url_path=name, visibility="hidden")
                     for name in others if name != url_path], position="hidden").run()
    st.stop()


def account_error_page(error: Exception) -> None:
    st.title("CompAssess")
    st.error(f"This account cannot be used: {plain(str(error))}", icon=":material/block:")
    if st.button("Sign out", icon=":material/logout:"):
        st.logout()


def sign_in_page() -> None:
    """What an anonymous visitor sees: what the app is and how to sign in, no data."""
    st.title("CompAssess")
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
                st.logout()
        elif who.mode == access.LOCAL:
            st.caption(f"Single-user local mode (this machine only, no sign-in): you are "
                       f"{plain(who.identity)}.")
        else:
            st.warning(f"Anonymous access ({access.ALLOW_ANONYMOUS_ENV}=1): anyone who reaches "
                       "this server can do everything.", icon=":material/warning:")

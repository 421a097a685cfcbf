"""The app's HTTP front door: the ASGI middleware in front of Streamlit and the checks of
Streamlit's signed sign-in cookie that it makes before a request reaches Streamlit.

``app.py`` (in the server process, before the first session) sets Streamlit's options
(:func:`harden_server`, :func:`apply_upload_limit`) and gives ``st.App`` the middleware
(:func:`serving_middleware`, :class:`HttpGuard`). Streamlit serves some routes without running a
page: files under ``/media/`` (downloads, images) and uploads; those are checked here against the
sign-in cookie (:func:`cookie_person`), the way pages are checked by ``pages/_auth.py``'s gate.

Whether sign-in is required and whether the configuration can be trusted now is
``pages/_auth.py``'s (``sign_in_required``); the policy itself is ``compassess_core.access``.
"""

from __future__ import annotations

import json
import logging

from compassess_core import access
from pages._auth import ConfigurationError, server_address, sign_in_required
from pages._store import api_store

log = logging.getLogger(__name__)

#: Host names a local-mode server answers (DNS rebinding sends another name to 127.0.0.1).
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


def harden_server(local: bool) -> None:
    """Streamlit options every CompAssess server gets: uncaught errors show a generic message,
    never a traceback (admins read the server log); the toolbar has no Deploy menu nor developer
    options (the app is served, not developed, here: ``.streamlit/config.toml`` says the same,
    but Streamlit reads that file only from the working directory); and in local mode WebSocket
    connections only from a localhost Host name (``server.allowedHosts``; :class:`HttpGuard`
    covers the HTTP routes)."""
    from streamlit import config
    config.set_option("client.showErrorDetails", "none")
    config.set_option("client.toolbarMode", "minimal")
    if local:
        config.set_option("server.allowedHosts", list(LOCAL_HOSTS))


def apply_upload_limit() -> None:
    """Streamlit's own upload limit follows ``COMPASSESS_MAX_UPLOAD_MB`` (the server refuses a
    larger request body before it reaches a page)."""
    from streamlit import config

    from compassess_core.limits import max_upload_mb
    config.set_option("server.maxUploadSize", max_upload_mb())


def serving_middleware() -> list:
    """The middleware app.py gives ``st.App`` (:class:`HttpGuard`). A configuration that cannot
    be read keeps media files behind sign-in (fail closed)."""
    from starlette.middleware import Middleware

    try:
        sign_in = sign_in_required()
        local = not sign_in and access.is_loopback(server_address())
    except ConfigurationError:
        sign_in, local = True, False
    return [Middleware(HttpGuard, local=local, media_needs_sign_in=sign_in)]


class HttpGuard:
    """ASGI middleware in front of Streamlit (``st.App(middleware=...)``): answers 404 to
    ``/_stcore/metrics`` (Streamlit 1.67 has no option to close it and it needs no sign-in), in
    local mode answers 400 to any request (HTTP or WebSocket) whose Host is not a localhost name,
    which stops DNS rebinding from driving the local admin app, and with sign-in answers 403 to a
    request for a file under ``/media/`` (downloads, charts' images) from anyone who is not signed
    in with a role now (:func:`media_viewer_allowed`): Streamlit serves those files to whoever
    has the URL."""

    def __init__(self, app, local: bool, media_needs_sign_in: bool = False) -> None:
        self.app, self.local, self.media_needs_sign_in = app, local, media_needs_sign_in

    async def __call__(self, scope, receive, send) -> None:
        if scope.get("type") not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        path = scope.get("path") or ""
        if path.rstrip("/").endswith("/_stcore/metrics"):
            return await self._refuse(scope, receive, send, 404, b"Not found")
        if self.local and not is_local_host(_header(scope, b"host")):
            return await self._refuse(scope, receive, send, 400, b"Host not allowed")
        if (self.media_needs_sign_in and scope["type"] == "http" and "/media/" in path
                and not media_viewer_allowed(_header(scope, b"cookie"))):
            return await self._refuse(scope, receive, send, 403, b"Sign in to download this file")
        return await self.app(scope, receive, send)

    @staticmethod
    async def _refuse(scope, receive, send, status: int, body: bytes) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/plain"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def is_local_host(host: str | None) -> bool:
    """A Host header naming this machine by a localhost name (any port)."""
    if not host:
        return False
    from urllib.parse import urlsplit
    try:
        parsed = urlsplit(f"//{host}")
        _ = parsed.port
    except ValueError:
        return False
    name = (parsed.hostname or "").lower().rstrip(".")
    return not parsed.username and name in LOCAL_HOSTS and not parsed.path


def media_viewer_allowed(cookie_header: str | None) -> bool:
    """Whether a request carrying ``cookie_header`` comes from a person signed in now who holds a
    role: Streamlit's signed sign-in cookie (``_streamlit_user``, checked with the cookie secret
    the way Streamlit checks it) names an identity (:func:`access.identity_from_claims`) whose
    stored role is not None. Anything that cannot be read (no cookie, a bad signature, a
    configuration that fails to parse, a store that cannot be reached) refuses."""
    from http.cookies import CookieError, SimpleCookie

    from streamlit.auth_util import get_cookie_with_chunks
    from streamlit.web.server.server_util import AUTH_COOKIE_NAME, get_cookie_secret
    from streamlit.web.server.starlette.starlette_app_utils import decode_signed_value

    if not cookie_header:
        return False
    try:
        sign_in_required()
        jar = SimpleCookie()
        jar.load(cookie_header)
        secret = get_cookie_secret()

        def signed_cookie(name: str) -> bytes | None:
            morsel = jar.get(name)
            return None if morsel is None else decode_signed_value(secret, name, morsel.value)

        decoded = get_cookie_with_chunks(signed_cookie, AUTH_COOKIE_NAME)
        if decoded is None:
            return False
        claims = json.loads(decoded)
        if not isinstance(claims, dict) or claims.get("is_logged_in") is not True:
            return False
        identity = access.identity_from_claims(claims)
        return (identity in access.configured_admins()
                or api_store().role_of(identity) is not None)
    except (CookieError, ConfigurationError, access.AccessError, ValueError, TypeError):
        return False
    except Exception:  # a store that cannot be reached: the file stays locked, the log says why
        log.exception("checking who asks for a media file")
        return False

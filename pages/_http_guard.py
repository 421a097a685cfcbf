"""The app's HTTP front door: the ASGI middleware in front of Streamlit and the checks of
Streamlit's signed sign-in cookie that it makes before a request reaches Streamlit.

``app.py`` (in the server process, before the first session) sets Streamlit's options
(:func:`harden_server`, :func:`apply_upload_limit`) and gives ``st.App`` the middleware
(:func:`serving_middleware`, :class:`HttpGuard`). Streamlit serves some routes without running a
page: files under ``/media/`` (downloads, images) and uploads; those are checked here against the
sign-in cookie (:func:`cookie_person`), the way pages are checked by ``pages/_auth.py``'s gate.

Whether sign-in is required and whether the configuration can be trusted now is
``pages/_auth.py``'s (``sign_in_required``); the policy itself is ``compassess_core.people.access``.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import OrderedDict
from urllib.parse import urlsplit

from starlette.concurrency import run_in_threadpool

from compassess_core.api import access
from compassess_core.api.access import ADMIN, ANNOTATOR, max_upload_bytes
from pages._auth import (VIEWER_KEY, ConfigurationError, notice_secrets_changes, record_sign_out,
                         server_address, sign_in_ended, sign_in_required)
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

    from pages._auth import unreadable_secrets_lock
    unreadable_secrets_lock()  # a folder in place of secrets.toml locks, never kills sockets
    config.set_option("client.showErrorDetails", "none")
    config.set_option("client.toolbarMode", "minimal")
    if local:
        config.set_option("server.allowedHosts", list(LOCAL_HOSTS))


def apply_upload_limit() -> None:
    """Streamlit's own upload limit follows ``COMPASSESS_MAX_UPLOAD_MB`` (the server refuses a
    larger request body before it reaches a page)."""
    from streamlit import config

    from compassess_core.api.access import max_upload_mb
    config.set_option("server.maxUploadSize", max_upload_mb())


def serving_middleware() -> list:
    """The middleware app.py gives ``st.App`` (:class:`HttpGuard`). A configuration that cannot
    be read keeps files and uploads behind sign-in (fail closed)."""
    from starlette.middleware import Middleware

    try:
        sign_in = sign_in_required()
        local = not sign_in and access.is_loopback(server_address())
    except ConfigurationError:
        sign_in, local = True, False
    return [Middleware(HttpGuard, local=local, sign_in=sign_in)]


#: On every HTTP response: no other site may frame the app (clickjacking). ``frame-ancestors``
#: for current browsers, ``X-Frame-Options`` for old ones; the app's own frames stay allowed.
ANTI_FRAMING_HEADERS = ((b"content-security-policy", b"frame-ancestors 'self'"),
                        (b"x-frame-options", b"SAMEORIGIN"))
_UPLOAD_PATH = re.compile(r"/_stcore/upload_file/([^/]+)/([^/]+)/?$")
_MEDIA_PATH = re.compile(r"/media/([^/]+)$")


class HttpGuard:
    """ASGI middleware in front of Streamlit (``st.App(middleware=...)``). On every request,
    before Streamlit sees it:

    * the secrets files are looked at again (``_auth.notice_secrets_changes``), so a fixed or
      rotated ``cookie_secret`` counts from the next request on, for Streamlit's own cookie
      check on the WebSocket too;
    * ``/_stcore/metrics`` answers 404 (Streamlit 1.67 has no option to close it and it needs no
      sign-in);
    * in local mode, a request (HTTP or WebSocket) whose Host is not a localhost name answers
      400, which stops DNS rebinding from driving the local admin app, and a WebSocket whose
      Origin is a page of another port or host (:func:`is_local_origin`) is closed: a browser
      page elsewhere on this machine cannot drive the app either;
    * an upload (``PUT``/``POST /_stcore/upload_file/...``) answers 403 with sign-in unless the
      request carries the signed sign-in cookie of a person who may open a page that uploads
      (admins: Upload, Import labels, Scores' anchors), and 413 in every mode once the session
      holds :data:`MAX_UPLOADS_PER_SESSION` files or :func:`session_upload_bytes` bytes. A
      refused upload is answered before its body is read, so it never reaches memory;
    * with sign-in, a file under ``/media/`` (downloads, images) answers 403 unless the cookie's
      person holds the role of the viewer the file was made for (:func:`media_role`): Streamlit
      serves those files to whoever has the URL;
    * a sign-out (``/auth/logout``) is recorded for the cookie's person before Streamlit clears
      the cookie (``_auth.record_sign_out``): a copy of that cookie no longer signs in. Only a
      request from the app's own pages counts (:func:`same_origin_request`): a link on another
      site cannot end every session of the person (the cookie is SameSite=Lax, so a cross-site
      navigation carries it); Streamlit still clears the cookie in that browser;
    * a WebSocket's protocol refuses a message over its limit from the frame header, before
      reading it (:func:`bound_socket_frames`): every connection starts with
      :data:`RESTRICTED_MAX_MESSAGE_BYTES` (:func:`default_socket_frames`, at the server's
      start), raised to Streamlit's widget-state bound for a person with a role;
    * a WebSocket's frames go through a :class:`SocketPolicy` for the role its cookie gives:
      without a signed-in person with a role, small sign-in-page messages at a browser's pace
      only (anything else closes it before Streamlit keeps a byte), at most
      :func:`max_anonymous_sockets` such connections per client address; for everyone, cache
      clearing only from an admin;
    * every HTTP response gets :data:`ANTI_FRAMING_HEADERS`.
    """

    def __init__(self, app, local: bool, sign_in: bool = False) -> None:
        self.app, self.local, self.sign_in = app, local, sign_in

    def default_frame_limit(self) -> int:
        """The largest WebSocket message (bytes) a connection may send before the guard knows
        who it is: :data:`RESTRICTED_MAX_MESSAGE_BYTES` with sign-in, else everyone is an
        admin and Streamlit's own bound counts (:func:`widget_state_limit`)."""
        return RESTRICTED_MAX_MESSAGE_BYTES if self.sign_in else widget_state_limit()

    async def __call__(self, scope, receive, send) -> None:
        kind = scope.get("type")
        if kind == "lifespan":
            # Before the server accepts a connection: every WebSocket starts with the limit of a
            # connection without a role; _socket raises it for a role holder.
            default_socket_frames(receive, self.default_frame_limit())
        if kind not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        if kind == "websocket":  # before any await: the first frame's header finds it set
            bound_socket_frames(receive, self.default_frame_limit())
        if kind == "http":
            send = _with_anti_framing(send)
        notice_secrets_changes()
        _watch_media_files()
        path = scope.get("path") or ""
        method = scope.get("method", "GET")
        if path.rstrip("/").endswith("/_stcore/metrics"):
            return await _refuse(scope, send, 404, b"Not found")
        if self.local:
            host = _header(scope, b"host")
            if not is_local_host(host):
                return await _refuse(scope, send, 400, b"Host not allowed")
            origin = _header(scope, b"origin")
            if kind == "websocket" and origin is not None and not is_local_origin(origin, host):
                return await _refuse(scope, send, 403, b"Origin not allowed")
        if kind == "websocket":
            return await self._socket(scope, receive, send)
        if kind == "http":
            upload = _UPLOAD_PATH.search(path)
            if upload and method in ("PUT", "POST"):
                refusal, reserved = await run_in_threadpool(self._upload_refusal, scope,
                                                            upload.group(1), upload.group(2))
                if refusal is not None:
                    return await _refuse(scope, send, *refusal)
                try:
                    return await self.app(scope, receive, send)
                finally:
                    _upload_reservations.release(*reserved)  # stored by now, or failed
            media = _MEDIA_PATH.search(path)
            if self.sign_in and media and not await run_in_threadpool(
                    media_viewer_allowed, _header(scope, b"cookie"), media.group(1)):
                return await _refuse(scope, send, 403, b"Sign in with a role that may see this "
                                                       b"file")
            if (self.sign_in and path.rstrip("/").endswith("/auth/logout")
                    and same_origin_request(scope)):
                await run_in_threadpool(_record_sign_out, _header(scope, b"cookie"))
        return await self.app(scope, receive, send)

    async def _socket(self, scope, receive, send) -> None:
        """A WebSocket (``/_stcore/stream``): its frames go through a :class:`SocketPolicy` for
        the person its cookie signs in now (with sign-in; everyone is an admin without it)."""
        if not self.sign_in:
            policy = SocketPolicy(ADMIN, None)
        else:
            cookie = _header(scope, b"cookie")
            person = await run_in_threadpool(cookie_person, cookie)
            policy = SocketPolicy(None if person is None else person[1], cookie)
        if not policy.restricted:
            bound_socket_frames(receive, widget_state_limit())
        if policy.restricted:
            client = str((scope.get("client") or ("unknown",))[0])
            if not _anonymous_sockets.open(client):
                log.warning("refused a WebSocket without sign-in from %s: it holds %d already",
                            client, max_anonymous_sockets())
                return await _refuse(scope, send, 403, b"Too many connections")
            try:
                return await policy.serve(self.app, scope, receive, send)
            finally:
                _anonymous_sockets.close(client)
        return await policy.serve(self.app, scope, receive, send)

    def _upload_refusal(self, scope, session_id: str, file_id: str
                        ) -> tuple[tuple[int, bytes] | None, tuple[str, str] | None]:
        """Whether an upload to ``session_id`` is refused (status, body), and what it reserved
        of the session's bounds when it is not (released once Streamlit has its answer)."""
        if self.sign_in:
            person = cookie_person(_header(scope, b"cookie"))
            if person is None or person[1] not in UPLOAD_ROLES:
                return (403, b"Sign in as an admin to upload files"), None
        length = _header(scope, b"content-length")
        incoming = int(length) if length and length.isdigit() else max_upload_bytes()
        if not _upload_reservations.reserve(session_id, file_id, incoming):
            return (413, b"This session holds too many uploaded files: remove one, or reload "
                         b"the page"), None
        return None, (session_id, file_id)


async def _refuse(scope, send, status: int, body: bytes) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def _with_anti_framing(send):
    async def send_framed(message) -> None:
        if message.get("type") == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers") or []
                       if k.lower() not in dict(ANTI_FRAMING_HEADERS)]
            message = dict(message, headers=[*headers, *ANTI_FRAMING_HEADERS])
        await send(message)
    return send_framed


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def same_origin_request(scope) -> bool:
    """Whether a request comes from the app's own pages (or the person typed the URL): the
    browser's ``Sec-Fetch-Site`` is ``same-origin`` or ``none``; without it (older browsers), a
    ``Referer`` or ``Origin`` must name the request's own host; a request with none of the three
    is not a browser's cross-site navigation (browsers send one of them) and counts."""
    fetch_site = _header(scope, b"sec-fetch-site")
    if fetch_site is not None:
        return fetch_site.strip().lower() in ("same-origin", "none")
    host = (_header(scope, b"host") or "").strip().lower()
    for name in (b"origin", b"referer"):
        value = _header(scope, name)
        if value is not None:
            try:
                return bool(host) and urlsplit(value).netloc.lower() == host
            except ValueError:
                return False
    return True


def is_local_host(host: str | None) -> bool:
    """A Host header naming this machine by a localhost name (any port)."""
    if not host:
        return False
    try:
        parsed = urlsplit(f"//{host}")
        _ = parsed.port
    except ValueError:
        return False
    name = (parsed.hostname or "").lower().rstrip(".")
    return not parsed.username and name in LOCAL_HOSTS and not parsed.path


def is_local_origin(origin: str, host: str | None) -> bool:
    """A WebSocket's Origin that is a page of this local app: http(s), a localhost name, and the
    port the request came to (``host``'s; any other port is another program's page). A missing
    Origin is not a browser's (browsers always send one) and is not judged here: whatever runs
    on this machine as a program can read the store's file directly anyway."""
    try:
        page, target = urlsplit(origin), urlsplit(f"//{host or ''}")
        page_port = page.port or {"http": 80, "https": 443}.get(page.scheme)
        target_port = target.port or page_port
    except ValueError:
        return False
    name = (page.hostname or "").lower().rstrip(".")
    return (page.scheme in ("http", "https") and name in LOCAL_HOSTS and not page.username
            and page.path in ("", "/") and page_port == target_port)


# ------------------------------------------------------------------------------ WebSockets

#: The largest WebSocket message (bytes) a connection without a signed-in person with a role may
#: send. The one page such a visitor gets (sign-in, lock, no role) has buttons only: a click's
#: ``rerun_script`` with the page's widget states and the browser's context is under 2 kB.
RESTRICTED_MAX_MESSAGE_BYTES = 16 * 1024
#: What such a connection may send (Streamlit's ``BackMsg`` types); anything else closes it.
RESTRICTED_MESSAGES = frozenset({"rerun_script", "stop_script", "app_heartbeat"})
#: Messages that act on every user of the server: admins only; from anyone else they are
#: dropped (``clear_cache`` empties every user's caches; the others serve development).
ADMIN_MESSAGES = frozenset({"clear_cache", "set_run_on_save", "load_git_info"})
#: Messages Streamlit itself accepts only in development mode: never passed on.
NEVER_MESSAGES = frozenset({"debug_disconnect_websocket", "debug_shutdown_runtime"})
#: A restricted connection's message rate: a burst of this many, then one a second. A browser on
#: the sign-in page sends a handful (the first run, a click, a rerun on resize).
RESTRICTED_BURST, RESTRICTED_PER_SECOND = 20, 1.0
#: WebSocket close codes (RFC 6455): policy violation, message too big.
CLOSE_POLICY, CLOSE_TOO_BIG = 1008, 1009
#: ``$COMPASSESS_MAX_ANONYMOUS_SOCKETS``: restricted connections one client address may hold at
#: once (default :data:`DEFAULT_MAX_ANONYMOUS_SOCKETS`); more are refused before Streamlit
#: makes a session for them.
MAX_ANONYMOUS_SOCKETS_ENV = "COMPASSESS_MAX_ANONYMOUS_SOCKETS"
DEFAULT_MAX_ANONYMOUS_SOCKETS = 16


def max_anonymous_sockets() -> int:
    from compassess_core.api.access import whole_number_from_env
    from compassess_core.errors import InputError
    try:
        return whole_number_from_env(MAX_ANONYMOUS_SOCKETS_ENV, DEFAULT_MAX_ANONYMOUS_SOCKETS,
                                     least=1, unit="connections")
    except InputError:
        log.exception("reading %s", MAX_ANONYMOUS_SOCKETS_ENV)
        return DEFAULT_MAX_ANONYMOUS_SOCKETS


def widget_state_limit() -> int:
    """The largest message (bytes) Streamlit itself takes from a browser:
    ``server.maxWidgetStateSize`` (``.streamlit/config.toml``), which its WebSocket handler
    applies to every incoming message once it is assembled."""
    from streamlit.runtime.runtime_util import get_max_widget_state_size_bytes
    return get_max_widget_state_size_bytes()


def _socket_protocol(receive):
    """The ``websockets`` sans-I/O protocol object parsing the frames of the connection whose
    ASGI ``receive`` this is (uvicorn's ``websockets-sansio`` implementation, the one Streamlit
    runs: ``receive`` is a method of uvicorn's protocol, which holds it as ``conn``); None under
    any other server or implementation."""
    conn = getattr(getattr(receive, "__self__", None), "conn", None)
    return conn if isinstance(getattr(conn, "max_message_size", None), int) else None


_unbounded_warned = threading.Event()


def bound_socket_frames(receive, limit: int) -> bool:
    """Have the WebSocket protocol refuse any message over ``limit`` bytes from its frame
    header, before it reads the payload: it closes the connection with 1009 and keeps none of
    it (the ``websockets`` parser compares each frame's declared length, and a fragmented
    message's running total, with ``max_message_size`` when the frame's first bytes arrive).
    Without that hook (another ASGI server) the message is assembled, up to the server's own
    limit (``server.maxMessageSize``), before :class:`SocketPolicy` closes the connection: the
    log says so once. Whether it was set."""
    conn = _socket_protocol(receive)
    if conn is None:
        if not _unbounded_warned.is_set():
            _unbounded_warned.set()
            log.warning("WebSocket messages are bounded only after they are assembled: the "
                        "server is not uvicorn's websockets-sansio protocol")
        return False
    conn.max_message_size = limit
    return True


def default_socket_frames(receive, limit: int) -> bool:
    """At the server's start (the ASGI lifespan, before it accepts a connection): every new
    WebSocket connection's protocol starts with ``limit`` (uvicorn's ``ws_max_size``, which
    Streamlit set from ``server.maxMessageSize``), so a frame that arrives before
    :func:`bound_socket_frames` has run for its connection is refused from its header too
    (belt and braces: the guard runs in the connection's first step, before the server reads
    on).
    ``receive`` is uvicorn's lifespan's, which holds the server's configuration as ``config``.
    Whether it was set."""
    server_config = getattr(getattr(receive, "__self__", None), "config", None)
    protocol = getattr(server_config, "ws_protocol_class", None)
    if (not isinstance(getattr(server_config, "ws_max_size", None), int)
            or getattr(protocol, "__name__", "") != "WebSocketsSansIOProtocol"):
        # Another server, or another of uvicorn's protocols (whose limit could not be raised
        # again for a signed-in person): the server's own limit stays.
        log.warning("WebSocket connections start with the server's own message limit: the "
                    "server is not uvicorn with its websockets-sansio protocol")
        return False
    server_config.ws_max_size = limit
    return True


class _SocketCounts:
    """Restricted WebSocket connections open now, by client address."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, int] = {}

    def open(self, client: str) -> bool:
        """Count one more for ``client`` unless it holds :func:`max_anonymous_sockets` already."""
        with self._lock:
            held = self._open.get(client, 0)
            if held >= max_anonymous_sockets():
                return False
            self._open[client] = held + 1
            return True

    def close(self, client: str) -> None:
        with self._lock:
            held = self._open.get(client, 0) - 1
            if held > 0:
                self._open[client] = held
            else:
                self._open.pop(client, None)


_anonymous_sockets = _SocketCounts()


def back_message_type(data: bytes) -> str | None:
    """The type of the Streamlit ``BackMsg`` in ``data`` (None when it is not one)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    msg = BackMsg()
    try:
        msg.ParseFromString(data)
    except Exception:  # noqa: BLE001 - a frame that does not parse: Streamlit closes it (1002)
        return None
    return msg.WhichOneof("type")


class SocketPolicy:
    """What one WebSocket connection may send, decided by the role its cookie gave when it
    connected (``role``: None for a connection without a signed-in person with a role).

    * Restricted (no role): messages of at most :data:`RESTRICTED_MAX_MESSAGE_BYTES` bytes, of
      the types in :data:`RESTRICTED_MESSAGES`, at most :data:`RESTRICTED_BURST` in a burst and
      :data:`RESTRICTED_PER_SECOND` a second after it; anything else closes the connection
      before Streamlit sees the message (nothing of it is kept: an anonymous visitor's widget
      state never reaches the session). The first message of the session tells no versions
      and no path (:func:`scrub_new_session`).
    * Everyone: :data:`ADMIN_MESSAGES` are passed on only when the cookie's person is an admin
      at that moment (read afresh); otherwise dropped. :data:`NEVER_MESSAGES` are dropped.
      Streamlit bounds the size for everyone (``server.maxWidgetStateSize``,
      ``.streamlit/config.toml``).
    """

    def __init__(self, role: str | None, cookie: str | None) -> None:
        self.role, self.cookie = role, cookie
        self.restricted = role is None
        self._tokens, self._last = float(RESTRICTED_BURST), time.monotonic()
        self._closed = False

    def _within_rate(self) -> bool:
        now = time.monotonic()
        self._tokens = min(float(RESTRICTED_BURST),
                           self._tokens + (now - self._last) * RESTRICTED_PER_SECOND)
        self._last = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True

    async def verdict(self, data: bytes) -> str | int:
        """``"pass"``, ``"drop"``, or the close code for the message ``data``."""
        if self.restricted:
            if len(data) > RESTRICTED_MAX_MESSAGE_BYTES:
                return CLOSE_TOO_BIG
            if not self._within_rate():
                return CLOSE_POLICY
        kind = back_message_type(data)
        if self.restricted and kind not in RESTRICTED_MESSAGES:
            return CLOSE_POLICY
        if kind in NEVER_MESSAGES:
            return "drop"
        if kind in ADMIN_MESSAGES:
            if self.role != ADMIN:
                return "drop"
            if self.cookie is not None:
                person = await run_in_threadpool(cookie_person, self.cookie)
                if person is None or person[1] != ADMIN:
                    return "drop"
        return "pass"

    async def serve(self, app, scope, receive, send) -> None:
        async def checked_receive():
            while True:
                message = await receive()
                if message.get("type") != "websocket.receive":
                    return message
                data = message.get("bytes")
                if data is None:
                    data = (message.get("text") or "").encode("utf-8", "replace")
                verdict = await self.verdict(data)
                if verdict == "pass":
                    return message
                if verdict == "drop":
                    log.warning("dropped a WebSocket message for admins from a %s",
                                "visitor without a role" if self.restricted else self.role)
                    continue
                log.warning("closed a WebSocket without sign-in (code %s, %d bytes)", verdict,
                            len(data))
                self._closed = True
                await send({"type": "websocket.close", "code": verdict})
                return {"type": "websocket.disconnect", "code": verdict}

        async def checked_send(message) -> None:
            if self._closed:
                return  # closed here: Streamlit's own close and late messages go nowhere
            if self.restricted and message.get("type") == "websocket.send" and message.get("bytes"):
                message = dict(message, bytes=scrub_new_session(message["bytes"]))
            await send(message)

        await app(scope, checked_receive, checked_send)


def scrub_new_session(data: bytes) -> bytes:
    """A ``ForwardMsg`` for a visitor without a role: a ``new_session`` message loses the
    server's versions (Streamlit, Python, operating system) and the path of its script."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    msg = ForwardMsg()
    try:
        msg.ParseFromString(data)
    except Exception:  # noqa: BLE001 - not a ForwardMsg: sent as it is
        return data
    if msg.WhichOneof("type") != "new_session":
        return data
    env = msg.new_session.initialize.environment_info
    env.streamlit_version = env.python_version = env.server_os = ""
    msg.new_session.main_script_path = ""
    return msg.SerializeToString()


# ------------------------------------------------------------------------------ uploads

#: Roles that may open a page with a file uploader (Upload, Annotate's Import labels, Scores).
UPLOAD_ROLES = frozenset({ADMIN})
#: The most files one session may hold uploaded at once (each page has one uploader; a file
#: replaced or removed in its uploader is deleted by the browser).
MAX_UPLOADS_PER_SESSION = 8


class _UploadReservations:
    """Uploads let through and not answered yet, by session and file id: checked and counted
    under one lock, before the body is read, so parallel uploads cannot all pass the same check
    (each sees those before it). An upload counts as held from its check on; once Streamlit has
    stored it, it is in the session's files and its reservation is released. A file counts once
    while it is both stored and not yet released (the moment between the two), so a session is
    never refused a file it may still hold."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, dict[str, int]] = {}

    def reserve(self, session_id: str, file_id: str, incoming: int) -> bool:
        """Reserve file ``file_id`` of ``incoming`` bytes for ``session_id`` unless the files it
        holds and those reserved would then pass :data:`MAX_UPLOADS_PER_SESSION` files or
        :func:`session_upload_bytes` bytes."""
        with self._lock:
            held = session_upload_sizes(session_id)
            pending = self._pending.setdefault(session_id, {})
            files = set(held) | set(pending) | {file_id}
            size = (sum(n for f, n in held.items() if f not in pending and f != file_id)
                    + sum(n for f, n in pending.items() if f != file_id) + incoming)
            if len(files) > MAX_UPLOADS_PER_SESSION or size > session_upload_bytes():
                if not pending:
                    self._pending.pop(session_id, None)
                return False
            pending[file_id] = incoming
            return True

    def release(self, session_id: str, file_id: str) -> None:
        """The upload :meth:`reserve` let through has its answer."""
        with self._lock:
            pending = self._pending.get(session_id, {})
            pending.pop(file_id, None)
            if not pending:
                self._pending.pop(session_id, None)


_upload_reservations = _UploadReservations()


def session_upload_bytes() -> int:
    """The most bytes one session may hold uploaded at once: two of the largest uploads."""
    return 2 * max_upload_bytes()


def session_upload_sizes(session_id: str) -> dict[str, int]:
    """The files Streamlit holds uploaded for ``session_id`` now: bytes by file id."""
    from streamlit import runtime
    if not runtime.exists():
        return {}
    manager = runtime.get_instance().uploaded_file_mgr
    held = dict(getattr(manager, "file_storage", {}).get(session_id) or {})
    return {str(file_id): len(f.data) for file_id, f in held.items()}



# ------------------------------------------------------------------------------ media files

#: The role of the viewer each file under /media/ was made for, by file id (newest last).
_media_roles: OrderedDict[str, str] = OrderedDict()
_media_lock = threading.Lock()
#: Files remembered; an older one is forgotten, and then served to admins only.
MAX_MEDIA_ROLES = 10_000


def media_role(file_id: str) -> str:
    """The role a person needs to fetch ``/media/<file_id>``: that of the viewer whose page made
    it (an annotator's page: annotators and admins; an admin's: admins). A file not recorded
    (made outside a page run, forgotten, or unknown) needs an admin."""
    with _media_lock:
        return _media_roles.get(file_id.split(".", 1)[0], ADMIN)


def _remember_media(url: str) -> None:
    """Record who the file at ``url`` (``/media/<id>.<ext>``) was made for: the viewer of the run
    that made it (``_auth.VIEWER_KEY``, set by the gate before the page)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    viewer = None
    if get_script_run_ctx() is not None:
        import streamlit as st
        viewer = st.session_state.get(VIEWER_KEY)
    role = ANNOTATOR if getattr(viewer, "role", None) == ANNOTATOR else ADMIN
    file_id = url.rsplit("/", 1)[-1].split(".", 1)[0]
    with _media_lock:
        if _media_roles.get(file_id) == ANNOTATOR:
            role = ANNOTATOR  # the same bytes were made for an annotator too
        _media_roles[file_id] = role
        _media_roles.move_to_end(file_id)
        while len(_media_roles) > MAX_MEDIA_ROLES:
            _media_roles.popitem(last=False)


def _watch_media_files() -> None:
    """Have Streamlit's media file manager tell :func:`_remember_media` about every file it adds
    (once per process; its ``add`` is the one way a page's file gets a URL, a lazy download's
    bytes made on a click included only as unknown, hence admin-only)."""
    from streamlit import runtime
    if not runtime.exists():
        return
    manager = runtime.get_instance().media_file_mgr
    if getattr(manager, "_compassess_watched", False):
        return
    add = manager.add

    def add_and_remember(*args, **kwargs):
        url = add(*args, **kwargs)
        _remember_media(url)
        return url

    manager.add = add_and_remember
    manager._compassess_watched = True


# ------------------------------------------------------------------------------ the cookie

def cookie_claims(cookie_header: str | None) -> dict | None:
    """The provider's claims in Streamlit's signed sign-in cookie (``_streamlit_user``), checked
    with the cookie secret as it is now, the way Streamlit checks it; None without a cookie, with
    a bad signature or one not signed in."""
    from http.cookies import CookieError, SimpleCookie

    from streamlit.auth_util import get_cookie_with_chunks
    from streamlit.web.server.server_util import AUTH_COOKIE_NAME, get_cookie_secret
    from streamlit.web.server.starlette.starlette_app_utils import decode_signed_value

    if not cookie_header:
        return None
    try:
        jar = SimpleCookie()
        jar.load(cookie_header)
        secret = get_cookie_secret()

        def signed_cookie(name: str) -> bytes | None:
            morsel = jar.get(name)
            return None if morsel is None else decode_signed_value(secret, name, morsel.value)

        decoded = get_cookie_with_chunks(signed_cookie, AUTH_COOKIE_NAME)
        claims = None if decoded is None else json.loads(decoded)
    except (CookieError, ValueError, TypeError):
        return None
    if not isinstance(claims, dict) or claims.get("is_logged_in") is not True:
        return None
    return claims


def cookie_person(cookie_header: str | None) -> tuple[str, str] | None:
    """The identity and role of the person whose sign-in cookie ``cookie_header`` carries, when
    that sign-in counts now: a configuration that can be trusted, a valid signature, a usable
    identity, a token neither expired nor signed out since (``_auth.sign_in_ended``) and a role
    stored now (or the person is a first admin). None otherwise, a store that cannot be reached
    included (the server log says why)."""
    try:
        sign_in_required()
        claims = cookie_claims(cookie_header)
        if claims is None:
            return None
        identity = access.identity_from_claims(claims)
        if sign_in_ended(identity, claims) is not None:
            return None
        role = ADMIN if identity in access.configured_admins() else api_store().role_of(identity)
        return None if role is None else (identity, role)
    except (ConfigurationError, access.AccessError):
        return None
    except Exception:  # noqa: BLE001 - a store that cannot be reached: refused, and logged
        log.exception("checking who sent a request")
        return None


def media_viewer_allowed(cookie_header: str | None, file_name: str = "") -> bool:
    """Whether the person whose cookie ``cookie_header`` carries may fetch ``/media/<file_name>``
    now (:func:`cookie_person`, :func:`media_role`)."""
    person = cookie_person(cookie_header)
    if person is None:
        return False
    needed = media_role(file_name)
    return person[1] == ADMIN or person[1] == needed


def _record_sign_out(cookie_header: str | None) -> None:
    """A sign-out request: the cookie's person signs out (tokens issued until now stop counting),
    when the cookie is validly signed; anything else is left to Streamlit."""
    try:
        claims = cookie_claims(cookie_header)
        if claims is not None:
            record_sign_out(access.identity_from_claims(claims), claims.get("iat"))
    except access.AccessError:
        return
    except Exception:  # noqa: BLE001 - the cookie is still cleared; the log says what failed
        log.exception("recording a sign-out")

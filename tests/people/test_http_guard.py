"""The app's HTTP front door (``pages/_http_guard.py``) against a real ``streamlit run app.py``
server, driven the way an attacker would: raw HTTP and Streamlit's own WebSocket protocol.

* Uploads before sign-in: with sign-in configured, an anonymous visitor who loads the app and
  sends 50 MB uploads to their own session is refused (403) before the body is read, 20 times,
  and the server's resident memory stays flat; an annotator is refused too, an admin's upload
  works, and a session holds at most ``MAX_UPLOADS_PER_SESSION`` files.
* A rotated ``cookie_secret`` refuses a cookie signed with the old one at the next request,
  without a restart, also after an unparseable edit in between.
* Local mode: a WebSocket from a page of another localhost port is refused, and every HTTP
  response carries the anti-framing headers.

The browser side of the same attacks (a framing page, a cross-port page, a copied cookie after
sign-out) is ``tests/browser/test_browser_hardening.py``.
"""

from __future__ import annotations

import json
import secrets
import selectors
import socket
from pathlib import Path

import httpx
import psutil
import pytest

from tests.app.test_app_sign_in import ISSUER, token_times
from tests.app_server import AppServer, free_port

ROOT = Path(__file__).resolve().parents[2]
ADMIN = "admin@example.org"
MB = 1024 * 1024


def secrets_toml(port: int, cookie_secret: str) -> str:
    return ("[auth]\n"
            f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
            f'cookie_secret = "{cookie_secret}"\n'
            'client_id = "compassess"\nclient_secret = "test-client-secret"\n'
            'server_metadata_url = "http://127.0.0.1:9/.well-known/openid-configuration"\n')


class Server(AppServer):
    """The app as an attacker meets it: anonymous access not allowed, the first admin from
    ``COMPASSESS_ADMINS``, sign-in configured when a ``secrets_file`` is given."""

    def __init__(self, tmp_path: Path, db_url: str, secrets_file: Path | None, port: int) -> None:
        super().__init__(tmp_path, db_url, port=port, env=dict(COMPASSESS_ADMINS=ADMIN),
                         unset=("COMPASSESS_ALLOW_ANONYMOUS",), secrets_file=secrets_file)

    def rss(self) -> int:
        """The server process's resident memory, in bytes."""
        return psutil.Process(self.proc.pid).memory_info().rss


@pytest.fixture
def team_app(tmp_path: Path, db_url: str):
    """A server with sign-in configured; yields (server, secrets file, cookie secret)."""
    port = free_port()
    cookie_secret = secrets.token_hex(32)
    secrets_file = tmp_path / "secrets.toml"
    secrets_file.write_text(secrets_toml(port, cookie_secret))
    server = Server(tmp_path, db_url, secrets_file, port)
    yield server, secrets_file, cookie_secret
    server.stop()


@pytest.fixture
def local_app(tmp_path: Path, db_url: str):
    server = Server(tmp_path, db_url, None, free_port())
    yield server
    server.stop()


def sign_in_cookie(identity: str, cookie_secret: str, port: int) -> str:
    """Streamlit's sign-in cookie for ``identity``, signed with ``cookie_secret`` exactly as
    Streamlit signs it after an OpenID Connect sign-in (the claims an ID token carries)."""
    from streamlit.web.server.starlette.starlette_app_utils import create_signed_value
    claims = {"email": identity, "email_verified": True, "iss": ISSUER, "sub": f"sub-{identity}",
              "name": identity, **token_times(), "origin": f"http://127.0.0.1:{port}",
              "is_logged_in": True, "provider": "default"}
    value = create_signed_value(cookie_secret, "_streamlit_user", json.dumps(claims))
    return f"_streamlit_user={value.decode()}"


class Session:
    """A Streamlit session opened as a browser opens one: the XSRF cookie from the server, the
    WebSocket with Streamlit's subprotocol, a first run; ``id`` is what uploads are sent to."""

    def __init__(self, server: Server, cookie: str = "") -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        from websockets.sync.client import connect

        self.xsrf = httpx.get(f"{server.url}/_stcore/health").cookies["_streamlit_xsrf"]
        self.cookie = "; ".join(c for c in (f"_streamlit_xsrf={self.xsrf}", cookie) if c)
        self.ws = connect(f"ws://127.0.0.1:{server.port}/_stcore/stream", origin=server.url,
                          subprotocols=["streamlit", self.xsrf],
                          additional_headers={"Cookie": self.cookie})
        run = BackMsg()
        run.rerun_script.query_string = ""
        self.ws.send(run.SerializeToString())
        while True:
            msg = ForwardMsg()
            msg.ParseFromString(self.ws.recv(timeout=60))
            if msg.WhichOneof("type") == "new_session":
                self.id = msg.new_session.initialize.session_id
                break

    def close(self) -> None:
        self.ws.close()


def upload(server: Server, session: Session, size: int, file_id: str | None = None,
           method: str = "PUT") -> int:
    """Send one file of ``size`` bytes to ``session``'s upload URL as Streamlit's file uploader
    does (multipart, XSRF token), over a raw socket that keeps sending the body until the server
    answers or takes it all; returns the HTTP status."""
    file_id = file_id or secrets.token_hex(8)
    boundary = "compassess-test-boundary"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            "filename=\"big.csv\"\r\nContent-Type: text/csv\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    request = (f"{method} /_stcore/upload_file/{session.id}/{file_id} HTTP/1.1\r\n"
               f"Host: 127.0.0.1:{server.port}\r\nOrigin: {server.url}\r\n"
               f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
               f"Content-Length: {len(head) + size + len(tail)}\r\n"
               f"X-Xsrftoken: {session.xsrf}\r\nCookie: {session.cookie}\r\n"
               "Connection: close\r\n\r\n").encode() + head
    chunk = b"x" * MB
    left, reply = size, b""
    with socket.create_connection(("127.0.0.1", server.port), timeout=120) as s:
        s.sendall(request)
        s.setblocking(False)
        selector = selectors.DefaultSelector()
        selector.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
        pending = b""
        while b"\r\n\r\n" not in reply:
            events = selector.select(timeout=120)
            assert events, "the server neither answered nor read the upload"
            for _, mask in events:
                if mask & selectors.EVENT_READ:
                    data = s.recv(65536)
                    if not data:
                        raise AssertionError(f"connection closed without an answer: {reply!r}")
                    reply += data
                elif mask & selectors.EVENT_WRITE:
                    if not pending:
                        if left > 0:
                            pending, left = chunk[:min(left, MB)], left - min(left, MB)
                        elif tail:
                            pending, tail = tail, b""
                        else:
                            selector.modify(s, selectors.EVENT_READ)
                            continue
                    try:
                        pending = pending[s.send(pending):]
                    except (BrokenPipeError, ConnectionResetError):
                        selector.modify(s, selectors.EVENT_READ)  # refused: read the answer
    return int(reply.split(b" ", 2)[1])


def test_uploads_need_an_admin_and_a_refused_upload_leaves_no_memory(team_app, db_url):
    from db.store import Store
    server, _, cookie_secret = team_app
    anonymous = Session(server)
    try:
        assert upload(server, anonymous, 1024) == 403  # warm the paths up before measuring
        before = server.rss()
        statuses = [upload(server, anonymous, 50 * MB) for _ in range(20)]
        grown = server.rss() - before
        assert statuses == [403] * 20
        # 20 uploads of 50 MB stored would be 1 GB: nothing of them may stay.
        assert grown < 100 * MB, f"resident memory grew by {grown / MB:.0f} MB"
    finally:
        anonymous.close()
    Store(db_url).set_role("ann@example.org", "annotator", "test")
    annotator = Session(server, sign_in_cookie("ann@example.org", cookie_secret, server.port))
    admin = Session(server, sign_in_cookie(ADMIN, cookie_secret, server.port))
    try:
        assert upload(server, annotator, 1024) == 403  # no page of theirs uploads
        assert upload(server, admin, 1024) == 204
        # A cookie signed with another secret is nobody's.
        forged = Session(server, sign_in_cookie(ADMIN, secrets.token_hex(32), server.port))
        assert upload(server, forged, 1024) == 403
        forged.close()
    finally:
        annotator.close()
        admin.close()


def test_a_session_holds_a_bounded_number_of_uploads(team_app):
    from pages._http_guard import MAX_UPLOADS_PER_SESSION
    server, _, cookie_secret = team_app
    admin = Session(server, sign_in_cookie(ADMIN, cookie_secret, server.port))
    try:
        ids = [f"file{k}" for k in range(MAX_UPLOADS_PER_SESSION)]
        assert [upload(server, admin, 1024, i) for i in ids] == [204] * len(ids)
        assert upload(server, admin, 1024) == 413
        # The browser deletes a file removed from its uploader: then there is room again.
        deleted = httpx.delete(f"{server.url}/_stcore/upload_file/{admin.id}/{ids[0]}",
                               headers={"X-Xsrftoken": admin.xsrf, "Cookie": admin.cookie})
        assert deleted.status_code == 204
        assert upload(server, admin, 1024) == 204
    finally:
        admin.close()


def test_a_rotated_cookie_secret_refuses_old_cookies_without_a_restart(team_app):
    """A media URL no file has: 404 from Streamlit once the guard lets the request through, 403
    from the guard when the cookie does not count."""
    server, secrets_file, old_secret = team_app
    missing = f"{server.url}/media/0123456789abcdef.csv"

    def status(cookie: str) -> int:
        return httpx.get(missing, headers={"Cookie": cookie}).status_code

    old_cookie = sign_in_cookie(ADMIN, old_secret, server.port)
    assert status(old_cookie) == 404
    secrets_file.write_text(secrets_toml(server.port, old_secret).replace("[auth]", "[auth"))
    assert status(old_cookie) == 403  # a file that does not parse: locked
    new_secret = secrets.token_hex(32)
    secrets_file.write_text(secrets_toml(server.port, new_secret))
    assert status(old_cookie) == 403
    assert status(sign_in_cookie(ADMIN, new_secret, server.port)) == 404
    # Streamlit's own check of the cookie (the WebSocket) uses the new secret too: the old
    # cookie's session is anonymous, so the guard refuses its uploads.
    session = Session(server, old_cookie)
    try:
        assert upload(server, session, 1024) == 403
    finally:
        session.close()
    assert server.proc.poll() is None  # no restart


def test_local_mode_refuses_a_websocket_from_another_port_and_frames(local_app):
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    server = local_app
    stream = f"ws://127.0.0.1:{server.port}/_stcore/stream"
    for origin in (f"http://127.0.0.1:{free_port()}", f"http://localhost:{server.port + 1}",
                   "http://evil.example", "null"):
        with pytest.raises(InvalidStatus) as refused:
            connect(stream, origin=origin, subprotocols=["streamlit"]).close()
        assert refused.value.response.status_code == 403, origin
    for origin in (server.url, f"http://localhost:{server.port}", None):
        connect(stream, origin=origin, subprotocols=["streamlit"]).close()
    for path in ("/", "/_stcore/health", "/no-such-page", "/_stcore/metrics", "/media/x.csv"):
        r = httpx.get(f"{server.url}{path}")
        assert r.headers["x-frame-options"] == "SAMEORIGIN", path
        assert r.headers["content-security-policy"] == "frame-ancestors 'self'", path
    r = httpx.get(f"{server.url}/", headers={"Host": "evil.example"})
    assert r.status_code == 400 and r.headers["x-frame-options"] == "SAMEORIGIN"

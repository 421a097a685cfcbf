"""A session's upload bounds hold against parallel uploads (``pages/_http_guard.py``): each
upload reserves its file and bytes under a lock before its body is read, so uploads sent at once
cannot all pass the same check. A real ``streamlit run app.py`` with sign-in and an admin's
session; uploads over raw sockets, released together by a barrier."""

from __future__ import annotations

import secrets
import threading

import pytest

pytestmark = pytest.mark.slow  # a server of its own and 18 uploads

from tests.people.test_http_guard import (ADMIN, MB, Server, Session, free_port, secrets_toml, sign_in_cookie,
                             upload)

#: COMPASSESS_MAX_UPLOAD_MB for this server: a session holds at most twice that.
LIMIT_MB = 4


@pytest.fixture(scope="module")
def small_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("upload-race")
    port, cookie_secret = free_port(), secrets.token_hex(32)
    secrets_file = tmp / "secrets.toml"
    secrets_file.write_text(secrets_toml(port, cookie_secret))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COMPASSESS_MAX_UPLOAD_MB", str(LIMIT_MB))
        server = Server(tmp, f"sqlite:///{tmp / 'compassess.db'}", secrets_file, port)
    yield server, cookie_secret
    server.stop()


def at_once(n: int, send) -> list[int]:
    """``send()`` from ``n`` threads released together; their HTTP statuses."""
    barrier, statuses = threading.Barrier(n), [0] * n

    def one(k: int) -> None:
        barrier.wait()
        statuses[k] = send()

    threads = [threading.Thread(target=one, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return statuses


def test_parallel_uploads_cannot_pass_the_file_count(small_server):
    from pages._http_guard import MAX_UPLOADS_PER_SESSION
    server, cookie_secret = small_server
    admin = Session(server, sign_in_cookie(ADMIN, cookie_secret, server.port))
    try:
        statuses = at_once(12, lambda: upload(server, admin, 1024))
        assert statuses.count(204) == MAX_UPLOADS_PER_SESSION, statuses
        assert set(statuses) == {204, 413}
    finally:
        admin.close()


def test_parallel_uploads_cannot_pass_the_byte_bound(small_server):
    server, cookie_secret = small_server
    admin = Session(server, sign_in_cookie(ADMIN, cookie_secret, server.port))
    try:
        # 6 files of 3 MB against 2 x 4 MB: two fit, whatever the order.
        statuses = at_once(6, lambda: upload(server, admin, 3 * MB))
        assert statuses.count(204) == 2 and statuses.count(413) == 4, statuses
    finally:
        admin.close()


def test_a_file_stored_but_not_yet_released_counts_once(monkeypatch):
    """The moment between Streamlit storing an upload and its reservation being released: the
    file is both held and reserved, and counts once, so the session's last allowed file passes
    (counted twice, a parallel upload was refused with one file to spare)."""
    import pages._http_guard as guard

    held: dict[str, int] = {}
    monkeypatch.setattr(guard, "session_upload_sizes", lambda session_id: dict(held))
    book = guard._UploadReservations()
    bound = guard.MAX_UPLOADS_PER_SESSION
    for k in range(bound - 2):            # stored and released
        assert book.reserve("s", f"f{k}", 10)
        held[f"f{k}"] = 10
        book.release("s", f"f{k}")
    assert book.reserve("s", "stored", 10)
    held["stored"] = 10                   # stored, its reservation not released yet
    assert book.reserve("s", "last", 10)  # bound - 1 files held or reserved: this one passes
    assert not book.reserve("s", "one-too-many", 10)
    book.release("s", "stored")
    assert not book.reserve("s", "one-too-many", 10)   # still the bound, released or not

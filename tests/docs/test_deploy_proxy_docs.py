"""What docs/deploy.md tells the reverse proxy of a team deployment, and the WebSocket limits
the server starts with (``.streamlit/config.toml``), checked against each other:

* both proxy examples (nginx, Caddy) send HSTS and mark the cookies ``Secure`` (Streamlit's
  sign-in cookie has no ``Secure`` flag of its own), and nginx's limits connections and requests
  per client address, which the app cannot see in full;
* the message-size limits in config.toml are the ones the docs' limits table names.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = (ROOT / "docs" / "deploy.md").read_text()


def block(language: str) -> str:
    """The body of the first fenced block of ``language`` in docs/deploy.md."""
    found = re.search(rf"```{language}\n(.*?)```", DEPLOY, re.S)
    assert found, f"no {language} block in docs/deploy.md"
    return found.group(1)


def test_the_proxy_examples_send_hsts_secure_cookies_and_per_client_limits():
    nginx, caddy = block("nginx"), block("caddy")
    for proxy in (nginx, caddy):
        assert "Strict-Transport-Security" in proxy
        assert re.search(r"(?i)secure", proxy.replace("Strict-Transport-Security", ""))
        assert "/_stcore/metrics" in proxy
    assert "proxy_cookie_flags ~ secure" in nginx
    assert re.search(r"limit_conn compassess_conn \d+;", nginx)
    assert re.search(r"limit_req zone=compassess_req", nginx)
    assert 'proxy_set_header Upgrade $http_upgrade' in nginx   # WebSockets forwarded


def test_the_message_limits_in_the_docs_are_the_servers():
    server = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["server"]
    from pages._http_guard import RESTRICTED_MAX_MESSAGE_BYTES
    row = next(line for line in DEPLOY.splitlines()
               if line.startswith("| one WebSocket message (widget values)"))
    assert f"| {server['maxWidgetStateSize']} MB; {RESTRICTED_MAX_MESSAGE_BYTES // 1024} kB" in row
    row = next(line for line in DEPLOY.splitlines()
               if line.startswith("| one WebSocket message the server sends"))
    assert f"| {server['maxMessageSize']} MB |" in row

"""Served judges: their model specs (``openai:BASE_URL#MODEL``, :func:`parse_spec`) and the
configured judge servers, each API key bound to the base URL it was configured with.

A key is configured together with its server, in the spirit of the OpenAI SDK's own variables:

==========================  ==============================  ====================================
key                         bound to                        default base URL
==========================  ==============================  ====================================
COMPASSESS_OPENAI_API_KEY   COMPASSESS_OPENAI_BASE_URL      none: without it the key is never sent
OPENAI_API_KEY              OPENAI_BASE_URL                 ``https://api.openai.com/v1``
==========================  ==============================  ====================================

:func:`api_key_for` gives a served judge the key of *exactly* its base URL (scheme, host, port and
path compared after normalisation) and nothing for any other URL, so a model spec pointing
elsewhere (typed by a visitor, or a mistake) can never carry the key away; the CLI and the app's
worker both load judges through it. :func:`configured_servers` is the app's allowlist: the Run
page offers these servers and refuses any other URL before a request is made
(:func:`check_configured`). ``COMPASSESS_OPENAI_BASE_URL`` without a key configures a server that
needs none (a local vLLM or Ollama).

This module must never put a key in a message, a ``repr`` or anything stored.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Mapping
from urllib.parse import parse_qsl, urlsplit

from ..errors import InputError

#: (key variable, base-URL variable, default base URL when only the key is set).
KEY_BINDINGS: tuple[tuple[str, str, str | None], ...] = (
    ("COMPASSESS_OPENAI_API_KEY", "COMPASSESS_OPENAI_BASE_URL", None),
    ("OPENAI_API_KEY", "OPENAI_BASE_URL", "https://api.openai.com/v1"),
)
API_KEY_ENV = tuple(key_var for key_var, _, _ in KEY_BINDINGS)
#: A served model spec's prefix -> the endpoint it calls.
PREFIXES = {"openai": "chat", "openai-completions": "completions"}
#: What a spec may set after its model (``#MODEL?samples=10``).
OPTION_NAMES = ("samples", "concurrency", "top_logprobs", "tokenizer", "timeout", "max_retries",
                "answer_tokens", "sample_tokens", "fallback")

# ------------------------------------------------------------------------------------ spec parsing

@dataclass(frozen=True)
class OpenAISpec:
    """A parsed ``openai:``/``openai-completions:`` model spec (never holds a credential)."""

    endpoint: str                 # "chat" or "completions"
    base_url: str                 # scheme://host[:port]/path, no trailing slash
    model: str
    options: dict[str, str] = field(default_factory=dict)


def is_openai_spec(spec: str | None) -> bool:
    """True for ``openai:...`` and ``openai-completions:...`` model specs."""
    return bool(spec) and spec.split(":", 1)[0] in PREFIXES and ":" in spec


def parse_spec(spec: str) -> OpenAISpec:
    """Split ``openai[-completions]:BASE_URL#MODEL[?options]``.

    Raises
    ------
    InputError
        Unknown prefix, no ``#MODEL``, a URL that is not http(s), a URL carrying credentials or a
        query string (the key belongs in an environment variable), or an unknown option.
    """
    prefix, sep, rest = spec.partition(":")
    if not sep or prefix not in PREFIXES:
        raise InputError(f"'{prefix}:' is not an OpenAI-compatible model spec; use "
                         "openai:BASE_URL#MODEL or openai-completions:BASE_URL#MODEL")
    url, sep, model_part = rest.partition("#")
    model, _, query = model_part.partition("?")
    shown = f"{prefix}:{_redact_url(url)}#{model}"
    if not sep or not model.strip():
        raise InputError(f"model spec '{shown}' names no model: write {prefix}:BASE_URL#MODEL, "
                         f"e.g. {prefix}:http://127.0.0.1:8000/v1#Qwen2.5-7B-Instruct")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"model spec '{shown}': the base URL must be http(s)://HOST[:PORT]/PATH")
    if parts.username or parts.password or "@" in parts.netloc:
        raise InputError(f"model spec '{shown}': credentials in the URL are refused (they would be "
                         f"stored with the run); put the API key in ${API_KEY_ENV[0]}")
    if parts.query:
        raise InputError(f"model spec '{shown}': the base URL must not have a query string "
                         f"(an API key belongs in ${API_KEY_ENV[0]}); options go after the model: "
                         "#MODEL?samples=10")
    try:
        options = dict(parse_qsl(query, keep_blank_values=False, strict_parsing=bool(query)))
    except ValueError:
        raise InputError(f"model spec '{shown}': cannot read the options '?{query}' "
                         "(write ?name=value&name=value)") from None
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise InputError(f"model spec '{shown}': unknown option(s) {', '.join(unknown)}; "
                         f"known: {', '.join(OPTION_NAMES)}")
    return OpenAISpec(PREFIXES[prefix], url.rstrip("/"), model.strip(), options)


#: What replaces a secret in a message.
REDACTED = "[redacted]"
#: Credentials that look like one whatever key is configured: an ``Authorization`` value
#: (``Bearer ...``) and OpenAI-style secret keys (``sk-...``, ``sk-proj-...``).
_BEARER = re.compile(r"(?i)\b(bearer)(\s+|%20)[A-Za-z0-9._~+/=-]{4,}")
_SK_KEY = re.compile(r"\bsk-[A-Za-z0-9_-]{6,}")
#: Configured keys shorter than this are not searched for in messages (they would match words).
MIN_REDACTED_KEY_CHARS = 6


def configured_keys(environ: Mapping[str, str] | None = None) -> list[str]:
    """Every API key set in the environment (:data:`API_KEY_ENV`), bound to a server or not."""
    env = os.environ if environ is None else environ
    return [v.strip() for v in (env.get(var, "") for var in API_KEY_ENV) if v.strip()]


def redact_secrets(text: str, keys=(), environ: Mapping[str, str] | None = None) -> str:
    """``text`` (a server's error, an exception's words) with every API key taken out before it
    is shown, stored or logged: the ``keys`` given, every configured key
    (:func:`configured_keys`), and anything shaped like a credential (``Bearer ...``,
    ``sk-...``). A server that echoes the request's key in its error body would otherwise put
    it on the Run page, in the run's stored message and in the worker's log."""
    text = str(text)
    known = {k for k in (*keys, *configured_keys(environ))
             if k and len(k) >= MIN_REDACTED_KEY_CHARS}
    for key in sorted(known, key=len, reverse=True):
        text = text.replace(key, REDACTED)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return _SK_KEY.sub(f"sk-{REDACTED}", text)


def _redact_url(url: str) -> str:
    # Only for messages about a bad spec: never echo userinfo or a query string.
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}" if parts.scheme else "<url>"



@dataclass(frozen=True)
class ServedEndpoint:
    """A configured server: its base URL and, when one is set, the key bound to it."""

    base_url: str
    source: str                                 # the variable that configured it
    api_key: str | None = field(default=None, repr=False, compare=False)

    @property
    def has_key(self) -> bool:
        return bool(self.api_key)


def normalise_base_url(url: str) -> str:
    """``scheme://host[:port]/path`` with the scheme and host lower-cased, the default port
    dropped and no trailing slash: two spellings of one server compare equal.

    Raises
    ------
    InputError
        Not an http(s) URL with a host, or a URL with credentials, a query or a fragment.
    """
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise InputError("a judge server's base URL must be http(s)://HOST[:PORT]/PATH")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise InputError("a judge server's base URL must not hold credentials, a query or a "
                         "fragment")
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        raise InputError("a judge server's base URL has an invalid port") from None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    if port is not None and port != (443 if scheme == "https" else 80):
        host += f":{port}"
    return f"{scheme}://{host}{parts.path.rstrip('/')}"


def configured_servers(environ: Mapping[str, str] | None = None) -> list[ServedEndpoint]:
    """The servers configured in the environment, each with the key bound to it (if any).

    Raises
    ------
    InputError
        A base-URL variable that is not a plain http(s) URL.
    """
    env = os.environ if environ is None else environ
    found: list[ServedEndpoint] = []
    for key_var, url_var, default_url in KEY_BINDINGS:
        key = env.get(key_var, "").strip() or None
        raw_url = env.get(url_var, "").strip()
        if not raw_url and key is not None:
            raw_url = default_url or ""
        if not raw_url:
            continue
        try:
            base = normalise_base_url(raw_url)
        except InputError as e:
            raise InputError(f"${url_var}: {e}") from None
        if all(s.base_url != base for s in found):
            found.append(ServedEndpoint(base, url_var, key))
    return found


def api_key_for(base_url: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The API key bound to exactly ``base_url``, or None (never a key bound elsewhere)."""
    try:
        wanted = normalise_base_url(base_url)
    except InputError:
        return None
    for server in configured_servers(environ):
        if server.base_url == wanted:
            return server.api_key
    return None


def unsent_key_note(base_url: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Why no key goes to ``base_url`` although one is configured (for a 401 message), or None."""
    env = os.environ if environ is None else environ
    if api_key_for(base_url, env):
        return None
    for key_var, url_var, default_url in KEY_BINDINGS:
        if env.get(key_var, "").strip():
            bound = env.get(url_var, "").strip() or default_url
            where = f"bound to {bound}" if bound else f"bound to nothing (${url_var} is not set)"
            return (f"${key_var} is {where}, so it is not sent to {base_url}; set ${url_var} to "
                    "this server's base URL to use it here")
    return None


def check_configured(base_url: str, environ: Mapping[str, str] | None = None) -> ServedEndpoint:
    """The configured server at ``base_url``.

    Raises
    ------
    InputError
        When ``base_url`` is not one of :func:`configured_servers` (nothing is requested from it).
    """
    servers = configured_servers(environ)
    try:
        wanted = normalise_base_url(base_url)
    except InputError as e:
        raise InputError(f"judge server refused: {e}") from None
    for server in servers:
        if server.base_url == wanted:
            return server
    known = ", ".join(s.base_url for s in servers) or "none"
    raise InputError(f"the judge server {wanted} is not configured for this app (configured: "
                     f"{known}); an admin sets COMPASSESS_OPENAI_BASE_URL (and its "
                     "COMPASSESS_OPENAI_API_KEY) where the app runs")


def served_model_problem(model: str | None) -> str | None:
    """Why the app may not use the judge ``model`` (None: it may): a served model spec
    (``openai:``/``openai-completions:``) that is malformed or names a server that is not one of
    :func:`configured_servers`. Local models have no server, so no problem. What the app checks
    before it stores a run, starts a worker or renders a run's prompt through its server."""
    if not is_openai_spec(model):
        return None
    try:
        check_configured(parse_spec(str(model)).base_url)
    except InputError as e:
        return str(e)
    return None


# A served model's name: what vLLM, TGI, Ollama and OpenAI use (org/name, name:tag, dots, dashes).
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}")


def model_name_problem(name: str) -> str | None:
    """What is wrong with a served model's name typed in the app (None when it is fine): it may
    not carry options (``?``), a second ``#``, spaces or anything a model name never holds."""
    if not _MODEL_NAME.fullmatch(name):
        return ("a served model's name is letters, digits and . _ : / @ + - (at most 200 "
                "characters), e.g. Qwen/Qwen2.5-7B-Instruct or qwen2.5:7b")
    return None

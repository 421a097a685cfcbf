"""A judge served over the OpenAI-compatible HTTP API (vLLM, TGI, Ollama, llama.cpp server, OpenAI).

Spec strings (``--model``)::

    openai:BASE_URL#MODEL               chat/completions; the server applies its own chat template
    openai-completions:BASE_URL#MODEL   completions with the prompt rendered here, primer appended

e.g. ``openai:http://127.0.0.1:8000/v1#Qwen2.5-7B-Instruct``. Options may follow the model as a
query string: ``#MODEL?samples=10&concurrency=16&tokenizer=ORG/NAME`` (see
``servers.OPTION_NAMES``; ``servers.parse_spec`` reads a spec).

Design (how ``p_ij`` is read, eq. 3 and eq. 5 of Liusie et al. 2024, EACL):

* **chat** (``openai:``): the standard chat API cannot prefill the assistant's answer, so the primer
  ("Answer: Summary") cannot be forced. The user message is the prompt text plus an instruction
  (``CHAT_INSTRUCTION``); the request asks for greedy decoding (``temperature=0``), a few answer
  tokens and ``top_logprobs``. The answer position is the first generated token that is a label
  word once whitespace and markup are stripped (so "Summary A" and "**A**" read the token after
  the preamble, i.e. P(A | "Summary")); its top-k entries that normalise to a label word are summed
  per word ("A" and " A" are the same answer) and p follows eq. 3. Label words: ``("A", "B")``.
* **completions** (``openai-completions:``): the prompt is rendered here exactly as the local judge
  renders it (``text + "\\n\\n" + primer``, or, with ``tokenizer=``, that tokenizer's chat
  template followed by the primer) and one token is requested; the label words ``(" A", " B")``
  are matched exactly as the local judge does, so p equals the local judge's p for the same model.
* A label word absent from the top-k while the other is present: its probability is at most the
  smallest listed one, and that bound is used (the least extreme p consistent with the answer;
  counted in ``stats["one_label_missing"]``). Both absent: counted in ``stats["labels_missing"]``,
  logged once, and the prompt falls back to sampling (or, with ``fallback="none"``, is stored as
  p = 0.5 with ``label_mass`` 0).
* **sampling** (server rejects log-probabilities or returns none; or the fallback above): K answers
  at temperature 1 and eq. 5, p = share of parseable answers choosing A; ``label_mass`` is the
  parseable share and the log-probabilities are NaN; unparseable answers are counted.

Requests run ``concurrency`` at a time in a thread pool over keep-alive ``http.client`` connections
(stdlib only), with exponential backoff and jitter on 429/5xx/timeouts/connection errors and
malformed responses, honouring ``Retry-After``. 401/403/404 and unknown models are a
``ModelLoadError`` (the model list is checked at load time when the server offers ``/models``).

The API key comes from the environment only, and only the key bound to the spec's own base URL is
sent (``servers.api_key_for``: ``COMPASSESS_OPENAI_API_KEY`` belongs to
``COMPASSESS_OPENAI_BASE_URL``, ``OPENAI_API_KEY`` to ``OPENAI_BASE_URL``); a spec pointing anywhere
else gets no key. This module must never put the key in ``model_key``, ``description``, a message,
a log line or anything returned, and must never accept credentials inside the URL.
"""

from __future__ import annotations

import email.utils
import hashlib
import http.client
import json
import logging
import math
import random
import re
import socket
import ssl
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Any, Iterator, Sequence
from urllib.parse import urlsplit

import numpy as np

from ..errors import CompAssessError, InputError, ModelLoadError
from ..types import ComparisonPrompt, Judgement
from .base import collect_judgements, judgements_from_logprobs
from .servers import (API_KEY_ENV, KEY_BINDINGS, OpenAISpec, api_key_for, parse_spec,
                      redact_secrets, unsent_key_note)

log = logging.getLogger("compassess.openai")

CHAT_LABEL_WORDS = ("A", "B")
COMPLETIONS_LABEL_WORDS = (" A", " B")
#: Appended to the user message in chat mode, where the answer cannot be primed.
CHAT_INSTRUCTION = "\n\nAnswer with '{a}' or '{b}' only."
#: Statuses worth retrying: rate limits, overload and gateway trouble.
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524})
_MARKUP = " \t\r\n*_`'\"()[]{}:.,!"


class ServerUnavailableError(CompAssessError):
    """The judge server kept failing (down, overloaded, broken responses) after every retry.

    Everything the run computed before is stored; the same command resumes once the server is back.
    """


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None):
        super().__init__(reason)
        self.retry_after = retry_after


class _HTTPError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


# --------------------------------------------------------------------------- answers -> probabilities

def normalise_token(token: str) -> str:
    """A token with surrounding whitespace, quotes, brackets and markdown stripped ("**A" -> "A")."""
    return token.strip(_MARKUP)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date); None if absent."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _choice_patterns(words: tuple[str, str]) -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    a, b = (re.escape(normalise_token(w)) for w in words)
    alt = f"(?P<w>{a}|{b})"
    whole = re.compile(rf"^\s*\(?{alt}\)?\s*[.!:]?\s*$", re.IGNORECASE)
    leading = re.compile(rf"^\s*\(?{alt}\)?(?![A-Za-z0-9])")   # case-sensitive: "a good one" is not A
    named = re.compile(rf"\b(?:summary|response|option|candidate|answer|text)\s*[:\-]?\s*\(?{alt}\)?"
                       r"(?![A-Za-z0-9])", re.IGNORECASE)
    return whole, leading, named


def parse_choice(answer: str, words: tuple[str, str] = CHAT_LABEL_WORDS) -> int:
    """Which label an answer chooses: 0 (A), 1 (B) or -1 (unparseable), for eq. 5.

    Accepts "A", "b.", "**A**", "Summary B", "Answer: Response A", "Response A is better",
    "A is more coherent"; the first named choice wins ("Summary B is better than Summary A" -> B).
    A lone lower-case letter counts only when it is the whole answer ("a" yes, "a summary" no).
    """
    text = re.sub(r"[*_`#]", "", answer or "")
    targets = [normalise_token(w).lower() for w in words]
    for pat in _choice_patterns(tuple(words)):
        m = pat.search(text)
        if m:
            return targets.index(m.group("w").lower())
    return -1


def _logsumexp(values: list[float]) -> float:
    m = max(values)
    return m + math.log(sum(math.exp(v - m) for v in values))


def label_logprobs(positions: list[tuple[str, float, dict[str, float]]], words: tuple[str, str],
                   exact: bool) -> tuple[float, float, int] | None:
    """Log-probabilities of the two label words at the answer position, for eq. 3.

    Parameters
    ----------
    positions
        Per generated token: (token, its logprob, {top-k token: logprob}).
    words
        The label words.
    exact
        Match tokens exactly (completions after the primer, like the local judge); otherwise
        compare normalised tokens and sum the entries of each word (chat: "A" and " A" are one
        answer), reading the first position whose generated token is a label word.

    Returns
    -------
    (logp_a, logp_b, n_missing) or None
        ``n_missing`` is 1 when one word was absent from the top-k: its log-probability is then the
        smallest listed one (an upper bound). None when neither word is listed.
    """
    if not positions:
        return None
    key = (lambda t: t) if exact else normalise_token
    targets = [key(w) for w in words]
    at = 0
    if not exact:
        at = next((i for i, (tok, _, _) in enumerate(positions) if key(tok) in targets), 0)
    token, lp, top = positions[at]
    entries = dict(top)
    entries.setdefault(token, lp)
    found = [[v for t, v in entries.items() if key(t) == w and v is not None] for w in targets]
    if not found[0] and not found[1]:
        return None
    floor = min(v for v in entries.values() if v is not None)
    out = [_logsumexp(f) if f else floor for f in found]
    return out[0], out[1], int(not found[0]) + int(not found[1])


def sampled_probability(choices: Sequence[int]) -> tuple[float, float]:
    """Eq. 5 of Liusie et al. 2024: p = share of parseable answers choosing A.

    Returns ``(p, parseable_share)``; p = 0.5 when no answer was parseable.
    """
    c = np.asarray(choices, dtype=np.int64)
    if c.size == 0:
        return 0.5, 0.0
    n_a, n_b = int(np.sum(c == 0)), int(np.sum(c == 1))
    parsed = n_a + n_b
    return (n_a / parsed if parsed else 0.5), parsed / c.size


# ------------------------------------------------------------------------------------- HTTP client

class _Client:
    """JSON over keep-alive HTTP(S) connections (one per thread), with retries and backoff."""

    def __init__(self, base_url: str, api_key: str | None, timeout_s: float, max_retries: int,
                 backoff_s: float, max_backoff_s: float, max_retry_after_s: float = 300.0):
        parts = urlsplit(base_url)
        self.base_url = base_url
        self.https = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.https else 80)
        self.path = parts.path.rstrip("/")
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_retry_after_s = max_retry_after_s
        self._headers = {"Content-Type": "application/json", "Accept": "application/json",
                         "User-Agent": "compassess"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._keys = (api_key,) if api_key else ()
        self._local = threading.local()
        self._all: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self.retries = 0
        self._rng = random.Random()

    def __repr__(self) -> str:  # never show headers
        return f"_Client({self.base_url!r})"

    def clean(self, text: str) -> str:
        """``text`` without this client's key nor any other credential
        (``servers.redact_secrets``): every message from the server goes through it."""
        return redact_secrets(text, self._keys)

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self.https:
                conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout_s,
                                                   context=ssl.create_default_context())
            else:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()

    def _once(self, method: str, path: str, body: bytes | None) -> dict:
        conn = self._connection()
        try:
            conn.request(method, self.path + path, body=body, headers=self._headers)
            resp = conn.getresponse()
            raw = resp.read()
        except (socket.timeout, TimeoutError) as e:
            self._drop_connection()
            raise _Retryable(f"no answer within {self.timeout_s:g} s ({type(e).__name__})") from None
        except (http.client.HTTPException, ConnectionError, OSError) as e:
            self._drop_connection()
            raise _Retryable(self.clean(f"connection failed ({type(e).__name__}: {e})")) from None
        if resp.getheader("Connection", "").lower() == "close":
            self._drop_connection()
        if resp.status >= 400:
            message = self.clean(_error_message(raw))
            if resp.status in RETRY_STATUSES:
                raise _Retryable(f"HTTP {resp.status}: {message}",
                                 parse_retry_after(resp.getheader("Retry-After")))
            raise _HTTPError(resp.status, message)
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise _Retryable(self.clean(f"malformed JSON in an HTTP {resp.status} answer "
                                        f"({len(raw)} bytes: {raw[:60]!r})")) from None
        if not isinstance(data, dict):
            raise _Retryable(f"unexpected JSON answer (a {type(data).__name__}, not an object)")
        return data

    def request(self, method: str, path: str, payload: dict | None = None,
                max_retries: int | None = None, require: str | None = None) -> dict:
        """One API call, retried on transient failures.

        Raises
        ------
        _HTTPError
            A non-retryable HTTP status (the caller turns it into a typed error).
        ServerUnavailableError
            Every attempt failed transiently.
        """
        body = None if payload is None else json.dumps(payload).encode("utf-8")
        retries = self.max_retries if max_retries is None else max_retries
        t0 = time.monotonic()
        for attempt in range(retries + 1):
            try:
                data = self._once(method, path, body)
                if require is not None and not (isinstance(data.get(require), list) and data[require]):
                    raise _Retryable(f"answer without '{require}'")
                return data
            except _Retryable as e:
                last = e
                if attempt == retries:
                    break
                with self._lock:
                    self.retries += 1
                time.sleep(self._delay(attempt, e.retry_after))
        raise ServerUnavailableError(
            f"the judge server at {self.base_url} failed {retries + 1} time(s) in a row over "
            f"{time.monotonic() - t0:.1f} s on {method} {path} (last: {last}); everything computed "
            "so far is stored: run the same command again to resume when the server is back")

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with equal jitter; a server's Retry-After is a floor."""
        cap = min(self.max_backoff_s, self.backoff_s * (2 ** attempt))
        with self._lock:
            delay = cap / 2 + self._rng.uniform(0, cap / 2)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_retry_after_s))
        return delay


def _error_message(raw: bytes) -> str:
    """The server's error text (OpenAI ``error.message``, TGI ``error``, FastAPI ``detail``)."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return raw[:200].decode("utf-8", "replace").strip() or "(empty body)"
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data.get("message")))
        if isinstance(err, dict):
            err = err.get("message", err)
        if err is not None:
            return str(err)[:300]
    return str(data)[:200]


# ------------------------------------------------------------------------------------------- judge

class OpenAIJudge:
    """A ``Judge`` backed by an OpenAI-compatible server (see the module docstring for the design).

    Parameters
    ----------
    spec
        The parsed model spec.
    concurrency
        Requests in flight at once.
    samples
        K, answers sampled per prompt when log-probabilities are unavailable (eq. 5).
    top_logprobs
        Alternatives requested per answer token (vLLM and OpenAI chat allow up to 20).
    tokenizer
        Completions mode only: a local tokenizer (path or hub id) whose chat template renders the
        prompt, as the local judge does; None renders ``text + "\\n\\n" + primer``.
    fallback
        ``"sample"`` (default) or ``"none"`` when neither label word is in the top-k.
    check_model
        Ask ``/models`` at load time and fail early on a bad key, URL or model name.
    """

    def __init__(self, spec: OpenAISpec, *, concurrency: int = 8, samples: int = 10,
                 top_logprobs: int = 20, timeout_s: float = 120.0, max_retries: int = 6,
                 backoff_s: float = 0.5, max_backoff_s: float = 30.0, tokenizer: str | None = None,
                 answer_tokens: int | None = None, sample_tokens: int = 8, fallback: str = "sample",
                 label_words: tuple[str, str] | None = None, check_model: bool = True):
        if concurrency < 1:
            raise InputError(f"concurrency must be at least 1, got {concurrency}")
        if samples < 1:
            raise InputError(f"samples (K) must be at least 1, got {samples}")
        if not 1 <= top_logprobs <= 20:
            raise InputError(f"top_logprobs must be between 1 and 20, got {top_logprobs}")
        if fallback not in ("sample", "none"):
            raise InputError(f"fallback must be 'sample' or 'none', got '{fallback}'")
        if tokenizer and spec.endpoint != "completions":
            raise InputError("tokenizer= only applies to openai-completions: (chat uses the "
                             "server's own chat template)")
        self.spec = spec
        self.chat = spec.endpoint == "chat"
        self.label_words = tuple(label_words or (CHAT_LABEL_WORDS if self.chat else COMPLETIONS_LABEL_WORDS))
        if len(self.label_words) != 2 or normalise_token(self.label_words[0]) == normalise_token(self.label_words[1]):
            raise InputError(f"label words {self.label_words} must be two different words")
        self.concurrency = concurrency
        self.samples = samples
        self.top_logprobs = top_logprobs
        self.answer_tokens = answer_tokens or (4 if self.chat else 1)
        self.sample_tokens = sample_tokens
        self.fallback = fallback
        self.tokenizer_spec = tokenizer
        self._template_tokenizer = _load_tokenizer(tokenizer) if tokenizer else None
        self._client = _Client(spec.base_url, api_key_for(spec.base_url), timeout_s, max_retries,
                               backoff_s, max_backoff_s)
        self.logprobs_available = True
        self.stats = {"requests": 0, "logprob_answers": 0, "one_label_missing": 0,
                      "labels_missing": 0, "sampled_prompts": 0, "samples": 0,
                      "unparseable_samples": 0}
        self._stats_lock = threading.Lock()
        self._warned: set[str] = set()
        template = f"tokenizer={tokenizer}" if tokenizer else "plain"
        mode = (f"chat|instruction={hashlib.sha256(CHAT_INSTRUCTION.encode()).hexdigest()[:8]}"
                if self.chat else f"completions|template={template}")
        prefix = "openai" if self.chat else "openai-completions"
        self.model_key = (f"{prefix}:{spec.base_url}#{spec.model}|{mode}|samples={samples}"
                          f"|labels={json.dumps(list(self.label_words))}")
        api = "chat API" if self.chat else "completions API"
        self.description = (f"{spec.model} at {spec.base_url} (OpenAI-compatible {api}, "
                            f"{concurrency} requests in flight)")
        # The server's limit is not known here; the server refuses a prompt that is too long.
        self.context_window: int | None = None
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="compassess-openai")
        if check_model:
            self._check_model()

    def __repr__(self) -> str:
        return f"OpenAIJudge({self.description})"

    # ------------------------------------------------------------------ load-time checks
    def _check_model(self) -> None:
        try:
            data = self._client.request("GET", "/models", max_retries=2)
        except ServerUnavailableError as e:
            raise ModelLoadError(f"cannot reach the judge server at {self.spec.base_url}: {e}") from None
        except _HTTPError as e:
            if e.status == 404:
                return  # some servers do not list models; the first request will tell
            raise self._typed_error(e, "/models") from None
        ids = [m.get("id") for m in data.get("data", []) if isinstance(m, dict)]
        if ids and self.spec.model not in ids:
            shown = ", ".join(map(str, ids[:10])) + (" ..." if len(ids) > 10 else "")
            raise ModelLoadError(f"model '{self.spec.model}' is not served at {self.spec.base_url}; "
                                 f"it serves: {shown}")

    def _typed_error(self, e: _HTTPError, path: str) -> CompAssessError:
        where = f"{self.spec.base_url}{path}"
        if e.status in (401, 403):
            why = unsent_key_note(self.spec.base_url) or (
                f"set ${API_KEY_ENV[0]} (with ${KEY_BINDINGS[0][1]} = {self.spec.base_url}) to "
                "a valid API key")
            return ModelLoadError(
                f"the judge server refused the request (HTTP {e.status}: {e.message}) at {where}: "
                f"{why}")
        if e.status == 404:
            return ModelLoadError(
                f"not found (HTTP 404: {e.message}) at {where}: check that the base URL ends where "
                f"the API starts (usually /v1) and that the server serves model '{self.spec.model}'")
        return InputError(f"the judge server rejected a request (HTTP {e.status}: {e.message}) at {where}")

    # ------------------------------------------------------------------ rendering
    def render(self, prompt: ComparisonPrompt) -> str:
        """What is sent: the user message (chat; the server adds its template) or the full prompt."""
        if self.chat:
            a, b = (normalise_token(w) for w in self.label_words)
            return prompt.text + CHAT_INSTRUCTION.format(a=a, b=b)
        tok = self._template_tokenizer
        if tok is not None and getattr(tok, "chat_template", None):
            head = tok.apply_chat_template([{"role": "user", "content": prompt.text}], tokenize=False,
                                           add_generation_prompt=True)
            return head + prompt.primer
        return prompt.text + "\n\n" + prompt.primer

    def _body(self, text: str, *, logprobs: bool, n: int = 1, seed: int | None = None) -> dict:
        body: dict[str, Any] = {"model": self.spec.model}
        if self.chat:
            body["messages"] = [{"role": "user", "content": text}]
        else:
            body["prompt"] = text
        if logprobs:
            body.update(max_tokens=self.answer_tokens, temperature=0.0)
            if self.chat:
                body.update(logprobs=True, top_logprobs=self.top_logprobs)
            else:
                body["logprobs"] = self.top_logprobs
        else:
            body.update(max_tokens=self.sample_tokens, temperature=1.0, n=n)
            if seed is not None:
                body["seed"] = seed
        return body

    # ------------------------------------------------------------------ writing text
    def generate(self, prompts: Sequence[str], options, *,
                 seeds: Sequence[int | None] | None = None) -> list[str]:
        """``base.TextGenerator.generate``: one request per prompt, the user message sent as is
        (chat; the server applies its template) or rendered with the template tokenizer when one
        is configured (completions); ``temperature`` 0 unless ``options.sample``, then the seed
        goes with the request (servers that honour ``seed`` write the same text again)."""
        out = []
        for k, prompt in enumerate(prompts):
            body: dict[str, Any] = {"model": self.spec.model,
                                    "max_tokens": int(options.max_new_tokens)}
            if self.chat:
                body["messages"] = [{"role": "user", "content": prompt}]
            else:
                tok = self._template_tokenizer
                body["prompt"] = (tok.apply_chat_template([{"role": "user", "content": prompt}],
                                                          tokenize=False, add_generation_prompt=True)
                                  if tok is not None and getattr(tok, "chat_template", None)
                                  else prompt + "\n\n")
            if options.sample:
                body.update(temperature=float(options.temperature), top_p=float(options.top_p))
                seed = None if seeds is None else seeds[k]
                if seed is not None:
                    body["seed"] = int(seed)
            else:
                body["temperature"] = 0.0
            choice = self._post(body)["choices"][0]
            out.append((choice.get("message") or {}).get("content") if self.chat
                       else choice.get("text") or "")
        return [t or "" for t in out]

    def generation_record(self, options) -> dict:
        """``base.TextGenerator.generation_record``."""
        return dict(model=f"{self.spec.base_url}#{self.spec.model}",
                    max_new_tokens=options.max_new_tokens, sample=options.sample,
                    temperature=options.temperature if options.sample else None,
                    top_p=options.top_p if options.sample else None)

    @property
    def _path(self) -> str:
        return "/chat/completions" if self.chat else "/completions"

    def _post(self, body: dict) -> dict:
        self._count("requests")
        try:
            return self._client.request("POST", self._path, body, require="choices")
        except _HTTPError as e:
            if e.status in (400, 422) and "logprob" in e.message.lower() and body.get("logprobs"):
                raise
            raise self._typed_error(e, self._path) from None

    # ------------------------------------------------------------------ one prompt
    def _positions(self, data: dict) -> list[tuple[str, float, dict[str, float]]] | None:
        lp = data["choices"][0].get("logprobs")
        if not isinstance(lp, dict):
            return None
        out = []
        if self.chat:
            for item in lp.get("content") or []:
                top = {t["token"]: t["logprob"] for t in item.get("top_logprobs") or []}
                out.append((item["token"], item["logprob"], top))
        else:
            tokens, lps = lp.get("tokens") or [], lp.get("token_logprobs") or []
            tops = lp.get("top_logprobs") or [None] * len(tokens)
            for tok, val, top in zip(tokens, lps, tops):
                out.append((tok, val, dict(top or {})))
        return out or None

    def _judge_one(self, prompt: ComparisonPrompt) -> tuple[float, float, float, float]:
        """(p, logp_a, logp_b, label_mass); NaN log-probs mark a sampled (eq. 5) judgement."""
        text = self.render(prompt)
        while self.logprobs_available:
            body = self._body(text, logprobs=True)
            try:
                data = self._post(body)
            except _HTTPError as e:
                self._logprobs_refused(e.message, int(body.get("top_logprobs") or body["logprobs"]))
                continue
            positions = self._positions(data)
            if positions is None:
                self._logprobs_refused("the answers carry no log-probabilities", 0)
                continue
            found = label_logprobs(positions, self.label_words, exact=not self.chat)
            if found is not None:
                la, lb, missing = found
                self._count("logprob_answers")
                if missing:
                    self._count("one_label_missing")
                return float("nan"), la, lb, float("nan")
            self._count("labels_missing")
            self._warn_once("labels_missing", "neither label word %s is among the top-%d "
                            "log-probabilities of the answer; %s (counted in "
                            "stats['labels_missing'])", self.label_words, self.top_logprobs,
                            "sampling K answers instead (eq. 5)" if self.fallback == "sample"
                            else "storing p = 0.5 with label_mass 0")
            if self.fallback == "none":
                return 0.5, float("nan"), float("nan"), 0.0
            break
        return self._sample(text)

    def _logprobs_refused(self, why: str, tried: int) -> None:
        if tried > 5 and "logprob" in why.lower():
            # OpenAI's legacy completions and some servers cap logprobs at 5: try that first.
            self.top_logprobs = min(self.top_logprobs, 5)
            self._warn_once("top5", "the server refused top_logprobs above 5 (%s); using 5", why)
            return
        self.logprobs_available = False
        self._warn_once("no_logprobs", "the server gives no log-probabilities (%s): every prompt is "
                        "judged by sampling %d answers (eq. 5)", why, self.samples)

    def _sample(self, text: str) -> tuple[float, float, float, float]:
        seed = int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)
        answers: list[str] = []
        for _ in range(self.samples):  # servers that ignore n (Ollama) answer once per request
            need = self.samples - len(answers)
            data = self._post(self._body(text, logprobs=False, n=need, seed=seed + len(answers)))
            for ch in data["choices"][:need]:
                msg = ch.get("message") if self.chat else None
                answers.append(str((msg or {}).get("content") or "") if self.chat else str(ch.get("text") or ""))
            if len(answers) >= self.samples:
                break
        choices = [parse_choice(a, self.label_words) for a in answers]
        p, share = sampled_probability(choices)
        self._count("sampled_prompts")
        self._count("samples", len(choices))
        self._count("unparseable_samples", sum(1 for c in choices if c < 0))
        return p, float("nan"), float("nan"), share

    def _count(self, key: str, n: int = 1) -> None:
        with self._stats_lock:
            self.stats[key] += n

    def _warn_once(self, key: str, msg: str, *args) -> None:
        with self._stats_lock:
            if key in self._warned:
                return
            self._warned.add(key)
        log.warning("%s: " + msg, self.spec.model, *args)

    @property
    def retries(self) -> int:
        """Requests retried so far (429/5xx/timeouts/connection errors/malformed answers)."""
        return self._client.retries

    # ------------------------------------------------------------------ Judge protocol
    def judge_stream(self, prompts: Sequence[ComparisonPrompt]
                     ) -> Iterator[tuple[np.ndarray, list[Judgement]]]:
        """Judge the prompts, ``concurrency`` requests at a time, yielding ``(indices,
        judgements)`` for the requests finished since the last yield; ``latency_ms`` is the
        time since the previous yield over the answers it brought.

        Closing the iterator cancels the requests not yet sent and waits for those in flight.

        Raises
        ------
        ServerUnavailableError
            A request failed after every retry (the answers yielded before it stand).
        ModelLoadError, InputError
            The server refused the key, the URL or the model, or rejected a request.
        """
        if not prompts:
            return
        index = {self._pool.submit(self._judge_one, p): k for k, p in enumerate(prompts)}
        pending = set(index)
        t0 = time.perf_counter()
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                failed = next((f for f in done if f.exception() is not None), None)
                if failed is not None:
                    raise failed.exception()
                rows = sorted(index[f] for f in done)
                now = time.perf_counter()
                ms = (now - t0) * 1000.0 / len(rows)
                t0 = now
                by_row = {index[f]: f.result() for f in done}
                yield np.asarray(rows, dtype=np.int64), _judgements([by_row[r] for r in rows], ms)
        finally:
            for f in pending:
                f.cancel()
            wait(pending)  # let in-flight requests end before the caller moves on

    def judge(self, prompts: Sequence[ComparisonPrompt]) -> list[Judgement]:
        """Judge every prompt; same order as the input (``judge_stream`` collected)."""
        return collect_judgements(self.judge_stream(prompts), len(prompts))

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._client.close()


def _judgements(rows: list[tuple[float, float, float, float]], ms: float) -> list[Judgement]:
    """Judgements from ``_judge_one`` rows: eq. 3 where log-probabilities came back, else the
    sampled p (eq. 5) with NaN log-probabilities."""
    arr = np.array(rows, dtype=np.float64).reshape(-1, 4)
    by_logprob = np.isfinite(arr[:, 1]) | np.isfinite(arr[:, 2])
    eq3 = iter(judgements_from_logprobs(arr[by_logprob, 1], arr[by_logprob, 2], ms))
    return [next(eq3) if by_logprob[k]
            else Judgement(p=float(arr[k, 0]), logp_a=float("nan"), logp_b=float("nan"),
                           label_mass=float(arr[k, 3]), latency_ms=ms)
            for k in range(len(rows))]


def _load_tokenizer(spec: str):
    try:
        from transformers import AutoTokenizer
        return AutoTokenizer.from_pretrained(spec)
    except Exception as e:  # noqa: BLE001 - any failure is the user's path or id
        raise ModelLoadError(f"cannot load the tokenizer '{spec}' for rendering prompts: "
                             f"{type(e).__name__}: {e}") from None


def load_openai_judge(spec: str, *, concurrency: int = 8, samples: int = 10, top_logprobs: int = 20,
                      timeout_s: float = 120.0, max_retries: int = 6, tokenizer: str | None = None,
                      label_words: tuple[str, str] | None = None, check_model: bool = True,
                      **kwargs) -> OpenAIJudge:
    """A judge for ``openai:BASE_URL#MODEL`` or ``openai-completions:BASE_URL#MODEL[?options]``.

    Options written in the spec (``?samples=4&concurrency=16&tokenizer=ORG/NAME&timeout=60``)
    override the keyword arguments. Extra keyword arguments go to ``OpenAIJudge``.

    Raises
    ------
    InputError
        A malformed spec or option.
    ModelLoadError
        The server cannot be reached, refuses the key (401/403), or does not serve the model.
    """
    parsed = parse_spec(spec)
    opts = dict(parsed.options)

    def number(name: str, default, cast):
        if name not in opts:
            return default
        try:
            return cast(opts[name])
        except ValueError:
            raise InputError(f"model spec option {name}={opts[name]!r} is not a number") from None

    return OpenAIJudge(
        parsed, concurrency=number("concurrency", concurrency, int), samples=number("samples", samples, int),
        top_logprobs=number("top_logprobs", top_logprobs, int), timeout_s=number("timeout", timeout_s, float),
        max_retries=number("max_retries", max_retries, int), tokenizer=opts.get("tokenizer", tokenizer),
        answer_tokens=number("answer_tokens", kwargs.pop("answer_tokens", None), int),
        sample_tokens=number("sample_tokens", kwargs.pop("sample_tokens", 8), int),
        fallback=opts.get("fallback", kwargs.pop("fallback", "sample")), label_words=label_words,
        check_model=check_model, **kwargs)

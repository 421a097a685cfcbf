"""A small OpenAI-protocol HTTP server for tests and benchmarks (never shipped, never a product).

It speaks ``GET /v1/models``, ``POST /v1/chat/completions`` and ``POST /v1/completions`` with
answers shaped like vLLM's and OpenAI's (``choices[].logprobs.content[]`` with token / logprob /
bytes / top_logprobs for chat; ``logprobs.tokens / token_logprobs / top_logprobs / text_offset``
for completions; ``usage``), from one of two backends:

* ``SmolBackend``: the real bundled SmolLM2-135M-Instruct (fp32, CPU): the chat template for chat
  requests, the raw prompt for completions, greedy or sampled decoding, full-softmax log-probs.
* ``FakeBackend``: FAKE, for measuring the client only: answers " A"/" B" with log-probs derived
  from a hash of the prompt after a fixed latency; no model.

Fault injection (``OpenAIServer.inject``) applies to the next POST requests in order: ``"429"``
(with ``Retry-After``), ``"500"``, ``"drop"`` (the connection closes without an answer),
``"malformed"`` (HTTP 200 with broken JSON), ``"slow"`` (waits ``slow_s`` before answering).
``die_after=N`` stops the server for good after N answered POSTs (later connections are refused).
``api_key`` makes every request without ``Authorization: Bearer KEY`` a 401; ``logprobs="reject"``
answers requests asking for log-probabilities with a 400 and ``"omit"`` returns ``logprobs: null``;
``max_logprobs`` answers a larger ``top_logprobs`` with vLLM's 400.

Run it alone: ``python tests/openai_server.py --backend fake --latency-ms 50`` prints its base URL.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import socket
import threading
import time
import uuid
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (token id or text, logprob, [(alternative, logprob), ...]) per generated token
Step = tuple[str, float, list[tuple[str, float]]]


class FakeBackend:
    """FAKE model: P(" A") = 0.1 + 0.8 * (sha256(prompt) mod 1000) / 1000, after ``latency_s``."""

    def __init__(self, latency_s: float = 0.05):
        self.latency_s = latency_s

    def _q(self, text: str) -> float:
        return 0.1 + 0.8 * (int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) % 1000) / 1000

    def render_chat(self, messages: list[dict]) -> str:
        return "\n".join(f"{m['role']}: {m['content']}" for m in messages) + "\nassistant:"

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)

    def generate(self, text: str, *, max_tokens: int, temperature: float, n: int, top: int,
                 seed: int | None, chat: bool) -> list[list[Step]]:
        time.sleep(self.latency_s)
        q = self._q(text)
        a, b = ("A", "B") if chat else (" A", " B")
        full = [(a, math.log(q * 0.95)), (b, math.log((1 - q) * 0.95)), ("Summary", math.log(0.03)),
                (" The", math.log(0.01))]
        alts = full[:max(top, 1)]
        alts.sort(key=lambda t: -t[1])
        if temperature == 0:
            pick = a if q >= 0.5 else b
            # the answer's log-probability whether or not the request asked for alternatives
            return [[(pick, dict(full)[pick], alts)]]
        import random
        rng = random.Random(seed)
        return [[(a if rng.random() < q else b, 0.0, alts)] for _ in range(n)]


class SmolBackend:
    """The real bundled SmolLM2 judge model answering requests (one forward pass at a time)."""

    def __init__(self):
        import torch

        from compassess_core.judges import load_judge
        self.torch = torch
        self.judge = load_judge(None, device="cpu", dtype="float32")
        self.model = self.judge.model
        self.tok = self.judge.tokenizer
        self.lock = threading.Lock()

    def render_chat(self, messages: list[dict]) -> str:
        return self.tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def count_tokens(self, text: str) -> int:
        return len(self.tok(text, add_special_tokens=False)["input_ids"])

    def generate(self, text: str, *, max_tokens: int, temperature: float, n: int, top: int,
                 seed: int | None, chat: bool) -> list[list[Step]]:
        torch = self.torch
        # vLLM tokenises rendered chat text without special tokens and raw prompts with them.
        ids = self.tok(text, add_special_tokens=not chat)["input_ids"]
        with self.lock, torch.inference_mode():
            gen = torch.Generator().manual_seed(seed if seed is not None else 0)
            x = torch.tensor([ids] * n, dtype=torch.long)
            cache = None
            steps: list[list[Step]] = [[] for _ in range(n)]
            alive = [True] * n
            for _ in range(max_tokens):
                out = self.model(input_ids=x, past_key_values=cache, use_cache=True)
                cache = out.past_key_values
                logp = torch.log_softmax(out.logits[:, -1].float(), dim=-1)
                if temperature == 0:
                    nxt = logp.argmax(dim=-1)
                else:
                    nxt = torch.multinomial(torch.softmax(logp / temperature, dim=-1), 1,
                                            generator=gen).squeeze(-1)
                vals, idx = logp.topk(max(top, 1), dim=-1)
                for r in range(n):
                    if not alive[r]:
                        continue
                    tid = int(nxt[r])
                    alts = [(self.tok.decode([int(i)]), float(v)) for v, i in zip(vals[r], idx[r])]
                    steps[r].append((self.tok.decode([tid]), float(logp[r, tid]), alts))
                    if tid == self.tok.eos_token_id:
                        alive[r] = False
                if not any(alive):
                    break
                x = nxt.unsqueeze(-1)
        return steps


def _tok_entry(token: str, logprob: float) -> dict:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8"))}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_HTTPServer"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes: without TCP_NODELAY, Nagle + delayed ACK add ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet tests
        pass

    def _send(self, status: int, payload: Any, headers: dict | None = None, raw: bytes | None = None) -> None:
        body = raw if raw is not None else json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _error(self, status: int, message: str, kind: str, headers: dict | None = None) -> None:
        self._send(status, {"error": {"message": message, "type": kind, "param": None, "code": status}},
                   headers)

    def _authorised(self) -> bool:
        owner = self.server.owner
        if owner.api_key is None or self.headers.get("Authorization") == f"Bearer {owner.api_key}":
            return True
        self._error(401, "Incorrect API key provided.", "invalid_request_error")
        return False

    def _dead(self) -> bool:
        # A stopped server also refuses requests on connections kept alive from before.
        if not self.server.owner.stopped:
            return False
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        return True

    def do_GET(self) -> None:
        owner = self.server.owner
        if self._dead() or not self._authorised():
            return
        if self.path.rstrip("/") != "/v1/models":
            self._error(404, f"Not Found: {self.path}", "NotFoundError")
            return
        self._send(200, {"object": "list", "data": [
            {"id": owner.model_name, "object": "model", "created": owner.created,
             "owned_by": "compassess-tests", "root": owner.model_name, "parent": None,
             "max_model_len": 8192}]})

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self._dead():
            return
        fault = owner.next_fault()
        if fault == "drop":
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if fault == "429":
            self._error(429, "Rate limit reached, retry later.", "rate_limit_error",
                        {"Retry-After": str(owner.retry_after)})
            return
        if fault == "500":
            self._error(500, "Internal server error", "InternalServerError")
            return
        if fault == "malformed":
            self._send(200, None, raw=b'{"id": "cmpl-broken", "choices": [{"text": ')
            return
        if fault == "slow":
            time.sleep(owner.slow_s)
        if not self._authorised():
            return
        path = self.path.rstrip("/")
        if path not in ("/v1/chat/completions", "/v1/completions"):
            self._error(404, f"Not Found: {self.path}", "NotFoundError")
            return
        try:
            req = json.loads(raw)
        except ValueError:
            self._error(400, "request body is not JSON", "BadRequestError")
            return
        if req.get("model") != owner.model_name:
            self._error(404, f"The model `{req.get('model')}` does not exist.", "NotFoundError")
            return
        owner.enter()
        try:
            self._complete(owner, req, chat=path.endswith("chat/completions"))
        finally:
            owner.leave()

    def _complete(self, owner: "OpenAIServer", req: dict, chat: bool) -> None:
        if chat:
            want = bool(req.get("logprobs"))
            top = int(req.get("top_logprobs") or 0)
            text = owner.backend.render_chat(req["messages"])
        else:
            want = req.get("logprobs") is not None
            top = int(req.get("logprobs") or 0)
            text = req["prompt"]
        if want and owner.logprobs == "reject":
            self._error(400, "logprobs are not supported by this server", "BadRequestError")
            return
        if top > owner.max_logprobs:
            self._error(400, f"Requested sample logprobs of {top}, which is greater than max "
                        f"allowed: {owner.max_logprobs}", "BadRequestError")
            return
        n = int(req.get("n") or 1)
        max_tokens = int(req.get("max_tokens") or 16)
        temperature = float(req.get("temperature", 1.0))
        runs = owner.backend.generate(text, max_tokens=max_tokens, temperature=temperature, n=n,
                                      top=top, seed=req.get("seed"), chat=chat)
        with_lp = want and owner.logprobs == "give"
        choices = []
        for i, steps in enumerate(runs):
            out_text = "".join(tok for tok, _, _ in steps)
            finish = "length" if len(steps) >= max_tokens else "stop"
            if chat:
                lp = None
                if with_lp:
                    lp = {"content": [dict(_tok_entry(tok, val),
                                           top_logprobs=[_tok_entry(t, v) for t, v in alts[:top]])
                                      for tok, val, alts in steps]}
                choices.append({"index": i, "message": {"role": "assistant", "content": out_text,
                                                        "tool_calls": []},
                                "logprobs": lp, "finish_reason": finish, "stop_reason": None})
            else:
                lp = None
                if with_lp:
                    offsets, pos = [], len(text)
                    for tok, _, _ in steps:
                        offsets.append(pos)
                        pos += len(tok)
                    lp = {"text_offset": offsets, "token_logprobs": [v for _, v, _ in steps],
                          "tokens": [t for t, _, _ in steps],
                          "top_logprobs": [dict(alts[:top]) for _, _, alts in steps]}
                choices.append({"index": i, "text": out_text, "logprobs": lp,
                                "finish_reason": finish, "stop_reason": None})
        prompt_tokens = owner.backend.count_tokens(text)
        completion_tokens = sum(len(s) for s in runs)
        # Counted before the reply leaves: a client that has its answer finds it counted.
        dying = owner.count_answer()
        self._send(200, {
            "id": f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}",
            "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()), "model": owner.model_name, "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
            "system_fingerprint": None})
        if dying:
            threading.Thread(target=owner.stop, daemon=True).start()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    owner: "OpenAIServer"


class OpenAIServer:
    """A running server on 127.0.0.1 (``port=0`` picks a free port); a context manager.

    Attributes of interest to tests: ``base_url``, ``posts`` (POSTs answered with 200),
    ``max_in_flight`` (most completions computed at once), ``faults`` (pending injections).
    """

    def __init__(self, backend, *, model_name: str = "smollm2", port: int = 0,
                 api_key: str | None = None, logprobs: str = "give", retry_after: float = 1,
                 slow_s: float = 2.0, die_after: int | None = None, max_logprobs: int = 20):
        if logprobs not in ("give", "reject", "omit"):
            raise ValueError(f"logprobs must be give, reject or omit, not {logprobs!r}")
        self.backend = backend
        self.model_name = model_name
        self.api_key = api_key
        self.logprobs = logprobs
        self.retry_after = retry_after
        self.slow_s = slow_s
        self.die_after = die_after
        self.max_logprobs = max_logprobs
        self.created = int(time.time())
        self.faults: deque[str] = deque()
        self.posts = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self.stopped = False
        self.httpd = _HTTPServer(("127.0.0.1", port), _Handler)
        self.httpd.owner = self
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"openai-server-{self.port}", daemon=True)
        self._thread.start()

    def inject(self, *faults: str) -> None:
        for f in faults:
            if f not in ("429", "500", "drop", "malformed", "slow"):
                raise ValueError(f"unknown fault {f!r}")
        with self._lock:
            self.faults.extend(faults)

    def next_fault(self) -> str | None:
        with self._lock:
            return self.faults.popleft() if self.faults else None

    def enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def count_answer(self) -> bool:
        """Count one 200 answer; True when it is the answer after which the server dies."""
        with self._lock:
            self.posts += 1
            return self.die_after is not None and self.posts >= self.die_after

    def stop(self) -> None:
        with self._lock:
            if self.stopped:
                return
            self.stopped = True
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "OpenAIServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description="OpenAI-protocol test server (tests/benchmarks only)")
    ap.add_argument("--backend", choices=["fake", "smollm2"], default="fake")
    ap.add_argument("--latency-ms", type=float, default=50.0, help="fake backend: time per request")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--model-name", default=None)
    args = ap.parse_args()
    backend = FakeBackend(args.latency_ms / 1000) if args.backend == "fake" else SmolBackend()
    srv = OpenAIServer(backend, model_name=args.model_name or args.backend, port=args.port)
    print(f"serving {srv.model_name} at {srv.base_url} (Ctrl-C stops)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()


if __name__ == "__main__":
    main()

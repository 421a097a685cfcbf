"""OpenAI-judge client throughput: comparisons/s as the number of requests in flight grows.

    python benchmarks/openai_concurrency.py [--latency-ms 50] [--comparisons 256] [--levels 1,2,4,8,16,32]
    python benchmarks/openai_concurrency.py --url http://127.0.0.1:8000/v1 --model NAME   # a real server

Without ``--url`` it starts ``tests/openai_server.py`` with its FAKE backend in a subprocess (its
own interpreter, so the server's Python does not share the client's GIL): every request takes a
fixed ``--latency-ms`` and answers " A"/" B" with log-probabilities, so what is measured is the
client (thread pool, keep-alive connections, JSON), not a model. Ideal scaling is
``concurrency x 1000 / latency_ms`` comparisons/s. Each level judges distinct prompts through
``OpenAIJudge.judge`` in chunks of 64, like the run loop. It measures, it never asserts a time.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from compassess_core.judges.openai_judge import load_openai_judge  # noqa: E402
from compassess_core.runs.comparative import DEFAULT_CHUNK_PROMPTS  # noqa: E402
from compassess_core.types import ComparisonPrompt  # noqa: E402


def start_fake_server(latency_ms: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "openai_server.py"), "--backend", "fake",
                             "--latency-ms", str(latency_ms), "--port", "0"],
                            stdout=subprocess.PIPE, text=True, cwd=REPO)
    line = proc.stdout.readline()  # "serving fake at http://127.0.0.1:PORT/v1 (Ctrl-C stops)"
    if " at " not in line:
        proc.kill()
        raise SystemExit(f"the fake server did not start: {line!r}")
    return proc, line.split(" at ")[1].split()[0]


def measure(spec: str, concurrency: int, prompts: list[ComparisonPrompt]) -> float:
    """Comparisons per second judging ``prompts`` with ``concurrency`` requests in flight."""
    judge = load_openai_judge(spec, concurrency=concurrency)
    judge.judge(prompts[:concurrency])  # open the connections outside the timing
    t0 = time.perf_counter()
    for k in range(0, len(prompts), DEFAULT_CHUNK_PROMPTS):
        judge.judge(prompts[k:k + DEFAULT_CHUNK_PROMPTS])
    elapsed = time.perf_counter() - t0
    judge.close()
    return len(prompts) / elapsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency-ms", type=float, default=50.0, help="fake server: time per request")
    ap.add_argument("--comparisons", type=int, default=256, help="prompts judged per level")
    ap.add_argument("--levels", default="1,2,4,8,16,32")
    ap.add_argument("--url", default=None, help="a running OpenAI-compatible server (default: start the fake)")
    ap.add_argument("--model", default="fake")
    ap.add_argument("--mode", default="openai", choices=["openai", "openai-completions"])
    args = ap.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",")]
    proc = None
    url = args.url
    if url is None:
        proc, url = start_fake_server(args.latency_ms)
    try:
        spec = f"{args.mode}:{url}#{args.model}"
        print(f"# {spec}: {args.comparisons} comparisons per level"
              + (f", fake server with {args.latency_ms:g} ms per request" if proc else ""))
        print(f"{'concurrency':>11}  {'comparisons/s':>13}  {'vs 1':>6}  {'ideal':>6}")
        base = None
        for level in levels:
            n = args.comparisons if level > 1 else min(args.comparisons, 64)
            prompts = [ComparisonPrompt(f"Passage: bench {level} {i}\n\nSummary A: a\n\nSummary B: b",
                                        "Answer: Summary") for i in range(n)]
            rate = measure(spec, level, prompts)
            base = base or rate
            ideal = f"{level:>5}x"
            print(f"{level:>11}  {rate:>13.1f}  {rate / base:>5.2f}x  {ideal:>6}", flush=True)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())

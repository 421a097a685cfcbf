"""One long comparison against the machine's arithmetic: how close the judge runs to its floor.

The first counted comparison of a run cannot come sooner than one forward pass over its prompt.
This measures that pass for a prompt of ``--tokens`` tokens (default 2,765: a pair of
1,000-word stories with their writing prompt and the template) through the judge's own path
(``CausalJudge.logprobs_for_ids``: chat-templated ids in, the label words' log-probabilities out),
and sets it beside its arithmetic done at this machine's measured matrix-multiply rate:

* the GEMM rate: fp32 ``torch.mm`` on the model's own shapes (``tokens`` rows times each linear
  layer), GFLOP/s, best of ``--repeat``, in the same process and thread count;
* the pass's FLOPs, counted as ``judge_throughput.py`` counts them: ``2 * tokens`` per weight
  of the decoder (the label head reads only the last position) plus causal attention, each
  token against the keys up to it, ``2 * 2 * head_dim`` per layer and head (scores and weighted
  values);
* floor seconds = FLOPs / GEMM rate; the ratio pass / floor (1.0: the pass is all arithmetic at
  the machine's peak).

It also splits the pass by operator (torch's profiler): matrix multiplies, attention, the rest.
A ratio near 1 means the pass cannot get much faster on this machine in this precision: only
fewer tokens, a lower precision or faster hardware make it shorter.

    PYTHONPATH=. .venv/bin/python benchmarks/forward_floor.py
    PYTHONPATH=. .venv/bin/python benchmarks/forward_floor.py --tokens 700 --threads 1
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.judge_throughput import attention_flops_per_key, model_flops  # noqa: E402
from compassess_core.judges import load_judge  # noqa: E402


def best_seconds(fn, repeat: int) -> float:
    """The fastest of ``repeat`` calls of ``fn`` after one warm-up call."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def linear_shapes(model: torch.nn.Module) -> list[tuple[int, int]]:
    """(in, out) of every linear layer of the decoder (the output head excluded)."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    return [(m.in_features, m.out_features) for m in model.modules()
            if isinstance(m, torch.nn.Linear) and m is not head]


def gemm_gflops(tokens: int, shapes: list[tuple[int, int]], repeat: int) -> float:
    """fp32 ``torch.mm`` rate over the model's distinct linear shapes at ``tokens`` rows."""
    flops = seconds = 0.0
    for k, n in sorted(set(shapes)):
        a, b = torch.randn(tokens, k), torch.randn(k, n)
        seconds += best_seconds(lambda: torch.mm(a, b), repeat)
        flops += 2.0 * tokens * k * n
    return flops / seconds / 1e9


def pass_flops(model: torch.nn.Module, tokens: int) -> tuple[float, float]:
    """(matmul FLOPs, causal attention FLOPs) of one prompt of ``tokens`` tokens, counted as the
    throughput benchmark counts them (``model_flops``, ``attention_flops_per_key``)."""
    return (model_flops(model, tokens, 1),
            attention_flops_per_key(model) * tokens * (tokens + 1) / 2)


def split_by_operator(run) -> dict[str, float]:
    """Seconds of one call of ``run`` in matrix multiplies, attention and everything else."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run()
    out = {"matmul": 0.0, "attention": 0.0, "other": 0.0}
    for event in prof.key_averages():
        seconds = event.self_cpu_time_total / 1e6
        if event.key in ("aten::mm", "aten::bmm", "aten::addmm"):
            out["matmul"] += seconds
        elif "attention" in event.key:
            out["attention"] += seconds
        else:
            out["other"] += seconds
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="judge (default: the bundled SmolLM2-135M)")
    ap.add_argument("--tokens", type=int, default=2765, help="prompt tokens of the comparison")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: the judge's own)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    if args.threads:
        os.environ["COMPASSESS_THREADS"] = str(args.threads)

    judge = load_judge(args.model, device="cpu", dtype="fp32")
    model = judge.model
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__} "
          f"threads {torch.get_num_threads()}; judge {judge.description}; "
          f"load average {os.getloadavg()[0]:.2f}")
    rng = np.random.default_rng(0)
    ids = rng.integers(100, min(model.config.vocab_size, 40_000), size=args.tokens).tolist()

    def one_comparison():
        judge.logprobs_for_ids([ids])

    with torch.inference_mode():
        seconds = best_seconds(one_comparison, args.repeat)
        parts = split_by_operator(one_comparison)
    rate = gemm_gflops(args.tokens, linear_shapes(model), args.repeat)
    linear, attention = pass_flops(model, args.tokens)
    floor = (linear + attention) / (rate * 1e9)
    print("| prompt tokens | pass s | matmul / attention / other s (profiled) | GEMM rate GFLOP/s "
          "| pass GFLOP (linear + attention) | floor s at that rate | pass / floor |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {args.tokens} | {seconds:.2f} | {parts['matmul']:.2f} / {parts['attention']:.2f} / "
          f"{parts['other']:.2f} | {rate:.0f} | {linear / 1e9:.0f} + {attention / 1e9:.0f} | "
          f"{floor:.2f} | **{seconds / floor:.2f}x** |")
    judge.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

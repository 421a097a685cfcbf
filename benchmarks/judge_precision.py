"""How far p moves when a judge runs in less than fp32: a measurement, not a test.

For one model, the same real SummEval comparisons (first ``--contexts`` articles, all ordered
pairs of their first ``--candidates`` summaries, T1 coherence) are judged by the engine in fp32
and in each ``--precisions`` (a fresh load each: ``bf16-weights`` = matrices stored in bf16 and
computed in fp32, ``bf16`` = computed in bf16; the label head is fp32 in every case). Reported
per precision: max and mean |p - p_fp32|, the Spearman correlation of p with fp32 p, the share
of comparisons whose side of 0.5 flips, the batch variance (max |dp| between batch sizes 8 and
3 on the same precision) and the judging time.

    PYTHONPATH=. .venv/bin/python benchmarks/judge_precision.py --threads 1
    PYTHONPATH=. .venv/bin/python benchmarks/judge_precision.py \\
        --model /work/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf --contexts 1 --candidates 6

This script must never write to the store.
"""

from __future__ import annotations

import argparse
import csv
import gc
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compassess_core.judges.loading import load_model  # noqa: E402
from compassess_core.judges.transformers_judge import CausalJudge  # noqa: E402
from compassess_core.judges.models import default_model_path  # noqa: E402
from compassess_core.runs.prompts import Aspect, builtin_template  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "summeval.csv"


def prompts(n_contexts: int, n_candidates: int):
    if not DATA.is_file():
        raise SystemExit(f"{DATA} is absent (../shared/data)")
    by_ctx: dict[str, tuple[str, list[str]]] = {}
    with open(DATA, encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            by_ctx.setdefault(r["context_id"], (r["context"], []))[1].append(r["text"])
    tpl, asp = builtin_template("t1", "summary"), Aspect.from_name("coherence")
    out = []
    for context, texts in list(by_ctx.values())[:n_contexts]:
        texts = texts[:n_candidates]
        out += [tpl.render(context, a, b, asp) for i, a in enumerate(texts)
                for k, b in enumerate(texts) if i != k]
    return out


def judged(model: str, precision: str, ps, batch_sizes=(8, 3)) -> tuple[list[np.ndarray], float]:
    loaded = load_model(model, device="cpu", dtype=precision)
    out, seconds = [], 0.0
    for b in batch_sizes:
        judge = CausalJudge(loaded, batch_size=b)
        t0 = time.perf_counter()
        out.append(np.array([j.p for j in judge.judge(ps)]))
        seconds = seconds or time.perf_counter() - t0
    del loaded, judge
    gc.collect()
    return out, seconds


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=str(default_model_path()))
    ap.add_argument("--contexts", type=int, default=2)
    ap.add_argument("--candidates", type=int, default=6)
    ap.add_argument("--precisions", default="bf16-weights,bf16")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    ps = prompts(args.contexts, args.candidates)
    print("command: " + " ".join([Path(sys.argv[0]).name] + (argv if argv is not None else sys.argv[1:])))
    print(f"{len(ps)} comparisons; torch threads {torch.get_num_threads()}; load average {os.getloadavg()}")
    (ref, ref_b3), t_ref = judged(args.model, "fp32", ps)
    print("| precision | max abs dp vs fp32 | mean abs dp | Spearman with fp32 | side of 0.5 flipped | "
          "batch variance (8 vs 3) | judging s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print(f"| fp32 | 0 | 0 | 1 | 0% | {np.max(np.abs(ref - ref_b3)):.1e} | {t_ref:.1f} |", flush=True)
    for precision in args.precisions.split(","):
        (p, p_b3), t = judged(args.model, precision, ps)
        d = np.abs(p - ref)
        flips = np.mean((p > 0.5) != (ref > 0.5))
        print(f"| {precision} | {d.max():.1e} | {d.mean():.1e} | {spearman(p, ref):.4f} | "
              f"{100 * flips:.0f}% | {np.max(np.abs(p - p_b3)):.1e} | {t:.1f} |", flush=True)
    print(f"p (fp32) ranges {ref.min():.3f}-{ref.max():.3f}, standard deviation {ref.std():.3f}; "
          f"load average {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Peak resident memory of a judge: first use (GGUF conversion + load + judging) against a later
use (load of the converted folder + judging), each in a fresh process: a measurement, not a test.

Each phase runs in a child process (this script with ``--child``) whose whole-process peak
resident set comes from ``os.wait4`` (``ru_maxrss``, as ``/usr/bin/time -v`` reports it). The
first phase gets an empty model cache (``COMPASSESS_CACHE`` set to a fresh folder), so the GGUF is
converted; the second reuses that folder. Both judge the same ``--prompts`` SummEval comparisons
(first article), so "running size" is the model plus a real batch. The estimate of
``compassess_core.judges.model_catalog.memory_needed`` for the same judge is printed beside the measurement.

    PYTHONPATH=. .venv/bin/python benchmarks/judge_memory.py \\
        --model /work/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf --dtype fp32

Run one such measurement at a time on a shared machine: the first phase of a 1.5B model needs
several GB. This script must never write to the store.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATA = ROOT.parent / "shared" / "data" / "summeval.csv"


def _prompts(n: int):
    from compassess_core.runs.prompts import Aspect, builtin_template
    if not DATA.is_file():
        raise SystemExit(f"{DATA} is absent (../shared/data): nothing to judge")
    texts, context = [], None
    with open(DATA, encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            if context is None:
                context = (r["context_id"], r["context"])
            if r["context_id"] != context[0]:
                break
            texts.append(r["text"])
    tpl, asp = builtin_template("t1", "summary"), Aspect.from_name("coherence")
    pairs = [(i, k) for i in range(len(texts)) for k in range(len(texts)) if i != k]
    return [tpl.render(context[1], texts[i], texts[k], asp) for i, k in pairs[:n]]


def _vm(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(args) -> int:
    from compassess_core.judges import load_judge
    prompts = _prompts(args.prompts)
    t0 = time.perf_counter()
    judge = load_judge(args.model, device=args.device, dtype=args.dtype)
    t_load = time.perf_counter() - t0
    load_peak = _vm("VmHWM:")
    load_rss = _vm("VmRSS:")
    t0 = time.perf_counter()
    ps = [j.p for j in judge.judge(prompts)]
    t_judge = time.perf_counter() - t0
    print(json.dumps(dict(load_s=t_load, judge_s=t_judge, load_peak_mb=load_peak,
                          after_load_rss_mb=load_rss, after_judge_rss_mb=_vm("VmRSS:"),
                          model_key=judge.model_key, p=ps)), flush=True)
    return 0


def run_child(args, cache: Path) -> dict:
    env = dict(os.environ, COMPASSESS_CACHE=str(cache), PYTHONPATH=str(ROOT))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--model", args.model,
           "--dtype", args.dtype, "--device", args.device, "--prompts", str(args.prompts)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"child failed ({os.waitstatus_to_exitcode(status)}): {out[-2000:]}")
    rec = json.loads(out.strip().splitlines()[-1])
    rec.update(wall_s=wall, peak_mb=usage.ru_maxrss / 1024)
    return rec


def estimate(args) -> str:
    try:
        from compassess_core.judges.model_catalog import memory_needed
    except ImportError:
        return "(no compassess_core.judges.model_catalog.memory_needed in this checkout)"
    est = memory_needed(args.model, dtype=args.dtype, device=args.device)
    return est.summary()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="a .gguf file (or model folder)")
    ap.add_argument("--dtype", default="fp32")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--prompts", type=int, default=16, help="SummEval comparisons judged per phase")
    ap.add_argument("--cache-dir", help="parent folder of the fresh model cache (default: a temp dir)")
    ap.add_argument("--keep-cache", action="store_true", help="leave the converted folder behind")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)

    print("command: " + " ".join([Path(sys.argv[0]).name] + (argv if argv is not None else sys.argv[1:])))
    print(f"load average before: {os.getloadavg()}")
    cache = Path(tempfile.mkdtemp(prefix="compassess-mem-", dir=args.cache_dir))
    try:
        first = run_child(args, cache)
        print(f"load average between: {os.getloadavg()}")
        later = run_child(args, cache)
    finally:
        if not args.keep_cache:
            shutil.rmtree(cache, ignore_errors=True)
    dp = max(abs(a - b) for a, b in zip(first["p"], later["p"]))
    print(f"| phase | peak RSS MB | RSS after load MB | RSS after judging MB | load s | "
          f"judge s ({args.prompts} comparisons) | process s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in (("first use (convert + load + judge)", first), ("later use (load + judge)", later)):
        print(f"| {name} | {r['peak_mb']:.0f} | {r['after_load_rss_mb']:.0f} | "
              f"{r['after_judge_rss_mb']:.0f} | {r['load_s']:.1f} | {r['judge_s']:.1f} | "
              f"{r['wall_s']:.1f} |")
    print(f"first-use peak / running peak = {first['peak_mb'] / later['peak_mb']:.2f}; "
          f"max |dp| between the phases = {dp:.2e}; model key {later['model_key']}")
    print(f"estimate: {estimate(args)}")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

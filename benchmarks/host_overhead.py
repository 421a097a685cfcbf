"""The judge's host time per comparison: the engine's own work, measured on a model too small to compute.

A randomly initialised Llama-shaped model of 2 layers and width 64 (``--layers``, ``--width``)
reads the bundled judge's tokenizer: its arithmetic per token is about 0.2 MFLOP, so what a
comparison costs is what the engine does around the model (tokenising, planning the prefix tree,
building inputs, masks and position ids, copying caches, launching the layers' operators,
extracting the label log-probabilities). On a GPU these are the costs that keep a small judge
host-bound; here they are measured on CPU, every time.

For each data shape (SummEval: long article, 16 summaries; TopicalChat: a dialogue, 6 responses)
and one or four aspects (four: every pair is asked four questions, the prompts of one pair in one
chunk as the run loop hands them), the same prompts are judged by

* ``engine``: ``CausalJudge.judge`` on each context's chunk (micro-batches of 8, the CPU default);
* ``naive``: the reference recipe of ``judge_throughput.naive_logprobs`` (one prompt, one full
  forward pass, the fp32 head), on ``--naive-per-context`` evenly spaced prompts of each
  context (a rate per comparison: it does not depend on the sample).

interleaved ``--repeat`` times (median). It prints comparisons/s, microseconds per comparison
(on a CPU the process's CPU seconds, with one thread (``--threads 1``) the time the host
spends, and what other processes on a shared machine disturb least; on a GPU the wall clock),
the engine's speed over the naive recipe's in the same run, the engine's forward passes, and
max |p_engine - p_naive| (fp32 noise: ~1e-6).

``--profile`` adds a torch profiler summary of one engine run per cell: the operators' own CPU
time (the "kernels": on a CPU every aten operator) against the rest of the wall clock (Python:
the engine and transformers' module code), the operators split into the model's arithmetic
(matmuls, attention, the head's normaliser: what the naive recipe computes too) and the rest,
the steps before the passes (rendering, tokenising, planning) timed alone, and the top
operators. Each cell then also gets its **host time proper**: the engine's microseconds per
comparison less the model's arithmetic (its share of the profiled run). Even this tiny model's
arithmetic is not negligible on a CPU (each suffix token attends to a context of hundreds of
tokens, each prompt's last position goes through the 49,152-row head), and no host work of the
engine can remove it; the host time proper is what is left for the engine's own work.

``--ab OLD_ROOT`` runs the same measurement on the engine code of another checkout (a folder
holding ``compassess_core/``, e.g. an older commit's ``git archive``) in alternating child
processes of this script and prints both tables and the ratio of their microseconds per
comparison (with ``--profile``, of their host time proper too): before/after on the same
machine, in the same run.

    PYTHONPATH=. .venv/bin/python benchmarks/host_overhead.py --threads 1 --profile
    PYTHONPATH=. .venv/bin/python benchmarks/host_overhead.py --summeval assets/sample_summeval.csv \
        --datasets summeval --threads 1                       # on a clone, without the data folder

``--device cuda`` runs the same on a GPU (there the tiny model's time is launches and host work).
This script must never write to the store.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
SAMPLE = ROOT / "assets" / "sample_summeval.csv"


def _engine_root(argv: list[str]) -> Path:
    for i, a in enumerate(argv):
        if a == "--engine-root" and i + 1 < len(argv):
            return Path(argv[i + 1]).resolve()
        if a.startswith("--engine-root="):
            return Path(a.split("=", 1)[1]).resolve()
    return ROOT


# The engine under test comes first on the path (``--engine-root``: another checkout's code).
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(_engine_root(sys.argv[1:])))

import numpy as np  # noqa: E402
import torch  # noqa: E402

#: data set -> (file, task, the four aspects; the first is the one-aspect run)
SHAPES = {
    "summeval": ("summeval.csv", "summary", ("coherence", "consistency", "fluency", "relevance")),
    "topicalchat": ("topicalchat_usr.csv", "dialogue",
                    ("engagingness", "naturalness", "continuity", "understandable")),
}


def bundled_tokenizer():
    """The bundled judge's tokenizer, without the hub: from the folder its GGUF is converted to
    on first use (converted once per machine, as loading the judge does)."""
    from transformers import AutoTokenizer

    from compassess_core.judges.loading import convert_gguf
    try:
        from compassess_core.judges.models import cached_sha256, default_model_path
    except ImportError:  # an engine from before the package move (``--ab`` on an old commit)
        from compassess_core.models import cached_sha256, default_model_path
    gguf = default_model_path()
    if not gguf.is_file():
        raise SystemExit(f"{gguf} absent: fetch the bundled judge first (compassess fetch-model)")
    return AutoTokenizer.from_pretrained(str(convert_gguf(gguf, cached_sha256(gguf))))


def tiny_model(tokenizer, layers: int, width: int, device: str, dtype: torch.dtype):
    """A random Llama of ``layers`` layers and hidden size ``width`` over the tokenizer's ids:
    2 query heads of 8 dimensions on 1 key/value head (grouped-query attention, as the real
    judges), so that attention to a 700-token context (4 x heads x head size FLOPs per key)
    stays as negligible as the rest of its arithmetic."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from compassess_core.judges.loading import LoadedModel
    cfg = AutoConfig.for_model("llama", hidden_size=width, intermediate_size=2 * width,
                               num_hidden_layers=layers, num_attention_heads=2, head_dim=8,
                               num_key_value_heads=1, vocab_size=len(tokenizer),
                               max_position_embeddings=8192, tie_word_embeddings=True,
                               initializer_range=0.3)  # p spread over (0, 1): |dp| means something
    cfg.pad_token_id, cfg.eos_token_id = tokenizer.pad_token_id, tokenizer.eos_token_id
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation="sdpa").eval()
    return LoadedModel(model, tokenizer, f"random:tiny-llama-{layers}x{width}",
                       f"tiny llama {layers}x{width} (random init)", False, torch.device(device), dtype)


def load_chunks(name: str, path: Path, contexts: int, candidates: int, aspects: int) -> list[list]:
    """Per context, every ordered pair of its first ``candidates`` candidates, each asked
    ``aspects`` questions (the prompts of one pair side by side, sorted by first candidate)."""
    try:
        from compassess_core.runs.prompts import Aspect, builtin_template
    except ImportError:  # an engine from before the package move
        from compassess_core.prompts import Aspect, builtin_template
    _, task, names = SHAPES[name]
    by_ctx: dict[str, tuple[str, list[str]]] = {}
    with open(path, encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            by_ctx.setdefault(r["context_id"], (r["context"], []))[1].append(r["text"])
    tpl = builtin_template("t1", task)
    asps = [Aspect.from_name(a) for a in names[:aspects]]
    return [[tpl.render(ctx, a, b, asp) for i, a in enumerate(texts[:candidates])
             for k, b in enumerate(texts[:candidates]) if i != k for asp in asps]
            for ctx, texts in list(by_ctx.values())[:contexts]]


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def clock(device: torch.device) -> float:
    """Seconds of this process's CPU time on a CPU (what other processes on a shared machine
    disturb least, and on this model the host's work), of the wall clock on a GPU."""
    return time.process_time() if device.type == "cpu" else time.perf_counter()


def time_engine(judge, chunks) -> tuple[float, np.ndarray]:
    sync(judge.device)
    t0 = clock(judge.device)
    ps = [j.p for c in chunks for j in judge.judge(c)]
    sync(judge.device)
    return clock(judge.device) - t0, np.array(ps)


def naive_sample(chunks, k: int) -> list[np.ndarray]:
    """Per chunk, ``k`` evenly spaced prompt positions for the naive recipe (its rate per
    comparison does not depend on which prompts it runs)."""
    return [np.unique(np.linspace(0, len(c) - 1, num=min(k, len(c))).round().astype(int))
            for c in chunks]


def time_naive(judge, chunks, picks) -> tuple[float, np.ndarray]:
    """Seconds per comparison of the naive recipe on the picked prompts, and their p."""
    from benchmarks.judge_throughput import naive_logprobs
    sub = [[c[i] for i in idx] for c, idx in zip(chunks, picks)]
    sync(judge.device)
    t0 = clock(judge.device)
    ps = np.concatenate([naive_logprobs(judge, c) for c in sub])
    sync(judge.device)
    return (clock(judge.device) - t0) / sum(len(c) for c in sub), ps


#: Operators whose own time is the model's arithmetic (what the naive recipe computes too): the
#: layers' and the head's matmuls, attention, and the head's normaliser (exp, max, sum).
ARITHMETIC_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm",
                  "aten::_scaled_dot_product_flash_attention_for_cpu",
                  "aten::_scaled_dot_product_attention_math", "aten::logsumexp", "aten::exp",
                  "aten::exp_", "aten::amax", "aten::sum")


def host_stages(judge, chunks) -> dict[str, float]:
    """Process CPU seconds per comparison of the engine's steps before any forward pass, best
    of two: rendering the prompts, tokenising them, deduplicating and planning the prefix tree."""
    from compassess_core.judges.base import deduplicate
    from compassess_core.judges.prefix_tree import plan_prefixes
    render_all = getattr(judge, "render_all", lambda ps: [judge.render(p) for p in ps])
    n = sum(len(c) for c in chunks)
    best = {"render": 1e9, "tokenise": 1e9, "plan": 1e9}
    for _ in range(2):
        spent = dict.fromkeys(best, 0.0)
        for c in chunks:
            t0 = time.process_time()
            texts = render_all(c)
            t1 = time.process_time()
            seqs = judge.encode(texts)
            t2 = time.process_time()
            plan_prefixes(deduplicate(seqs)[0], judge.min_saving)
            t3 = time.process_time()
            spent["render"] += t1 - t0
            spent["tokenise"] += t2 - t1
            spent["plan"] += t3 - t2
        best = {k: min(best[k], spent[k] / n) for k in best}
    return best


def profile_summary(judge, chunks, top: int = 12, runs: int = 3) -> tuple[str, float]:
    """One engine run under torch's profiler: the operators' own CPU time (and CUDA time on a
    GPU) against the wall clock; the rest is Python (engine and module code) between them. The
    operators are split into the model's arithmetic (``ARITHMETIC_OPS``) and the rest; the
    steps before the passes (rendering, tokenising, planning) are timed without the profiler.
    Of ``runs`` profiled runs the one with the shortest wall clock is kept: a profile counts in
    wall time, so on a shared machine the time another process held the core lands in whichever
    operator or Python line was running, and the least disturbed run is the nearest to the truth.
    Returns the summary and the arithmetic's share of the profiled wall clock."""
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if judge.device.type == "cuda" else [])
    judge.judge(chunks[0][:4])
    t0 = clock(judge.device)
    time_engine(judge, chunks)
    plain = clock(judge.device) - t0
    wall, events = float("inf"), None
    for _ in range(runs):
        with profile(activities=acts) as prof:
            t0 = time.perf_counter()
            time_engine(judge, chunks)
            took = time.perf_counter() - t0
        if took < wall:
            wall, events = took, prof.key_averages()
    ops_cpu = sum(e.self_cpu_time_total for e in events) / 1e6
    arith = sum(e.self_cpu_time_total for e in events if e.key in ARITHMETIC_OPS) / 1e6
    n = sum(len(c) for c in chunks)
    lines = [f"profile of one engine run ({n} comparisons, wall {wall:.3f} s under the profiler, "
             f"the shortest of {runs}):",
             f"  operators' own CPU time {ops_cpu:.3f} s ({100 * ops_cpu / wall:.0f}% of wall); "
             f"Python and the rest {wall - ops_cpu:.3f} s ({100 * (wall - ops_cpu) / wall:.0f}%)",
             f"  of the operators, the model's arithmetic (matmuls, attention, the head's "
             f"normaliser) {arith:.3f} s ({100 * arith / wall:.0f}% of wall), other operators "
             f"{ops_cpu - arith:.3f} s ({100 * (ops_cpu - arith) / wall:.0f}%)"]
    stages = host_stages(judge, chunks)
    share = 1e6 * plain / n
    lines.append(f"  without the profiler: {share:.0f} us/cmp; of it (process CPU, best of 2) "
                 + ", ".join(f"{k} {1e6 * v:.0f}" for k, v in stages.items())
                 + f" us/cmp; the model's arithmetic (the profiled share) about "
                 f"{share * arith / wall:.0f} us/cmp")
    if judge.device.type == "cuda":
        kern = sum(getattr(e, "self_device_time_total", 0) or 0 for e in events) / 1e6
        lines.append(f"  GPU kernels {kern:.3f} s ({100 * kern / wall:.0f}% of wall: the GPU's busy share)")
    calls = sum(e.count for e in events if e.key.startswith("aten::"))
    lines.append(f"  aten operator calls: {calls} ({calls / n:.0f} per comparison)")
    lines.append("  top operators by own CPU time (s, calls):")
    for e in sorted(events, key=lambda e: -e.self_cpu_time_total)[:top]:
        lines.append(f"    {e.key:<40} {e.self_cpu_time_total / 1e6:8.3f} {e.count:8d}")
    return "\n".join(lines), arith / wall


def measure(args) -> list[dict]:
    """Every (data set, aspects) cell: engine and naive, interleaved ``--repeat`` times."""
    from compassess_core.judges.transformers_judge import CausalJudge
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    if args.tokenizer:
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(args.tokenizer)
    else:
        tok = bundled_tokenizer()
    if args.shape:  # a public model's shape, randomly initialised (GPU checks)
        from benchmarks.judge_throughput import random_init_model
        loaded = random_init_model(args.shape, torch.device(args.device), dtype, tok)
    else:
        loaded = tiny_model(tok, args.layers, args.width, args.device, dtype)
    sized = dict(batch_size=None, token_budget=None) if args.batch_size == 0 else {}
    judge = CausalJudge(loaded, **(sized or dict(batch_size=args.batch_size)))
    if args.threads:  # after the judge, which narrows torch's threads to the CPU affinity
        torch.set_num_threads(args.threads)
    judge.judge(load_chunks(*_first_source(args), 1, 3, 1)[0][:4])  # warm-up
    cells = []
    for name, path in _sources(args):
        for aspects in [int(a) for a in args.aspects.split(",")]:
            chunks = load_chunks(name, path, args.contexts, args.candidates, aspects)
            n = sum(len(c) for c in chunks)
            picks = naive_sample(chunks, args.naive_per_context)
            flat = np.concatenate([off + idx for off, idx in
                                   zip(np.cumsum([0] + [len(c) for c in chunks[:-1]]), picks)])
            te, tn, passes, dp = [], [], 0, 0.0
            for _ in range(args.repeat):
                judge.stats.update(forward_passes=0)
                t, pe = time_engine(judge, chunks)
                te.append(t)
                passes = judge.stats["forward_passes"]
                t, pn = time_naive(judge, chunks, picks)
                tn.append(t * n)  # as if it ran every comparison
                dp = max(dp, float(np.max(np.abs(pe[flat] - pn))))
            e, v = statistics.median(te), statistics.median(tn)
            cells.append(dict(data=name, aspects=aspects, n=n, engine_s=e, naive_s=v, passes=passes,
                              dp=dp))
            print(f"  {name} x{aspects}: engine {1e6 * e / n:.0f} us/cmp, naive {1e6 * v / n:.0f} us/cmp",
                  file=sys.stderr, flush=True)
    if args.profile:  # every cell: its arithmetic share gives its host time proper
        sources = dict(_sources(args))
        for cell in list(cells):
            path = sources[cell["data"]]
            chunks = load_chunks(cell["data"], path, args.contexts, args.candidates, cell["aspects"])
            text, cell["arithmetic_share"] = profile_summary(judge, chunks)
            cells.append(dict(profile=f"{cell['data']} x{cell['aspects']}: {text}"))
    return cells


def _sources(args) -> list[tuple[str, Path]]:
    out = []
    for name in args.datasets.split(","):
        if name == "summeval" and args.summeval:
            out.append((name, Path(args.summeval)))
            continue
        path = Path(args.data_dir) / SHAPES[name][0]
        if path.is_file():
            out.append((name, path))
        elif name == "summeval":
            print(f"{path} absent: SummEval shape from {SAMPLE.relative_to(ROOT)}", file=sys.stderr)
            out.append((name, SAMPLE))
        else:
            print(f"skip {name}: {path} absent", file=sys.stderr)
    if not out:
        raise SystemExit("no data: give --data-dir or --summeval")
    return out


def _first_source(args) -> tuple[str, Path]:
    return _sources(args)[0]


def host_us(cell: dict) -> float | None:
    """The cell's host time proper, microseconds per comparison: the engine's time without the
    model's arithmetic (its share of a profiled run, ``--profile``), which even the tiny model
    does not make negligible on a CPU (attention to a long context, the full-vocabulary head)."""
    share = cell.get("arithmetic_share")
    return None if share is None else 1e6 * cell["engine_s"] * (1 - share) / cell["n"]


def table(cells: list[dict], label: str = "") -> str:
    rows = [c for c in cells if "profile" not in c]
    host = all(host_us(c) is not None for c in rows)
    out = [f"| engine{label} | data | aspects | comparisons | naive cmp/s | engine cmp/s | "
           "naive us/cmp | engine us/cmp | engine / naive speed | forward passes | max abs dp |"
           + (" host us/cmp (engine less the model's arithmetic) |" if host else ""),
           "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if host else "")]
    for c in rows:
        n = c["n"]
        out.append(f"| {label.strip() or 'this'} | {c['data']} | {c['aspects']} | {n} | "
                   f"{n / c['naive_s']:.0f} | {n / c['engine_s']:.0f} | {1e6 * c['naive_s'] / n:.0f} | "
                   f"{1e6 * c['engine_s'] / n:.0f} | **{c['naive_s'] / c['engine_s']:.2f}x** | "
                   f"{c['passes']} | {c['dp']:.1e} |" + (f" {host_us(c):.0f} |" if host else ""))
    by = {(c["data"], c["aspects"]): c for c in rows}
    for (data, k), c in by.items():
        one = by.get((data, 1))
        if k > 1 and one is not None:
            out.append(f"{data}: {k} aspects in one pass take {c['engine_s'] / one['engine_s']:.2f}x "
                       f"the engine seconds of one aspect ({k}x the comparisons)")
    out += [c["profile"] for c in cells if "profile" in c]
    return "\n".join(out)


def ab(args, argv: list[str]) -> int:
    """Alternating child processes on the old and this engine code; both tables and the ratio."""
    child = [a for a in argv if not a.startswith("--ab")]
    if "--ab" in argv:
        i = argv.index("--ab")
        child = argv[:i] + argv[i + 2:]
    results: dict[str, list[list[dict]]] = {"old": [], "new": []}
    roots = {"old": str(Path(args.ab).resolve()), "new": str(ROOT)}
    for _ in range(args.ab_rounds):
        for which in ("old", "new"):
            cmd = [sys.executable, str(Path(__file__).resolve()), *child, "--engine-root", roots[which],
                   "--json"]
            out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True,
                                 env=dict(os.environ, PYTHONPATH=roots[which]))
            results[which].append(json.loads(out.stdout.strip().splitlines()[-1]))
    merged = {}
    for which, runs in results.items():
        cells = []
        for k, c in enumerate(runs[0]):
            if "profile" in c:
                cells.append(c)
                continue
            merged_cell = dict(c, engine_s=statistics.median(r[k]["engine_s"] for r in runs),
                               naive_s=statistics.median(r[k]["naive_s"] for r in runs),
                               dp=max(r[k]["dp"] for r in runs))
            if "arithmetic_share" in c:
                merged_cell["arithmetic_share"] = statistics.median(r[k]["arithmetic_share"]
                                                                    for r in runs)
            cells.append(merged_cell)
        merged[which] = cells
        print(table(cells, f" {which} ({roots[which]})"))
        print()
    pairs = [(o, n) for o, n in zip(merged["old"], merged["new"]) if "profile" not in o]
    host = all(host_us(c) is not None for pair in pairs for c in pair)
    print("| data | aspects | engine us/cmp old | new | new / old | engine / naive speed old | new |"
          + (" host us/cmp old | new | new / old |" if host else ""))
    print("|---|---|---|---|---|---|---|" + ("---|---|---|" if host else ""))
    for o, n in pairs:
        uo, un = 1e6 * o["engine_s"] / o["n"], 1e6 * n["engine_s"] / n["n"]
        extra = (f" {host_us(o):.0f} | {host_us(n):.0f} | **{host_us(n) / host_us(o):.2f}** |"
                 if host else "")
        print(f"| {o['data']} | {o['aspects']} | {uo:.0f} | {un:.0f} | **{un / uo:.2f}** | "
              f"{o['naive_s'] / o['engine_s']:.2f}x | {n['naive_s'] / n['engine_s']:.2f}x |" + extra)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="summeval,topicalchat")
    ap.add_argument("--data-dir", default=str(DATA), help="folder of summeval.csv / topicalchat_usr.csv")
    ap.add_argument("--summeval", help="a SummEval-shaped CSV to use instead (e.g. assets/sample_summeval.csv)")
    ap.add_argument("--contexts", type=int, default=1)
    ap.add_argument("--candidates", type=int, default=16)
    ap.add_argument("--aspects", default="1,4", help="comma list of aspect counts per pair (1,4: one, then four aspects)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--naive-per-context", type=int, default=48,
                    help="prompts per context the naive recipe runs (evenly spaced)")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=8,
                    help="prompts per micro-batch; 0: sized as a run sizes it (GPU: free memory)")
    ap.add_argument("--dtype", default="fp32", choices=("fp32", "bf16"))
    ap.add_argument("--tokenizer", help="tokenizer folder (default: the bundled judge's)")
    ap.add_argument("--shape", help="instead of the tiny model, a public shape of "
                                    "judge_throughput.RANDOM_CONFIGS, randomly initialised")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: the judge's default)")
    ap.add_argument("--profile", action="store_true", help="add a torch profiler summary of one run per cell, and each cell's host time "
                         "proper (the engine's time less the model's arithmetic)")
    ap.add_argument("--ab", metavar="OLD_ROOT", help="also measure the engine code in OLD_ROOT")
    ap.add_argument("--ab-rounds", type=int, default=2, help="alternating child pairs for --ab")
    ap.add_argument("--engine-root", help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    print(f"command: host_overhead.py {' '.join(argv)}", file=sys.stderr if args.json else sys.stdout)
    if args.ab:
        print(f"load average: {os.getloadavg()}")
        return ab(args, argv)
    cells = measure(args)
    if args.json:
        print(json.dumps(cells))
        return 0
    model = args.shape or f"tiny llama {args.layers} layers x width {args.width}"
    gpu = f" ({torch.cuda.get_device_name()})" if args.device.startswith("cuda") else ""
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, device {args.device}{gpu}, "
          f"{args.dtype}, {model}; "
          f"load average: {os.getloadavg()}")
    print(table(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Judge throughput: the naive reference recipe vs the prefix-cached, batched engine, same comparisons.

Naive = one prompt per forward pass, no batching, no prefix reuse (chat template, primed answer,
label-word log-probs in fp32 from the final hidden state). Engine = ``CausalJudge`` as the run
loop uses it (one chunk per context, sorted by first candidate). Both run in this process on the
same prompts; the table reports comparisons/s, prompt tokens/s, peak memory and max |p_engine -
p_naive|. The naive pass is slow, so it runs on an evenly spaced sample of each context's prompts
(``--naive-per-context``); its rate is a per-comparison rate and does not depend on the sample.

On a clone without ``../shared/data`` it judges the app's bundled sample
(``assets/sample_summeval.csv``, 3 articles x 5 summaries); ``--data CSV`` judges a candidate file
of your own (the app's columns; ``--task``, ``--aspect`` word its prompts).

    .venv/bin/python benchmarks/judge_throughput.py --contexts 1 --candidates 16
    .venv/bin/python benchmarks/judge_throughput.py --data my_candidates.csv --task dialogue --aspect engagingness
    .venv/bin/python benchmarks/judge_throughput.py --random-init qwen2.5-1.5b --device cuda --contexts 2
    .venv/bin/python benchmarks/judge_throughput.py --random-init qwen2.5-1.5b --device cuda \
        --batch-size 0 --memory-cap-gib 2 --skip-naive

``--whole-process`` measures the naive-recipe ratio as a user sees it: two fresh processes of
this script on the same comparisons (every one of them, no sample), one judging with the engine
and one with the naive recipe, each timed from its start to its exit (imports, model load,
tokenising, judging) with its CPU seconds and peak resident memory (``wait4``'s rusage); ratio =
naive seconds / engine seconds (and the same in CPU seconds, which other processes on a shared
machine disturb far less), with the machine's load average before and after. Beside it, the
arithmetic ratio (``arithmetic_gflop``): the FLOPs the naive recipe must compute over those the
engine's prefix plan must, attention to the cached context included; the most the engine can
gain on these prompts with the same p on compute-bound hardware.

``--batch-size 0`` lets the judge size its micro-batches as a run does (on a GPU from the free
device memory, ``memory.batch_sizing``). ``--memory-cap-gib G`` (GPU) checks the out-of-memory
retry on a real device: after the timed passes, a judge with an oversized batch (256 prompts, no
token budget) runs the same comparisons with the process capped at G GiB above what it holds; the
line reports the retries, the batch size it settled on, and max |dp| against the uncapped pass.

On a GPU the table adds model FLOPs utilisation: the device's dense peak for the dtype comes
from ``PEAK_TFLOPS`` by device name (``--peak-tflops`` overrides; an unknown device gets no MFU
column). Models that are absent are skipped with a message. This script must never write to the
store.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compassess_core.data.candidates import load_candidates  # noqa: E402
from compassess_core.errors import CompAssessError  # noqa: E402
from compassess_core.judges.loading import LoadedModel, load_model  # noqa: E402
from compassess_core.judges.transformers_judge import (CausalJudge, Seq2SeqJudge,  # noqa: E402
                                                       _FP32Head)
from compassess_core.judges.models import default_model_path, models_dir  # noqa: E402
from compassess_core.runs.prompts import Aspect, builtin_template  # noqa: E402
from compassess_core.types import ComparisonPrompt  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
#: The app's bundled sample (3 SummEval articles x 5 summaries), what the script judges on a
#: clone without the data folder.
SAMPLE = ROOT / "assets" / "sample_summeval.csv"
DATASETS = {  # name -> (file, relative to --data-dir unless absolute, task, aspect)
    "summeval": ("summeval.csv", "summary", "coherence"),
    "topicalchat": ("topicalchat_usr.csv", "dialogue", "engagingness"),
    "sample": (str(SAMPLE), "summary", "coherence"),
}

#: Randomly initialised stand-ins for GPU throughput runs (shapes of the public configs).
RANDOM_CONFIGS = {
    # Not a public model: the smallest Llama, for a check on CPU that the scripts run.
    "tiny-llama": ("llama", dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                 num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                                 vocab_size=49152, max_position_embeddings=8192,
                                 tie_word_embeddings=True, initializer_range=0.3)),
    "smollm2-135m": ("llama", dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                                   num_attention_heads=9, num_key_value_heads=3, vocab_size=49152,
                                   max_position_embeddings=8192, tie_word_embeddings=True,
                                   rope_theta=1e5)),
    "qwen2.5-0.5b": ("qwen2", dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                                   num_attention_heads=14, num_key_value_heads=2, vocab_size=151936,
                                   max_position_embeddings=32768, tie_word_embeddings=True,
                                   rope_theta=1e6)),
    "qwen2.5-1.5b": ("qwen2", dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                                   num_attention_heads=12, num_key_value_heads=2, vocab_size=151936,
                                   max_position_embeddings=32768, tie_word_embeddings=True,
                                   rope_theta=1e6)),
    "llama3-8b": ("llama", dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                                max_position_embeddings=8192, tie_word_embeddings=False,
                                rope_theta=5e5)),
    "flan-t5-large": ("t5", dict(d_model=1024, d_ff=2816, d_kv=64, num_layers=24, num_decoder_layers=24,
                                 num_heads=16, vocab_size=32128, feed_forward_proj="gated-gelu",
                                 tie_word_embeddings=False)),
}


#: Dense (no sparsity) peak TFLOP/s by device-name fragment and dtype, from the vendors' data
#: sheets; fp32 on Ampere and later is the TF32 tensor-core rate only when matmuls allow TF32
#: (torch does not by default), so fp32 uses the plain FP32 rate.
PEAK_TFLOPS = {
    "H200": {"bf16": 989.0, "fp16": 989.0, "fp32": 67.0},
    "H100 PCIe": {"bf16": 756.0, "fp16": 756.0, "fp32": 51.0},
    "H100": {"bf16": 989.0, "fp16": 989.0, "fp32": 67.0},
    "A100": {"bf16": 312.0, "fp16": 312.0, "fp32": 19.5},
    "L40S": {"bf16": 362.0, "fp16": 362.0, "fp32": 91.6},
    "L4": {"bf16": 121.0, "fp16": 121.0, "fp32": 30.3},
    "A10": {"bf16": 125.0, "fp16": 125.0, "fp32": 31.2},
    "4090": {"bf16": 165.0, "fp16": 165.0, "fp32": 82.6},
    "T4": {"fp16": 65.0, "fp32": 8.1},
}


def device_peak_tflops(device: torch.device, dtype: str) -> float | None:
    """The device's dense peak for ``dtype`` from :data:`PEAK_TFLOPS` (None: CPU or unknown GPU)."""
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    for fragment, peaks in PEAK_TFLOPS.items():  # more specific names first ("H100 PCIe")
        if fragment in name:
            return peaks.get(dtype)
    return None


@dataclass
class Row:
    model: str
    dataset: str
    dtype: str
    n: int
    naive_n: int
    naive_cps: float
    engine_cps: float
    naive_tps: float
    engine_tps: float
    run_tokens_frac: float
    naive_peak_mb: float
    engine_peak_mb: float
    naive_extra_mb: float
    engine_extra_mb: float
    max_dp: float
    cpu_ratio: float
    mfu: float | None = None
    p: np.ndarray | None = None


def load_contexts(name: str, n_contexts: int, n_candidates: int,
                  data_dir: str | None = None) -> list[list[ComparisonPrompt]]:
    """Per context, all ordered pairs of its first ``n_candidates`` candidates, sorted by first."""
    file, task, aspect = DATASETS[name]
    path = Path(data_dir or DATA) / file
    if not path.is_file():
        raise FileNotFoundError(path)
    by_ctx: dict[str, tuple[str, list[str]]] = {}
    if Path(file).is_absolute():  # a candidate file of the app's format: validated as a run's
        for c in load_candidates(path).contexts:
            by_ctx[c.context_id] = (c.text, [x.text for x in c.candidates])
    else:
        with open(path, encoding="utf-8", newline="") as f:
            for r in csv.DictReader(f):
                ctx = by_ctx.setdefault(r["context_id"], (r["context"], []))
                ctx[1].append(r["text"])
    tpl, asp = builtin_template("t1", task), Aspect.from_name(aspect)
    out = []
    for context, texts in list(by_ctx.values())[:n_contexts]:
        texts = texts[:n_candidates]
        out.append([tpl.render(context, a, b, asp) for i, a in enumerate(texts)
                    for k, b in enumerate(texts) if i != k])
    return out


_PROCESS_PEAK_MB = 0.0  # the whole process's peak, kept across the per-phase resets


def reset_peak() -> None:
    global _PROCESS_PEAK_MB
    _PROCESS_PEAK_MB = max(_PROCESS_PEAK_MB, peak_mb(torch.device("cpu")))
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    try:  # Linux: "5" resets VmHWM, so each phase reports its own peak resident memory.
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def peak_mb(device: torch.device, field: str = "VmHWM:") -> float:
    """Peak memory since ``reset_peak`` (GPU: allocated; CPU: resident set); ``VmRSS:`` = now."""
    if device.type == "cuda":
        if field == "VmRSS:":
            return torch.cuda.memory_allocated() / 2**20
        return torch.cuda.max_memory_allocated() / 2**20
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


@torch.inference_mode()
def naive_logprobs(judge: CausalJudge | Seq2SeqJudge, prompts: list[ComparisonPrompt]) -> np.ndarray:
    """The reference recipe, written out plainly: one prompt, one full forward pass, fp32 head."""
    model, tok, dev = judge.model, judge.tokenizer, judge.device
    ps = []
    if isinstance(judge, Seq2SeqJudge):
        for p in prompts:
            enc = tok(judge.render(p), return_tensors="pt").to(dev)
            out = model(**enc, decoder_input_ids=torch.tensor([[judge._start_id]], device=dev),
                        output_hidden_states=True)
            la, lb = judge._head.logprobs(out.decoder_hidden_states[-1][:, -1], judge._label_ids)
            ps.append(1 / (1 + np.exp(lb[0] - la[0])))
        return np.array(ps)
    head = _FP32Head(model)
    for p in prompts:
        text = judge.render(p)
        ids = tok(text, add_special_tokens=judge._add_special(text), return_tensors="pt")["input_ids"]
        hidden = model.get_decoder()(input_ids=ids.to(dev)).last_hidden_state
        la, lb = head.logprobs(hidden[:, -1], judge._label_ids)
        ps.append(1 / (1 + np.exp(lb[0] - la[0])))
    return np.array(ps)


def sample(n: int, k: int) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, num=min(k, n)).round().astype(int))


def model_flops(model: torch.nn.Module, tokens: int, prompts: int) -> float:
    """Matmul FLOPs: 2 x parameters per token they touch (attention scores not counted).

    Causal: every non-embedding parameter per prompt token run, plus the fp32 head once per
    prompt. Seq2seq: encoder parameters per prompt token, decoder and head once per prompt.
    """
    emb = model.get_input_embeddings().weight
    head = model.get_output_embeddings().weight

    def params(m: torch.nn.Module) -> int:
        seen = {emb.data_ptr(), head.data_ptr()}
        return sum(p.numel() for p in m.parameters() if p.data_ptr() not in seen)

    if getattr(model.config, "is_encoder_decoder", False):
        return 2.0 * (params(model.get_encoder()) * tokens
                      + (params(model.get_decoder()) + head.numel()) * prompts)
    return 2.0 * params(model) * tokens + 2.0 * head.numel() * prompts


def attention_flops_per_key(model: torch.nn.Module) -> float:
    """FLOPs of one query token against one key, over every layer and head: scores and weighted
    values, ``2 * 2 * head_dim`` each (causal models)."""
    cfg = model.config
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    return 4.0 * head_dim * cfg.num_attention_heads * cfg.num_hidden_layers


def arithmetic_gflop(judge: CausalJudge, contexts: list[list[ComparisonPrompt]]) -> tuple[float, float]:
    """(naive, engine) GFLOP of judging ``contexts``: what each recipe must compute, at any speed.

    A token at position t costs its matmuls (:func:`model_flops`) and attention to the t + 1 keys
    up to it. The naive recipe computes every token of every prompt; the engine the tokens of its
    prefix plan (``plan_prefixes``: each cached prefix once, then each prompt's suffix), each
    still attending to everything before it, the cached context included. Their ratio is the
    most the engine can gain on these prompts with the same p (compute-bound passes, the same
    efficiency); padding, masks and small passes are what it loses on the way.
    """
    from compassess_core.judges.base import deduplicate
    from compassess_core.judges.prefix_tree import plan_prefixes

    per_key = attention_flops_per_key(judge.model)
    naive = engine = 0.0
    for prompts in contexts:
        every = judge.encode([judge.render(p) for p in prompts])
        lengths = np.array([len(s) for s in every], dtype=np.float64)
        naive += model_flops(judge.model, int(lengths.sum()), len(every))
        naive += per_key * float((lengths * (lengths + 1) / 2).sum())
        seqs, _ = deduplicate(every)
        tokens, keys = 0, 0.0

        def span(lo: int, hi: int) -> None:  # tokens at positions lo..hi-1, each seeing t + 1 keys
            nonlocal tokens, keys
            tokens += hi - lo
            keys += (hi * (hi + 1) - lo * (lo + 1)) / 2

        def walk(node, base: int) -> None:
            span(base, node.prefix_len)
            for i in node.leaves:
                span(node.prefix_len, len(seqs[i]))
            for child in node.children:
                walk(child, node.prefix_len)

        walk(plan_prefixes(seqs, judge.min_saving), 0)
        engine += model_flops(judge.model, tokens, len(seqs)) + per_key * keys
    return naive / 1e9, engine / 1e9


def bench(label: str, judge, contexts: list[list[ComparisonPrompt]], dataset: str, naive_k: int,
          peak_tflops: float | None, skip_naive: bool) -> Row:
    dev = judge.device
    n = sum(len(c) for c in contexts)
    prompt_tokens = sum(len(s) for c in contexts for s in judge.encode([judge.render(p) for p in c]))
    # Warm-up (allocator, kernels) outside the timings.
    judge.judge(contexts[0][:2])
    judge.stats.update(prompt_tokens=0, model_tokens=0, forward_passes=0)

    # Interleaved per context (engine chunk, then the naive sample of the same context) so that
    # load from other processes on a shared machine hits both alike; CPU time is reported too.
    t_engine = c_engine = t_naive = c_naive = 0.0
    engine_peak = naive_peak = engine_extra = naive_extra = 0.0
    naive_n, naive_tokens, dps, engine_ps = 0, 0, [], []
    for c in contexts:
        reset_peak()
        base_mb = peak_mb(dev, "VmRSS:")
        sync(dev)
        t0, c0 = time.perf_counter(), time.process_time()
        ep = np.array([j.p for j in judge.judge(c)])
        sync(dev)
        engine_ps.append(ep)
        t_engine += time.perf_counter() - t0
        c_engine += time.process_time() - c0
        engine_peak = max(engine_peak, peak_mb(dev))
        engine_extra = max(engine_extra, peak_mb(dev) - base_mb)
        if skip_naive:
            continue
        idx = sample(len(c), naive_k)
        sub = [c[i] for i in idx]
        naive_tokens += sum(len(s) for s in judge.encode([judge.render(p) for p in sub]))
        reset_peak()
        base_mb = peak_mb(dev, "VmRSS:")
        sync(dev)
        t0, c0 = time.perf_counter(), time.process_time()
        npv = naive_logprobs(judge, sub)
        sync(dev)
        t_naive += time.perf_counter() - t0
        c_naive += time.process_time() - c0
        naive_peak = max(naive_peak, peak_mb(dev))
        naive_extra = max(naive_extra, peak_mb(dev) - base_mb)
        naive_n += len(sub)
        dps.append(np.abs(npv - ep[idx]))
    run_tokens = judge.stats["model_tokens"]
    engine_p = np.concatenate(engine_ps)
    max_dp = float(np.max(np.concatenate(dps))) if dps else float("nan")
    cpu_ratio = (n / c_engine) / (naive_n / c_naive) if naive_n else float("nan")
    mfu = None
    if peak_tflops:
        flops = model_flops(judge.model, run_tokens, n)
        mfu = flops / t_engine / (peak_tflops * 1e12)
    return Row(label, dataset, str(judge.loaded.dtype).replace("torch.", ""), n, naive_n,
               naive_n / t_naive if naive_n else float("nan"), n / t_engine,
               naive_tokens / t_naive if naive_n else float("nan"), prompt_tokens / t_engine,
               run_tokens / prompt_tokens, naive_peak, engine_peak, naive_extra, engine_extra, max_dp,
               cpu_ratio, mfu, engine_p)


def memory_cap_check(judge, contexts: list[list[ComparisonPrompt]], reference: np.ndarray,
                     cap_gib: float) -> str:
    """The out-of-memory retry on a real GPU: an oversized batch under a memory cap must halve
    until it fits and give every comparison once, with the uncapped pass's p."""
    dev = judge.device
    if dev.index is None:  # set_per_process_memory_fraction needs an index
        dev = torch.device("cuda", torch.cuda.current_device())
    cls = type(judge)
    capped = cls(judge.loaded, batch_size=256, token_budget=10**9)
    total = torch.cuda.get_device_properties(dev).total_memory
    torch.cuda.empty_cache()  # the cached blocks of the timed passes are not the judge's to keep
    held = torch.cuda.memory_reserved(dev)
    torch.cuda.set_per_process_memory_fraction(min(1.0, (held + cap_gib * 2**30) / total), dev)
    try:
        t0 = time.perf_counter()
        ps = np.array([j.p for c in contexts for j in capped.judge(c)])
        sync(dev)
        seconds = time.perf_counter() - t0
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0, dev)
    same_n = len(ps) == len(reference)
    dp = float(np.max(np.abs(ps - reference))) if same_n else float("nan")
    return (f"memory cap {cap_gib:g} GiB above {held / 2**30:.1f} GiB held: "
            f"{capped.stats['out_of_memory_retries']} out-of-memory retries, batch 256 -> "
            f"{capped.batch_size} prompts (token budget {capped.token_budget}), {len(ps)} of "
            f"{len(reference)} comparisons, max abs dp vs uncapped {dp:.2e}, {seconds:.1f} s")


def random_init_model(name: str, device: torch.device, dtype: torch.dtype, tokenizer) -> LoadedModel:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM
    if name not in RANDOM_CONFIGS:
        raise SystemExit(f"unknown --random-init {name}; choose {', '.join(RANDOM_CONFIGS)}")
    kind, kw = RANDOM_CONFIGS[name]
    # The prompts are tokenised by the bundled tokenizer: every id must be inside the vocabulary.
    kw = dict(kw, vocab_size=max(kw["vocab_size"], len(tokenizer)))
    cfg = AutoConfig.for_model(kind, **kw)
    cfg.pad_token_id = tokenizer.pad_token_id
    cfg.eos_token_id = tokenizer.eos_token_id
    if kind == "t5":
        cfg.decoder_start_token_id = tokenizer.pad_token_id
    torch.manual_seed(0)
    cls = AutoModelForSeq2SeqLM if kind == "t5" else AutoModelForCausalLM
    with torch.device(device):
        model = cls.from_config(cfg, dtype=dtype, attn_implementation="sdpa").eval()
    return LoadedModel(model, tokenizer, f"random:{name}", f"{name} (random init)", kind == "t5",
                       device, dtype)


def print_table(rows: list[Row]) -> None:
    head = ("| model | data | dtype | comparisons | naive (n) cmp/s | engine cmp/s | speed-up (CPU-time) | "
            "naive prompt tok/s | engine prompt tok/s | tokens run | peak MB naive / engine (+growth) | "
            "max abs dp |" + (" MFU |" if any(r.mfu is not None for r in rows) else ""))
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for r in rows:
        ratio = r.engine_cps / r.naive_cps if r.naive_n else float("nan")
        line = (f"| {r.model} | {r.dataset} | {r.dtype} | {r.n} | {r.naive_cps:.3f} ({r.naive_n}) | "
                f"{r.engine_cps:.3f} | {ratio:.1f}x ({r.cpu_ratio:.1f}x) | {r.naive_tps:.0f} | {r.engine_tps:.0f} | "
                f"{100 * r.run_tokens_frac:.0f}% | {r.naive_peak_mb:.0f} (+{r.naive_extra_mb:.0f}) / "
                f"{r.engine_peak_mb:.0f} (+{r.engine_extra_mb:.0f}) | "
                f"{r.max_dp:.2e} |")
        if r.mfu is not None:
            line += f" {100 * r.mfu:.1f}% |"
        print(line, flush=True)


def _model_specs(args) -> list[tuple[str, str]]:
    specs = []
    for item in args.model or [f"smollm2={default_model_path()}",
                               f"qwen0.5b={models_dir() / 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf'}"]:
        label, _, path = item.partition("=")
        path = path or label
        if not Path(path).expanduser().exists() and (path.endswith(".gguf") or "/" in path[:1]):
            print(f"skip {label}: {path} is absent (fetch it with ../shared/tools/get_models.sh)")
            continue
        specs.append((label, path))
    return specs


def process_child(args, datasets: dict) -> int:
    """One whole process of ``--whole-process``: load, tokenise and judge every comparison with
    the engine or the naive recipe; print the p values (JSON) for the parent to compare."""
    import json
    ((label, spec),) = _model_specs(args)
    ((name, contexts),) = datasets.items()
    loaded = load_model(spec, args.device, args.dtype)
    cls = Seq2SeqJudge if loaded.is_seq2seq else CausalJudge
    judge = cls(loaded, batch_size=args.batch_size)
    if args.process_child == "engine":  # one chunk per context, as the run loop hands them over
        ps = [j.p for c in contexts for j in judge.judge(c)]
    else:
        ps = [float(p) for c in contexts for p in naive_logprobs(judge, c)]
    print(json.dumps({"p": ps}), flush=True)
    return 0


def arithmetic_ratios(spec: str, device: str, dtype: str, datasets: dict) -> dict[str, str]:
    """Per dataset, the arithmetic ratio naive / engine (:func:`arithmetic_gflop`) as printed;
    the model is loaded once, outside the timed processes (only the prompts' plans count)."""
    loaded = load_model(spec, device, dtype)
    if loaded.is_seq2seq:
        return {name: "n/a (seq2seq)" for name in datasets}
    planner = CausalJudge(loaded)
    out = {}
    for name, contexts in datasets.items():
        naive, engine = arithmetic_gflop(planner, contexts)
        out[name] = f"{naive / engine:.2f}x"
    return out


def whole_process(args, datasets: dict) -> int:
    """The naive-recipe ratio of two whole processes per model, dtype and dataset."""
    import json
    import subprocess

    print("| model | data | dtype | comparisons | engine process s (CPU s, peak RSS MB) | naive process "
          "s (CPU s, peak RSS MB) | ratio naive / engine (CPU time) | arithmetic ratio naive / "
          "engine | max abs dp | load average before / after |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, spec in _model_specs(args):
        for dtype in args.dtype.split(","):
            ratios = arithmetic_ratios(spec, args.device, dtype, datasets)
            for name, contexts in datasets.items():
                arithmetic = ratios[name]
                load_before = os.getloadavg()[0]
                out = {}
                for mode in ("engine", "naive"):
                    cmd = [sys.executable, str(Path(__file__).resolve()), "--process-child", mode,
                           "--model", f"{label}={spec}", "--datasets", name,
                           *(["--data", args.data, "--task", args.task, "--aspect", args.aspect]
                             if args.data else []), "--contexts",
                           str(args.contexts), "--candidates", str(args.candidates), "--dtype", dtype,
                           "--device", args.device, "--batch-size", str(args.batch_size),
                           "--data-dir", args.data_dir,
                           "--threads", str(args.threads)]
                    t0 = time.perf_counter()
                    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True,
                                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
                    text = proc.stdout.read()
                    _, status, usage = os.wait4(proc.pid, 0)
                    seconds = time.perf_counter() - t0
                    if os.waitstatus_to_exitcode(status) != 0:
                        raise SystemExit(f"{mode} process failed: {text[-2000:]}")
                    out[mode] = (seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
                                 np.array(json.loads(text.strip().splitlines()[-1])["p"]))
                (te, ce, me, pe), (tn, cn, mn, pn) = out["engine"], out["naive"]
                print(f"| {label} | {name} | {dtype} | {len(pe)} | {te:.1f} ({ce:.1f}, {me:.0f}) | "
                      f"{tn:.1f} ({cn:.1f}, {mn:.0f}) | **{tn / te:.2f}x** ({cn / ce:.2f}x) | {arithmetic} | "
                      f"{np.max(np.abs(pe - pn)):.2e} | {load_before:.2f} / {os.getloadavg()[0]:.2f} |",
                      flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", action="append", metavar="NAME=PATH",
                    help="model(s) to run (default: the bundled SmolLM2 and Qwen2.5-Coder-0.5B GGUF)")
    ap.add_argument("--datasets",
                    help=f"comma list of {', '.join(DATASETS)} (default: summeval,topicalchat "
                         "from --data-dir when it holds them, else the bundled sample "
                         "assets/sample_summeval.csv)")
    ap.add_argument("--data", metavar="CSV",
                    help="a candidate CSV of your own (the app's columns: context_id, context, "
                         "candidate_id, text, ...) instead of --datasets")
    ap.add_argument("--task", default="summary",
                    help="with --data: the task the prompts word (default: summary)")
    ap.add_argument("--aspect", default="coherence",
                    help="with --data: the aspect the prompts ask about (default: coherence)")
    ap.add_argument("--contexts", type=int, default=1)
    ap.add_argument("--candidates", type=int, default=16)
    ap.add_argument("--naive-per-context", type=int, default=24,
                    help="prompts per context the naive baseline runs (evenly spaced)")
    ap.add_argument("--dtype", default="fp32", help="comma list: fp32,bf16")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch-size", type=int, default=8,
                    help="prompts per micro-batch; 0: sized as a run sizes it (GPU: free memory)")
    ap.add_argument("--data-dir", default=str(DATA), help="folder of the candidate CSVs")
    ap.add_argument("--tokenizer", help="tokenizer folder for --random-init (default: the bundled model's)")
    ap.add_argument("--memory-cap-gib", type=float,
                    help="GPU: also check the out-of-memory retry under this cap (see above)")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch default)")
    ap.add_argument("--random-init", metavar="CONFIG", help=f"one of {', '.join(RANDOM_CONFIGS)}")
    ap.add_argument("--peak-tflops", type=float,
                    help="device dense peak for MFU (default: PEAK_TFLOPS by GPU name)")
    ap.add_argument("--skip-naive", action="store_true")
    ap.add_argument("--whole-process", action="store_true",
                    help="naive-recipe ratio of two whole processes on every comparison")
    ap.add_argument("--process-child", choices=("engine", "naive"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.data:
        if not Path(args.data).is_file():
            print(f"error: --data {args.data}: no such file", file=sys.stderr)
            return 2
        args.datasets = Path(args.data).stem
        DATASETS[args.datasets] = (str(Path(args.data).resolve()), args.task, args.aspect)
    elif args.datasets is None:
        shared = all((Path(args.data_dir) / DATASETS[n][0]).is_file()
                     for n in ("summeval", "topicalchat"))
        args.datasets = "summeval,topicalchat" if shared else "sample"
        if not shared and not args.process_child:
            print(f"{args.data_dir} does not hold summeval.csv and topicalchat_usr.csv: "
                  f"judging the bundled sample {SAMPLE.relative_to(ROOT)} (--data CSV for "
                  "your own)")
    datasets = {}
    for name in args.datasets.split(","):
        if name not in DATASETS:
            print(f"error: --datasets: unknown '{name}'; choose from {', '.join(DATASETS)}",
                  file=sys.stderr)
            return 2
        try:
            datasets[name] = load_contexts(name, args.contexts, args.candidates, args.data_dir)
        except FileNotFoundError as e:
            print(f"skip dataset {name}: {e} not found")
        except CompAssessError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    if not datasets:
        return 1
    if args.process_child:
        return process_child(args, datasets)

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"torch {torch.__version__} threads {torch.get_num_threads()}, device {args.device}"
          + (f" ({torch.cuda.get_device_name()})" if args.device.startswith("cuda") else ""))
    print("command: " + " ".join([Path(sys.argv[0]).name] + (argv if argv is not None else sys.argv[1:])))
    print(f"load average: {os.getloadavg()}")
    if args.whole_process:
        return whole_process(args, datasets)

    rows: list[Row] = []
    for dtype in args.dtype.split(","):
        if args.random_init:
            if args.tokenizer:
                from transformers import AutoTokenizer
                tok = AutoTokenizer.from_pretrained(args.tokenizer)
            else:
                tok_src = load_model(default_model_path(), device="cpu", dtype="fp32")
                tok = tok_src.tokenizer
                del tok_src
            loaded = random_init_model(args.random_init, torch.device(args.device),
                                       {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype], tok)
            specs = [(args.random_init, loaded)]
        else:
            specs = _model_specs(args)
        for label, spec in specs:
            try:
                loaded = spec if isinstance(spec, LoadedModel) else load_model(spec, args.device, dtype)
            except CompAssessError as e:
                print(f"skip {label}: {e}")
                continue
            cls = Seq2SeqJudge if loaded.is_seq2seq else CausalJudge
            sized = {} if args.batch_size else dict(batch_size=None, token_budget=None)
            judge = cls(loaded, **(sized or dict(batch_size=args.batch_size)))
            print(f"{label} {dtype}: micro-batches of at most {judge.batch_size} prompts and "
                  f"{judge.token_budget} suffix tokens" + (" (sized from free memory)" if sized else ""),
                  flush=True)
            peak = args.peak_tflops or device_peak_tflops(loaded.device, dtype)
            for name, contexts in datasets.items():
                rows.append(bench(label, judge, contexts, name, args.naive_per_context,
                                  peak, args.skip_naive))
                print_table(rows[-1:])
                if args.memory_cap_gib and loaded.device.type == "cuda":
                    print(memory_cap_check(judge, contexts, rows[-1].p, args.memory_cap_gib), flush=True)
            judge.close()
            del loaded
    print()
    print_table(rows)
    print(f"process peak resident memory: {process_peak_mb():.0f} MB"
          + (f"; GPU peak allocated {torch.cuda.max_memory_allocated() / 2**20:.0f} MB"
             if torch.cuda.is_available() else "") + f"; load average: {os.getloadavg()}")
    return 0


def process_peak_mb() -> float:
    """Peak resident memory of this whole process (model load included): the largest of the
    per-phase peaks and the current one (the phases reset the kernel's high-water mark)."""
    return max(_PROCESS_PEAK_MB, peak_mb(torch.device("cpu")))


if __name__ == "__main__":
    raise SystemExit(main())

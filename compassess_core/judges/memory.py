"""How much memory a local judge needs, how much this machine has, and GPU batch sizing.

All of it is arithmetic on a model's shape (read from the file's header by
``model_catalog.model_shape``, no weights loaded) and byte counts, so the Run page's plan can say
before a run whether a judge fits (``model_catalog.memory_needed`` and ``memory_plan`` apply it
to the judge a ``--model`` names), and a judge on a GPU can size its micro-batches from the free
device memory. The constants were measured on this project's machine
(docs/performance.md, "Memory"); the estimate is deliberately a little high (the batch at the
judge's largest sizing), and the judge halves a micro-batch that still runs out of memory.

This module must never import torch at import time, load a model, or read the store.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ModelShape", "MemoryNeed", "MemoryPlan", "Sizing", "dtype_bytes", "memory_need",
           "available_memory", "memory_problem", "batch_sizing", "shape_from_config",
           "RUNTIME_BYTES", "CPU_BATCH_SIZE", "CPU_TOKEN_BUDGET"]

#: Resident memory of the process before the weights: Python, torch, transformers, the tokenizer
#: (measured: 0.49 GB for Qwen2.5-1.5B's 152k-token vocabulary after loading, weights untouched).
RUNTIME_BYTES = 600 * 2**20
#: Shard and dequantisation block of the first-use GGUF conversion (``judges.conversion``).
CONVERSION_SHARD_BYTES = 512 * 2**20
#: The CPU defaults (measured for speed on 2-8 cores, docs/performance.md): memory is not what
#: limits a CPU batch.
CPU_BATCH_SIZE = 8
CPU_TOKEN_BUDGET = 8192
#: Typical suffix (second candidate + question + primer) and prompt lengths a sizing plans for.
SUFFIX_TOKENS = 256
CONTEXT_TOKENS = 2048

#: ``--dtype`` name -> (bytes per stored weight, bytes per computed value).
_PRECISIONS = {"fp32": (4, 4), "float32": (4, 4), "bf16": (2, 2), "bfloat16": (2, 2),
               "fp16": (2, 2), "float16": (2, 2), "bf16-weights": (2, 4)}
#: Vocabulary rows the label head upcasts at once when the weights are narrower than fp32
#: (``transformers_judge._FP32Head.HEAD_ROWS``).
HEAD_ROWS = 16384
_GB = 1e9


def _precision(dtype: str) -> tuple[int, int]:
    try:
        return _PRECISIONS[dtype.strip().lower()]
    except KeyError:
        raise ValueError(f"unknown dtype '{dtype}'; choose fp32, bf16, fp16 or bf16-weights") from None


def dtype_bytes(dtype: str) -> int:
    """Bytes per stored weight of ``fp32``/``bf16``/``fp16``/``bf16-weights`` (as ``--dtype``
    names them).

    Raises
    ------
    ValueError
        Another name (``auto`` must be resolved first: :func:`resolve_dtype_name`).
    """
    return _precision(dtype)[0]


def compute_bytes(dtype: str) -> int:
    """Bytes per activation: 4 for fp32 and ``bf16-weights`` (computed in fp32), else 2."""
    return _precision(dtype)[1]


@dataclass(frozen=True)
class ModelShape:
    """What memory arithmetic needs to know about a model (``None``: the header does not say).

    ``parameters`` counts every weight the model loads (an untied output head included);
    ``largest_tensor`` is the element count of its largest weight; ``file_bytes`` the size on
    disk; ``gguf`` whether the file must be converted on first use.
    """

    # Optional (a header may omit any): alike in shape to RunInfo's, Evaluation's fields by accident.
    parameters: int
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    intermediate: int | None = None
    vocab: int | None = None
    largest_tensor: int | None = None
    file_bytes: int | None = None
    gguf: bool = False

    @property
    def kv_width(self) -> int:
        """Key (= value) width per layer and token: kv_heads x head_dim (hidden when unknown)."""
        hd = self.head_dim or ((self.hidden or 0) // self.heads if self.heads else None)
        if self.kv_heads and hd:
            return int(self.kv_heads * hd)
        return int(self.hidden or 0)


def shape_from_config(config, parameters: int) -> ModelShape:
    """A :class:`ModelShape` from a transformers config object or ``config.json`` dict
    (T5-style names too); ``parameters`` counted by the caller."""
    get = (lambda k: config.get(k)) if isinstance(config, dict) else (lambda k: getattr(config, k, None))
    text = get("text_config")
    if text:  # multimodal configs keep the language model's shape here
        return shape_from_config(text, parameters)

    def first(*keys):
        for k in keys:
            v = get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
                return int(v)
        return None
    layers = first("num_hidden_layers", "n_layer", "num_layers")
    if get("is_encoder_decoder"):
        layers = (layers or 0) + (first("num_decoder_layers") or layers or 0) or None
    return ModelShape(parameters=int(parameters), layers=layers,
                      hidden=first("hidden_size", "d_model", "n_embd"),
                      heads=first("num_attention_heads", "n_head", "num_heads"),
                      kv_heads=first("num_key_value_heads", "num_attention_heads", "n_head", "num_heads"),
                      head_dim=first("head_dim", "d_kv"),
                      intermediate=first("intermediate_size", "d_ff", "n_inner", "ffn_dim"),
                      vocab=first("vocab_size"))


# ----------------------------------------------------------------------------- working set

def _per_token_bytes(shape: ModelShape, nbytes: int, context_tokens: int) -> float:
    """Memory one suffix token of a micro-batch holds at once: its keys and values in every
    layer (the cache keeps them to the end of the forward pass), one layer's activations
    (hidden states, q/k/v, the MLP's gate/up/activation) and its attention row over the cache
    (SDPA's math kernel materialises it, fp32)."""
    layers = shape.layers or 1
    hidden = shape.hidden or 0
    inter = shape.intermediate or 4 * hidden
    heads = shape.heads or 1
    kv = 2 * layers * shape.kv_width * nbytes
    act = nbytes * (4 * hidden + 3 * inter + hidden + 2 * shape.kv_width)
    attn = 4 * heads * context_tokens
    return kv + act + attn


def _per_row_bytes(shape: ModelShape, nbytes: int, context_tokens: int, suffix_tokens: int) -> float:
    """One prompt of a micro-batch: its suffix tokens, its copy of the shared prefix's keys and
    values (stacked per row when caches differ), and its fp32 logits row (full vocabulary, with
    the log-sum-exp temporaries)."""
    prefix = 2 * (shape.layers or 1) * shape.kv_width * nbytes * context_tokens
    logits = 3 * 4 * (shape.vocab or 0)
    return suffix_tokens * _per_token_bytes(shape, nbytes, context_tokens) + prefix + logits


def working_bytes(shape: ModelShape, dtype: str, batch_size: int = CPU_BATCH_SIZE,
                  context_tokens: int = CONTEXT_TOKENS, suffix_tokens: int = SUFFIX_TOKENS) -> int:
    """Memory of one micro-batch of ``batch_size`` prompts (activations, caches, logits)."""
    return int(batch_size * _per_row_bytes(shape, compute_bytes(dtype), context_tokens, suffix_tokens))


@dataclass(frozen=True)
class Sizing:
    """A micro-batch size: at most ``batch_size`` prompts and ``token_budget`` padded suffix tokens."""

    batch_size: int
    token_budget: int


def batch_sizing(free_bytes: int, shape: ModelShape, dtype: str, *,
                 context_tokens: int = CONTEXT_TOKENS, suffix_tokens: int = SUFFIX_TOKENS,
                 headroom: float = 0.7, max_batch: int = 256) -> Sizing:
    """Micro-batch size for a GPU from its free memory once the weights are on it.

    ``batch_size = floor(headroom x free_bytes / per-row bytes)`` clamped to ``[1, max_batch]``,
    where a row is ``suffix_tokens`` suffix tokens, its copy of a ``context_tokens`` prefix cache
    and its fp32 logits (:func:`working_bytes` per prompt); ``token_budget = batch_size x
    suffix_tokens`` (longer suffixes make smaller batches, as the judge cuts by tokens too). The
    headroom leaves the allocator's fragmentation and the kernels' workspaces their share; an
    out-of-memory error still halves the batch (the judge's retry), so this only has to be close.

    Examples
    --------
    A 1.5B Qwen2.5 (28 layers, hidden 1536, 2 x 128 key/value width) in bf16 with 60 GB free:
    a row is ~110 MB, so the batch is the cap, 256 prompts; with 1 GB free, 6 prompts.
    """
    if free_bytes < 0:
        raise ValueError(f"free memory cannot be negative ({free_bytes})")
    row = _per_row_bytes(shape, compute_bytes(dtype), context_tokens, suffix_tokens)
    n = int(headroom * free_bytes // max(row, 1.0))
    n = max(1, min(max_batch, n))
    return Sizing(batch_size=n, token_budget=n * suffix_tokens)


# ----------------------------------------------------------------------------- the estimate

@dataclass(frozen=True)
class MemoryNeed:
    """Bytes a judge needs: on the device (``weights``, ``head``, ``working``) and in the process
    (``runtime``); ``conversion`` is the peak of a GGUF's first-use conversion (0 when already
    converted or not a GGUF). ``peak`` = the larger of the conversion and the running size."""

    model: str
    dtype: str
    device: str
    weights: int
    head: int
    working: int
    runtime: int
    conversion: int
    shape: ModelShape | None = None
    batch_size: int = CPU_BATCH_SIZE
    context_tokens: int = 1024

    @property
    def running(self) -> int:
        return self.weights + self.head + self.working + (self.runtime if self.device == "cpu" else 0)

    @property
    def peak(self) -> int:
        return max(self.running, self.conversion)

    def summary(self) -> str:
        """``about 8.7 GB of memory (weights 7.1 GB in fp32, batch 1.0 GB, runtime 0.6 GB)``."""
        parts = [f"weights {self.weights / _GB:.1f} GB in {self.dtype}"]
        parts.append(f"batch {self.working / _GB:.1f} GB")
        if self.device == "cpu":
            parts.append(f"runtime {self.runtime / _GB:.1f} GB")
        if self.conversion > self.running:
            parts.append(f"first use converts the GGUF file: {self.conversion / _GB:.1f} GB")
        where = "GPU memory" if self.device != "cpu" else "memory"
        return f"about {self.peak / _GB:.1f} GB of {where} ({', '.join(parts)})"


def resolve_device_name(device: str) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; ``cuda:N`` -> ``cuda``.

    Without an NVIDIA driver (``/proc/driver/nvidia``) and with torch not loaded yet, ``auto`` is
    ``cpu`` without importing torch: the Run page's plan must not cost the web server a torch
    import (over a second and a few hundred MB) to learn that there is no GPU."""
    d = device.strip().lower()
    if d == "auto":
        if "torch" not in sys.modules and not Path("/proc/driver/nvidia").exists():
            return "cpu"
        import torch
        return "cuda" if torch.cuda.is_available() else "cpu"
    return "cuda" if d.startswith("cuda") else d


def resolve_dtype_name(dtype: str, device: str) -> str:
    """``auto``: bf16 on a GPU, fp32 on CPU (as ``judges.loading.resolve_dtype``)."""
    d = dtype.strip().lower()
    if d == "auto":
        return "bf16" if device != "cpu" else "fp32"
    return {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(d, d)


def memory_need(shape: ModelShape, model_name: str, dtype: str = "auto", device: str = "cpu", *,
                batch_size: int | None = None, context_tokens: int | None = None,
                converted: bool = True) -> MemoryNeed:
    """The memory a local judge of ``shape`` will need (``model_catalog.memory_needed`` finds
    the shape and whether a GGUF is converted from the judge's ``--model``).

    ``weights`` = parameters x bytes per stored weight; ``head`` = the block of the output
    embedding the label head upcasts at once when the weights are narrower than fp32
    (min(vocab, 16384) x hidden x 4);
    ``working`` = one micro-batch (:func:`working_bytes`: ``batch_size`` prompts, default the CPU
    batch of 8, of ``context_tokens`` shared prefix, default 1024); ``runtime`` = the process
    without weights (:data:`RUNTIME_BYTES`); ``conversion`` (a GGUF whose conversion is not
    cached yet: ``converted`` False) = runtime + the memory-mapped file + a shard + the largest
    tensor dequantised twice (fp32 and its transformers layout), the tensor-by-tensor
    conversion's peak.

    Raises
    ------
    ValueError
        Unknown dtype.
    """
    dev = resolve_device_name(device)
    dt = resolve_dtype_name(dtype, dev)
    nbytes = dtype_bytes(dt)
    weights = shape.parameters * nbytes
    head = min(shape.vocab or 0, HEAD_ROWS) * (shape.hidden or 0) * 4 if nbytes != 4 else 0
    rows, context = batch_size or CPU_BATCH_SIZE, context_tokens or 1024
    working = working_bytes(shape, dt, rows, context)
    conversion = 0
    if shape.gguf and not converted:
        conversion = (RUNTIME_BYTES + (shape.file_bytes or 0) + CONVERSION_SHARD_BYTES
                      + 2 * 4 * (shape.largest_tensor or 0))
    return MemoryNeed(model=model_name, dtype=dt, device=dev, weights=int(weights), head=int(head),
                      working=int(working), runtime=RUNTIME_BYTES, conversion=int(conversion),
                      shape=shape, batch_size=rows, context_tokens=context)


def _cgroup_room() -> int | None:
    """Bytes left under this process's cgroup (v2 or v1) memory limit, None when unlimited."""
    for limit_f, usage_f in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                             ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                              "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            limit = Path(limit_f).read_text().strip()
            usage = int(Path(usage_f).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit == "max" or not limit.isdigit() or int(limit) >= 2**60:
            return None
        return max(int(limit) - usage, 0)
    return None


def available_memory(device: str = "cpu") -> int | None:
    """Bytes a new judge could use now: on CPU ``MemAvailable`` (Linux; free pages elsewhere)
    capped by a container's memory limit; on a GPU its free memory (``torch.cuda.mem_get_info``).
    None when the system does not say."""
    dev = device.strip().lower()
    if dev.startswith("cuda") or dev == "auto" and resolve_device_name("auto") == "cuda":
        import torch
        index = int(dev.split(":")[1]) if ":" in dev else torch.cuda.current_device()
        return int(torch.cuda.mem_get_info(index)[0])
    avail = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
                break
    except OSError:
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return None
    room = _cgroup_room()
    return min(avail, room) if room is not None else avail


def memory_problem(need: MemoryNeed, available: int | None) -> str | None:
    """Why the judge will not fit (a sentence for the Run page and the CLI), or None (it fits,
    or the available memory is unknown: never refuse on a guess).

    A judge in fp32 that would fit in ``bf16-weights`` is told so, with what that costs in p.
    """
    if available is None or need.peak <= available:
        return None
    where = "GPU memory" if need.device != "cpu" else "memory"
    msg = (f"{need.model} needs {need.summary()}, but this machine has {available / _GB:.1f} GB of "
           f"{where} available")
    if need.dtype == "fp32" and need.shape is not None:
        half = memory_need(need.shape, need.model, "bf16-weights", need.device,
                           batch_size=need.batch_size, context_tokens=need.context_tokens,
                           converted=need.conversion == 0)
        if half.peak <= available:
            return msg + (f"; with --dtype bf16-weights (matrices stored in bf16, computed in fp32) "
                          f"it would need {half.peak / _GB:.1f} GB, its p within ~5e-3 of fp32 "
                          "(docs/performance.md).")
    return msg + ": choose a smaller judge (or a served one), or free memory first."


@dataclass(frozen=True)
class MemoryPlan:
    """The plan's memory line: what the judge needs, what is available, and the refusal (None
    when it fits or cannot be told)."""

    need: MemoryNeed | None
    available: int | None
    problem: str | None

    @property
    def fits(self) -> bool:
        return self.problem is None

    def line(self) -> str:
        """One line for the plan: ``Memory: about 7.6 GB (...); 20.1 GB available.``"""
        if self.need is None:
            return "Memory: not estimated (a served judge or a hub id)."
        avail = "" if self.available is None else f"; {self.available / _GB:.1f} GB available"
        return f"Memory: {self.need.summary()}{avail}."

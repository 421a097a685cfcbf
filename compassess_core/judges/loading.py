"""Find, convert and load a judge model: a .gguf file, a local transformers directory or a hub id.

A GGUF is converted once to a plain transformers directory under ``converted_dir()/<sha256>``,
tensor by tensor (``conversion.py``: memory stays near the running size), since loading a GGUF
costs ~17 s of tokenizer conversion and dequantisation and the conversion loads in 2-3 s; a
narrower precision loads a copy in that dtype written once beside it (``<sha256>-bf16``).
Precisions: fp32, bf16, fp16 and ``bf16-weights`` (matrices kept in bf16, computed in fp32).
The model identity (part of ``model_key``) is the GGUF's file name and sha256 whichever of the two is
loaded. Every failure a user can cause becomes a ``ModelLoadError`` with a message, never a stack
trace. This module must never score prompts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch

from ..errors import InputError, ModelLoadError
from .models import CONVERSION_MARKER as _MARKER, cached_sha256, converted_dir

#: "org/name" or "name" as the hub spells model ids; anything else that does not exist is a bad path.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".json", ".model", ".txt")


@dataclass
class LoadedModel:
    model: torch.nn.Module
    tokenizer: object
    identity: str          # file/dir/hub id + content hash; dtype and label words are added by the judge
    name: str              # short human-readable model name
    is_seq2seq: bool
    device: torch.device
    dtype: torch.dtype     # what the model computes in
    storage: torch.dtype | None = None  # matrices stored narrower than ``dtype`` (bf16-weights)


#: ``--dtype`` names of the weight-only precisions: (compute dtype, storage dtype of the matrices).
WEIGHT_ONLY = {"bf16-weights": (torch.float32, torch.bfloat16)}


def precision_name(loaded: LoadedModel) -> str:
    """``fp32``, ``bf16``, ``fp16`` or ``bf16-weights`` (part of the model key and description)."""
    for name, (compute, storage) in WEIGHT_ONLY.items():
        if loaded.dtype == compute and loaded.storage == storage:
            return name
    return dtype_name(loaded.dtype)


class StoredLinear(torch.nn.Module):
    """``nn.Linear`` whose weight is kept in a narrower dtype and computed in its input's dtype:
    ``F.linear(x, W.to(x.dtype), b)``. Upcasting is exact, so this is the linear layer of the
    rounded weights evaluated in fp32 (batch-invariant like fp32), at half the memory; the
    upcast copy lives for one matmul."""

    def __init__(self, linear: torch.nn.Linear, weight: torch.nn.Parameter):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = weight
        self.bias = linear.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x, self.weight.to(x.dtype), self.bias)


class StoredEmbedding(torch.nn.Module):
    """``nn.Embedding`` whose table is kept in a narrower dtype; looked-up rows come out in
    ``compute`` dtype."""

    def __init__(self, embedding: torch.nn.Embedding, weight: torch.nn.Parameter,
                 compute: torch.dtype):
        super().__init__()
        self.num_embeddings, self.embedding_dim = embedding.num_embeddings, embedding.embedding_dim
        self.padding_idx = embedding.padding_idx
        self.weight = weight
        self.compute = compute

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.embedding(ids, self.weight, self.padding_idx).to(self.compute)


def compute_in(model: torch.nn.Module, compute: torch.dtype) -> torch.nn.Module:
    """Make ``model`` (loaded in its narrow storage dtype) compute in ``compute``: every linear and
    embedding module keeps its matrix as loaded and upcasts it on use (``StoredLinear``,
    ``StoredEmbedding``; tied matrices stay one tensor), every other parameter and floating
    buffer (norms, biases, rotary tables) is upcast in place. So the model holds the narrow
    matrices only, loaded as ``from_pretrained`` casts them (never a full-precision copy)."""
    for parent in list(model.modules()):
        for child_name, child in list(parent.named_children()):
            if type(child) is torch.nn.Linear:
                parent.set_submodule(child_name, StoredLinear(child, child.weight))
            elif type(child) is torch.nn.Embedding:
                parent.set_submodule(child_name, StoredEmbedding(child, child.weight, compute))
    stored = {id(m.weight) for m in model.modules() if isinstance(m, (StoredLinear, StoredEmbedding))}
    for module in model.modules():
        for name, p in list(module.named_parameters(recurse=False)):
            if id(p) not in stored and p.is_floating_point() and p.dtype != compute:
                p.data = p.data.to(compute)
        for name, b in list(module.named_buffers(recurse=False)):
            if b is not None and b.is_floating_point() and b.dtype != compute:
                setattr(module, name, b.to(compute))
    return model


def resolve_device(device: str) -> torch.device:
    """``auto`` -> cuda when available, else cpu; ``cuda``/``cuda:N``/``cpu`` as given."""
    d = device.strip().lower()
    if d == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if d.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InputError(f"device '{device}' requested but no CUDA GPU is available "
                             "(torch.cuda.is_available() is False); use --device cpu or auto")
        return torch.device(d)
    if d == "cpu":
        return torch.device("cpu")
    raise InputError(f"unknown device '{device}'; choose auto, cpu or cuda")


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """``auto``: bf16 on a GPU that supports it (fp16 otherwise), fp32 on CPU.

    CPU stays fp32 although bf16 is ~1.8x faster on CPUs with AVX512-BF16 (measured on this
    project's 2-core EPYC, docs/performance.md): in bf16 the same prompt's p moves by up to 2e-2
    with the batch it is computed in (rounding order), as large as the spread of a small judge's
    p values, whereas fp32 p agrees with one-at-a-time scoring to ~1e-6. Label-word
    log-probabilities are computed in fp32 whatever the model dtype. ``bf16-weights`` computes
    in fp32 (its storage: :func:`resolve_storage`).
    """
    d = dtype.strip().lower()
    table = {"fp32": torch.float32, "float32": torch.float32, "bf16": torch.bfloat16,
             "bfloat16": torch.bfloat16, "fp16": torch.float16, "float16": torch.float16,
             **{name: compute for name, (compute, _) in WEIGHT_ONLY.items()}}
    if d == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    if d not in table:
        raise InputError(f"unknown dtype '{dtype}'; choose auto, fp32, bf16, fp16 or bf16-weights")
    return table[d]


def dtype_name(dtype: torch.dtype) -> str:
    return {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, str(dtype))


def _dir_identity(path: Path) -> str:
    marker = path / _MARKER
    if marker.is_file():
        src = json.loads(marker.read_text(encoding="utf-8"))
        return f"{src['file']}@sha256:{src['sha256']}"
    files = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(_WEIGHT_SUFFIXES))
    combined = "|".join(f"{p.name}:{cached_sha256(p)}" for p in files)
    import hashlib
    return f"{path.resolve()}@sha256:{hashlib.sha256(combined.encode()).hexdigest()}"


def _is_seq2seq(config) -> bool:
    return bool(getattr(config, "is_encoder_decoder", False))


def _auto_class(config):
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM
    return AutoModelForSeq2SeqLM if _is_seq2seq(config) else AutoModelForCausalLM


def _from_pretrained(cls, src, dtype: torch.dtype, device: torch.device):
    # Straight onto a GPU (no whole copy in host memory first); SDPA where the architecture has
    # it, some (older seq2seq) only have the eager kernels.
    kw = dict(dtype=dtype, device_map=str(device)) if device.type == "cuda" else dict(dtype=dtype)
    try:
        return cls.from_pretrained(src, attn_implementation="sdpa", **kw)
    except ValueError as e:
        if "sdpa" not in str(e).lower():
            raise
        return cls.from_pretrained(src, **kw)


def _placed(model: torch.nn.Module, device: torch.device, dtype: torch.dtype,
            storage: torch.dtype | None):
    """The model in eval mode on ``device``; loaded in ``storage`` when given, then set to
    compute in ``dtype`` (weight-only precision).

    Raises
    ------
    InputError
        Weight-only precision for an encoder-decoder model (T5's feed-forward casts its input to
        its weight's dtype, so it would compute partly in bf16).
    """
    if storage is not None:
        if _is_seq2seq(model.config):
            raise InputError("--dtype bf16-weights is for decoder-only judges; an encoder-decoder "
                             "model (T5) would compute partly in bf16: use bf16 or fp32")
        compute_in(model, dtype)
    return model.to(device).eval()


def resolve_storage(dtype: str) -> torch.dtype | None:
    """The storage dtype of a weight-only precision name (``bf16-weights`` -> bf16), else None."""
    pair = WEIGHT_ONLY.get(dtype.strip().lower())
    return pair[1] if pair else None


@contextmanager
def _written_whole(out: Path, prefix: str) -> Iterator[Path]:
    """A temporary folder beside ``out`` for the block to fill (its completion marker last),
    renamed to ``out`` when the block ends, so a crash never leaves a half-written folder behind;
    removed instead when the block raises or another process wrote ``out`` meanwhile. Its files
    are made readable by all: the cache is shared like the models it holds."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{prefix}-", dir=out.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private
    try:
        yield tmp
        for f in tmp.iterdir():
            f.chmod(0o644)
        try:
            tmp.rename(out)
        except OSError:  # another process wrote it meanwhile
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def convert_gguf(gguf: Path, sha: str, streaming: bool = True) -> Path:
    """Convert a GGUF file once to a transformers directory ``converted_dir()/<sha>`` (fp32).

    Streaming (``conversion.convert_streaming``): one tensor at a time into safetensors shards, so
    the conversion needs about a shard (512 MB) plus the largest tensor on top of the tokenizer,
    never the whole model; architectures it does not handle (and ``streaming=False``) go through
    ``from_pretrained`` as a whole (``conversion.convert_whole``: ~2x the fp32 model at once).
    Both write the same values. The folder is built under a temporary name and renamed, so a
    crash never leaves a half-written conversion behind.
    """
    from .conversion import convert_streaming, convert_whole, gguf_architecture, streams

    out = converted_dir() / sha
    if (out / _MARKER).is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with _written_whole(out, sha[:12]) as tmp:
        try:
            if streaming and streams(gguf_architecture(gguf)):
                convert_streaming(gguf, tmp, _auto_class)
            else:
                convert_whole(gguf, tmp, _auto_class)
        except OSError as e:
            raise ModelLoadError(f"{gguf}: could not write its conversion to {out.parent}: {e}") from None
        except Exception as e:  # transformers raises many types for unreadable/unsupported GGUF
            raise ModelLoadError(f"{gguf}: could not read this GGUF file with transformers: "
                                 f"{type(e).__name__}: {e}") from None
        (tmp / _MARKER).write_text(json.dumps({"file": gguf.name, "sha256": sha}), encoding="utf-8")
    return out


def narrowed_conversion(folder: Path, dtype: torch.dtype) -> Path:
    """A GGUF's converted fp32 folder in ``dtype`` (bf16/fp16), written once beside it
    (``<sha>-bf16``) shard by shard, so loading a narrower model maps a checkpoint already in
    its dtype instead of holding the fp32 file pages and the cast copy at once."""
    from .conversion import narrow_folder

    out = folder.with_name(f"{folder.name}-{dtype_name(dtype)}")
    if (out / _MARKER).is_file():
        return out
    with _written_whole(out, out.name[:20]) as tmp:
        try:
            narrow_folder(folder, tmp, dtype)
        except OSError as e:
            raise ModelLoadError(f"could not write the {dtype_name(dtype)} copy of {folder}: {e}") from None
        (tmp / _MARKER).write_bytes((folder / _MARKER).read_bytes())  # last: marks it complete
    return out


def _load_dir(path: Path, identity: str, name: str, device: torch.device,
              dtype: torch.dtype, storage: torch.dtype | None = None) -> LoadedModel:
    from transformers import AutoConfig, AutoTokenizer
    try:
        config = AutoConfig.from_pretrained(path)
        tok = AutoTokenizer.from_pretrained(path)
        model = _from_pretrained(_auto_class(config), path, storage or dtype, device)
    except Exception as e:
        raise ModelLoadError(f"{path}: could not load a transformers model from here: {e}") from None
    model = _placed(model, device, dtype, storage)
    return LoadedModel(model, tok, identity, name, _is_seq2seq(config), device, dtype, storage)


def load_model(spec: str | os.PathLike, device: str = "auto", dtype: str = "auto") -> LoadedModel:
    """Load ``spec``: a ``.gguf`` file, a local transformers directory, or a hub id.

    Raises
    ------
    ModelLoadError
        The path does not exist, is not a model, or the hub id cannot be resolved.
    """
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    st = resolve_storage(dtype)
    s = str(spec)
    path = Path(s).expanduser()
    if s.lower().endswith(".gguf"):
        if not path.is_file():
            raise ModelLoadError(f"model file {path} does not exist")
        sha = cached_sha256(path)
        conv = convert_gguf(path, sha)
        if (st or dt) != torch.float32:
            conv = narrowed_conversion(conv, st or dt)
        return _load_dir(conv, f"{path.name}@sha256:{sha}", path.name, dev, dt, st)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelLoadError(f"{path} is a directory but holds no config.json: not a transformers "
                                 "model directory (give a .gguf file, a model directory or a hub id)")
        return _load_dir(path, _dir_identity(path), path.name, dev, dt, st)
    if path.exists() or not _HUB_ID.fullmatch(s):
        raise ModelLoadError(f"model '{s}' is not a .gguf file, a model directory or a hub id "
                             "(no such file or directory)")
    # A hub id "org/name" (or "name"): from the local hub cache or the network.
    from transformers import AutoConfig, AutoTokenizer
    try:
        config = AutoConfig.from_pretrained(s)
        tok = AutoTokenizer.from_pretrained(s)
        model = _from_pretrained(_auto_class(config), s, st or dt, dev)
    except Exception as e:
        raise ModelLoadError(f"model '{s}' is neither a local path nor a loadable hub id: "
                             f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None
    model = _placed(model, dev, dt, st)
    rev = getattr(config, "_commit_hash", None) or "unknown-revision"
    return LoadedModel(model, tok, f"{s}@{rev}", s, _is_seq2seq(config), dev, dt, st)

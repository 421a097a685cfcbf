"""The judges a user can choose on this machine, and the ones worth getting for other machines.

The catalog lists the bundled judge and every local model in the models folder
(``$COMPASSESS_MODELS_DIR``, default ``$COMPASSESS_HOME/models``): each ``.gguf`` file and each
transformers folder (one holding a ``config.json``), with its size on disk, parameter count,
context window and architecture read from the file's own header (a GGUF's key-value metadata and
tensor table, a folder's ``config.json`` and safetensors headers: no weights are loaded), and the
speed measured on this machine by earlier runs (``speed.measured_speed``). :data:`RECOMMENDED`
lists hub ids by hardware, with the reason.

This module must never load a model, fetch anything, or read the store (callers hand it the
runs: ``Store.list_runs()``).
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO, Iterable

import pandas as pd

from . import memory
from .servers import is_openai_spec
from .memory import MemoryNeed, MemoryPlan, ModelShape, shape_from_config
from .models import (BUNDLED_MODEL, converted_folder, default_model_path,
                     is_bundled)
from .speed import RecordedRun, Speed, measured_speed

__all__ = ["models_folder", "ModelEntry", "gguf_header", "folder_header", "gguf_shape",
           "folder_shape", "model_path", "model_shape", "local_models", "catalog", "catalog_frame",
           "Recommendation", "RECOMMENDED"]


def models_folder() -> Path:
    """``$COMPASSESS_MODELS_DIR``, else ``$COMPASSESS_HOME/models`` (``COMPASSESS_HOME``
    defaults to ``~/.local/share/compassess``, as the database)."""
    env = os.environ.get("COMPASSESS_MODELS_DIR", "").strip()
    if env:
        return Path(env).expanduser()
    home = os.environ.get("COMPASSESS_HOME", "").strip()
    return (Path(home).expanduser() if home else Path.home() / ".local" / "share" / "compassess") / "models"


@dataclass(frozen=True)
class ModelEntry:
    """One judge on this machine.

    ``spec`` is what ``--model`` and the Run page take; ``kind`` is ``bundled``, ``gguf`` or
    ``transformers``; ``speed``/``scoring_speed`` the median comparisons/s and candidates/s of
    this model's earlier runs in the store (None: never run here); ``problem`` says why a file
    could not be read (the entry is listed anyway).
    """

    name: str
    spec: str
    kind: str
    path: Path | None
    size_bytes: int | None
    parameters: int | None
    context_window: int | None
    architecture: str | None
    available: bool
    speed: Speed | None = None
    scoring_speed: Speed | None = None
    problem: str | None = None


# ------------------------------------------------------------------------------ GGUF header

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
            11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


def _read(f: BinaryIO, fmt: str):
    size = struct.calcsize(fmt)
    data = f.read(size)
    if len(data) != size:
        raise ValueError("file ends inside the GGUF header")
    return struct.unpack(fmt, data)[0]


def _string(f: BinaryIO) -> str:
    n = _read(f, "<Q")
    return f.read(n).decode("utf-8", errors="replace")


def _value(f: BinaryIO, vtype: int, keep: bool):
    if vtype in _SCALARS:
        return _read(f, _SCALARS[vtype])
    if vtype == _STRING:
        if keep:
            return _string(f)
        f.seek(_read(f, "<Q"), os.SEEK_CUR)
        return None
    if vtype == _ARRAY:
        item, count = _read(f, "<I"), _read(f, "<Q")
        if item in _SCALARS:  # fixed-size items are skipped in one seek
            f.seek(count * struct.calcsize(_SCALARS[item]), os.SEEK_CUR)
        else:
            for _ in range(count):
                _value(f, item, False)
        return None
    raise ValueError(f"unknown GGUF value type {vtype}")


#: The shape keys a GGUF states per architecture (``<arch>.<key>``), as :class:`ModelShape` names them.
_GGUF_SHAPE_KEYS = {"block_count": "layers", "embedding_length": "hidden",
                    "feed_forward_length": "intermediate", "attention.head_count": "heads",
                    "attention.head_count_kv": "kv_heads", "attention.key_length": "head_dim"}


def _gguf_table(path: Path) -> tuple[dict, list[tuple[str, tuple[int, ...]]]]:
    """A GGUF file's kept metadata (``general.*``, ``<arch>.context_length`` and the shape keys)
    and its tensor table ``[(name, dims in ggml order)]``; arrays are skipped, no tensor data read.

    Read once per file version (path, size, modification time): the Run page plans with it at
    every rerun, and skipping a vocabulary's strings one by one takes about 25 ms.
    """
    path = Path(path)
    st = path.stat()
    meta, tensors = _read_gguf_table(path, st.st_size, st.st_mtime_ns)
    return dict(meta), list(tensors)


@lru_cache(maxsize=16)
def _read_gguf_table(path: Path, size: int, mtime_ns: int) -> tuple[dict, tuple]:
    """:func:`_gguf_table` of one version of a file (``size`` and ``mtime_ns`` only key the cache)."""
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise ValueError(f"{path.name} does not start with the GGUF magic bytes")
        version = _read(f, "<I")
        if version < 2:
            raise ValueError(f"GGUF version {version} is not supported (2 or 3)")
        n_tensors, n_kv = _read(f, "<Q"), _read(f, "<Q")
        meta = {}
        for _ in range(n_kv):
            key = _string(f)
            vtype = _read(f, "<I")
            keep = (key.startswith("general.") or key.endswith(".context_length")
                    or key.split(".", 1)[-1] in _GGUF_SHAPE_KEYS)
            value = _value(f, vtype, keep)
            if keep:
                meta[key] = value
        tensors = []
        for _ in range(n_tensors):
            name = _string(f)
            dims = [_read(f, "<Q") for _ in range(_read(f, "<I"))]
            _read(f, "<I")
            _read(f, "<Q")
            tensors.append((name, tuple(dims)))
    return meta, tuple(tensors)


def _count(dims) -> int:
    count = 1
    for d in dims:
        count *= d
    return count


def gguf_header(path: Path) -> dict:
    """Architecture, context window, name and parameter count from a GGUF file's header (GGUF
    spec v2/v3: magic, version, tensor count, key-value metadata, tensor table); arrays such as the
    vocabulary are skipped, no tensor data is read.

    Returns
    -------
    dict
        ``architecture``, ``context_window`` (``<arch>.context_length``), ``name``
        (``general.name``), ``parameters`` (sum of the tensor shapes).

    Raises
    ------
    ValueError
        Not a GGUF file, or a header that ends early.
    """
    meta, tensors = _gguf_table(path)
    params = sum(_count(dims) for _, dims in tensors)
    arch = meta.get("general.architecture")
    window = meta.get(f"{arch}.context_length") if arch else None
    return dict(architecture=arch, context_window=int(window) if window else None,
                name=meta.get("general.name"), parameters=params or None)


def gguf_shape(path: Path) -> ModelShape:
    """The :class:`~compassess_core.judges.memory.ModelShape` of a GGUF file from its header: the
    ``<arch>.block_count`` / ``embedding_length`` / ``feed_forward_length`` /
    ``attention.head_count[_kv]`` / ``attention.key_length`` keys, the vocabulary from
    ``token_embd``'s shape, every tensor's elements (an untied ``output`` head included: the
    model loads it) and the largest tensor.

    Raises
    ------
    ValueError
        Not a GGUF file, or a header that ends early.
    """
    meta, tensors = _gguf_table(path)
    arch = meta.get("general.architecture") or ""
    shape = {field: int(meta[f"{arch}.{key}"]) for key, field in _GGUF_SHAPE_KEYS.items()
             if isinstance(meta.get(f"{arch}.{key}"), int)}
    dims = dict(tensors)
    embd = dims.get("token_embd.weight")
    return ModelShape(parameters=sum(_count(d) for d in dims.values()),
                      vocab=int(embd[-1]) if embd and len(embd) == 2 else None,
                      largest_tensor=max((_count(d) for d in dims.values()), default=0),
                      file_bytes=path.stat().st_size, gguf=True, **shape)


def _folder_config(path: Path) -> dict:
    try:
        return json.loads((path / "config.json").read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"config.json is not JSON: {e}") from None


def _safetensors_counts(path: Path) -> list[int]:
    """Element counts of every tensor in a folder's ``.safetensors`` files (headers only)."""
    counts = []
    for shard in sorted(path.glob("*.safetensors")):
        with open(shard, "rb") as f:
            size = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(size))
        counts += [_count(info.get("shape", [])) for name, info in header.items()
                   if name != "__metadata__"]
    return counts


def folder_header(path: Path) -> dict:
    """Architecture, context window and parameter count of a transformers folder from its
    ``config.json`` (``max_position_embeddings``, as the judge reads it) and the headers of its
    ``.safetensors`` files (``None`` where a folder does not say).

    Raises
    ------
    ValueError
        ``config.json`` is not JSON.
    """
    config = _folder_config(path)
    text = config.get("text_config") or {}
    window = config.get("max_position_embeddings") or text.get("max_position_embeddings")
    archs = config.get("architectures") or [config.get("model_type")]
    params = sum(_safetensors_counts(path))
    return dict(architecture=archs[0] if archs else None,
                context_window=int(window) if window else None, name=path.name,
                parameters=params or None)


def folder_shape(path: Path) -> ModelShape | None:
    """The :class:`~compassess_core.judges.memory.ModelShape` of a transformers folder (``config.json``
    and the safetensors headers); None when it holds no safetensors (``.bin`` weights are not
    read without loading them).

    Raises
    ------
    ValueError
        ``config.json`` is not JSON.
    """
    counts = _safetensors_counts(path)
    if not counts:
        return None
    shape = shape_from_config(_folder_config(path), sum(counts))
    return replace(shape, largest_tensor=max(counts), file_bytes=_size(path))


def model_path(model: str | os.PathLike | None) -> Path | None:
    """The local file or folder a ``--model`` names (the bundled judge's GGUF for ``None`` or
    ``bundled:...``), None for a hub id or a served judge."""
    if is_bundled(None if model is None else str(model)):
        return default_model_path()
    path = Path(str(model)).expanduser()
    return path if path.exists() else None


def model_shape(model: str | os.PathLike | None) -> ModelShape | None:
    """The shape of the judge ``--model`` names, read from its header (no weights loaded); None
    for a hub id, a served judge, a missing file or a folder without safetensors.

    Raises
    ------
    ValueError
        A header that cannot be read.
    """
    path = model_path(model)
    if path is None:
        return None
    if path.is_file() and path.suffix.lower() == ".gguf":
        return gguf_shape(path)
    if path.is_dir() and (path / "config.json").is_file():
        return folder_shape(path)
    return None


def _converted(path: Path) -> bool:
    """Whether the first-use conversion of the GGUF at ``path`` is in the cache already."""
    return converted_folder(path) is not None


def memory_needed(model: str | os.PathLike | None, dtype: str = "auto", device: str = "cpu", *,
                  batch_size: int | None = None, context_tokens: int | None = None,
                  shape: ModelShape | None = None, converted: bool | None = None
                  ) -> MemoryNeed | None:
    """The memory the local judge ``--model`` names will need (``memory.memory_need`` on its
    :func:`model_shape`); None for a served judge or a hub id, whose size this machine cannot
    read. ``converted``: whether a GGUF's first-use conversion is cached already (None looks
    it up; one that is not adds the conversion's peak).

    Raises
    ------
    ValueError
        Unknown dtype or an unreadable model header.
    """
    if shape is None:
        shape = model_shape(model)
        if shape is None:
            return None
    if converted is None:
        path = model_path(model) if shape.gguf else None
        converted = path is None or _converted(path)
    name = ("the bundled judge" if is_bundled(None if model is None else str(model))
            else Path(str(model)).name or str(model))
    return memory.memory_need(shape, name, dtype, device, batch_size=batch_size,
                              context_tokens=context_tokens, converted=converted)


def memory_plan(model: str | os.PathLike | None, dtype: str = "auto", device: str = "auto", *,
                batch_size: int | None = None, context_tokens: int | None = None) -> MemoryPlan:
    """:func:`memory_needed` against ``memory.available_memory``, with the refusal message: what
    the Run page's and the CLI's plan show before a run starts.

    A model whose header cannot be read gets no estimate (``need`` None), never an exception:
    loading it reports the real error.
    """
    if model is not None and is_openai_spec(str(model)):
        return MemoryPlan(None, None, None)
    dev = memory.resolve_device_name(device)
    try:
        need = memory_needed(model, dtype, dev, batch_size=batch_size, context_tokens=context_tokens)
    except (ValueError, OSError):
        need = None
    if need is None:
        return MemoryPlan(None, None, None)
    available = memory.available_memory(dev)
    return MemoryPlan(need, available, memory.memory_problem(need, available))


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _entry(path: Path, kind: str, spec: str | None = None, name: str | None = None) -> ModelEntry:
    available = path.exists()
    header: dict = {}
    problem = None
    if available:
        try:
            header = gguf_header(path) if kind in ("gguf", "bundled") else folder_header(path)
        except (OSError, ValueError, struct.error) as e:
            problem = f"could not read its header: {e}"
    return ModelEntry(name=name or path.name, spec=spec or str(path), kind=kind, path=path,
                      size_bytes=_size(path) if available else None,
                      parameters=header.get("parameters"),
                      context_window=header.get("context_window"),
                      architecture=header.get("architecture"), available=available,
                      problem=problem)


def local_models(folder: Path | None = None) -> list[ModelEntry]:
    """The bundled judge, then every ``.gguf`` file and transformers folder in ``folder``
    (default :func:`models_folder`; a missing folder lists the bundled judge only), by name."""
    folder = models_folder() if folder is None else Path(folder)
    out = [_entry(default_model_path(), "bundled", spec=BUNDLED_MODEL,
                  name="SmolLM2-135M-Instruct (bundled)")]
    if folder.is_dir():
        for p in sorted(folder.iterdir(), key=lambda q: q.name.lower()):
            if p.is_file() and p.suffix.lower() == ".gguf":
                out.append(_entry(p.resolve(), "gguf"))
            elif p.is_dir() and (p / "config.json").is_file():
                out.append(_entry(p.resolve(), "transformers"))
    return out


def _canonical(model: str | None) -> str:
    """A run's model as the catalog names it: the bundled name, a resolved path, or as given."""
    if is_bundled(model):
        return BUNDLED_MODEL
    path = Path(str(model)).expanduser()
    return str(path.resolve()) if path.exists() else str(model)


@dataclass(frozen=True)
class _Recorded:
    settings: dict
    rate: float | None


def catalog(runs: Iterable[RecordedRun] = (), folder: Path | None = None) -> list[ModelEntry]:
    """:func:`local_models` with each one's speed measured by ``runs`` (comparisons/s of
    pairwise runs and candidates/s of prompt-scoring runs, any device), matching a run whose
    model path names the same file however it was written."""
    recorded = [_Recorded({**r.settings, "model": _canonical(r.settings.get("model"))}, r.rate)
                for r in runs]
    out = []
    for e in local_models(folder):
        spec = _canonical(e.spec)
        out.append(replace(e, speed=measured_speed(recorded, spec, "comparative"),
                           scoring_speed=measured_speed(recorded, spec, "scoring")))
    return out


def _bytes(n: int | None) -> str:
    """``98.4 MB``, ``1.1 GB`` (decimal units, as file managers show sizes)."""
    if n is None:
        return ""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _parameters(n: int | None) -> str:
    """``134.5M``, ``1.78B`` (as model cards write parameter counts)."""
    if n is None:
        return ""
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.1f}M"


def catalog_frame(entries: Iterable[ModelEntry]) -> pd.DataFrame:
    """The catalog as a table: ``model, kind, size, parameters, context window (tokens),
    comparisons/s, candidates/s, architecture, --model`` (speeds: median of the earlier runs on
    this machine, with their count; empty when never run)."""
    def speed(s: Speed | None) -> str:
        return "" if s is None else f"{s.rate:.2f} ({s.n_runs} run{'s' if s.n_runs > 1 else ''})"
    rows = [{"model": e.name, "kind": e.kind if e.available else f"{e.kind} (not fetched)",
             "size": _bytes(e.size_bytes), "parameters": _parameters(e.parameters),
             "context window (tokens)": e.context_window,
             "comparisons/s measured here": speed(e.speed),
             "candidates/s measured here": speed(e.scoring_speed),
             "architecture": e.architecture or (e.problem or ""), "--model": e.spec}
            for e in entries]
    return pd.DataFrame(rows, columns=["model", "kind", "size", "parameters",
                                       "context window (tokens)", "comparisons/s measured here",
                                       "candidates/s measured here", "architecture", "--model"])


@dataclass(frozen=True)
class Recommendation:
    hardware: str
    hub_id: str
    why: str


#: Judges worth getting, by hardware (hub ids; they need the model hub or a local copy). The
#: reasons: on CPU a forward pass costs ~2.5 ms per token and billion parameters, and a SummEval
#: comparison is ~700 tokens, so above ~2B parameters a full matrix takes days; the paper's and
#: this project's measurements put judges below ~1B near chance (docs/results.md).
RECOMMENDED: tuple[Recommendation, ...] = (
    Recommendation("CPU (laptop or 2-8 cores)", "Qwen/Qwen2.5-1.5B-Instruct",
                   "the smallest judge measured above chance here (Qwen2.5-Coder-1.5B: Spearman "
                   "x100 ~28 on TopicalChat engagingness and naturalness, 67% agreement with "
                   "MT-Bench experts; at chance on SummEval coherence); on a few CPU cores a run "
                   "of many long prompts takes hours (the Run page's plan estimates it from the "
                   "prompts' tokens once a run here has measured the model), so use PoE "
                   "selection (25% of the pairs) for 16-candidate contexts; a Q4_K_M GGUF is "
                   "1.1 GB"),
    Recommendation("CPU (laptop or 2-8 cores)", "HuggingFaceTB/SmolLM2-135M-Instruct",
                   "the bundled judge: small and quick on a CPU, but at chance on every benchmark "
                   "here; for trying the app, not for results (its speed on this machine: the "
                   "measured columns once it has run here)"),
    Recommendation("one consumer GPU (8-24 GB)", "Qwen/Qwen2.5-7B-Instruct",
                   "7B instruction-tuned judges match or beat the paper's Llama2-chat-7B/13B; "
                   "fits in 16 GB in bf16 (or 8 GB at 4 bits through a served vLLM/Ollama judge)"),
    Recommendation("one consumer GPU (8-24 GB)", "google/flan-t5-xl",
                   "the paper's FlanT5-3B (Spearman x100 51.2 on SummEval coherence, the best "
                   "small judge in its Table 1); seq2seq, reads the first decoder step"),
    Recommendation("one H100 (80 GB)", "Qwen/Qwen2.5-32B-Instruct",
                   "a 32B judge in bf16 (65 GB) leaves room for a batch of long prompts; larger "
                   "judges agree more with people (the paper's size trend)"),
    Recommendation("one H100 (80 GB)", "meta-llama/Llama-3.1-70B-Instruct",
                   "70B through a served judge (vLLM with FP8 weights fits one H100): "
                   "--model openai:http://HOST:8000/v1#NAME"),
)

"""Convert a GGUF file to a plain transformers folder one tensor at a time (bounded memory).

Loading a GGUF through ``from_pretrained(gguf_file=...)`` dequantises every tensor into one
state dict, builds the model beside it, and (to save it) a second model: about 2x the fp32 model
at once (14 GB for a 1.1 GB Qwen2.5-1.5B Q4_K_M file whose fp32 model is 7 GB). Here the file is
memory-mapped (``gguf.GGUFReader``), each tensor is dequantised a block of rows at a time, given
transformers' own name and layout (``transformers.modeling_gguf_pytorch_utils``: the GGUF -> HF
name map built from a weightless model, and the per-architecture tensor processors, e.g. the
llama-family q/k row permutation), and written to a safetensors shard that is flushed once it
holds ``shard_bytes``. Peak memory is one shard plus the largest tensor; the values are the ones
``from_pretrained`` computes (the same dequantisation and processors, cast to fp32).

Architectures whose tensors transformers' newer GGUF loader converts (``GGUF_ARCHS``) or whose
processor combines several GGUF tensors into one (mixture-of-experts) are converted through
``from_pretrained`` as before (:func:`convert_whole`). This module must never score prompts.
"""

from __future__ import annotations

import json
import struct
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

import numpy as np
import torch

#: A shard is written once it holds this many bytes (a single larger tensor gets a shard of its own).
SHARD_BYTES = 512 * 2**20
#: Quantised tensors are dequantised this many values at a time (numpy's block dequantisers make
#: several temporaries of the block's size).
DEQUANT_VALUES = 16 * 2**20

_SAFETENSORS_DTYPE = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}


def write_safetensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    """A safetensors file written straight from the tensors' memory (no serialised copy).

    Format: 8-byte little-endian header length, the JSON header (dtype, shape, byte offsets per
    tensor), then the tensors' bytes in header order; the safetensors reader checks every offset.
    """
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    order = sorted(tensors)
    for name in order:
        t = tensors[name]
        n = t.numel() * t.element_size()
        header[name] = {"dtype": _SAFETENSORS_DTYPE[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + n]}
        offset += n
    blob = json.dumps(header, separators=(",", ":")).encode("utf-8")
    blob += b" " * (-len(blob) % 8)  # the data section starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for name in order:
            t = tensors[name].contiguous()
            f.write(memoryview(t.view(torch.uint8).reshape(-1).numpy()))


def dequantize_rows(data: np.ndarray, qtype) -> np.ndarray:
    """``gguf.dequantize`` of a tensor's data, a block of rows at a time (fp32 out)."""
    from gguf import GGMLQuantizationType, dequantize

    if qtype in (GGMLQuantizationType.F32, GGMLQuantizationType.F16) or data.ndim < 2:
        out = dequantize(data, qtype)
        return np.array(out, dtype=np.float32) if not out.flags.writeable else out.astype(np.float32, copy=False)
    rows = data.shape[0]
    first = dequantize(data[:1], qtype)
    out = np.empty((rows, *first.shape[1:]), dtype=np.float32)
    step = max(1, DEQUANT_VALUES // max(int(np.prod(first.shape[1:])), 1))
    for lo in range(0, rows, step):
        out[lo:lo + step] = dequantize(data[lo:lo + step], qtype)
    return out


class _ShardWriter:
    """Collects tensors and writes ``model-XXXXX.safetensors`` shards of about ``limit`` bytes."""

    def __init__(self, folder: Path, limit: int):
        self.folder, self.limit = folder, limit
        self.pending: dict[str, torch.Tensor] = {}
        self.size = 0
        self.files: list[tuple[str, list[str]]] = []
        self.total = 0

    def add(self, name: str, tensor: torch.Tensor) -> None:
        n = tensor.numel() * tensor.element_size()
        if self.pending and self.size + n > self.limit:
            self.flush()
        self.pending[name] = tensor
        self.size += n
        self.total += n

    def flush(self) -> None:
        if not self.pending:
            return
        name = f"model-{len(self.files) + 1:05d}.safetensors"
        write_safetensors(self.folder / name, self.pending)
        self.files.append((name, list(self.pending)))
        self.pending, self.size = {}, 0

    def finish(self) -> None:
        """The last shard, then the index transformers reads a sharded checkpoint through."""
        self.flush()
        if len(self.files) == 1:
            (self.folder / self.files[0][0]).rename(self.folder / "model.safetensors")
            return
        weight_map = {t: f for f, names in self.files for t in names}
        (self.folder / "model.safetensors.index.json").write_text(json.dumps(
            {"metadata": {"total_size": self.total}, "weight_map": dict(sorted(weight_map.items()))},
            indent=2), encoding="utf-8")


def streams(architecture: str) -> bool:
    """Whether :func:`convert_streaming` handles this GGUF architecture (one GGUF tensor -> one
    model tensor, on transformers' per-tensor path)."""
    from transformers.integrations.gguf.utils import is_gguf_arch_supported
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES
    # These processors assemble one model tensor from several GGUF tensors (expert stacks).
    combines = {"qwen2moe", "qwen3moe", "gpt_oss", "gpt-oss", "minimax-m2"}
    return (architecture in GGUF_SUPPORTED_ARCHITECTURES and not is_gguf_arch_supported(architecture)
            and architecture not in combines)


#: The ``struct`` format of each fixed-size GGUF value type (``gguf.GGUFValueType``: UINT8 ...
#: FLOAT64), and so its size in bytes.
_GGUF_SCALAR_FORMAT = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?",
                       10: "Q", 11: "q", 12: "d"}
_GGUF_SCALAR_BYTES = {vtype: struct.calcsize("<" + fmt) for vtype, fmt in _GGUF_SCALAR_FORMAT.items()}
_GGUF_STRING, _GGUF_ARRAY = 8, 9


def gguf_metadata_value(gguf: Path, key: str) -> str | int | float | bool | None:
    """One scalar metadata value of a GGUF file (None when the file has no such key), read from
    the header alone.

    ``gguf.GGUFReader`` parses every metadata field (the vocabulary and the merges: ~2.5 s for the
    bundled 100 MB SmolLM2) and maps every tensor; here the key-value pairs are walked in file
    order (GGUF v2/v3: magic, version, tensor count, key-value count, then each pair as a
    length-prefixed key, a uint32 value type and the value) and the walk stops at ``key``.
    llama.cpp writes ``general.architecture`` first, so reading it costs a few bytes.

    Raises
    ------
    ValueError
        Not a GGUF file, an unsupported version, or a header that runs past the file's end.
    """
    with open(gguf, "rb") as f:
        size = f.seek(0, 2)
        f.seek(0)

        def take(n: int) -> bytes:
            if n < 0 or f.tell() + n > size:
                raise ValueError(f"{gguf}: GGUF header runs past the end of the file")
            return f.read(n)

        if take(4) != b"GGUF":
            raise ValueError(f"{gguf}: not a GGUF file (no GGUF magic)")
        (version,) = struct.unpack("<I", take(4))
        order = "<"
        if version & 0xFFFF == 0:  # a big-endian file (as gguf.GGUFReader detects it)
            order, version = ">", struct.unpack(">I", struct.pack("<I", version))[0]
        if version not in (2, 3):
            raise ValueError(f"{gguf}: GGUF version {version} is not supported (2 or 3)")

        def u32() -> int:
            return struct.unpack(order + "I", take(4))[0]

        def u64() -> int:
            return struct.unpack(order + "Q", take(8))[0]

        u64()  # the tensor count
        for _ in range(u64()):
            name = take(u64()).decode("utf-8", errors="replace")
            vtype = u32()
            if name == key:
                if vtype == _GGUF_STRING:
                    return take(u64()).decode("utf-8")
                if vtype in _GGUF_SCALAR_FORMAT:
                    return struct.unpack(order + _GGUF_SCALAR_FORMAT[vtype],
                                         take(_GGUF_SCALAR_BYTES[vtype]))[0]
                raise ValueError(f"{gguf}: metadata {key} is an array, not one value")
            # skip the value
            if vtype == _GGUF_STRING:
                take(u64())
            elif vtype in _GGUF_SCALAR_BYTES:
                take(_GGUF_SCALAR_BYTES[vtype])
            elif vtype == _GGUF_ARRAY:
                etype, count = u32(), u64()
                if etype in _GGUF_SCALAR_BYTES:
                    take(count * _GGUF_SCALAR_BYTES[etype])
                elif etype == _GGUF_STRING:  # each string's length in turn (a vocabulary)
                    for _ in range(count):
                        take(u64())
                else:
                    raise ValueError(f"{gguf}: metadata {name}: array of type {etype} not read")
            else:
                raise ValueError(f"{gguf}: metadata {name}: unknown value type {vtype}")
    return None


def gguf_architecture(gguf: Path) -> str:
    """The file's ``general.architecture`` (``llama``, ``qwen2``...), from its header alone."""
    arch = gguf_metadata_value(gguf, "general.architecture")
    if not isinstance(arch, str):
        raise ValueError(f"{gguf}: no general.architecture in its metadata")
    return arch


#: Held while ``gguf.GGUFReader`` and ``gguf.get_tensor_name_map`` are swapped
#: (:func:`_parsed_once`): the swap is process-wide,
#: so two conversions in two threads (two app sessions) take turns instead of restoring each
#: other's swap out of order. Reentrant: a conversion inside a conversion in one thread nests.
_READER_SWAP = threading.RLock()


@contextmanager
def _parsed_once(gguf: Path):
    """Within the block, every ``gguf.GGUFReader`` of ``gguf`` (transformers' tokenizer and
    config loaders and this module each make one) is the same reader, parsed once: a reader parses
    every metadata field, the vocabulary and the merges included (~2.5 s of CPU for the bundled
    135M judge, as much for a 7B one), and holds the file read-only (memory-mapped), so sharing
    it changes nothing it reads. Other files and modes are read as usual.

    Within the block, ``gguf.get_tensor_name_map(arch, n_blocks)`` also builds each name map
    once: transformers' ``get_gguf_hf_weights_map`` walks the model's modules and asks for the
    map at every one (about 400 times for the bundled judge, 13 ms each: 5 s of CPU), and a map
    is only read once built."""
    import gguf as gguf_module

    target = Path(gguf).resolve()
    parsed: list = []
    maps: dict = {}

    def reader(path, mode="r"):
        if mode != "r" or Path(path).resolve() != target:
            return real(path, mode)
        if not parsed:
            parsed.append(real(path, mode))
        return parsed[0]

    def name_map(arch, n_blocks):
        if (arch, n_blocks) not in maps:
            maps[arch, n_blocks] = real_map(arch, n_blocks)
        return maps[arch, n_blocks]

    with _READER_SWAP:
        # read under the lock: what the block restores
        real, real_map = gguf_module.GGUFReader, gguf_module.get_tensor_name_map
        gguf_module.GGUFReader, gguf_module.get_tensor_name_map = reader, name_map
        try:
            yield
        finally:
            gguf_module.GGUFReader, gguf_module.get_tensor_name_map = real, real_map


def convert_streaming(gguf: Path, out: Path, auto_class: Callable,
                      shard_bytes: int = SHARD_BYTES) -> None:
    """Write ``gguf``'s config, generation config, tokenizer and fp32 weights into ``out``,
    the file's metadata parsed once (:func:`_parsed_once`) for the tokenizer, the config and
    the tensors.

    Raises
    ------
    ValueError
        A tensor transformers' name map has no place for, or a model tensor the file lacks.
    """
    with _parsed_once(gguf):
        _convert_streaming(gguf, out, auto_class, shard_bytes)


def _convert_streaming(gguf: Path, out: Path, auto_class: Callable, shard_bytes: int) -> None:
    import gguf as gguf_module
    from transformers import AutoConfig, AutoTokenizer, GenerationConfig
    from transformers.modeling_gguf_pytorch_utils import (TENSOR_PROCESSORS, TensorProcessor,
                                                          get_gguf_hf_weights_map,
                                                          load_gguf_checkpoint, read_field)

    kw = dict(gguf_file=gguf.name)
    AutoTokenizer.from_pretrained(gguf.parent, **kw).save_pretrained(out)
    config = AutoConfig.from_pretrained(gguf.parent, **kw)
    cls = auto_class(config)
    with torch.device("meta"):  # the parameter names and shapes, no memory
        skeleton = cls.from_config(config, dtype=torch.float32)
    config = skeleton.config
    config.architectures = [type(skeleton).__name__]
    config.dtype = torch.float32
    config.save_pretrained(out)
    if skeleton.can_generate():
        GenerationConfig.from_model_config(config).save_pretrained(out)

    reader = gguf_module.GGUFReader(gguf)
    architecture = read_field(reader, "general.architecture")[0]
    # The processor reads the config as transformers' GGUF loader hands it over (a dict).
    processor = TENSOR_PROCESSORS.get(architecture, TensorProcessor)(
        config=load_gguf_checkpoint(str(gguf), return_tensors=False)["config"])
    name_map = get_gguf_hf_weights_map(skeleton, processor)
    expected = {k: tuple(v.shape) for k, v in skeleton.state_dict().items()}
    tied = {k for k in expected if k in (getattr(skeleton, "_tied_weights_keys", None) or {})} \
        if getattr(config, "tie_word_embeddings", False) else set()
    del skeleton

    writer = _ShardWriter(out, shard_bytes)
    written: set[str] = set()
    for tensor in reader.tensors:
        weights = dequantize_rows(tensor.data, tensor.tensor_type)
        # A processor may place a tensor itself under its model name (GPT-2's output head).
        placed: dict = {"tensors": {}}
        result = processor.process(weights=weights, name=tensor.name, tensor_key_mapping=name_map,
                                   parsed_parameters=placed)
        found = dict(placed["tensors"])
        if result.name in name_map:  # transformers' loader skips the others too (rope tables)
            found[name_map[result.name]] = torch.from_numpy(
                np.ascontiguousarray(result.weights, dtype=np.float32))
        for hf_name, t in found.items():
            t = t.to(torch.float32)
            if hf_name not in expected or tuple(t.shape) != expected[hf_name]:
                raise ValueError(f"tensor {tensor.name} -> {hf_name} {tuple(t.shape)} does not fit "
                                 f"the model ({expected.get(hf_name)})")
            writer.add(hf_name, t)
            written.add(hf_name)
        del weights, result, found, placed
    missing = sorted(set(expected) - written - tied)
    if missing:
        raise ValueError(f"the file has no tensor for {len(missing)} model weights, e.g. {missing[0]}")
    writer.finish()


def narrow_folder(src: Path, out: Path, dtype: torch.dtype, shard_bytes: int = SHARD_BYTES) -> None:
    """Write ``src`` (a converted fp32 folder) into ``out`` with its floating tensors cast to
    ``dtype``, one source shard open at a time.

    ``from_pretrained(dtype=bf16)`` of an fp32 checkpoint maps every shard while it casts, so the
    fp32 file pages and the bf16 copy are resident together (10.6 GB for a 7.1 GB model); a
    checkpoint already in the load dtype is mapped as it is (the weights are its file pages). The
    values are the same rounding ``from_pretrained`` does (round to nearest even).
    """
    from safetensors import safe_open

    for f in src.iterdir():
        if f.is_file() and not f.name.endswith(".safetensors") and f.name != "model.safetensors.index.json":
            (out / f.name).write_bytes(f.read_bytes())
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    config["dtype"] = str(dtype).replace("torch.", "")
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    writer = _ShardWriter(out, shard_bytes)
    for shard in sorted(src.glob("*.safetensors")):
        with safe_open(str(shard), framework="pt") as f:
            for name in f.keys():
                t = f.get_tensor(name)
                writer.add(name, t.to(dtype) if t.is_floating_point() else t.clone())
                del t
    writer.finish()


def convert_whole(gguf: Path, out: Path, auto_class: Callable) -> None:
    """The reference conversion through ``from_pretrained(gguf_file=...)``: the whole model twice in
    memory (save_pretrained refuses a GGUF-loaded model, so a fresh model built from its config
    without the quantisation config gets the dequantised weights)."""
    from transformers import AutoConfig, AutoTokenizer

    kw = dict(gguf_file=gguf.name)
    with _parsed_once(gguf):
        tok = AutoTokenizer.from_pretrained(gguf.parent, **kw)
        config = AutoConfig.from_pretrained(gguf.parent, **kw)
        cls = auto_class(config)
        loaded = cls.from_pretrained(gguf.parent, dtype=torch.float32, **kw)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh = cls.from_config(config, dtype=torch.float32)
    fresh.load_state_dict(loaded.state_dict(), strict=True)
    del loaded
    fresh.save_pretrained(out)
    tok.save_pretrained(out)

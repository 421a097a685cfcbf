"""A GGUF file's metadata read from its header alone (``judges.conversion.gguf_metadata_value``,
what the first-use conversion asks for the architecture), checked against ``gguf.GGUFReader``,
which parses the whole file: files written by ``gguf.GGUFWriter`` (llama.cpp's own writer), with
the key before and after a vocabulary-sized array of strings, in either byte order, and the
bundled model."""

from __future__ import annotations

import pytest

gguf = pytest.importorskip("gguf")

from compassess_core.judges.conversion import gguf_architecture, gguf_metadata_value  # noqa: E402


def _read_field(reader, key):
    from transformers.modeling_gguf_pytorch_utils import read_field
    return read_field(reader, key)


def _write(path, endian, architecture_last: bool):
    w = gguf.GGUFWriter(path, "qwen2", endianess=endian)
    w.add_array("tokenizer.ggml.tokens", [f"tok{i}" for i in range(5000)])
    w.add_array("tokenizer.ggml.scores", [float(i) for i in range(5000)])
    w.add_array("tokenizer.ggml.token_type", [1] * 5000)
    w.add_uint32("qwen2.context_length", 32768)
    w.add_float32("qwen2.rope.freq_base", 1000000.0)
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    w.add_uint64("general.parameter_count", 123456789012)
    w.add_string("general.name", "Tiny Qwen")
    if architecture_last:   # the writer puts it first, as llama.cpp does; another tool may not
        kv = w.kv_data[0]
        kv["general.architecture"] = kv.pop("general.architecture")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.mark.parametrize("architecture_last", [False, True], ids=["first", "after-arrays"])
@pytest.mark.parametrize("endian", ["LITTLE", "BIG"])
def test_header_values_are_what_the_full_reader_reads(tmp_path, endian, architecture_last):
    path = tmp_path / "tiny.gguf"
    _write(path, getattr(gguf.GGUFEndian, endian), architecture_last)
    reader = gguf.GGUFReader(path)
    assert gguf_architecture(path) == "qwen2"
    for key in ("general.architecture", "qwen2.context_length", "qwen2.rope.freq_base",
                "tokenizer.ggml.add_bos_token", "general.parameter_count", "general.name"):
        assert gguf_metadata_value(path, key) == _read_field(reader, key)[0], key
    assert gguf_metadata_value(path, "general.no_such_key") is None
    with pytest.raises(ValueError, match="array"):
        gguf_metadata_value(path, "tokenizer.ggml.tokens")


def test_what_is_not_a_gguf_header_is_named(tmp_path):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"PK\x03\x04 a zip file")
    with pytest.raises(ValueError, match="not a GGUF file"):
        gguf_architecture(bad)
    cut = tmp_path / "cut.gguf"
    _write(cut, gguf.GGUFEndian.LITTLE, architecture_last=True)
    cut.write_bytes(cut.read_bytes()[:2000])   # inside the vocabulary, before the key
    with pytest.raises(ValueError, match="past the end"):
        gguf_architecture(cut)


def test_the_bundled_model_header(bundled_model):
    reader = gguf.GGUFReader(bundled_model)
    assert gguf_architecture(bundled_model) == _read_field(reader, "general.architecture")[0] == "llama"
    for key in ("llama.context_length", "tokenizer.ggml.eos_token_id", "general.name"):
        assert gguf_metadata_value(bundled_model, key) == _read_field(reader, key)[0], key


def test_the_shared_reader_swap_is_one_conversion_at_a_time_and_undone(tmp_path, monkeypatch):
    """The conversion swaps ``gguf.GGUFReader`` process-wide for one that parses its file once:
    while one conversion holds the swap another thread cannot take it (interleaved, the second to
    leave would restore the first's stand-in for good), other files are read as usual, and the
    real reader is back afterwards."""
    import threading

    import gguf

    from compassess_core.judges import conversion

    class FakeReader:   # a fake: records what would have been parsed
        made: list = []

        def __init__(self, path, mode="r"):
            FakeReader.made.append(str(path))

    monkeypatch.setattr(gguf, "GGUFReader", FakeReader)
    a, b = tmp_path / "a.gguf", tmp_path / "b.gguf"
    taken_elsewhere = []
    with conversion._parsed_once(a):
        assert gguf.GGUFReader(a) is gguf.GGUFReader(a)   # one parse of the converted file
        gguf.GGUFReader(b)                                 # another file: its own parse
        other = threading.Thread(
            target=lambda: taken_elsewhere.append(conversion._READER_SWAP.acquire(blocking=False)))
        other.start()
        other.join()
    assert taken_elsewhere == [False]
    assert gguf.GGUFReader is FakeReader
    assert FakeReader.made == [str(a), str(b)]

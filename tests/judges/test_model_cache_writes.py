"""A converted model folder is written whole or not at all (``judges.loading._written_whole``,
what the GGUF conversion and its narrowed copies are built through)."""

from __future__ import annotations

import stat

import pytest

from compassess_core.judges.loading import _written_whole


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_finished_block_becomes_the_folder_readable_by_all(tmp_path):
    out = tmp_path / "abc"
    with _written_whole(out, "abc") as tmp:
        assert tmp.parent == tmp_path and tmp != out and not out.exists()
        (tmp / "model.safetensors").write_bytes(b"weights")
        (tmp / "done").write_text("{}")
    assert sorted(p.name for p in out.iterdir()) == ["done", "model.safetensors"]
    assert _mode(out) == 0o755 and {_mode(p) for p in out.iterdir()} == {0o644}
    assert list(tmp_path.iterdir()) == [out]


def test_a_failed_block_leaves_nothing_behind(tmp_path):
    out = tmp_path / "abc"
    with pytest.raises(RuntimeError, match="conversion failed"):
        with _written_whole(out, "abc") as tmp:
            (tmp / "model.safetensors").write_bytes(b"half")
            raise RuntimeError("conversion failed")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_another_process_wrote_first_is_kept(tmp_path):
    out = tmp_path / "abc"
    out.mkdir()
    (out / "done").write_text("theirs")
    with _written_whole(out, "abc") as tmp:
        (tmp / "done").write_text("ours")
    assert (out / "done").read_text() == "theirs"
    assert list(tmp_path.iterdir()) == [out]

"""Every benchmark script imports with the engine as it is now: a name moved or renamed in the
engine breaks the measurement scripts at once here, not months later when someone measures.
Nothing is run (a benchmark's work starts in its ``main``)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts)
                 for p in (ROOT / "benchmarks").rglob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("module", MODULES)
def test_the_benchmark_imports(module, monkeypatch):
    monkeypatch.setattr("sys.argv", [module])
    importlib.import_module(module)


def test_judge_throughput_names_a_missing_data_file_and_an_unknown_dataset(capsys):
    from benchmarks import judge_throughput as jt
    assert jt.main(["--data", str(ROOT / "no-such.csv")]) == 2
    assert "--data" in capsys.readouterr().err
    assert jt.main(["--datasets", "nope"]) == 2
    assert "unknown 'nope'" in capsys.readouterr().err


@pytest.mark.model
def test_judge_throughput_runs_on_a_clone_without_the_data_folder(tmp_path, capsys, bundled_model):
    """Without ``../shared/data`` (here: an empty --data-dir) it judges the bundled sample; a
    tiny random Llama keeps it short (the tokenizer is the bundled judge's)."""
    from benchmarks import judge_throughput as jt
    assert jt.main(["--random-init", "tiny-llama", "--data-dir", str(tmp_path), "--contexts",
                    "1", "--candidates", "3", "--naive-per-context", "2"]) == 0
    out = capsys.readouterr().out
    assert "judging the bundled sample assets/sample_summeval.csv" in out
    assert "| tiny-llama | sample | float32 | 6 |" in out

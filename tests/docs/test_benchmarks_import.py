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


def test_suite_timeline_splits_the_machines_cpu_among_the_tests_running():
    """Hand-worked: readings at 0, 1, 2, 3 s with 2, 1 and 0.5 busy CPU seconds between them;
    test a runs 0-2 s, b 1-3 s, c 0.5-1 s. First second: a ran 1 s and c 0.5 s, so a gets 2/3 of
    2, c 1/3; second: a and b 1 s each, half of 1 each; third: b alone, 0.5."""
    import numpy as np

    from benchmarks.suite_timeline import busy_cpu_seconds, machine_share
    times, busy = busy_cpu_seconds(["0.0 cpu 100 0 50 800 10 0 0 0 0 0",
                                    "1.0 cpu 250 0 80 820 10 5 5 0 0 0"], ticks_per_s=100)
    # busy = user + nice + system + irq + softirq + steal: 150 ticks, then 340
    assert times.tolist() == [0.0, 1.0] and busy.tolist() == [1.9]
    share = machine_share(np.array([0.0, 1.0, 0.5]), np.array([2.0, 3.0, 1.0]),
                          np.array([0.0, 1.0, 2.0, 3.0]), np.array([2.0, 1.0, 0.5]))
    assert np.allclose(share, [2 * 2 / 3 + 0.5, 0.5 + 0.5, 2 / 3])
    assert np.isclose(share.sum(), 3.5)   # every busy second a test ran in is counted once


def test_campaign_queue_checks_the_engine_against_its_baseline(capsys):
    """The script compares every result with its baseline's before timing: a tiny campaign runs
    through (0: same results)."""
    from benchmarks import campaign_queue
    assert campaign_queue.main(["--contexts", "4", "--candidates", "4", "--annotators", "5",
                                "--repeat", "1"]) == 0
    assert "agreement_of" in capsys.readouterr().out


def test_agreement_tables_checks_the_engine_against_its_baseline(capsys):
    """The script checks the tables and a report against its baseline before timing: a tiny
    data set runs through (an inequality would raise)."""
    from benchmarks import agreement_tables
    agreement_tables.main(["--contexts", "3", "--candidates", "4", "--repeat", "1"])
    assert "llm_vs_human" in capsys.readouterr().out

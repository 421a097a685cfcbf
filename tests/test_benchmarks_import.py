"""Every benchmark script imports with the engine as it is now: a name moved or renamed in the
engine breaks the measurement scripts at once here, not months later when someone measures.
Nothing is run (a benchmark's work starts in its ``main``)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts)
                 for p in (ROOT / "benchmarks").rglob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("module", MODULES)
def test_the_benchmark_imports(module, monkeypatch):
    monkeypatch.setattr("sys.argv", [module])
    importlib.import_module(module)

"""The API package has no import circle: its objects (runs, panels, campaigns, tunings, jobs)
get the store handle they need (``api.handle.StoreHandle``) instead of importing ``store``, and
``store`` imports them, never the reverse. Every import counts, at the top of a module, inside
a function or under ``TYPE_CHECKING``: the imports are read from the source with ``ast``, and
the graph is sorted by ``graphlib`` (a circle is its ``CycleError``)."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

API = Path(__file__).resolve().parents[2] / "compassess_core" / "api"


def api_imports(folder: Path = API) -> dict[str, set[str]]:
    """Each module of the package and the modules of the same package it imports."""
    modules = {p.stem for p in folder.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:  # from .store import Store
                    found.add(node.module.split(".")[0])
                else:            # from . import store
                    found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                    and node.module.startswith("compassess_core.api."):
                found.add(node.module.split(".")[2])
            elif isinstance(node, ast.Import):
                found.update(a.name.split(".")[2] for a in node.names
                             if a.name.startswith("compassess_core.api."))
        graph[path.stem] = {m for m in found if m in modules and m != path.stem}
    return graph


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        return list(e.args[1])
    return None


def test_the_api_package_has_no_import_circle():
    graph = api_imports()
    assert {"store", "run", "panel", "campaign", "tunings", "tuning", "verdicts",
            "judges_board", "jobs", "handle"} <= set(graph)
    assert cycle(graph) is None, f"import circle in compassess_core/api: {cycle(graph)}"


def test_objects_reach_their_store_through_the_handle_not_the_store_module():
    graph = api_imports()
    importers_of_store = sorted(m for m, deps in graph.items() if "store" in deps)
    assert importers_of_store == ["__init__"]
    assert graph["handle"] == set()   # the bottom of the package


@pytest.mark.parametrize("source, expected", [
    ("from .store import Store", {"store"}),
    ("if TYPE_CHECKING:\n    from .store import Store", {"store"}),
    ("def f():\n    from . import store", {"store"}),
    ("import compassess_core.api.store", {"store"}),
    ("from ..runs.executor import Reporter", set()),
])
def test_the_reader_sees_every_kind_of_import(tmp_path, source, expected):
    (tmp_path / "store.py").write_text("")
    (tmp_path / "run.py").write_text(source)
    assert api_imports(tmp_path)["run"] == expected


def test_a_circle_is_found():
    assert cycle({"a": {"b"}, "b": {"a"}}) is not None
    assert cycle({"a": {"b"}, "b": set()}) is None

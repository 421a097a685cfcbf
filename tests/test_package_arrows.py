"""The engine's packages import each other one way only, and each says its rule.

``compassess_core`` is split by concern (``data``, ``judges``, ``stats``, ``runs``, ``people``,
``report``; the wiring: ``api``, ``cli`` and the ``worker`` entry point, which imports the API
and is never imported by it: the API starts a worker as a process, ``python -m
compassess_core.worker``, through ``api.background``). Every import
between them is read from the source (``ast``, no import runs) and held against ``ALLOWED``: a
new arrow is a decision, made here in one line, not an accident. Imports only a type checker
sees (under ``if TYPE_CHECKING:``) are left out: they cost nothing at run time.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "compassess_core"

#: The shared vocabulary: the few modules that stay directly under ``compassess_core``.
VOCABULARY = {"types", "errors", "limits", "report_text"}
#: Entry points that stay directly under ``compassess_core`` (``python -m compassess_core.worker``).
ENTRY_POINTS = {"__init__", "__main__", "worker"}
ENGINE = {"data", "judges", "stats", "runs", "people", "report"}
WIRING = {"api", "cli", "worker", "__init__", "__main__"}

#: What each part may import besides the vocabulary (and itself).
ALLOWED: dict[str, set[str]] = {
    "vocabulary": set(),
    "data": set(),
    "judges": set(),
    "stats": set(),
    "runs": {"data", "judges", "stats"},
    "people": {"stats"},
    "report": {"data", "judges", "stats", "runs"},
    "worker": ENGINE | {"api"},
    "api": ENGINE,          # never the worker: the worker imports the API, not the reverse
    "cli": ENGINE | {"api", "worker"},
    "__init__": {"api"},
    "__main__": {"cli"},
}


def part_of(module: str) -> str:
    """``compassess_core.stats.ranking`` -> ``stats``; a vocabulary module -> ``vocabulary``."""
    parts = module.split(".")
    head = parts[1] if len(parts) > 1 else "__init__"
    return "vocabulary" if head in VOCABULARY else head


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                for sub in ast.walk(inner):
                    skip.add(id(sub))
    return skip


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every run-time import of ``compassess_core`` or ``db`` or streamlit."""
    tree = ast.parse(path.read_text())
    skip = _type_checking_only(tree)
    own = module_name(path)
    package = own if path.name == "__init__.py" else own.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.append((node.lineno, mod))
            found += [(node.lineno, f"{mod}.{a.name}") for a in node.names
                      if (PKG.parent / f"{mod}.{a.name}".replace(".", "/")).is_dir()
                      or (PKG.parent / (f"{mod}.{a.name}".replace(".", "/") + ".py")).is_file()]
    return found


SOURCES = sorted(PKG.rglob("*.py"))


def test_only_entry_points_and_the_vocabulary_sit_directly_in_the_package():
    loose = {p.stem for p in PKG.glob("*.py")} - VOCABULARY - ENTRY_POINTS
    assert not loose, f"modules directly under compassess_core/ that belong in a package: {sorted(loose)}"
    assert len(VOCABULARY) <= 5


@pytest.mark.parametrize("package", sorted(p.name for p in PKG.iterdir()
                                           if p.is_dir() and (p / "__init__.py").exists()))
def test_every_package_says_what_it_is_for_and_its_rule(package):
    doc = ast.get_docstring(ast.parse((PKG / package / "__init__.py").read_text())) or ""
    assert len(doc) > 60, f"compassess_core/{package}/__init__.py needs a docstring saying what it is for"
    if package in ENGINE:
        assert "never" in doc.lower(), f"compassess_core/{package}: the docstring states what it must never import"


def test_every_arrow_between_packages_is_allowed():
    wrong = []
    for path in SOURCES:
        src = part_of(module_name(path))
        for line, target in imports_of(path):
            if not target.startswith("compassess_core.") :
                continue   # the package itself: ``from .. import __version__``
            dst = part_of(target)
            if dst in (src, "vocabulary") or dst in ALLOWED.get(src, set()):
                continue
            wrong.append(f"{path.relative_to(PKG.parent)}:{line} ({src}) imports {target} ({dst})")
    assert not wrong, "arrows the layout does not allow:\n" + "\n".join(wrong)


def test_the_engine_never_imports_streamlit_or_the_store():
    wrong = []
    for path in SOURCES:
        if part_of(module_name(path)) in WIRING:
            continue
        for line, target in imports_of(path):
            if target.split(".")[0] in {"streamlit", "db"}:
                wrong.append(f"{path.relative_to(PKG.parent)}:{line} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_the_allowed_arrows_have_no_circle():
    # a circle in ALLOWED would let two packages lean on each other again
    seen: dict[str, int] = {}

    def visit(node: str, stack: tuple[str, ...]) -> None:
        assert node not in stack, f"circle in ALLOWED: {' -> '.join(stack + (node,))}"
        for nxt in ALLOWED.get(node, set()) - {"__init__"}:
            visit(nxt, stack + (node,))

    for part in ALLOWED:
        visit(part, ())
    assert seen == {}


def test_the_imports_between_parts_have_no_circle():
    """What the source imports, part to part (the wiring included: ``worker`` -> ``api`` but
    never ``api`` -> ``worker``), sorts one way: ``graphlib`` finds no circle."""
    import graphlib
    graph: dict[str, set[str]] = {}
    for path in SOURCES:
        src = part_of(module_name(path))
        graph.setdefault(src, set()).update(
            part_of(target) for _, target in imports_of(path)
            if target.startswith("compassess_core.") and part_of(target) != src)
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        raise AssertionError(f"import circle between parts: {' -> '.join(e.args[1])}") from None
    assert "api" in graph["worker"] and "worker" not in graph["api"]


def test_the_worker_is_the_thin_entry_point():
    """``worker.py`` parses a job's command line and hands it to its kind: the run executor
    lives in ``runs.executor``, the starting of worker processes in ``api.background``."""
    tree = ast.parse((PKG / "worker.py").read_text())
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert {"main", "build_parser", "exit_code"} <= defined
    assert not defined & {"execute_runs", "execute_group", "ConsoleReporter", "start_job",
                          "load_run_judge"}

"""One way in: the app's pages, ``compassess`` and the Python API read the same numbers through
the same API calls, and the URL of a page reproduces what it shows.

The run is the hand-made one of ``tests/app/test_app_pages.py`` (comparisons written into a real
SQLite store with chosen probabilities), so no model is loaded.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from compassess_core import api
from compassess_core.cli import main
from tests.app.test_app_pages import (APP, app_env, metric, open_page, seed_run,  # noqa: F401 - fixture
                                  texts)

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]
#: Engine modules that compute numbers: a page gets those numbers from ``api.Run`` instead.
STATISTICS_MODULES = ("analysis", "bias", "metrics", "length_bias", "compare", "efficient",
                      "calibration import", "fusion import")


def test_pages_reach_the_data_only_through_the_python_api():
    offending = []
    for path in PAGES:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if (re.search(r"\bstore\(\)\.", line) or re.match(r"\s*(from db[ .]|import db\b)", line)
                    or re.match(r"\s*from compassess_core\.(analysis|bias|metrics|length_bias|"
                                r"compare|efficient) import", line)
                    or re.match(r"\s*from compassess_core import .*\b(analysis|bias|metrics)\b",
                                line)):
                offending.append(f"{path.name}:{number}: {line.strip()}")
    assert not offending, "\n".join(offending)


#: The modules of ``compassess_core`` a page may call: the Python API, its errors and its
#: vocabulary of types. Constants of other modules (names in capitals, classes) are vocabulary.
PAGE_MODULES = {"api", "errors", "types"}


def _engine_calls(path: Path) -> list[str]:
    """Calls in ``path`` of functions of engine modules other than :data:`PAGE_MODULES`, found
    in its syntax tree: ``module.function()`` of an imported module, or ``function()`` imported
    from one (capitalised names are classes and constants: vocabulary)."""
    import ast
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules, functions = {}, {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("compassess_core"):
            parts = node.module.split(".")
            for alias in node.names:
                name = alias.asname or alias.name
                if len(parts) == 1 and alias.name not in PAGE_MODULES:
                    modules[name] = alias.name
                elif len(parts) > 1 and parts[1] not in PAGE_MODULES:
                    functions[name] = f"{parts[1]}.{alias.name}"
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        if isinstance(fn, ast.Name) and fn.id in functions and fn.id[:1].islower():
            found.append(f"{path.name}:{node.lineno} {functions[fn.id]}()")
        elif (isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name)
              and fn.value.id in modules and fn.attr[:1].islower()):
            found.append(f"{path.name}:{node.lineno} {modules[fn.value.id]}.{fn.attr}()")
    return found


def test_pages_call_the_engine_only_through_the_api():
    """Pages are views over API verbs: no call from a page or app.py into an engine module other
    than ``api``, ``errors`` and ``types``."""
    found = [call for path in PAGES for call in _engine_calls(path)]
    assert not found, "\n".join(found)


def _captured_page_export(monkeypatch, fmt: str) -> dict[str, tuple[bytes, bytes | None]]:
    """The files the Export page offers at its defaults (Bradley-Terry, balanced tau*, 95%
    intervals), as ``export.table_bytes`` (the API's one file writer) produced them."""
    from compassess_core.data import export
    captured: dict[str, tuple[bytes, bytes | None]] = {}
    real = export.table_bytes

    def spy(df, fmt_, *, what, metadata):
        captured[what] = real(df, fmt_, what=what, metadata=metadata)
        return captured[what]
    monkeypatch.setattr(export, "table_bytes", spy)
    at = open_page("export")
    at.radio(key="export_format").set_value(fmt).run()
    assert not at.exception, at.exception
    return captured


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_export_page_cli_and_api_write_the_same_bytes(app_env, monkeypatch, tmp_path, fmt):
    seed_run(app_env)
    page = _captured_page_export(monkeypatch, fmt)
    run = api.open_store(app_env).get_run("hand-run")
    for what in ("rankings", "comparisons"):
        exported = run.export_bytes(what, fmt, method="bradley-terry", debias="balanced", ci=True)
        out = tmp_path / f"{what}.{fmt}"
        assert main(["export", "--run", "hand-run", "--what", what, "--format", fmt,
                     "--method", "bradley-terry", "--debias", "balanced", "-o", str(out),
                     "--db", app_env]) == 0
        sidecar = out.with_name(out.name + ".settings.json")
        cli = (out.read_bytes(), sidecar.read_bytes() if sidecar.exists() else None)
        assert page[what] == (exported.data, exported.sidecar) == cli, what


def test_a_manual_tau_survives_a_page_switch_and_a_reload(app_env):
    _, _, run_id = seed_run(app_env)
    at = open_page("rankings")
    at.radio(key="tau_mode_w").set_value("manual").run()
    at.slider(key="tau_manual_w").set_value(0.6).run()
    assert not at.exception, at.exception
    p_a_rankings = metric(at, "P(A) at tau = 0.600")
    at.switch_page("pages/bias.py").run()
    assert not at.exception, at.exception
    # the whole view state is in the Bias page's URL, not only what the Bias page drew
    params = {k: str(at.query_params[k][0] if isinstance(at.query_params[k], list)
                     else at.query_params[k]) for k in ("run", "method", "tau_mode", "tau")}
    assert params == {"run": str(run_id), "method": "bradley-terry", "tau_mode": "manual",
                      "tau": "0.6"}
    shown = metric(at, "P(A) at tau = 0.600")

    reloaded = AppTest.from_file(APP, default_timeout=60)   # a refresh: a new session, the URL
    for key, value in params.items():
        reloaded.query_params[key] = value
    reloaded.run()
    reloaded.switch_page("pages/bias.py").run()
    assert not reloaded.exception, reloaded.exception
    assert metric(reloaded, "P(A) at tau = 0.600") == shown == p_a_rankings
    assert reloaded.slider(key="tau_manual_w").value == pytest.approx(0.6)


def test_the_greyed_slider_shows_the_tau_in_use(app_env):
    seed_run(app_env)
    at = open_page("rankings")   # balanced, the default
    slider = at.slider(key="tau_manual_w")
    assert slider.disabled and slider.value == pytest.approx(0.725)   # tau* of the seeded run
    at.radio(key="tau_mode_w").set_value("off").run()
    assert at.slider(key="tau_manual_w").value == pytest.approx(0.5)


@pytest.mark.parametrize("query, problem", [
    ({"tau_mode": "manual", "tau": "nan"}, "not a number between 0 and 1"),
    ({"tau_mode": "manual", "tau": "7"}, "not a number between 0 and 1"),
    # Values inside (0, 1) that the 3 decimals kept round onto a bound.
    ({"tau_mode": "manual", "tau": "0.0000001"}, "rounds to 0.000"),
    ({"tau_mode": "manual", "tau": "0.9999"}, "rounds to 1.000"),
    ({"method": "<img src=x>"}, "is not one of"),
    ({"tau_mode": "sideways"}, "is not one of"),
])
def test_a_bad_link_gets_a_friendly_message_and_the_defaults(app_env, query, problem):
    seed_run(app_env)
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    at.switch_page("pages/rankings.py").run()
    assert not at.exception, at.exception
    warnings = "\n".join(w.value for w in at.warning)
    assert "were not all understood" in warnings and problem in warnings
    # a value from the link is shown inside a code span: inert text, never markup
    assert all(re.search(r"`[^`]*<img src=x>[^`]*`", w.value) for w in at.warning
               if "<img" in w.value)
    assert metric(at, "P(A) at tau = 0.725")                    # the default: balanced tau*


def test_the_run_page_keeps_its_form_and_watches_the_live_run(app_env):
    store, dataset_id, run_id = seed_run(app_env)
    at = open_page("run")
    at.selectbox(key="strategy_1").set_value("random").run()
    at.number_input(key="budget_1").set_value(7).run()
    at.selectbox(key="run_aspect_1").set_value("fluency").run()
    # A run whose worker is alive (fresh heartbeat), as Start leaves it, and a visit to Rankings.
    from tests.app.test_app_pages import settings_for
    live = store.create_run("live-run", dataset_id, settings_for("sample_summeval").to_dict())
    store.set_run_status(live, "running", done=0, total=60, message="loading the judge")
    at.switch_page("pages/rankings.py").run()
    if at.selectbox(key="run_pick_w").value is None:
        assert "has no stored comparison yet" in texts(at.warning)
    else:
        assert at.selectbox(key="run_pick_w").value == run_id
    at.switch_page("pages/run.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="watch_w").value == live   # the watched run is known by its id
    assert "Status: running" in "\n".join(m.value for m in at.markdown)
    assert at.selectbox(key="strategy_1").value == "random"
    assert at.number_input(key="budget_1").value == 7
    assert at.selectbox(key="run_aspect_1").value == "fluency"

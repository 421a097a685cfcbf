"""Shared fixtures: a real store on a real database, and a tiny dataset built from the engine types.

``db_url`` is a fresh SQLite file in ``tmp_path``; set ``COMPASSESS_TEST_DATABASE_URL`` (e.g. a
PostgreSQL URL) to run the same tests on that database instead; it is emptied before each test.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from compassess_core.data.candidates import content_hash
from compassess_core.types import Candidate, Context, Dataset


# The benchmarks' study code (``benchmarks.studies``) is not installed with the engine: tests
# import it from the repository.
_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)


def _empty_database(url: str) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    from db.schema import Base

    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as conn:
        Base.metadata.drop_all(conn)
        conn.execute(text("DROP TABLE IF EXISTS alembic_version"))
    engine.dispose()


@pytest.fixture(scope="session", autouse=True)
def app_test_starts_like_a_served_app():
    """``AppTest`` does at every run two things a served app does once, which were a third of the
    CPU of a short AppTest test here; the tests keep their results for the session instead:

    * it looks for installed Streamlit components (``discover_and_register_components``),
      parsing the metadata of every installed distribution, about 0.3 s each time. What is
      installed does not change while the tests run: the first scan's manifests are reused.
    * it compiles the app's script and the page's (Streamlit's "magic" rewrite of the syntax
      tree, then ``compile``) into a new ``ScriptCache`` at every run, where a server keeps one
      cache for its life. The bytecode is kept per file, its size and modification time (a
      changed file is compiled again) and the magic setting.
    """
    from streamlit import config
    from streamlit.components.v2 import manifest_scanner
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    from streamlit.testing.v1 import app_test

    real_scan = manifest_scanner.scan_component_manifests
    found: dict[int | None, list] = {}

    def scanned_once(max_workers: int | None = None):
        if max_workers not in found:
            found[max_workers] = real_scan(max_workers)
        return list(found[max_workers])

    compiled: dict[tuple, object] = {}

    class CompiledOnce(ScriptCache):
        def get_bytecode(self, script_path: str):
            st = os.stat(script_path)
            key = (os.path.abspath(script_path), st.st_size, st.st_mtime_ns,
                   config.get_option("runner.magicEnabled"))
            if key not in compiled:
                compiled[key] = super().get_bytecode(script_path)
            return compiled[key]

    manifest_scanner.scan_component_manifests = scanned_once
    app_test.ScriptCache = CompiledOnce
    yield
    manifest_scanner.scan_component_manifests = real_scan
    app_test.ScriptCache = ScriptCache


@pytest.fixture(autouse=True)
def fresh_sign_in_decision():
    """Each test stands for a fresh server: the app decides once per process whether sign-in is
    required (``pages._auth.decide_startup``), so that decision is forgotten around every test."""
    import sys
    auth = sys.modules.get("pages._auth")
    if auth is not None:
        auth.forget_startup()
    yield
    auth = sys.modules.get("pages._auth")
    if auth is not None:
        auth.forget_startup()


@pytest.fixture(scope="session")
def _newest_schema_file(tmp_path_factory) -> Path:
    """An empty SQLite store at the newest schema, migrated once per test process: a fresh
    database for a test is a copy of it. Replaying every migration costs about 80 ms of CPU per
    new file, and most tests start from a new one. How a store is created and upgraded is
    tested where a test opens a file of its own (tests/db/test_store.py)."""
    from db.store import Store

    path = tmp_path_factory.mktemp("newest-schema") / "compassess.db"
    Store(f"sqlite:///{path}").close()
    assert not Path(f"{path}-wal").exists()   # closed: everything is in the one file copied
    return path


def _emptied_test_database() -> str | None:
    """``COMPASSESS_TEST_DATABASE_URL`` with no table left (the next open migrates it from
    nothing), or None when the tests run on SQLite files."""
    url = os.environ.get("COMPASSESS_TEST_DATABASE_URL", "").strip()
    if url:
        _empty_database(url)
    return url or None


@pytest.fixture
def db_url(tmp_path: Path, request) -> str:
    """A fresh store for the test: the test database emptied, else a new SQLite file at the
    newest schema (the migrated file is only made when SQLite is used)."""
    url = _emptied_test_database()
    if url:
        return url
    path = tmp_path / "compassess.db"
    shutil.copyfile(request.getfixturevalue("_newest_schema_file"), path)
    return f"sqlite:///{path}"


@pytest.fixture
def empty_db_url(tmp_path: Path) -> str:
    """A store with no schema at all (a file not created yet), for a test that builds an old
    schema revision itself; the test database emptied, as for ``db_url``."""
    return _emptied_test_database() or f"sqlite:///{tmp_path / 'empty.db'}"


@pytest.fixture
def store(db_url: str):
    from db.store import Store

    s = Store(db_url)
    yield s
    s.close()


@pytest.fixture
def tiny_dataset() -> Dataset:
    """2 contexts x 3 candidates with a numeric ``coherence`` score and systems s1..s3."""
    def cand(cid: str, text: str, system: str, score: float, row: int) -> Candidate:
        return Candidate(candidate_id=cid, text=text, system=system, scores={"coherence": score},
                         row=row)

    contexts = (
        Context("doc1", "The cat sat on the mat. It was warm.", (
            cand("c1", "A cat sat on a mat.", "s1", 4.0, 2),
            cand("c2", "Mat warm cat.", "s2", 2.5, 3),
            cand("c3", "The cat was on the warm mat.", "s3", 5.0, 4),
        )),
        Context("doc2", "Rain fell all day in the city.", (
            cand("c1", "It rained.", "s1", 3.0, 5),
            cand("c2", "The city had rain all day long.", "s2", 4.5, 6),
            cand("c3", "Day city rain fell.", "s3", 1.0, 7),
        )),
    )
    return Dataset(name="tiny", contexts=contexts, score_columns=("coherence",),
                   source="tiny.csv", content_hash=content_hash(contexts))



@pytest.fixture(scope="session")
def bundled_model() -> Path:
    """The bundled SmolLM2-135M-Instruct GGUF (fetched by `make setup`).

    Skips with the reason when it is absent, except in CI (COMPASSESS_REQUIRE_MODEL=1), where a
    missing model is a set-up failure.
    """
    from compassess_core.judges.models import default_model_path

    path = default_model_path()
    if not path.exists():
        if os.environ.get("COMPASSESS_REQUIRE_MODEL") == "1":
            pytest.fail(f"bundled model missing at {path}: run `make setup` (compassess fetch-model)")
        pytest.skip(f"bundled model not fetched ({path}); run `make setup` or `compassess fetch-model`")
    return path


@pytest.fixture(scope="session")
def fake_weights(bundled_model):
    """The bundled judge's tokenizer and chat template on FAKE weights, a tiny random Llama
    (``tests.fakes.fake_tiny_llama``), as a ``LoadedModel``: for tests of how the engine cuts
    prompts into passes and pieces, whose prompts, tokens and prefix tree are then the bundled
    judge's, at a hundredth of its arithmetic. The tokenizer comes from the bundled judge's
    conversion (made here if no test made it yet); its weights are not loaded."""
    from transformers import AutoTokenizer

    from compassess_core.judges.loading import convert_gguf
    from compassess_core.judges.models import cached_sha256
    from tests.fakes import fake_tiny_llama

    folder = convert_gguf(bundled_model, cached_sha256(bundled_model))
    return fake_tiny_llama(AutoTokenizer.from_pretrained(str(folder)))


#: The SummEval sample the repository ships: 3 articles (about 2,400 characters each) x 5 summaries.
SUMMEVAL_SAMPLE = Path(__file__).resolve().parents[1] / "assets" / "sample_summeval.csv"


def short_articles(dest: Path, chars: int = 400) -> Path:
    """The bundled SummEval sample with each article cut to its opening sentences (at most
    ``chars`` characters, about 100 tokens instead of 550), written as ``dest/sample_summeval.csv``
    (the same dataset name, candidates, systems and scores). For real-judge tests whose subject is
    not what the articles say (the run loop, the command line, tuning, one-pass aspects): the
    judge reads every article token of every comparison, so a comparison costs about a third."""
    import pandas as pd

    frame = pd.read_csv(SUMMEVAL_SAMPLE, dtype=str, keep_default_na=False)
    frame["context"] = frame["context"].map(lambda text: _opening(text, chars))
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / SUMMEVAL_SAMPLE.name
    frame.to_csv(out, index=False)
    return out


def _opening(text: str, chars: int) -> str:
    if len(text) <= chars:
        return text
    cut = text[:chars]
    end = cut.rfind(". ")
    return cut[:end + 1] if end > 0 else cut


@pytest.fixture(scope="session")
def short_summeval(tmp_path_factory) -> Path:
    """``short_articles`` once per session."""
    return short_articles(tmp_path_factory.mktemp("short-summeval"))


#: The MT-Bench sample with expert labels the repository ships (assets/README.md).
MTBENCH_CANDIDATES = Path(__file__).resolve().parents[1] / "assets" / "sample_mtbench.csv"
MTBENCH_LABELS = Path(__file__).resolve().parents[1] / "assets" / "sample_mtbench_labels.csv"


@pytest.hookimpl(tryfirst=True)   # before xdist's own, which reads the groups into the test ids
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``make test`` runs ``-n 3 --dist loadgroup``), the browser tests of a
    module share one worker (its one Streamlit server), and so do the real-judge tests of a module
    that share a fixture of the module wider than one test (``_module_fixtures``: a judge or a
    server loaded once per module or session); every other test, a real-judge test that loads
    through the process-wide caches included (``bundled_weights_loaded_once``, the warm command
    line), is a unit of its own and goes to whichever worker is free. The work is queued longest
    first (``_longest_first``), so the workers stay busy to the end. Without xdist the groups
    mean nothing."""
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.xdist_group(f"browser:{module}"))
        elif item.get_closest_marker("model") and _module_fixtures(item):
            item.add_marker(pytest.mark.xdist_group(f"model:{module}"))
    if hasattr(config, "workerinput"):   # the order xdist's queue takes; a plain run keeps its own
        items[:] = _longest_first(items)
        _tell_the_scheduler(items)


def _module_fixtures(item) -> list[str]:
    """The fixtures wider than one test that ``item`` uses and its own module defines (a
    session fixture of conftest.py, as ``bundled_model``, is one per worker whatever the order)."""
    module = item.nodeid.split("::", 1)[0]
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return sorted({name for name, defs in info.name2fixturedefs.items() for d in defs
                   if d.scope != "function" and d.baseid == module})


# ------------------------------------------------------------- the workers busy to the end
# Longest-processing-time first: xdist hands each worker the next unit of the queue (a group, or
# one ungrouped test) when it has two tests or fewer left, so the queue is ordered by a unit's
# expected seconds, longest first; `pytest_configure` keeps xdist from reordering it by test
# count. The expected seconds are `--durations` of `make test` on this 2-core machine for every
# test that took 10 s or more; any other test counts by its mark. The queue's tail is then
# hundreds of tests under a second, which even out the workers' ends.
# Under several workers each torch judge computes on one thread (COMPASSESS_THREADS=1: the
# judge's own switch; it changes speed, never results), so a forward pass on one worker does not
# stall on a core another worker is using.

#: Seconds per test whose node id starts with the key (a test, a parametrized family, or every
#: test of a module): its wall time in two `make test` runs on this machine, scaled by its CPU
#: seconds after/before (`--cpu-durations`) where a test was made cheaper since; the first key
#: that matches counts. Only the order they make matters.
_EXPECTED_S = {
    "tests/docs/test_docs_commands.py::test_the_blocks_run_as_written[README.md]": 146,
    "tests/docs/test_docs_commands.py::test_the_blocks_run_as_written[docs/panels.md]": 31,
    "tests/docs/test_docs_commands.py::test_the_blocks_run_as_written[docs/annotate.md]": 18,
    "tests/browser/test_browser_state_machine.py": 131,
    "tests/api/test_api.py::test_the_docs_walkthrough_runs_on_the_bundled_model": 119,
    "tests/browser/test_browser_screens.py": 63,
    "tests/runs/test_tuning_model.py::test_cli_tune_on_the_sample": 28,
    "tests/browser/test_browser_app_writes.py::test_a_revisited_run_form_shows_what_the_plan_uses": 53,
    "tests/browser/test_browser_annotate.py::test_two_annotators_at_once_in_chromium": 52,
    "tests/browser/test_browser_view_state.py": 51,
    "tests/browser/test_browser_sign_in.py": 49,
    "tests/browser/test_browser_payloads.py": 48,
    "tests/judges/test_judge_memory.py::test_streamed_conversion_equals_transformers_gguf_loading": 62,
    "tests/stats/test_leaderboard.py::test_sample_run_with_the_bundled_judge": 27,
    "tests/browser/test_browser.py::test_click_through_the_app_in_chromium": 29,
    "tests/judges/test_aspects_one_pass.py::test_thin_prefixes_are_looked_through": 31,
    "tests/judges/test_aspects_one_pass.py::test_thin_prefixes_lift_their_prompts": 27,
    "tests/judges/test_aspects_one_pass.py::test_the_aspects_of_a_pair_run_with_the_pair": 13,
    "tests/judges/test_aspects_one_pass.py::test_p_of_four_aspects_in_one_pass": 13,
    "tests/cli/test_cli.py::test_run_evaluate_rank_export_on_real_model": 27,
    "tests/cli/test_cli.py::test_kill_mid_run_then_resume_recomputes_nothing": 20,
    "tests/cli/test_cli.py::test_sigterm_stops_cleanly_and_marks_run_cancelled": 19,
    "tests/browser/test_browser_prompt_library.py": 25,
    "tests/browser/test_browser_app_writes.py::test_three_renames_in_a_row": 19,
    "tests/browser/test_browser_app_writes.py::test_a_start_clicked_on_the_screen_before_a_switch": 15,
    "tests/people/test_http_guard.py::test_uploads_need_an_admin": 21,
    "tests/browser/test_browser_report.py": 17,
    "tests/runs/test_explain_model.py": 13,
    "tests/browser/test_browser_leaderboard.py": 16,
    "tests/app/test_app_run.py::test_cancel_then_resume_from_the_page": 15,
    "tests/browser/test_browser_hardening.py::test_a_cookie_copied_before_sign_out": 15,
    "tests/browser/test_browser_annotate_switch.py::test_a_click_after_a_dataset_switch": 14,
    "tests/app/test_app_scoring.py::test_scoring_run_from_the_page_with_the_bundled_model": 13,
    "tests/browser/test_browser_hardening.py::test_a_page_load_makes_no_request": 13,
    "tests/browser/test_browser_annotate_switch.py::test_annotate_asks_about": 12,
    "tests/judges/test_judge.py::test_grouped_query_attention_on_cpu": 12,
    "tests/api/test_worker.py::test_the_app_starts_a_low_priority_worker": 12,
    "tests/judges/test_tokens.py::test_texts_cut_into_lines": 25,
    "tests/judges/test_tokens.py::test_random_texts_with_shared_openings": 11,
    "tests/stats/test_agreement_invariance.py::test_renaming_and_reordering": 15,
    "tests/judges/test_judge_memory.py::test_out_of_memory_halves_the_batch": 16,
}


def _expected_s(item) -> float:
    for prefix, seconds in _EXPECTED_S.items():
        if item.nodeid.startswith(prefix):
            return seconds
    if item.get_closest_marker("model") or item.get_closest_marker("browser"):
        return 10.0
    return 20.0 if item.get_closest_marker("slow") else 0.5


def _longest_first(items: list) -> list:
    units: dict[str, list] = {}
    for item in items:
        group = item.get_closest_marker("xdist_group")
        key = group.args[0] if group and group.args else group.kwargs.get("name") if group else None
        units.setdefault(key or item.nodeid, []).append(item)
    ordered = sorted(units.values(), key=lambda unit: -sum(_expected_s(i) for i in unit))
    return [item for unit in ordered for item in unit]


def pytest_configure(config):
    if getattr(config.option, "dist", "no") == "loadgroup" and not hasattr(config, "workerinput"):
        config.option.loadscopereorder = False   # the queue is the collection order: longest first
        import tempfile
        fd, path = tempfile.mkstemp(prefix="compassess-xdist-groups-", suffix=".json")
        os.close(fd)
        os.environ[_GROUPS_FILE_ENV] = path      # the workers, started after this, inherit it
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    if int(workers) > 1:
        os.environ.setdefault("COMPASSESS_THREADS", "1")


# pytest-xdist's loadgroup puts a test's group into its node id (``item._nodeid``), which pytest 9
# no longer reads: with `--dist loadgroup` alone every test would be a unit of its own, the
# browser tests of a module spread over the workers. So each worker writes the groups it
# collected to a file, and the scheduler (`pytest_xdist_make_scheduler`) reads a test's unit there.

_GROUPS_FILE_ENV = "COMPASSESS_TEST_XDIST_GROUPS"


def _tell_the_scheduler(items) -> None:
    path = os.environ.get(_GROUPS_FILE_ENV)
    if not path:
        return
    import json
    groups = {}
    for item in items:
        group = item.get_closest_marker("xdist_group")
        if group is not None:
            groups[item.nodeid] = group.args[0] if group.args else group.kwargs.get("name", "default")
    mine = f"{path}.{os.getpid()}"
    Path(mine).write_text(json.dumps(groups), encoding="utf-8")
    os.replace(mine, path)   # whole or not at all: every worker writes the same map


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    path = os.environ.get(_GROUPS_FILE_ENV)
    if config.getvalue("dist") != "loadgroup" or not path:
        return None
    import json

    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        """``--dist loadgroup`` by the groups the workers wrote (see above)."""

        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                try:
                    self._groups = json.loads(Path(path).read_text(encoding="utf-8") or "{}")
                except (OSError, ValueError):
                    self._groups = {}
            return self._groups.get(nodeid, nodeid)

    return GroupScheduling(config, log)


def pytest_unconfigure(config):
    path = os.environ.get(_GROUPS_FILE_ENV)
    if path and not hasattr(config, "workerinput"):
        Path(path).unlink(missing_ok=True)


# ------------------------------------------------------------- the model mark, enforced
# `make test-fast` (-m "not model ...") must load no model: a test that loads one without the
# `model` mark fails, naming what it loaded. Counted in this process (every
# `judges.loading.load_model`, wrapped when that module is first imported) and in the warm
# command line's commands (tests/warm_cli.py reports whether a command loaded one).

_LOADING_MODULE = "compassess_core.judges.loading"
_IN_PROCESS_LOADS: list[str] = []


def _count_loads(module) -> None:
    real = module.load_model
    if getattr(real, "_counted", False):
        return

    def load_model(spec, *args, **kwargs):
        loaded = real(spec, *args, **kwargs)
        _IN_PROCESS_LOADS.append(str(spec))  # loaded: a refused path is no load
        return loaded

    load_model._counted = True
    load_model.__wrapped__ = real
    module.load_model = load_model


class _CountLoadsOnImport:
    """A meta-path finder that only wraps ``load_model`` once its module has run."""

    def find_spec(self, name, path=None, target=None):
        if name != _LOADING_MODULE:
            return None
        import importlib.util
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_count(module):
            exec_module(module)
            _count_loads(module)

        spec.loader.exec_module = exec_and_count
        return spec


if _LOADING_MODULE in sys.modules:
    _count_loads(sys.modules[_LOADING_MODULE])
else:
    sys.meta_path.insert(0, _CountLoadsOnImport())


def _loads_so_far() -> tuple[int, int]:
    from tests import warm_cli
    return len(_IN_PROCESS_LOADS), len(warm_cli.LOADS)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    item._model_loads_before = _loads_so_far()
    _phase_starts(item)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    _phase_starts(item)
    result = yield
    before = getattr(item, "_model_loads_before", None)
    if before is not None and not item.get_closest_marker("model") and _loads_so_far() != before:
        from tests import warm_cli
        pytest.fail("this test loads a model but is not marked @pytest.mark.model (so "
                    "`make test-fast` would load it): "
                    f"{_IN_PROCESS_LOADS[before[0]:] + warm_cli.LOADS[before[1]:]}", pytrace=False)
    return result


# ------------------------------------------------------------------- the warm command line
# tests/warm_cli.py: `compassess ...` forked from a server that imported the CLI (and, for the
# tests marked `model`, loaded the bundled judge) once per pytest process.


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    _phase_starts(item)
    return (yield)


def pytest_sessionfinish(session, exitstatus):
    if "warm_cli" in sys.modules:
        sys.modules["warm_cli"].close_all()


# ------------------------------------------------------------ the bundled judge, loaded once
# A test marked `model` that loads the bundled judge in this process (`load_judge(None)`, a run
# through the API or the app) gets the weights loaded by the first such test of this pytest
# process: `judges.loading.load_model` of the bundled file is remembered per (device, dtype).
# The judge around them is built as usual (label words, batch size, token budget); the judges
# only read the weights and the tokenizer. The modules below test loading itself (conversion,
# precision, memory) and load as written.

_LOADS_ITSELF = {"test_judge", "test_judge_memory"}
_BUNDLED_WEIGHTS: dict[tuple[str, str, str], object] = {}


@pytest.fixture(autouse=True)
def bundled_weights_loaded_once(request, monkeypatch):
    if (not request.node.get_closest_marker("model")
            or request.module.__name__.rsplit(".", 1)[-1] in _LOADS_ITSELF):
        yield
        return
    from compassess_core.judges import loading
    from compassess_core.judges.models import default_model_path

    bundled = default_model_path().resolve()
    load = loading.load_model

    def load_model(spec, device: str = "auto", dtype: str = "auto"):
        try:
            same_file = Path(str(spec)).expanduser().resolve() == bundled
        except OSError:
            same_file = False
        if not same_file:
            return load(spec, device=device, dtype=dtype)
        dev = loading.resolve_device(device)
        key = (str(dev), str(loading.resolve_dtype(dtype, dev)), str(loading.resolve_storage(dtype)))
        if key not in _BUNDLED_WEIGHTS:
            _BUNDLED_WEIGHTS[key] = load(spec, device=device, dtype=dtype)
        else:
            _IN_PROCESS_LOADS.append(str(spec))  # still a load, for the model-mark check
        return _BUNDLED_WEIGHTS[key]

    monkeypatch.setattr(loading, "load_model", load_model)
    yield


# ------------------------------------------------------------------ where the CPU goes
# `pytest --cpu-durations=N` lists the N tests that used the most CPU seconds (user + system) and
# the CPU seconds per test file (0: every test). CPU, not wall time: on a machine shared with
# other processes a test's wall time says how busy the machine was, its CPU time what the test
# costs. A test's CPU is this process's, that of the children it waited for (a subprocess, a
# server stopped in its teardown) and that of the warm command line's commands it sent
# (tests/warm_cli.py). Measured in the process that runs the test (an xdist worker), reported by
# the one that prints the summary.

def pytest_addoption(parser):
    parser.addoption("--cpu-durations", type=int, default=None, metavar="N",
                     help="show the N tests that used the most CPU seconds, and the CPU seconds "
                          "per file (N=0: every test)")


def _browser_cpu_s() -> float:
    """The CPU seconds of the Playwright driver this process started and of the Chromium under
    it, while they run: a browser module's Chromium lives across its tests, so its
    CPU would otherwise count nowhere (a process counts in RUSAGE_CHILDREN only once reaped,
    and then no longer here, so nothing counts twice)."""
    try:
        import psutil
    except ImportError:
        return 0.0
    total = 0.0
    for child in psutil.Process().children():
        try:
            if "run-driver" not in child.cmdline():
                continue
            tree = [child, *child.children(recursive=True)]
        except psutil.Error:
            continue
        for proc in tree:
            try:
                t = proc.cpu_times()
            except psutil.Error:   # ended meanwhile: in its parent's children's times
                continue
            total += t.user + t.system + t.children_user + t.children_system
    return total


def _cpu_s() -> float:
    import resource
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    warm = sys.modules.get("warm_cli")
    return (me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
            + _browser_cpu_s()
            + (sum(warm.CPU_S) if warm is not None else 0.0))


def _phase_starts(item) -> None:
    if item.config.getoption("cpu_durations") is not None:
        item._cpu_phase_start = _cpu_s()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    start = getattr(item, "_cpu_phase_start", None)
    if start is not None:
        report.user_properties.append(("cpu_s", _cpu_s() - start))
        item._cpu_phase_start = None
    return report


_CPU_BY_TEST: dict[str, float] = {}


def pytest_runtest_logreport(report):
    for key, value in report.user_properties:
        if key == "cpu_s":
            _CPU_BY_TEST[report.nodeid] = _CPU_BY_TEST.get(report.nodeid, 0.0) + value


def pytest_terminal_summary(terminalreporter, config):
    n = config.getoption("cpu_durations")
    if n is None or not _CPU_BY_TEST:
        return
    by_file: dict[str, float] = {}
    for nodeid, seconds in _CPU_BY_TEST.items():
        by_file[nodeid.split("::", 1)[0]] = by_file.get(nodeid.split("::", 1)[0], 0.0) + seconds
    tests = sorted(_CPU_BY_TEST.items(), key=lambda kv: -kv[1])
    files = sorted(by_file.items(), key=lambda kv: -kv[1])
    write = terminalreporter.write_line
    terminalreporter.section(f"CPU seconds (user + system), {len(tests)} tests, "
                             f"{sum(_CPU_BY_TEST.values()):.1f} s in all")
    for nodeid, seconds in tests[:n or None]:
        write(f"{seconds:8.2f}s cpu  {nodeid}")
    terminalreporter.section("CPU seconds per file")
    for path, seconds in files[:n or None]:
        write(f"{seconds:8.2f}s cpu  {path}")

"""The Python API (``import compassess_core as ca``) on a real store.

* the package's public names: ``__all__``, docstrings, and an import that loads no model library;
* candidates and labels from a DataFrame: the upload's validation, every problem with row and
  column, nothing stored on a problem;
* a run (a FAKE judge: these tests are about the wiring) stored, read back, exported; stopped by a
  KeyboardInterrupt in a micro-batch or by SIGINT (the notebook's stop button) and resumed with
  nothing recomputed;
* the API, the CLI (``compassess rank|evaluate|agreement --json``) and the app (AppTest on the
  Rankings page) give the same rankings and evaluation for the same stored run;
* docs/python.md, executed cell by cell on the bundled model (marked ``model``).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import compassess_core as ca
from compassess_core.runs.run_loop import FIRST_BATCH_PROMPTS as FIRST
from tests.fakes import FakeLengthJudge

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "assets" / "sample_summeval.csv"
DOCS = ROOT / "docs" / "python.md"


def fake_run(store: "ca.Store", *, judge=None, name: str = "fake-coh", **kw) -> "ca.Run":
    """The sample judged by the FAKE length judge (every ordered pair of ``contexts`` articles)."""
    return store.run(SAMPLE, aspect="coherence", name=name, judge=judge or FakeLengthJudge(),
                     **{"progress": False, **kw})


# ------------------------------------------------------------------------------ public names

def test_importing_the_package_loads_no_model_library_and_every_public_name_resolves():
    code = ("import sys, compassess_core as ca\n"
            "heavy = [m for m in ('torch', 'transformers', 'pandas', 'sqlalchemy', 'streamlit') "
            "if m in sys.modules]\n"
            "assert not heavy, heavy\n"
            "names = [getattr(ca, n) for n in ca.__all__]\n"
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules\n"
            "assert 'streamlit' not in sys.modules and 'db' not in sys.modules\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                                   os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_every_public_name_is_listed_once_and_documented():
    assert len(ca.__all__) == len(set(ca.__all__))
    assert sorted(dir(ca)) == sorted(set(dir(ca)))
    with pytest.raises(AttributeError):
        ca.not_a_public_name  # noqa: B018
    undocumented = []
    for name in ca.__all__:
        obj = getattr(ca, name)
        if isinstance(obj, tuple):  # the vocabularies, documented in the package docstring
            assert name in ca.__doc__ and obj
            continue
        if not (obj.__doc__ or "").strip():
            undocumented.append(name)
        if name in ("Store", "Run", "ProgressBar"):
            for member, value in vars(obj).items():
                if member.startswith("_"):
                    continue
                doc = (value.fget.__doc__ if isinstance(value, property) else
                       getattr(value, "__doc__", None))
                if not (doc or "").strip():
                    undocumented.append(f"{name}.{member}")
    assert not undocumented, undocumented
    assert set(ca.RANKING_METHODS) == {"win-ratio", "avg-prob", "bradley-terry", "poe"}


def test_the_package_reexports_the_engine_types():
    from compassess_core.errors import ValidationError
    from compassess_core.types import Dataset
    assert ca.ValidationError is ValidationError and ca.Dataset is Dataset
    assert issubclass(ca.RunInterrupted, KeyboardInterrupt)


# ------------------------------------------------------------------------- opening a store

def test_open_store_takes_a_path_a_url_memory_or_the_environment(tmp_path, monkeypatch):
    with ca.open_store(tmp_path / "runs.db") as s:
        assert s.url == f"sqlite:///{tmp_path / 'runs.db'}" and not s.in_memory
        s.add_dataset(SAMPLE)
    assert ca.open_store(f"sqlite:///{tmp_path / 'runs.db'}").datasets()["name"].tolist() == \
        ["sample_summeval"]
    monkeypatch.setenv("COMPASSESS_DATABASE_URL", f"sqlite:///{tmp_path / 'runs.db'}")
    assert ca.open_store().datasets()["candidates"].tolist() == [15]
    memory = ca.open_store(":memory:")
    assert memory.in_memory and memory.datasets().empty
    with pytest.raises(ca.InputError, match="cannot open the database URL"):
        ca.open_store("nosuchdriver://x")


# ------------------------------------------------------------------------------ validation

def broken_frame() -> pd.DataFrame:
    frame = pd.read_csv(SAMPLE).astype({"coherence": object})
    frame.loc[1, "candidate_id"] = "S3"       # row 3: S3 twice in A0
    frame.loc[4, "text"] = "  "               # row 6: empty text
    frame.loc[7, "coherence"] = "high"        # row 9: not a number
    return frame


def test_a_dataframe_gets_the_uploads_validation_with_every_problem_located():
    frame = broken_frame()
    with pytest.raises(ca.ValidationError) as from_frame:
        ca.load_candidates(frame)
    found = {(p.row, p.column) for p in from_frame.value.problems}
    assert {(3, "candidate_id"), (6, "text"), (9, "coherence")} <= found, from_frame.value.problems
    assert all(p.file == "DataFrame" for p in from_frame.value.problems)
    assert "row 6, column 'text'" in str(from_frame.value)
    # the same table uploaded as a CSV file gets the same problems, on the same rows
    with pytest.raises(ca.ValidationError) as from_file:
        ca.load_candidates(frame.to_csv(index=False).encode(), file_label="DataFrame")
    assert from_file.value.problems == from_frame.value.problems


def test_bad_candidates_stop_a_run_before_anything_is_stored(store):
    api = ca.Store(store)
    judge = FakeLengthJudge()
    with pytest.raises(ca.ValidationError) as err:
        api.run(broken_frame(), aspect="coherence", judge=judge, progress=False)
    assert len(err.value.problems) >= 3 and judge.seen == []
    assert api.datasets().empty and api.runs().empty
    with pytest.raises(ca.InputError, match="neither a file nor a stored dataset"):
        api.run("no-such-dataset", aspect="coherence", judge=judge, progress=False)
    with pytest.raises(ca.InputError, match="batch_size must be at least 1"):
        api.run(SAMPLE, aspect="coherence", judge=judge, batch_size=0, progress=False)
    with pytest.raises(ca.InputError, match="needs a budget"):
        api.run(SAMPLE, aspect="coherence", judge=judge, strategy="random", progress=False)
    assert api.datasets().empty and api.runs().empty


def test_bad_labels_list_every_problem_and_store_nothing(store):
    api = ca.Store(store)
    api.add_dataset(SAMPLE)
    labels = pd.DataFrame({"context_id": ["A0", "A0", "A9"], "candidate_a": ["S3", "S3", "S1"],
                           "candidate_b": ["S5", "S99", "S2"], "winner": ["S5", "S3", "S1"]})
    with pytest.raises(ca.ValidationError) as err:
        api.import_labels(labels, dataset="sample_summeval")
    assert {p.row for p in err.value.problems} == {3, 4}, err.value.problems
    assert api.human_labels("sample_summeval").empty


# -------------------------------------------------------------------------------- a run

def test_a_run_is_stored_and_read_back_as_frames_and_typed_reports(store, tmp_path):
    api = ca.Store(store)
    judge = FakeLengthJudge()
    run = fake_run(api, judge=judge, contexts=2)
    assert (run.status, run.kind, run.info.n_comparisons, run.info.done) == \
        ("completed", "comparative", 40, 40)
    assert len(judge.seen) == 40 and run.info.judge_key == judge.model_key
    assert run.settings.contexts == 2 and run.settings.template_name.startswith("t1")
    assert len(run.comparisons()) == 40

    ranking = run.rankings("bradley-terry", "balanced", ci=True)
    assert len(ranking) == 10 and set(ranking.context_id) == {"A0", "A1"}
    assert ranking["ci_low"].notna().all() and (ranking["ci_low"] <= ranking["ci_high"]).all()
    assert list(run.rankings(context="A1")["context_id"].unique()) == ["A1"]
    with pytest.raises(ca.InputError, match="context 'A7' is not in dataset"):
        run.rankings(context="A7")

    report = run.evaluation()
    assert isinstance(report, ca.EvaluationReport) and report.reference == "coherence"
    assert report.raw.tau == 0.5 and report.debiased.tau == pytest.approx(run.tau("balanced"))
    assert repr(run.evaluation_at("balanced")) == repr(report.debiased)  # NaN == NaN there
    assert repr(run.evaluation_at("none")) == repr(report.raw)
    bias = run.bias("balanced")
    assert list(bias.columns[:4]) == ["context_id", "n_comparisons", "p_a", "p_b"]
    assert bias["n_comparisons"].sum() == 40
    assert run.matrix("A0").shape == (5, 5) and np.isnan(np.diag(run.matrix("A0"))).all()
    assert len(run.order_dependence()) == 20

    paths = run.export(tmp_path / "rankings.csv", method="bradley-terry", debias="balanced")
    assert [p.name for p in paths] == ["rankings.csv", "rankings.csv.settings.json"]
    meta = json.loads(paths[1].read_text())
    assert meta["method"] == "bradley-terry" and meta["tau"] == pytest.approx(run.tau("balanced"))
    assert meta["settings"]["aspect"] == "coherence" and meta["judge"] == judge.model_key
    back = pd.read_csv(paths[0])
    np.testing.assert_allclose(back["score"], ranking["score"])
    assert len(pd.read_parquet(run.export(tmp_path / "c.parquet", "comparisons")[0])) == 40
    with pytest.raises(ca.InputError, match="unknown export format"):
        run.export(tmp_path / "rankings.xlsx")

    same = api.get_run(run.name)
    assert same.rankings().equals(run.rankings())
    assert api.runs()[["name", "status", "done", "total"]].values.tolist() == \
        [[run.name, "completed", 40, 40]]


def test_a_run_in_an_in_memory_store_and_what_a_worker_process_cannot_do():
    api = ca.open_store(":memory:")
    run = fake_run(api, contexts=1)
    assert run.status == "completed" and run.info.n_comparisons == 20
    with pytest.raises(ca.InputError, match="in-memory store"):
        run.start_worker("worker.log")


def test_the_scoring_kind_reads_back_through_the_same_methods(store):
    api = ca.Store(store)
    run = api.run(SAMPLE, aspect="coherence", mode="scoring", template="s2", contexts=1,
                  judge=FakeLengthJudge(), progress=False)
    assert (run.kind, run.status, run.info.done) == ("scoring", "completed", 5)
    assert len(run.rankings()) == 5 and set(run.rankings(which="argmax")["rank"]) <= set(range(1, 6))
    numbers = run.evaluation().numbers
    assert numbers["reference"] == "coherence" and numbers["n_scored"] == 5
    with pytest.raises(ca.InputError, match="is a prompt scoring run"):
        run.bias()
    with pytest.raises(ca.InputError, match="a strategy and a budget do not apply"):
        api.run(SAMPLE, aspect="coherence", mode="scoring", budget=3, judge=FakeLengthJudge())


# ------------------------------------------------------------------------ stop and resume

def stored_rows(store, run_id: int) -> dict:
    frame = store.comparisons_frame(run_id)
    return {(c, a, b): (p, t) for c, a, b, p, t in
            frame[["context_id", "a_id", "b_id", "p", "created_at"]].itertuples(index=False)}


def test_a_keyboard_interrupt_in_a_micro_batch_leaves_the_stored_ones_and_the_same_call_resumes(store):
    api = ca.Store(store)

    def interrupt(k: int) -> None:
        if k == 2:
            raise KeyboardInterrupt
    with pytest.raises(ca.RunInterrupted) as stopped:
        fake_run(api, judge=FakeLengthJudge(batch_size=4, on_batch=interrupt), contexts=2)
    assert isinstance(stopped.value, KeyboardInterrupt)
    run = api.get_run("fake-coh")
    # The batches before the interrupted third one: the small first batch and one of 4.
    assert (run.status, run.info.n_comparisons) == ("cancelled", FIRST + 4)
    before = stored_rows(store, run.id)

    again = FakeLengthJudge(batch_size=4)
    resumed = fake_run(api, judge=again, contexts=2)
    assert (resumed.status, resumed.info.n_comparisons) == ("completed", 40)
    assert len(again.seen) == 40 - FIRST - 4  # only what was missing
    after = stored_rows(store, run.id)
    assert all(after[k] == v for k, v in before.items())


def test_the_stop_button_stops_after_the_micro_batch_in_flight_and_execute_resumes(store):
    """A notebook's stop button sends SIGINT to the kernel: the micro-batch in flight is finished
    and stored, the run is marked cancelled, and ``RunInterrupted`` stops the cell."""
    api = ca.Store(store)
    before = signal.getsignal(signal.SIGINT)   # a test worker may run with SIGINT ignored

    def press_stop(k: int) -> None:
        if k == 1:
            os.kill(os.getpid(), signal.SIGINT)
    judge = FakeLengthJudge(batch_size=4, on_batch=press_stop)
    log = io.StringIO()
    with pytest.raises(ca.RunInterrupted):
        fake_run(api, judge=judge, contexts=2, progress=ca.ProgressBar(file=log))
    assert judge.batches == [FIRST, 4]  # the small first batch, then the one in flight at the stop
    run = api.get_run("fake-coh")
    assert (run.status, run.info.n_comparisons) == ("cancelled", FIRST + 4)
    assert "stopped: every one of the comparisons computed so far is stored" in log.getvalue()
    assert signal.getsignal(signal.SIGINT) is before   # the handler before the run, restored

    again = FakeLengthJudge(batch_size=4)
    done = run.execute(judge=again, progress=False)
    assert (done.status, done.info.n_comparisons, len(again.seen)) == ("completed", 40,
                                                                        40 - FIRST - 4)


def test_a_cancel_from_the_app_raises_run_cancelled(store):
    api = ca.Store(store)
    holder = {}

    def cancel_from_elsewhere(k: int) -> None:
        if k == 1:
            store.request_cancel(holder["run"].id)
    run = api.create_run(SAMPLE, ca.run_settings("sample_summeval", aspect="coherence", contexts=1),
                         name="cancelled-elsewhere")
    holder["run"] = run
    with pytest.raises(ca.RunCancelled):
        run.execute(judge=FakeLengthJudge(batch_size=4, on_batch=cancel_from_elsewhere),
                    progress=False)
    # Stored: the small first batch and the batch in flight when the cancel came (4).
    assert run.refresh().status == "cancelled" and run.info.n_comparisons == FIRST + 4


def test_the_progress_bar_shows_the_runs_own_counts_rate_and_eta():
    out = io.StringIO()
    bar = ca.ProgressBar("candidates scored", "candidates/s", file=out)
    bar.progress(ca.Progress(done=2, total=6, computed=0, cached=2, elapsed_s=0.1, rate=0.0,
                             eta_s=None))
    bar.progress(ca.Progress(done=6, total=6, computed=4, cached=2, elapsed_s=2.0, rate=2.5,
                             eta_s=0.0))
    bar.message("done")
    text = out.getvalue()
    assert "2/6 candidates scored" in text and "-- candidates/s, ETA --:--:--, 2 from cache" in text
    assert "6/6 candidates scored" in text and "2.50 candidates/s, ETA 00:00:00" in text
    assert text.rstrip().endswith("done")


# ------------------------------------------------------- the same numbers: API, CLI, app

def run_cli(capsys, *argv: str) -> str:
    from compassess_core.cli import main
    code = main(list(argv))
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def test_the_api_the_cli_and_the_app_give_the_same_rankings_and_evaluation(db_url, tmp_path,
                                                                           monkeypatch, capsys):
    from streamlit.testing.v1 import AppTest

    api = ca.open_store(db_url)
    run = fake_run(api)  # all 3 articles, 60 comparisons
    ranking = run.rankings("bradley-terry", "balanced")
    report = run.evaluation("bradley-terry", "balanced")

    # the CLI
    cli_rank = json.loads(run_cli(capsys, "rank", "--run", run.name, "--method", "bradley-terry",
                                  "--debias", "balanced", "--format", "json", "--db", db_url))
    assert cli_rank["tau"] == run.tau("balanced")
    cli_rows = pd.DataFrame(cli_rank["rankings"])
    assert cli_rows[["context_id", "candidate_id", "rank"]].values.tolist() == \
        ranking[["context_id", "candidate_id", "rank"]].values.tolist()
    np.testing.assert_allclose(cli_rows["score"], ranking["score"], rtol=0, atol=1e-9)
    cli_eval = json.loads(run_cli(capsys, "evaluate", "--run", run.name, "--method",
                                  "bradley-terry", "--json", "--db", db_url))
    assert cli_eval.pop("partial_run") is None and run.partial_note is None  # a complete run
    # the same numbers; an undefined one (NaN in the API) is null in the CLI's JSON
    assert cli_eval == json.loads(json.dumps(report.to_dict(), default=lambda o: None),
                                  parse_constant=lambda name: None)

    # the app: the Rankings page at the balanced threshold with Bradley-Terry
    monkeypatch.setenv("COMPASSESS_DATABASE_URL", db_url)
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("pages/rankings.py").run()
    at.radio(key="tau_mode_w").set_value("balanced").run()
    at.selectbox(key="method_w").set_value("bradley-terry").run()
    assert not at.exception, at.exception
    shown = at.dataframe[-1].value
    assert shown[["context_id", "candidate_id", "rank"]].values.tolist() == \
        ranking[["context_id", "candidate_id", "rank"]].values.tolist()
    np.testing.assert_array_equal(shown["score"].to_numpy(), ranking["score"].to_numpy())
    table = at.dataframe[0].value.set_index("metric")
    fmt = lambda v, spec: "n/a" if v is None or v != v else format(v, spec)  # noqa: E731 - as the page
    for label, key, spec in (("Spearman x100, mean over contexts", "spearman_x100", ".1f"),
                             ("Kendall x100, mean over contexts", "kendall_x100", ".1f"),
                             ("System-level Spearman x100", "system_spearman_x100", ".1f"),
                             ("Pairwise accuracy (pairs whose reference scores differ)",
                              "pairwise_accuracy", ".3f"),
                             ("P(A), first position wins", "p_a", ".3f")):
        assert table.loc[label].tolist() == [fmt(getattr(report.raw, key), spec),
                                             fmt(getattr(report.debiased, key), spec)], label
    tau_star = [m.value for m in at.metric if m.label.startswith("tau*")]
    assert tau_star == [f"{report.balanced_tau:.3f}"]


def test_the_api_and_the_cli_import_the_same_labels_and_agree_on_agreement(db_url, tmp_path,
                                                                         capsys):
    api = ca.open_store(db_url)
    run = fake_run(api, contexts=1)
    labels = pd.DataFrame({"context_id": ["A0"] * 4, "candidate_a": ["S3", "S5", "S8", "S3"],
                           "candidate_b": ["S5", "S8", "S10", "S15"],
                           "winner": ["S5", "S8", "tie", "S3"], "annotator": ["ann1"] * 4})
    assert api.import_labels(labels, dataset="sample_summeval", aspect="coherence") == \
        ca.LabelsImported(stored=4, already_stored=0, dataset="sample_summeval", aspect="coherence",
                          attributed={"ann1": 4}, attributed_by="the file's annotator column")
    path = tmp_path / "labels.csv"
    labels.assign(annotator="ann2").to_csv(path, index=False)
    run_cli(capsys, "import-labels", str(path), "--dataset", "sample_summeval", "--aspect",
            "coherence", "--db", db_url)
    from compassess_core.cli import main
    assert main(["import-labels", str(path), "--dataset", "sample_summeval", "--aspect",
                 "coherence", "--db", db_url]) == 0
    assert "4 already stored, 0 added" in capsys.readouterr().err  # the same file twice adds nothing
    stored = api.human_labels("sample_summeval", "coherence")
    assert len(stored) == 8 and sorted(set(stored["annotator"])) == ["ann1", "ann2"]

    found = run.agreement()
    assert found.labels == "stored labels for aspect 'coherence'"
    cli = json.loads(run_cli(capsys, "agreement", "--run", run.name, "--json", "--db", db_url))
    assert cli == json.loads(json.dumps({"run": run.name, **found.to_dict()},
                                        default=lambda o: None))
    assert found.report.n_judgements == 8 and found.human_human.n_items == 4
    from_file = run.agreement(path, debias="none")
    assert from_file.labels == str(path) and from_file.tau == 0.5
    assert from_file.report.n_judgements == 4


# ----------------------------------------------------------------- the docs' walkthrough

def python_cells(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.S | re.M)


def test_the_docs_have_a_walkthrough_that_covers_every_step():
    cells = python_cells(DOCS.read_text(encoding="utf-8"))
    code = "\n".join(cells)
    for step in ("ca.open_store(", "store.add_dataset(", "ca.load_candidates(", "store.run(",
                 ".rankings(", ".bias(", ".evaluation(", ".import_labels(", ".agreement(",
                 ".export(", "store.score("):
        assert step in code, step
    assert "docs/python.md" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.model
def test_the_docs_walkthrough_runs_on_the_bundled_model(bundled_model, tmp_path, monkeypatch):
    """Every ```python cell of docs/python.md, in order, in one namespace, from a folder laid out
    like the repository (the sample at assets/), as a notebook would run them."""
    (tmp_path / "assets").mkdir()
    shutil.copy(SAMPLE, tmp_path / "assets" / SAMPLE.name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))
    namespace: dict = {"__name__": "__walkthrough__"}
    for k, cell in enumerate(python_cells(DOCS.read_text(encoding="utf-8"))):
        try:
            exec(compile(cell, f"docs/python.md cell {k + 1}", "exec"), namespace)
        except Exception as e:  # noqa: BLE001 - name the cell that failed
            raise AssertionError(f"docs/python.md cell {k + 1} failed: {e!r}\n{cell}") from e
    run = namespace["run"]
    assert run.status == "completed" and run.info.n_comparisons == 20
    assert (tmp_path / "rankings.csv.settings.json").exists()
    assert (tmp_path / "comparisons.parquet").exists()
    assert namespace["absolute"].status == "completed"

"""Tunings on the command line like runs: `tune --plan` stores nothing; `tunings` lists them,
`rename-tuning` renames one with its wording runs and template, `delete-tuning` deletes one with
its runs. A real SQLite store and a FAKE writing judge (the tests are about the store and the
commands, not the model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compassess_core import api
from compassess_core.runs import executor
from compassess_core.cli import main
from tests.fakes import FakeWritingJudge

SAMPLE = Path(__file__).resolve().parents[2] / "assets" / "sample_summeval.csv"
TUNE = ["tune", str(SAMPLE), "--aspect", "coherence", "--contexts", "1", "--rounds", "0",
        "--pairs", "4"]


@pytest.fixture
def fake_judge(monkeypatch):
    judge = FakeWritingJudge()
    monkeypatch.setattr(executor, "load_run_judge", lambda settings: judge)
    return judge


def test_tune_plan_stores_nothing_and_a_cheaper_plan_of_the_same_name_is_fine(db_url, capsys):
    assert main([*TUNE, "--name", "p", "--plan", "--db", db_url]) == 0
    out = capsys.readouterr().out
    assert "a plan: nothing stored" in out and "comparisons" in out
    store = api.open_store(db_url)
    assert store.tunings() == [] and store.datasets().empty
    assert main([*TUNE, "--name", "p", "--budget", "8", "--plan", "--db", db_url]) == 0
    assert store.tunings() == []


def test_tunings_are_listed_renamed_and_deleted_with_their_runs(db_url, fake_judge, capsys):
    assert main([*TUNE, "--name", "first", "--db", db_url]) == 0
    capsys.readouterr()
    store = api.open_store(db_url)
    runs_before = sorted(r.name for r in store.list_runs())
    assert runs_before and all(n.startswith("tune-first-") for n in runs_before)

    assert main(["tunings", "--json", "--db", db_url]) == 0
    listed = json.loads(capsys.readouterr().out)["tunings"]
    assert [(t["name"], t["status"], t["runs"]) for t in listed] == \
        [("first", "completed", len(runs_before))]
    assert main(["tunings", "--db", db_url]) == 0
    assert "first" in capsys.readouterr().out

    assert main(["rename-tuning", "--name", "first", "--to", "second", "--db", db_url]) == 0
    assert "renamed tuning 'first' to 'second'" in capsys.readouterr().out
    assert sorted(r.name for r in store.list_runs()) == \
        [n.replace("tune-first-", "tune-second-") for n in runs_before]
    assert list(store.templates()["name"]) == ["second"]
    assert store.tuning("second").result(n_boot=20).template == "second"

    # without a terminal and without --yes: only what would go, exit 2, nothing deleted
    assert main(["delete-tuning", "--name", "second", "--db", db_url]) == 2
    assert len(store.list_runs()) == len(runs_before)
    assert main(["delete-tuning", "--name", "second", "--yes", "--db", db_url]) == 0
    out = capsys.readouterr().out
    assert f"deleted tuning 'second': {len(runs_before)} runs, 28 comparisons, 1 tuning" in out
    assert store.tunings() == [] and store.list_runs() == []
    assert list(store.templates()["name"]) == ["second"]  # a template runs may name stays
    assert main(["delete-tuning", "--name", "second", "--yes", "--db", db_url]) == 2


def test_renaming_a_tuning_onto_a_taken_name_changes_nothing(db_url, fake_judge, capsys):
    store = api.open_store(db_url)
    for name in ("a", "b"):
        assert main([*TUNE, "--name", name, "--db", db_url]) == 0
    capsys.readouterr()
    assert main(["rename-tuning", "--name", "a", "--to", "b", "--db", db_url]) == 2
    assert "already exists" in capsys.readouterr().err
    assert {t.name for t in store.tunings()} == {"a", "b"}


def test_tune_without_contexts_fits_a_dataset_smaller_than_the_default(db_url, capsys):
    assert main(["tune", str(SAMPLE), "--aspect", "coherence", "--holdout", "1", "--plan",
                 "--db", db_url]) == 0   # 3 articles: 2 to tune on, 1 held out (default: 8)
    assert "x 60 comparisons (40 on the tuning contexts, 20 held out)" in capsys.readouterr().out


def test_a_finished_tune_says_it_finished_and_an_early_stop_says_why(db_url, fake_judge, capsys):
    assert main([*TUNE, "--name", "done", "--db", db_url]) == 0
    out = capsys.readouterr().out
    assert "finished: 7 wording(s) judged, 0 round(s) of paraphrases" in out
    assert "stopped" not in out
    # one round asked for, no writer chosen: the search stops before it, and says why
    assert main([*TUNE[:-4], "--rounds", "1", "--pairs", "4", "--name", "early",
                 "--db", db_url]) == 0
    out = capsys.readouterr().out
    assert "stopped early: no writer" in out and "finished" not in out
    assert api.open_store(db_url).tuning("early").info.message.startswith("stopped early: ")

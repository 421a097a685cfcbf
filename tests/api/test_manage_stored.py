"""Deleting and renaming runs and datasets: the store, the Python API and the CLI.

* a delete removes the run or dataset with every row that belongs to it, in one transaction, and
  leaves no orphan: checked in SQL over every table and foreign key of ``db.schema``, so a table
  added later is checked too; another run's or dataset's rows are untouched;
* a delete reports (and a dry run previews) the rows it removes, exactly;
* a delete is refused while a worker executes the run (or a run of the dataset), and allowed once
  the run was cancelled or its worker stopped sending heartbeats;
* a rename keeps everything readable (rankings, ``runs()``, ``compassess runs|rank``); a renamed
  dataset's runs resume under the new name; a taken or invalid name is refused;
* ``compassess delete-run|delete-dataset`` refuse without ``--yes`` when the input is not a
  terminal (exit 2, printing what would be deleted), ask on a terminal, delete with ``--yes``.

Every test uses the ``db_url``/``store`` fixtures (a SQLite file, or the database named by
COMPASSESS_TEST_DATABASE_URL: .ci/run runs this file on PostgreSQL too).
"""

from __future__ import annotations

import io
import json
import math
import sys
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import Table, UniqueConstraint, text, update

import compassess_core as ca
from compassess_core.runs.absolute import (TARGET_FIRST, AbsoluteJudgement, AbsoluteKey,
                                      AbsoluteResult, Reference)
from compassess_core.api.records import _DELETED_FIELDS
from compassess_core.cli import main
from compassess_core.data.candidates import content_hash
from compassess_core.errors import InputError, RunNotFoundError
from compassess_core.runs.run_loop import STALE_AFTER_S
from compassess_core.runs.scoring import ScoreJudgement, ScoreResult
from compassess_core.types import (Candidate, CandidateKey, ComparisonResult, Context, Dataset,
                                   Judgement, PairKey)
from db.schema import Base, RunRow, utcnow
from tests.fakes import FakeLengthJudge

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "assets" / "sample_summeval.csv"
JUDGE = "fake-judge@abc"


# ------------------------------------------------------------------------------ filling a store

def settings(dataset: str, **over) -> dict:
    s = dict(dataset=dataset, model="fake", aspect="coherence", template_name="t1",
             label_words=[" A", " B"], strategy="full", budget=None, contexts=None, seed=0,
             batch_size=8, device="cpu", dtype="auto")
    s.update(over)
    return s


def comparison(ctx: str, a: str, b: str, p: float) -> ComparisonResult:
    j = Judgement(p=p, logp_a=math.log(p), logp_b=math.log(1 - p), label_mass=0.9,
                  latency_ms=1.0)
    return ComparisonResult(PairKey(ctx, a, b), j, f"h-{ctx}-{a}-{b}")


def candidate_score(ctx: str, cand: str) -> ScoreResult:
    j = ScoreJudgement(score_argmax=7.0, score_expected=6.5, probabilities=(0.1,) * 10,
                       label_mass=0.8, latency_ms=1.0)
    return ScoreResult(CandidateKey(ctx, cand), j, f"s-{ctx}-{cand}")


def reference_comparison(ctx: str, cand: str, level: int) -> AbsoluteResult:
    j = AbsoluteJudgement(p_better=0.6, p_worse=0.3, p_similar=0.1, logp_better=-0.5,
                          logp_worse=-1.2, logp_similar=-2.3, label_mass=0.7, latency_ms=1.0)
    return AbsoluteResult(AbsoluteKey(ctx, cand, level, TARGET_FIRST), j,
                          f"x-{ctx}-{cand}-{level}", "ref-1")


def dataset(name: str, word: str) -> Dataset:
    """2 contexts x 3 candidates (ids doc1..2, c1..c3) with a coherence score; ``word`` makes
    the content (and so the content hash) differ between datasets."""
    contexts = tuple(
        Context(f"doc{i}", f"{word} source text {i}.", tuple(
            Candidate(f"c{j}", f"{word} summary {i}.{j} " * j, system=f"s{j}",
                      scores={"coherence": float(j + i)}, row=3 * i + j) for j in (1, 2, 3)))
        for i in (1, 2))
    return Dataset(name=name, contexts=contexts, score_columns=("coherence",),
                   source=f"{name}.csv", content_hash=content_hash(contexts))


def fill(store, name: str, word: str) -> tuple[int, list[int]]:
    """A dataset with one run of each kind, each with results, human labels, guidelines and
    reference texts; returns the dataset's id and its runs' ids."""
    ds_id = store.save_dataset(dataset(name, word))
    runs = []
    for kind in ("comparative", "scoring", "absolute"):
        rid = store.create_run(f"{name}-{kind}", ds_id, settings(name, kind=kind))
        store.record_judge(rid, JUDGE)
        runs.append(rid)
    store.add_results(runs[0], "comparative", [comparison("doc1", "c1", "c2", 0.7),
                                               comparison("doc1", "c2", "c1", 0.4),
                                               comparison("doc2", "c3", "c1", 0.2)])
    store.add_results(runs[1], "scoring", [candidate_score("doc1", "c1"),
                                           candidate_score("doc2", "c2")])
    store.add_results(runs[2], "absolute", [reference_comparison("doc1", "c1", 1),
                                            reference_comparison("doc1", "c1", 2)])
    store.add_human_judgements(ds_id, [
        dict(context_id="doc1", candidate_left="c1", candidate_right="c2", winner="A",
             annotator="ann"),
        dict(context_id="doc2", candidate_left="c3", candidate_right="c2", winner="tie",
             annotator="ann")])
    store.set_guidelines(ds_id, f"judge {name} fairly")
    store.save_references(ds_id, "coherence", "m1", [Reference("doc1", 1, "worst"),
                                                     Reference("doc1", 2, "best")])
    return ds_id, runs


# ------------------------------------------------------------------------------ reading in SQL

def tables() -> list[Table]:
    return list(Base.metadata.sorted_tables)


def counts(store) -> dict[str, int]:
    with store.engine.connect() as conn:
        return {t.name: conn.execute(text(f"SELECT COUNT(*) FROM {t.name}")).scalar_one()
                for t in tables()}


def orphans(store) -> dict[str, int]:
    """Rows whose foreign key names no row, per ``table.column``, over the whole schema."""
    found = {}
    with store.engine.connect() as conn:
        for t in tables():
            for fk in t.foreign_keys:
                parent = fk.column.table.name
                n = conn.execute(text(
                    f"SELECT COUNT(*) FROM {t.name} WHERE {fk.parent.name} IS NOT NULL AND "
                    f"{fk.parent.name} NOT IN (SELECT {fk.column.name} FROM {parent})")).scalar_one()
                if n:
                    found[f"{t.name}.{fk.parent.name}"] = n
    return found


def referencing(store, parent: str, ids: list[int]) -> dict[str, int]:
    """Rows of any table whose foreign key to ``parent`` names one of ``ids`` (and the parent's
    own rows of those ids), per ``table.column``; discovered from the schema."""
    found = {}
    if not ids:
        return found
    in_ids = ", ".join(str(int(i)) for i in ids)
    with store.engine.connect() as conn:
        n = conn.execute(text(f"SELECT COUNT(*) FROM {parent} WHERE id IN ({in_ids})")).scalar_one()
        if n:
            found[f"{parent}.id"] = n
        for t in tables():
            for fk in t.foreign_keys:
                if fk.column.table.name != parent:
                    continue
                n = conn.execute(text(f"SELECT COUNT(*) FROM {t.name} WHERE {fk.parent.name} "
                                      f"IN ({in_ids})")).scalar_one()
                if n:
                    found[f"{t.name}.{fk.parent.name}"] = n
    return found


def ids_of(store, table: str, where: str) -> list[int]:
    with store.engine.connect() as conn:
        return [r[0] for r in conn.execute(text(f"SELECT id FROM {table} WHERE {where}"))]


def snapshot(store, dataset_id: int, run_ids: list[int]):
    """Everything readable of a dataset and its runs (to show they are untouched)."""
    return (store.load_dataset(dataset_id),
            [repr(store.stored_results(r, k)) for r, k in zip(run_ids, ("comparative", "scoring",
                                                                       "absolute"))],
            store.human_judgements_frame(dataset_id).to_json(),
            store.get_guidelines(dataset_id),
            store.load_references(dataset_id, "coherence", "m1"))


def make_live(store, run_id: int) -> None:
    """The run as a worker executing it leaves it: running, with a fresh heartbeat."""
    store.set_run_status(run_id, "running", done=1, total=3)


def make_stale(store, run_id: int) -> None:
    """The run as a worker that died leaves it: running, heartbeat older than STALE_AFTER_S."""
    with store.engine.begin() as conn:
        conn.execute(update(RunRow).where(RunRow.id == run_id).values(
            heartbeat_at=utcnow() - timedelta(seconds=STALE_AFTER_S + 5)))


# ------------------------------------------------------------------------------ the schema

def test_every_foreign_key_column_leads_an_index_and_migration_0008_adds_and_drops_them(db_url):
    """A delete looks up the rows referencing each deleted row: without an index on the
    referencing column that is a scan of the whole table per deleted row."""
    from alembic import command
    from sqlalchemy import create_engine, inspect
    from sqlalchemy.pool import NullPool

    from db.connection import alembic_config
    from db.store import Store

    def leading(table: Table) -> set[str]:
        led = {c.name for c in list(table.primary_key.columns)[:1]}
        led |= {list(i.columns)[0].name for i in table.indexes}
        led |= {list(c.columns)[0].name for c in table.constraints
                if isinstance(c, UniqueConstraint)}
        return led

    unindexed = [f"{t.name}.{fk.parent.name}" for t in tables() for fk in t.foreign_keys
                 if fk.parent.name not in leading(t)]
    assert unindexed == []

    Store(db_url).close()
    engine = create_engine(db_url, poolclass=NullPool)
    added = {"comparisons": {"context_id", "a_id", "b_id"},
             "human_judgements": {"left_id", "right_id"},
             "candidate_scores": {"context_id", "candidate_id"},
             "absolute_comparisons": {"context_id", "candidate_id"}}

    def indexed(conn) -> dict[str, set[str]]:
        found = {}
        for table in added:
            found[table] = {i["column_names"][0] for i in inspect(conn).get_indexes(table)
                            if len(i["column_names"]) == 1} & added[table]
        return found

    cfg = alembic_config()
    with engine.begin() as conn:
        assert indexed(conn) == added
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0007")
        assert indexed(conn) == {t: set() for t in added}
        command.upgrade(cfg, "0008")
        assert indexed(conn) == added
    engine.dispose()


# ------------------------------------------------------------------------------ deleting a run

def test_deleting_a_run_leaves_no_row_that_references_it_and_touches_no_other(store):
    ds_id, runs = fill(store, "alpha", "alpha")
    other_ds, other_runs = fill(store, "beta", "beta")
    before, kept = counts(store), snapshot(store, other_ds, other_runs)
    # every run's results, its dataset's rows and the other dataset stay
    for rid in runs:
        deleted = store.delete_run(rid)
        assert deleted["runs"] == 1
        assert referencing(store, "runs", [rid]) == {}
    assert orphans(store) == {}
    after = counts(store)
    assert after["runs"] == before["runs"] - 3
    for table in ("comparisons", "candidate_scores", "absolute_comparisons"):
        assert after[table] == before[table] // 2, table  # the other dataset's half is left
    for table in ("datasets", "contexts", "candidates", "reference_scores", "human_judgements",
                  "guidelines", "synthetic_references"):
        assert after[table] == before[table], table
    assert snapshot(store, other_ds, other_runs) == kept
    assert [r.name for r in store.list_runs()] == [f"beta-{k}" for k in
                                                   ("comparative", "scoring", "absolute")]
    with pytest.raises(RunNotFoundError):
        store.delete_run(runs[0])


def test_a_run_delete_reports_exactly_what_it_removed_and_a_dry_run_removes_nothing(store):
    _, runs = fill(store, "alpha", "alpha")
    before = counts(store)
    preview = store.delete_run("alpha-comparative", dry_run=True)
    assert counts(store) == before
    # panel_members: a run on a panel is refused (tests/stats/test_panel.py), so always 0 here
    assert preview == {"runs": 1, "comparisons": 3, "candidate_scores": 0,
                       "absolute_comparisons": 0, "panel_members": 0}
    assert store.delete_run("alpha-comparative") == preview
    after = counts(store)
    assert {t: before[t] - after[t] for t in before if before[t] != after[t]} == \
        {t: n for t, n in preview.items() if n}
    # by id as text too, as the CLI passes it
    assert store.delete_run(str(runs[1]))["candidate_scores"] == 2


def test_deleting_a_run_removes_its_judgements_from_the_cache_and_other_runs_keep_theirs(db_url):
    api = ca.open_store(db_url)
    first = api.run(SAMPLE, aspect="coherence", name="first", contexts=1,
                    judge=FakeLengthJudge(), progress=False)
    judge = FakeLengthJudge()
    second = api.run(SAMPLE, aspect="coherence", name="second", contexts=1, judge=judge,
                     progress=False)
    assert judge.seen == []  # every judgement came from the first run's (the cache)
    ranking = second.rankings()
    deleted = api.delete_run("first")
    assert deleted == ca.Deleted(runs=1, comparisons=first.info.done)
    assert str(deleted) == f"1 run, {first.info.done} comparisons"
    pd.testing.assert_frame_equal(second.refresh().rankings(), ranking)
    assert list(api.runs()["name"]) == ["second"]


# ------------------------------------------------------------------------------ deleting a dataset

def test_deleting_a_dataset_leaves_no_orphan_and_touches_no_other_dataset(store):
    ds_id, runs = fill(store, "alpha", "alpha")
    other_ds, other_runs = fill(store, "beta", "beta")
    before, kept = counts(store), snapshot(store, other_ds, other_runs)
    contexts = ids_of(store, "contexts", f"dataset_id = {ds_id}")
    candidates = ids_of(store, "candidates", f"dataset_id = {ds_id}")
    assert contexts and candidates and runs

    deleted = store.delete_dataset("alpha")

    assert referencing(store, "datasets", [ds_id]) == {}
    assert referencing(store, "contexts", contexts) == {}
    assert referencing(store, "candidates", candidates) == {}
    assert referencing(store, "runs", runs) == {}
    assert orphans(store) == {}
    after = counts(store)
    # exactly half of every table went (the two datasets were filled alike), people untouched
    assert {t: before[t] - after[t] for t in before} == {t: before[t] // 2 for t in before}
    # tables that belong to no dataset (people, sign-outs, named templates) are not in a delete
    unowned = ("people", "sign_outs", "templates")
    assert deleted == {t: before[t] // 2 for t in before if t not in unowned}
    assert next(iter(deleted)) == "datasets"
    assert snapshot(store, other_ds, other_runs) == kept
    assert [d.name for d in store.list_datasets()] == ["beta"]
    with pytest.raises(RunNotFoundError):
        store.delete_dataset(ds_id)
    # saving it again gives a new id and fresh id maps
    new_id = store.save_dataset(dataset("alpha", "alpha"))
    assert new_id != ds_id
    rid = store.create_run("again", new_id, settings("alpha"))
    store.add_results(rid, "comparative", [comparison("doc2", "c3", "c1", 0.2)])
    assert set(store.stored_results(rid, "comparative")) == {PairKey("doc2", "c3", "c1")}


def test_a_dataset_delete_through_the_api_counts_every_kind_and_a_dry_run_keeps_everything(
        store, db_url):
    fill(store, "alpha", "alpha")
    api = ca.open_store(db_url)
    before = counts(store)
    rows = store.delete_dataset("alpha", dry_run=True)
    assert set(rows) <= set(_DELETED_FIELDS), "every table a delete reports has a Deleted field"
    preview = api.delete_dataset("alpha", dry_run=True)
    assert counts(store) == before
    assert preview == ca.Deleted(datasets=1, runs=3, comparisons=3, scores=2,
                                 absolute_comparisons=2, labels=2, guidelines=1, references=2,
                                 contexts=2, candidates=6, reference_scores=6)
    assert str(preview).startswith("1 dataset, 3 runs, 3 comparisons, 2 candidate scores, ")
    assert api.delete_dataset("alpha") == preview
    assert api.datasets().empty and api.runs().empty


# ------------------------------------------------------------------------------ refused while live

@pytest.mark.parametrize("cancel", [False, True])
def test_a_delete_is_refused_while_a_worker_executes_the_run(store, cancel):
    ds_id, runs = fill(store, "alpha", "alpha")
    make_live(store, runs[1])
    if cancel:  # asked to stop, still finishing its micro-batch: still live
        store.request_cancel(runs[1])
    before = counts(store)
    for attempt in (lambda: store.delete_run("alpha-scoring"),
                    lambda: store.delete_run(runs[1], dry_run=True)):
        with pytest.raises(InputError, match=r"run 'alpha-scoring' is being executed by a "
                                             r"worker \(pid \d+\): cancel the run first"):
            attempt()
    with pytest.raises(InputError, match=r"run 'alpha-scoring' .*belongs to dataset 'alpha': "
                                         r"cancel the run first"):
        store.delete_dataset("alpha")
    assert counts(store) == before
    store.delete_run(runs[0])  # the dataset's other runs are not live


def test_a_delete_is_allowed_once_the_run_was_cancelled_or_its_worker_died(store):
    ds_id, runs = fill(store, "alpha", "alpha")
    make_live(store, runs[0])
    store.set_run_status(runs[0], "cancelled", message="stopped")
    assert store.delete_run(runs[0])["runs"] == 1
    make_live(store, runs[1])
    make_stale(store, runs[1])
    assert store.delete_dataset(ds_id)["runs"] == 2
    assert orphans(store) == {}


def test_the_api_says_to_cancel_a_live_run_before_deleting_it(db_url):
    api = ca.open_store(db_url)
    run = api.run(SAMPLE, aspect="coherence", name="r", contexts=1, judge=FakeLengthJudge(),
                  progress=False)
    make_live(api.backend, run.id)
    with pytest.raises(ca.InputError, match="run 'r' is being executed by a worker"):
        run.delete()
    run.cancel()
    api.backend.set_run_status(run.id, "cancelled")
    assert run.delete().runs == 1


# ------------------------------------------------------------------------------ renaming

def test_a_renamed_run_reads_back_the_same_and_keeps_its_worker_state(db_url):
    api = ca.open_store(db_url)
    run = api.run(SAMPLE, aspect="coherence", name="old", contexts=1, judge=FakeLengthJudge(),
                  progress=False)
    ranking, done = run.rankings("bradley-terry", "balanced"), run.info.done
    renamed = api.rename_run("old", "new name")
    assert (renamed.name, renamed.id) == ("new name", run.id)
    pd.testing.assert_frame_equal(renamed.rankings("bradley-terry", "balanced"), ranking)
    assert list(api.runs()["name"]) == ["new name"]
    with pytest.raises(ca.InputError, match="no run named"):
        api.get_run("old")
    # while a worker executes it: allowed (the worker knows the run by its id)
    make_live(api.backend, run.id)
    assert run.rename("newer").name == "newer" and run.state == "working"
    assert api.get_run("newer").info.n_comparisons == done
    assert api.rename_run("newer", "newer").name == "newer"  # its own name: nothing to do


def test_renaming_a_run_to_a_taken_or_invalid_name_is_refused_and_changes_nothing(store):
    fill(store, "alpha", "alpha")
    with pytest.raises(InputError, match="cannot rename run 'alpha-scoring' to 'alpha-absolute':"
                                         " another run .* is named 'alpha-absolute'"):
        store.rename_run("alpha-scoring", "alpha-absolute")
    for bad, problem in (("", "must not be empty"), ("  ", "must not be empty"),
                         ("-x", "must not start with '-'"), ("x" * 1000, "at most")):
        with pytest.raises(InputError, match=problem):
            store.rename_run("alpha-scoring", bad)
    with pytest.raises(RunNotFoundError):
        store.rename_run("nope", "fine")
    assert [r.name for r in store.list_runs()] == ["alpha-comparative", "alpha-scoring",
                                                   "alpha-absolute"]


def test_a_renamed_dataset_keeps_its_runs_readable_and_resumable_under_the_new_name(db_url):
    api = ca.open_store(db_url)
    run = api.run(SAMPLE, aspect="coherence", name="r", contexts=1, judge=FakeLengthJudge(),
                  progress=False)
    old = run.dataset.name
    ranking = run.rankings()
    api.rename_dataset(old, "summeval, renamed")
    assert list(api.datasets()["name"]) == ["summeval, renamed"]
    assert api.runs()[["name", "dataset"]].values.tolist() == [["r", "summeval, renamed"]]
    again = api.get_run("r")
    assert again.settings.dataset == "summeval, renamed"  # the recorded settings follow
    assert again.dataset.name == "summeval, renamed"
    pd.testing.assert_frame_equal(again.rankings(), ranking)
    # the same settings on the renamed dataset resume the run: nothing is judged again
    judge = FakeLengthJudge()
    resumed = api.run("summeval, renamed", aspect="coherence", name="r", contexts=1, judge=judge,
                      progress=False)
    assert resumed.id == run.id and judge.seen == []
    with pytest.raises(ca.InputError):
        api.dataset(old)


def test_renaming_a_dataset_to_a_taken_or_invalid_name_is_refused_and_changes_nothing(store):
    ds_id, _ = fill(store, "alpha", "alpha")
    fill(store, "beta", "beta")
    with pytest.raises(InputError, match="cannot rename dataset 'alpha' to 'beta': another "
                                         "dataset .* is named 'beta'"):
        store.rename_dataset(ds_id, "beta")
    for bad in ("", "-x", "x" * 1000, "a\nb"):
        with pytest.raises(InputError):
            store.rename_dataset("alpha", bad)
    with pytest.raises(RunNotFoundError):
        store.rename_dataset("nope", "fine")
    assert [d.name for d in store.list_datasets()] == ["alpha", "beta"]
    assert {r.settings["dataset"] for r in store.list_runs(ds_id)} == {"alpha"}
    store.rename_dataset("alpha", "gamma")  # other datasets' runs keep their settings
    assert {r.dataset_name: r.settings["dataset"] for r in store.list_runs()} == \
        {"gamma": "gamma", "beta": "beta"}


# ------------------------------------------------------------------------------ the CLI

def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


class Terminal(io.StringIO):
    """Standard input that is a terminal, with the person's answer typed in."""

    def isatty(self) -> bool:
        return True


def test_cli_delete_without_yes_and_without_a_terminal_refuses_and_prints_the_counts(
        store, db_url, capsys, monkeypatch):
    fill(store, "alpha", "alpha")
    before = counts(store)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, out, err = cli(capsys, "delete-run", "--run", "alpha-comparative", "--db", db_url)
    assert code == 2
    assert "deleting run 'alpha-comparative' would delete: 1 run, 3 comparisons" in out
    assert "not deleted: pass --yes" in err
    code, out, err = cli(capsys, "delete-dataset", "--dataset", "alpha", "--db", db_url)
    assert code == 2
    assert ("would delete: 1 dataset, 3 runs, 3 comparisons, 2 candidate scores, 2 reference "
            "comparisons, 2 human labels, 1 guidelines text, 2 reference texts, 2 contexts, "
            "6 candidates, 6 reference scores") in out
    assert counts(store) == before


def test_cli_delete_asks_on_a_terminal_and_deletes_with_yes(store, db_url, capsys, monkeypatch):
    fill(store, "alpha", "alpha")
    fill(store, "beta", "beta")
    before = counts(store)
    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    code, out, _ = cli(capsys, "delete-run", "--run", "alpha-comparative", "--db", db_url)
    assert (code, counts(store)) == (0, before) and "was not deleted" in out
    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    code, out, _ = cli(capsys, "delete-run", "--run", "alpha-comparative", "--db", db_url)
    assert code == 0 and "deleted run 'alpha-comparative': 1 run, 3 comparisons" in out
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, out, _ = cli(capsys, "delete-dataset", "--dataset", "alpha", "--yes", "--db", db_url)
    assert code == 0 and out.startswith("deleted dataset 'alpha': 1 dataset, 2 runs, ")
    assert [d.name for d in store.list_datasets()] == ["beta"] and orphans(store) == {}
    # a live run is refused with exit 2, --yes or not
    make_live(store, store.get_run("beta-absolute").id)
    code, _, err = cli(capsys, "delete-dataset", "--dataset", "beta", "--yes", "--db", db_url)
    assert code == 2 and "run 'beta-absolute' is being executed by a worker" in err
    code, _, err = cli(capsys, "delete-run", "--run", "nope", "--yes", "--db", db_url)
    assert code == 2 and "no run named or numbered 'nope'" in err


def test_cli_renames_and_runs_and_rank_work_afterwards(db_url, capsys):
    api = ca.open_store(db_url)
    run = api.run(SAMPLE, aspect="coherence", name="r1", contexts=1, judge=FakeLengthJudge(),
                  progress=False)
    dataset_name = run.dataset.name
    code, out, _ = cli(capsys, "rename-run", "--run", "r1", "--to", "r 2", "--db", db_url)
    assert code == 0 and out.strip() == "renamed run 'r1' to 'r 2'"
    code, out, _ = cli(capsys, "rename-dataset", "--dataset", dataset_name, "--to", "summeval3",
                       "--db", db_url)
    assert code == 0 and out.strip() == f"renamed dataset '{dataset_name}' to 'summeval3'"
    code, out, _ = cli(capsys, "runs", "--db", db_url)
    assert out.split("\t")[:3] == ["r 2", "summeval3", "completed"]
    code, out, _ = cli(capsys, "runs", "--json", "--db", db_url)
    assert [(r["name"], r["dataset"]) for r in json.loads(out)] == [("r 2", "summeval3")]
    code, out, _ = cli(capsys, "rank", "--run", "r 2", "--format", "json", "--db", db_url)
    assert code == 0
    ranked = pd.DataFrame(json.loads(out)["rankings"])
    assert ranked[["context_id", "candidate_id", "rank"]].values.tolist() == \
        run.rankings()[["context_id", "candidate_id", "rank"]].values.tolist()
    code, _, err = cli(capsys, "rename-run", "--run", "r 2", "--to=-x", "--db", db_url)
    assert code == 2 and "must not start with '-'" in err
    api.backend.save_dataset(dataset("other", "other"))
    code, _, err = cli(capsys, "rename-dataset", "--dataset", "summeval3", "--to", "other",
                       "--db", db_url)
    assert code == 2 and "another dataset" in err and "'summeval3'" in err

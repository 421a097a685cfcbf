"""The store on real databases: datasets, runs, results of every kind, cache, status, judgements,
migrations.

Every test uses the ``db_url``/``store`` fixtures of conftest.py (a SQLite file in tmp_path, or the
database named by COMPASSESS_TEST_DATABASE_URL).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from compassess_core.runs.absolute import (REFERENCE_FIRST, TARGET_FIRST, AbsoluteJudgement,
                                      AbsoluteKey, AbsoluteResult)
from compassess_core.data.candidates import content_hash
from compassess_core.errors import InputError, RunNotFoundError
from compassess_core.runs.scoring import ScoreJudgement, ScoreResult
from compassess_core.types import (Candidate, CandidateKey, ComparisonResult, Context, Dataset,
                                   Judgement, Outcome, PairKey)
from db.connection import alembic_config
from db.store import Store, default_database_url
from tests.start_line import WAIT_FOR_GO, release_together

REPO = Path(__file__).resolve().parents[2]
LABELS = '[" A", " B"]'
JUDGE = "smollm2-135m@abc"


def settings(**over) -> dict:
    s = dict(dataset="tiny", model="bundled:SmolLM2-135M-Instruct", aspect="coherence", aspect_adjective="coherent", template_name="t1",
             template_text="{context} {a} {b} {aspect}", primer="Answer: Summary",
             label_words=[" A", " B"], strategy="full", budget=None, contexts=None, seed=0,
             batch_size=8, device="cpu", dtype="auto")
    s.update(over)
    return s


def result(ctx: str, a: str, b: str, p: float, h: str | None = None, **kw) -> ComparisonResult:
    j = Judgement(p=p, logp_a=kw.get("logp_a", math.log(p)), logp_b=kw.get("logp_b", math.log(1 - p)),
                  label_mass=kw.get("label_mass", 0.9), latency_ms=kw.get("latency_ms", 12.5))
    return ComparisonResult(PairKey(ctx, a, b), j, h or f"h-{ctx}-{a}-{b}")


def score(ctx: str, cand: str, value: float = 7.0, h: str | None = None) -> ScoreResult:
    probs = (0.05,) * 8 + (0.6, float("nan"))  # a NaN inside the list is stored as null
    j = ScoreJudgement(score_argmax=value, score_expected=value - 0.25, probabilities=probs,
                       label_mass=0.8, latency_ms=float("nan"))
    return ScoreResult(CandidateKey(ctx, cand), j, h or f"s-{ctx}-{cand}")


def absolute(ctx: str, cand: str, level: int, order: str = TARGET_FIRST, pb: float = 0.6,
             h: str | None = None, ref: str = "ref-1") -> AbsoluteResult:
    j = AbsoluteJudgement(p_better=pb, p_worse=0.9 - pb, p_similar=0.1, logp_better=math.log(pb),
                          logp_worse=-1.5, logp_similar=float("nan"), label_mass=0.7,
                          latency_ms=2.0)
    return AbsoluteResult(AbsoluteKey(ctx, cand, level, order), j,
                          h or f"x-{ctx}-{cand}-{level}-{order}", ref)


def same(a: object, b: object) -> bool:
    """Equal, NaN fields included (a NaN read back is another object, and NaN != NaN)."""
    return repr(a) == repr(b)


def add(store: Store, run_id: int, results: list) -> None:
    store.add_results(run_id, "comparative", results)


def pairs(store: Store, run_id: int) -> set[PairKey]:
    return set(store.stored_results(run_id, "comparative"))


def count(store: Store, table: str) -> int:
    with store.engine.connect() as conn:
        return conn.execute(text(f"SELECT COUNT(*) FROM {table}")).scalar_one()


@pytest.fixture
def run_id(store, tiny_dataset) -> int:
    rid = store.create_run("r1", store.save_dataset(tiny_dataset), settings())
    store.record_judge(rid, JUDGE)
    return rid


# ------------------------------------------------------------------------- datasets

def test_store_offers_the_result_sink_of_every_run_kind(store):
    # What the run loop calls, whatever the kind of run (compassess_core.runs.sink's contract).
    for name in ("record_judge", "stored_results", "cached_results", "add_results",
                 "set_run_status", "cancel_requested"):
        assert callable(getattr(store, name)), name
    for gone in ("stored_pairs", "cached_judgements", "add_comparisons", "stored_probabilities",
                 "stored_scores", "cached_scores", "add_scores", "stored_absolute",
                 "cached_absolute", "add_absolute", "set_run_model_key"):
        assert not hasattr(store, gone), gone


def test_dataset_round_trip_is_exact(store, tiny_dataset):
    ds_id = store.save_dataset(tiny_dataset)
    assert store.load_dataset(ds_id) == tiny_dataset
    assert store.load_dataset("tiny") == tiny_dataset
    assert store.load_dataset(str(ds_id)) == tiny_dataset
    [info] = store.list_datasets()
    assert (info.id, info.name, info.n_contexts, info.n_candidates, info.score_columns,
            info.source, info.content_hash) == (ds_id, "tiny", 2, 6, ["coherence"], "tiny.csv",
                                                tiny_dataset.content_hash)
    assert info.created_at.tzinfo is not None


def test_round_trip_keeps_nan_score_missing_system_and_no_row(store):
    ctx = (Context("k", "ctx", (Candidate("x", "t1", None, {"a": float("nan"), "b": 1.0}, None),
                                Candidate("y", "t2", "sys", {"b": 2.0}, 9))),)
    ds = Dataset("odd", ctx, ("a", "b"), "", content_hash="odd-hash")
    loaded = store.load_dataset(store.save_dataset(ds))
    x, y = loaded.contexts[0].candidates
    assert math.isnan(x.scores["a"]) and x.scores["b"] == 1.0 and x.system is None and x.row is None
    assert y == Candidate("y", "t2", "sys", {"b": 2.0}, 9)
    assert (loaded.name, loaded.score_columns, loaded.content_hash) == ("odd", ("a", "b"), "odd-hash")


def test_empty_content_hash_is_computed(store, tiny_dataset):
    # as compassess_core.data.candidates computes it, so a later save of the same file is recognised
    loaded = store.load_dataset(store.save_dataset(dataclasses.replace(tiny_dataset, content_hash="")))
    assert loaded == tiny_dataset


def test_save_is_idempotent_and_keeps_the_first_name(store, tiny_dataset):
    first = store.save_dataset(tiny_dataset)
    assert store.save_dataset(tiny_dataset) == first
    assert store.save_dataset(dataclasses.replace(tiny_dataset, name="renamed")) == first
    assert [d.name for d in store.list_datasets()] == ["tiny"]
    assert count(store, "candidates") == 6


def test_different_dataset_with_existing_name_is_refused(store, tiny_dataset):
    store.save_dataset(tiny_dataset)
    ctx = tiny_dataset.contexts[:1]
    other = Dataset("tiny", ctx, ("coherence",), "other.csv", content_hash(ctx))
    with pytest.raises(InputError, match="a different dataset named 'tiny'"):
        store.save_dataset(other)
    assert len(store.list_datasets()) == 1


def test_failed_save_leaves_nothing_behind(store, tiny_dataset):
    # doc2 repeats candidate id c1: contexts and doc1's candidates are inserted before it fails.
    bad_ctx = tiny_dataset.contexts[1]
    dup = Context(bad_ctx.context_id, bad_ctx.text,
                  (bad_ctx.candidates[0], dataclasses.replace(bad_ctx.candidates[1], candidate_id="c1")))
    contexts = (tiny_dataset.contexts[0], dup)
    bad = Dataset("bad", contexts, ("coherence",), "bad.csv", content_hash(contexts))
    with pytest.raises(InputError, match="could not be saved and nothing was stored"):
        store.save_dataset(bad)
    for table in ("datasets", "contexts", "candidates", "reference_scores"):
        assert count(store, table) == 0, table
    # and the store still works afterwards, under the id the failed save would have had
    ds_id = store.save_dataset(tiny_dataset)
    assert store.load_dataset(ds_id) == tiny_dataset


def test_missing_dataset_raises_not_found(store):
    with pytest.raises(RunNotFoundError, match="no dataset named or numbered 'nope'"):
        store.load_dataset("nope")
    with pytest.raises(RunNotFoundError):
        store.delete_dataset(42)


def test_delete_dataset_cascades(store, tiny_dataset, run_id):
    add(store, run_id, [result("doc1", "c1", "c2", 0.7)])
    store.add_results(run_id, "scoring", [score("doc1", "c1")])
    store.add_results(run_id, "absolute", [absolute("doc1", "c1", 1)])
    ds_id = store.get_run(run_id).dataset_id
    store.add_human_judgements(ds_id, [dict(context_id="doc1", candidate_left="c1",
                                            candidate_right="c2", winner="A")])
    store.set_guidelines(ds_id, "be fair")
    store.delete_dataset("tiny")
    for table in ("datasets", "contexts", "candidates", "reference_scores", "runs", "comparisons",
                  "candidate_scores", "absolute_comparisons", "human_judgements", "guidelines"):
        assert count(store, table) == 0, table
    # saving again gives a new id and fresh id maps (no stale cache)
    new_id = store.save_dataset(tiny_dataset)
    assert new_id != ds_id
    r2 = store.create_run("r2", new_id, settings())
    add(store, r2, [result("doc2", "c3", "c1", 0.2)])
    assert pairs(store, r2) == {PairKey("doc2", "c3", "c1")}


# ------------------------------------------------------------------------- runs

def test_create_run_resumes_with_same_settings(store, tiny_dataset):
    ds_id = store.save_dataset(tiny_dataset)
    rid = store.create_run("r1", ds_id, settings())
    # batch size and device do not change results: same run, settings record the new values
    assert store.create_run("r1", ds_id, settings(batch_size=64, device="cuda")) == rid
    info = store.get_run("r1")
    assert (info.id, info.name, info.dataset_id, info.dataset_name, info.status, info.done,
            info.total, info.n_comparisons) == (rid, "r1", ds_id, "tiny", "pending", 0, None, 0)
    assert info.settings == settings(batch_size=64, device="cuda")
    assert store.get_run(rid) == info and store.list_runs() == [info]
    assert store.list_runs(ds_id) == [info] and store.list_runs(ds_id + 1) == []


def test_create_run_with_conflicting_settings_names_the_keys(store, tiny_dataset):
    ds_id = store.save_dataset(tiny_dataset)
    store.create_run("r1", ds_id, settings())
    with pytest.raises(InputError) as e:
        store.create_run("r1", ds_id, settings(aspect="fluency", seed=3, batch_size=1))
    msg = str(e.value)
    assert "aspect: 'coherence' -> 'fluency'" in msg and "seed: 0 -> 3" in msg
    assert "batch_size" not in msg
    assert len(store.list_runs()) == 1


def test_create_run_refuses_other_dataset_and_bad_input(store, tiny_dataset):
    ds_id = store.save_dataset(tiny_dataset)
    other = store.save_dataset(Dataset("one", tiny_dataset.contexts[:1], ("coherence",), "",
                                       content_hash(tiny_dataset.contexts[:1])))
    store.create_run("r1", ds_id, settings())
    with pytest.raises(InputError, match="already exists on dataset 'tiny', not 'one'"):
        store.create_run("r1", other, settings())
    with pytest.raises(InputError, match="cannot be stored as JSON"):
        store.create_run("r2", ds_id, settings(seed=object()))
    with pytest.raises(RunNotFoundError):
        store.create_run("r3", 999, settings())
    with pytest.raises(RunNotFoundError, match="no run named or numbered 'zz'"):
        store.get_run("zz")


def test_key_settings_are_columns(store, tiny_dataset):
    rid = store.create_run("r1", store.save_dataset(tiny_dataset), settings())

    def columns() -> tuple:
        with store.engine.connect() as conn:
            return tuple(conn.execute(text(
                "SELECT model, model_key, label_words, aspect, template_name, strategy, budget, "
                "seed FROM runs WHERE id = :i"), {"i": rid}).one())

    # the judge is not a setting: unknown until a worker records it
    assert columns() == ("bundled:SmolLM2-135M-Instruct", None, LABELS, "coherence", "t1",
                         "full", None, 0)
    assert store.get_run(rid).judge_key is None
    store.record_judge(rid, JUDGE)
    assert columns()[1] == JUDGE and store.get_run(rid).judge_key == JUDGE
    assert "model_key" not in store.get_run(rid).settings


def test_a_model_key_setting_is_an_ordinary_setting(store, tiny_dataset):
    """The judge's identity is no setting: a model_key in settings is neither a column nor
    matched leniently when the run is created again."""
    ds_id = store.save_dataset(tiny_dataset)
    rid = store.create_run("r", ds_id, settings(model_key=""))
    assert store.get_run(rid).judge_key is None
    assert store.create_run("r", ds_id, settings(model_key="")) == rid
    with pytest.raises(InputError, match="model_key: '' -> 'm@sha256:abc'"):
        store.create_run("r", ds_id, settings(model_key="m@sha256:abc"))


def test_delete_run_removes_its_comparisons_only(store, tiny_dataset, run_id):
    ds_id = store.get_run(run_id).dataset_id
    other = store.create_run("r2", ds_id, settings(seed=1))
    add(store, run_id, [result("doc1", "c1", "c2", 0.7)])
    add(store, other, [result("doc1", "c1", "c2", 0.6)])
    store.delete_run(run_id)
    assert [r.name for r in store.list_runs()] == ["r2"]
    assert count(store, "comparisons") == 1
    with pytest.raises(RunNotFoundError):
        store.delete_run(run_id)


# ------------------------------------------------------------------------- the judge

def test_record_judge_sets_once_and_refuses_another_model(store, tiny_dataset):
    rid = store.create_run("r", store.save_dataset(tiny_dataset), settings())
    store.record_judge(rid, "")  # an empty key names no judge: nothing recorded
    assert store.get_run(rid).judge_key is None
    store.record_judge(rid, JUDGE)
    assert store.get_run(rid).judge_key == JUDGE
    store.record_judge(rid, JUDGE)  # the same judge again (a resume): nothing happens
    assert store.get_run(rid).judge_key == JUDGE
    with pytest.raises(InputError) as e:
        store.record_judge(rid, "smollm2-135m@def")
    assert str(e.value) == (f"run 'r' was judged by {JUDGE}, but its model now loads as "
                            "smollm2-135m@def: the model changed; start a new run")
    info = store.get_run(rid)
    assert info.judge_key == JUDGE and "model_key" not in info.settings
    with pytest.raises(RunNotFoundError):
        store.record_judge(999, JUDGE)


# ------------------------------------------------------------------------- the result sink

def test_add_results_ignores_duplicates_and_stored_results(store, run_id):
    add(store, run_id, [result("doc1", "c1", "c2", 0.7), result("doc1", "c2", "c1", 0.4),
                        result("doc2", "c3", "c1", 0.1)])
    # a repeat (also repeated inside one batch) is ignored and keeps the first value
    add(store, run_id, [result("doc1", "c1", "c2", 0.99), result("doc2", "c1", "c3", 0.8),
                        result("doc2", "c1", "c3", 0.5)])
    assert pairs(store, run_id) == {PairKey("doc1", "c1", "c2"), PairKey("doc1", "c2", "c1"),
                                    PairKey("doc2", "c3", "c1"), PairKey("doc2", "c1", "c3")}
    assert store.get_comparison(run_id, "doc1", "c1", "c2")["p"] == 0.7
    assert store.get_comparison(run_id, "doc2", "c1", "c3")["p"] == 0.8
    assert store.get_run(run_id).n_comparisons == 4
    add(store, run_id, [])  # nothing to do is not an error


def test_add_results_is_atomic_on_unknown_ids(store, run_id):
    with pytest.raises(InputError, match=r"1 comparison\(s\).*\(doc1, c1, zz\)"):
        add(store, run_id, [result("doc1", "c1", "c2", 0.7), result("doc1", "c1", "zz", 0.5)])
    assert pairs(store, run_id) == set()
    with pytest.raises(InputError, match=r"2 score\(s\).*\(doc1, zz\), \(docX, c1\)"):
        store.add_results(run_id, "scoring", [score("doc1", "c1"), score("doc1", "zz"),
                                              score("docX", "c1")])
    with pytest.raises(InputError,
                       match=r"1 absolute comparison\(s\).*\(doc2, c9, 3, target-first\)"):
        store.add_results(run_id, "absolute", [absolute("doc2", "c9", 3)])
    assert store.stored_results(run_id, "scoring") == {}
    assert store.stored_results(run_id, "absolute") == {}
    with pytest.raises(RunNotFoundError):
        add(store, 999, [result("doc1", "c1", "c2", 0.7)])


def test_unknown_kind_and_wrong_records_are_input_errors(store, run_id):
    for call in (lambda: store.stored_results(run_id, "pairwise"),
                 lambda: store.cached_results("pairwise", JUDGE, LABELS, ["h"]),
                 lambda: store.add_results(run_id, "pairwise", [result("doc1", "c1", "c2", 0.7)])):
        with pytest.raises(InputError, match="unknown run kind 'pairwise'; choose one of "
                                             "comparative, scoring, absolute"):
            call()
    with pytest.raises(InputError, match="a scoring run stores ScoreResults, not ComparisonResult"):
        store.add_results(run_id, "scoring", [result("doc1", "c1", "c2", 0.7)])
    assert pairs(store, run_id) == set() and store.stored_results(run_id, "scoring") == {}
    with pytest.raises(RunNotFoundError):
        store.stored_results(999, "scoring")


def test_stored_results_round_trip_every_kind(store, run_id):
    comparisons = [result("doc2", "c3", "c1", 0.1, latency_ms=float("nan")),
                   result("doc1", "c1", "c2", 0.75, logp_a=float("nan"))]
    scores = [score("doc2", "c2", 3.0), score("doc1", "c1", 9.0)]
    absolutes = [absolute("doc1", "c2", 5, REFERENCE_FIRST, pb=0.2),
                 absolute("doc1", "c2", 1, TARGET_FIRST, pb=0.8)]
    add(store, run_id, comparisons)
    store.add_results(run_id, "scoring", scores)
    store.add_results(run_id, "absolute", absolutes)
    for kind, written in (("comparative", comparisons), ("scoring", scores),
                          ("absolute", absolutes)):
        stored = store.stored_results(run_id, kind)
        # keyed by the kind's key, in the order stored, NaN (stored as NULL) read back as NaN
        assert list(stored) == [r.key for r in written], kind
        assert same(list(stored.values()), written), kind
    stored = store.stored_results(run_id, "scoring")[CandidateKey("doc1", "c1")]
    assert isinstance(stored.judgement.probabilities, tuple)
    assert math.isnan(stored.judgement.probabilities[-1])
    assert store.stored_results(store.create_run("r2", store.get_run(run_id).dataset_id,
                                                 settings(seed=2)), "absolute") == {}


def test_absolute_results_replace_a_stored_key(store, run_id):
    store.add_results(run_id, "absolute", [absolute("doc1", "c1", 1, pb=0.3, ref="old"),
                                           absolute("doc1", "c1", 1, REFERENCE_FIRST, pb=0.4)])
    # the reference of level 1 was regenerated: the same (candidate, level, order) is judged again
    fresh = absolute("doc1", "c1", 1, pb=0.9, h="new-hash", ref="new")
    store.add_results(run_id, "absolute", [fresh])
    stored = store.stored_results(run_id, "absolute")
    assert len(stored) == 2 == count(store, "absolute_comparisons")
    assert same(stored[fresh.key], fresh)
    assert stored[AbsoluteKey("doc1", "c1", 1, REFERENCE_FIRST)].judgement.p_better == 0.4
    # while comparative and scoring results keep the first one stored
    store.add_results(run_id, "scoring", [score("doc1", "c1", 4.0)])
    store.add_results(run_id, "scoring", [score("doc1", "c1", 8.0)])
    kept = store.stored_results(run_id, "scoring")[CandidateKey("doc1", "c1")]
    assert kept.judgement.score_argmax == 4.0


def test_cached_results_across_runs(store, tiny_dataset, run_id):
    ds_id = store.get_run(run_id).dataset_id
    add(store, run_id, [result("doc1", "c1", "c2", 0.7, h="H1"),
                        result("doc1", "c2", "c1", 0.25, h="H2")])
    other_template = store.create_run("r2", ds_id, settings(template_name="t2"))
    other_model = store.create_run("r3", ds_id, settings(seed=5))
    other_words = store.create_run("r4", ds_id, settings(label_words=["1", "2"], seed=6))
    unjudged = store.create_run("r5", ds_id, settings(seed=7))
    store.record_judge(other_template, JUDGE)
    store.record_judge(other_model, "other")
    store.record_judge(other_words, JUDGE)
    add(store, other_model, [result("doc1", "c1", "c3", 0.6, h="H3")])
    add(store, other_words, [result("doc1", "c1", "c3", 0.6, h="H4")])
    add(store, unjudged, [result("doc1", "c1", "c3", 0.6, h="H5")])

    hits = store.cached_results("comparative", JUDGE, LABELS, ["H1", "H2", "H3", "H4", "H5", "H9"])
    assert set(hits) == {"H1", "H2"}
    # the judgement only: the run loop ties it to its own key
    assert hits["H1"] == result("doc1", "c1", "c2", 0.7, h="H1").judgement
    assert hits["H2"] == result("doc1", "c2", "c1", 0.25).judgement
    assert set(store.cached_results("comparative", "other", LABELS, ["H1", "H3"])) == {"H3"}
    assert set(store.cached_results("comparative", JUDGE, '["1", "2"]', ["H1", "H4"])) == {"H4"}
    assert store.cached_results("comparative", "", LABELS, ["H1"]) == {}
    assert store.cached_results("comparative", JUDGE, LABELS, []) == {}
    assert store.get_run(other_template).n_comparisons == 0


def test_cached_results_first_stored_wins(store, tiny_dataset, run_id):
    later = store.create_run("r2", store.get_run(run_id).dataset_id, settings(seed=1))
    store.record_judge(later, JUDGE)
    add(store, run_id, [result("doc1", "c1", "c2", 0.7, h="H")])
    add(store, later, [result("doc2", "c1", "c2", 0.2, h="H")])
    assert store.cached_results("comparative", JUDGE, LABELS, ["H"])["H"].p == 0.7


@pytest.mark.parametrize("kind", ["scoring", "absolute"])
def test_cached_results_of_other_kinds_match_judge_and_label_words(store, tiny_dataset, kind):
    make = {"scoring": lambda h: score("doc1", "c1", 6.0, h=h),
            "absolute": lambda h: absolute("doc1", "c1", 2, pb=0.55, h=h)}[kind]
    words = {"scoring": [str(i) for i in range(1, 11)],
             "absolute": [" Better", " Worse", " Similar"]}[kind]
    key = json.dumps(words)
    ds_id = store.save_dataset(tiny_dataset)
    runs = {name: store.create_run(name, ds_id, settings(kind=kind, label_words=lw, seed=i))
            for i, (name, lw) in enumerate([("same", words), ("model", words),
                                            ("words", [" Yes", " No"])])}
    store.record_judge(runs["same"], JUDGE)
    store.record_judge(runs["model"], "other")
    store.record_judge(runs["words"], JUDGE)
    for name, rid in runs.items():
        store.add_results(rid, kind, [make(f"H-{name}")])
    hashes = ["H-same", "H-model", "H-words", "H-none"]

    hits = store.cached_results(kind, JUDGE, key, hashes)
    assert list(hits) == ["H-same"] and same(hits["H-same"], make("H-same").judgement)
    assert list(store.cached_results(kind, "other", key, hashes)) == ["H-model"]
    assert list(store.cached_results(kind, JUDGE, '[" Yes", " No"]', hashes)) == ["H-words"]
    assert store.cached_results(kind, "", key, hashes) == {}
    # a kind's cache holds that kind's results only
    other = "absolute" if kind == "scoring" else "scoring"
    assert store.cached_results(other, JUDGE, key, hashes) == {}


def test_cached_results_handles_many_hashes(store, run_id):
    add(store, run_id, [result("doc1", "c1", "c2", 0.7, h="H1")])
    hashes = [f"x{i}" for i in range(1200)] + ["H1"]
    assert list(store.cached_results("comparative", JUDGE, LABELS, iter(hashes))) == ["H1"]


def test_set_run_status_records_progress_and_heartbeat(store, run_id):
    before = datetime.now(timezone.utc)
    store.set_run_status(run_id, "running", done=3, total=30, message="warming up")
    r = store.get_run(run_id)
    assert (r.status, r.done, r.total, r.message, r.worker_pid) == ("running", 3, 30, "warming up",
                                                                     os.getpid())
    assert before - timedelta(seconds=1) <= r.heartbeat_at <= datetime.now(timezone.utc)
    first_beat = r.heartbeat_at
    time.sleep(0.01)
    store.set_run_status(run_id, "running", done=4)  # same status: message and total kept
    r = store.get_run(run_id)
    assert (r.done, r.total, r.message) == (4, 30, "warming up") and r.heartbeat_at > first_beat
    store.set_run_status(run_id, "completed", done=30)  # status changes: message cleared
    r = store.get_run(run_id)
    assert (r.status, r.done, r.message) == ("completed", 30, None)
    with pytest.raises(InputError, match="unknown run status 'done'"):
        store.set_run_status(run_id, "done")
    with pytest.raises(RunNotFoundError):
        store.set_run_status(999, "running")


def test_cancel_flag(store, run_id):
    assert store.cancel_requested(run_id) is False
    store.request_cancel(run_id)
    assert store.cancel_requested(run_id) is True
    assert store.get_run(run_id).cancel_requested is True
    store.set_run_status(run_id, "running", done=1)  # a heartbeat does not clear the request
    assert store.cancel_requested(run_id) is True
    store.set_run_status(run_id, "cancelled", done=1, message="stopped")  # honoured: resumable
    assert store.cancel_requested(run_id) is False
    assert store.get_run(run_id).message == "stopped"
    store.delete_run(run_id)
    assert store.cancel_requested(run_id) is True  # a deleted run must stop its worker
    with pytest.raises(RunNotFoundError):
        store.request_cancel(run_id)


# ------------------------------------------------------------------------- reading

def test_comparison_table_is_aligned_in_insertion_order(store, run_id):
    add(store, run_id, [result("doc2", "c3", "c1", 0.1, logp_a=-2.0, logp_b=-0.1),
                                   result("doc1", "c1", "c2", 0.75, logp_a=float("nan"),
                                          logp_b=float("nan"), label_mass=1.0)])
    add(store, run_id, [result("doc1", "c2", "c1", 0.5, label_mass=0.25)])
    t = store.comparison_table(run_id)
    assert len(t) == 3
    assert t.context_ids.tolist() == ["doc2", "doc1", "doc1"]
    assert t.a_ids.tolist() == ["c3", "c1", "c2"] and t.b_ids.tolist() == ["c1", "c2", "c1"]
    assert t.context_ids.dtype == object and t.p.dtype == np.float64
    np.testing.assert_array_equal(t.p, [0.1, 0.75, 0.5])
    np.testing.assert_array_equal(t.logp_a, [-2.0, np.nan, math.log(0.5)])
    np.testing.assert_array_equal(t.logp_b, [-0.1, np.nan, math.log(0.5)])
    np.testing.assert_array_equal(t.label_mass, [0.9, 1.0, 0.25])
    assert t.for_context("doc1").a_ids.tolist() == ["c1", "c2"]


def test_comparison_table_of_empty_and_missing_run(store, run_id):
    assert len(store.comparison_table(run_id)) == 0
    with pytest.raises(RunNotFoundError):
        store.comparison_table(999)


def test_comparisons_frame_and_get_comparison(store, run_id):
    before = datetime.now(timezone.utc) - timedelta(seconds=1)
    add(store, run_id, [result("doc1", "c1", "c2", 0.75, h="abc", latency_ms=float("nan")),
                                   result("doc2", "c2", "c3", 0.5)])
    df = store.comparisons_frame(run_id)
    assert list(df.columns) == ["context_id", "a_id", "b_id", "p", "logp_a", "logp_b",
                                "label_mass", "latency_ms", "prompt_hash", "created_at"]
    assert df["context_id"].tolist() == ["doc1", "doc2"] and df["prompt_hash"].tolist()[0] == "abc"
    assert df["p"].tolist() == [0.75, 0.5] and math.isnan(df["latency_ms"][0])
    assert df["latency_ms"][1] == 12.5
    assert (df["created_at"] >= before).all() and str(df["created_at"].dt.tz) == "UTC"
    c = store.get_comparison(run_id, "doc1", "c1", "c2")
    assert (c["context_id"], c["a_id"], c["b_id"], c["p"], c["prompt_hash"]) == (
        "doc1", "c1", "c2", 0.75, "abc")
    assert c["logp_a"] == math.log(0.75) and math.isnan(c["latency_ms"])
    assert store.get_comparison(run_id, "doc1", "c2", "c1") is None
    assert len(store.comparisons_frame(store.create_run("empty", store.get_run(run_id).dataset_id, settings(seed=9)))) == 0


def _big_dataset(n_contexts: int, n_candidates: int) -> Dataset:
    contexts = tuple(
        Context(f"ctx{i}", f"context {i}",
                tuple(Candidate(f"cand{j}", f"text {i}.{j}", f"sys{j}", {"s": float(j)})
                      for j in range(n_candidates)))
        for i in range(n_contexts))
    return Dataset("big", contexts, ("s",), "", content_hash(contexts))


def test_100k_comparisons_write_and_read_back(store):
    ds = _big_dataset(10, 101)  # 10 * 101 * 100 = 101,000 ordered pairs
    rid = store.create_run("big", store.save_dataset(ds), settings(dataset="big"))
    n = 101
    a, b = np.divmod(np.arange(n * n), n)
    keep = a != b
    a, b = a[keep], b[keep]
    rng = np.random.default_rng(0)
    p_all = rng.random((10, len(a)))
    t0 = time.perf_counter()
    for i in range(10):
        add(store, rid, [
            ComparisonResult(PairKey(f"ctx{i}", f"cand{x}", f"cand{y}"),
                             Judgement(float(p), math.log(p), math.log1p(-p), 1.0, 5.0), f"{i}-{x}-{y}")
            for x, y, p in zip(a.tolist(), b.tolist(), p_all[i].tolist())])
    t1 = time.perf_counter()
    table = store.comparison_table(rid)
    t2 = time.perf_counter()
    stored = store.stored_results(rid, "comparative")
    t3 = time.perf_counter()
    print(f"\nwrote {len(table)} comparisons in {t1 - t0:.2f} s, comparison_table in "
          f"{t2 - t1:.3f} s, stored_results in {t3 - t2:.3f} s")
    assert len(stored) == len(table)
    last = stored[PairKey("ctx9", f"cand{n - 1}", f"cand{n - 2}")]
    assert last.judgement.p == p_all[9, -1] and last.prompt_hash == f"9-{n - 1}-{n - 2}"
    assert len(table) == 10 * n * (n - 1)
    assert table.context_ids[:3].tolist() == ["ctx0"] * 3 and table.context_ids[-1] == "ctx9"
    assert table.a_ids[:3].tolist() == ["cand0"] * 3 and table.b_ids[:3].tolist() == [
        "cand1", "cand2", "cand3"]
    np.testing.assert_array_equal(table.p, p_all.ravel())
    np.testing.assert_allclose(table.logp_a, np.log(p_all.ravel()))
    np.testing.assert_array_equal(table.label_mass, np.ones(len(table)))


# ------------------------------------------------------------------------- human judgements

def test_human_judgements_round_trip(store, tiny_dataset):
    ds_id = store.save_dataset(tiny_dataset)
    at = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
    n = store.add_human_judgements(ds_id, [
        dict(context_id="doc1", candidate_left="c2", candidate_right="c1", shown_order="ba",
             winner=Outcome.B, annotator="ann", aspect="coherence", seconds=4.5),
        dict(context_id="doc2", candidate_a="c1", candidate_b="c3", winner="tie",
             annotator="imp", aspect="fluency", source="import", created_at=at),
        dict(context_id="doc2", candidate_left="c3", candidate_right="c2", winner="skip",
             aspect="coherence"),
    ])
    assert n == 3
    df = store.human_judgements_frame(ds_id)
    assert list(df.columns) == ["id", "context_id", "candidate_left", "candidate_right",
                                "shown_order", "winner", "annotator", "aspect", "seconds",
                                "source", "created_at", "revision"]
    assert df[["context_id", "candidate_left", "candidate_right", "winner", "source"]].values.tolist() == [
        ["doc1", "c2", "c1", "B", "app"], ["doc2", "c1", "c3", "tie", "import"],
        ["doc2", "c3", "c2", "skip", "app"]]
    assert df["shown_order"][0] == "ba" and df["shown_order"][1:].isna().all()
    assert df["seconds"][0] == 4.5 and math.isnan(df["seconds"][1])
    assert df["created_at"][1] == at
    coh = store.human_judgements_frame(ds_id, aspect="coherence")
    assert coh["candidate_left"].tolist() == ["c2", "c3"]
    assert len(store.human_judgements_frame(ds_id, aspect="nope")) == 0


def test_human_judgements_report_every_bad_row_and_store_none(store, tiny_dataset):
    ds_id = store.save_dataset(tiny_dataset)
    with pytest.raises(InputError) as e:
        store.add_human_judgements(ds_id, [
            dict(context_id="doc1", candidate_left="c1", candidate_right="c2", winner="A"),
            dict(context_id="docX", candidate_left="c1", candidate_right="c2", winner="A"),
            dict(context_id="doc1", candidate_left="c1", candidate_right="c9", winner="maybe"),
            dict(context_id="doc1", candidate_left="c1", candidate_right="c1", winner="A", colour=1),
        ])
    msg = str(e.value)
    assert msg.startswith("5 problem(s)")
    for part in ("row 1: context 'docX'", "row 2: candidate 'c9' is not in context 'doc1'",
                 "row 2: winner 'maybe'", "row 3: unknown key(s) colour",
                 "row 3: a candidate cannot be compared with itself"):
        assert part in msg
    assert count(store, "human_judgements") == 0
    assert store.add_human_judgements(ds_id, []) == 0


def test_guidelines(store, tiny_dataset):
    ds_id = store.save_dataset(tiny_dataset)
    assert store.get_guidelines(ds_id) == ""
    store.set_guidelines(ds_id, "Prefer faithful summaries.")
    store.set_guidelines(ds_id, "Prefer coherent summaries.")
    assert store.get_guidelines(ds_id) == "Prefer coherent summaries."
    assert count(store, "guidelines") == 1
    with pytest.raises(RunNotFoundError):
        store.set_guidelines(999, "x")


# ------------------------------------------------------------------------- opening, migrations

def test_default_database_url(monkeypatch, tmp_path):
    monkeypatch.setenv("COMPASSESS_DATABASE_URL", "postgresql://u@h/db")
    assert default_database_url() == "postgresql://u@h/db"
    monkeypatch.delenv("COMPASSESS_DATABASE_URL")
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home" / "cs"))
    assert default_database_url() == f"sqlite:///{tmp_path / 'home' / 'cs' / 'compassess.db'}"
    assert (tmp_path / "home" / "cs").is_dir()
    monkeypatch.delenv("COMPASSESS_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_database_url() == f"sqlite:///{tmp_path}/.local/share/compassess/compassess.db"
    s = Store()
    assert s.url == default_database_url() and (tmp_path / ".local/share/compassess/compassess.db").exists()
    s.close()


def test_bad_url_is_an_input_error():
    with pytest.raises(InputError, match="cannot open the database URL 'not a url'"):
        Store("not a url")
    with pytest.raises(InputError, match="cannot open the database URL 'nosuchdb://x'"):
        Store("nosuchdb://x")


def test_a_plain_db_path_is_a_sqlite_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = Store("sub/runs.db")
    assert s.url == f"sqlite:///{tmp_path / 'sub' / 'runs.db'}" and s.dialect == "sqlite"
    assert (tmp_path / "sub" / "runs.db").exists()
    s.close()


def test_fresh_database_is_at_head_and_matches_schema(store):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from db.schema import Base
    script = ScriptDirectory.from_config(alembic_config())
    assert len(script.get_heads()) == 1, "migrations must form one line (one head)"
    head = script.get_current_head()
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [head]
        # the migration creates exactly what db/schema.py declares
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []


def test_sqlite_pragmas(store):
    if store.dialect != "sqlite":
        pytest.skip("SQLite pragmas only")
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000


def test_two_stores_on_one_file(db_url, tiny_dataset):
    s1, s2 = Store(db_url), Store(db_url)
    rid = s1.create_run("r1", s1.save_dataset(tiny_dataset), settings())
    add(s2, rid, [result("doc1", "c1", "c2", 0.7)])
    s2.request_cancel(rid)
    assert pairs(s1, rid) == {PairKey("doc1", "c1", "c2")} and s1.cancel_requested(rid)
    s1.close(), s2.close()


def test_newer_database_is_refused(db_url):
    Store(db_url).close()
    engine = create_engine(db_url, poolclass=NullPool)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    with pytest.raises(InputError, match="schema revision '9999', unknown"):
        Store(db_url)


def _database_at_0003_with_old_runs(db_url: str) -> dict[str, dict]:
    """A database migrated to revision 0003 holding runs as the store wrote them then: the judge's
    identity inside the settings (and in the column), an absolute run's specifics in ``extra``."""
    import sqlalchemy as sa
    from alembic import command

    old = {
        "pairwise": dict(settings(), model_key="m@1", kind="comparative", extra={}),
        "scoring": dict(settings(seed=1), model_key="", kind="scoring", extra={}),
        "absolute": dict(settings(seed=2), model_key="m@2", kind="absolute", extra=dict(
            n_levels=5, task="summary", variant="bws", orders="both", reference_set="generated",
            generation=dict(max_new_tokens=96, sample=False, temperature=0.7, top_p=0.95))),
        "raw": {"model": "m", "aspect": "coherence"},  # an untyped dict: neither key present
    }
    columns = {"pairwise": "m@1", "scoring": None, "absolute": "m@2", "raw": None}
    now = datetime.now(timezone.utc)
    datasets = sa.table("datasets", *(sa.column(c) for c in (
        "id", "name", "content_hash", "source", "n_contexts", "n_candidates", "created_at")),
        sa.column("score_columns", sa.JSON()))
    runs = sa.table("runs", *(sa.column(c) for c in (
        "name", "dataset_id", "model_key", "status", "done", "cancel_requested", "created_at")),
        sa.column("settings", sa.JSON()))
    engine = create_engine(db_url, poolclass=NullPool)
    with engine.begin() as conn:
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0003")
        conn.execute(datasets.insert().values(id=1, name="tiny", content_hash="h", source="",
                                              score_columns=[], n_contexts=0, n_candidates=0,
                                              created_at=now))
        conn.execute(runs.insert(), [dict(name=name, dataset_id=1, settings=s,
                                          model_key=columns[name], status="completed", done=0,
                                          cancel_requested=False, created_at=now)
                                     for name, s in old.items()])
    engine.dispose()
    return old


def _raw_settings(db_url: str) -> dict[str, tuple[dict, str | None]]:
    engine = create_engine(db_url, poolclass=NullPool)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT name, settings, model_key FROM runs")).all()
    engine.dispose()
    return {name: (json.loads(s) if isinstance(s, str) else s, key) for name, s, key in rows}


def test_migration_0004_moves_the_judge_out_of_settings_and_extra_to_references(empty_db_url):
    db_url = empty_db_url
    from alembic import command

    old = _database_at_0003_with_old_runs(db_url)
    with Store(db_url) as s:  # opening migrates to head
        runs = {r.name: r for r in s.list_runs()}
    assert _raw_settings(db_url) == {n: (r.settings, r.judge_key) for n, r in runs.items()}

    def without(d: dict, *keys: str) -> dict:
        return {k: v for k, v in d.items() if k not in keys}

    pairwise, scoring, absolute_run, raw = (runs[n] for n in ("pairwise", "scoring", "absolute",
                                                              "raw"))
    assert pairwise.settings == without(old["pairwise"], "model_key", "extra")
    assert scoring.settings == without(old["scoring"], "model_key", "extra")
    assert absolute_run.settings == dict(without(old["absolute"], "model_key", "extra"),
                                         references=old["absolute"]["extra"])
    assert raw.settings == old["raw"]
    # the column keeps the judge
    assert [r.judge_key for r in (pairwise, scoring, absolute_run, raw)] == ["m@1", None, "m@2",
                                                                             None]
    # and a run created again with the new settings resumes
    with Store(db_url) as s:
        assert s.create_run("pairwise", 1, pairwise.settings) == pairwise.id

    # downgrade: the column back into the JSON, references back to extra, others get extra {}
    engine = create_engine(db_url, poolclass=NullPool)
    with engine.begin() as conn:
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0003")
    engine.dispose()
    back = {n: s for n, (s, _) in _raw_settings(db_url).items()}
    assert back["pairwise"] == old["pairwise"]
    assert back["scoring"] == old["scoring"]
    assert back["absolute"] == old["absolute"]
    assert back["raw"] == dict(old["raw"], model_key="", extra={})


def test_in_memory_store_works_across_threads(tiny_dataset):
    import threading

    s = Store("sqlite://")
    rid = s.create_run("r", s.save_dataset(tiny_dataset), settings())
    t = threading.Thread(target=s.set_run_status, args=(rid, "running"), kwargs=dict(done=2))
    t.start(), t.join()
    assert s.get_run(rid).done == 2


def test_in_memory_store_takes_turns_between_a_writer_and_its_heartbeat(tiny_dataset):
    """An in-memory database is one shared connection: a run loop writing results while its
    heartbeat thread writes the status must never BEGIN inside the other's transaction."""
    import threading

    from compassess_core.types import ComparisonResult, Judgement, PairKey

    s = Store("sqlite://")
    rid = s.create_run("r", s.save_dataset(tiny_dataset), settings())
    errors: list[str] = []
    stop = threading.Event()

    def heartbeat() -> None:
        while not stop.is_set():
            try:
                s.set_run_status(rid, "running", done=1)
            except Exception as e:  # noqa: BLE001 - collected, asserted below
                errors.append(repr(e))
    beat = threading.Thread(target=heartbeat)
    beat.start()
    try:
        for k in range(200):
            s.add_results(rid, "comparative", [ComparisonResult(
                PairKey("doc1", "c1", "c2"), Judgement(0.5, -0.7, -0.7, 1.0), f"h{k}")])
            s.stored_results(rid, "comparative")
    finally:
        stop.set()
        beat.join()
    assert errors == [] and len(s.stored_results(rid, "comparative")) == 1


_OPEN_AND_WRITE = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from compassess_core.types import ComparisonResult, Judgement, PairKey
    from db.store import Store
    url, go, run_id, which = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
""") + WAIT_FOR_GO + textwrap.dedent("""
    store = Store(url)
    if run_id:
        # 60 small transactions of 3 pairs each; the two processes write disjoint pairs
        for i in range(60):
            ctx = f"ctx{i % 10}"
            store.add_results(run_id, "comparative", [ComparisonResult(
                PairKey(ctx, f"cand{which}", f"cand{10 + (i // 10) * 3 + k}"),
                Judgement(0.5, -0.7, -0.7, 1.0), f"{which}-{i}-{k}") for k in range(3)])
            store.set_run_status(run_id, "running", done=i)
    print("ok")
""")


def _spawn(url: str, go: Path, run_id: int, which: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
    return subprocess.Popen([sys.executable, "-c", _OPEN_AND_WRITE, url, str(go),
                             str(run_id), str(which)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _together(url: str, go: Path, run_id: int) -> None:
    """Two processes that open ``url`` (and write to run ``run_id``) at one instant: released
    once both have imported everything (tests/start_line.py), however loaded the machine is."""
    procs = [_spawn(url, go, run_id, w) for w in (0, 1)]
    release_together(go, procs)
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and out.strip() == "ok", err


def test_two_processes_migrate_a_fresh_database_at_once(db_url, tmp_path):
    _together(db_url, tmp_path / "go", 0)
    s = Store(db_url)
    with s.engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [migration_head()]
    s.close()


def test_concurrent_writers_in_two_processes_lose_nothing(store, tmp_path):
    ds = _big_dataset(10, 40)
    rid = store.create_run("shared", store.save_dataset(ds), settings(dataset="big"))
    _together(store.url, tmp_path / "go", rid)
    t = store.comparison_table(rid)
    assert len(t) == 2 * 60 * 3
    assert len(set(zip(t.context_ids, t.a_ids, t.b_ids))) == 360
    assert sorted(set(t.a_ids.tolist())) == ["cand0", "cand1"]


# ------------------------------------------------------------------------- migrations

def migration_head() -> str:
    """The newest revision in db/migrations/versions (what a fresh database must be at)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()

"""The one run loop, for every run kind: progress per micro-batch, cancel between micro-batches,
resume without recomputation, no duplicates, a heartbeat while a batch computes.

These tests are about the loop, not the model: they use the FAKE judge of ``tests/fakes.py``
(verdicts are a pure function of the prompt) and an in-memory sink; the real judge and the real
store are exercised in test_cli.py, test_store.py and test_worker.py.
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

from compassess_core.runs import run_loop
from compassess_core.runs.absolute import Reference, absolute_settings
from compassess_core.runs.comparative import planned_pairs
from compassess_core.errors import RunCancelled
from compassess_core.runs.prompts import Aspect, builtin_template
from compassess_core.runs.scoring import scoring_settings, scoring_template
from compassess_core.runs.settings import RunSettings
from compassess_core.runs.sink import MemorySink
from compassess_core.types import Candidate, Context, Dataset
from compassess_core.runs.executor import execute_with
from tests.fakes import FakeLengthJudge


def make_dataset(n_contexts=3, n_candidates=4) -> Dataset:
    ctxs = tuple(
        Context(f"C{c}", f"context {c} " * (c + 1),
                tuple(Candidate(f"x{k}", f"candidate {k} of {c}" + "!" * k, system=f"s{k}",
                                scores={"q": float(k)}) for k in range(n_candidates)))
        for c in range(n_contexts))
    return Dataset("toy", ctxs, ("q",))


def comparative(**kw) -> RunSettings:
    t, a = builtin_template("t1"), Aspect.from_name("coherence")
    return RunSettings(**{**dict(dataset="toy", aspect=a.name, aspect_adjective=a.adjective,
                                 template_name=t.name, template_text=t.text, primer=t.primer,
                                 model="fake"), **kw})


def scoring(**kw) -> RunSettings:
    a = Aspect.from_name("coherence")
    return scoring_settings("toy", a, scoring_template("s1", a), "fake", **kw)


class ReferenceShelf(MemorySink):
    """A memory sink that also keeps references (what the absolute kind reads and writes)."""

    def __init__(self, references):
        super().__init__()
        self.references = list(references)

    def load_references(self, dataset_id, aspect, reference_set):
        return list(self.references)

    def save_references(self, dataset_id, aspect, reference_set, references):
        self.references += references
        return len(references)


def absolute(dataset: Dataset) -> tuple[RunSettings, ReferenceShelf]:
    settings = absolute_settings("toy", Aspect.from_name("coherence"), model="fake", n_levels=2,
                                 task="summary", reference_set="upload")
    refs = [Reference(c.context_id, lv, "ref " * lv, "uploaded") for c in dataset.contexts
            for lv in (1, 2)]
    return settings, ReferenceShelf(refs)


class Watch:
    """A reporter that hands progress to a callback."""

    def __init__(self, progress=None):
        self.progress = progress or (lambda pr: None)

    def loaded(self, description):
        pass

    def message(self, text):
        pass


def run(dataset, settings, judge, sink, run_id=1, *, chunk=128, cancel=None, progress=None):
    return execute_with(sink, dataset, settings, judge, run_id, chunk_prompts=chunk,
                        reporter=Watch(progress), cancel=cancel)


def every_kind():
    ds = make_dataset()
    abs_settings, shelf = absolute(ds)
    return [("comparative", comparative(), MemorySink(), 36), ("scoring", scoring(), MemorySink(), 12),
            ("absolute", abs_settings, shelf, 48)]


@pytest.mark.parametrize("name,settings,sink,total", every_kind(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_kind_stores_everything_once_and_reports_each_micro_batch(name, settings, sink, total):
    ds, judge, seen = make_dataset(), FakeLengthJudge(batch_size=4), []
    summary = run(ds, settings, judge, sink, progress=seen.append)
    assert (summary.status, summary.total, summary.computed) == ("completed", total, total)
    assert len(sink.stored_results(1, name)) == total
    assert sink.status[1]["status"] == "completed" and sink.status[1]["done"] == total
    # one progress report before the first batch, then one per stored micro-batch, done rising
    steps = np.diff([p.done for p in seen])
    assert seen[0].done == 0 and seen[-1].done == total and (steps > 0).all()
    assert steps.max() <= 4, "a report must come with every micro-batch, not every chunk"
    assert all(p.rate > 0 and p.eta_s is not None for p in seen[1:]), "rate and ETA from the first batch"


@pytest.mark.parametrize("name,settings,sink,total", every_kind(), ids=lambda v: v if isinstance(v, str) else "")
def test_cancel_stops_within_one_micro_batch_and_resume_recomputes_nothing(name, settings, sink, total):
    ds, cancel = make_dataset(), threading.Event()
    judge = FakeLengthJudge(batch_size=4)

    def stop_after_first(progress):
        if progress.done > 0:
            cancel.set()

    with pytest.raises(RunCancelled):
        run(ds, settings, judge, sink, cancel=cancel, progress=stop_after_first)
    stored = len(sink.stored_results(1, name))
    assert 0 < stored <= 4 and sink.status[1]["status"] == "cancelled"
    assert len(judge.batches) == 1, "no micro-batch may start after the cancel"
    again = FakeLengthJudge(batch_size=4)
    summary = run(ds, settings, again, sink)
    assert (summary.already_stored, summary.computed) == (stored, total - stored)
    assert len(sink.stored_results(1, name)) == total


@pytest.mark.parametrize("name,settings,sink,total", every_kind(), ids=lambda v: v if isinstance(v, str) else "")
def test_heartbeat_beats_while_a_micro_batch_computes(name, settings, sink, total, monkeypatch):
    monkeypatch.setattr(run_loop, "HEARTBEAT_S", 0.05)
    beats = []
    original = sink.set_run_status

    def record(run_id, status, **kw):
        beats.append((time.monotonic(), status, kw.get("done")))
        original(run_id, status, **kw)
    sink.set_run_status = record
    run(make_dataset(1, 3), settings, FakeLengthJudge(batch_size=100, delay_s=0.4), sink)
    during = [b for b in beats if b[1] == "running" and b[2] == 0]
    assert len(during) >= 4, f"expected heartbeats during the 0.4 s batch, got {beats}"


def test_store_request_cancels_after_the_micro_batch_in_flight():
    # The request arrives while the third micro-batch computes: it is stored, no fourth starts.
    ds, sink = make_dataset(), MemorySink()
    judge = FakeLengthJudge(batch_size=2, on_batch=lambda k: sink.cancel.add(1) if k == 2 else None)
    with pytest.raises(RunCancelled):
        run(ds, comparative(), judge, sink)
    assert len(sink.stored_results(1, "comparative")) == run_loop.FIRST_BATCH_PROMPTS + 2 + 2
    assert len(judge.batches) == 3
    assert sink.status[1]["status"] == "cancelled" and 1 not in sink.cancel


def test_budgeted_strategies_are_reproducible_and_contexts_limit():
    ds = make_dataset(n_contexts=3, n_candidates=5)
    settings = comparative(strategy="symmetric", budget=6, contexts=2, seed=7)
    pairs = [planned_pairs(c, settings) for c in ds.contexts[:2]]
    assert [len(p) for p in pairs] == [6, 6]
    assert np.array_equal(pairs[0], planned_pairs(ds.contexts[0], settings))
    sink = MemorySink()
    assert run(ds, settings, FakeLengthJudge(), sink).total == 12
    assert {k.context_id for k in sink.stored_results(1, "comparative")} == {"C0", "C1"}


def test_small_contexts_share_judge_calls():
    # 40 A-vs-B contexts (2 ordered pairs each): one judge call per 16 prompts, not one per context
    # (the first chunk's first FIRST_BATCH_PROMPTS are judged alone: the first progress is quick).
    calls = []

    class Counting(FakeLengthJudge):
        def judge_stream(self, prompts):
            calls.append(len(prompts))
            return super().judge_stream(prompts)
    sink = MemorySink()
    assert run(make_dataset(40, 2), comparative(), Counting(batch_size=16), sink, chunk=16).total == 80
    n = run_loop.FIRST_BATCH_PROMPTS
    assert calls == [n, 16 - n] + [16] * 4 and len(sink.stored_results(1, "comparative")) == 80


def test_a_failing_judge_marks_the_run_failed_and_keeps_what_was_stored():
    def boom(k):
        if k == 1:
            raise RuntimeError("out of memory (simulated)")
    sink = MemorySink()
    with pytest.raises(RuntimeError):
        run(make_dataset(), comparative(), FakeLengthJudge(batch_size=4, on_batch=boom), sink)
    assert sink.status[1]["status"] == "failed" and "out of memory" in sink.status[1]["message"]
    # the first micro-batch (the session's small first batch) is kept
    assert len(sink.stored_results(1, "comparative")) == run_loop.FIRST_BATCH_PROMPTS


def test_worker_state_tells_a_dead_worker_from_a_live_one():
    from datetime import datetime, timedelta, timezone
    from types import SimpleNamespace
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)

    def run(status, age_s=None, cancel=False):
        # a stored run as the store returns it: naive UTC heartbeat
        hb = None if age_s is None else (now - timedelta(seconds=age_s)).replace(tzinfo=None)
        return SimpleNamespace(status=status, heartbeat_at=hb, cancel_requested=cancel)

    assert run_loop.worker_state(run("running", 1.0), now) == "working"
    assert run_loop.worker_state(run("running", 1.0, cancel=True), now) == "cancelling"
    assert run_loop.worker_state(run("running", run_loop.STALE_AFTER_S + 1), now) == "stale"
    assert run_loop.worker_state(run("running"), now) == "stale"  # never beat
    assert run_loop.worker_state(run("completed", 10_000), now) == "completed"
    assert run_loop.state_text(run("running", run_loop.STALE_AFTER_S + 1), now) == \
        "worker stopped responding"
    assert run_loop.state_text(run("running", 1.0), now) == "running"
    assert run_loop.is_active("working") and run_loop.is_active("cancelling")
    assert not run_loop.is_active("stale")
    assert set(run_loop.WORKER_STATE_TEXT) >= {"working", "cancelling", "stale", "completed",
                                               "cancelled", "failed", "pending"}


class ReferenceStore:
    """The real SQLite store with the absolute kind's reference shelf in front of it."""

    def __init__(self, store, references, dataset_id):
        self.store, self.references, self.dataset_id = store, list(references), dataset_id

    def load_references(self, dataset_id, aspect, reference_set):
        return list(self.references)

    def save_references(self, dataset_id, aspect, reference_set, references):
        self.references += references
        return len(references)

    def __getattr__(self, name):
        return getattr(self.store, name)


@pytest.mark.parametrize("name,settings,sink,total", every_kind(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_kind_reads_back_ranks_and_evaluates_from_a_memory_sink_as_from_the_store(
        name, settings, sink, total, tmp_path):
    from db.store import Store

    from compassess_core.runs.run_kinds import ReadOptions, get_kind
    ds, kind = make_dataset(), get_kind(name)
    run(ds, settings, FakeLengthJudge(batch_size=4), sink)
    with Store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        dataset_id = store.save_dataset(ds)
        run_id = store.create_run(f"fake-{name}", dataset_id, settings.to_dict())
        shelf = ReferenceStore(store, getattr(sink, "references", []), dataset_id)
        run(ds, settings, FakeLengthJudge(batch_size=4), shelf, run_id=run_id)
        stored = kind.read(store, run_id, ds, settings)
        stored_frame = kind.results_frame(store, run_id, ds, settings)
    in_memory = kind.read(sink, 1, ds, settings)
    ranked = kind.rank(ds, in_memory, ReadOptions())
    assert len(ranked) == ds.n_candidates and set(ranked["candidate_id"]) == {"x0", "x1", "x2", "x3"}
    assert ranked.equals(kind.rank(ds, stored, ReadOptions()))
    def report(results):  # NaN reads equal to NaN in JSON text
        return json.dumps(kind.evaluate(ds, results, ReadOptions(reference="q")).to_dict(),
                          sort_keys=True, default=str)
    assert report(in_memory) == report(stored)
    frame = kind.results_frame(sink, 1, ds, settings)
    assert list(frame.columns) == list(stored_frame.columns) and len(frame) == len(stored_frame)
    shared = [c for c in frame.columns if c != "created_at"]
    assert frame[shared].equals(stored_frame[shared])


def test_the_first_judged_batch_is_the_shortest_comparison_of_the_chunk():
    """Long stories: the session's first progress comes after the least work there is, the
    shortest prompt of the first chunk, with the same comparison of the other aspects."""
    from compassess_core.runs.run_loop import _first_steps, _Part
    from compassess_core.types import ComparisonPrompt

    def part(member, aspect):
        texts = ["x" * 900, "x" * 300, "x" * 600]  # the second comparison is the shortest
        return _Part(member, [("C0", 0, 1), ("C0", 1, 2), ("C0", 2, 0)],
                     [ComparisonPrompt(t + aspect, "Answer:") for t in texts],
                     [f"{aspect}{i}" for i in range(3)])
    first, rest = _first_steps([part("m1", "coherent"), part("m2", "fluent")], n=1)
    assert [p.keys for p in first] == [[("C0", 1, 2)], [("C0", 1, 2)]]
    assert [p.keys for p in rest] == [[("C0", 0, 1), ("C0", 2, 0)]] * 2
    assert [p.hashes for p in rest] == [["coherent0", "coherent2"], ["fluent0", "fluent2"]]

"""The run loop: only missing comparisons, streamed to the sink, resume, cancel, cache.

These tests are about the loop, not the model, so they use ``FakeLengthJudge`` (a fake judge whose
verdict is a pure function of the prompt) and an in-memory sink; the real judge and the real store
are exercised in test_cli.py and test_store.py.
"""

import threading

import numpy as np
import pytest

from compassess_core.errors import RunCancelled
from compassess_core.prompts import Aspect, builtin_template
from compassess_core.runner import planned_pairs, run_comparisons
from compassess_core.settings import RunSettings
from compassess_core.sink import MemorySink
from compassess_core.types import Candidate, Context, Dataset, Judgement


class FakeLengthJudge:
    """FAKE judge: p = sigmoid(len(prompt) mod 7 - 3); records every prompt it was asked about."""

    model_key = "fake-length-judge"
    label_words = (" A", " B")
    description = "fake judge (tests only)"

    def __init__(self):
        self.seen = []

    def judge(self, prompts):
        self.seen.extend(prompts)
        out = []
        for pr in prompts:
            p = 1 / (1 + np.exp(-((len(pr.text) % 7) - 3)))
            out.append(Judgement(p=float(p), logp_a=float(np.log(p)), logp_b=float(np.log1p(-p)),
                                 label_mass=1.0, latency_ms=0.0))
        return out


def make_dataset(n_contexts=3, n_candidates=4):
    ctxs = tuple(
        Context(f"C{c}", f"context {c} " * (c + 1),
                tuple(Candidate(f"x{k}", f"candidate {k} of {c}" + "!" * k, scores={"q": float(k)})
                      for k in range(n_candidates)))
        for c in range(n_contexts))
    return Dataset("toy", ctxs, ("q",))


def make_settings(**kw):
    t = builtin_template("t1")
    a = Aspect.from_name("coherence")
    base = dict(dataset="toy", aspect=a.name, aspect_adjective=a.adjective, template_name=t.name,
                template_text=t.text, primer=t.primer, model="fake", model_key="fake-length-judge")
    base.update(kw)
    return RunSettings(**base)


def test_full_run_stores_every_ordered_pair_once():
    ds, sink, judge = make_dataset(), MemorySink(), FakeLengthJudge()
    s = run_comparisons(ds, make_settings(), judge, sink, run_id=1)
    assert s.status == "completed" and s.total == 3 * 4 * 3 and s.computed == 36
    keys = sink.stored_pairs(1)
    assert len(keys) == 36
    assert all(k.a_id != k.b_id for k in keys)
    assert sink.status[1]["status"] == "completed" and sink.status[1]["done"] == 36


def test_resume_after_cancel_recomputes_nothing():
    ds, sink, judge = make_dataset(), MemorySink(), FakeLengthJudge()
    cancel = threading.Event()

    def stop_after_first(progress):
        if progress.done >= 1:
            cancel.set()

    with pytest.raises(RunCancelled):
        run_comparisons(ds, make_settings(), judge, sink, 1, progress=stop_after_first,
                        cancel=cancel, chunk_prompts=3)
    first = len(sink.stored_pairs(1))
    assert 0 < first < 36 and sink.status[1]["status"] == "cancelled"
    seen_before = len(judge.seen)
    s = run_comparisons(ds, make_settings(), judge, sink, 1)
    assert s.already_stored == first and s.computed == 36 - first
    assert len(judge.seen) - seen_before == 36 - first  # nothing asked twice
    assert len(sink.stored_pairs(1)) == 36


def test_budgeted_strategies_are_reproducible_and_contexts_limit():
    ds = make_dataset(n_contexts=3, n_candidates=5)
    st = make_settings(strategy="symmetric", budget=6, contexts=2, seed=7)
    pairs = [planned_pairs(c, st) for c in ds.contexts[:2]]
    assert [len(p) for p in pairs] == [6, 6]
    assert np.array_equal(pairs[0], planned_pairs(ds.contexts[0], st))
    sink = MemorySink()
    s = run_comparisons(ds, st, FakeLengthJudge(), sink, 1)
    assert s.total == 12 and {k.context_id for k in sink.stored_pairs(1)} == {"C0", "C1"}


def test_progress_reports_total_and_done():
    seen = []
    run_comparisons(make_dataset(2, 3), make_settings(), FakeLengthJudge(), MemorySink(), 1,
                    progress=seen.append, chunk_prompts=2)
    assert seen[0].done == 0 and seen[-1].done == seen[-1].total == 12
    assert all(a.done <= b.done for a, b in zip(seen, seen[1:]))


class FakeCountingJudge(FakeLengthJudge):
    """FAKE judge that also counts its calls."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def judge(self, prompts):
        self.calls.append(len(prompts))
        return super().judge(prompts)


def test_small_contexts_share_judge_calls_and_stay_streamed():
    # 40 A-vs-B contexts (2 ordered pairs each): one call per 16 prompts, not one per context.
    ds, sink, judge = make_dataset(n_contexts=40, n_candidates=2), MemorySink(), FakeCountingJudge()
    s = run_comparisons(ds, make_settings(), judge, sink, 1, chunk_prompts=16)
    assert s.total == 80 and len(sink.stored_pairs(1)) == 80
    assert judge.calls == [16] * 5

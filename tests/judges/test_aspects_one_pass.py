"""Several aspects in one pass: one run per aspect, judged together by one worker.

Each run is stored, resumable, exported and audited as if run alone; the runs' prompts for the
same pair go to the judge in one call (sharing the context and both candidates in its prefix
cache); a cancel of any run stops the group and every run resumes. The loop's wiring is
checked with the FAKE judge of ``tests/fakes.py`` (verdicts are a pure function of the prompt,
so grouped and separate results must be equal exactly); p against separate runs with the real
bundled judge (marker ``model``), on the bundled sample with its articles cut to their opening
sentences (``short_summeval`` in tests/conftest.py: what the prompts share is checked, not what
the articles say). How the engine cuts those prompts into passes (a pair's aspects fused with it,
thin prefixes looked through) is checked on the bundled judge's own tokenizer and chat template
with FAKE weights (``fake_weights`` in tests/conftest.py: a tiny random Llama), the same prompt tree and code paths at
a hundredth of the arithmetic; the p each way must agree for any weights.
"""

from __future__ import annotations


import numpy as np
import pytest

from compassess_core import api
from compassess_core.runs import run_loop
from compassess_core.errors import InputError, RunCancelled
from compassess_core.runs.prompts import ASPECT_ADJECTIVES, Aspect
from compassess_core.runs.sink import MemorySink
from compassess_core.runs.executor import execute_group_with
from tests.fakes import FakeLengthJudge
from tests.runs.test_run_loop import Watch, comparative, make_dataset

ASPECTS = ("coherence", "fluency", "consistency", "relevance")
SAMPLE = "assets/sample_summeval.csv"


def aspect_settings(aspects=ASPECTS, **kw):
    return [comparative(aspect=a, aspect_adjective=ASPECT_ADJECTIVES[a], **kw) for a in aspects]


class CountingJudge(FakeLengthJudge):
    """FAKE judge that records the size of every judge call."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.calls: list[int] = []

    def judge_stream(self, prompts):
        self.calls.append(len(prompts))
        return super().judge_stream(prompts)


#: Candidates of the first article in the thin-prefix tests (all five): the first four hold
#: three summaries that open with the same eight words ("paul merson has restarted his row with
#: a"), the shape that splits a pair's second texts into thin subtrees.
N_THIN = 5


def p_of(sink, run_id):
    return {k: r.judgement.p for k, r in sink.stored_results(run_id, "comparative").items()}


def test_one_judge_call_per_step_holds_every_aspect_and_each_run_gets_its_own_results():
    ds, sink, judge = make_dataset(), MemorySink(), CountingJudge(batch_size=8)
    summaries = execute_group_with(sink, ds, aspect_settings(), judge, [1, 2, 3, 4],
                                   reporter=Watch())
    assert [s.status for s in summaries] == ["completed"] * 4
    assert all(sink.status[r]["status"] == "completed" for r in (1, 2, 3, 4))
    assert all(sink.status[r]["done"] == sink.status[r]["total"] == 36 for r in (1, 2, 3, 4))
    # 36 pairs x 4 aspects; the first call is the small first batch of every aspect
    assert sum(judge.calls) == 144 and judge.calls[0] == 4 * run_loop.FIRST_BATCH_PROMPTS and len(judge.calls) == 2
    # each run holds exactly what a run of its aspect alone holds
    for run_id, settings in enumerate(aspect_settings(), start=1):
        alone = MemorySink()
        execute_group_with(alone, ds, [settings], FakeLengthJudge(batch_size=8), [9],
                           reporter=Watch())
        assert p_of(sink, run_id) == p_of(alone, 9)
    assert sink.plans[1]["run_group"] == [1, 2, 3, 4]


def test_a_cancel_of_one_run_stops_the_group_and_each_run_resumes():
    ds, sink = make_dataset(), MemorySink()
    judge = FakeLengthJudge(batch_size=4, on_batch=lambda k: sink.cancel.add(3) if k == 3 else None)
    with pytest.raises(RunCancelled):
        execute_group_with(sink, ds, aspect_settings(), judge, [1, 2, 3, 4], reporter=Watch())
    assert all(sink.status[r]["status"] == "cancelled" for r in (1, 2, 3, 4))
    assert len(judge.batches) == 4, "no micro-batch may start after the cancel"
    stored = {r: len(sink.stored_results(r, "comparative")) for r in (1, 2, 3, 4)}
    assert 0 < sum(stored.values()) <= 4 * 4
    # one run resumed alone, then the rest together: nothing is computed twice
    again = CountingJudge(batch_size=8)
    execute_group_with(sink, ds, aspect_settings()[:1], again, [1], reporter=Watch())
    execute_group_with(sink, ds, aspect_settings()[1:], again, [2, 3, 4], reporter=Watch())
    assert sum(again.calls) == 4 * 36 - sum(stored.values())
    assert all(len(sink.stored_results(r, "comparative")) == 36 for r in (1, 2, 3, 4))
    assert all(sink.status[r]["status"] == "completed" for r in (1, 2, 3, 4))


def test_a_run_of_the_group_that_is_done_is_completed_at_once():
    ds, sink = make_dataset(), MemorySink()
    first = aspect_settings()[:1]
    execute_group_with(sink, ds, first, FakeLengthJudge(batch_size=8), [1], reporter=Watch())
    seen: list[dict] = []

    def watch(_progress):
        seen.append(dict(sink.status[1]))
    execute_group_with(sink, ds, aspect_settings(), FakeLengthJudge(batch_size=8), [1, 2, 3, 4],
                       reporter=Watch(watch))
    assert all(s["status"] == "completed" for s in seen[1:]), "run 1 had nothing left to do"
    assert all(sink.status[r]["status"] == "completed" for r in (1, 2, 3, 4))


def test_runs_that_need_different_judges_are_refused(tmp_path):
    store = api.open_store(f"sqlite:///{tmp_path / 'g.db'}")
    one, other = aspect_settings(("coherence", "fluency"))
    runs = store.create_runs(make_dataset(), [one, other.with_changes(model="another")])
    with pytest.raises(InputError, match="need different judges"):
        store.execute(runs, judge=FakeLengthJudge(), progress=False)
    assert {r.refresh().status for r in runs} == {"failed"}


def test_the_api_judges_a_list_of_aspects_in_one_pass_and_each_run_reads_back(tmp_path):
    store = api.open_store(f"sqlite:///{tmp_path / 'g.db'}")
    judge = CountingJudge(batch_size=8)
    runs = store.run(make_dataset(), aspect=list(ASPECTS), model="fake", judge=judge,
                     progress=False, name="toy")
    assert [r.name for r in runs] == [f"toy-{a}" for a in ASPECTS]
    assert [r.settings.aspect for r in runs] == list(ASPECTS)
    assert all((r.status, r.info.done, r.n_comparisons) == ("completed", 36, 36) for r in runs)
    assert len(judge.calls) == 2 and sum(judge.calls) == 144
    # read back, exported and audited as any run
    assert len(runs[1].rankings()) == 12
    assert runs[2].export_bytes("comparisons", "csv").data.count(b"\n") == 37
    assert runs[3].audit(n_boot=10).name == "toy-relevance"
    # the same call again resumes (nothing left, nothing recomputed)
    again = CountingJudge(batch_size=8)
    store.run(make_dataset(), aspect=list(ASPECTS), model="fake", judge=again, progress=False,
              name="toy")
    assert again.calls == []
    with pytest.raises(InputError, match="given twice"):
        store.run(make_dataset(), aspect=["coherence", "coherence"], model="fake", judge=judge,
                  progress=False)


def test_the_cli_splits_aspects_at_commas_and_a_worker_takes_several_runs(tmp_path, capsys,
                                                                          monkeypatch):
    from compassess_core import cli
    from compassess_core.runs import executor
    monkeypatch.setattr(executor, "load_run_judge", lambda settings: CountingJudge(batch_size=8))
    db = f"sqlite:///{tmp_path / 'g.db'}"
    rc = cli.main(["run", SAMPLE, "--aspect", "coherence, fluency", "--contexts", "1",
                   "--strategy", "random", "--budget", "4", "--run", "two", "--db", db])
    assert rc == 0
    assert capsys.readouterr().out.split() == ["two-coherence", "two-fluency"]
    store = api.open_store(db)
    runs = [store.get_run("two-coherence"), store.get_run("two-fluency")]
    assert [(r.status, r.info.done, r.info.plan["run_group"]) for r in runs] == \
        [("completed", 4, [runs[0].id, runs[1].id])] * 2
    for r in runs:
        store.backend.set_run_status(r.id, "cancelled")
    assert cli.main(["worker", "--run", "two-coherence", "--run", "two-fluency", "--db", db]) == 0
    assert [store.get_run(r.id).status for r in runs] == ["completed"] * 2


# ------------------------------------------------------------------------ the bundled judge

@pytest.mark.model
def test_p_of_four_aspects_in_one_pass_equals_four_separate_runs(bundled_model, tmp_path,
                                                                short_summeval):
    """SummEval's four aspects on the sample, judged in one pass and in four separate runs by the
    real bundled judge: the same comparisons, p equal up to fp32 rounding. The tolerance is
    the judge's own: one run's p moves by up to a few 1e-6 with its batch size alone (a batch's
    shape changes the order of fp32 sums), so no two batchings agree to 1e-6."""
    from compassess_core.judges import load_judge
    store = api.open_store(f"sqlite:///{tmp_path / 'p.db'}")
    judge = load_judge(None, batch_size=8)
    common = dict(contexts=2, strategy="random", budget=6, seed=3, judge=judge, progress=False)
    together = store.run(short_summeval, aspect=list(ASPECTS), name="one-pass", **common)
    worst = 0.0
    for run in together:
        alone = store.run(short_summeval, aspect=run.settings.aspect,
                          name=f"alone-{run.settings.aspect}", **common)
        a = run.comparisons().set_index(["context_id", "a_id", "b_id"])["p"]
        b = alone.comparisons().set_index(["context_id", "a_id", "b_id"])["p"]
        assert len(a) == len(b) == 12 and a.index.sort_values().equals(b.index.sort_values())
        worst = max(worst, float(np.abs(a - b.loc[a.index]).max()))
        # the separate run was not served from the grouped run's cache: it computed its own
        assert alone.info.judge_key == run.info.judge_key
    assert worst < 1e-5, worst
    prompts = [together[0].prompt(*k) for k in together[0].comparisons()[
        ["context_id", "a_id", "b_id"]].itertuples(index=False)]
    assert all(p.text.rstrip().endswith("Summary A or Summary B?") for p in prompts)


def test_scoring_and_absolute_runs_of_several_aspects_share_each_judge_call():
    from compassess_core.runs.scoring import scoring_settings, scoring_template
    from tests.runs.test_run_loop import absolute

    class Calls(FakeLengthJudge):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.calls: list[int] = []

        def label_stream(self, seqs, label_ids):
            self.calls.append(len(seqs))
            return super().label_stream(seqs, label_ids)

        def label_logprobs_stream(self, prompts, words):
            self.calls.append(len(prompts))
            return super().label_logprobs_stream(prompts, words)

    ds = make_dataset()
    two = [Aspect.from_name(a) for a in ("coherence", "fluency")]
    scoring = [scoring_settings("toy", a, scoring_template("s1", a), "fake") for a in two]
    abs_settings, shelf = absolute(ds)
    absolutes = [abs_settings.with_changes(aspect=a.name, aspect_adjective=a.adjective)
                 for a in two]
    for settings, sink, per_aspect in ((scoring, MemorySink(), 12), (absolutes, shelf, 48)):
        judge = Calls(batch_size=64)
        execute_group_with(sink, ds, settings, judge, [1, 2], reporter=Watch())
        assert all(len(sink.stored_results(r, settings[0].kind)) == per_aspect for r in (1, 2))
        assert len(judge.calls) == 2, judge.calls   # the small first batch, then the rest: both aspects each


@pytest.mark.model
def test_the_aspects_of_a_pair_run_with_the_pair_in_one_pass(fake_weights, short_summeval):
    """Prompts that differ only in the question (the aspects of one pair) run as one row with
    their pair (tree attention: each question sees the context, both candidates and itself)
    instead of a cache per pair and a batch of questions on copies of it: the same p as that
    and as each prompt alone."""
    from compassess_core.data.candidates import load_candidates
    from compassess_core.judges.transformers_judge import CausalJudge
    from compassess_core.runs.prompts import builtin_template
    judge = CausalJudge(fake_weights, batch_size=8)
    ctx = load_candidates(short_summeval).contexts[0]
    t1 = builtin_template("t1", "summary")
    pairs = [(0, 1), (0, 2), (2, 3)]
    prompts = [t1.render(ctx.text, ctx.candidates[a].text, ctx.candidates[b].text,
                         Aspect.from_name(x)) for a, b in pairs for x in ASPECTS]

    def judged(**kw):
        old = {k: getattr(judge, k) for k in kw}
        for k, v in kw.items():
            setattr(judge, k, v)
        judge.stats.update(model_tokens=0, forward_passes=0)
        try:
            return np.array([j.p for j in judge.judge(prompts)]), dict(judge.stats)
        finally:
            for k, v in old.items():
                setattr(judge, k, v)
    rows: list[int] = []
    run_fused = judge._run_fused

    def counting(seqs, nodes, *args):
        out = run_fused(seqs, nodes, *args)
        rows.extend(out[0])
        return out
    judge._run_fused = counting
    fused, _ = judged()
    assert sorted(rows) == list(range(len(prompts))), "every prompt ran with its pair"
    rows.clear()
    cached, _ = judged(fuse_suffix=0)
    assert rows == []
    alone = np.array([judge.judge([p])[0].p for p in prompts])
    assert np.abs(fused - cached).max() < 1e-5 and np.abs(fused - alone).max() < 1e-5


@pytest.mark.model
def test_thin_prefixes_are_looked_through_so_sibling_pairs_share_a_fused_pass(fake_weights,
                                                                             short_summeval):
    """After a pair's first text, the second texts share the template's words and often their
    own first words, which split them into small subtrees: fused per subtree, a GPU ran one
    forward pass per pair. Looked through (``thin``, on by default on a GPU), the pairs fill
    fewer, larger passes with the same p."""
    from compassess_core.data.candidates import load_candidates
    from compassess_core.judges import load_judge
    from compassess_core.judges.transformers_judge import CausalJudge
    from compassess_core.runs.prompts import builtin_template
    assert load_judge(None, batch_size=8).thin == 0  # the bundled judge's CPU default: no faster
    judge = CausalJudge(fake_weights, batch_size=8)
    ctx = load_candidates(short_summeval).contexts[0]
    t1 = builtin_template("t1", "summary")
    n = N_THIN
    prompts = [t1.render(ctx.text, ctx.candidates[a].text, ctx.candidates[b].text,
                         Aspect.from_name(x)) for a in range(n) for b in range(n) if a != b
               for x in ASPECTS]
    ps, passes = {}, {}
    for thin in (0, 48):
        judge.thin = thin
        judge.stats.update(forward_passes=0)
        ps[thin] = np.array([j.p for j in judge.judge(prompts)])
        passes[thin] = judge.stats["forward_passes"]
    assert passes[48] < passes[0], passes
    assert np.abs(ps[48] - ps[0]).max() < 1e-5


@pytest.mark.model
def test_thin_prefixes_lift_their_prompts_onto_the_parent_cache_with_one_aspect(fake_weights,
                                                                               short_summeval):
    """With one aspect no prompt ends near its pair's prefix, so nothing is fused: the second
    texts' shared first words still split a first text's comparisons into small subtrees, and
    each got a cache of its own in a pass of its own (an H200 ran 64 passes for 240 SummEval
    comparisons). Looked through (``thin``), their prompts run as suffixes on the first text's
    cache: fewer passes, the same p as without and as each prompt alone."""
    from compassess_core.data.candidates import load_candidates
    from compassess_core.judges.transformers_judge import CausalJudge
    from compassess_core.runs.prompts import builtin_template
    # a GPU's batch: every waiting prompt in one pass
    judge = CausalJudge(fake_weights, batch_size=64, token_budget=1 << 16)
    ctx = load_candidates(short_summeval).contexts[0]
    t1 = builtin_template("t1", "summary")
    n = N_THIN
    prompts = [t1.render(ctx.text, ctx.candidates[a].text, ctx.candidates[b].text,
                         Aspect.from_name("coherence")) for a in range(n) for b in range(n) if a != b]
    ps, passes = {}, {}
    for thin in (0, 48):
        judge.thin = thin
        judge.stats.update(forward_passes=0)
        ps[thin] = np.array([j.p for j in judge.judge(prompts)])
        passes[thin] = judge.stats["forward_passes"]
    some = slice(None, None, max(1, len(prompts) // 6))
    alone = np.array([judge.judge([p])[0].p for p in prompts[some]])
    assert passes[48] < passes[0], passes
    assert np.abs(ps[48] - ps[0]).max() < 1e-5
    assert np.abs(ps[48][some] - alone).max() < 1e-5

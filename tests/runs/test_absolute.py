"""Absolute scores from synthetic references (compassess_core.runs.absolute): hand-worked score formulas,
the store round trip, the resumable run loop with a fake judge, and the real bundled model on a tiny
slice (1 context, 2 candidates, 3 references).
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from compassess_core.runs import absolute as ab
from compassess_core.runs.absolute import (REFERENCE_FIRST, TARGET_FIRST, AbsoluteKey, Reference)
from compassess_core.errors import InputError, ValidationError
from compassess_core.runs.prompts import Aspect
from compassess_core.types import Candidate, Context, Dataset
from compassess_core.runs.executor import ConsoleReporter, execute_run

QUIET = ConsoleReporter(stream=io.StringIO())


# ---------------------------------------------------------------- pure parts

def test_generation_plan_is_worst_best_then_recursive_middles():
    assert ab.generation_plan(5) == [(1, None, None), (5, None, None), (3, 1, 5), (2, 1, 3), (4, 3, 5)]
    assert ab.generation_plan(3) == [(1, None, None), (3, None, None), (2, 1, 3)]
    assert ab.generation_plan(2) == [(1, None, None), (2, None, None)]
    # Every level written exactly once, neighbours always written before.
    plan = ab.generation_plan(9)
    assert sorted(lv for lv, _, _ in plan) == list(range(1, 10))
    done = set()
    for lv, lo, hi in plan:
        assert lo is None or (lo in done and hi in done and lo < lv < hi)
        done.add(lv)
    with pytest.raises(InputError, match="at least 2"):
        ab.generation_plan(1)


def test_paper_score_hand_worked():
    # N = 3: s = 1*(0.9-0.05) + 2*(0.5-0.3) + 3*(0.1-0.8) = 0.85 + 0.4 - 2.1 = -0.85
    s = ab.paper_score(np.array([[0.9, 0.5, 0.1]]), np.array([[0.05, 0.3, 0.8]]))
    assert s == pytest.approx([-0.85])
    # Surely better than all five references: 1+2+3+4+5 = 15; surely worse: -15.
    assert ab.paper_score(np.ones((1, 5)), np.zeros((1, 5))) == pytest.approx([15.0])
    assert ab.paper_score(np.zeros((1, 5)), np.ones((1, 5))) == pytest.approx([-15.0])
    assert ab.score_range("score", 5) == (-15.0, 15.0)


def test_expected_level_hand_worked():
    # Better than levels 1 and 2, similar to 3, worse than 4 and 5: exactly level 3.
    pb = np.array([[1, 1, 0, 0, 0], [0.9, 0.6, 0.2, 0, 0]], dtype=float)
    ps = np.array([[0, 0, 1, 0, 0], [0.1, 0.2, 0.3, 0, 0]], dtype=float)
    # second: 0.5 + (0.9+0.05) + (0.6+0.1) + (0.2+0.15) = 0.5 + 0.95 + 0.7 + 0.35 = 2.5
    assert ab.expected_level(pb, ps) == pytest.approx([3.0, 2.5])
    # Beyond the references it is clipped to the scale: 5.5 -> 5, 0.5 -> 1.
    assert ab.expected_level(np.ones((1, 5)), np.zeros((1, 5))) == pytest.approx([5.0])
    assert ab.expected_level(np.zeros((1, 5)), np.zeros((1, 5))) == pytest.approx([1.0])


def test_label_probabilities_normalise_over_the_label_words():
    probs, mass = ab.label_probabilities(np.log([[0.3, 0.1, 0.1]]), "bws")
    assert probs == pytest.approx(np.array([[0.6, 0.2, 0.2]]))
    assert mass == pytest.approx([0.5])
    # Yes/No: Yes -> Better, No -> Worse over the two words, Similar = 0.
    probs, mass = ab.label_probabilities(np.log([[0.2, 0.6]]), "yes-no")
    assert probs == pytest.approx(np.array([[0.25, 0.75, 0.0]]))
    assert mass == pytest.approx([0.8])
    # Tiny probabilities keep their ratio (no 0/0).
    probs, _ = ab.label_probabilities(np.array([[-900.0, -900.0 - np.log(3), -900.0 - np.log(6)]]), "bws")
    assert probs == pytest.approx(np.array([[0.6, 0.2, 0.1]]) / 0.9)


def test_target_view_swaps_better_and_worse_when_the_reference_is_first():
    pb, pw, ps = ab.target_view(np.array([0.7, 0.7]), np.array([0.2, 0.2]), np.array([0.1, 0.1]),
                                [True, False])
    assert pb.tolist() == [0.7, 0.2] and pw.tolist() == [0.2, 0.7] and ps.tolist() == [0.1, 0.1]


def _dataset() -> Dataset:
    ctx = Context("d1", "The cat sat on the mat.", (
        Candidate("c1", "A cat sat.", "s1", {"coherence": 4.0}),
        Candidate("c2", "Mat cat.", "s2", {"coherence": 1.0}),
    ))
    ctx2 = Context("d2", "It rained all day.", (
        Candidate("c1", "Rain all day.", "s1", {"coherence": 5.0}),
        Candidate("c2", "Day.", "s2", {"coherence": 2.0}),
    ))
    return Dataset("tiny-abs", (ctx, ctx2), ("coherence",))


def _frame(rows) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["context_id", "candidate_id", "level", "order", "p_better",
                                     "p_worse", "p_similar"])
    for c in ("logp_better", "logp_worse", "logp_similar", "label_mass", "latency_ms"):
        df[c] = np.nan
    df["prompt_hash"], df["reference_hash"], df["created_at"] = "h", "r", pd.NaT
    return df


def test_score_table_averages_both_orders_hand_worked():
    # N = 2, context d1 only. c1 target-first: level1 (0.8, 0.1, 0.1), level2 (0.3, 0.5, 0.2);
    # reference-first answers are about the reference: level1 (0.2, 0.6, 0.2) -> target view
    # (0.6, 0.2, 0.2); level2 (0.5, 0.3, 0.2) -> (0.3, 0.5, 0.2).
    # mean over orders: level1 pb 0.7 pw 0.15 ps 0.15; level2 pb 0.3 pw 0.5 ps 0.2
    # s = 1*(0.7-0.15) + 2*(0.3-0.5) = 0.55 - 0.4 = 0.15
    # level = 0.5 + (0.7 + 0.075) + (0.3 + 0.1) = 1.675
    rows = [("d1", "c1", 1, TARGET_FIRST, 0.8, 0.1, 0.1), ("d1", "c1", 2, TARGET_FIRST, 0.3, 0.5, 0.2),
            ("d1", "c1", 1, REFERENCE_FIRST, 0.2, 0.6, 0.2), ("d1", "c1", 2, REFERENCE_FIRST, 0.5, 0.3, 0.2),
            ("d1", "c2", 1, TARGET_FIRST, 0.1, 0.8, 0.1)]  # c2 unfinished
    t = ab.score_table(_dataset(), _frame(rows), 2)
    assert list(t["candidate_id"]) == ["c1", "c2"]  # d2 was not judged: left out
    c1 = t.iloc[0]
    assert c1["score"] == pytest.approx(0.15) and c1["level"] == pytest.approx(1.675)
    # one order alone: target-first s = 1*0.7 + 2*(-0.2) = 0.3; reference-first 1*0.4 + 2*(-0.2) = 0.0
    assert c1[f"score_{TARGET_FIRST}"] == pytest.approx(0.3)
    assert c1[f"score_{REFERENCE_FIRST}"] == pytest.approx(0.0)
    assert c1["n_comparisons"] == 4 and c1["coherence"] == 4.0
    assert np.isnan(t.iloc[1]["score"]) and t.iloc[1]["n_comparisons"] == 1
    assert ab.passes(t["level"].to_numpy(), 1.5).tolist() == [True, False]  # NaN fails


def test_evaluate_scores_hand_worked():
    # Two contexts, two candidates each; level follows coherence in d1 and is reversed in d2.
    table = pd.DataFrame(dict(
        context_id=["d1", "d1", "d2", "d2"], candidate_id=["c1", "c2", "c1", "c2"],
        system=["s1", "s2", "s1", "s2"], coherence=[4.0, 1.0, 5.0, 2.0],
        level=[3.0, 2.0, 1.5, 4.0], score=[1.0, 0.0, -1.0, 2.0]))
    frame = _frame([("d1", "c1", 1, TARGET_FIRST, 0.8, 0.1, 0.1), ("d1", "c1", 1, REFERENCE_FIRST, 0.4, 0.5, 0.1)])
    ev = ab.evaluate_scores(table, frame, score="level", reference="coherence", threshold=2.5)
    # sample level: d1 +1, d2 -1 -> mean 0; pooled: levels (3, 2, 1.5, 4) vs (4, 1, 5, 2):
    # ranks (3, 2, 1, 4) vs (3, 1, 4, 2): d^2 = 0+1+9+4 = 14 -> 1 - 6*14/(4*15) = -0.4 -> -40
    assert ev.sample_spearman_x100 == pytest.approx(0.0)
    assert ev.summary_spearman_x100 == pytest.approx(-40.0)
    # system level: s1 mean level 2.25 vs coherence 4.5; s2 3.0 vs 1.5 -> -100
    assert ev.system_spearman_x100 == pytest.approx(-100.0)
    assert (ev.n_pass, ev.pass_rate) == (2, 0.5)  # 3.0 and 4.0 pass at 2.5
    assert ev.p_first_better == pytest.approx(0.6) and ev.p_first_worse == pytest.approx(0.3)
    with pytest.raises(InputError, match="reference column"):
        ab.evaluate_scores(table, frame, reference="nope")


def test_prompts_wording_per_task_and_order():
    aspect = Aspect.from_name("engagingness")
    tpl = ab.comparison_template("bws", "dialogue")
    p = ab.comparison_prompt(tpl, "hi there", "TARGET", "REF", aspect, TARGET_FIRST)
    assert "Response A: TARGET" in p.text and "Response B: REF" in p.text
    assert "how engaging it is" in p.text and p.primer == "Answer:"
    q = ab.comparison_prompt(tpl, "hi there", "TARGET", "REF", aspect, REFERENCE_FIRST)
    assert "Response A: REF" in q.text and "Response B: TARGET" in q.text
    yn = ab.comparison_prompt(ab.comparison_template("yes-no", "summary"), "c", "t", "r",
                              Aspect.from_name("overall"), TARGET_FIRST)
    assert "Is Summary A better than Summary B? Answer Yes or No." in yn.text
    g = ab.generation_prompt("A story prompt.", 3, 5, Aspect.from_name("very scary"), "story",
                             "bad story", "great story", 1, 5)
    assert "Story with a score of 1" in g and "great story" in g and "score of 3" in g
    assert "more very scary than the first story" in g
    first = ab.generation_prompt("Passage text.", 1, 5, Aspect.from_name("coherence"), "summary")
    assert "very poor summary" in first and "score of 1" in first


def test_parse_anchor_file_reports_every_problem(tmp_path):
    good = tmp_path / "a.csv"
    good.write_text("context_id,level,text\nd1,1,bad\nd1,2,good\n", encoding="utf-8")
    refs = ab.parse_anchor_file(good, n_levels=2)
    assert [(r.context_id, r.level, r.text, r.source) for r in refs] == [
        ("d1", 1, "bad", "uploaded"), ("d1", 2, "good", "uploaded")]
    bad = b"context_id,level,text\nd1,x,t\nd1,9,t\nd1,1,\nd1,1,a\nd1,1,b\n"
    with pytest.raises(ValidationError) as e:
        ab.parse_anchor_file(bad, file_label="bad.csv", n_levels=5)
    rows = [(p.row, p.column) for p in e.value.problems]
    assert rows == [(2, "level"), (3, "level"), (4, "text"), (6, "level")]
    with pytest.raises(ValidationError, match="missing column"):
        ab.parse_anchor_file(b"context,level\n")


# ---------------------------------------------------------------- store and run loop (fake judge)

class FakeJudge:
    """A FAKE judge: P(Better) grows with the target's length relative to the reference's."""

    model_key = "fake-judge-v1"
    description = "fake judge"
    context_window = None

    def __init__(self):
        self.calls = 0

    def label_logprobs_stream(self, prompts, words):
        self.calls += len(prompts)
        out = []
        for p in prompts:
            a = p.text.split("Summary A: ")[1].split("\n\n")[0]
            b = p.text.split("Summary B: ")[1].split("\n\n")[0]
            better = 0.8 if len(a) > len(b) else 0.1
            out.append(np.log([better * 0.5, (0.9 - better) * 0.5, 0.1 * 0.5]))
        # two micro-batches, as a real judge streams them
        half = (len(out) + 1) // 2
        for rows in (np.arange(half), np.arange(half, len(out))):
            if len(rows):
                yield rows, np.array(out)[rows], 1.0


def execute(store, run_id, judge):
    return execute_run(store, run_id, judge=judge, reporter=QUIET)


def _run(store, dataset, **kw):
    ds_id = store.save_dataset(dataset)
    settings = ab.absolute_settings(dataset.name, Aspect.from_name("coherence"), model="fake",
                                    n_levels=2, task="summary", reference_set="upload", **kw)
    run_id = store.create_run(kw.pop("name", "abs-run"), ds_id, settings.to_dict())
    return ds_id, settings, run_id


def test_store_references_round_trip_and_replace(store, tiny_dataset):
    ds_id = store.save_dataset(tiny_dataset)
    refs = [Reference("doc1", 1, "worst", "generated", {"seed": 0}), Reference("doc1", 2, "best")]
    assert store.save_references(ds_id, "coherence", "m1", refs) == 2
    got = store.load_references(ds_id, "coherence", "m1")
    assert [(r.level, r.text, r.source) for r in got] == [(1, "worst", "generated"), (2, "best", "generated")]
    assert got[0].generation == {"seed": 0}
    store.save_references(ds_id, "coherence", "m1", [Reference("doc1", 2, "best, edited", "edited")])
    assert [r.text for r in store.load_references(ds_id, "coherence", "m1")] == ["worst", "best, edited"]
    assert store.load_references(ds_id, "fluency", "m1") == []
    assert store.reference_sets(ds_id) == [("coherence", "m1", 2)]
    with pytest.raises(InputError, match="not in the dataset"):
        store.save_references(ds_id, "coherence", "m1", [Reference("nope", 1, "x")])
    assert store.delete_references(ds_id, "coherence", "m1", "doc1") == 2
    assert store.load_references(ds_id, "coherence", "m1") == []


def test_score_run_stores_resumes_recomputes_edited_references_and_caches(store):
    dataset = _dataset()
    ds_id, settings, run_id = _run(store, dataset)
    store.save_references(ds_id, "coherence", "upload", [
        Reference("d1", 1, "x", "uploaded"), Reference("d1", 2, "a much longer reference", "uploaded"),
        Reference("d2", 1, "y", "uploaded"), Reference("d2", 2, "another long reference text", "uploaded")])
    judge = FakeJudge()
    summary = execute(store, run_id, judge)
    # 2 contexts x 2 candidates x 2 levels x 2 orders
    assert (summary.total, summary.computed) == (16, 16) and judge.calls == 16
    frame = store.absolute_frame(run_id)
    assert len(frame) == 16
    assert (frame[["p_better", "p_worse", "p_similar"]].sum(axis=1)).to_numpy() == pytest.approx(np.ones(16))
    # c1 "A cat sat." (10 chars) beats "x" (level 1), loses to the long level-2 reference:
    # target-first p = (0.8, 0.1, 0.1) / 1 at level 1 and (0.1, 0.8, 0.1) at level 2;
    # reference-first: level 1 "x" first is shorter -> (0.1, 0.8, 0.1) about x -> target (0.8, 0.1)
    table = ab.score_table(dataset, frame, 2)
    c1 = table[(table.context_id == "d1") & (table.candidate_id == "c1")].iloc[0]
    # s = 1*(0.8-0.1) + 2*(0.1-0.8) = -0.7; level = 0.5 + (0.8+0.05) + (0.1+0.05) = 1.5
    assert c1["score"] == pytest.approx(-0.7) and c1["level"] == pytest.approx(1.5)
    # Resume: nothing to do.
    again = execute(store, run_id, judge)
    assert (again.already_stored, again.computed, again.cached) == (16, 0, 0) and judge.calls == 16
    # Editing one reference recomputes exactly its comparisons (2 candidates x 2 orders).
    store.save_references(ds_id, "coherence", "upload", [Reference("d1", 1, "an edited longer first anchor", "edited")])
    third = execute(store, run_id, judge)
    assert (third.already_stored, third.computed) == (12, 4) and judge.calls == 20
    assert len(store.absolute_frame(run_id)) == 16
    # A second run with the same model and prompts takes every judgement from the cache.
    run2 = store.create_run("abs-run-2", ds_id, settings.to_dict())
    fourth = execute(store, run2, judge)
    assert (fourth.computed, fourth.cached) == (0, 16) and judge.calls == 20
    assert store.get_run(run2).status == "completed"


def test_uploaded_references_missing_a_level_is_an_input_error(store):
    dataset = _dataset()
    ds_id, settings, run_id = _run(store, dataset)
    store.save_references(ds_id, "coherence", "upload", [Reference("d1", 1, "x", "uploaded")])
    with pytest.raises(InputError, match="uploaded anchors lack 2 context"):
        execute(store, run_id, FakeJudge())


def test_stored_absolute_keys(store):
    dataset = _dataset()
    ds_id, settings, run_id = _run(store, dataset, orders="target-first", contexts=1)
    store.save_references(ds_id, "coherence", "upload",
                          [Reference("d1", 1, "x", "uploaded"), Reference("d1", 2, "yy", "uploaded")])
    execute(store, run_id, FakeJudge())
    keys = store.stored_results(run_id, "absolute")
    assert set(keys) == {AbsoluteKey("d1", c, lv, TARGET_FIRST) for c in ("c1", "c2") for lv in (1, 2)}


# ---------------------------------------------------------------- the real bundled model

@pytest.mark.model
def test_real_model_writes_references_and_scores_a_tiny_slice(store, bundled_model):
    from compassess_core.judges import load_judge
    ctx = Context("A0", "The city council approved a new park on Tuesday. Work starts in May and "
                        "the park will open next year with a playground and a small lake.", (
        Candidate("good", "The council approved a new park; work starts in May and it opens next year.", "s1",
                  {"coherence": 5.0}),
        Candidate("bad", "park lake Tuesday the council a", "s2", {"coherence": 1.0}),
    ))
    dataset = Dataset("real-slice", (ctx,), ("coherence",))
    ds_id = store.save_dataset(dataset)
    judge = load_judge(str(bundled_model), device="cpu", batch_size=8)
    settings = ab.absolute_settings(dataset.name, Aspect.from_name("coherence"), model=str(bundled_model),
                                    n_levels=3, task="summary", max_new_tokens=24)
    run_id = store.create_run("real-abs", ds_id, settings.to_dict())
    summary = execute(store, run_id, judge)
    ref_set = ab.reference_set_key(settings, judge.model_key)
    refs = store.load_references(ds_id, "coherence", ref_set)
    assert [r.level for r in refs] == [1, 2, 3]
    assert all(r.source == "generated" and r.generation["max_new_tokens"] == 24 for r in refs)
    assert refs[1].generation["lower"] == 1 and refs[1].generation["upper"] == 3
    assert summary.total == 2 * 3 * 2 and summary.computed == 12
    frame = store.absolute_frame(run_id)
    p = frame[["p_better", "p_worse", "p_similar"]].to_numpy()
    assert np.allclose(p.sum(axis=1), 1.0) and (p >= 0).all()
    assert (frame["label_mass"] > 0).all() and (frame["label_mass"] <= 1).all()
    # The stored probabilities are the raw log-probabilities renormalised (nothing else).
    lp = frame[["logp_better", "logp_worse", "logp_similar"]].to_numpy()
    assert np.allclose(np.exp(lp) / np.exp(lp).sum(axis=1, keepdims=True), p, atol=1e-9)
    table = ab.score_table(dataset, frame, 3)
    assert table["level"].between(1, 3).all() and table["score"].between(-6, 6).all()
    # A rerun reuses the stored references and comparisons: no generation, no judging.
    again = execute(store, run_id, judge)
    assert (again.already_stored, again.computed) == (12, 0)
    assert [r.text for r in store.load_references(ds_id, "coherence", ref_set)] == [r.text for r in refs]


# ---------------------------------------------------------------- the Scores page (AppTest)

def _seed_absolute_run(url: str):
    """The bundled sample with hand-chosen comparisons: N = 3, target-first only.

    In every context, the candidate with the highest coherence gets P(Better) = 1 against levels
    1 and 2 and P(Similar) = 1 against level 3 -> level 0.5 + 2 + 0.5 = 3.0; every other candidate
    P(Worse) = 1 against all three -> level 1.0 (clipped from 0.5). So 3 of 15 candidates pass at 2.
    """
    from pathlib import Path

    from compassess_core.runs.absolute import AbsoluteJudgement, AbsoluteResult
    from compassess_core.data.candidates import load_candidates
    from db.store import Store

    sample = Path(__file__).resolve().parents[2] / "assets" / "sample_summeval.csv"
    store = Store(url)
    dataset = load_candidates(sample, name="sample_summeval", file_label="sample_summeval.csv")
    ds_id = store.save_dataset(dataset)
    settings = ab.absolute_settings(dataset.name, Aspect.from_name("coherence"), model="fake",
                                    n_levels=3, orders="target-first")
    run_id = store.create_run("abs-hand", ds_id, settings.to_dict())
    store.record_judge(run_id, "fake-judge|fp32|labels=x")
    ref_set = ab.reference_set_key(settings, "fake-judge|fp32|labels=x")
    results, refs = [], []
    for ctx in dataset.contexts:
        refs += [Reference(ctx.context_id, lv, f"reference {lv} of {ctx.context_id}") for lv in (1, 2, 3)]
        best = max(ctx.candidates, key=lambda c: c.scores["coherence"]).candidate_id
        for c in ctx.candidates:
            for lv in (1, 2, 3):
                if c.candidate_id == best:
                    p = (1.0, 0.0, 0.0) if lv < 3 else (0.0, 0.0, 1.0)
                else:
                    p = (0.0, 1.0, 0.0)
                results.append(AbsoluteResult(AbsoluteKey(ctx.context_id, c.candidate_id, lv, TARGET_FIRST),
                                              AbsoluteJudgement(*p, -1.0, -1.0, -1.0, 0.9, 1.0), f"h{lv}", "r"))
    store.save_references(ds_id, "coherence", ref_set, refs)
    store.add_results(run_id, "absolute", results)
    store.set_run_status(run_id, "completed", done=len(results), total=len(results))
    return store, ds_id, run_id, ref_set


@pytest.fixture
def app_env(db_url, tmp_path, monkeypatch):
    monkeypatch.setenv("COMPASSESS_DATABASE_URL", db_url)
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))
    return db_url


def test_scores_page_threshold_drilldown_and_reference_edit(app_env):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    store, ds_id, run_id, ref_set = _seed_absolute_run(app_env)
    app = str(Path(__file__).resolve().parents[2] / "app.py")
    at = AppTest.from_file(app, default_timeout=60).run()
    at.switch_page("pages/scores.py").run()
    assert not at.exception, at.exception
    passing = [m.value for m in at.metric if m.label == "Candidates passing"][0]
    assert passing == "3 of 15"  # default threshold: middle of 1..3 = 2.0
    assert [m.value for m in at.metric if m.label == "Pass rate"][0] == "20.0%"
    # Each context's most coherent summary is alone at the top, the rest tie: Spearman > 0.
    assert float([m.value for m in at.metric if m.label == "Sample-level Spearman x100"][0]) > 0
    slider = [s for s in at.slider if s.label.startswith("Threshold")][0]
    slider.set_value(1.0).run()
    assert [m.value for m in at.metric if m.label == "Candidates passing"][0] == "15 of 15"
    scores = at.dataframe[0].value
    assert sorted(scores["level"].round(6).unique().tolist()) == [1.0, 3.0]
    # Drill-down: the first candidate's three comparisons, in the target's view.
    drill = at.dataframe[1].value
    assert drill["level"].tolist() == [1, 2, 3]
    assert set(drill["order"]) == {TARGET_FIRST}
    # Edit a reference as plain text and save it.
    area = [t for t in at.text_area if t.label.startswith("Level 2")][0]
    assert area.value == "reference 2 of A0"
    area.set_value("=an edited reference").run()
    [b for b in at.button if b.label == "Save edits"][0].click().run()
    assert not at.exception, at.exception
    got = {r.level: (r.text, r.source) for r in store.load_references(ds_id, "coherence", ref_set)
           if r.context_id == "A0"}
    assert got[2] == ("=an edited reference", "edited") and got[1][1] == "generated"
    assert len(at.get("download_button")) == 1


def test_scores_page_without_an_absolute_run_guides_the_user(app_env):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    app = str(Path(__file__).resolve().parents[2] / "app.py")
    at = AppTest.from_file(app, default_timeout=60).run()
    at.switch_page("pages/scores.py").run()
    assert not at.exception, at.exception
    assert "No absolute-score run yet" in "\n".join(i.value for i in at.info)


def test_run_page_absolute_mode_creates_an_absolute_run(app_env, monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    import pages._common as common
    from compassess_core.data.candidates import load_candidates
    from db.store import Store

    store = Store(app_env)
    sample = Path(__file__).resolve().parents[2] / "assets" / "sample_summeval.csv"
    store.save_dataset(load_candidates(sample, name="sample_summeval", file_label="s.csv"))
    started = []
    monkeypatch.setattr(common.api.Job, "start", lambda job, *a, **k: started.extend(
        job.store.get_run(i).name for i in job.ids))
    app = str(Path(__file__).resolve().parents[2] / "app.py")
    at = AppTest.from_file(app, default_timeout=60).run()
    at.switch_page("pages/run.py").run()
    at.radio(key="run_mode_1").set_value("absolute scores").run()
    at.number_input(key="abs_levels_1").set_value(3).run()
    assert not at.exception, at.exception
    name = [t for t in at.text_input if t.label == "Run name"][0].value
    assert "absolute-bws-summary" in name
    [b for b in at.button if b.label == "Start"][0].click().run()
    assert not at.exception, at.exception
    run = store.get_run(name)
    assert run.settings["kind"] == "absolute" and run.settings["references"]["n_levels"] == 3
    assert run.settings["label_words"] == [" Better", " Worse", " Similar"]
    assert started == [name]


@pytest.mark.model
def test_cli_score_rank_evaluate_export_on_the_sample(db_url, tmp_path, capsys, bundled_model,
                                                      short_summeval):
    """``compassess score`` on the sample (1 article, 2 levels, target first, short references),
    its article cut to its opening sentences (``short_summeval``: the command line's wiring is
    the subject here; docs/python.md's walkthrough scores the whole article)."""
    import json

    from compassess_core.cli import main

    sample = short_summeval
    assert main(["score", str(sample), "--aspect", "coherence", "--references", "2", "--contexts", "1",
                 "--orders", "target-first", "--max-new-tokens", "16", "--run", "abs-cli",
                 "--db", db_url]) == 0
    assert capsys.readouterr().out.strip() == "abs-cli"
    assert main(["rank", "--run", "abs-cli", "--threshold", "1.5", "--format", "json", "--db", db_url]) == 0
    ranked = json.loads(capsys.readouterr().out)
    scores = ranked["scores"]
    assert len(scores) == 5 and all(1.0 <= s["level"] <= 2.0 for s in scores)
    # equal levels share the smallest rank (scipy's rankdata, method="min")
    from scipy.stats import rankdata
    assert [s["rank"] for s in scores] == list(rankdata([-s["level"] for s in scores], method="min"))
    assert [s["level"] for s in scores] == sorted((s["level"] for s in scores), reverse=True)
    assert all(s["pass"] == (s["level"] >= 1.5) for s in scores)
    assert main(["evaluate", "--run", "abs-cli", "--threshold", "1.5", "--json", "--db", db_url]) == 0
    ev = json.loads(capsys.readouterr().out)
    assert ev["reference"] == "coherence" and ev["n_scored"] == 5
    assert ev["n_pass"] == sum(s["pass"] for s in scores)
    out = tmp_path / "scores.csv"
    assert main(["export", "--run", "abs-cli", "--what", "rankings", "--format", "csv", "-o", str(out),
                 "--threshold", "1.5", "--db", db_url]) == 0
    exported = pd.read_csv(out)
    assert {"level", "score", "pass", "text"} <= set(exported.columns)
    assert exported["pass"].tolist() == [s["pass"] for s in scores]
    cmp_out = tmp_path / "comparisons.csv"
    assert main(["export", "--run", "abs-cli", "--what", "comparisons", "--format", "csv", "-o",
                 str(cmp_out), "--db", db_url]) == 0
    comparisons = pd.read_csv(cmp_out)
    assert len(comparisons) == 10 and set(comparisons["order"]) == {TARGET_FIRST}
    # Rerunning the same command resumes: nothing is recomputed.
    assert main(["score", str(sample), "--aspect", "coherence", "--references", "2", "--contexts", "1",
                 "--orders", "target-first", "--max-new-tokens", "16", "--run", "abs-cli",
                 "--db", db_url]) == 0
    assert "(10 already stored, 0 computed" in capsys.readouterr().err


def test_anchor_files_are_read_like_every_upload_with_rows_and_columns(tmp_path):
    tsv = tmp_path / "anchors.tsv"
    tsv.write_text("Context ID\tLevel\tText\nd1\t1\tbad\nd9\t2\tgood\n", encoding="utf-8")
    with pytest.raises(ValidationError) as e:
        ab.parse_anchor_file(tsv, n_levels=2, context_ids=["d1"])
    assert [(p.row, p.column) for p in e.value.problems] == [(3, "context_id")]
    assert "not in the dataset" in e.value.problems[0].message
    assert len(ab.parse_anchor_file(tsv, n_levels=2, context_ids=["d1", "d9"])) == 2
    with pytest.raises(ValidationError, match="larger than"):
        ab.parse_anchor_file(b"context_id,level,text\n" + b"d1,1,x\n" * 200, max_bytes=100)
    with pytest.raises(ValidationError) as e:
        ab.parse_anchor_file(b"context_id,level,text\nd1,1,caf\xe9\n")
    assert e.value.problems[0].row == 2

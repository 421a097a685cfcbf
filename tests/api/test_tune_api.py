"""Tuning the wording and the judge's reasons through the Python API and the CLI, end to end on
a real SQLite store, with FAKE judges (``tests/fakes.py``): the wiring is the point here; the
real SmolLM2 writes reasons in ``tests/runs/test_explain_model.py``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from compassess_core import api
from compassess_core.runs import executor
from compassess_core.cli import main
from compassess_core.errors import InputError, RunCancelled
from tests.fakes import FakeLengthJudge, FakeWritingJudge

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "assets" / "sample_summeval.csv"


@pytest.fixture
def store(db_url):
    s = api.open_store(db_url)
    yield s
    s.close()


def test_tune_judges_every_wording_as_a_run_picks_by_a_paired_test_and_saves_it(store):
    judge = FakeWritingJudge()
    result = store.tune(SAMPLE, aspect="coherence", name="t", contexts=1, holdout=2, rounds=1,
                        per_round=3, judge=judge, writer="judge", progress=False, n_boot=100)
    table = result.table
    # T1, T2, five built-in paraphrases, then the paraphrases the judge wrote of the fairest
    assert table["label"].tolist()[:7] == ["t1", "t2"] + [f"paraphrase {k}" for k in range(1, 6)]
    written = table[table["origin"] == "written by the writer"]
    assert 1 <= len(written) <= 3 and set(written["label"]) == {"round 1"}
    assert table["picked"].sum() == 1
    picked = table[table["picked"]].iloc[0]
    assert result.picked.key == picked["wording"]
    # every wording has a fairness interval; each but T1 a paired difference with T1
    assert (table["fairness_low"] <= table["fairness"] + 1e-12).all()
    assert (table["fairness"] <= table["fairness_high"] + 1e-12).all()
    assert table["vs_t1"].iloc[1:].notna().all() and np.isnan(table["vs_t1"].iloc[0])
    # a wording other than T1 is picked only when it beats T1 outside the paired interval
    if picked["wording"] != "w1":
        assert picked["beats_t1"] and picked["vs_t1_low"] > 0
        assert "fairer than T1" in result.reason
    else:
        assert not table["beats_t1"].any() and result.reason.startswith("T1 kept")
    # one context of 20 comparisons: the tuning warns that its sample is small
    assert any("tuning context(s), fewer than" in w for w in result.warnings)
    assert result.writer == "judge"
    # every wording is a stored run of its own on 1 + 2 contexts (5 summaries: 20 pairs each)
    runs = {r.name: r for r in store.list_runs()}
    for key in table["wording"]:
        assert runs[f"tune-t-{key}"].n_comparisons == 60
    assert (table["comparisons_tune"] == 20).all() and (table["comparisons_holdout"] == 40).all()
    assert result.comparisons_tune == 20 * len(table)
    assert table["agreement_metric"].eq("spearman_x100").all()
    assert "reference column 'coherence'" in result.agreement_with
    # the pick is a named template that runs take by name
    assert result.template == "t"
    saved = store.templates().set_index("name").loc["t"]
    assert saved["text"] == result.picked.text and "tuned by 't'" in saved["source"]
    run = store.run(SAMPLE, aspect="coherence", template="t", contexts=1, judge=judge,
                    progress=False)
    assert run.settings.template_name == "t" and run.settings.template_text == result.picked.text


def test_a_tuning_resumes_without_judging_again_and_writes_the_same_paraphrases(store):
    first = FakeWritingJudge()
    a = store.tune(SAMPLE, aspect="coherence", name="r", contexts=1, rounds=1, judge=first,
                   writer="judge", progress=False, n_boot=50)
    again = FakeWritingJudge()
    b = store.tune(SAMPLE, aspect="coherence", name="r", contexts=1, rounds=1, judge=again,
                   writer="judge", progress=False, n_boot=50)
    assert again.seen == [] and again.asked == []  # nothing judged, nothing written anew
    assert b.table.drop(columns=[]).equals(a.table)
    with pytest.raises(InputError, match="already exists with other settings .*contexts"):
        store.create_tuning(SAMPLE, aspect="coherence", name="r", contexts=2)


def test_the_budget_caps_the_wordings_and_the_plan_says_the_cost_first(store):
    plan = store.plan_tuning(store.add_dataset(SAMPLE).name, aspect="coherence", contexts=1,
                             budget=60)
    assert (plan.per_wording, plan.max_wordings, plan.comparisons) == (20, 3, 60)
    assert "up to 3 wording(s)" in plan.sentence() and "of judging" in plan.sentence()
    result = store.tune(SAMPLE, aspect="coherence", name="b", contexts=1, budget=60,
                        judge=FakeWritingJudge(), progress=False, n_boot=50)
    assert result.table["label"].tolist() == ["t1", "t2", "paraphrase 1"]
    assert "budget" in result.message
    with pytest.raises(InputError, match="less than one wording"):
        store.plan_tuning("sample_summeval", aspect="coherence", contexts=1, budget=10)


def test_a_judge_that_cannot_write_tunes_the_starting_wordings_and_says_so(store):
    messages = []

    class Log:
        def loaded(self, d): pass
        def progress(self, p): pass
        def message(self, text): messages.append(text)
    result = store.tune(SAMPLE, aspect="coherence", name="nw", contexts=1, rounds=2,
                        judge=FakeLengthJudge(), writer="judge", progress=Log(), n_boot=50)
    assert len(result.table) == 7
    assert any("no paraphrases will be written" in m and "cannot write" in m for m in messages)
    assert any(m.startswith("tuning 'nw'") and "comparisons" in m for m in messages)
    # no writer chosen: the judge does not write by default, and the tuning says how to ask
    messages.clear()
    result = store.tune(SAMPLE, aspect="coherence", name="nw2", contexts=1, rounds=2,
                        judge=FakeWritingJudge(), progress=Log(), n_boot=50)
    assert len(result.table) == 7 and result.writer == ""
    assert any("no writer chosen (--writer MODEL" in m for m in messages)


def test_the_wordings_of_a_step_are_judged_together_in_one_pass(store):
    """The starting wordings' runs go to the judge together: the same ordered pairs under every
    wording in the same judge calls (what lets a real judge read each context and both texts once
    for all wordings), and each run is still stored, complete, on its own."""
    calls: list[list] = []

    class Recording(FakeWritingJudge):
        prefix_cache = True   # as a local judge's: what grouping saves (a served judge goes one by one)

        def judge_stream(self, prompts):
            prompts = list(prompts)
            calls.append(prompts)
            return super().judge_stream(prompts)
    result = store.tune(SAMPLE, aspect="coherence", name="g", contexts=1, rounds=0,
                        judge=Recording(), progress=False, n_boot=50)
    questions = result.table["question"].tolist()
    assert len(questions) == 7
    assert len(calls) < len(questions)  # fewer judge calls than wordings: not one run after another
    assert all(any(q in p.text for p in calls[0]) for q in questions)
    # a judge without a prefix cache (a served one) judges a wording at a time, as before
    calls.clear()
    Recording.prefix_cache = False
    served = Recording()
    served.model_key = "fake-served-judge|labels=[\" A\", \" B\"]"  # nothing cached for it
    store.tune(SAMPLE, aspect="coherence", name="one-by-one", contexts=1, rounds=0,
               judge=served, progress=False, n_boot=50)
    assert len(calls) >= len(questions)
    runs = {r.name: r for r in store.list_runs()}
    for row in result.table.itertuples():
        run = runs[f"tune-g-{row.wording}"]
        assert run.status == "completed"
        assert run.n_comparisons == row.comparisons_tune + row.comparisons_holdout > 0


def test_a_cancelled_tuning_stops_and_resumes(store):
    judge = FakeWritingJudge()
    tuning = store.create_tuning(SAMPLE, aspect="coherence", name="c", contexts=1, rounds=0)
    judge.on_batch = lambda k: tuning.cancel() if k == 2 else None
    with pytest.raises(RunCancelled):
        tuning.execute(judge=judge, progress=False)
    assert store.tuning("c").status == "cancelled"
    result = store.tuning("c").execute(judge=FakeWritingJudge(), progress=False, n_boot=50)
    assert result.status == "completed" and len(result.table) == 7


def test_cli_tune_templates_and_run_by_template_name(db_url, monkeypatch, capsys):
    judge = FakeWritingJudge()
    monkeypatch.setattr(executor, "load_run_judge", lambda settings: judge)
    assert main(["tune", str(SAMPLE), "--aspect", "coherence", "--contexts", "1", "--holdout",
                 "1", "--rounds", "0", "--name", "cli", "--plan", "--db", db_url]) == 0
    assert "x 40 comparisons (20 on the tuning contexts, 20 held out)" in capsys.readouterr().out
    assert main(["tune", str(SAMPLE), "--aspect", "coherence", "--contexts", "1", "--holdout",
                 "1", "--rounds", "0", "--name", "cli", "--db", db_url]) == 0
    out = capsys.readouterr().out
    assert "fairness" in out and "Spearman raw [95%]" in out and "picked: w" in out
    assert main(["tune", str(SAMPLE), "--aspect", "coherence", "--contexts", "1", "--holdout",
                 "1", "--rounds", "0", "--name", "cli", "--json", "--db", db_url]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["template"] == "cli" and len(data["wordings"]) == 7
    assert main(["templates", "--db", db_url]) == 0
    assert capsys.readouterr().out.startswith("cli\tSummary\t")
    assert main(["templates", "--show", "cli", "--db", db_url]) == 0
    assert capsys.readouterr().out.strip() == data["picked"]["text"]
    assert main(["run", str(SAMPLE), "--aspect", "coherence", "--template", "cli", "--contexts",
                 "1", "--run", "by-name", "--db", db_url]) == 0
    run = api.open_store(db_url).get_run("by-name")
    assert run.settings.template_text == data["picked"]["text"]
    assert main(["run", str(SAMPLE), "--aspect", "coherence", "--template", "nope",
                 "--db", db_url]) == 2
    assert "neither t1, t2 nor an existing file" in capsys.readouterr().err
    assert main(["tune", str(SAMPLE), "--aspect", "coherence", "--contexts", "0",
                 "--db", db_url]) == 2
    assert "--contexts must be at least 1" in capsys.readouterr().err


# ------------------------------------------------------------------------ the judge's reasons

def _fake_run(store, judge):
    return store.run(SAMPLE, aspect="coherence", contexts=1, judge=judge, progress=False,
                     name="fake-run")


def test_explain_asks_both_orders_once_stores_them_and_never_changes_p(store):
    judge = FakeWritingJudge()
    run = _fake_run(store, judge)
    ctx = run.dataset.contexts[0]
    a, b = ctx.candidate_ids[:2]
    before = (run.comparison(ctx.context_id, a, b)["p"], run.comparison(ctx.context_id, b, a)["p"])
    empty = run.explanation(ctx.context_id, a, b)
    assert not empty.complete and [o.text for o in empty.orders] == [None, None]
    done = run.explain(ctx.context_id, a, b, judge=judge)
    assert done.complete and len(done.orders) == 2
    fwd, rev = done.orders
    assert (fwd.first, fwd.second, rev.first, rev.second) == (a, b, b, a)
    assert fwd.text.startswith(f"FAKE reasons for Summary {fwd.verdict}")
    assert fwd.verdict == ("A" if fwd.p > 0.5 else "B")
    assert len(judge.asked) == 2 and "Your answer was: Summary" in judge.asked[0]
    asked = len(judge.asked)
    assert run.explain(ctx.context_id, a, b, judge=judge) == done and len(judge.asked) == asked
    assert store.get_run("fake-run").explanation(ctx.context_id, a, b) == done
    after = (run.comparison(ctx.context_id, a, b)["p"], run.comparison(ctx.context_id, b, a)["p"])
    assert after == before
    # another run of the same judge on the same prompts shows the same stored reasons
    other = store.run(SAMPLE, aspect="coherence", contexts=1, judge=judge, progress=False,
                      name="fake-run-2")
    assert other.explanation(ctx.context_id, a, b).complete


def test_explain_refuses_plainly(store):
    run = _fake_run(store, FakeWritingJudge())
    ctx = run.dataset.contexts[0]
    a, b = ctx.candidate_ids[:2]
    with pytest.raises(InputError, match="cannot write text"):
        run.explain(ctx.context_id, a, b, judge=FakeLengthJudge())
    other = FakeWritingJudge()
    other.model_key = "another-judge"
    with pytest.raises(InputError, match="its reasons would be another judge's"):
        run.explain(ctx.context_id, a, b, judge=other)
    with pytest.raises(InputError, match="did not compare"):
        run.explanation(ctx.context_id, a, a)
    with pytest.raises(InputError, match="max_tokens must be at most"):
        run.explanation(ctx.context_id, a, b, max_tokens=10_000)


def test_cli_explain_prints_the_stored_text_and_the_report_shows_it(db_url, monkeypatch, capsys):
    judge = FakeWritingJudge()
    store = api.open_store(db_url)
    run = _fake_run(store, judge)
    ctx = run.dataset.contexts[0]
    a, b = ctx.candidate_ids[:2]
    assert main(["explain", "--run", "fake-run", "--context", ctx.context_id, "--a", a, "--b", b,
                 "--stored", "--db", db_url]) == 0
    assert "(no reasons stored yet)" in capsys.readouterr().out
    monkeypatch.setattr(executor, "load_run_judge", lambda settings: judge)
    assert main(["explain", "--run", "fake-run", "--context", ctx.context_id, "--a", a, "--b", b,
                 "--json", "--db", db_url]) == 0
    data = json.loads(capsys.readouterr().out)
    stored = run.explanation(ctx.context_id, a, b)
    assert [o["text"] for o in data["orders"]] == [o.text for o in stored.orders]
    # the audit report's examples carry the reasons of a pair shown
    dep = run.order_dependence("balanced")
    top = dep.iloc[0]
    run.explain(top["context_id"], top["first"], top["second"], judge=judge)
    html = store.report(["fake-run"], n_boot=20).decode()
    assert "The judge&#x27;s reasons" in html or "The judge's reasons" in html
    assert "FAKE reasons for Summary" in html


def test_a_tuning_reuses_what_other_runs_of_the_judge_stored(store):
    store.run(SAMPLE, aspect="coherence", contexts=1, judge=FakeWritingJudge(), progress=False,
              name="plain-t1")  # T1 on the first article, all 20 ordered pairs
    judge = FakeWritingJudge()
    store.tune(SAMPLE, aspect="coherence", name="reuse", contexts=1, rounds=0, judge=judge,
               progress=False, n_boot=50)
    t1 = store.get_run("tune-reuse-w1")
    assert t1.n_comparisons == 20
    t1_text = t1.prompt("A0", "S3", "S5").text
    assert all(p.text != t1_text for p in judge.seen)  # T1 came from the cache
    assert len(judge.seen) == 6 * 20  # the six other wordings were judged


def test_a_served_judge_explains_through_its_chat_api(store):
    import sys
    sys.path.insert(0, str(ROOT / "tests"))
    from tests.openai_server import FakeBackend, OpenAIServer
    with OpenAIServer(FakeBackend(0.0), model_name="fake") as srv:
        run = store.run(SAMPLE, aspect="coherence", contexts=1, strategy="symmetric", budget=2,
                        model=f"openai:{srv.base_url}#fake", progress=False, name="served")
        table = run.comparisons()
        ctx, first, second = table.iloc[0][["context_id", "a_id", "b_id"]]
        posts = srv.posts
        found = run.explain(ctx, first, second, max_tokens=8)
        assert srv.posts == posts + 2  # one chat request per order
    assert found.complete and all(o.text for o in found.orders)
    assert found.judge_key.startswith(f"openai:{srv.base_url}#fake|chat")
    assert store.get_run("served").explanation(ctx, first, second, max_tokens=8) == found

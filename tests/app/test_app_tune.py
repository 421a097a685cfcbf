"""The Tune wording page, the judge's reasons in the comparison view, the Run page's saved
templates and the tuning and explanation jobs of the one worker, on a real SQLite store (AppTest). The tunings and
runs here are judged by FAKE judges (``tests/fakes.py``) in the test process: the pages and the
wiring are the point; no model is loaded."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from compassess_core import api, worker
from compassess_core.runs import executor
from tests.fakes import FakeWritingJudge
from tests.app.test_app_pages import APP, app_env, open_page, texts  # noqa: F401 - fixture

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "assets" / "sample_summeval.csv"


def _tuned(url: str) -> api.TuningResult:
    store = api.open_store(url)
    return store.tune(SAMPLE, aspect="coherence", name="page-tuning", contexts=1, holdout=1,
                      rounds=1, judge=FakeWritingJudge(), writer="judge", progress=False,
                      n_boot=50)


def test_tune_page_shows_the_cost_the_table_and_the_saved_pick(app_env):
    result = _tuned(app_env)
    at = open_page("tune")
    assert not at.exception, at.exception
    cost = texts(at.info)
    # the page's default: no writer, so the starting wordings only
    assert "Cost: up to 7 wording(s) (7 to start) x" in cost and "of judging" in cost
    table = at.dataframe[0].value
    assert table["wording"].tolist() == result.table["wording"].tolist()
    assert table["picked"].sum() == 1
    # every wording's fairness with its interval, and the paired test against T1
    assert table["fairness_low"].notna().all() and table["fairness_high"].notna().all()
    assert table["vs_t1"].iloc[1:].notna().all()
    shown = texts(at.success)
    assert f"Picked: {result.picked.key}" in shown and "Why: " in shown
    assert result.reason in shown
    paired = next(d.value for d in at.dataframe if "McNemar exact p" in d.value.columns)
    assert paired.iloc[0]["A - B (on the A-rate scale)"] == pytest.approx(result.vs_t1.difference)
    assert any("only 1 tuning context(s)" in w.value for w in at.warning)
    assert "saved as the template `page-tuning`" in shown
    assert result.picked.text in texts(at.code)
    assert "page-tuning (completed)" in at.selectbox(key=f"tune_pick_1").format_func(
        at.selectbox(key="tune_pick_1").value)


def test_start_creates_the_tuning_and_hands_it_to_a_worker(app_env, monkeypatch):
    started = []
    monkeypatch.setattr(api.Job, "start", lambda job, log=None, cwd=None: started.append(
        (job.store.tuning(job.ids[0]).name, Path(log or job.log_path).name)))
    store = api.open_store(app_env)
    dataset_id = store.dataset_id(store.add_dataset(SAMPLE).name)
    at = open_page("tune")
    at.number_input(key=f"tune_contexts_{dataset_id}").set_value(1).run()
    at.number_input(key=f"tune_rounds_{dataset_id}").set_value(0).run()
    at.text_input(key=f"tune_name_{dataset_id}").set_value("from-page").run()
    at.radio(key=f"tune_writer_kind_{dataset_id}").set_value("a served model").run()
    at.text_input(key=f"tune_writer_served_{dataset_id}").set_value(
        "openai:http://127.0.0.1:9/v1#writer").run()
    at.number_input(key=f"tune_rounds_{dataset_id}").set_value(1).run()
    # a writer chosen: its rounds count in the cost
    assert ("up to 10 wording(s) (7 to start, then 1 round(s) of up to 3 written by the writer)"
            in texts(at.info))
    at.number_input(key=f"tune_rounds_{dataset_id}").set_value(0).run()
    assert "up to 7 wording(s) (7 to start) x 20 comparisons" in texts(at.info)
    at.button(key=f"tune_start_{dataset_id}").click().run()
    assert not at.exception, at.exception
    t = api.open_store(app_env).tuning("from-page")
    assert started == [("from-page", f"tuning-{t.id}.log")]
    assert (t.options.contexts, t.options.rounds, t.info.aspect) == (1, 0, "coherence")
    assert t.options.writer == "openai:http://127.0.0.1:9/v1#writer"


def test_the_comparison_view_shows_the_judges_reasons_and_offers_to_ask(app_env, monkeypatch):
    judge = FakeWritingJudge()
    store = api.open_store(app_env)
    run = store.run(SAMPLE, aspect="coherence", contexts=1, judge=judge, progress=False,
                    name="explained")
    ctx = run.dataset.contexts[0]
    a, b, c = ctx.candidate_ids[:3]
    done = run.explain(ctx.context_id, a, b, judge=judge)
    at = open_page("matrix")
    at.selectbox(key="pick_first").set_value(a).run()
    at.selectbox(key="pick_second").set_value(b).run()
    at.button(key="open_pick").click().run()
    assert not at.exception, at.exception
    shown = texts(at.text)
    for order in done.orders:
        assert order.text in shown
    assert any("The judge's reasons" in m.value for m in at.markdown)
    # a pair nobody asked about: a button hands it to a worker process
    asked = []

    monkeypatch.setattr(api.Job, "start", lambda job, log=None, **kw: asked.append(
        (job.params["context"], job.params["first"], job.params["second"])))
    # its worker process, as the job's status finds it (alive once it was started)
    from compassess_core.api.jobs import JOB_KINDS
    monkeypatch.setattr(type(JOB_KINDS["explanation"]), "process",
                        lambda kind, job: 4242 if asked else None)
    at.selectbox(key="pick_second").set_value(c).run()
    at.button(key="open_pick").click().run()
    [ask] = [x for x in at.button if x.label.startswith("Ask the judge for its reasons")]
    ask.click().run()
    assert not at.exception, at.exception
    assert asked == [(ctx.context_id, a, c)]
    assert any("writing its reasons" in i.value for i in at.info)


def test_the_run_page_offers_saved_templates(app_env):
    result = _tuned(app_env)
    [dataset] = api.open_store(app_env).list_datasets()   # the form is keyed by its id
    dataset_id = dataset.id
    at = open_page("run")
    at.radio(key=f"template_choice_{dataset_id}").set_value("saved").run()
    assert not at.exception, at.exception
    assert at.selectbox(key=f"saved_template_{dataset_id}").value == "page-tuning"
    question = result.picked.text.rsplit("\n\n", 1)[1].replace("{aspect}", "coherent")
    assert question in texts(at.code)


def test_the_workers_execute_a_tuning_and_store_reasons(app_env, monkeypatch):
    monkeypatch.setenv("COMPASSESS_WORKER_NICE", "0")  # the test process keeps its priority
    judge = FakeWritingJudge()
    monkeypatch.setattr(executor, "load_run_judge", lambda settings: judge)
    store = api.open_store(app_env)
    t = store.create_tuning(SAMPLE, aspect="coherence", name="bg", contexts=1, rounds=0)
    assert worker.main(["tuning", f"--id={t.id}"]) == 0
    assert store.tuning("bg").status == "completed" and len(store.tuning("bg").runs()) == 7
    run = store.get_run("tune-bg-w1")
    ctx = run.dataset.contexts[0]
    a, b = ctx.candidate_ids[:2]
    assert worker.main(["explanation", f"--id={run.id}", f"--context={ctx.context_id}",
                                f"--first={a}", f"--second={b}"]) == 0
    assert run.explanation(ctx.context_id, a, b).complete
    assert worker.main(["explanation", f"--id={run.id}", f"--context={ctx.context_id}",
                                f"--first={a}", f"--second={a}"]) == 2

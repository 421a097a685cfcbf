"""AppTest tests of prompt-scoring runs (paper §4.3.2 baseline) in the Streamlit app.

* Run page, mode "prompt scoring (baseline)": the run is created with kind "scoring", the chosen
  template and aspect, and handed to the worker launcher; its progress counts candidates scored.
* Rankings page: a scoring run whose scores are written straight into the store, chosen so that
  every number can be worked out by hand: in each context of the bundled sample (5 summaries with
  distinct coherence) the expected score rises with coherence and the argmax score falls with it,
  so Spearman x100 against coherence is +100.0 (expected, G-Eval) and -100.0 (argmax).
* Matrix, Bias, Agreement, Scores and Export with a scoring run in the store do not fail.

A last test (marked ``model``) runs the real worker with the bundled model on one context.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from compassess_core.data.candidates import load_candidates
from compassess_core.judges.models import default_model_path
from compassess_core.runs.prompts import Aspect
from compassess_core.types import CandidateKey
from compassess_core.runs.scoring import (ScoreJudgement, ScoreResult, scoring_settings,
                                     scoring_template)
from db.store import Store

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
SAMPLE = ROOT / "assets" / "sample_summeval.csv"
SCORING_MODE = "prompt scoring (baseline)"


@pytest.fixture
def app_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COMPASSESS_DATABASE_URL", db_url)
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))
    return db_url


def save_sample(url: str) -> tuple[Store, int]:
    store = Store(url)
    return store, store.save_dataset(load_candidates(SAMPLE, name="sample_summeval",
                                                     file_label="sample_summeval.csv"))


def seed_scoring_run(url: str, run: str = "score-run") -> tuple[Store, int, int]:
    """A completed s1 scoring run on the sample: expected score = 1 + 2 x (coherence rank in its
    context, 0 = worst), argmax = 10 - that rank (reversed on purpose)."""
    store, dataset_id = save_sample(url)
    dataset = store.load_dataset(dataset_id)
    aspect = Aspect.from_name("coherence")
    settings = scoring_settings(dataset.name, aspect, scoring_template("s1", aspect),
                                "bundled:SmolLM2-135M-Instruct")
    run_id = store.create_run(run, dataset_id, settings.to_dict())
    store.record_judge(run_id, "bundled|scores=1-10")
    results = []
    for ctx in dataset.contexts:
        order = sorted(ctx.candidates, key=lambda c: c.scores["coherence"])
        for rank, cand in enumerate(order):
            probs = tuple(0.1 for _ in range(10))
            results.append(ScoreResult(CandidateKey(ctx.context_id, cand.candidate_id),
                                       ScoreJudgement(float(10 - rank), 1.0 + 2.0 * rank, probs, 0.8),
                                       f"hash-{ctx.context_id}-{cand.candidate_id}"))
    store.add_results(run_id, "scoring", results)
    store.set_run_status(run_id, "completed", done=len(results), total=len(results))
    return store, dataset_id, run_id


def seed_pairwise_run(store: Store, dataset_id: int, run: str = "pair-run") -> int:
    """A small completed pairwise run (p = 0.8 when the first has the higher coherence)."""
    from compassess_core.runs.prompts import builtin_template
    from compassess_core.runs.settings import RunSettings
    from compassess_core.types import ComparisonResult, Judgement, PairKey

    dataset = store.load_dataset(dataset_id)
    t, a = builtin_template("t1", "summary"), Aspect.from_name("coherence")
    settings = RunSettings(dataset=dataset.name, aspect=a.name, aspect_adjective=a.adjective,
                           template_name=t.name, template_text=t.text, primer=t.primer,
                           model="bundled:SmolLM2-135M-Instruct")
    run_id = store.create_run(run, dataset_id, settings.to_dict())
    results = []
    for ctx in dataset.contexts:
        for x in ctx.candidates:
            for y in ctx.candidates:
                if x is not y:
                    p = 0.8 if x.scores["coherence"] > y.scores["coherence"] else 0.3
                    results.append(ComparisonResult(
                        PairKey(ctx.context_id, x.candidate_id, y.candidate_id),
                        Judgement(p, float(np.log(0.6 * p)), float(np.log(0.6 * (1 - p))), 0.6),
                        f"h-{ctx.context_id}-{x.candidate_id}-{y.candidate_id}"))
    store.add_results(run_id, "comparative", results)
    store.set_run_status(run_id, "completed", done=len(results), total=len(results))
    return run_id


def open_page(page: str, run: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    if run is not None:
        at.query_params["run"] = run
    at.run()
    assert not at.exception, at.exception
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, at.exception
    return at


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def metric(at: AppTest, label_start: str) -> str:
    found = [m.value for m in at.metric if m.label.startswith(label_start)]
    assert found, f"no metric starting with {label_start!r}: {[m.label for m in at.metric]}"
    return found[0]


def progress_text(at: AppTest) -> str:
    return "\n".join(str(p.proto.text) for p in at.get("progress"))


# ------------------------------------------------------------------------------------------- run

def test_run_page_scoring_mode_creates_a_scoring_run_and_launches_the_worker(app_env, monkeypatch):
    store, dataset_id = save_sample(app_env)
    at = open_page("run")  # app.py puts the project root on sys.path: pages._common imports
    import pages._common as common
    started: list[tuple[str, int]] = []
    monkeypatch.setattr(common.api.Job, "start", lambda job, *a, **k: started.extend(
        (job.store.get_run(i).name, i) for i in job.ids))
    at.radio(key="run_mode_1").set_value(SCORING_MODE).run()
    assert not at.exception, at.exception
    code = texts(at.code)
    assert ("Score the response between 1 and 10 based on how {aspect} the summary is" in code)
    at.radio(key="score_template_1").set_value("s2").run()
    assert "Provide a score between 1 and 10 that measures the summary's {aspect_noun}" in texts(at.code)
    assert "measures the summary's coherence" in texts(at.code)  # the live preview
    at.number_input(key="n_contexts_1").set_value(1).run()
    name = [t for t in at.text_input if t.label == "Run name"][0].value
    assert "s2-summary" in name
    [b for b in at.button if b.label == "Start"][0].click().run()
    assert not at.exception, at.exception

    [run] = store.list_runs()
    s = run.settings
    assert (s["kind"], s["template_name"], s["aspect"], s["primer"]) == \
        ("scoring", "s2-summary", "coherence", "Score: ")
    assert s["contexts"] == 1 and s["label_words"] == ["1", "10"]
    assert "Provide a score between 1 and 10" in s["template_text"]
    assert s["model"] == "bundled:SmolLM2-135M-Instruct" and "model_key" not in s
    assert started == [(run.name, run.id)]

    # the worker reports progress: the panel counts candidates, not comparisons
    store.set_run_status(run.id, "running", done=2, total=5)
    at.run()
    assert "Status: running" in texts(at.markdown)
    shown = progress_text(at)
    # No rate measured yet (the first batch): the phase instead of a rate and an ETA.
    assert "2/5 candidates scored (40%)" in shown and "judging" in shown
    assert "comparisons" not in shown
    store.set_run_status(run.id, "running", done=2, total=5, rate=0.5)
    at.run()
    shown = progress_text(at)
    assert "2/5 candidates scored (40%)" in shown and "candidates/s" in shown
    assert "comparisons" not in shown
    assert [b for b in at.button if b.label == "Cancel"]
    [b for b in at.button if b.label == "Cancel"][0].click().run()
    assert store.get_run(run.id).cancel_requested
    store.set_run_status(run.id, "cancelled", done=2, total=5)
    at.run()
    assert "Status: cancelled" in texts(at.markdown)
    [b for b in at.button if b.label == "Resume"][0].click().run()
    assert started[-1] == (run.name, run.id)


def test_run_page_scoring_mode_refuses_a_served_model(app_env, monkeypatch):
    monkeypatch.setenv("COMPASSESS_OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    save_sample(app_env)
    at = open_page("run")
    at.radio(key="run_mode_1").set_value(SCORING_MODE).run()
    at.radio[[r.label for r in at.radio].index("Model")].set_value("served (OpenAI-compatible API)").run()
    at.text_input(key="served_name_1").set_value("qwen2.5-7b-instruct").run()
    assert not at.exception, at.exception
    assert any("Prompt scoring reads the probabilities of the score tokens" in e.value for e in at.error)
    assert [b for b in at.button if b.label == "Start"][0].disabled


def test_run_page_progress_of_a_completed_scoring_run(app_env):
    seed_scoring_run(app_env)
    at = open_page("run")
    assert "Status: completed" in texts(at.markdown) and "Everything planned is stored" in texts(at.markdown)
    assert "15/15 candidates scored (100%)" in progress_text(at)
    latest = next(d.value for d in at.dataframe if "candidate_id" in d.value.columns)
    assert list(latest.columns) == ["context_id", "candidate_id", "score_expected", "score_argmax",
                                    "label_mass"] and len(latest) == 8


# -------------------------------------------------------------------------------------- rankings

def test_rankings_shows_a_scoring_run_by_expected_score_with_spearman(app_env):
    store, dataset_id, _ = seed_scoring_run(app_env)
    at = open_page("rankings")
    assert [s for s in at.selectbox if s.label == "Run"][0].options == \
        ["score-run [completed, prompt scoring, 15 candidates scored]"]
    # pairwise-only controls are not offered, and the sidebar says why
    assert not [r for r in at.radio if r.label.startswith("Decision threshold tau")]
    assert not [s for s in at.selectbox if s.label == "Ranking method"]
    assert "apply to pairwise runs only" in texts(at.sidebar.info)

    assert metric(at, "Spearman x100, expected score (G-Eval)") == "100.0"
    assert metric(at, "Spearman x100, argmax score") == "-100.0"
    assert metric(at, "Mean probability mass on the scores 1–10") == "0.800"
    table = at.dataframe[0].value.set_index("metric")
    assert table.loc["Spearman x100, mean over contexts", "expected score (G-Eval)"] == "100.0"
    assert table.loc["Spearman x100, mean over contexts", "argmax score (prompt scoring)"] == "-100.0"

    ranking = at.dataframe[-1].value
    assert len(ranking) == 15
    assert {"score_expected", "score_argmax", "label_mass", "coherence"} <= set(ranking.columns)
    dataset = store.load_dataset(dataset_id)
    for ctx in dataset.contexts:
        want = [c.candidate_id for c in sorted(ctx.candidates, key=lambda c: -c.scores["coherence"])]
        rows = ranking[ranking["context_id"] == ctx.context_id].sort_values("rank")
        assert rows["candidate_id"].tolist() == want
        assert rows["score_expected"].tolist() == [9.0, 7.0, 5.0, 3.0, 1.0]
        assert rows["score_argmax"].tolist() == [6.0, 7.0, 8.0, 9.0, 10.0]
    assert "expected score (G-Eval)" in texts(at.caption)
    assert "1–10, from the model's distribution over the score tokens" in texts(at.caption)

    # rank by the argmax score instead, one context only
    at.radio(key="score_rank_by").set_value("argmax").run()
    at.selectbox(key="score_rank_context").set_value("A1").run()
    assert not at.exception, at.exception
    ranking = at.dataframe[-1].value
    assert set(ranking["context_id"]) == {"A1"} and len(ranking) == 5
    assert ranking.sort_values("rank")["score_argmax"].tolist() == [10.0, 9.0, 8.0, 7.0, 6.0]


def test_rankings_switches_between_a_scoring_and_a_pairwise_run(app_env):
    store, dataset_id, score_run = seed_scoring_run(app_env)
    pair_run = seed_pairwise_run(store, dataset_id)
    at = open_page("rankings", run="score-run")
    assert metric(at, "Spearman x100, expected score (G-Eval)") == "100.0"
    picker = [s for s in at.selectbox if s.label == "Run"][0]
    assert sorted(o.split(" [")[0] for o in picker.options) == ["pair-run", "score-run"]
    picker.set_value(pair_run).run()
    assert not at.exception, at.exception
    assert [r for r in at.radio if r.label.startswith("Decision threshold tau")]
    assert any(m.label.startswith("P(A) at tau") for m in at.metric)
    [s for s in at.selectbox if s.label == "Run"][0].set_value(score_run).run()
    assert not at.exception, at.exception
    assert metric(at, "Spearman x100, argmax score") == "-100.0"


# ------------------------------------------------------------------------ pages for pairwise runs

@pytest.mark.parametrize("page", ["matrix", "bias", "agreement"])
def test_pairwise_pages_with_only_a_scoring_run_say_so(app_env, page):
    seed_scoring_run(app_env)
    at = open_page(page)
    assert not at.exception, at.exception
    info = texts(at.info)
    assert "No run with stored comparisons yet" in info
    assert "1 prompt-scoring run(s) are not listed here: this page applies to pairwise runs" in info


@pytest.mark.parametrize("page", ["matrix", "bias", "agreement", "scores", "home"])
def test_pages_with_a_scoring_and_a_pairwise_run_do_not_fail(app_env, page):
    store, dataset_id, _ = seed_scoring_run(app_env)
    seed_pairwise_run(store, dataset_id)
    at = open_page(page, run="score-run")
    assert not at.exception, at.exception
    runs = [s for s in at.selectbox if s.label == "Run"]
    if page in ("matrix", "bias", "agreement"):
        # scoring runs are not offered, and the link's scoring run is not replaced by another:
        # the page says why it shows nothing
        assert runs and [o.split(" [")[0] for o in runs[0].options] == ["pair-run"]
        assert runs[0].value is None
        assert "Run `score-run` (id" in texts(at.warning)
        assert "it is a prompt scoring run" in texts(at.warning)
        assert "prompt-scoring run(s) are not listed here" in texts(at.sidebar.caption)


def test_export_offers_the_scores_of_a_scoring_run(app_env, monkeypatch):
    import compassess_core.data.export as export  # the files the API writes (every page's download)
    seed_scoring_run(app_env)
    captured: dict[str, tuple[bytes, bytes | None]] = {}
    real = export.table_bytes

    def spy(df, fmt_, *, what, metadata):
        captured[fmt_] = real(df, fmt_, what=what, metadata=metadata)
        return captured[fmt_]
    monkeypatch.setattr(export, "table_bytes", spy)
    at = open_page("export")
    assert not at.exception, at.exception
    assert {b.label for b in at.get("download_button")} >= {"Download scores.csv"}
    data, sidecar = captured["csv"]
    frame = pd.read_csv(io.BytesIO(data))
    assert len(frame) == 15
    assert {"rank", "candidate_id", "score_expected", "score_argmax", "label_mass",
            "coherence"} <= set(frame.columns)
    assert b'"method": "g-eval expected score"' in sidecar and b'"kind": "scoring"' in sidecar
    at.radio(key="export_format").set_value("json").run()
    assert not at.exception, at.exception
    assert "Download scores.json" in {b.label for b in at.get("download_button")}


# ------------------------------------------------------------------ the real worker (bundled model)

@pytest.mark.model
@pytest.mark.skipif(not default_model_path().is_file(),
                    reason=f"bundled model not fetched ({default_model_path()}); run `make model`")
def test_scoring_run_from_the_page_with_the_bundled_model(app_env):
    store, _ = save_sample(app_env)
    at = open_page("run")
    at.radio(key="run_mode_1").set_value(SCORING_MODE).run()
    at.number_input(key="n_contexts_1").set_value(1).run()
    [b for b in at.button if b.label == "Start"][0].click().run()
    assert not at.exception, at.exception
    [run] = store.list_runs()
    deadline = time.monotonic() + 240
    while store.get_run(run.id).status not in ("completed", "failed") and time.monotonic() < deadline:
        time.sleep(0.2)
    done = store.get_run(run.id)
    assert done.status == "completed", done.message
    assert (done.done, done.total) == (5, 5) and done.judge_key.endswith("|scores=1-10")
    table = store.score_table(run.id)
    assert len(table) == 5 and ((table.score_expected >= 1) & (table.score_expected <= 10)).all()
    at.run()
    assert "5/5 candidates scored (100%)" in progress_text(at)
    at.switch_page("pages/rankings.py").run()
    assert not at.exception, at.exception
    assert len(at.dataframe[-1].value) == 5

"""AppTest tests of every page of the Streamlit app, on a real SQLite store in ``tmp_path``.

The result pages are checked on a run whose comparisons are written straight into the store with
hand-chosen probabilities, so every displayed number can be worked out by hand:

* in each context of the bundled sample (3 articles x 5 summaries, distinct coherence per article),
  p(x first beats y) = 0.9 when x has the higher coherence and 0.55 when it has the lower one;
* at tau = 0.5 every comparison is won by the first position: P(A) = 1.00, and every pair flips;
* tau* = median{0.9 x 30, 0.55 x 30} = (0.55 + 0.9) / 2 = 0.725: P(A) = 0.50, no pair flips, and
  the win ratio ranks the summaries exactly by coherence (rank 1 = highest coherence).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from compassess_core.data.candidates import load_candidates
from compassess_core.runs.prompts import Aspect, builtin_template
from compassess_core.runs.settings import RunSettings
from compassess_core.types import ComparisonResult, Judgement, PairKey
from db.store import Store

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
SAMPLE = ROOT / "assets" / "sample_summeval.csv"
P_BETTER_FIRST, P_WORSE_FIRST = 0.9, 0.55
TAU_STAR = (P_BETTER_FIRST + P_WORSE_FIRST) / 2


@pytest.fixture
def app_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COMPASSESS_DATABASE_URL", db_url)
    monkeypatch.setenv("COMPASSESS_HOME", str(tmp_path / "home"))
    return db_url


def settings_for(dataset_name: str, **kw) -> RunSettings:
    t, a = builtin_template("t1", "summary"), Aspect.from_name("coherence")
    return RunSettings(dataset=dataset_name, aspect=a.name, aspect_adjective=a.adjective,
                       template_name=t.name, template_text=t.text, primer=t.primer,
                       model="bundled:SmolLM2-135M-Instruct", **kw)


def seed_run(url: str, source: Path | bytes = SAMPLE, name: str = "sample_summeval",
             run: str = "hand-run") -> tuple[Store, int, int]:
    store = Store(url)
    dataset = load_candidates(source, name=name, file_label=f"{name}.csv")
    dataset_id = store.save_dataset(dataset)
    run_id = store.create_run(run, dataset_id, settings_for(dataset.name).to_dict())
    results = []
    for ctx in dataset.contexts:
        for x in ctx.candidates:
            for y in ctx.candidates:
                if x is y:
                    continue
                better = x.scores["coherence"] > y.scores["coherence"]
                p = P_BETTER_FIRST if better else P_WORSE_FIRST
                results.append(ComparisonResult(
                    PairKey(ctx.context_id, x.candidate_id, y.candidate_id),
                    Judgement(p, float(np.log(0.6 * p)), float(np.log(0.6 * (1 - p))), 0.6),
                    f"hash-{ctx.context_id}-{x.candidate_id}-{y.candidate_id}"))
    store.add_results(run_id, "comparative", results)
    store.set_run_status(run_id, "completed", done=len(results), total=len(results))
    return store, dataset_id, run_id


def open_page(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, at.exception
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, at.exception
    return at


def metric(at: AppTest, label_start: str) -> str:
    found = [m.value for m in at.metric if m.label.startswith(label_start)]
    assert found, f"no metric starting with {label_start!r}: {[m.label for m in at.metric]}"
    return found[0]


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


# ------------------------------------------------------------------------------------------ home

def test_home_load_sample_is_one_click_and_idempotent(app_env):
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert "No dataset yet" in texts(at.info)
    at.button[0].click().run()
    assert "Sample dataset 'sample_summeval' is in the store (3 contexts, 15 candidates)" in texts(at.success)
    at.button[0].click().run()  # a second click must not duplicate it
    infos = Store(app_env).list_datasets()
    assert [(d.name, d.n_contexts, d.n_candidates) for d in infos] == [("sample_summeval", 3, 15)]
    assert at.dataframe[0].value["name"].tolist() == ["sample_summeval"]


# ---------------------------------------------------------------------------------------- upload

def test_upload_good_file_saves_once(app_env):
    at = open_page("upload")
    at.file_uploader[0].upload("sample.csv", SAMPLE.read_bytes(), "text/csv").run()
    assert not at.exception, at.exception
    # canonical names are pre-selected from the header
    assert {s.label: s.value for s in at.selectbox if s.label in ("context_id", "text", "system")} == \
        {"context_id": "context_id", "text": "text", "system": "system"}
    assert "No problem found: 3 contexts, 15 candidates, reference scores: `coherence`, " \
           "`consistency`, `fluency`, `relevance`" in texts(at.success)
    save = [b for b in at.button if b.label == "Save to the store"][0]
    save.click().run()
    assert "Saved as dataset `sample`" in texts(at.success)
    save = [b for b in at.button if b.label == "Save to the store"][0]
    save.click().run()
    assert "already in the store as dataset `sample`" in texts(at.info)
    assert len(Store(app_env).list_datasets()) == 1


def test_upload_bad_file_lists_every_problem_and_saves_nothing(app_env):
    bad = ("context_id,context,candidate_id,text,coherence\n"
           "c1,doc one,a,first summary,3\n"
           "c1,doc one,a,duplicate id,4\n"        # row 3: duplicate candidate id in c1
           "c1,doc one,b,,2\n"                     # row 4: empty text
           "c2,doc two,x,only one,high\n")        # row 5: non-numeric score; c2 has one candidate
    at = open_page("upload")
    at.file_uploader[0].upload("bad.csv", bad.encode(), "text/csv").run()
    assert not at.exception, at.exception
    assert any("problem(s) found in `bad.csv`; nothing was saved" in e.value for e in at.error)
    report = at.dataframe[-1].value
    assert set(report.columns) == {"file", "row", "column", "problem", "cause"}
    rows = set(report["row"].dropna().astype(int))
    assert {3, 4, 5} <= rows, report
    assert "text" in set(report["column"].dropna())
    assert not [b for b in at.button if b.label == "Save to the store"]
    assert Store(app_env).list_datasets() == []


def test_upload_unreadable_file_is_reported(app_env):
    at = open_page("upload")
    at.file_uploader[0].upload("data.csv", b"PK\x03\x04 zipped bytes", "text/csv").run()
    assert not at.exception, at.exception
    assert any("nothing was saved" in e.value for e in at.error)
    assert "zip" in " ".join(at.dataframe[-1].value["problem"]).lower()
    assert Store(app_env).list_datasets() == []


# -------------------------------------------------------------------------------------- rankings

def test_rankings_tau_control_balances_p_a_and_ranks_by_coherence(app_env):
    store, dataset_id, _ = seed_run(app_env)
    at = open_page("rankings")
    at.radio(key="tau_mode_w").set_value("off").run()
    assert metric(at, "P(A) at tau = 0.500") == "1.00"
    assert metric(at, "tau*") == f"{TAU_STAR:.3f}"

    at.radio(key="tau_mode_w").set_value("balanced").run()
    assert metric(at, "P(A) at tau") == "0.50"
    assert metric(at, "P(B)") == "0.50"
    table = at.dataframe[-1].value
    dataset = store.load_dataset(dataset_id)
    for ctx in dataset.contexts:
        by_coherence = sorted(ctx.candidates, key=lambda c: -c.scores["coherence"])
        got = table[table["context_id"] == ctx.context_id].sort_values("rank")["candidate_id"].tolist()
        assert got == [c.candidate_id for c in by_coherence]
    agreement = at.dataframe[0].value.set_index("metric")
    assert agreement.loc["Spearman x100, mean over contexts"].iloc[1] == "100.0"
    assert agreement.loc["Pairwise accuracy (pairs whose reference scores differ)"].iloc[1] == "1.000"

    # the manual slider: at tau* it reads 0.50 too; below 0.55 every first position wins again
    at.radio(key="tau_mode_w").set_value("manual").run()
    at.slider(key="tau_manual_w").set_value(0.725).run()
    assert metric(at, "P(A) at tau = 0.725") == "0.50"
    at.slider(key="tau_manual_w").set_value(0.54).run()
    assert metric(at, "P(A) at tau = 0.540") == "1.00"
    at.slider(key="tau_manual_w").set_value(0.95).run()
    assert metric(at, "P(A) at tau = 0.950") == "0.00"


def test_rankings_context_filter_and_method_switch(app_env):
    seed_run(app_env)
    at = open_page("rankings")
    at.selectbox(key="rank_context").set_value("A1").run()
    table = at.dataframe[-1].value
    assert set(table["context_id"]) == {"A1"} and len(table) == 5
    at.selectbox(key="method_w").set_value("bradley-terry").run()
    assert not at.exception, at.exception
    assert "bradley-terry" in texts(at.caption)


def test_result_pages_without_a_run_guide_the_newcomer(app_env):
    for page in ("rankings", "matrix", "bias", "export"):
        at = open_page(page)
        assert "No run with stored comparisons yet" in texts(at.info), page


def test_refresh_keeps_the_selected_run_through_query_params(app_env):
    _, _, first = seed_run(app_env, run="first-run")
    seed_run(app_env, run="second-run")
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["run"] = str(first)
    at.run()
    at.switch_page("pages/rankings.py").run()
    assert [s for s in at.selectbox if s.label == "Run"][0].value == first


# ---------------------------------------------------------------------------------------- matrix

def test_matrix_opens_a_comparison_with_both_orders_and_flip_flag(app_env):
    store, dataset_id, run_id = seed_run(app_env)
    dataset = store.load_dataset(dataset_id)
    ctx = dataset.contexts[0]
    best, worst = (max(ctx.candidates, key=lambda c: c.scores["coherence"]),
                   min(ctx.candidates, key=lambda c: c.scores["coherence"]))
    at = open_page("matrix")
    at.radio(key="tau_mode_w").set_value("off").run()
    assert len(at.get("plotly_chart")) == 1
    at.selectbox(key="pick_first").set_value(worst.candidate_id).run()
    at.selectbox(key="pick_second").set_value(best.candidate_id).run()
    at.button(key="open_pick").click().run()
    assert not at.exception, at.exception
    assert metric(at, f"p(`{worst.candidate_id}` first beats `{best.candidate_id}`)") == "0.550"
    assert metric(at, f"p(`{best.candidate_id}` first beats `{worst.candidate_id}`)") == "0.900"
    assert metric(at, "Label mass, this order") == "0.600"
    assert any("FLIPS with the order at tau = 0.500" in e.value for e in at.error)
    shown = texts(at.text)
    assert worst.text in shown and best.text in shown
    prompt = texts(at.code)
    assert f"Summary A: {worst.text}" in prompt and f"Summary B: {best.text}" in prompt
    assert "Answer: Summary" in prompt

    at.radio(key="tau_mode_w").set_value("balanced").run()
    assert any(f"`{best.candidate_id}` wins in both orders" in s.value for s in at.success)


def test_matrix_views_switch_without_error(app_env):
    seed_run(app_env)
    at = open_page("matrix")
    for mode in ("decision", "consistency", "p"):
        at.radio(key="matrix_mode").set_value(mode).run()
        assert not at.exception, (mode, at.exception)


# ------------------------------------------------------------------------------------------ bias

def test_bias_page_gauges_flip_rate_and_order_dependence(app_env):
    seed_run(app_env)
    at = open_page("bias")
    at.radio(key="tau_mode_w").set_value("off").run()
    assert len(at.get("plotly_chart")) == 7  # 4 gauges, histogram, P(A) per context, length
    assert metric(at, "P(A) raw") == "1.00"
    assert metric(at, "Flip rate") == "100.0%"
    assert [m.help for m in at.metric if m.label == "Flip rate"][0].startswith("At tau = 0.500")
    at.radio(key="tau_mode_w").set_value("balanced").run()
    assert metric(at, f"P(A) at tau = {TAU_STAR:.3f}") == "0.50"
    assert metric(at, "Flip rate") == "0.0%"
    dep = at.dataframe[-1].value  # the last table: the most order-dependent comparisons
    assert len(dep) == 30  # 3 contexts x 10 unordered pairs, all judged in both orders
    assert np.allclose(dep["inconsistency"], abs(0.9 - (1 - 0.55)))
    at.selectbox(key="dep_pick").set_value(at.selectbox(key="dep_pick").options[0]).run()
    assert not at.exception, at.exception
    assert any(m.label.startswith("p(") for m in at.metric)


# ---------------------------------------------------------------------------------------- export

@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_export_files_reread_with_settings(app_env, monkeypatch, fmt):
    import compassess_core.data.export as export  # the files the API writes (every page's download)
    evil = SAMPLE.read_text(encoding="utf-8").replace(",S3,M14,", ",=1+2,M14,", 1)
    store, _, run_id = seed_run(app_env, source=evil.encode(), name="evil")
    captured: dict[str, tuple[bytes, bytes | None]] = {}
    real = export.table_bytes

    def spy(df, fmt_, *, what, metadata):
        captured[what] = real(df, fmt_, what=what, metadata=metadata)
        return captured[what]
    monkeypatch.setattr(export, "table_bytes", spy)
    at = open_page("export")
    at.radio(key="export_format").set_value(fmt).run()
    assert not at.exception, at.exception
    assert {b.label for b in at.get("download_button")} >= {f"Download rankings.{fmt}",
                                                           f"Download comparisons.{fmt}"}
    data, sidecar = captured["rankings"]
    if fmt == "json":
        payload = json.loads(data)
        assert payload["run"] == "hand-run" and payload["settings"]["aspect"] == "coherence"
        frame = pd.DataFrame(payload["rankings"])
        assert sidecar is None
    else:
        frame = pd.read_csv(io.BytesIO(data)) if fmt == "csv" else pd.read_parquet(io.BytesIO(data))
        meta = json.loads(sidecar)
        assert meta["run"] == "hand-run" and meta["settings"]["template_name"] == "t1-summary"
    assert len(frame) == 15
    ids = set(frame["candidate_id"].astype(str))
    if fmt == "csv":  # a formula cell is neutralised with a leading apostrophe
        assert "'=1+2" in ids and "=1+2" not in ids
    else:
        assert "=1+2" in ids
    comparisons, _ = captured["comparisons"]
    n = (len(json.loads(comparisons)["comparisons"]) if fmt == "json" else
         len(pd.read_csv(io.BytesIO(comparisons)) if fmt == "csv" else pd.read_parquet(io.BytesIO(comparisons))))
    assert n == 60


# ------------------------------------------------------------------------------------------ safety

def test_user_text_stays_inert(app_env):
    evil_text = "<script>alert(1)</script> ![x](http://example.invalid/x.png) **bold**"
    csv = SAMPLE.read_text(encoding="utf-8")
    frame = pd.read_csv(io.StringIO(csv), dtype=str, keep_default_na=False)
    frame.loc[0, "text"] = evil_text
    buf = io.StringIO()
    frame.to_csv(buf, index=False)
    store, dataset_id, _ = seed_run(app_env, source=buf.getvalue().encode(), name="evil")
    cand = store.load_dataset(dataset_id).contexts[0].candidates[0]
    other = store.load_dataset(dataset_id).contexts[0].candidates[1]
    at = open_page("matrix")
    at.selectbox(key="pick_first").set_value(cand.candidate_id).run()
    at.selectbox(key="pick_second").set_value(other.candidate_id).run()
    at.button(key="open_pick").click().run()
    assert evil_text in texts(at.text)  # shown verbatim as plain text
    for md in at.markdown:
        assert "<script>" not in md.value and "](http" not in md.value
    for el in at.get("html"):
        raise AssertionError(f"unexpected st.html element: {el}")


# --------------------------------------------------------------------------------------------- run

def test_run_page_preview_and_template_validation(app_env):
    seed_run(app_env)
    at = open_page("run")
    preview = texts(at.code)
    assert "Passage:\n" in preview and "Which Summary is more coherent relative to the passage" in preview
    at.radio(key="template_choice_1").set_value("own").run()
    at.text_area(key="own_template_1").set_value("Compare {a} with {b} on {quality}").run()
    assert any("unknown placeholder {quality}" in e.value for e in at.error)
    at.text_area(key="own_template_1").set_value("{context}\nX: {a}\nY: {b}\nWhich is more {aspect}?").run()
    assert "Which is more coherent?" in texts(at.code)


def test_run_page_offers_resume_for_a_silent_worker(app_env, monkeypatch):
    from compassess_core.runs import run_loop
    store, _, run_id = seed_run(app_env)
    store.set_run_status(run_id, "running", done=10, total=60)
    monkeypatch.setattr(run_loop, "STALE_AFTER_S", -1.0)  # any heartbeat counts as old
    at = open_page("run")
    assert "worker stopped responding" in texts(at.markdown)
    assert [b for b in at.button if b.label == "Resume"]
    # the run picker says so too, not the stored "running"
    assert any("[worker stopped responding]" in o for sb in at.selectbox for o in sb.options)


def test_run_page_shows_cancel_for_a_live_worker(app_env):
    store, _, run_id = seed_run(app_env)
    store.set_run_status(run_id, "running", done=10, total=60)
    at = open_page("run")
    assert "Status: running" in texts(at.markdown)
    cancel = [b for b in at.button if b.label == "Cancel"]
    assert cancel
    cancel[0].click().run()
    assert store.get_run(run_id).cancel_requested


def test_run_page_builds_a_served_judge_spec(app_env, monkeypatch):
    # Served judges are chosen among the servers configured for the app (no URL can be typed).
    monkeypatch.setenv("COMPASSESS_OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    seed_run(app_env)
    at = open_page("run")
    at.radio[[r.label for r in at.radio].index("Model")].set_value("served (OpenAI-compatible API)").run()
    assert at.selectbox(key="served_url_1").options == ["http://127.0.0.1:8000/v1"]  # no key: none bound
    assert not [t for t in at.text_input if "URL" in t.label]
    at.text_input(key="served_name_1").set_value("qwen2.5-7b-instruct").run()
    name = [t for t in at.text_input if t.label == "Run name"][0].value
    assert "qwen2.5-7b-instruct" in name
    at.radio(key="served_endpoint_1").set_value("completions (exact primer, needs logprobs)").run()
    assert not at.exception


def test_run_page_warns_about_a_budget_below_one_comparison_per_candidate(app_env):
    seed_run(app_env)                    # the sample: 5 candidates per context
    at = open_page("run")
    at.selectbox(key="strategy_1").set_value("poe").run()
    at.number_input(key="budget_1").set_value(4).run()
    assert not at.exception
    assert "A budget of 4 is below one comparison per candidate (5 in the largest context)" in texts(at.warning)
    at.number_input(key="budget_1").set_value(10).run()
    assert "below one comparison per candidate" not in texts(at.warning)


def test_a_long_name_in_a_sidebar_picker_is_written_out_below_it(app_env):
    """A select box shows its choice on one cut line: a run or a dataset named with 60
    characters is written out in full below its sidebar box (where it wraps), a short one is
    not repeated; the box still offers the objects by id."""
    long_data = "topicalchat-usr-engagingness-heldout-sample-2024-11-27-v2"
    long_run = "tc-engagingness-t1-smollm2-135m-instruct-bf16-sweep-7"
    _, dataset_id, run_id = seed_run(app_env, name=long_data, run=long_run)
    at = open_page("rankings")
    below = [c.value for c in at.sidebar.caption]
    assert any(long_run in c and "completed" in c for c in below), below
    assert at.sidebar.selectbox(key="run_pick_w").value == run_id   # keyed and valued by id
    at.switch_page("pages/panel.py").run()
    assert not at.exception, at.exception
    assert any(long_data in c.value for c in at.sidebar.caption), [c.value for c in at.sidebar.caption]
    seed_run(app_env, name="short", run="r2")
    at = open_page("rankings")
    at.sidebar.selectbox(key="run_pick_w").set_value(
        next(r.id for r in Store(app_env).list_runs() if r.name == "r2")).run()
    assert not [c.value for c in at.sidebar.caption if "r2 [" in c.value]

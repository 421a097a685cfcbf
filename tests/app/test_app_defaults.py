"""The result pages' shared controls and defaults, on a real store with the hand-made run of
``test_app_pages.seed_run`` (P(A) = 1.00 at tau = 0.5, tau* = 0.725):

* defaults chosen from docs/results.md (Bradley-Terry, the balanced tau*) and the reason shown;
* a plain warning, with its numbers and a one-click remedy, when the judge answers by position;
* tau kept across every result page and a refresh (URL); manual starts from the tau in use;
* the reference column defaults to the run's aspect; exports carry the intervals the page shows.
"""

from __future__ import annotations

import io

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from compassess_core.data.candidates import load_candidates
from db.store import Store
from tests.app.test_app_pages import (APP, SAMPLE, TAU_STAR, app_env, metric, open_page,  # noqa: F401
                            seed_run, settings_for, texts)

RESULT_PAGES = ("rankings", "leaderboard", "matrix", "bias", "compare", "agreement", "export")


def tau_widgets(at: AppTest) -> tuple[str, float]:
    return at.radio(key="tau_mode_w").value, at.slider(key="tau_manual_w").value


def test_defaults_are_bradley_terry_at_the_balanced_tau_and_say_why(app_env):
    seed_run(app_env)
    at = open_page("rankings")
    assert at.selectbox(key="method_w").value == "bradley-terry"
    assert at.radio(key="tau_mode_w").value == "balanced"
    assert metric(at, f"P(A) at tau = {TAU_STAR:.3f}") == "0.50"
    assert "8 of 8 TopicalChat cells" in at.radio(key="tau_mode_w").help
    # the sample's 15 summaries no longer tie at rank 1: the balanced verdicts rank by coherence
    agreement = at.dataframe[0].value.set_index("metric")
    assert agreement.loc["Spearman x100, mean over contexts"].iloc[1] == "100.0"


def test_a_position_judge_gets_a_warning_with_numbers_and_a_one_click_remedy(app_env):
    seed_run(app_env)
    at = open_page("rankings")
    at.radio(key="tau_mode_w").set_value("off").run()
    warning = texts(at.warning)
    assert "At tau = 0.5 this judge answers by position, not content: the first (A) text wins " \
           "100% of 60 comparisons." in warning
    assert "flips with the order in 100% of 30 pairs" in warning
    remedy = at.button(key=f"remedy_{Store(app_env).get_run('hand-run').id}")
    remedy.click().run()
    assert at.radio(key="tau_mode_w").value == "balanced"
    assert metric(at, f"P(A) at tau = {TAU_STAR:.3f}") == "0.50"
    # once balanced the warning describes the debiased verdicts and offers no button
    assert "At the threshold in use (tau = 0.725) P(A) = 0.50" in texts(at.warning)
    assert not [b for b in at.button if (b.key or "").startswith("remedy_")]


@pytest.mark.parametrize("page", RESULT_PAGES)
def test_every_result_page_warns_about_the_position_judge(app_env, page):
    seed_run(app_env, run="first")
    seed_run(app_env, run="second")
    at = open_page(page)
    assert not at.exception, at.exception
    assert "answers by position, not content" in texts(at.warning), page


def test_manual_tau_survives_every_page_and_a_refresh(app_env):
    seed_run(app_env, run="first")
    seed_run(app_env, run="second")
    at = open_page("rankings")
    at.radio(key="tau_mode_w").set_value("manual").run()
    at.slider(key="tau_manual_w").set_value(0.62).run()
    for page in ("matrix", "bias", "leaderboard", "compare", "agreement", "export", "annotate",
                 "rankings"):
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        if page == "annotate":
            continue  # no tau control there; it must not reset the others
        assert tau_widgets(at) == ("manual", 0.62), page
    assert metric(at, "P(A) at tau = 0.620") == "0.50"
    # a refresh: a new session with the same URL
    params = {k: at.query_params[k] for k in ("tau_mode", "tau", "run")}
    fresh = AppTest.from_file(APP, default_timeout=60)
    for k, v in params.items():
        fresh.query_params[k] = v[0] if isinstance(v, list) else v
    fresh.run()
    fresh.switch_page("pages/bias.py").run()
    assert tau_widgets(fresh) == ("manual", 0.62)


def test_manual_starts_from_the_tau_in_use(app_env):
    seed_run(app_env)
    at = open_page("bias")
    assert at.radio(key="tau_mode_w").value == "balanced"
    at.radio(key="tau_mode_w").set_value("manual").run()
    assert at.slider(key="tau_manual_w").value == pytest.approx(round(TAU_STAR, 3))
    assert metric(at, f"P(A) at tau = {TAU_STAR:.3f}") == "0.50"
    at.radio(key="tau_mode_w").set_value("off").run()
    at.radio(key="tau_mode_w").set_value("manual").run()
    assert at.slider(key="tau_manual_w").value == pytest.approx(0.5)


def test_the_method_survives_page_switches(app_env):
    seed_run(app_env)
    at = open_page("rankings")
    at.selectbox(key="method_w").set_value("poe").run()
    for page in ("bias", "matrix", "leaderboard", "rankings"):
        at.switch_page(f"pages/{page}.py").run()
        assert at.selectbox(key="method_w").value == "poe", page


def test_reference_column_defaults_to_the_runs_aspect(app_env):
    store = Store(app_env)
    dataset_id = store.save_dataset(load_candidates(SAMPLE, name="sample_summeval"))
    _, _, coherence_run = seed_run(app_env, run="coherence-run")
    relevance = settings_for("sample_summeval").with_changes(aspect="relevance",
                                                             aspect_adjective="relevant")
    run_id = store.create_run("relevance-run", dataset_id, relevance.to_dict())
    store.add_results(run_id, "comparative", [
        r for r in _results_of(store, coherence_run)])
    store.set_run_status(run_id, "completed", done=60, total=60)
    at = open_page("rankings")
    at.selectbox(key="run_pick_w").set_value(run_id).run()
    assert "Agreement with `relevance`" in texts(at.subheader)
    at.switch_page("pages/leaderboard.py").run()
    assert any(s.value == "relevance" for s in at.selectbox if s.label == "Reference score column")


def _results_of(store: Store, run_id: int):
    from compassess_core.types import ComparisonResult, Judgement, PairKey
    t = store.comparison_table(run_id)
    for c, a, b, p in zip(t.context_ids, t.a_ids, t.b_ids, t.p):
        yield ComparisonResult(PairKey(c, a, b), Judgement(float(p), -1.0, -1.0, 0.6), f"r-{c}-{a}-{b}")


def test_exported_rankings_carry_the_intervals_the_page_shows(app_env, monkeypatch):
    import compassess_core.data.export as export  # the files the API writes (every page's download)
    seed_run(app_env)
    captured = {}
    real = export.table_bytes

    def spy(df, fmt, *, what, metadata):
        captured[what] = (df.copy(), metadata)
        return real(df, fmt, what=what, metadata=metadata)
    monkeypatch.setattr(export, "table_bytes", spy)
    at = open_page("rankings")
    shown = at.dataframe[-1].value
    assert shown["ci_low"].notna().all()          # the page shows intervals (60 comparisons)
    at.switch_page("pages/export.py").run()
    frame, metadata = captured["rankings"]
    assert frame["ci_low"].notna().all() and frame["ci_high"].notna().all()
    assert "percentile bootstrap" in metadata["ci"]
    merged = frame.merge(shown, on=["context_id", "candidate_id"], suffixes=("", "_shown"))
    pd.testing.assert_series_equal(merged["ci_low"], merged["ci_low_shown"], check_names=False)
    data = real(frame, "csv", what="rankings", metadata=metadata)[0]
    back = pd.read_csv(io.BytesIO(data))
    assert back["ci_high"].notna().all()
    # the CSV alone, read without its sidecar, says how it was ranked: method and tau per row
    assert (back["method"] == metadata["method"]).all() and back["tau"].notna().all()


def test_partial_runs_are_labelled_wherever_their_numbers_appear(app_env):
    store, _, run_id = seed_run(app_env)
    store.set_run_status(run_id, "cancelled", done=60, total=90)
    for page in ("rankings", "leaderboard", "matrix", "bias", "agreement", "export"):
        at = open_page(page)
        assert "Partial run (cancelled): 60 of 90 planned comparisons (67%)" in texts(at.warning), page
    picker = at.selectbox(key="run_pick_w")
    assert "of 90 planned, partial" in picker.format_func(picker.value)


# ------------------------------------------------------------------ defaults from the data

def _copy_run(store: Store, run_id: int, name: str, **changes) -> int:
    """Another run on the same dataset with the comparisons of ``run_id`` and ``changes`` to
    its settings (another aspect, another template)."""
    from compassess_core.runs.settings import RunSettings
    info = store.get_run(run_id)
    settings = RunSettings.from_dict(info.settings).with_changes(**changes)
    new = store.create_run(name, info.dataset_id, settings.to_dict())
    store.add_results(new, "comparative", store.stored_results(run_id, "comparative").values())
    store.set_run_status(new, "completed", done=60, total=60)
    return new


def test_pages_start_at_the_aspect_the_data_has_labels_of_and_the_dataset_of_the_run(app_env):
    """Labels of 'overall' only: Judges opens on overall (not the newest run's coherence), the
    Run page and Annotate start at it; Panel and Judges open on the dataset of the run in view
    (not the newest dataset); Panel's member picker offers the runs of one aspect."""
    from compassess_core import api
    store, dataset_id, run_id = seed_run(app_env)
    overall = _copy_run(store, run_id, "overall-run", aspect="overall", aspect_adjective="good")
    _copy_run(store, run_id, "coherence-t2", template_name="t2")
    d = store.load_dataset(dataset_id)
    store.add_human_judgements(dataset_id, [
        dict(context_id=c.context_id, candidate_left=c.candidate_ids[0],
             candidate_right=c.candidate_ids[k], winner="A", annotator="ann", aspect="overall")
        for c in d.contexts for k in (1, 2, 3, 4)])
    api.open_store(app_env).add_dataset(
        "context_id,context,candidate_id,text\nc1,ctx,a,one\nc1,ctx,b,two\n".encode(), name="newer")
    assert [a.aspect for a in api.open_store(app_env).aspects(dataset_id)][:2] == ["overall",
                                                                                 "coherence"]

    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["run"] = str(overall)   # a link naming a run only
    at.run()
    at.switch_page("pages/judge_leaderboard.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="dataset_pick_w").value == dataset_id
    assert at.selectbox(key="judges_aspect").value == "overall"
    assert "has neither human labels" not in texts(at.info)
    at.switch_page("pages/panel.py").run()
    assert at.selectbox(key="dataset_pick_w").value == dataset_id
    form = f"panel_new_{dataset_id}"
    at.selectbox(key=f"{form}_aspect").set_value("coherence").run()
    offered = at.multiselect(key=f"{form}_members").options
    assert sorted(offered) == ["coherence-t2", "hand-run"]   # not the overall run
    # a result page showing a run makes its dataset the one in view
    fresh = AppTest.from_file(APP, default_timeout=60).run()
    fresh.switch_page("pages/annotate.py").run()
    assert fresh.selectbox(key="dataset_pick_w").value != dataset_id   # the newest dataset
    fresh.switch_page("pages/rankings.py").run()
    fresh.switch_page("pages/judge_leaderboard.py").run()
    assert fresh.selectbox(key="dataset_pick_w").value == dataset_id
    # a dataset with labels of overall starts the Run page and Annotate at overall
    at.switch_page("pages/run.py").run()
    assert at.selectbox(key=f"run_aspect_{dataset_id}").value == "overall"
    blank = AppTest.from_file(APP, default_timeout=60)
    blank.query_params["dataset"] = str(dataset_id)
    blank.run()
    blank.switch_page("pages/annotate.py").run()
    assert blank.selectbox(key=f"aspect_w_{dataset_id}").value == "overall"

"""AppTest tests of what human labels do beyond agreement, on a real SQLite store: calibration on
the Agreement page, calibrated probabilities and the fused ranking on Rankings, and the Annotate
mode that asks for the most informative pair.

The run is ``test_app_pages.seed_run``'s hand-made judge on the bundled sample (p = 0.9 with the
more coherent summary first, 0.55 with it second: biased towards the first position, right in
both orders once the bias is removed); the labels are ``test_calibration.label_sample``'s (people
prefer the more coherent summary of every one of the 30 pairs).
"""

from __future__ import annotations

import math

import pytest
from streamlit.testing.v1 import AppTest

from compassess_core.stats import calibration, fusion
from compassess_core.stats.bias import balanced_threshold
from tests.app.test_app_annotate import annotate_page
from tests.app.test_app_pages import APP, app_env, metric, seed_run, texts  # noqa: F401
from tests.stats.test_calibration import label_sample


def page(name: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90).run()
    at.switch_page(f"pages/{name}.py").run()
    assert not at.exception, at.exception
    return at


def test_agreement_page_shows_the_cross_validated_calibration(app_env):
    store, dataset_id, run_id = seed_run(app_env)
    label_sample(store, dataset_id)
    at = page("agreement")
    report = calibration.calibrate(store.comparison_table(run_id),
                                   store.human_judgements_frame(dataset_id, "coherence"))
    assert metric(at, "Bias b (log-odds)") == f"{report.calibration.bias:.3f}"
    assert metric(at, "Temperature T") == f"{report.calibration.temperature:.3f}"
    assert metric(at, "Held-out accuracy per comparison") == "100.0 %"
    table = next(d.value for d in at.dataframe if "measure" in d.value.columns).set_index("measure")
    acc = table.loc["accuracy per comparison (p > 0.5)"]
    assert acc.iloc[0] == "0.500" and acc.iloc[2] == "1.000"  # raw, then calibrated held out
    assert table.loc["log-loss per comparison (nats; 0.693 = a coin)"].iloc[2] == \
        f"{report.calibrated.log_loss:.3f}"
    assert "Reliability diagram" in texts(at.caption)


def test_rankings_use_calibrated_p_and_fuse_the_labels(app_env):
    store, dataset_id, run_id = seed_run(app_env)
    at = page("rankings")
    # without labels: no probability choice, and a pointer to Annotate
    assert not [r for r in at.sidebar.radio if r.label == "Judge probabilities"]
    assert "No human labels of `coherence`" in texts(at.info)

    label_sample(store, dataset_id)
    at = page("rankings")
    at.radio(key="tau_mode_w").set_value("off").run()  # the page opens at the balanced tau*
    assert metric(at, "P(A) at tau = 0.500") == "1.00"
    at.sidebar.radio(key="probability_source").set_value("calibrated on human labels").run()
    assert not at.exception, at.exception
    # calibrated p has no positional bias left: P(A) = 0.50 at tau = 0.5, and the ranking follows
    # the coherence order (Spearman 100 against it)
    assert metric(at, "P(A) at tau = 0.500") == "0.50"
    agreement = at.dataframe[0].value.set_index("metric")
    assert agreement.loc["Spearman x100, mean over contexts"].iloc[0] == "100.0"
    cal = calibration.fit_on_labels(store.comparison_table(run_id),
                                    store.human_judgements_frame(dataset_id, "coherence"))
    assert f"bias {cal.bias:.3f} log-odds" in texts(at.sidebar.caption)
    # 'balanced' on calibrated p is the median of the calibrated p
    at.radio(key="tau_mode_w").set_value("balanced").run()
    tau_cal = balanced_threshold(cal.apply(store.comparison_table(run_id).p))
    assert metric(at, f"P(A) at tau = {tau_cal:.3f}") == "0.50"
    at.radio(key="tau_mode_w").set_value("off").run()

    # the fused ranking: the weight cross-validated over the 30 votes, 100 against coherence
    fused = fusion.fused_rankings(store.load_dataset(dataset_id),
                                  calibration.calibrated_table(store.comparison_table(run_id), cal),
                                  store.human_judgements_frame(dataset_id, "coherence"), tau=0.5)
    w = fused.choice.weight
    assert metric(at, "One vote counts as") == ("humans only" if math.isinf(w) else f"{w:g}")
    assert metric(at, "Spearman x100 vs `coherence`") == "100.0"
    table = next(d.value for d in at.dataframe if "n_votes" in d.value.columns)
    assert table["score"].tolist() == pytest.approx(fused.by_rank()["score"].tolist())
    at.radio(key="fusion_weight_mode").set_value("humans only").run()
    assert metric(at, "One vote counts as") == "humans only"
    at.radio(key="fusion_level").set_value("system").run()
    assert not at.exception, at.exception
    systems = next(d.value for d in at.dataframe if "n_votes" in d.value.columns)
    assert set(systems["system"]) == {c.system for ctx in store.load_dataset(dataset_id).contexts
                                      for c in ctx.candidates}


def test_annotate_informative_mode_shows_a_most_informative_pair(app_env):
    store, dataset_id, run_id = seed_run(app_env)
    dataset = store.load_dataset(dataset_id)
    at = annotate_page(annotator="alice")
    at.sidebar.radio(key="annotate_mode").set_value("informative").run()
    assert not at.exception, at.exception
    shown = at.session_state["annotate_current"]
    human = store.human_judgements_frame(dataset_id, shown["scope"][1])
    run = store.get_run(run_id)
    tau = balanced_threshold(store.comparison_table(run.id).p)
    value = fusion.informative_pairs(dataset, store.comparison_table(run_id), human, tau=tau)
    pair = tuple(sorted((shown["left"], shown["right"])))
    got = value[(value["context_id"] == shown["context_id"]) & (value["x"] == pair[0])
                & (value["y"] == pair[1])]["value"].item()
    assert got == pytest.approx(value["value"].max())


def test_export_page_writes_calibrated_files_with_the_calibration(app_env, monkeypatch):
    import json

    import compassess_core.data.export as export  # the files the API writes (every page's download)
    store, dataset_id, run_id = seed_run(app_env)
    label_sample(store, dataset_id)
    captured = {}
    real = export.table_bytes

    def spy(df, fmt_, *, what, metadata):
        captured[what] = (df.copy(), real(df, fmt_, what=what, metadata=metadata))
        return captured[what][1]
    monkeypatch.setattr(export, "table_bytes", spy)
    at = page("export")
    at.sidebar.radio(key="probability_source").set_value("calibrated on human labels").run()
    assert not at.exception, at.exception
    cal = calibration.fit_on_labels(store.comparison_table(run_id),
                                    store.human_judgements_frame(dataset_id, "coherence"))
    frame, (_, sidecar) = captured["comparisons"]
    assert frame["p_calibrated"].tolist() == pytest.approx(cal.apply(frame["p"]).tolist())
    meta = json.loads(sidecar)
    assert meta["calibration"]["bias"] == pytest.approx(cal.bias)
    assert meta["calibration"]["formula"].startswith("p_cal = sigmoid")
    rankings, _ = captured["rankings"]
    assert len(rankings) == 15

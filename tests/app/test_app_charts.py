"""The charts of the result pages say what they show: distinct bars for the raw and current LLM
position shares on Agreement, threshold labels on the Bias histogram that never sit on each other,
and two colours with a two-entry legend for the yes/no decision matrix. Checked on the figures the
pages send to the browser (AppTest, a real store, the hand-made run of ``seed_run``)."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from tests.app.test_app_agreement import agreement_page, label_first_article
from tests.app.test_app_pages import app_env, open_page, seed_run  # noqa: F401


def figure(at, key: str) -> dict:
    chart = next(c for c in at.get("plotly_chart") if c.key == key)
    return json.loads(chart.proto.spec)


def values(data) -> list:
    """A trace's data as a list; plotly sends numpy arrays as base64 typed arrays."""
    if isinstance(data, dict) and "bdata" in data:
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"])).tolist()
    return list(data)


@pytest.mark.parametrize("tau_mode", ["off", "balanced"])
def test_agreement_llm_bars_have_their_own_labels_and_stay_below_one(app_env, tau_mode):
    store, dataset_id, _ = seed_run(app_env)
    label_first_article(store, dataset_id)
    at = agreement_page(tau_mode)
    bars = figure(at, "bias_chart")["data"][0]
    x, y = values(bars["x"]), values(bars["y"])
    assert len(set(x)) == 3, x                           # humans, LLM raw, LLM at current tau
    assert max(y) <= 1.0 and bars.get("type", "bar") == "bar"
    assert "LLM raw (tau = 0.5)" in x


@pytest.mark.parametrize("tau_mode", ["off", "balanced", "manual"])
def test_bias_histogram_labels_never_overlap(app_env, tau_mode):
    seed_run(app_env)
    at = open_page("bias")
    at.radio(key="tau_mode_w").set_value(tau_mode).run()
    if tau_mode == "manual":
        at.slider(key="tau_manual_w").set_value(0.51).run()   # 0.01 from the 0.5 line
    notes = figure(at, "hist")["layout"]["annotations"]
    texts = " | ".join(a["text"] for a in notes)
    for name in ("0.5", "tau*", "current tau"):
        assert name in texts, texts
    # every label above the bars (over the plot area), each on a row of its own
    assert all(a["y"] == 1.0 and a["yref"] == "paper" and a["yanchor"] == "bottom" for a in notes)
    rows = [a["yshift"] for a in notes]
    assert len(set(rows)) == len(rows), notes
    layout = figure(at, "hist")["layout"]
    assert layout["margin"]["t"] >= max(rows) + 14   # the top row fits above the plot
    if tau_mode == "off":
        assert any(a["text"] == "0.5 = current tau" for a in notes)


def test_decision_matrix_has_two_colours_and_a_two_entry_legend(app_env):
    seed_run(app_env)
    at = open_page("matrix")
    at.radio(key="matrix_mode").set_value("decision").run()
    heat = figure(at, "matrix_chart")["data"][0]
    colours = {c for _, c in heat["colorscale"]}
    assert len(colours) == 2
    assert heat["colorbar"]["ticktext"] == ["second (B) wins", "first (A) wins"]
    at.radio(key="matrix_mode").set_value("p").run()
    assert "ticktext" not in figure(at, "matrix_chart")["data"][0]["colorbar"]


def test_matrix_colours_span_the_contexts_values_around_the_threshold(app_env):
    """Every p of the hand-made run is 0.55 or 0.9 and tau* = 0.725: the colour scale runs from
    0.55 to 0.9 with white at tau*, not from 0 to 1 around 0.5 (an almost pale heatmap)."""
    seed_run(app_env)
    at = open_page("matrix")
    heat = figure(at, "matrix_chart")["data"][0]
    assert (heat["zmin"], heat["zmid"], heat["zmax"]) == pytest.approx((0.55, 0.725, 0.9))
    at.radio(key="matrix_mode").set_value("consistency").run()
    heat = figure(at, "matrix_chart")["data"][0]
    assert heat["zmid"] == pytest.approx(0.0) and heat["zmax"] == pytest.approx(-heat["zmin"])
    assert heat["zmax"] < 1.0

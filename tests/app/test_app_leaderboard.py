"""AppTest tests of the Leaderboard page on a real SQLite store, with the hand-made run of
``test_app_pages.seed_run`` (p = 0.9 when the first summary is the more coherent, 0.55 otherwise:
at the balancing tau* = 0.725 every verdict follows coherence)."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from compassess_core.stats.leaderboard import leaderboard
from db.store import Store
from tests.app.test_app_pages import SAMPLE, app_env, metric, open_page, seed_run, texts  # noqa: F401


def board_table(at) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if "p_best" in d.value.columns)


def test_one_row_per_system_with_intervals_equal_to_the_engine(app_env):
    store, dataset_id, run_id = seed_run(app_env)
    at = open_page("leaderboard")
    assert not at.exception, at.exception
    table = board_table(at)
    engine = leaderboard(store.load_dataset(dataset_id), store.comparison_table(run_id),
                         method="bradley-terry", tau=0.725, reference="coherence", n_boot=200)
    assert list(table["system"]) == list(engine.frame["system"])
    pd.testing.assert_series_equal(table["strength_ci_low"], engine.frame["strength_ci_low"],
                                   check_names=False)
    assert table["strength_ci_high"].notna().all() and table["win_rate_ci_low"].notna().all()
    # the default method and tau are Bradley-Terry at the balanced tau*, and the page says so
    assert "method bradley-terry at tau = 0.725" in texts(at.caption)
    assert metric(at, "Systems") == "9"
    assert metric(at, "Spearman x100") == f"{engine.system_spearman_x100:.1f}"
    assert "`coherence` score" in next(m.help for m in at.metric if m.label == "Spearman x100")
    assert "mean_reference" in table.columns
    charts = [c.key for c in at.get("plotly_chart")]
    assert "board_heatmap" in charts
    # the judge of this run answers by position at tau = 0.5: the page says so
    assert "answers by position, not content" in texts(at.warning)


def test_export_carries_the_table_and_the_runs_settings(app_env, monkeypatch):
    import compassess_core.data.export as export  # the files the API writes (every page's download)
    seed_run(app_env)
    captured = {}
    real = export.table_bytes

    def spy(df, fmt, *, what, metadata):
        captured[what, fmt] = real(df, fmt, what=what, metadata=metadata)
        return captured[what, fmt]
    monkeypatch.setattr(export, "table_bytes", spy)  # the page imports it afresh on every run
    at = open_page("leaderboard")
    at.radio(key="board_format").set_value("json").run()
    payload = json.loads(next(v for (what, fmt), (v, _) in captured.items()
                              if what == "leaderboard" and fmt == "json"))
    assert payload["settings"]["aspect"] == "coherence" and payload["ci_resamples"].startswith("contexts")
    assert len(payload["leaderboard"]) == 9
    at.radio(key="board_format").set_value("csv").run()
    data, sidecar = captured["leaderboard", "csv"]
    assert len(pd.read_csv(io.BytesIO(data))) == 9
    assert json.loads(sidecar)["method"] == "bradley-terry"


def test_a_run_without_systems_points_to_rankings(app_env):
    frame = pd.read_csv(SAMPLE, dtype=str, keep_default_na=False).drop(columns=["system"])
    seed_run(app_env, source=frame.to_csv(index=False).encode(), name="nosys")
    at = open_page("leaderboard")
    assert not at.exception, at.exception
    assert "has no system column" in texts(at.info)
    assert any("Rankings" in str(link.proto.label) for link in at.get("page_link"))


def test_more_bootstrap_replicates_and_another_method(app_env):
    seed_run(app_env)
    at = open_page("leaderboard")
    at.radio(key="board_boot_w").set_value(1000).run()
    assert "1000 bootstrap replicates" in texts(at.caption)
    at.selectbox(key="method_w").set_value("win-ratio").run()
    assert not at.exception, at.exception
    assert "method win-ratio" in texts(at.caption)
    assert "1000" in str(at.query_params["boot"])


@pytest.mark.parametrize("page", ["leaderboard", "compare"])
def test_new_pages_without_a_run_guide_the_newcomer(app_env, page):
    at = open_page(page)
    assert "No run with stored comparisons yet" in texts(at.info)


def test_partial_run_is_labelled(app_env):
    store, _, run_id = seed_run(app_env)
    Store(app_env).set_run_status(run_id, "cancelled", done=60, total=100)
    at = open_page("leaderboard")
    assert "Partial run (cancelled): 60 of 100 planned comparisons (60%)" in texts(at.warning)


def test_with_a_baseline_strength_and_win_rate_stay_first(app_env):
    """The key columns first: with a baseline system the table still starts with rank, system,
    strength and win rate (readable at 1024 px), then the win rate against the baseline; every
    column has a short label with the detail in its help."""
    import json as json_
    seed_run(app_env)
    at = open_page("leaderboard")
    baseline = at.selectbox(key="board_baseline_w")
    baseline.set_value(baseline.options[1]).run()
    assert not at.exception, at.exception
    table = board_table(at)
    assert list(table.columns)[:5] == ["rank", "system", "strength", "win_rate",
                                       "win_rate_vs_baseline"]
    element = next(d for d in at.dataframe if "p_best" in d.value.columns)
    config = json_.loads(element.proto.columns)
    labels = {name: c.get("label") for name, c in config.items()}
    assert max(len(str(label)) for label in labels.values() if label) <= 16, labels
    assert labels["rank"] == "rank" and config["system"].get("pinned") is True
    # the head-to-head's opponent axis is drawn below the plot, clear of plotly's toolbar
    heat = json_.loads(next(c for c in at.get("plotly_chart")
                            if c.proto.id and "board_heatmap" in c.proto.id).proto.spec)
    assert heat["layout"]["xaxis"]["side"] == "bottom"


#: A system name of 60 characters that shares its start with every other one (a sweep of runs).
LONG = "meta-llama/Llama-3.1-70B-Instruct-finetuned-sweep-{}-checkpoint"


def test_the_head_to_head_cuts_long_names_on_the_axes_and_grows_with_the_systems(app_env):
    """Long system names that differ in the middle (a sweep's runs): each axis label is cut to
    the part that tells them apart, with an ellipsis for what they share, and the hover names
    both systems whole; the figure is sized
    from the number of systems and the longest label, not squeezed into a fixed box."""
    import json as json_

    frame = pd.read_csv(SAMPLE)
    frame["system"] = [LONG.format(s) for s in frame["system"]]
    seed_run(app_env, source=frame.to_csv(index=False).encode(), name="long_names")
    at = open_page("leaderboard")
    assert not at.exception, at.exception
    heat = json_.loads(next(c for c in at.get("plotly_chart")
                            if c.proto.id and "board_heatmap" in c.proto.id).proto.spec)
    layout, trace = heat["layout"], heat["data"][0]
    names = sorted(set(frame["system"]))
    shown = layout["xaxis"]["ticktext"]
    assert layout["yaxis"]["ticktext"] == shown and len(shown) == len(names)
    assert max(len(t) for t in shown) <= 22 and len(set(shown)) == len(names), shown
    assert all("sweep-M" in t and t.startswith("\u2026") for t in shown), shown
    hovered = {name for row in trace["customdata"] for pair in row for name in pair}
    assert hovered == set(names)
    assert "%{customdata[0]} beats %{customdata[1]}" in trace["hovertemplate"]
    assert layout["height"] >= 34 * len(names) and layout["margin"]["l"] >= 7 * 22


def test_axis_labels_keep_short_names_and_cut_long_ones_to_what_tells_them_apart():
    from pages._common import axis_labels, square_chart_layout

    assert axis_labels(["M14", "M2"]) == ["M14", "M2"]
    assert axis_labels(["a" * 10 + "b" * 40 + "c" * 10]) == ["a" * 10 + "\u2026b" + "c" * 10]
    two = axis_labels(["gpt-4o-2024-08-06-with-a-long-system-prompt",
                       "claude-3-5-sonnet-20241022-long-variant"])
    assert two == ["gpt-4o-202\u2026stem-prompt", "claude-3-5\u2026ong-variant"]
    sweep = axis_labels([f"{'x' * 30}-{k}-{'y' * 30}" for k in ("A", "B")])
    assert len(set(sweep)) == 2 and all(len(t) <= 22 for t in sweep)
    assert axis_labels(["<b>x</b>"]) == ["&lt;b&gt;x&lt;/b&gt;"]   # plotly reads labels as HTML
    small, large = square_chart_layout(["M1"] * 3), square_chart_layout(["M1"] * 20)
    assert large["height"] > small["height"]
    assert square_chart_layout(["x" * 22] * 3)["margin"]["b"] > small["margin"]["b"]

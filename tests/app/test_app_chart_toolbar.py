"""Charts never hide data under plotly's toolbar, and the reliability diagram shows a bin at 0 or
1 whole: every chart the pages draw keeps a top margin the toolbar fits in (``show_chart``) and no
plotly logo; the diagram's axes run a little beyond 0 and 1 and its points are not clipped.
AppTest on a real store."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd

from pages._common import MODEBAR_MARGIN_PX
from tests.app.test_app_pages import app_env, open_page, seed_run  # noqa: F401


def test_every_chart_leaves_room_for_the_toolbar(app_env):
    seed_run(app_env)
    seen = 0
    for page in ("bias", "matrix", "leaderboard"):
        for chart in open_page(page).get("plotly_chart"):
            layout = json.loads(chart.proto.spec)["layout"]
            assert layout["margin"]["t"] >= MODEBAR_MARGIN_PX, (page, layout["margin"])
            assert json.loads(chart.proto.config) == {"displaylogo": False}
            seen += 1
    assert seen >= 3


def test_the_reliability_diagram_shows_its_end_points_whole():
    from pages._judges import _reliability_figure
    bins = pd.DataFrame({"mean_p": [0.0, 0.5, 1.0], "frequency": [0.0, 0.5, 1.0], "n": [3, 4, 5]})
    fig = _reliability_figure(SimpleNamespace(reliability={"raw": bins, "calibrated": bins}))
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert axis.range[0] < 0 and axis.range[1] > 1
    assert all(trace.cliponaxis is False for trace in fig.data)

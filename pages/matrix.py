"""Matrix: the p_ij heatmap of one context (row = first position, column = second), its eq. 10
decisions at the current tau and the order-consistency view; clicking a cell opens that comparison.

Matrices come from the Python API (``Run.matrix``, ``decision_matrix``, ``consistency_matrix``); this
page only orders them by the current ranking
and draws them. It must never compute a probability or a decision itself.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from pages._auth import guard
from pages._common import (at_tau, axis_labels, centred_range, plain, result_page_header,
                           show_chart)
from pages._comparison import comparison_view, open_comparison

guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

header = result_page_header("Comparison matrix")
if header is None:
    st.stop()
run, tau, method = header

#: The two verdicts of the decision view: second position wins (0), first position wins (1).
DECISION_COLOURS = ("#e8590c", "#1971c2")
DECISION_LABELS = ("second (B) wins", "first (A) wins")
VIEWS = {"p": "p_ij = P(first beats second)", "decision": "decision at the current tau (eq. 10)",
         "consistency": "consistency: p_ij - (1 - p_ji)"}
c1, c2 = st.columns([1, 2])
context_id = c1.selectbox("Context", run.context_ids, key="matrix_context",
                          format_func=lambda c: plain(c, "text"))
mode = c2.radio("Show", list(VIEWS), format_func=VIEWS.get, horizontal=True, key="matrix_mode")

matrix = run.matrix(context_id=context_id)
ids = list(matrix.index)
# The Rankings page's call (all contexts, no intervals), so both pages share one cached ranking.
ranking = run.rankings(method=method, debias=tau, ci=False)
order_ids = list(ranking.loc[ranking["context_id"] == context_id, "candidate_id"])
# Best first by the current ranking (the stored order when a candidate was never compared).
ordered_ids = order_ids if sorted(order_ids) == sorted(ids) else ids
base = matrix.loc[ordered_ids, ordered_ids].to_numpy()
# The colours span the values of this context, centred at the threshold in use (p) or at 0
# (consistency): p between 0.45 and 0.7 uses the whole colour scale, not its pale middle.
centre = tau if isinstance(tau, float) else 0.5
if mode == "p":
    zmin, zmax = centred_range(base, centre)
    z, scale, what = base, "RdBu", f"p_ij (centre: {centre:.3f})"
elif mode == "decision":
    # A yes/no value gets two colours and a two-entry legend, not a continuous colour bar.
    z = run.decision_matrix(context_id=context_id, debias=tau).loc[ordered_ids, ordered_ids]
    z, zmin, zmax, what = z.to_numpy(), 0.0, 1.0, "verdict (eq. 10)"
    scale = [[0.0, DECISION_COLOURS[0]], [0.5, DECISION_COLOURS[0]],
             [0.5, DECISION_COLOURS[1]], [1.0, DECISION_COLOURS[1]]]
else:
    z = run.consistency_matrix(context_id=context_id).loc[ordered_ids, ordered_ids]
    z, scale, what = z.to_numpy(), "PuOr", "p_ij - (1 - p_ji)"
    zmin, zmax = centred_range(z, 0.0)

size = len(ordered_ids)
# Numeric axes with candidate-id tick labels: numpy arrays travel to the browser as typed arrays, so a
# 300 x 300 matrix (89,700 cells) stays fast to draw and to redraw when tau moves.
step = max(1, size // 40)
# Plotly reads tick and hover labels as HTML: ids are escaped for it.
shown_ids = [plain(c, "plotly") for c in ordered_ids]
# Long ids are cut to what tells them apart on the axes and shown whole in the hover.
cut_ids = axis_labels(ordered_ids)
ticks = dict(tickmode="array", tickvals=list(range(0, size, step)), ticktext=cut_ids[::step],
             automargin=True)
fig = go.Figure()
colorbar = (dict(title=what, tickvals=[0.25, 0.75], ticktext=list(DECISION_LABELS))
            if mode == "decision" else dict(title=what))
fig.add_trace(go.Heatmap(z=z, zmin=zmin, zmax=zmax, colorscale=scale,
                         zmid=(zmin + zmax) / 2, hoverongaps=False,
                         hoverinfo="skip", colorbar=colorbar))
# Heatmap cells cannot be selected in Streamlit; a transparent marker per compared cell takes the click.
rows, cols = np.nonzero(~np.isnan(base))
fig.add_trace(go.Scattergl(
    x=cols, y=rows, mode="markers",
    marker=dict(symbol="square", size=max(4, min(40, 600 // max(size, 1))), opacity=0.01,
                color=z[rows, cols], colorscale=scale, cmin=zmin, cmax=zmax),
    customdata=(np.stack([np.asarray(shown_ids, dtype=object)[rows],
                          np.asarray(shown_ids, dtype=object)[cols]], axis=1)
                if size <= 60 and len(rows) else None),
    hovertemplate=("first: %{customdata[0]}<br>second: %{customdata[1]}<br>"
                   if size <= 60 else "row %{y} (first), column %{x} (second)<br>")
                  + "value: %{marker.color:.3f}<extra></extra>",
    showlegend=False))
longest = max((len(c) for c in cut_ids[::step]), default=1)
fig.update_layout(height=min(900, 220 + 22 * size + 4 * longest),
                  margin=dict(l=10, r=10, t=30 + 5 * longest, b=10),
                  xaxis=dict(title="second position (B)", side="top", range=[-0.5, size - 0.5],
                             showgrid=False, zeroline=False, **ticks),
                  yaxis=dict(title="first position (A)", autorange="reversed", showgrid=False,
                             zeroline=False, **ticks),
                  clickmode="event+select", dragmode="select" if size > 40 else False)
event = show_chart(st, fig, on_select="rerun", selection_mode=("points",), key="matrix_chart",
                        width="stretch")
st.caption(f"{plain(context_id)}: {size} candidates ordered by their current rank ({method}, {at_tau(tau)}), "
           f"best first; {int((~np.isnan(base)).sum())} compared ordered pairs. Click a cell to open "
           "that comparison."
           + ("" if mode == "decision" else f" The colours span this context's values ({zmin:.2f} "
              f"to {zmax:.2f}), white at {(zmin + zmax) / 2:.3f}."))

points = (event or {}).get("selection", {}).get("points", []) if event else []
if points:
    pt = points[0]
    r, c = int(round(pt.get("y", -1))), int(round(pt.get("x", -1)))
    if 0 <= r < size and 0 <= c < size and r != c:
        open_comparison(context_id, ordered_ids[r], ordered_ids[c])

with st.expander("Or choose a comparison by name", expanded=False):
    # Room for the button's label at 1024 px (a fifth of the row cut it to "Open compa...").
    a1, a2, a3 = st.columns([2, 2, 1.4], vertical_alignment="bottom")
    first = a1.selectbox("First position (A)", ordered_ids, key="pick_first",
                         format_func=lambda c: plain(c, "text"))
    second = a2.selectbox("Second position (B)", [c for c in ordered_ids if c != first],
                          key="pick_second", format_func=lambda c: plain(c, "text"))
    if a3.button("Open comparison", key="open_pick"):
        open_comparison(context_id, first, second)

chosen = st.session_state.get("open_comparison")
if chosen and chosen[0] == context_id:
    comparison_view(run, *chosen, tau=tau)

"""Bias: the positional-bias audit of a run — P(A)/P(B) gauges raw and at the current tau, the p_ij
histogram, the flip rate, P(A) per context, the length bias (share of wins by the longer text, the
logistic slope on the log length ratio) and the most order-dependent comparisons.

Every number comes from ``compassess_core.stats.analysis``/``bias``; this page must never compute one.
"""

from __future__ import annotations

import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from pages import _view as view
from pages._auth import guard
from pages._common import (PER_CONTEXT, at_tau, fit_columns, fmt, length_bias_metrics, line_labels, plain,
                           result_page_header, show_chart, tau_effect_note, use_balanced_tau,
                           use_per_context_tau)
from pages._comparison import comparison_view, open_comparison
from compassess_core.api import counted

guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

header = result_page_header("Positional bias audit")
if header is None:
    st.stop()
run, tau, method = header
view_mode = view.tau_mode()
n_p = run.n_comparisons
position = run.positional_bias(debias=tau)
raw_a, raw_b, cur_a, cur_b = position.p_a_raw, position.p_b_raw, position.p_a, position.p_b


def gauge(value: float, title: str) -> go.Figure:
    fig = go.Figure(go.Indicator(
        mode="gauge+number", value=value, number=dict(valueformat=".2f"),
        title=dict(text=title, font=dict(size=13)),
        gauge=dict(axis=dict(range=[0, 1], tickvals=[0, 0.5, 1]),  # 0.25/0.75 get cut in narrow columns
                   bar=dict(color="#3b5bdb"),
                   steps=[dict(range=[0.45, 0.55], color="#d3f9d8")],
                   threshold=dict(line=dict(color="black", width=3), thickness=0.9, value=0.5))))
    # Room either side for the 0 and 1 ticks, so the gauge is not cut in a narrow column.
    fig.update_layout(height=210, margin=dict(l=36, r=36, t=50, b=10))
    return fig


st.caption(f"P(A): share of {counted(n_p, 'comparison')} won by the first position (eq. 8); P(B) = "
           "1 - P(A). "
           "The black mark is 0.5, an unbiased judge; the green band is 0.45-0.55.")
g = st.columns(4)
for col, value, title, key in ((g[0], raw_a, "P(A) raw (tau = 0.5)", "g_raw_a"),
                               (g[1], raw_b, "P(B) raw (tau = 0.5)", "g_raw_b"),
                               (g[2], cur_a, f"P(A) at {at_tau(tau)}", "g_cur_a"),
                               (g[3], cur_b, f"P(B) at {at_tau(tau)}", "g_cur_b")):
    show_chart(col, gauge(value, title), key=key, width="stretch")
m = st.columns(4)
m[0].metric("P(A) raw", fmt(raw_a, ".2f"))
m[1].metric(f"P(A) at {at_tau(tau)}", fmt(cur_a, ".2f"))
# Short labels, the detail in the help: four metrics side by side must fit a 1024 px window.
m[2].metric("Flip rate", fmt(position.flip_rate, ".1%"),
            help=f"At {at_tau(tau)}: share of {counted(position.n_pairs_both_orders, 'pair')} "
                 "judged in "
                 "both orders whose verdict changes with the order.")
m[3].metric("tau* (global)", f"{position.tau_star:.3f}",
            help="The balancing threshold of all comparisons together (eq. 10).")
tau_effect_note(run, tau, method)

left, right = st.columns(2)
with left:
    st.markdown("**Histogram of p_ij** (all comparisons)")
    hist = px.histogram(x=run.probabilities(), nbins=40,
                        labels=dict(x="p_ij = P(first position wins)"))
    lines = ((0.5, "0.5", "black"), (position.tau_star, "tau*", "green"),
             *(() if tau == PER_CONTEXT else ((tau, "current tau", "#e8590c"),)))
    for x, _, color in lines:
        hist.add_vline(x=x, line_dash="dash", line_color=color)
    # One label per distinct position, each on its own row: lines that (nearly) coincide share
    # a label ("0.5 = current tau") instead of printing two labels over each other.
    # Above the plot area, one row each, so no label sits on the bars.
    labels = line_labels(lines)
    for row, (x, label, color) in enumerate(labels):
        hist.add_annotation(x=x, y=1.0, xref="x", yref="paper", yanchor="bottom",
                            yshift=2 + 16 * row, text=label, showarrow=False, xanchor="left",
                            xshift=4, font=dict(color=color))
    hist.update_layout(height=340, margin=dict(l=10, r=10, t=12 + 16 * len(labels), b=10),
                       yaxis_title="comparisons", bargap=0.05)
    show_chart(st, hist, key="hist", width="stretch")
    st.caption(f"{counted(n_p, 'comparison')}; right of a line = the first position wins at that "
               "threshold.")
with right:
    per = run.bias(debias=tau)
    st.markdown(f"**P(A) per context** at {at_tau(tau)}")
    # Plotly reads axis and hover labels as HTML: context ids are escaped for it.
    bar = px.bar(per.assign(context_id=per["context_id"].map(lambda c: plain(c, "plotly"))),
                 x="context_id", y="p_a", hover_data=["tau", "n_comparisons", "flip_rate"],
                 labels=dict(p_a="P(A)", context_id="context", tau="threshold"))
    bar.add_hline(y=0.5, line_dash="dash", line_color="black")
    bar.update_layout(height=320, margin=dict(l=10, r=10, t=10, b=10), yaxis_range=[0, 1],
                      xaxis_type="category")
    show_chart(st, bar, key="per_context", width="stretch")
    st.caption(f"{counted(len(per), 'context')}; dashed line: 0.5. P(A) per context from "
               f"{fmt(position.p_a_context_min, '.2f')} to "
               f"{fmt(position.p_a_context_max, '.2f')} at "
               f"{at_tau(tau)} (each context's share of its own comparisons won by the first "
               "position).")

st.subheader("P(A) per context and its threshold")
st.caption("The global tau* balances P(A) over all comparisons together: a context where the judge "
           "leans further one way keeps its P(A) far from 0.5. Balancing per context applies "
           "eq. 10 context by context: one tau* per context, P(A) = 0.5 in each.")
b1, b2 = st.columns(2)
b1.button("Use the global tau* (one threshold)", on_click=use_balanced_tau,
          icon=":material/balance:", key="bias_use_global", disabled=view_mode == "balanced")
b2.button("Balance each context (one tau* per context)", on_click=use_per_context_tau,
          icon=":material/tune:", key="bias_use_per_context", disabled=view_mode == "per-context")
st.dataframe(plain(per, into="text"), hide_index=True, width="stretch",
             column_config={
                 "context_id": st.column_config.TextColumn("context"),
                 "tau": st.column_config.NumberColumn("threshold tau", format="%.4f",
                                                      help="the threshold this context's "
                                                           "comparisons are decided at"),
                 "p_a": st.column_config.NumberColumn("P(A)", format="%.3f"),
                 "p_b": st.column_config.NumberColumn("P(B)", format="%.3f"),
                 "flip_rate": st.column_config.NumberColumn("flip rate", format="%.3f"),
                 "n_comparisons": st.column_config.NumberColumn("comparisons"),
                 "n_pairs_both_orders": st.column_config.NumberColumn("pairs in both orders")}, placeholder="")
st.caption(f"{counted(len(per), 'context')} at {at_tau(tau)}; P(A) = share of the context's "
           "comparisons "
           "won by the first position (eq. 8); flip rate over the context's pairs judged in "
           "both orders.")

st.subheader("Length bias")
lb = run.length_bias(debias=tau)
points, curve = run.length_points(debias=tau)
l1, l2 = st.columns([1, 2])
length_bias_metrics(l1, lb, tau=tau)
l1.metric("Position at equal length (log-odds)", fmt(lb.position_log_odds, "+.3f"),
          help="The intercept of the same fit: log-odds of 'A wins' for texts of equal length "
               "(0 = no positional bias).")
l1.caption(f"On {counted(lb.n_comparisons, 'comparison')}; lengths in characters; mean |log2 "
           "length "
           f"ratio| {fmt(lb.mean_log2_ratio_abs, '.2f')}. Length-adjusted system strengths "
           "and, against a baseline, AlpacaEval 2.0's length-controlled win rate are on the "
           "**Leaderboard**.")
scatter = go.Figure(go.Scattergl(x=points["log2_ratio"], y=points["p"], mode="markers",
                                 name="comparisons",
                                 marker=dict(size=4, opacity=0.35, color="#3b5bdb"),
                                 hovertemplate="log2 ratio %{x:.2f}<br>p %{y:.3f}<extra></extra>"))
scatter.add_trace(go.Scatter(x=curve["log2_ratio"], y=curve["p"], mode="lines", name="logistic fit",
                             line=dict(color="#e8590c")))
if tau != PER_CONTEXT:  # one threshold per context is no single line
    scatter.add_hline(y=tau, line_dash="dash", line_color="#e8590c")
scatter.update_layout(height=300, margin=dict(l=10, r=10, t=10, b=10), showlegend=False,
                      xaxis_title="log2(len A / len B): > 0 when the first text is longer",
                      yaxis_title="p = P(first wins)", yaxis_range=[0, 1])
show_chart(l2, scatter, key="length_scatter", width="stretch")
l2.caption(f"Each point is one comparison; the curve is the logistic fit; dashed: the current "
           f"{at_tau(tau)}.")

st.subheader("Most order-dependent comparisons")
dep = run.order_dependence(debias=tau)
top = dep.head(50)
if top.empty:
    st.info("No pair was judged in both orders (strategy 'no-repeat'?), so order dependence cannot "
            "be measured.")
    st.stop()
event = st.dataframe(
    plain(top, into="text"), hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
    key="dep_table",
    column_config=fit_columns(top, {  # fits 1024 px
        "p_first_second": st.column_config.NumberColumn("p(first beats second)", format="%.3f"),
        "p_second_first": st.column_config.NumberColumn("p(second beats first)", format="%.3f"),
        "inconsistency": st.column_config.NumberColumn("|p_ij - (1 - p_ji)|", format="%.3f"),
        "flips": st.column_config.CheckboxColumn(f"flips at {at_tau(tau)}")}), placeholder="")
st.caption(f"The {len(top)} most order-dependent of {counted(len(dep), 'pair')} judged in both "
           "orders; "
           "select a row (or pick below) to open the comparison.")
rows = event.selection.rows if event and hasattr(event, "selection") else []
labels = [plain(f"{k + 1}. {r.context_id}: {r.first} vs {r.second}", "text")
          for k, r in enumerate(top.itertuples())]
pick = st.selectbox("Open comparison", labels, index=None, placeholder="choose a pair",
                    key="dep_pick")
chosen_row = rows[0] if rows else (labels.index(pick) if pick is not None else None)
if chosen_row is not None:
    r = top.iloc[int(chosen_row)]
    open_comparison(r["context_id"], r["first"], r["second"])
    comparison_view(run, r["context_id"], r["first"], r["second"], tau=tau)

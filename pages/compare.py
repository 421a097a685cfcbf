"""Compare runs: audit one judge against another on the same dataset (two models, two templates, two
aspects) — verdict agreement and Cohen's kappa on the ordered pairs both judged, the correlation of
their p, rank correlation per context and at system level, each run's P(A), a scatter of p, and the
pairs they disagree on, each opening the comparison view of both runs.

Every number comes from the Python API (``Run.compare``, cached per pair of runs and threshold); this
page must never compute one, and shows texts and ids only as plain text.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from pages import _view as view
from pages._auth import guard
from pages._common import (AppRun, compare_runs, data_range, debias_in_use, fmt, is_pairwise,
                           judge_warning, list_runs, pick_object, plain, result_page_header,
                           running_or_partial_note, show_chart, show_paired)
from pages._comparison import comparison_view
from compassess_core.api import counted

guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

header = result_page_header("Compare two runs")
if header is None:
    st.stop()
run_a, tau_a, method = header

others = [r for r in list_runs(run_a.info.dataset_id)
          if r.id != run_a.id and (r.info.n_comparisons or 0) > 0 and is_pairwise(r)]
if not others:
    st.info(f"Run {plain(run_a.name)} is the only pairwise run on dataset "
            f"{plain(run_a.dataset.name)}. Start "
            "a second one on **Run** (another model, template or aspect on the same data) to audit "
            "one judge against the other.", icon=":material/compare_arrows:")
    st.page_link("pages/run.py", label="Go to Run", icon=":material/play_arrow:")
    st.stop()
by_id = {r.id: r for r in others}
# Run B is the view's second run (by id, in the URL). One that exists but cannot be B for this
# run A (A itself, another dataset's run: A was changed) gives way to the newest other run, and
# the page says so; a link naming a run that is gone says so and shows no other run in its place.
every = {r.id: r for r in list_runs()}
want_b = view.get("run_b")
if want_b is not None and want_b not in by_id and want_b in every:
    st.info(f"Run {plain(every[want_b].name)} cannot be run B beside run A {plain(run_a.name)} "
            f"({'it is run A' if want_b == run_a.id else 'not a pairwise run with comparisons on its dataset'}): "
            "run B is the newest other run of the dataset instead.", icon=":material/info:")
    view.put("run_b", None)
chosen_b = pick_object("run_b", list(by_id), lambda i: plain(by_id[i].name, "text"),
                       what="second run", where=st, label="Compare with run (B)")
if chosen_b is None:
    st.stop()
run_b = AppRun(by_id[chosen_b])
# The sidebar's threshold mode applied to each run (balanced: each run's own tau*), as
# `compassess compare --debias` does.
debias = debias_in_use()
tau_b = debias if isinstance(tau_a, str) else run_b.tau(debias)
running_or_partial_note(run_b)   # run B still running, or stopped early: said as for run A
judge_warning(run_b, tau_b)

cmp = compare_runs(run_a, run_b, method, debias)
st.caption(f"A = run {plain(run_a.name)} at {run_a.threshold_label(debias, 3)}; B = run "
           f"{plain(run_b.name)} at {run_b.threshold_label(debias, 3)} (the sidebar's "
           "threshold mode applied to each run: balanced = each run's own tau*; balanced per "
           "context = each run's tau* of each context, and p in the scatter are then eq. 9's "
           f"reweighted p, decided at 0.5). {cmp.n_shared:,} ordered pairs were judged by both "
           f"({counted(cmp.n_a, 'comparison')} "
           f"in A, {cmp.n_b:,} in B).")
m = st.columns(4)
m[0].metric("Verdict agreement", fmt(cmp.agreement, ".1%"),
            help=f"Share of the {cmp.n_shared:,} shared ordered pairs with the same verdict (eq. 10 "
                 "at each run's tau).")
m[1].metric("Cohen's kappa", fmt(cmp.kappa, ".3f"),
            help="Agreement of the two verdicts beyond chance (1 = identical, 0 = chance), on the "
                 "shared pairs.")
m[2].metric("Pearson r of p", fmt(cmp.p_pearson, ".3f"),
            help="Correlation of the two runs' P(first wins) on the shared pairs.")
m[3].metric("Pairs with different verdicts", f"{len(cmp.disagreements):,}")
r = st.columns(4)
r[0].metric("P(A), run A", fmt(cmp.p_a_first, ".2f"),
            help=f"Share of run A's {counted(cmp.n_a, 'comparison')} won by the first position at "
                 "its tau.")
r[1].metric("P(A), run B", fmt(cmp.p_b_first, ".2f"),
            help=f"Share of run B's {counted(cmp.n_b, 'comparison')} won by the first position at "
                 "its tau.")
r[2].metric("Rank Spearman x100 per context", fmt(cmp.rank_spearman_x100),
            help=f"Spearman of the two runs' {method} scores within each context, mean over "
                 f"{counted(cmp.n_contexts_ranked, 'context')}.")
r[3].metric("System-level Spearman x100", fmt(cmp.system_spearman_x100),
            help=f"Spearman of the two runs' system strengths ({method}) over {cmp.n_systems} "
                 "systems; n/a without systems (or fewer than 3).")

st.subheader("Paired tests: A - B on the same pairs")
show_paired(st, [cmp.paired_people, cmp.paired_position], key="compare_paired",
            caption="Each judge's number on the pairs both judged, the difference A - B with its "
                    "95% interval from a bootstrap that resamples contexts, then pairs within "
                    "them, and McNemar's exact test on the pairs where only one of the two "
                    "succeeds.")
if cmp.people_note:
    st.caption(f"With people: {plain(cmp.people_note)}")

pairs = cmp.pairs
scatter = go.Figure()
for agree, colour, label in ((True, "#3b5bdb", "same verdict"), (False, "#e8590c", "different verdict")):
    part = pairs[pairs["agree"] == agree]
    scatter.add_trace(go.Scattergl(
        x=part["p_a"], y=part["p_b"], mode="markers", name=label,
        marker=dict(size=6, opacity=0.6, color=colour),
        customdata=part[["context_id", "first", "second"]].map(lambda v: plain(v, "plotly")).to_numpy(),
        hovertemplate="%{customdata[0]}: %{customdata[1]} first vs %{customdata[2]}<br>"
                      "p in A %{x:.3f}, p in B %{y:.3f}<extra></extra>"))
# the thresholds in use (0.5 on the reweighted p under per-context balancing)
scatter.add_vline(x=cmp.tau_a, line_dash="dash", line_color="#868e96")
scatter.add_hline(y=cmp.tau_b, line_dash="dash", line_color="#868e96")
scatter.update_layout(height=420, margin=dict(l=10, r=10, t=40, b=10),
                      xaxis=dict(title="p in run A = P(first wins)",
                                 range=data_range(pairs["p_a"], cmp.tau_a)),
                      yaxis=dict(title="p in run B = P(first wins)",
                                 range=data_range(pairs["p_b"], cmp.tau_b)),
                      # Above the plot at the left: below it the legend covered the x title,
                      # and the toolbar (on hover) takes the top right.
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
show_chart(st, scatter, key="compare_scatter", width="stretch")
st.caption("One point per shared ordered pair: P(first wins) in run A against run B; dashed lines: "
           "each run's tau. Points in the top-right and bottom-left quarters get the same verdict. "
           "The axes span the p values there are (not 0 to 1), so close values stay apart.")

st.subheader("Pairs the two runs disagree on")
dis = cmp.disagreements
if dis.empty:
    st.success("The two runs give the same verdict on every shared pair.")
    st.stop()
shown = dis[["context_id", "first", "second", "p_a", "p_b", "winner_a", "winner_b", "confidence"]]
event = st.dataframe(
    plain(shown, "text"), hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
    key="compare_disagreements",
    column_config={"p_a": st.column_config.NumberColumn("p in A", format="%.3f"),
                   "p_b": st.column_config.NumberColumn("p in B", format="%.3f"),
                   "winner_a": st.column_config.TextColumn("A picks"),
                   "winner_b": st.column_config.TextColumn("B picks"),
                   "confidence": st.column_config.NumberColumn(
                       "|p_A - tau_A| + |p_B - tau_B|", format="%.3f")}, placeholder="")
st.caption(f"{len(dis):,} of {cmp.n_shared:,} shared ordered pairs, the most confident disagreement "
           "first. Select a row (or pick below) to open the comparison in both runs.")
rows = (event or {}).get("selection", {}).get("rows", []) if event else []
labels = [plain(f"{k + 1}. {row.context_id}: {row.first} first vs {row.second}", "text")
          for k, row in enumerate(dis.itertuples(index=False))]
picked = st.selectbox("Open a disagreement", range(len(dis)), format_func=labels.__getitem__,
                      index=None, placeholder="choose a pair", key="compare_pick")
chosen = rows[0] if rows else picked
if chosen is not None:
    row = dis.iloc[int(chosen)]
    tab_a, tab_b = st.tabs([f"Run A: {plain(run_a.name)}", f"Run B: {plain(run_b.name)}"])
    with tab_a:
        comparison_view(run_a, str(row["context_id"]), str(row["first"]), str(row["second"]), tau_a)
    with tab_b:
        comparison_view(run_b, str(row["context_id"]), str(row["first"]), str(row["second"]), tau_b)

"""Leaderboard: which system (model, prompt, checkpoint) is best across all contexts of a run, and how
sure we are — one row per system with its strength and win rate, 95% intervals from a bootstrap over
contexts, the share of replicates in which it ranks first, its length and, with reference scores,
its mean reference score; the system x system win-rate matrix; the run's length bias with a
length-adjusted strength (CompAssess's joint GLM); with a baseline system (AlpacaEval's reference
model), each system's win rate against it with its 95% interval and AlpacaEval 2.0's
length-controlled win rate against it; the votes
of every pair of systems; and the table as a file with the run's settings.

Every number comes from ``compassess_core.stats.leaderboard`` (cached per run, method, tau, reference);
this page must never compute one, and shows system names only in tables and charts.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from compassess_core import api
from compassess_core.api import EXPORT_FORMATS as FORMATS
from compassess_core.stats.leaderboard import STRENGTH_UNITS, NoSystemsError
from pages._auth import guard
from pages import _view as view
from pages._plain import plain_message
from pages._common import (at_tau, axis_labels, baseline_control, default_reference_index,
                           download_with_settings, fmt, length_bias_metrics, plain,
                           result_page_header, show_chart, square_chart_layout)
from compassess_core.api import counted

guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

BOOTSTRAP_CHOICES = (200, 1000)

header = result_page_header("Leaderboard of systems")
if header is None:
    st.stop()
run, tau, method = header

c1, c2, c3 = st.columns([2, 2, 1])
refs = list(run.dataset.score_columns)
reference = c1.selectbox("Reference score column", refs or ["(none in this dataset)"],
                         index=default_reference_index(refs, run), disabled=not refs,
                         key=f"board_reference_{run.id}", format_func=lambda c: plain(c, "text"),
                         help="Each system's mean reference score, and the system-level "
                              "correlation of the strengths with it.")
reference = reference if refs else None
want = view.get("boot")
st.session_state["board_boot_w"] = want if want in BOOTSTRAP_CHOICES else BOOTSTRAP_CHOICES[0]
n_boot = c3.radio("Bootstrap replicates", BOOTSTRAP_CHOICES, horizontal=True, key="board_boot_w",
                  on_change=lambda: view.put("boot", st.session_state["board_boot_w"]),
                  help="Each replicate draws the run's contexts with replacement and refits; "
                       "1000 gives steadier interval ends, 200 answers faster.")
view.put("boot", n_boot)

baseline = baseline_control(run, c2, "board_baseline_w")

try:
    with st.spinner("Computing the leaderboard (context bootstrap) ..."):
        board = run.leaderboard(method=method, debias=tau, reference=reference,
                         baseline=baseline, n_boot=int(n_boot))
except NoSystemsError as e:
    st.info(plain_message(e), icon=":material/info:")  # names a dataset: inert
    st.page_link("pages/rankings.py", label="Go to Rankings (per-context rankings)",
                 icon=":material/leaderboard:")
    st.stop()

frame = board.frame
unit = STRENGTH_UNITS.get(board.method, board.method)
level = f"{board.level:.0%}"
m = st.columns(4)
m[0].metric("Systems", f"{len(frame):,}")
# Short labels, the detail in the help: four metrics side by side must fit a 1024 px window.
m[1].metric("Comparisons", f"{board.n_comparisons:,}",
            help="Comparisons whose two candidates belong to two different systems.")
m[2].metric("Contexts", f"{board.n_contexts:,}", help="The clusters the bootstrap resamples.")
m[3].metric("Spearman x100", fmt(board.system_spearman_x100),
            help="System level: Spearman correlation (x100) of the systems' strengths with their mean "
                 f"{plain(reference or '')} score, over {counted(len(frame), 'system')} (needs a "
                 "reference column and 3+ systems).")
st.caption(f"Strength: {unit}, method {board.method} at {at_tau(tau)}. Win rate: share of a "
           f"system's comparisons it won (eq. 10 at tau). {level} intervals: percentiles of "
           f"{board.n_boot} bootstrap replicates that resample the "
           f"{counted(board.n_contexts, 'context')}, "
           "then the comparisons within each. "
           "P(best): share of replicates in which the system has the highest strength.")
for note in board.notes:  # a note may quote a system's name (the baseline's): inert
    st.caption(f"Note: {plain_message(note)}.")

# The key numbers first (strength and win rate, then the win rate against a baseline), their
# intervals and the rest after: a 1024 px window shows the system and what ranks it.
columns = ["rank", "system", "strength", "win_rate", "p_best", "strength_ci_low",
           "strength_ci_high", "win_rate_ci_low", "win_rate_ci_high", "n_comparisons",
           "n_contexts", "mean_length", "lc_strength", "lc_win_rate"] + (
    ["mean_reference"] if reference else [])
against = ["win_rate_vs_baseline", "win_rate_vs_baseline_low", "win_rate_vs_baseline_high",
           "n_vs_baseline", "lc_win_rate_vs_baseline", "lc_win_rate_vs_baseline_se"]
if baseline is not None:
    columns[4:4] = against  # after strength and win rate: the headline of a baseline
    st.caption(f"Against the baseline {plain(baseline)}: win rate = share of the system's "
               f"comparisons with the baseline that it won at {at_tau(tau)} (both orders, "
               f"the contexts where both appear; p = tau is a win for the second text), with its "
               f"{level} interval from the same context bootstrap and the number of those "
               "comparisons. LC vs baseline: AlpacaEval 2.0's length-controlled win rate "
               "(Dubois et al. 2024): one GLM per system against the baseline, as alpaca_eval's "
               "glm_winrate, its prediction at equal length averaged over the system's "
               "contexts, with AlpacaEval's standard error (not an interval); blank for a system "
               "that met the baseline in fewer than 5 contexts. The baseline's own row is blank.")
    if board.alpaca_lc is not None:
        st.caption(f"LC vs baseline is {plain(board.alpaca_lc.estimator)}.")
pct = dict(format="percent")
st.dataframe(
    plain(frame[columns], "text"), hide_index=True, width="stretch",
    height=min(35 * (len(frame) + 1) + 3, 640),
    column_config={
        "rank": st.column_config.NumberColumn("rank", help="1 = highest strength", pinned=True),
        "system": st.column_config.TextColumn("system", pinned=True),
        "strength": st.column_config.NumberColumn("strength", format="%.3f", help=unit),
        "strength_ci_low": st.column_config.NumberColumn(
            "strength low", format="%.3f", help=f"Lower end of the strength's {level} interval."),
        "strength_ci_high": st.column_config.NumberColumn(
            "strength high", format="%.3f", help=f"Upper end of the strength's {level} interval."),
        "win_rate": st.column_config.NumberColumn("win rate", **pct,
                                                  help="share of its comparisons the system won"),
        "win_rate_ci_low": st.column_config.NumberColumn(
            "win rate low", **pct, help=f"Lower end of the win rate's {level} interval."),
        "win_rate_ci_high": st.column_config.NumberColumn(
            "win rate high", **pct, help=f"Upper end of the win rate's {level} interval."),
        "p_best": st.column_config.NumberColumn("P(best)", **pct,
                                                help="share of bootstrap replicates in which the "
                                                     "system ranks first"),
        "n_comparisons": st.column_config.NumberColumn("comparisons"),
        "n_contexts": st.column_config.NumberColumn("contexts"),
        "mean_length": st.column_config.NumberColumn("mean length", format="%.0f",
                                                     help="Mean length of its texts in characters."),
        "lc_strength": st.column_config.NumberColumn(
            "len-adj strength", format="%.3f",
            help="Length-adjusted strength (log-odds): the system term of CompAssess's joint GLM "
                 "over all systems (one shared length slope, a position term), with the length "
                 "and position terms set to zero. Not AlpacaEval's estimator."),
        "lc_win_rate": st.column_config.NumberColumn(
            "len-adj win rate", **pct,
            help="Length-adjusted win rate: the joint GLM's prediction against every other "
                 "system at equal length and no position preference (CompAssess's, against the "
                 "field; AlpacaEval's is 'LC vs baseline')."),
        "mean_reference": st.column_config.NumberColumn(
            "mean reference", format="%.3f",
            help=f"The system's mean {plain(reference or '', 'text')} score."),
        "win_rate_vs_baseline": st.column_config.NumberColumn(
            "vs baseline", **pct,
            help="Win rate against the baseline: share of the system's comparisons with the "
                 "baseline it won at tau."),
        "win_rate_vs_baseline_low": st.column_config.NumberColumn(
            "vs baseline low", **pct, help=f"Lower end of its {level} interval."),
        "win_rate_vs_baseline_high": st.column_config.NumberColumn(
            "vs baseline high", **pct, help=f"Upper end of its {level} interval."),
        "n_vs_baseline": st.column_config.NumberColumn(
            "with baseline", help="Comparisons between the system and the baseline."),
        "lc_win_rate_vs_baseline": st.column_config.NumberColumn(
            "LC vs baseline", **pct,
            help="AlpacaEval 2.0's length-controlled win rate against the baseline: the "
                 "system's own GLM (tanh of the standardised length difference + instruction "
                 "difficulty, L1, 5-fold cross-validated) predicted at equal length, averaged "
                 "over its contexts; regularised toward the baseline only when the run holds "
                 "verbose and concise rewrites of it (the caption above names the estimator)."),
        "lc_win_rate_vs_baseline_se": st.column_config.NumberColumn(
            "LC std. error", **pct,
            help="AlpacaEval's lc_standard_error: standard error of the mean prediction over "
                 "the system's contexts (not the fit's uncertainty)."),
    }, placeholder="")
st.caption("Hover a column's name for what it holds; LC vs baseline = AlpacaEval 2.0's "
           "length-controlled win rate; len-adj = CompAssess's joint length GLM. "
           "Rank and system stay in view when the table scrolls sideways.")

st.subheader("Votes per pair of systems")
st.dataframe(
    plain(board.pair_counts, "text"), hide_index=True, width="stretch",
    column_config={
        "system_a": st.column_config.TextColumn("system A"),
        "system_b": st.column_config.TextColumn("system B"),
        "n_comparisons": st.column_config.NumberColumn("comparisons"),
        "wins_a": st.column_config.NumberColumn("won by A"),
        "wins_b": st.column_config.NumberColumn("won by B"),
        "win_rate_a": st.column_config.NumberColumn("A's win rate", **pct),
    }, placeholder="")
st.caption(f"Comparisons between each pair of systems that met (both orders, all contexts) and how "
           f"many each won at {at_tau(tau)} (eq. 10); Chatbot Arena's battle counts.")

left, right = st.columns([3, 2])
with left:
    st.subheader("Head to head")
    matrix = board.win_matrix
    names = [plain(str(name), "plotly") for name in matrix.index]  # plotly reads labels as HTML
    # Long system names are cut to what tells them apart on the axes and shown whole in the hover;
    # positions on numeric axes, so two names cut alike stay two rows.
    cut = axis_labels([str(name) for name in matrix.index])
    shares = matrix.to_numpy()
    n = len(names)
    full = np.asarray(names, dtype=object)
    heat = go.Figure(go.Heatmap(
        z=shares, x=list(range(n)), y=list(range(n)), zmin=0.0, zmax=1.0, zmid=0.5,
        colorscale="RdBu", customdata=np.stack([np.tile(full[:, None], (1, n)),
                                                np.tile(full[None, :], (n, 1))], axis=-1),
        text=[[fmt(v, ".0%", "") for v in row] for row in shares], texttemplate="%{text}",
        hoverongaps=False,
        colorbar=dict(title="row wins", tickformat=".0%"),
        hovertemplate="%{customdata[0]} beats %{customdata[1]} in %{z:.1%} of their "
                      "comparisons<extra></extra>"))
    # The opponents' axis at the bottom: plotly's toolbar (top right, on hover) never covers
    # its title. The figure grows with the number of systems and the longest label.
    ticks = dict(tickmode="array", tickvals=list(range(n)), ticktext=cut, showgrid=False,
                 zeroline=False, automargin=True)
    heat.update_layout(**square_chart_layout(cut),
                       xaxis=dict(title="opponent", side="bottom", tickangle=-45, **ticks),
                       yaxis=dict(title="system", autorange="reversed", **ticks))
    show_chart(st, heat, key="board_heatmap", width="stretch")
    st.caption(f"Share of the comparisons between the row system and the column system (both "
               f"orders, all contexts) won by the row system at {at_tau(tau)}; empty where "
               "they never met. Systems in leaderboard order.")
with right:
    st.subheader("Length")
    lb, lc = board.length, board.length_controlled
    length_bias_metrics(st, lb, "comparisons between systems", tau=tau)
    st.metric("Length term of the joint length-adjusted GLM (log-odds)",
              fmt(lc.length_coef, "+.3f"),
              help="gamma in logit p = theta_A - theta_B + gamma tanh(d / sd(d)) + b, with "
                   "d = log(len A / len B): CompAssess's joint GLM, after Dubois et al. 2024's "
                   "length feature (not AlpacaEval's per-system estimator).")
    st.caption("The length-adjusted columns answer 'what if both texts had the same length and "
               "neither came first?': they drop the GLM's length and position terms "
               f"(position term here {fmt(lc.position_coef, '+.3f')} log-odds). Lengths in "
               "characters.")

st.subheader("Export")
fmt_choice = st.radio("Format", FORMATS, horizontal=True, key="board_format")
exported = run.leaderboard_bytes(fmt=fmt_choice, method=method, debias=tau,
                    reference=reference, baseline=baseline, n_boot=int(n_boot))
safe = api.file_name(run.name)
download_with_settings(st.columns(2), exported.data, exported.sidecar, f"{safe}-leaderboard",
                       fmt_choice, "dl_board")
st.caption("The same table as `compassess leaderboard --run NAME [--baseline SYSTEM] --format "
           "csv|json`; JSON holds the run's settings, the method, tau, the baseline, the votes per "
           "pair and the interval settings inside, CSV and Parquet in a .settings.json sidecar.")

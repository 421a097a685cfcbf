"""Agreement: how an LLM run agrees with people, and people with each other, on one dataset and
aspect — raw (tau = 0.5) and at the current tau side by side.

Every number comes from ``compassess_core.stats.agreement`` (``agreement_summary`` is exactly what
``compassess agreement`` prints); this page only lays them out, labelled with what they were
computed on. An annotator sees none of the judge (no run, no probability, no prompt): only, for each
campaign they are assigned to, their own answers and how they agree with the other annotators'
(``api.Campaign.agreement_of``, naming nobody). It must never compute a statistic itself, and never
render user text as markdown (``plain``).
"""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from compassess_core.stats.agreement import CLASS_NAMES
from compassess_core import api
from pages._auth import guard
from pages._common import (api_store, at_tau, fit_columns, fmt, judge_warning, page_run, partial_warning, plain,
                           show_chart, tau_control)
from pages._comparison import comparison_view
from pages._judges import calibration_section
from compassess_core.api import counted

me = guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)


def interval(lo_hi, unit: str) -> str:
    """A 95% interval as the metrics above it show their value ("n/a" when not computed)."""
    if not lo_hi or lo_hi[0] is None or lo_hi[1] is None:
        return "n/a"
    if unit == "%":
        return f"{100 * lo_hi[0]:.1f}-{100 * lo_hi[1]:.1f} %"
    if unit == "x100":
        return f"{lo_hi[0]:.1f} to {lo_hi[1]:.1f}"
    return f"{lo_hi[0]:.3f} to {lo_hi[1]:.3f}"


def annotator_agreement() -> None:
    """An annotator's own agreement, campaign by campaign: their answers only."""
    mine = api_store().campaigns(for_identity=me.identity)
    if not mine:
        st.info("You have no annotation campaign yet: your agreement with the other annotators "
                "shows here once you label in one.", icon=":material/assignment:")
        return
    for campaign in mine:
        with st.container(border=True):
            st.subheader(f"Campaign {plain(campaign.name)}")
            own = campaign.my_labels(me.identity)
            agree = campaign.agreement_of(me.identity)
            cols = st.columns(3)
            cols[0].metric("Your answers", f"{len(own):,}")
            min_others, batch = agree["min_others"], agree["batch"]
            if agree["n_items"]:
                cols[1].metric("Pairs shared with others", f"{agree['n_items']:,}",
                               help=f"Your pairs that at least {min_others} others "
                                    f"labelled too, counted in batches of {batch}.")
                cols[2].metric("Agreement with the others",
                               fmt(100 * agree["agreement"], ".0f") + " %",
                               help=f"Share of your votes that matched another annotator's on "
                                    f"those {counted(agree['n_items'], 'pair')} (whole percent); "
                                    f"Cohen's "
                                    f"kappa {fmt(agree['kappa'], '.2f')}, every pair counted in "
                                    f"both orientations. Refreshed once "
                                    f"{batch} more of your pairs have been labelled by "
                                    f"at least {min_others} others.")
            elif agree.get("withheld", True):
                # Recomputed after each answer, the figure would tell how a co-annotator voted:
                # the engine gives it in batches of pairs that several others labelled.
                hidden_help = (f"Shown once {batch} of your pairs have each been "
                               f"labelled by at least {min_others} other annotators, "
                               "and refreshed in such batches: sooner, it would tell how each "
                               "of them voted.")
                cols[1].metric("Pairs shared with others", "hidden", help=hidden_help)
                cols[2].metric("Agreement with the others", "hidden", help=hidden_help)
            else:
                cols[1].metric("Pairs shared with others", "0")
                cols[2].metric("Agreement with the others", "n/a",
                               help="You have not answered a pair yet.")
            if len(own):
                shown = own[["context_id", "candidate_left", "candidate_right", "winner",
                             "comment", "created_at"]]
                st.dataframe(plain(shown, into="text"), hide_index=True, width="stretch", placeholder="")


if not me.is_admin:
    st.title("Agreement with people")
    annotator_agreement()
    st.stop()
run = page_run("Agreement with people")  # pairwise runs only: human labels are pairwise too
if run.n_comparisons == 0:
    st.warning(f"Run {plain(run.name)} has comparisons, but none matches its dataset's candidates.")
    st.stop()
tau = tau_control(run)
partial_warning(run)
judge_warning(run, tau)

all_human = run.store.human_labels(run.info.dataset_id)
if not me.is_admin:  # an annotator's own agreement: their labels only
    all_human = all_human.loc[all_human["annotator"] == me.identity].reset_index(drop=True)
aspects = sorted(set(all_human["aspect"].astype(str)))
run_aspect = run.settings.aspect
if not aspects:
    st.info(f"No human labels for dataset {plain(run.dataset.name)} yet. Judge pairs or import a label "
            "file on **Annotate**; this page then compares them with the run.",
            icon=":material/rate_review:")
    st.page_link("pages/annotate.py", label="Go to Annotate", icon=":material/rate_review:")
    st.stop()
options = aspects if run_aspect in aspects else [run_aspect, *aspects]
aspect = st.sidebar.selectbox("Human labels of aspect", options, index=options.index(run_aspect),
                              key="agreement_aspect", format_func=lambda a: plain(a, "text"),
                              help=f"The run judged {plain(run_aspect)}; compare it with people's "
                                   "labels of the same aspect.")
human = all_human.loc[all_human["aspect"] == aspect].reset_index(drop=True)
if len(human) == 0:
    st.warning(f"No human labels of aspect {plain(aspect)} for dataset {plain(run.dataset.name)} "
               f"(there are labels of: {', '.join(map(plain, aspects))}). Pick one of those in the "
               "sidebar, or annotate "
               f"this aspect on **Annotate**.")
    st.stop()
if aspect != run_aspect:
    st.warning(f"The run judged {plain(run_aspect)} but these labels are for {plain(aspect)}.",
               icon=":material/warning:")

ties = st.sidebar.selectbox(
    "LLM tie verdict", ("none", "flip"), key=f"agreement_ties_{run.name}",
    format_func=lambda t: {"none": "never (always A or B)",
                           "flip": "a verdict that flips with the order is a tie"}[t],
    help="FastChat's rule for MT-Bench: a pair judged in both orders whose verdict changes with "
         "the order counts as a tie, so agreement 'with ties' is comparable with MT-Bench's.")
with st.spinner("Computing agreement ..."):
    bundle = run.agreement(labels=human, debias=tau, ties=ties)
summary, report = bundle.summary, bundle.report
llm = summary["llm_vs_human"]
st.caption(f"Run {plain(run.name)} vs {llm['n_judgements']:,} human judgements of "
           f"{plain(aspect)} by {len(llm['annotators'])} annotator(s) "
           f"({llm['n_skipped']} skips left out). {llm['n_pairs_matched']:,} of "
           f"{llm['n_pairs_labelled']:,} labelled pairs were also judged by the run: only those are "
           "scored, each against the majority vote of its annotators (a tied vote is a tie).")

# ----------------------------------------------------------------------- LLM vs humans
st.header("LLM vs humans (majority vote)")
for line in summary["caution"]:
    st.info(f"Few labels, so read with care: {plain(line, 'text')}.", icon=":material/info:")
cols = st.columns(2)
#: (key in the summary, metric label, unit); shown in this order, ties left out first.
SCORES = (("accuracy_without_ties", "Raw agreement", "%"), ("kappa_without_ties", "Kappa", ""),
          ("accuracy_with_ties", "Raw agreement", "%"), ("kappa_with_ties", "Kappa", ""))
for col, which, title in ((cols[0], "raw", "Raw (tau = 0.5)"),
                          (cols[1], "debiased", f"At the current {at_tau(tau, 4)}")):
    m = llm[which]
    with col.container(border=True):
        st.subheader(title)
        for row, (scope, n_pairs) in enumerate((
                ("Ties left out", counted(m['n_without_ties'], "pair")),
                ("Ties kept", f"{counted(m['n_with_ties'], 'pair')}, "
                              f"{counted(m['n_human_ties'], 'human tie')}, "
                              f"{counted(m['n_llm_ties'], 'LLM tie')}"))):
            st.caption(f"**{scope}** (on {n_pairs})")
            inner = st.columns(2)
            for k, (key, label, unit) in enumerate(SCORES[2 * row: 2 * row + 2]):
                value = m[key]
                shown = (fmt(None if value is None else 100 * value, ".1f") + " %" if unit == "%"
                         else fmt(value, ".3f"))
                delta = None
                raw_value = llm["raw"][key]
                if which == "debiased" and value is not None and raw_value is not None \
                        and abs(value - raw_value) > 5e-4:
                    change = value - raw_value
                    delta = (f"{100 * change:+.1f} pts vs raw" if unit == "%"
                             else f"{change:+.3f} vs raw")
                inner[k].metric(label, shown, delta=delta,
                                help=f"{label} of the LLM vs the majority vote, {which}, "
                                     f"{'without' if 'without' in key else 'with'} ties, on "
                                     f"{n_pairs}")
                inner[k].caption(f"95% CI {interval(m.get(key + '_ci95'), unit)} "
                                 f"(contexts, then {n_pairs} resampled)")
        v = m.get("votes")
        if v:
            st.caption(f"Every vote against the LLM (FastChat's unit): "
                       f"{fmt(None if v['accuracy_with_ties'] is None else 100 * v['accuracy_with_ties'], '.1f')} % "
                       f"with ties ({v['n_with_ties']} votes), "
                       f"{fmt(None if v['accuracy_without_ties'] is None else 100 * v['accuracy_without_ties'], '.1f')} % "
                       f"without ({v['n_without_ties']} votes).")
st.caption("Raw agreement is the share of pairs on which the LLM and the majority say the same. "
           "'Without ties' drops the pairs on which either side says tie (2 classes, as MT-Bench "
           "reports); 'with ties' keeps them, a tie agreeing only with a tie. "
           "Kappa is Cohen's kappa with every pair counted in both orientations, so the "
           "candidates' names cannot change it (1 = perfect, 0 = chance: "
           # its products (d1*d2) as written, not markdown's italics
           f"{summary['kappa_chance_model'].replace('*', chr(92) + '*')}). 95% CI: "
           f"{summary['intervals']['method']}, {summary['intervals']['n_boot']:,} replicates"
           + ("; tau* re-estimated in each" if llm["debiased"].get("tau_reestimated") else "")
           + " (`compassess agreement` prints the same); below "
           f"{summary['small_sample_pairs']} pairs the numbers carry a caution.")
for note in llm["notes"]:
    st.caption(f"Note: {note}.")


def confusion_figure(conf: np.ndarray, title: str) -> go.Figure:
    fig = go.Figure(go.Heatmap(z=conf, x=[f"LLM: {c}" for c in CLASS_NAMES],
                               y=[f"human: {c}" for c in CLASS_NAMES], colorscale="Blues",
                               text=conf, texttemplate="%{text}", showscale=False,
                               hovertemplate="%{y}<br>%{x}<br>%{z} pairs<extra></extra>"))
    fig.update_layout(title=title, height=330, margin=dict(l=10, r=10, t=50, b=10),
                      yaxis=dict(autorange="reversed"))
    return fig


st.subheader("Confusion matrices (pairs, majority vote)")
st.caption("Rows: the humans' majority; columns: the LLM. Classes refer to each pair's candidates "
           "in id order (first-listed = the smaller id), whatever order anyone saw them in.")
c1, c2 = st.columns(2)
show_chart(c1, confusion_figure(report.raw.majority.confusion, "Raw (tau = 0.5)"),
                key="confusion_raw", width="stretch")
show_chart(c2, confusion_figure(report.debiased.majority.confusion,
                                 f"At {at_tau(tau, 4)}"),
                key="confusion_debiased", width="stretch")
with st.expander("Every annotator alone, raw and at tau", expanded=False):
    st.dataframe(plain(report.summary_frame(), "text"), hide_index=True, width="stretch",
                 column_config={"accuracy_with_ties": st.column_config.NumberColumn(format="%.3f"),
                                "accuracy_without_ties": st.column_config.NumberColumn(format="%.3f"),
                                "kappa_with_ties": st.column_config.NumberColumn(format="%.3f"),
                                "kappa_without_ties": st.column_config.NumberColumn(format="%.3f"),
                                "tau": st.column_config.NumberColumn(format="%.4f")}, placeholder="")

# ----------------------------------------------------------------------- human vs human
st.header("Human vs human")
hh = bundle.human_human
if not me.is_admin:
    st.info("Agreement between people is shown to admins; this page shows your own labels.")
elif hh.n_items == 0:
    st.info("No pair has been labelled by two or more annotators yet. Choose 'pairs other "
            "annotators labelled' on **Annotate** to build an overlap.")
else:
    h1, h2, h3, h4 = st.columns(4)
    h1.metric("Pairs labelled by 2+ annotators", f"{hh.n_items:,}",
              help=f"{counted(hh.n_annotators, 'annotator')} share at least one pair")
    h2.metric("Raw agreement between people", fmt(100 * hh.percent_agreement, ".1f") + " %",
              help="Share of agreeing annotator pairs over all shared pairs (3 classes)")
    h3.metric("Cohen's kappa (2 annotators)",
              fmt(hh.cohen_kappa, ".3f") if hh.cohen_kappa is not None else "n/a",
              help="Defined when exactly two annotators share pairs; every pair counted in both "
                   "orientations")
    h4.metric("Krippendorff's alpha (nominal)", fmt(hh.krippendorff_alpha, ".3f"),
              help="Any number of annotators, missing labels allowed; every pair counted in "
                   "both orientations")
    st.caption(f"On {counted(hh.n_items, 'pair')} labelled by at least two of "
               f"{counted(hh.n_annotators, 'annotator')}; "
               "classes: first-listed better / second-listed better / tie.")
    if len(hh.pairwise):
        st.dataframe(plain(hh.pairwise, "text"), hide_index=True, width="stretch",
                     column_config={"agreement": st.column_config.NumberColumn(format="%.3f"),
                                    "kappa": st.column_config.NumberColumn(format="%.3f")}, placeholder="")

# ----------------------------------------------------------------------- positional bias
st.header("Positional bias: people vs the LLM")
bias = bundle.positional_bias
b1, b2 = st.columns([1, 1])
fig = go.Figure(go.Bar(x=bias.index.tolist(), y=bias["share_first"].to_numpy(dtype=float),
                       text=[fmt(v, ".3f") for v in bias["share_first"]], textposition="outside",
                       marker_color=["#e67700", "#3b5bdb", "#74c0fc"]))
fig.add_hline(y=0.5, line_dash="dash", annotation_text="no bias (0.5)",
              annotation_position="top left")
fig.update_layout(height=320, margin=dict(l=10, r=10, t=30, b=10),
                  yaxis=dict(title="share won by the first / left position", range=[0, 1.1]))
show_chart(b1, fig, key="bias_chart", width="stretch")
with b2:
    shown = plain(bias.reset_index().rename(columns={"share_first": "share first/left",
                                                     "n": "judgements"}), "text")
    # Half of what a 1024 px window leaves is about 315 px: who judged gets 150 of them (a
    # longer name shows whole where its cell is clicked), the two numbers a small column each.
    st.dataframe(shown, hide_index=True, width="stretch", placeholder="",
                 column_config={shown.columns[0]: st.column_config.Column(width=150),
                                "share first/left": st.column_config.NumberColumn(
                                    format="%.3f", width="small"),
                                "judgements": st.column_config.NumberColumn(width="small")})
    st.caption("People: share of their decisive app judgements (ties, skips and imported labels left "
               "out) that picked the left text. LLM: P(A), the share of comparisons won by the "
               "first position (eq. 8), raw and at the current tau (eq. 10).")

# ----------------------------------------------------------------------- rankings
st.header("Rankings: people alone vs the LLM")
rc = summary["ranking_correlation"]
human_rank = bundle.human_rankings
r1, r2 = st.columns([1, 3])
r1.metric("Spearman x100", fmt(rc["spearman_x100"], ".1f"),
          help=f"Per-context Spearman of the LLM's Bradley-Terry scores (at {at_tau(tau, 4)}) with "
               f"Bradley-Terry scores from human judgements alone, over {rc['n_used']} context(s)")
votes = rc.get("human_votes_per_context")
r1.caption(f"mean over {rc['n_used']} context(s) with human judgements"
           + ((f" ({votes[0]} human vote(s) in each)" if votes[0] == votes[1] else
               f" ({votes[0]} to {votes[1]} human votes per context)") if votes else "")
           + f"; 95% CI {interval(rc.get('spearman_x100_ci95'), 'x100')} (contexts resampled)")
if len(human_rank):
    llm_rank = run.rankings(method="bradley-terry", debias=tau)
    contexts = list(dict.fromkeys(human_rank["context_id"]))
    ctx_id = r2.selectbox("Context", contexts, key="agreement_rank_context",
                          format_func=lambda c: plain(c, "text"))
    side = (human_rank.loc[human_rank["context_id"] == ctx_id,
                           ["candidate_id", "rank", "score", "n_comparisons"]]
            .merge(llm_rank.loc[llm_rank["context_id"] == ctx_id,
                                ["candidate_id", "rank", "score"]],
                   on="candidate_id", suffixes=(" (people)", " (LLM)"))
            .sort_values("rank (people)"))
    side = side.rename(columns={"n_comparisons": "human votes"})
    r2.dataframe(plain(side, "text"), hide_index=True, width="stretch", placeholder="",
                 column_config=fit_columns(side, {  # fits its column at 1024 px
                     "score (people)": st.column_config.NumberColumn(format="%.3f"),
                     "score (LLM)": st.column_config.NumberColumn(format="%.3f")}))
    r2.caption("Both by Bradley-Terry: people's from their votes alone (a tie = half a win), the "
               f"LLM's from its comparisons at {at_tau(tau, 4)}. Rank 1 = best.")

# ----------------------------------------------------------------------- disagreements
st.header("Disagreements")
dis = bundle.disagreements
if len(dis) == 0:
    st.success(f"At {at_tau(tau, 4)} the LLM agrees with the majority vote on every scored pair.")
else:
    st.caption(f"{len(dis)} of {llm['n_pairs_matched']} scored pairs where the humans' majority "
               f"differs from the LLM at {at_tau(tau, 4)}, the LLM's most confident first (click a "
               "column header to sort). Select a row to open the comparison. confidence = "
               "|p_avg - 0.5| on the reweighted scale (eq. 9); p_xy = P(x better) with x first.")
    event = st.dataframe(plain(dis, "text"), hide_index=True, width="stretch", on_select="rerun",
                         selection_mode="single-row", key="disagreements_table",
                         column_config={c: st.column_config.NumberColumn(format="%.3f")
                                        for c in ("p_xy", "p_yx", "p_avg", "confidence")}, placeholder="")
    rows = (event or {}).get("selection", {}).get("rows", []) if event else []
    labels = [plain(f"{r.context_id}: {r.x} vs {r.y} (humans: {r.human}, LLM: {r.verdict}, "
                    f"confidence {r.confidence:.3f})", "text") for r in dis.itertuples(index=False)]
    with st.expander("Or choose a disagreement from a list", expanded=False):
        picked = st.selectbox("Disagreement", range(len(dis)), format_func=labels.__getitem__,
                              index=None, key="disagreement_pick", placeholder="Choose one")
    chosen = rows[0] if rows else picked
    if chosen is not None:
        row = dis.iloc[int(chosen)]
        st.subheader("Human answers on this pair")
        pair = {row["x"], row["y"]}
        answers = human.loc[(human["context_id"] == row["context_id"])
                            & human["candidate_left"].isin(pair) & human["candidate_right"].isin(pair),
                            ["annotator", "candidate_left", "candidate_right", "winner", "seconds",
                             "source"]]
        st.dataframe(plain(answers, "text").rename(columns={"candidate_left": "shown left (A)",
                                             "candidate_right": "shown right (B)",
                                             "winner": "answer (A = left)"}),
                     hide_index=True, width="stretch", placeholder="")
        x, y = plain(row["x"]), plain(row["y"])
        st.caption(f"Majority: {plain(row['human'])} ({row['n_x']} for {x}, {row['n_y']} for "
                   f"{y}, {row['n_tie']} ties). The LLM picks {plain(row['verdict'])}: "
                   f"p({x} first) = {fmt(row['p_xy'], '.3f')}, p({y} first) = "
                   f"{fmt(row['p_yx'], '.3f')}.")
        comparison_view(run, str(row["context_id"]), str(row["x"]), str(row["y"]), tau)

calibration_section(run, human, aspect)

# ----------------------------------------------------------------------- exports
st.header("Exports")
e1, e2, e3 = st.columns(3)
for col, fmt_name, mime in ((e1, "csv", "text/csv"), (e2, "json", "application/json")):
    exported = api_store().human_labels_bytes(run.info.dataset_id, aspect, fmt_name)
    col.download_button(f"Human judgements ({fmt_name.upper()}, {counted(len(human), 'row')})",
                        exported.data, mime=mime, icon=":material/download:",
                        file_name=api.file_name(run.dataset.name, aspect, "human-judgements",
                                                suffix=f".{fmt_name}"),
                        key=f"dl_human_{fmt_name}", on_click="ignore")
report_json = json.dumps({"run": run.name, "labels": f"stored labels for aspect '{aspect}'",
                          **summary}, indent=2, default=lambda o: None)
e3.download_button("Agreement report (JSON)", report_json.encode("utf-8"),
                   file_name=api.file_name(run.name, "agreement", suffix=".json"),
                   mime="application/json", icon=":material/download:", key="dl_report",
                   on_click="ignore")
st.caption("CSV cells that a spreadsheet would run (=, +, -, @) are prefixed with '. The report "
           "JSON is what `compassess agreement --run NAME --json` prints.")

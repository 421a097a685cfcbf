"""Scores: absolute scores of an absolute run (candidates compared with synthetic references of
quality 1..N), a threshold with pass/fail, the comparisons behind each score, and the references
themselves (plain text, editable, regenerable, or replaced by uploaded anchors).

Every number comes from ``compassess_core.runs.absolute`` read through the Python API's ``Run`` (as
``compassess rank|evaluate`` read it: ``evaluation``, ``rankings``, ``score_range``,
``comparisons_behind``, ``reference_set``) and every read/write goes through the Python API's
``Store``;
this page must never compute a score itself, never run the judge (a worker does), and shows user
texts only as plain text (``st.text``, ``st.text_area``, ``st.dataframe``) and names only through
``plain``.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from compassess_core.runs import absolute as ab
from compassess_core import api
from compassess_core.api import max_upload_bytes, max_upload_mb
from compassess_core.errors import CompAssessError, ValidationError
from pages import _view as view
from pages._auth import guard, require
from pages._plain import plain_message
from pages._common import (AppRun, api_store, fmt, list_runs, partial_warning, pick_object, plain,
                           preview, show_chart, show_problems_table)
from compassess_core.api import counted

guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

SCORE_LABELS = {"level": "calibrated level (1..N)", "score": "paper score s = sum_i i(P(B|i) - P(W|i))"}


guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

st.title("Scores")
view.show_problems()
runs = [r for r in list_runs() if r.kind == ab.KIND]
if not runs:
    st.info("No absolute-score run yet. On **Run**, choose the mode *absolute scores*: every candidate "
            "is compared with synthetic references of quality 1..N and gets a score you can "
            "threshold. From the command line: `compassess score DATA --aspect coherence`.")
    st.page_link("pages/run.py", label="Go to Run", icon=":material/play_arrow:")
    st.stop()

by_id = {r.id: r for r in runs}
# Over the runs' ids (a rename changes a label, never the choice), the view's ``abs_run``.
chosen = pick_object("abs_run", list(by_id),
                     lambda i: f"{plain(by_id[i].name, 'text')} "
                               f"[{by_id[i].progress(refresh=False).state_text}]",
                     what="absolute-score run", label="Absolute run")
if chosen is None:
    st.stop()
# Keyed by the heartbeat too (AppRun): edited references replace comparisons without changing
# the count.
run = AppRun(by_id[chosen])
settings = run.settings
n_levels = settings.reference_options.n_levels
orders = ab.ORDERS[settings.reference_options.orders]
dataset = run.dataset
frame, table = run.results
ref_set = run.reference_set
dataset_id = run.info.dataset_id

st.caption(f"Aspect {plain(settings.aspect)}, {n_levels} reference levels, orders: {', '.join(orders)}, "
           f"label words {' / '.join(w.strip() for w in settings.label_words)}; "
           f"{counted(len(frame), 'comparison')} stored ({run.info.status}).")
if run.progress(refresh=False).active:
    st.info("The run is still working: scores appear as candidates complete.", icon=":material/hourglass_top:")
else:
    partial_warning(run)

score = st.sidebar.radio("Score", list(ab.SCORES), format_func=SCORE_LABELS.get, key="abs_score",
                         help="level: where the candidate sits among the references, 1..N "
                              "(0.5 + sum_i [P(Better|i) + P(Similar|i)/2], clipped). score: the "
                              "paper's s, in -N(N+1)/2 .. N(N+1)/2.")
lo, hi = run.score_range(score)
threshold = st.sidebar.slider("Threshold (pass when score >= threshold)", min_value=lo, max_value=hi,
                              value=(lo + hi) / 2, step=(hi - lo) / 100, key=f"abs_threshold_{score}")
refs = list(dataset.score_columns)
reference = st.sidebar.selectbox("Reference score column", refs or ["(none)"], disabled=not refs,
                                 index=refs.index(settings.aspect) if settings.aspect in refs else 0,
                                 format_func=lambda c: plain(c, "text"))
reference = reference if refs else None
ev = run.evaluation(score=score, reference=reference, threshold=threshold)

m1, m2, m3, m4 = st.columns(4)
m1.metric("Candidates passing", f"{ev.n_pass} of {ev.n_scored}",
          help=f"{SCORE_LABELS[score]} >= {threshold:.2f}; unfinished candidates are not counted.")
m2.metric("Pass rate", fmt(ev.pass_rate, ".1%"))
m3.metric("Sample-level Spearman x100", fmt(ev.sample_spearman_x100),
          help="Within each context, averaged over contexts, against the reference column.")
m4.metric("Summary-level Spearman x100", fmt(ev.summary_spearman_x100),
          help="All candidates of all contexts pooled: rewards scores comparable across contexts.")
st.caption(f"System-level Spearman x100: {fmt(ev.system_spearman_x100)}; "
           f"P(Better) / P(Worse) about the first text: {fmt(ev.p_first_better, '.3f')} / "
           f"{fmt(ev.p_first_worse, '.3f')} (equal for an order-blind judge); mean level gap "
           f"between orders: {fmt(ev.order_gap, '.2f')}.")

values = table[score].dropna()
fig = go.Figure(go.Histogram(x=values, nbinsx=min(40, max(10, len(values) // 3)), name="candidates"))
fig.add_vline(x=threshold, line_dash="dash", line_color="firebrick")
# The label above the plot area, so it never sits on the bars.
fig.add_annotation(x=threshold, y=1.0, xref="x", yref="paper", yanchor="bottom", yshift=2,
                   xanchor="left", xshift=4, showarrow=False, text=f"threshold {threshold:.2f}",
                   font=dict(color="firebrick"))
fig.update_layout(height=290, margin=dict(l=10, r=10, t=40, b=10), xaxis_title=SCORE_LABELS[score],
                  yaxis_title="candidates", xaxis_range=[lo, hi])
show_chart(st, fig, key="abs_hist", width="stretch")

st.subheader("Scores")
# Ranked within each context with pass/fail at the threshold: `compassess rank --score --threshold`.
ranked = run.rankings(score=score, threshold=threshold)
shown = ranked.assign(text=ranked["text"].map(preview))
columns = ["context_id", "rank", "candidate_id", "system", "level", "score", "pass", "n_comparisons"]
columns += ([reference] if reference else []) + ["text"]
st.dataframe(plain(shown[columns], into="text"), hide_index=True, width="stretch",
             height=min(35 * (len(shown) + 1) + 3, 420),
             column_config={"level": st.column_config.NumberColumn("level", format="%.3f"),
                            "score": st.column_config.NumberColumn("score s", format="%.3f"),
                            # in view while the table scrolls sideways (at 1024 px)
                            "candidate_id": st.column_config.TextColumn("candidate_id",
                                                                        pinned=True),
                            "text": st.column_config.TextColumn("text (preview)", width="medium")},
             placeholder="")
exported = run.export_bytes(what="rankings", fmt="csv", score=score, threshold=threshold)
st.download_button("Download scores with pass/fail (CSV)", exported.data,
                   file_name=api.file_name(run.name, "scores", suffix=".csv"),
                   mime="text/csv", icon=":material/download:", on_click="ignore")

st.subheader("Why this score: the comparisons behind it")
scored = table[table["n_comparisons"] > 0]
if len(scored):
    keys = list(zip(scored["context_id"], scored["candidate_id"]))
    pick = st.selectbox("Candidate", range(len(keys)), key="abs_pick",
                        format_func=lambda k: plain(f"{keys[k][0]} / {keys[k][1]}", "text"))
    cid, cand = keys[pick]
    row = scored.iloc[pick]
    st.text(dataset.context(cid).candidates[dataset.context(cid).candidate_ids.index(cand)].text)
    st.caption(f"level {fmt(row['level'], '.3f')}, score s {fmt(row['score'], '.3f')}")
    behind = run.comparisons_behind(cid, cand)
    book = {r.level: r.text for r in api_store().references(dataset_id, settings.aspect, ref_set)
            if r.context_id == cid}
    behind = behind.assign(reference=behind["level"].map(lambda lv: preview(book.get(int(lv), ""), 80)))
    st.dataframe(plain(behind[["level", "order", "pb_target", "pw_target", "ps_target", "contribution",
                             "label_mass", "reference"]], "text"), hide_index=True, width="stretch",
                 column_config={"pb_target": st.column_config.NumberColumn("P(target better)", format="%.3f"),
                                "pw_target": st.column_config.NumberColumn("P(target worse)", format="%.3f"),
                                "ps_target": st.column_config.NumberColumn("P(similar)", format="%.3f"),
                                "contribution": st.column_config.NumberColumn("level x (P(B) - P(W))", format="%.3f"),
                                "label_mass": st.column_config.NumberColumn("label mass", format="%.3f")}, placeholder="")

st.subheader("References")
context_ids = [c.context_id for c in dataset.head(settings.contexts).contexts]
ctx_id = st.selectbox("Context", context_ids, key="abs_ref_context",
                      format_func=lambda c: plain(c, "text"))
stored = {r.level: r for r in api_store().references(dataset_id, settings.aspect, ref_set)
          if r.context_id == ctx_id}
with st.expander("Context text"):
    st.text(dataset.context(ctx_id).text)
if not stored:
    st.info("No references stored for this context yet: the run writes them before scoring it.")
edited = {}
for level in range(1, n_levels + 1):
    ref = stored.get(level)
    label = f"Level {level}" + (f" ({ref.source})" if ref else " (missing)")
    edited[level] = st.text_area(label, value=ref.text if ref else "", key=f"ref_{run.id}_{ctx_id}_{level}",
                                 height=90)
c1, c2 = st.columns(2)
if c1.button("Save edits", icon=":material/save:", key="abs_save"):
    require()  # the person holds the role now (pages/_auth.py)
    changed = [ab.Reference(ctx_id, lv, t, "edited" if lv in stored else "uploaded")
               for lv, t in edited.items() if t.strip() and (lv not in stored or stored[lv].text != t)]
    if changed:
        api_store().save_references(dataset_id, settings.aspect, ref_set, changed)
        st.success(f"Saved {len(changed)} reference(s). Resume the run (Run page) to rescore the "
                   "comparisons that used them; nothing else is recomputed.")
    else:
        st.info("Nothing changed.")
if ref_set != ab.UPLOADED and c2.button("Regenerate this context's references", icon=":material/refresh:",
                                        key="abs_regen"):
    require()  # the person holds the role now (pages/_auth.py)
    n = api_store().delete_references(dataset_id, settings.aspect, ref_set, ctx_id)
    try:
        fresh = api_store().get_run(run.id, expect_name=run.name)
        if not fresh.progress(refresh=False).active:
            # refuses a served judge that is not configured: fail closed
            api_store().job("run", fresh).start()
        st.success(f"Deleted {n} reference(s) of {plain(ctx_id)}; the run's worker writes new ones "
                   "and rescores.")
    except CompAssessError as e:
        st.error(f"Deleted {n} reference(s), but the worker did not start: {plain_message(e)}")

with st.expander("Upload your own anchor texts (CSV: context_id, level, text)"):
    up = st.file_uploader(f"Anchor CSV (at most {max_upload_mb()} MB)", type=["csv"],
                          key="abs_anchors", max_upload_size=max_upload_mb())
    if up is not None and st.button("Use these anchors for this run", key="abs_use_anchors"):
        require()  # the person holds the role now (pages/_auth.py)
        try:
            if up.size > max_upload_bytes():
                raise CompAssessError(f"{up.name} is larger than {max_upload_mb()} MB")
            n = api_store().save_anchors(dataset_id, settings.aspect, up.getvalue(),
                                         n_levels=n_levels, reference_set=ref_set,
                                         file_label=up.name)
            st.success(f"Stored {n} anchor text(s). Resume the run to rescore with them.")
        except ValidationError as e:
            st.error(f"{len(e.problems)} problem(s) in {plain(up.name)}; nothing was stored.")
            show_problems_table(e)
        except CompAssessError as e:
            st.error(plain_message(e))

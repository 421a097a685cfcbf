"""Rankings: per-context (or all-context) rankings of a run, with the ranking method, the tau control,
and correlations with a reference-score column, raw and at the current tau side by side.

Every number comes from ``compassess_core.analysis`` (cached per run and tau); this page must never
compute a score or a correlation itself, and shows candidate texts only through ``st.dataframe``.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages._common import (cached_evaluation, cached_ranking, fmt, preview, result_page_header)

header = result_page_header("Rankings")
if header is None:
    st.stop()
view, tau, method = header
url, dataset_id, run_id, n = view.key

ALL = "(all contexts)"
c1, c2, c3 = st.columns([2, 2, 1])
context = c1.selectbox("Context", [ALL] + view.context_ids, key="rank_context")
refs = list(view.dataset.score_columns)
reference = c2.selectbox("Reference score column", refs or ["(none in this dataset)"],
                         index=0, disabled=not refs)
reference = reference if refs else None
with_ci = c3.checkbox("Bootstrap 95% CI", value=n <= 5_000,
                      help="200 resamples of each context's comparisons; slower on big runs.")

ev = cached_evaluation(url, dataset_id, run_id, n, method, reference, tau)
raw = cached_evaluation(url, dataset_id, run_id, n, method, reference, 0.5)
n_ctx = len(view.parts)
m1, m2, m3 = st.columns(3)
m1.metric(f"P(A) at tau = {tau:.3f}", fmt(ev.p_a, ".2f"),
          help=f"Share of {len(view.all_p):,} comparisons won by the first position (eq. 8); "
               "0.50 means no positional bias.")
m2.metric("P(B)", fmt(ev.p_b, ".2f"), help="Share won by the second position.")
m3.metric("tau* (balancing threshold)", f"{view.tau_star:.3f}",
          help="Median of all p_ij: the threshold at which P(A) = P(B) = 0.5 (eq. 10).")
st.caption(f"P(A): share of {len(view.all_p):,} comparisons won by the first position, over "
           f"{n_ctx} context(s), at tau = {tau:.3f}.")

if reference is not None:
    st.subheader(f"Agreement with '{reference}'")
    rows = [
        ("Spearman x100, mean over contexts", raw.spearman_x100, ev.spearman_x100, ".1f"),
        ("Kendall x100, mean over contexts", raw.kendall_x100, ev.kendall_x100, ".1f"),
        ("System-level Spearman x100", raw.system_spearman_x100, ev.system_spearman_x100, ".1f"),
        ("Pairwise accuracy (pairs whose reference scores differ)", raw.pairwise_accuracy,
         ev.pairwise_accuracy, ".3f"),
        ("P(A), first position wins", raw.p_a, ev.p_a, ".3f"),
    ]
    table = pd.DataFrame([dict(metric=m, raw_tau_0_5=fmt(r, s), current_tau=fmt(c, s))
                          for m, r, c, s in rows])
    table.columns = ["metric", "raw (tau = 0.5)", f"current (tau = {tau:.3f})"]
    st.dataframe(table, hide_index=True, width="stretch")
    st.caption(f"Correlations over {ev.contexts_used} context(s) "
               f"({ev.contexts_skipped} skipped: all reference scores equal); pairwise accuracy on "
               f"{ev.n_pairs_accuracy:,} pairs; method: {method}.")

st.subheader("Ranking" + ("" if context == ALL else f" of {context}"))
ranking = cached_ranking(url, dataset_id, run_id, n, method, tau, with_ci)
if context != ALL:
    ranking = ranking[ranking["context_id"] == context]
shown = ranking.assign(text=ranking["text"].map(preview))
columns = ["context_id", "rank", "candidate_id", "system", "score"]
if with_ci:
    columns += ["ci_low", "ci_high"]
columns += ([reference] if reference else []) + ["n_comparisons", "text"]
st.dataframe(
    shown[columns], hide_index=True, width="stretch", height=min(35 * (len(shown) + 1) + 3, 600),
    column_config={
        "rank": st.column_config.NumberColumn("rank", help="1 = best in its context"),
        "score": st.column_config.NumberColumn("score", format="%.4f",
                                               help=f"{method} score at tau = {tau:.3f}"),
        "ci_low": st.column_config.NumberColumn("CI 2.5%", format="%.4f"),
        "ci_high": st.column_config.NumberColumn("CI 97.5%", format="%.4f"),
        "text": st.column_config.TextColumn("text (preview)", width="large"),
        "n_comparisons": st.column_config.NumberColumn("comparisons", help="comparisons this candidate took part in"),
    })
st.caption(f"{len(shown):,} candidates; click a column header to sort. Scores: {method} at "
           f"tau = {tau:.3f}; texts are previews (full texts on Matrix and in exports).")

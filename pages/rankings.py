"""Rankings: per-context (or all-context) rankings of a run, with the ranking method, the tau control,
and correlations with a reference-score column, raw and at the current tau side by side.

A prompt-scoring run (paper §4.3.2 baseline, one score per candidate) is shown too: candidates
ranked by the G-Eval expected score with the argmax score beside it, and Spearman x100 of both
against a reference column; the method and tau controls do not apply to it and are not shown.

Every number comes from ``compassess_core.stats.analysis`` / ``compassess_core.runs.scoring`` (cached per run
and tau); this page must never compute a score or a correlation itself, and shows candidate texts
only through ``st.dataframe``.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages._auth import guard
from pages._common import (at_tau, ci_control, default_reference_index, fmt, is_scoring_run,
                           page_run, partial_warning, plain, preview, tau_effect_note)
from pages._judges import fused_section, run_with_probability_source
from compassess_core.api import counted

guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

ALL = "(all contexts)"
EXPECTED_HELP = "expected score, 1–10, from the model's distribution over the score tokens (G-Eval)"
ARGMAX_HELP = "argmax score, 1–10: the most probable score token (prompt scoring)"
RANK_BY = {"expected": "expected score (G-Eval)", "argmax": "argmax score (prompt scoring)"}


def scoring_rankings(run) -> None:
    """The Rankings view of a prompt-scoring run."""
    dataset, settings = run.dataset, run.settings
    done, status = int(run.info.done or 0), str(run.info.status)
    st.sidebar.info("Ranking method and decision threshold tau apply to pairwise runs only: a "
                    "prompt-scoring run ranks each context's candidates by their own scores, so "
                    "there are no comparisons to aggregate or debias.", icon=":material/info:")
    st.caption(f"Prompt-scoring run (paper §4.3.2 baseline): template {plain(settings.template_name)}, "
               f"aspect {plain(settings.aspect)}, model {plain(settings.model)}; "
               f"{counted(done, 'candidate')} scored ({plain(status)}). The model scores each "
               "candidate "
               "alone, 1–10.")
    if run.progress(refresh=False).active:
        st.info(f"Run {plain(run.name)} is still running "
                f"({done:,}/{counted(run.info.total or '?', 'candidate')} scored): "
                "numbers here use what is stored so far.", icon=":material/hourglass_top:")
    else:
        partial_warning(run)
    c1, c2, c3 = st.columns([2, 2, 1])
    which = c3.radio("Rank by", list(RANK_BY), format_func=RANK_BY.get, key="score_rank_by",
                     help=f"expected: {EXPECTED_HELP}. argmax: {ARGMAX_HELP}.")
    ranking = run.rankings(which=which)
    scored = set(ranking["context_id"])
    contexts = [c.context_id for c in dataset.contexts if c.context_id in scored]
    context = c1.selectbox("Context", [ALL] + contexts, key="score_rank_context",
                           format_func=lambda c: plain(c, "text"))
    refs = list(dataset.score_columns)
    reference = c2.selectbox("Reference score column", refs or ["(none in this dataset)"],
                             index=refs.index(settings.aspect) if settings.aspect in refs else 0,
                             disabled=not refs, key="score_reference",
                             format_func=lambda c: plain(c, "text"))
    reference = reference if refs else None

    if reference is not None:
        ev = run.evaluation(reference=reference).numbers
        g, a = ev["g_eval"], ev["prompt_scoring"]
        st.subheader(f"Agreement with {plain(reference)}")
        m1, m2, m3 = st.columns(3)
        m1.metric("Spearman x100, expected score (G-Eval)", fmt(g["spearman_x100"]),
                  help=f"Within each context, averaged over {g['contexts_used']} context(s); "
                       f"{EXPECTED_HELP}.")
        m2.metric("Spearman x100, argmax score", fmt(a["spearman_x100"]),
                  help=f"Within each context, averaged over {a['contexts_used']} context(s); "
                       f"{ARGMAX_HELP}.")
        m3.metric("Mean probability mass on the scores 1–10", fmt(ev["mean_label_mass"], ".3f"),
                  help=f"Over {ev['n_scored']:,} scored candidates: how much of the next-token "
                       "distribution falls on a valid score (scores are renormalised over it).")
        rows = [("Spearman x100, mean over contexts", "spearman_x100"),
                ("System-level Spearman x100", "system_spearman_x100"),
                ("Pooled Spearman x100 (all scored candidates together)", "pooled_spearman_x100")]
        table = pd.DataFrame([{"metric": label, RANK_BY["expected"]: fmt(g[key]),
                               RANK_BY["argmax"]: fmt(a[key])} for label, key in rows])
        st.dataframe(table, hide_index=True, width="stretch", placeholder="")
        st.caption(f"Spearman x100 against {plain(reference)} over {g['contexts_used']} context(s) "
                   f"({g['contexts_skipped']} skipped: constant scores or reference); "
                   f"{counted(ev['n_scored'], 'candidate')} scored; the same numbers as "
                   "`compassess evaluate --run NAME`.")

    st.subheader("Ranking by " + RANK_BY[which] + ("" if context == ALL else f" of {plain(context)}"))
    if context != ALL:
        ranking = ranking[ranking["context_id"] == context]
    shown = ranking.assign(text=ranking["text"].map(preview))
    columns = (["context_id", "rank", "candidate_id", "system", "score_expected", "score_argmax",
                "label_mass"] + ([reference] if reference else []) + ["text"])
    st.dataframe(
        plain(shown[columns], into="text"), hide_index=True, width="stretch",
        height=min(35 * (len(shown) + 1) + 3, 600),
        column_config={
            "rank": st.column_config.NumberColumn("rank", help=f"1 = best in its context by the {RANK_BY[which]}"),
            "score_expected": st.column_config.NumberColumn("expected score (G-Eval, 1–10)",
                                                            format="%.3f", help=EXPECTED_HELP),
            "score_argmax": st.column_config.NumberColumn("argmax score (1–10)", format="%.0f",
                                                          help=ARGMAX_HELP),
            "label_mass": st.column_config.NumberColumn(
                "mass on scores 1–10", format="%.3f",
                help="Probability the model put on the ten valid scores for this candidate."),
            "text": st.column_config.TextColumn("text (preview)", width="large"),
        }, placeholder="")
    st.caption(f"{len(shown):,} scored candidates, ranked within each context by the {RANK_BY[which]}; "
               "ties share the better rank. Expected score: 1–10, from the model's distribution "
               "over the score tokens; argmax score: the most probable score. Texts are previews "
               "(full texts in the exports).")


picked = page_run("Rankings", with_scoring=True)
if is_scoring_run(picked):
    scoring_rankings(picked)
    st.stop()
run, tau, method = run_with_probability_source(picked)
n = run.n_comparisons

c1, c2, c3 = st.columns(3)  # room for the whole 'Bootstrap 95% CI' label at 1024 px
context = c1.selectbox("Context", [ALL] + run.context_ids, key="rank_context",
                       format_func=lambda c: plain(c, "text"))
refs = list(run.dataset.score_columns)
reference = c2.selectbox("Reference score column", refs or ["(none in this dataset)"],
                         index=default_reference_index(refs, run), disabled=not refs,
                         key=f"rank_reference_{run.id}", format_func=lambda c: plain(c, "text"))
reference = reference if refs else None
with_ci = ci_control(c3, n)

ev = run.evaluation_at(debias=tau, method=method, reference=reference)
raw = run.evaluation_at(debias=0.5, method=method, reference=reference)
n_ctx = len(run.context_ids)
m1, m2, m3 = st.columns(3)
m1.metric(f"P(A) at {at_tau(tau)}", fmt(ev.p_a, ".2f"),
          help=f"Share of {counted(n, 'comparison')} won by the first position (eq. 8); "
               "0.50 means no positional bias.")
m2.metric("P(B)", fmt(ev.p_b, ".2f"), help="Share won by the second position.")
m3.metric("tau* (balanced)", f"{run.tau_star:.3f}",
          help="The balancing threshold: the median of all p_ij, at which P(A) = P(B) = 0.5 "
               "(eq. 10).")
st.caption(f"P(A): share of {counted(n, 'comparison')} won by the first position, over "
           f"{n_ctx} context(s), at {at_tau(tau)}.")
tau_effect_note(run, tau, method)

if reference is not None:
    st.subheader(f"Agreement with {plain(reference)}")
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
    table.columns = ["metric", "raw (tau = 0.5)", f"current ({at_tau(tau)})"]
    st.dataframe(table, hide_index=True, width="stretch", placeholder="")
    skipped = (f" ({ev.contexts_skipped} skipped: all reference scores equal)"
               if ev.contexts_skipped else "")
    st.caption(f"Correlations over {ev.contexts_used} context(s){skipped}; pairwise accuracy on "
               f"{counted(ev.n_pairs_accuracy, 'pair')}; "
               f"method: {method}.")

st.subheader("Ranking" + ("" if context == ALL else f" of {plain(context)}"))
ranking = run.rankings(method=method, debias=tau, ci=with_ci)
if context != ALL:
    ranking = ranking[ranking["context_id"] == context]
shown = ranking.assign(text=ranking["text"].map(preview))
columns = ["context_id", "rank", "candidate_id", "system", "score"]
if with_ci:
    columns += ["ci_low", "ci_high"]
columns += ([reference] if reference else []) + ["n_comparisons", "text"]
st.dataframe(
    plain(shown[columns], into="text"), hide_index=True, width="stretch",
    height=min(35 * (len(shown) + 1) + 3, 600),
    column_config={
        "rank": st.column_config.NumberColumn("rank", help="1 = best in its context"),
        "score": st.column_config.NumberColumn("score", format="%.4f",
                                               help=f"{method} score at {at_tau(tau)}"),
        "ci_low": st.column_config.NumberColumn("CI 2.5%", format="%.4f"),
        "ci_high": st.column_config.NumberColumn("CI 97.5%", format="%.4f"),
        "text": st.column_config.TextColumn("text (preview)", width="medium"),
        "n_comparisons": st.column_config.NumberColumn("comparisons", help="comparisons this candidate took part in"),
        # the candidate stays in view where the table scrolls sideways (at 1024 px)
        "candidate_id": st.column_config.TextColumn("candidate_id", pinned=True),
    }, placeholder="")
st.caption(f"{counted(len(shown), 'candidate')}; click a column header to sort. Scores: {method} "
           "at "
           f"{at_tau(tau)}{' on p calibrated on human labels' if run.calibration else ''}; texts are "
           "previews (full texts on Matrix and in exports).")

fused_section(run, tau, reference)

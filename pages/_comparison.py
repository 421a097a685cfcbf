"""The comparison view of the result pages (Matrix, Bias, Compare, Agreement): both texts side
by side, the exact prompt (with the judge's chat template on request: its tokenizer only), p in
both orders, and the judge's reasons (asked for in a worker process, never in the web server).

Everything comes from the Python API through the cached run (``AppRun``); every string a user
controls is shown through ``plain`` or as plain text.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from compassess_core.errors import CompAssessError
from compassess_core.runs.explanations import REASONS_LABEL, REASONS_NOTE
from pages._auth import recheck, require
from pages._common import (REPO_ROOT, AppRun, _run_handle, api_store, debias_in_use, fmt, plain)
from pages._plain import plain_message, plain_within

# ---------------------------------------------------------------------------- comparison view

@st.cache_data(show_spinner="Reading the judge's tokenizer to show its chat template ...",
               max_entries=64)
def _chat_prompt(key: tuple, context_id: str, first: str, second: str) -> str:
    """``Run.chat_prompt`` (the model's tokenizer only, never its weights), cached per run."""
    return _run_handle(*key).chat_prompt(context_id, first, second)


def open_comparison(context_id: str, first: str, second: str) -> None:
    st.session_state["open_comparison"] = (context_id, first, second)


def comparison_view(run: AppRun, context_id: str, first: str, second: str,
                    tau: float | str) -> None:
    """Both texts side by side, the exact prompt, p in both orders, label mass and a flip flag
    (``Run.comparison`` and ``Run.prompt``); ``tau`` as the tau control gives it (per-context
    balancing: this context's own tau*, ``Run.thresholds``)."""
    debias = debias_in_use()   # the tau control's mode: the reasons' verdicts read there too
    if isinstance(tau, str):
        tau = run.thresholds(debias=tau).get(context_id, 0.5)
    ctx = run.dataset.context(context_id)
    by_id = {c.candidate_id: c for c in ctx.candidates}
    fwd = run.comparison(context_id, first, second)
    rev = run.comparison(context_id, second, first)
    st.subheader(f"Comparison in context {plain(context_id)}")
    st.caption("Texts are shown exactly as stored (plain text, never rendered).")
    with st.expander("Context", expanded=False):
        st.text(ctx.text)
    left, right = st.columns(2)
    for col, cand, label in ((left, by_id[first], "A (first position)"),
                             (right, by_id[second], "B (second position)")):
        with col:
            st.markdown(f"**{label}:** {plain(cand.candidate_id)}"
                        + (f" — system {plain(cand.system)}" if cand.system else ""))
            st.text(cand.text)
    c1, c2, c3, c4 = st.columns(4)
    p_fwd = None if fwd is None else float(fwd["p"])
    p_rev = None if rev is None else float(rev["p"])
    a_id, b_id = plain(first), plain(second)
    c1.metric(f"p({a_id} first beats {b_id})", fmt(p_fwd, ".3f"))
    c2.metric(f"p({b_id} first beats {a_id})", fmt(p_rev, ".3f"))
    c3.metric("Label mass, this order",
              fmt(None if fwd is None else float(fwd.get("label_mass", np.nan)), ".3f"),
              help="P(w_A) + P(w_B): how much of the judge's next-token probability falls on "
                   "the two label words.")
    c4.metric("Label mass, swapped order",
              fmt(None if rev is None else float(rev.get("label_mass", np.nan)), ".3f"),
              help="P(w_A) + P(w_B) with the two texts swapped.")
    if p_fwd is not None and p_rev is not None:
        # Order-consistent verdicts name the same winner: first wins one order iff it loses the other.
        flips = (p_fwd > tau) == (p_rev > tau)
        winner_fwd = a_id if p_fwd > tau else b_id
        winner_rev = b_id if p_rev > tau else a_id
        if flips:
            st.error(f"The verdict FLIPS with the order at tau = {tau:.3f}: with {a_id} first the "
                     f"winner is {winner_fwd}; with {b_id} first the winner is {winner_rev}.",
                     icon=":material/swap_horiz:")
        else:
            st.success(f"Order-consistent at tau = {tau:.3f}: {winner_fwd} wins in both orders.",
                       icon=":material/check:")
    elif p_fwd is None:
        st.warning("This ordered pair was not compared in this run.")
    else:
        st.info("The swapped order was not compared in this run, so a flip cannot be checked.")
    explanation_view(run, context_id, first, second, debias=debias)
    kept = run.truncated_contexts.get(context_id)
    prompt = run.prompt(context_id, first, second)
    if kept is not None:
        st.warning(f"The context passage was truncated to its first {kept:,} of {len(ctx.text):,} "
                   "characters to fit the model's context window (the run's 'truncate long "
                   "contexts' setting); the prompt below is the one the judge saw.",
                   icon=":material/content_cut:")
    st.markdown("**The exact prompt sent** (user message, then the answer primer the model continues):")
    st.code(prompt.text, language=None, wrap_lines=True)
    st.code(prompt.primer, language=None)
    # A run's stored judge is not trusted (an imported store, an edited row): a served judge
    # whose server is not configured for this app is not offered (``Run.judge_problem``).
    if run.judge_problem is not None:
        st.caption("The chat-template view is not offered: this run's judge server is not one of "
                   "the servers configured for this app.")
        return
    if st.checkbox("Show it with the model's chat template (reads the model's tokenizer; the "
                   "model itself is not loaded)", key=f"chat_{run.id}_{context_id}_{first}_{second}"):
        require()  # reading a model's files in the web server is an admin's action
        try:
            st.code(_chat_prompt(run.key, context_id, first, second), language=None,
                    wrap_lines=True)
        except CompAssessError as e:
            st.warning(f"Could not read the judge's tokenizer to show its chat template: "
                       f"{plain_message(e)}")


# ------------------------------------------------------------------------ the judge's reasons

def _show_reasons(found) -> None:
    if found.contradiction is not None:
        st.warning(plain(found.contradiction), icon=":material/sync_problem:")
    cols = st.columns(len(found.orders))
    for col, order in zip(cols, found.orders):
        with col:
            st.markdown(f"**{plain(order.first)} in position A**")
            st.caption(plain_within(found.summary(order), [order.first, order.second]))
            if order.text is None:
                st.caption("Not asked yet.")
            else:
                st.text(order.text)


def _explain_job(run: AppRun, context_id: str, first: str, second: str):
    """The background job that asks the run's judge for its reasons on this pair (what it
    stores does not depend on the threshold the page reads the verdicts at)."""
    return api_store().job("explanation", run.id, context=context_id, first=first,
                           second=second)


def explanation_view(run: AppRun, context_id: str, first: str, second: str,
                     debias: str | float = "balanced") -> None:
    """The judge's reasons for its verdicts on this pair in both orders (``Run.explanation``,
    each order's verdict read at ``debias`` beside the judge's own answer), when stored;
    otherwise a button that asks for them in a worker process
    (``Store.job("explanation", ...).start()``: the judge never runs in the web server) and a view that shows
    them once stored. A judge that cannot write says so (the worker's message)."""
    st.markdown(f"**The judge's {REASONS_LABEL}** (it is told its answer, then asked why: "
                "not how it reached p, which they never change)")
    explain = getattr(run.api, "explanation", None)
    if explain is None:
        st.caption("A panel has no judge of its own: open a member run to ask its judge.")
        return
    try:
        found = explain(context_id, first, second, debias=debias)
    except CompAssessError as e:
        st.caption(f"No reasons to ask for: {plain_message(e)}")
        return
    if found.complete:
        _show_reasons(found)
        st.caption(f"{REASONS_NOTE} Written by the run's judge (at most {found.max_tokens} "
                   "tokens per order, greedy); stored with the judge and the prompt, so "
                   "`compassess explain` prints the same text.")
        return
    # Watched as every background job is (``Job.status``): live while its worker process runs,
    # whichever session started it; failed as its log's last line says.
    job = _explain_job(run, context_id, first, second)
    status = job.status()
    if status.active:
        st.fragment(_await_reasons, run_every=2.0)(run, context_id, first, second)
        return
    if any(o.text is not None for o in found.orders):
        _show_reasons(found)
    if status.state == "failed":
        st.warning(f"The judge wrote no reasons: {plain(job.log(3))}", icon=":material/error:")
    if run.api.judge_problem is not None:
        st.caption("This run's judge server is not one of the servers configured for this app: "
                   "its reasons cannot be asked for here (`compassess explain` can).")
        return
    try:   # before it starts: how long it takes, from the Run page's estimator
        took = run.api.explain_estimate(context_id, first, second)
        basis = (f"{took.token_rate:,.0f} tokens/s, the median of {took.n_runs} earlier run(s) "
                 "of this judge here" if took.measured else
                 f"a rough default of {took.token_rate:,.0f} tokens/s (no run of this judge has "
                 "measured its speed here yet)")
        st.caption(f"Time: at least about {took.duration} once the judge is "
                   f"loaded (loading it comes first): about {took.tokens:,.0f} tokens read and "
                   f"written at {basis}. A written token is a pass of the model of its own, so "
                   "writing usually takes longer than that.")
    except CompAssessError:
        pass   # the button below says what stops it
    if st.button("Ask the judge for its reasons (both orders)", icon=":material/psychology:",
                 key=f"explain_{run.id}_{context_id}_{first}_{second}",
                 help="Loads the run's judge in a worker process (not in this server), shows it "
                      "its prompt and the answer it gave, and asks why, in a few sentences. A "
                      "judge that only gives label probabilities cannot write and says so."):
        require()  # loading a model is an admin's action
        try:
            job.start(cwd=REPO_ROOT)
        except CompAssessError as e:
            st.error(plain_message(e))
            return
        st.rerun()


def _await_reasons(run: AppRun, context_id: str, first: str, second: str) -> None:
    """A live view while an explain worker writes: the whole page again once it stored them
    or stopped."""
    recheck()
    found = run.api.explanation(context_id, first, second)
    if found.complete or not _explain_job(run, context_id, first, second).status().active:
        st.rerun(scope="app")
    st.info("The judge is writing its reasons in a worker process; they show here once "
            "stored.", icon=":material/hourglass_top:")

"""Tune wording (admins): find a wording of the judge's instruction whose raw preferences are
fairer than T1's (ZEPO: per-context A-rate closest to 0.5, no label needed), with an interval
on every wording's fairness and a paired test against T1 on the same pairs; a wording replaces
T1 only when it beats T1 outside that interval. The pick is saved as a named template that the
Run page, ``compassess run --template NAME`` and the API take.

The page states the cost first (wordings x comparisons, time at this machine's measured speed),
starts the tuning in a worker process (``Store.job("tuning", ...).start()``: ``python -m
compassess_core.worker tuning``; a judge never runs in the web server) and shows the table as it fills from the store (every wording is
a run of its own, so a stopped tuning resumes). Everything comes from the Python API
(``Store.plan_tuning``, ``Store.create_tuning``, ``Store.job``, ``Tuning.result``);
this page computes nothing and shows every user string through ``plain``.
"""

from __future__ import annotations

import streamlit as st

from compassess_core import api
from compassess_core.errors import CompAssessError
from compassess_core.judges.models import BUNDLED_MODEL
from compassess_core.runs.prompts import ASPECT_ADJECTIVES, TASK_WORDING, TASKS
from pages._auth import guard, recheck, require, viewer
from pages._common import (REPO_ROOT, api_store, cached_dataset, db_url, fmt, pick_dataset,
                           pick_id, plain, show_paired)
from pages._judges import local_model_picker
from pages._plain import plain_message

guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

#: The tuning this page watches (its id) per dataset, set by Start or the picker.
WATCH = "tune_watch"


st.title("Tune the judge's wording")
st.caption("The same judge answers differently to wordings of the same question. ZEPO (Zhou et "
           "al., EMNLP 2024) keeps the wording whose raw preferences are least lopsided: fairness "
           "= -|A-rate - 0.5|, the A-rate being the mean over contexts of each context's share of "
           "decisions for the first position; no label needed. This page judges the library's T1 "
           "and T2, built-in paraphrases of T1's question and, if you choose a writer, "
           "paraphrases of the whole instruction of the fairest so far, on the first contexts of "
           "the dataset. Every fairness has a 95% interval (contexts resampled, then decisions "
           "within them); a wording replaces T1 only when it is fairer than T1 outside the paired "
           "95% interval on the same pairs, otherwise T1 is kept and the page says why. Fairness "
           "is not agreement with people: on SummEval with the bundled judge it did not predict "
           "agreement at the balanced threshold. Where the data has human labels or a reference "
           "column, measure each wording's agreement on held-out contexts the pick never sees.")

info = pick_dataset(st, "Dataset")
if info is None:
    st.info("The store has no dataset yet: load the sample on **Home** or upload a file on "
            "**Upload**.")
    st.stop()
dataset = cached_dataset(info.id)
n = len(dataset.contexts)
store = api_store()

with st.container(border=True):
    st.markdown("**What to tune**")
    c1, c2, c3 = st.columns(3)
    presets = list(ASPECT_ADJECTIVES)
    start_aspect = store.run_defaults(info.id).aspect   # the labels' aspect, else the scores'
    aspect = c1.selectbox("Aspect", presets,
                          index=presets.index(start_aspect) if start_aspect in presets else 0,
                          key=f"tune_aspect_{info.id}")
    task = c1.selectbox("Wording", ("auto",) + TASKS, key=f"tune_task_{info.id}",
                        format_func=lambda t: t if t == "auto" else
                        f"{t}: {TASK_WORDING[t].noun} A/B, {TASK_WORDING[t].source}")
    model_kind = c1.radio("Judge", ("bundled default", "models folder"),
                          key=f"tune_model_kind_{info.id}",
                          horizontal=True)
    model = (BUNDLED_MODEL if model_kind == "bundled default"
             else local_model_picker(c1, key=f"tune_catalog_model_{info.id}"))
    contexts = c2.number_input(f"Contexts to tune on (the first N of {n})", 1, n,
                               min(api.TuningOptions.contexts, n), key=f"tune_contexts_{info.id}")
    holdout = c2.number_input("Held-out contexts (the next M; agreement only)", 0,
                              max(0, n - int(contexts)), 0, key=f"tune_holdout_{info.id}")
    pairs = c2.number_input("Comparisons per context (0: every ordered pair)", 0, 100_000, 0,
                            key=f"tune_pairs_{info.id}",
                            help="Both orders of each pair (symmetric selection), so the flip "
                                 "rate can be measured.")
    writer_kind = c3.radio("Writer of paraphrases",
                           ("none", "the judge itself", "a served model", "models folder"),
                           key=f"tune_writer_kind_{info.id}", horizontal=True,
                           help="Who writes paraphrases of the whole instruction in each round: "
                                "none (the starting wordings only), the judge (a small judge "
                                "writes few usable ones), a served chat model "
                                "(openai:BASE_URL#MODEL) or a local model.")
    if writer_kind == "the judge itself":
        writer = "judge"
    elif writer_kind == "a served model":
        writer = c3.text_input("Served writer", key=f"tune_writer_served_{info.id}",
                               max_chars=1000,
                               placeholder="openai:http://localhost:8000/v1#MODEL").strip()
    elif writer_kind == "models folder":
        writer = local_model_picker(c3, key=f"tune_writer_model_{info.id}") or ""
    else:
        writer = ""
    rounds = c3.number_input("Rounds of paraphrases the writer writes", 0, 10,
                             api.TuningOptions.rounds, key=f"tune_rounds_{info.id}")
    per_round = c3.number_input("Paraphrases per round", 1, 10, api.TuningOptions.per_round,
                                key=f"tune_per_round_{info.id}")
    budget = c3.number_input("Budget (most comparisons in all; 0: none)", 0, 10_000_000, 0,
                             key=f"tune_budget_{info.id}")
    name = c3.text_input("Name (of the tuning and the template it saves)",
                         key=f"tune_name_{info.id}",
                         max_chars=180, placeholder="default: dataset-aspect-model").strip()

options = dict(model=model, task=task, contexts=int(contexts), holdout=int(holdout),
               pairs=int(pairs) or None, rounds=int(rounds), per_round=int(per_round),
               budget=int(budget) or None, writer=writer)
plan = None
if model:
    try:
        plan = store.plan_tuning(info.id, aspect=aspect, **options)
        st.info(f"Cost: {plan.cost_sentence()}", icon=":material/calculate:")
        st.caption(f"Agreement: {plain(plan.agreement_with)}")
    except CompAssessError as e:
        st.error(plain_message(e))
if st.button("Start tuning", type="primary", icon=":material/play_arrow:",
             key=f"tune_start_{info.id}",
             disabled=plan is None):
    require()
    try:
        tuning = store.create_tuning(info.id, aspect=aspect, name=name or None,
                                     created_by=viewer().identity, **options)
        if tuning.state == "working":
            st.warning(f"Tuning '{plain(tuning.name)}' is already being worked on.")
        else:
            store.job("tuning", tuning).start(cwd=REPO_ROOT)
        st.session_state.setdefault(WATCH, {})[info.id] = tuning.id
    except CompAssessError as e:
        st.error(plain_message(e))

st.divider()
tunings = store.tunings(info.id)
if not tunings:
    st.caption("No tuning of this dataset yet.")
    st.stop()
ids = [t.id for t in tunings]
by_id = {t.id: t for t in tunings}
watched = st.session_state.get(WATCH, {}).get(info.id)
# Over ids, the choice this page's own state (a label holds the status, which changes).
chosen = pick_id(st, "Tuning", ids,
                 lambda i: plain(f"{by_id[i].name} ({by_id[i].status})", "text"),
                 key=f"tune_pick_{info.id}", current=watched if watched in ids else ids[-1],
                 on_pick=lambda i: st.session_state.setdefault(WATCH, {}).__setitem__(info.id, i))
st.session_state.setdefault(WATCH, {})[info.id] = chosen


@st.cache_data(show_spinner=False, max_entries=32)
def _result(url: str, tuning_id: int, stored: tuple) -> api.TuningResult:
    """``Tuning.result`` (its bootstrap intervals take a moment), read again only when what it
    rests on changed: ``stored`` = the tuning's creation stamp (SQLite gives a deleted
    tuning's id to the next one made), status and message and its runs' counts."""
    return api_store().tuning(tuning_id).result(n_boot=200)


def _stored(t) -> tuple:
    return (str(t.info.created_at), t.status, t.info.message, len(t.wordings),
            tuple((k, r.n_comparisons, r.status) for k, r in sorted(t.runs().items())))


def tuning_view(tuning_id: int, live: bool) -> None:
    """The watched tuning: status, the table of wordings so far, the pick (refreshed while a
    worker works on it)."""
    if live:
        recheck()
    t = store.tuning(tuning_id)
    state = t.state
    st.markdown(f"**{plain(t.name)}**: {plain(state)}"
                + (f" — {plain(t.info.message)}" if t.info.message else ""))
    result = _result(db_url(), tuning_id, _stored(t))
    table = result.table
    if table.empty:
        st.caption("No wording judged yet.")
    else:
        metric = next((m for m in table["agreement_metric"] if m), "")
        num = st.column_config.NumberColumn
        st.dataframe(plain(table[["picked", "wording", "label", "question", "fairness",
                                  "fairness_low", "fairness_high", "a_rate", "p_a_raw",
                                  "flip_rate", "saturation", "vs_t1", "vs_t1_low", "vs_t1_high",
                                  "vs_t1_mcnemar_p", "beats_t1", "agreement_raw",
                                  "agreement_raw_low", "agreement_raw_high", "agreement_balanced",
                                  "decisions_tune", "contexts_tune", "comparisons_tune",
                                  "comparisons_holdout"]], into="text"),
                     hide_index=True, width="stretch", placeholder="",
                     column_config={
                         "picked": st.column_config.CheckboxColumn("picked"),
                         "fairness": num("fairness", format="%.3f",
                                         help="-|A-rate - 0.5| on the tuning contexts"),
                         "fairness_low": num("fairness 95% low", format="%.3f"),
                         "fairness_high": num("fairness 95% high", format="%.3f"),
                         "a_rate": num("A-rate", format="%.3f",
                                       help="Mean over the tuning contexts of each context's "
                                            "share of decisions for the first position (ZEPO)"),
                         "p_a_raw": num("P(A) pooled", format="%.3f",
                                        help="Share of all decisions for the first position"),
                         "flip_rate": num("flip rate", format="%.2f"),
                         "saturation": num("|tau* - 0.5|", format="%.3f",
                                           help="Tie-breaker for a judge that answers the same "
                                                "position under every wording: smaller is "
                                                "less saturated"),
                         "vs_t1": num("fairness - T1's", format="%+.3f",
                                      help="Paired, on the ordered pairs both decided"),
                         "vs_t1_low": num("95% low", format="%+.3f"),
                         "vs_t1_high": num("95% high", format="%+.3f"),
                         "vs_t1_mcnemar_p": num("McNemar exact p", format="%.3g",
                                                help="Equal P(A) as T1 on the same pairs"),
                         "beats_t1": st.column_config.CheckboxColumn("beats T1"),
                         "agreement_raw": num(f"{metric or 'agreement'} raw", format="%.2f"),
                         "agreement_raw_low": num("95% low", format="%.2f"),
                         "agreement_raw_high": num("95% high", format="%.2f"),
                         "agreement_balanced": num(f"{metric or 'agreement'} at tau*",
                                                   format="%.2f"),
                         "decisions_tune": num("decisions"),
                         "contexts_tune": num("contexts"),
                         "comparisons_tune": num("compared (tuning)"),
                         "comparisons_holdout": num("held out")})
        st.caption(f"Agreement: {plain(result.agreement_with)}. {result.comparisons_tune:,} "
                   f"comparisons on the tuning contexts, {result.comparisons_holdout:,} held out. "
                   "Intervals: 95% bootstrap over contexts, then decisions within them. Writer: "
                   f"{plain(result.writer) if result.writer else 'none'}.")
    for line in result.warnings:
        st.warning(line, icon=":material/warning:")
    if result.picked is not None:
        best = table[table["picked"]].iloc[0]
        # the key and label are the tuning's own (w3, paraphrase 2); the template's name is not
        st.success(f"Picked: {result.picked.key} ({result.picked.label}), fairness "
                   f"{fmt(best['fairness'], '.3f')} [95% {fmt(best['fairness_low'], '.3f')}, "
                   f"{fmt(best['fairness_high'], '.3f')}], P(A) pooled "
                   f"{fmt(best['p_a_raw'], '.3f')}. Why: {result.reason}"
                   + (f"; saved as the template {plain(result.template)}: choose it on the Run "
                      "page (Template: saved), or give its name to `compassess run --template`."
                      if result.template else "."),
                   icon=":material/check:")
        show_paired(st, [result.vs_t1], key=f"tune_paired_{tuning_id}",
                    caption="The paired test behind the pick: fairness minus T1's on the "
                            "ordered pairs both wordings decided.")
        st.code(result.picked.text, language=None, wrap_lines=True)
    if live and state != "working":
        st.rerun(scope="app")


t = by_id[chosen]
# Watched, cancelled and resumed as every background job is (``Store.job``: the CLI's
# ``compassess job`` does the same).
job_status = store.job("tuning", chosen).status()
working = job_status.active
st.fragment(tuning_view, run_every=3.0 if working else None)(chosen, working)
c1, c2 = st.columns(2)
if working:
    if c1.button("Cancel", icon=":material/stop:", key=f"tune_cancel_{chosen}"):
        require()
        store.job("tuning", chosen).cancel()
        st.rerun()
elif job_status.can_resume:
    if c1.button("Resume", icon=":material/replay:", key=f"tune_resume_{chosen}"):
        require()
        try:
            store.job("tuning", chosen).resume(cwd=REPO_ROOT)
        except CompAssessError as e:
            st.error(plain_message(e))
        st.rerun()
tail = t.worker_log(6)
if tail:
    with st.expander("Worker log"):
        st.code(tail, language=None)

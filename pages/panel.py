"""Panel of judges: several runs on one dataset and aspect combined into one debiased verdict per
pair (a jury, Verga et al. 2024). Create a panel (admins), then read it as a run is read: its
rankings, evaluation beside each member's, leaderboard, positional bias, agreement among its
members and with people, the pairs where its members split, and its export.

Every number comes from the Python API (``Store.panel``: ``Panel.rankings``,
``member_evaluations``, ``member_agreement``, ``split_pairs``, ``leaderboard``, ``agreement``,
``export_bytes``), cached per panel and stored state; this page computes nothing and shows names
only as plain text.
"""

from __future__ import annotations

import shlex

import pandas as pd
import streamlit as st

from compassess_core import api
from compassess_core.people.access import ADMIN
from compassess_core.errors import CompAssessError
from pages._auth import guard, require
from pages import _view as view
from pages._plain import plain_message
from pages._common import (AppRun, api_store, aspect_label, column_labels, data_aspects,
                           db_url, fit_columns, fmt, is_pairwise, judges_stamp, list_runs, method_control,
                           pick_dataset, pick_object, plain, prepared_download, show_paired)
from compassess_core.api import counted

guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

st.title("Panel of judges")
st.caption("Several runs on the same dataset and aspect (other models, templates or served "
           "judges) combined into one verdict per pair: each member's p debiased at its own "
           "tau* (or calibrated on the human labels), then a product of experts on the log-odds "
           "or a majority vote of the verdicts.")

# A link to a panel (``?panel=jury``, by name or id) opens the panel's own dataset when it names
# no dataset; picking another dataset here leaves the panel of the last one.
every_panel = api_store().panels()
panel_dataset = dict(zip(every_panel["id"], every_panel["dataset_id"]))
if view.get("dataset") is None and view.get("panel") in panel_dataset:
    view.put("dataset", int(panel_dataset[view.get("panel")]))
dataset = pick_dataset(on_change=lambda _: view.put("panel", None))
if dataset is None:
    st.info("No dataset is stored yet: load one on **Home** or **Upload**, and run judges on it.")
    st.stop()
runs = [r for r in list_runs(dataset.id) if is_pairwise(r) and (r.info.n_comparisons or 0) > 0]


# ------------------------------------------------------------------------------ a new panel

with st.expander("Create a panel", expanded=len(api_store().panels(dataset.id)) == 0):
    if len(runs) < 2:
        st.info("A panel needs at least two pairwise runs on this dataset: start another judge "
                "on **Run** (another model or template, same aspect).")
    else:
        # The form belongs to the dataset on screen: its widgets are keyed by the dataset's id.
        form = f"panel_new_{dataset.id}"
        # Members judge one aspect: the picker offers the runs of the aspect chosen first (the
        # view's, else the one the data has labels or reference scores of).
        judged = {r.settings.aspect for r in runs}
        ranked = [a.aspect for a in data_aspects(dataset.id) if a.aspect in judged]
        aspects = ranked + sorted(judged - set(ranked))
        if st.session_state.get(f"{form}_aspect") not in aspects:
            want = view.get("aspect")
            st.session_state[f"{form}_aspect"] = want if want in aspects else aspects[0]
        panel_aspect = st.selectbox("Aspect the members judged", aspects, key=f"{form}_aspect",
                                    format_func=aspect_label(dataset.id))
        by_id = {r.id: r for r in runs if r.settings.aspect == panel_aspect}
        kept = [i for i in st.session_state.get(f"{form}_members", []) if i in by_id]
        st.session_state[f"{form}_members"] = kept
        chosen = st.multiselect("Member runs", list(by_id), key=f"{form}_members",
                                format_func=lambda i: plain(by_id[i].name, "text"),
                                help="Two or more runs on this dataset of the aspect above "
                                     "(other models, templates or served judges).")
        if len(by_id) < 2:
            st.caption(f"Only {len(by_id)} run on this dataset judged "
                       f"{plain(panel_aspect)}: a panel needs two.")
        new_name = st.text_input("Panel name", key=f"{form}_name", max_chars=200)
        c = st.columns(3)
        combine = c[0].radio("Combine by", ["poe", "vote"], key=f"{form}_combine",
                             format_func={"poe": "product of experts (log-odds)",
                                          "vote": "majority vote"}.get)
        weights = c[1].radio("Member weights", ["equal", "learnt", "by hand"],
                             key=f"{form}_weights",
                             help="learnt: from the stored human labels of the aspect")
        scaling = c[2].radio("Debias each member", ["balanced", "calibrated", "auto"],
                             key=f"{form}_scaling",
                             format_func={"balanced": "at its own tau*",
                                          "calibrated": "calibrated on human labels",
                                          "auto": "calibrated where labels exist"}.get)
        by_hand = st.text_input("Weights, one per member in order (e.g. 1,2,1)",
                                key=f"{form}_hand", disabled=weights != "by hand")
        if st.button("Create panel", key=f"{form}_create", type="primary"):
            who = require(ADMIN)
            try:
                made = api_store().create_panel(
                    new_name.strip(), chosen, combine=combine, scaling=scaling,
                    weights=by_hand if weights == "by hand" else weights,
                    created_by=who.identity or "")
                view.put("panel", made.panel_info.id)
                st.success(f"Panel {plain(made.name)} created.")
            except CompAssessError as e:
                st.error(plain_message(e))

# ------------------------------------------------------------------------------ reading one

panels = api_store().panels(dataset.id)
if len(panels) == 0:
    named = view.get("panel")
    if named is not None:   # a link's panel: on another dataset, or gone
        st.warning((f"The panel this link names (id {named}) is on the dataset "
                    f"{plain(dict(zip(every_panel['id'], every_panel['dataset']))[named])}, not "
                    "on this one: choose that dataset to see it." if named in panel_dataset
                    else named.described("panel of judges") + "." if isinstance(
                        named, view.Unresolved) else f"The panel this link names (id {named}) "
                    "is not in the store."), icon=":material/link_off:")
    st.info("No panel on this dataset yet.")
    st.stop()
names = dict(zip(panels["id"], panels["name"]))
# The panel (and, in Rankings, the method) follow the view state (the URL, by the panel's id):
# a link reproduces the page, and a link to a deleted panel says so.
panel_of = dict(zip(every_panel["id"], every_panel["dataset"]))
panel_id = pick_object("panel", list(names), lambda i: plain(names[i], "text"),
                       what="panel of judges", where=st, label="Panel",
                       not_offered=lambda i: (f"The panel this link names (id {i}) is on the "
                                              f"dataset {plain(panel_of[i])}, not on this one: "
                                              "choose that dataset to see it."
                                              if i in panel_of else None))
if panel_id is None:
    st.stop()
name = names[panel_id]
stamp = judges_stamp(dataset.id)
try:
    jury = AppRun.panel(panel_id, stamp)
    members = jury.definition()
except CompAssessError as e:
    st.error(plain_message(e))
    st.stop()
st.caption(f"Panel {plain(name)} on dataset {plain(dataset.name)}, aspect "
           f"{plain(members['aspect'])}: {members['combine']}, weights "
           f"{plain(str(members['weights']))}.")
member_table = plain(pd.DataFrame(members["members"]), into="text").rename(columns={
    "run": "member run", "weight": "weight (sums to 1)", "scaling": "how its p was debiased",
    "n_comparisons": "comparisons"})
st.dataframe(member_table, hide_index=True, key=f"panel_members_table_{panel_id}",
             placeholder="", column_config=fit_columns(  # fits 1024 px
                 member_table, wide=("member run",)))

agree = jury.member_agreement()
split = jury.split_pairs()
m = st.columns(4)
m[0].metric("Comparisons", f"{len(jury.probabilities()):,}",
            help="Combined comparisons: ordered pairs at least one member judged.")
m[1].metric("Fleiss' kappa", fmt(agree.fleiss_kappa, ".2f"),
            help=f"Of the members' verdicts, over the {counted(agree.n_pairs_all, 'pair')} every "
                 f"member judged (verdicts per "
                 "unordered pair, each member at its own tau*).")
m[2].metric("Krippendorff's alpha", fmt(agree.krippendorff_alpha, ".2f"),
            help=f"Nominal, over the {counted(agree.n_pairs_alpha, 'pair')} two or more members "
                 "judged.")
m[3].metric("Split pairs", f"{len(split):,}",
            help=f"Pairs where the members' verdicts differ, of {agree.n_pairs:,} unordered "
                 "pairs.")
for note in agree.notes:
    st.warning(plain_message(note))
# One box for every member that answers by position; the engine's own words (numbers only, no
# string a user controls: as the result pages show a run's judge warning), each name inert.
warnings = jury.member_warnings()
if warnings:
    st.warning("\n".join(f"- Member {plain(member)}: {warning}"
                          for member, warning in warnings.items()), icon=":material/warning:")

tabs = st.tabs(["Rankings", "Evaluation", "Leaderboard", "Bias", "Agreement", "Split pairs",
                "Export"])
with tabs[0]:
    method = method_control(st, "panel_method")
    ranks = jury.rankings(method=method, debias="none")
    st.caption(f"{method} on the panel's combined p at tau = 0.5 (its members are debiased "
               "already); rank 1 = best in its context.")
    shown = plain(ranks.drop(columns=["text", "ci_low", "ci_high"], errors="ignore"), into="text")
    st.dataframe(shown, hide_index=True, key=f"panel_rankings_{panel_id}", placeholder="",
                 column_config={c: dict(cfg, pinned=c == "candidate_id" or None)  # in view
                                for c, cfg in column_labels(shown).items()})
with tabs[1]:
    ev = jury.member_evaluations()
    rows = [dict(judge=judge, spearman_x100=e["debiased"]["spearman_x100"],
                 kendall_x100=e["debiased"]["kendall_x100"], p_a_raw=e["raw"]["p_a"],
                 p_a_debiased=e["debiased"]["p_a"], flip_rate=e["flip_rate"],
                 comparisons=e["n_comparisons"])
            for judge, e in [(f"panel: {name}", ev["panel"]), *ev["members"].items()]]
    st.caption(f"Win ratio at each judge's balanced tau* against reference column "
               f"{plain(str(ev['panel']['reference']))} (Spearman and Kendall x100, mean over "
               "contexts); P(A) raw (tau = 0.5) and debiased; flip rate over pairs judged both "
               "ways.")
    # A number that is undefined (no reference column, no pair judged in both orders) says
    # n/a, not an empty cell or NaN: the numbers as text, each with its own decimals.
    digits = dict(spearman_x100=".1f", kendall_x100=".1f", p_a_raw=".3f", p_a_debiased=".3f",
                  flip_rate=".3f")
    rows = [{k: fmt(v, digits[k]) if k in digits else v for k, v in r.items()} for r in rows]
    shown = plain(pd.DataFrame(rows), into="text")
    st.dataframe(shown, hide_index=True, key=f"panel_evaluation_{panel_id}", placeholder="",
                 column_config=fit_columns(shown, column_labels(shown), wide=("judge",)))
    st.markdown("**The panel against its best member**")
    vs_best, vs_note = jury.vs_best_member()
    if vs_best is not None:
        show_paired(st, [vs_best], key=f"panel_vs_best_{panel_id}",
                    caption="Is the panel better than its best member (the member most often "
                            "right)? Accuracy with the people's decisive majority on the labelled "
                            "pairs both judged, each at its balanced tau* (the panel's p held out "
                            "where it learns from the labels).")
    else:
        st.caption(plain_message(vs_note))
with tabs[2]:
    try:
        board = jury.leaderboard(n_boot=100)
        st.caption("One row per system across every context (Bradley-Terry strength, win rate, "
                   "95% intervals of 100 context bootstraps) on the panel's combined p.")
        shown = plain(board.frame, into="text")
        st.dataframe(shown, hide_index=True, key=f"panel_leaderboard_{panel_id}", placeholder="",
                     column_config=column_labels(shown))
    except api.NoSystemsError as e:
        st.info(plain_message(e))
with tabs[3]:
    pos = jury.positional_bias(debias="none")
    b = st.columns(3)
    b[0].metric("P(A) of the panel at tau = 0.5", fmt(pos.p_a_raw, ".2f"),
                help=f"Share of the {pos.n_comparisons:,} combined comparisons won by the first "
                     "position.")
    b[1].metric("Flip rate at tau = 0.5", fmt(pos.flip_rate, ".2f"),
                help=f"Over the {counted(pos.n_pairs_both_orders, 'pair')} judged in both orders.")
    b[2].metric("tau* of the combined p", fmt(pos.tau_star, ".3f"))
with tabs[4]:
    st.caption("Agreement of the members' verdicts per unordered pair (each at its own tau*): "
               "Cohen's kappa of every two members on the pairs both judged, and each member "
               "against the panel's own verdict.")
    shown = plain(agree.pairwise, into="text")
    st.dataframe(shown, hide_index=True, key=f"panel_pairwise_{panel_id}", placeholder="",
                 column_config=column_labels(shown))
    shown = plain(agree.with_panel, into="text")
    st.dataframe(shown, hide_index=True, key=f"panel_with_panel_{panel_id}", placeholder="",
                 column_config=column_labels(shown))
    if stamp[2]:
        try:
            people = jury.agreement()
            maj = people.report.debiased.majority
            h = st.columns(2)
            h[0].metric("Panel vs people: accuracy without ties",
                        fmt(maj.accuracy_without_ties, ".1%"),
                        help=f"On {maj.n_without_ties:,} labelled pairs (human majority).")
            h[1].metric("Panel vs people: Cohen's kappa without ties",
                        fmt(maj.kappa_without_ties, ".3f"))
        except CompAssessError as e:
            st.info(plain_message(e))
with tabs[5]:
    st.caption("Pairs where the members' verdicts differ, most evenly split first; each "
               "member's column is the candidate it prefers (empty: not judged).")
    shown = plain(split, into="text")
    st.dataframe(shown, hide_index=True, key=f"panel_split_{panel_id}", placeholder="",
                 column_config=column_labels(shown))
with tabs[6]:
    # The rankings the Rankings tab shows: its method, at tau = 0.5.
    out = jury.export_bytes(what="rankings", fmt="csv", method=method, debias="none", ci=False)
    st.download_button(f"Download the panel's rankings (CSV, {method} at tau = 0.5)", out.data,
                       file_name="panel_rankings.csv", mime="text/csv",
                       key=f"panel_download_{panel_id}", on_click="ignore")
    # Made when asked (as on Export): the report bootstraps the leaderboard, which a page
    # that answers in a second must not wait for; an error shows under the button.
    prepared_download(st, "Download the panel's audit report (HTML)",
                      lambda: jury.report_html(method=method, debias="none"),
                      key=f"panel_report_download_{panel_id}",
                      made_for=(db_url(), panel_id, name, method),
                      file_name="panel_report.html", mime="text/html",
                      what="the panel's audit report",
                      help="One self-contained file: the members, leaderboard, bias, agreement "
                           "with people and the most order-dependent and disputed comparisons "
                           "with each member's p.")
    st.code(f"compassess panel report --name {shlex.quote(name)} --method {method} "
            "-o panel_report.html", language="bash")
    if st.button("Delete this panel (its runs stay)", key=f"panel_delete_{panel_id}"):
        require(ADMIN)
        try:
            api_store().delete_panel(panel_id, expect_name=name)
        except CompAssessError as e:
            st.error(plain_message(e))
        else:
            view.put("panel", None)
            st.rerun()

"""Campaigns (admins): hand pairs of a dataset to named annotators, follow their progress and
agreement, settle the pairs they disagree on, export the labels.

A campaign fixes its pairs when it is created (every pair, a seeded sample, or the most informative
for the ranking) and how many people should label each (overlap); each annotator then sees only
their campaigns on Annotate. An admin's decision on a disputed pair is stored as an adjudication
(``api.Campaign.adjudicate``), never as a vote. Everything goes through the Python API
(``api.Store.create_campaign``, ``api.Campaign``); every action starts with ``require()``. This page
must never compute a statistic itself, render a text as markdown or HTML (``st.text`` only) or any
other user string except through ``plain``.
"""

from __future__ import annotations

import streamlit as st

from compassess_core.people import access
from compassess_core.people.campaigns import CHOICES, SELECTIONS
from compassess_core.errors import CompAssessError
from pages._auth import guard, require
from pages import _view as view
from pages._plain import plain_message
from pages._common import (api_store, aspect_label, aspect_options, cached_dataset, column_labels,
                           data_aspects, default_aspect, fmt, pick_dataset, pick_object, plain)
from compassess_core.api import counted

me = guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

SELECTION_LABELS = {"all": "every pair of the dataset",
                    "sample": "a random sample of N pairs (seeded)",
                    "informative": "the N pairs that most reduce the ranking's uncertainty"}
CHOICE_LABELS = {"tie": "tie", "both_bad": "both bad"}
#: Disputed pairs drawn at once in the adjudication view.
SHOWN_DISPUTES = 20

st.title("Campaigns")
st.caption("Assign pairs to annotators: each sees only their campaigns on Annotate (its pairs, "
           "texts and guidelines; nothing of the judge and no other dataset).")
view.show_problems()


#: The aspect picker's entry for an aspect of one's own.
OWN_ASPECT = "\x00own"
#: In single-user local mode: what campaigns are for, and how to hand pairs to a team.
LOCAL_NOTE = ("Campaigns hand pairs to signed-in annotators: each sees only their campaigns on "
              "Annotate. This app runs in single-user local mode (this machine, no sign-in), so "
              "you are its only person: a campaign here is yours to label. It fixes a set of "
              "pairs (every pair, a seeded sample or the most informative ones) with guidelines "
              "and counts your progress; pick it at the top of Annotate. To hand pairs to a "
              "team, deploy the app with sign-in (docs/deploy.md, 'A team deployment') and add "
              "people on its People page.")


def create_form() -> None:
    if not api_store().list_datasets():
        st.info("No dataset yet: upload candidates first.")
        return
    local = me.mode == access.LOCAL
    if local:
        st.info(LOCAL_NOTE, icon=":material/person:")
    people = sorted({p.identity for p in api_store().people()} | {me.identity})
    name = st.text_input("Campaign name", max_chars=200, key="campaign_name")
    c1, c2 = st.columns(2)
    # The dataset of the view (the URL's, the run's in view): the picker and the link agree.
    info = pick_dataset(where=c1, label="Dataset")
    if info is None:
        return
    options = aspect_options(info.id) + [OWN_ASPECT]
    key = f"campaign_aspect_{info.id}"
    if st.session_state.get(key) not in options:
        st.session_state[key] = default_aspect(info.id)
    label = aspect_label(info.id)
    choice = c2.selectbox("Aspect", options, key=key,
                          format_func=lambda a: "own aspect ..." if a == OWN_ASPECT else label(a),
                          help="The aspect people judge (the question they are asked). The "
                               "aspects this dataset has human labels, reference scores or runs "
                               "of come first.")
    aspect = (c2.text_input("Your aspect", max_chars=200, key=f"campaign_own_aspect_{info.id}",
                            placeholder="e.g. helpfulness").strip()
              if choice == OWN_ASPECT else choice)
    known = {a.aspect: a for a in data_aspects(info.id)}
    if aspect and not (aspect in known and (known[aspect].n_labels or known[aspect].reference)):
        st.warning(f"Dataset {plain(info.name)} has no human label and no reference score of "
                   f"{plain(aspect)}: the answers can be compared with nobody's yet. Check that "
                   "this is the aspect you mean (the dataset's own aspects are listed first).",
                   icon=":material/help:")
    st.session_state.setdefault("campaign_annotators", [me.identity] if local else [])
    annotators = st.multiselect(
        "Annotators" + ("" if local else " (from People)"), people, key="campaign_annotators",
        format_func=lambda p: f"you ({plain(p, 'text')})" if p == me.identity else plain(p, "text"),
        help="The people who label its pairs; more can be assigned later. "
             + ("In local mode that is you." if local else "Add people on the People page."))
    c3, c4, c5 = st.columns(3)
    st.session_state.setdefault("campaign_overlap", 1 if local else 2)
    overlap = int(c3.number_input("Overlap (people per pair)", min_value=1, step=1,
                                  key="campaign_overlap",
                                  help="How many annotators label each pair (2 or more measures "
                                       "their agreement)."))
    selection = c4.selectbox("Pairs", SELECTIONS, format_func=SELECTION_LABELS.get,
                             key="campaign_selection")
    n_pairs = int(c5.number_input("N pairs (sample, informative)", min_value=1, value=50,
                                  step=10, key="campaign_n_pairs"))
    guidelines = st.text_area("Guidelines (plain text, shown to the annotators)", height=150,
                              key="campaign_guidelines")
    why_not = ("Choose at least one annotator: nobody would see its pairs." if not annotators
               else f"Overlap {overlap} needs {overlap} annotators; {len(annotators)} chosen."
               if overlap > len(annotators) else "Name the campaign." if not name.strip()
               else "Choose or type the aspect." if not aspect else None)
    if why_not:
        st.caption(why_not)
    if st.button("Create campaign", type="primary", icon=":material/add_task:",
                 disabled=why_not is not None, key=f"create_campaign_{info.id}"):
        # (keyed by the dataset: a click on the screen of another dataset creates nothing)
        who = require()  # the person holds the role now (pages/_auth.py)
        try:
            made = api_store().create_campaign(
                name.strip(), info.id, aspect, annotators, overlap=overlap,
                pairs=selection, n_pairs=None if selection == "all" else n_pairs,
                guidelines=guidelines, created_by=who.identity)
        except CompAssessError as e:
            st.error(f"Not created: {plain_message(e)}")
            return
        view.put("campaign", made.id)
        st.success(f"Campaign {plain(made.name)} created: {counted(made.info.n_pairs, 'pair')} for "
                   f"{len(made.annotators)} annotator(s)"
                   + ("; you label them on Annotate." if me.identity in made.annotators else "."))


def manage(campaign) -> None:
    st.caption(f"Dataset {plain(campaign.dataset_name)}, aspect {plain(campaign.aspect)}, "
               f"{counted(campaign.info.n_pairs, 'pair')} "
               f"({SELECTION_LABELS[campaign.info.selection]}), "
               f"overlap {campaign.overlap}, created by {plain(campaign.info.created_by)}; "
               f"{campaign.status}.")
    progress = campaign.progress()
    agree = campaign.agreement()
    cols = st.columns(4)
    cols[0].metric("Pairs fully labelled", f"{campaign.completed()} / {campaign.info.n_pairs}")
    cols[1].metric("Percent agreement", fmt(None if agree.n_items == 0 else
                                            agree.percent_agreement, ".1%"),
                   help=f"On {counted(agree.n_items, 'pair')} labelled by 2 or more annotators"
                        + (" (none yet)." if agree.n_items == 0 else "."))
    cols[2].metric("Cohen's kappa", fmt(agree.cohen_kappa, ".3f"),
                   help="of the two annotators, when exactly two share pairs")
    cols[3].metric("Krippendorff's alpha", fmt(agree.krippendorff_alpha, ".3f"))
    st.subheader("Progress per annotator")
    shown = plain(progress, into="text")
    st.dataframe(shown, hide_index=True, width="stretch",
                 column_config={**column_labels(shown), "done": st.column_config.ProgressColumn(
                     "done", min_value=0.0, max_value=1.0, format="percent")}, placeholder="")
    if len(agree.pairwise):
        st.caption("Agreement of each pair of annotators on the pairs both labelled:")
        shown = plain(agree.pairwise, into="text")
        st.dataframe(shown, hide_index=True, width="stretch", placeholder="",
                     column_config=column_labels(shown))

    people = [p.identity for p in api_store().people()]
    with st.expander("Annotators and status", icon=":material/group:"):
        chosen = st.multiselect("Assigned annotators", sorted(set(people) | set(campaign.annotators)),
                                default=list(campaign.annotators), key=f"assigned_{campaign.id}",
                                format_func=lambda p: plain(p, "text"))
        if st.button("Save annotators", key=f"save_assigned_{campaign.id}"):
            who = require()
            added = api_store().assign(campaign.id, [p for p in chosen
                                                     if p not in campaign.annotators],
                                       by=who.identity)
            removed = api_store().unassign(campaign.id, [p for p in campaign.annotators
                                                         if p not in chosen])
            st.success(f"{added} added, {removed} taken off (their answers stay).")
        if campaign.status == "open":
            if st.button("Close the campaign", key=f"close_{campaign.id}",
                         help="No new answer; adjudication stays possible"):
                require()
                api_store().close(campaign.id)
                st.success("Closed.")
        elif st.button("Open it again", key=f"reopen_{campaign.id}"):
            require()
            api_store().reopen(campaign.id)
            st.success("Open again.")

    adjudication(campaign)

    st.subheader("Export the labels")
    c1, c2 = st.columns(2)
    for col, fmt_ in ((c1, "csv"), (c2, "json")):
        col.download_button(f"Download {fmt_.upper()}", campaign.export_bytes(fmt_).data,
                            file_name=f"campaign-labels.{fmt_}", key=f"export_{fmt_}_{campaign.id}",
                            icon=":material/download:", on_click="ignore")


def adjudication(campaign) -> None:
    st.subheader("Adjudication")
    disputed = campaign.disagreements()
    if len(disputed) == 0:
        st.caption("No pair where people disagree.")
        return
    st.caption(f"{len(disputed)} pair(s) where people disagree, the most split first; "
               f"{int(disputed['adjudicated'].notna().sum())} decided. Your decision is stored "
               "as an adjudication, never as a vote.")
    dataset = cached_dataset(campaign.info.dataset_id)
    for i, row in disputed.head(SHOWN_DISPUTES).iterrows():
        pair = (row["context_id"], row["x"], row["y"])
        ctx = dataset.context(pair[0])
        by_id = {c.candidate_id: c for c in ctx.candidates}
        decided = row["adjudicated"]
        with st.expander(f"Context {plain(pair[0])}: {plain(pair[1])} vs {plain(pair[2])}"
                         + (f" (decided: {plain(decided)})" if decided else ""),
                         expanded=i == 0):
            st.text(ctx.text)
            cols = st.columns(2)
            for col, cid in zip(cols, pair[1:]):
                col.markdown(f"**{plain(cid)}**")
                col.text(by_id[cid].text)
            st.markdown("**Answers:** " + plain(row["answers"]))
            options = [pair[1], pair[2], *CHOICES]
            choice = st.radio("Decision", options, key=f"adj_choice_{campaign.id}_{i}",
                              horizontal=True, index=options.index(decided) if decided in options
                              else 0,
                              format_func=lambda o: plain(CHOICE_LABELS.get(o, o)))
            if st.button("Save decision", key=f"adj_save_{campaign.id}_{i}"):
                who = require()
                campaign.adjudicate(pair, choice, who.identity)
                st.success(f"Decision stored: {plain(CHOICE_LABELS.get(choice, choice))}.")


list_tab, new_tab = st.tabs(["Campaigns", "New campaign"])
with new_tab:
    create_form()
with list_tab:
    every = api_store().campaigns()
    if not every:
        st.info("No campaign yet: create one in the New campaign tab.")
    else:
        by_id = {c.id: c for c in every}
        # The campaign on screen is the view's (by id, in the URL): a link to a deleted one says
        # so, and every action below acts on this campaign's id.
        chosen = pick_object("campaign", list(by_id), lambda i: plain(by_id[i].name, "text"),
                             what="campaign", where=st, label="Campaign")
        if chosen is not None:
            manage(by_id[chosen])

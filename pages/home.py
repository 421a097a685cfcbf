"""Home: what the app does, what the store holds, a one-click sample so a newcomer sees everything,
and (admins only) renaming and deleting stored runs and datasets.

Never computes or queries anything itself: the store lists, the engine validates, the API renames
and deletes.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from compassess_core.errors import CompAssessError
from compassess_core.limits import MAX_NAME_CHARS
from pages import _view as view
from pages._auth import guard, require, viewer
from pages._common import SAMPLE_NAME, SAMPLE_PATH, api_store, as_shown, list_runs, plain

guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

st.title("CompAssess")
st.markdown(
    "Rank generated texts with an LLM judge that compares them **two at a time** "
    "(Liusie et al. 2024, EACL).  \n"
    "Every pairwise judgement is stored, turned into rankings, and audited for **positional bias** "
    "(does the judge prefer whichever text comes first?).  \n"
    "Upload candidates, run the judge, then inspect rankings, the comparison matrix and the bias "
    "audit, and export everything with its settings.")

st.subheader("Try it in a minute")
c1, c2 = st.columns([1, 2])
with c1:
    load = st.button("Load the sample dataset", type="primary", icon=":material/dataset:",
                     help=f"{SAMPLE_PATH.name}: 3 SummEval articles x 5 summaries with expert scores")
with c2:
    st.caption("The sample: 3 news articles x 5 machine summaries with SummEval expert scores "
               "(coherence, consistency, fluency, relevance). A full run of the bundled model "
               "compares 60 ordered pairs. Then open **Run** and press Start.")
if load:
    require()  # the person holds the role now (pages/_auth.py)
    try:
        dataset = api_store().add_dataset(SAMPLE_PATH, name=SAMPLE_NAME)
    except CompAssessError as e:
        st.error(f"Could not load the sample: {plain(str(e))}")
    else:
        view.put("dataset", api_store().dataset_id(dataset.name))
        st.success(f"Sample dataset '{SAMPLE_NAME}' is in the store ({len(dataset.contexts)} contexts, "
                   f"{dataset.n_candidates} candidates). Next: start a run.")
        st.page_link("pages/run.py", label="Go to Run", icon=":material/play_arrow:")

st.subheader("Datasets in the store")
datasets = api_store().list_datasets()
if datasets:
    st.dataframe(plain(pd.DataFrame([dict(id=d.id, name=d.name, contexts=d.n_contexts,
                                          candidates=d.n_candidates,
                                          reference_scores=", ".join(d.score_columns),
                                          source=d.source, saved=d.created_at) for d in datasets]),
                       into="text"), hide_index=True, width="stretch", placeholder="")
else:
    st.info("No dataset yet: load the sample above or upload your own file on **Upload**.")

st.subheader("Runs in the store")
runs = list_runs()
if runs:
    # `done` is the run loop's own count, right for every kind; n_comparisons counts pairs only.
    st.dataframe(plain(pd.DataFrame([dict(id=r.id, name=r.name, dataset=r.info.dataset_name,
                                          status=r.progress(refresh=False).state_text, done=r.info.done,
                                          planned=r.info.total, unit=r.run_kind.unit,
                                          model=r.settings.model, aspect=r.settings.aspect,
                                          created=r.info.created_at) for r in runs]), into="text"),
                 hide_index=True, width="stretch", placeholder="")
else:
    st.info("No run yet: start one on **Run**.")



# ------------------------------------------------------------------------------------- manage

#: The view fields that name a run (``_view.FIELDS``): none may point at a deleted run.
RUN_FIELDS = ("run", "run_b", "abs_run")


def _done(message: str) -> None:
    """Say ``message`` on the next run and draw the page afresh, so the tables above and the
    picker list the store as it is now."""
    st.session_state["manage_message"] = message
    st.rerun()


def manage_section(runs: list, datasets: list) -> None:
    """Rename or delete a run or a dataset (admins; local single-user mode is admin). A delete
    first shows what it would remove (a dry run) and needs the object's name typed to confirm.

    The picker's choices are ids and every widget of the section is keyed by the id of the
    object it acts on, so after a rename the picker shows the new name and a second rename acts
    on the same object; after a delete nothing of the deleted object's form is left ticked. Each
    write names the object as shown (``expect_name``): the API refuses it if the object was
    renamed or deleted since the page was drawn (another tab, another person).
    """
    st.subheader("Manage")
    message = st.session_state.pop("manage_message", None)
    if message:
        st.success(message)
    # A widget's value cannot change once drawn: a renamed object's new-name box is emptied here.
    cleared = st.session_state.pop("manage_clear", None)
    if cleared:
        st.session_state.pop(cleared, None)
    kind = st.radio("Manage a", ["run", "dataset"], horizontal=True, key="manage_kind")
    names = ({r.id: r.name for r in runs} if kind == "run"
             else {d.id: d.name for d in datasets})
    if not names:
        st.caption(f"No {kind} in the store.")
        return
    key = f"manage_target_{kind}"
    if st.session_state.get(key) not in names:
        st.session_state.pop(key, None)
    target = st.selectbox(f"The {kind}", list(names), key=key,
                          format_func=lambda i: f"{plain(names[i], 'text')} (id {i})")
    form = f"manage_{kind}_{target}"  # every widget below belongs to this object
    shown = as_shown(form, names[target])  # the name the person saw when they pressed
    rename_col, delete_col = st.columns(2)
    with rename_col:
        with st.form(f"{form}_rename", border=True):
            new_name = st.text_input(f"New name of the {kind}", key=f"{form}_new_name",
                                     max_chars=MAX_NAME_CHARS)
            renamed = st.form_submit_button("Rename", icon=":material/edit:")
        if renamed:
            require()  # the person holds the role now (pages/_auth.py)
            try:
                if kind == "run":
                    api_store().rename_run(target, new_name, expect_name=shown)
                else:
                    api_store().rename_dataset(target, new_name, expect_name=shown)
            except CompAssessError as e:
                st.error(f"Could not rename the {kind}: {plain(str(e))}")
            else:
                # Links name objects by id, so the view follows the renamed object by itself.
                st.session_state["manage_clear"] = f"{form}_new_name"
                _done(f"Renamed the {kind} {plain(shown)} to {plain(new_name)}.")
    with delete_col:
        if not st.checkbox(f"Delete this {kind} ...", key=f"{form}_delete_open"):
            return
        delete = api_store().delete_run if kind == "run" else api_store().delete_dataset
        try:
            would = delete(target, dry_run=True, expect_name=shown)
        except CompAssessError as e:
            st.error(f"This {kind} cannot be deleted now: {plain(str(e))}", icon=":material/block:")
            return
        st.warning(f"Deleting the {kind} {plain(shown)} removes {plain(str(would))}. "
                   "This cannot be undone.", icon=":material/warning:")
        typed = st.text_input(f"Type the {kind}'s name to confirm", key=f"{form}_confirm_name")
        if st.button(f"Delete the {kind} for good", type="primary", icon=":material/delete:",
                     disabled=typed != shown, key=f"{form}_delete"):
            require()  # the person holds the role now (pages/_auth.py)
            its_runs = ({r.id for r in runs if r.info.dataset_id == target}
                        if kind == "dataset" else {target})
            try:
                deleted = delete(target, expect_name=shown)
            except CompAssessError as e:
                st.error(f"Nothing was deleted: {plain(str(e))}", icon=":material/block:")
                return
            # The view no longer names what is gone (a link to it elsewhere says so).
            for field in RUN_FIELDS:
                if view.get(field) in its_runs:
                    view.put(field, None)
            if kind == "dataset" and view.get("dataset") == target:
                view.put("dataset", None)
            st.session_state.pop(key, None)
            _done(f"Deleted the {kind} {plain(shown)}: {plain(str(deleted))}.")


if viewer().is_admin:
    manage_section(runs, datasets)

st.caption("Pages: **Upload** a CSV/JSONL · **Run** the judge · **Rankings** with the tau control · "
           "**Matrix** of p_ij per context · **Bias** audit · **Export** results with settings.")

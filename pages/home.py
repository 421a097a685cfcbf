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
from pages._plain import plain_message
from pages._common import (SAMPLE_NAME, SAMPLE_PATH, api_store, column_labels, fit_columns,
                           list_runs, pick_id, plain)
from compassess_core.api import counted

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
        st.error(f"Could not load the sample: {plain_message(e)}")
    else:
        view.put("dataset", api_store().dataset_id(dataset.name))
        st.success(f"Sample dataset '{SAMPLE_NAME}' is in the store "
                   f"({counted(len(dataset.contexts), 'context')}, "
                   f"{counted(dataset.n_candidates, 'candidate')}). Next: start a run.")
        st.page_link("pages/run.py", label="Go to Run", icon=":material/play_arrow:")

st.subheader("Datasets in the store")
datasets = api_store().list_datasets()
if datasets:
    shown = plain(pd.DataFrame([dict(id=d.id, name=d.name, contexts=d.n_contexts,
                                     candidates=d.n_candidates,
                                     reference_scores=", ".join(d.score_columns),
                                     source=d.source, saved=d.created_at) for d in datasets]),
                  into="text")
    st.dataframe(shown, hide_index=True, width="stretch", placeholder="",   # fits 1024 px
                 column_config=fit_columns(shown, column_labels(shown), wide=("name",),
                                           pin=("name",)))
else:
    st.info("No dataset yet: load the sample above or upload your own file on **Upload**.")

st.subheader("Runs in the store")
runs = list_runs()
# A tuning's runs (one per wording it tried) are listed apart, under their tuning.
tuned = api_store().tuning_runs()


def runs_table(shown: list, **extra) -> None:
    # `done` is the run loop's own count, right for every kind; n_comparisons counts pairs only.
    # What tells runs apart first (aspect, status, progress), a long name in a medium column:
    # at 1024 px a 60-character name pushed them out of sight.
    frame = plain(pd.DataFrame([dict(id=r.id, name=r.name, **{k: f(r) for k, f in extra.items()},
                                     aspect=r.settings.aspect,
                                     status=r.progress(refresh=False).state_text, done=r.info.done,
                                     planned=r.info.total, unit=r.run_kind.unit,
                                     dataset=r.info.dataset_name, model=r.settings.model,
                                     created=r.info.created_at) for r in shown]), into="text")
    # Small columns but the name, pinned: at 1024 px the rest scrolls beside it.
    st.dataframe(frame, hide_index=True, width="stretch", placeholder="",
                 column_config=fit_columns(frame, wide=("name",), pin=("name",)))


own = [r for r in runs if r.id not in tuned]
if own:
    runs_table(own)
else:
    st.info("No run yet: start one on **Run**.")
if tuned:
    by_tuning = [r for r in runs if r.id in tuned]
    with st.expander(f"Runs made by tunings ({len(by_tuning)}: one per wording tried; see "
                     "**Tune wording**)"):
        runs_table(by_tuning, tuning=lambda r: tuned[r.id])



# ------------------------------------------------------------------------------------- manage

#: The view fields that name a run (``_view.FIELDS``): none may point at a deleted run.
RUN_FIELDS = ("run", "run_b", "abs_run")


#: The object the Manage section acts on, per kind (``run``/``dataset``): the page's own state,
#: given to the picker as its value on every run (``pick_id``).
TARGET = "manage_target"


def _say(message: str, ok: bool = True) -> None:
    """What the last write did (or why it was refused), shown at the top of the section."""
    st.session_state["manage_message"] = (ok, message)


def _rename(kind: str, target: int, shown: str, box: str) -> None:
    """Rename the ``kind`` ``target``, shown as ``shown`` when its Rename button was drawn (the
    button's callback arguments, bound then): the API refuses it (``expect_name``) when the
    object is no longer called so, and nothing is renamed."""
    require()  # the person holds the role now (pages/_auth.py)
    new_name = str(st.session_state.get(box, ""))
    try:
        if kind == "run":
            api_store().rename_run(target, new_name, expect_name=shown)
        else:
            api_store().rename_dataset(target, new_name, expect_name=shown)
    except CompAssessError as e:
        _say(f"Could not rename the {kind} {plain(shown)}: {plain_message(e)}", ok=False)
    else:
        # Links name objects by id, so the view follows the renamed object by itself.
        st.session_state[box] = ""
        _say(f"Renamed the {kind} {plain(shown)} to {plain(new_name)}.")


def _delete(kind: str, target: int, shown: str, its_runs: tuple, form: str) -> None:
    """Delete the ``kind`` ``target`` shown as ``shown`` when its button was drawn (bound
    then, as for a rename); ``its_runs``: the runs that go with it, which the view then no
    longer names; ``form``: the prefix of its widgets' keys, whose values (the typed name, the
    open delete box) go with it."""
    require()  # the person holds the role now (pages/_auth.py)
    delete = api_store().delete_run if kind == "run" else api_store().delete_dataset
    try:
        deleted = delete(target, expect_name=shown)
    except CompAssessError as e:
        _say(f"Nothing was deleted: {plain_message(e)}", ok=False)
        return
    for suffix in ("_new_name", "_delete_open", "_confirm_name"):
        st.session_state.pop(form + suffix, None)
    # The view no longer names what is gone (a link to it elsewhere says so).
    for field in RUN_FIELDS:
        if view.get(field) in its_runs:
            view.put(field, None)
    if kind == "dataset" and view.get("dataset") == target:
        view.put("dataset", None)
    st.session_state.get(TARGET, {}).pop(kind, None)
    _say(f"Deleted the {kind} {plain(shown)}: {plain(str(deleted))}.")


def manage_section(runs: list, datasets: list) -> None:
    """Rename or delete a run or a dataset (admins; local single-user mode is admin). A delete
    first shows what it would remove (a dry run) and needs the object's name typed to confirm.

    The picker's options are ids and its choice is this page's own state, given to it as its
    value on every run (``pick_id``), so a rename changes a label, never the choice, and the
    picker shows the new name at once; every widget of the section is keyed by the id of the
    object it acts on. Each button sends, bound when it was drawn, the id and the name of the
    object it was drawn for (``expect_name``): the API refuses the write if the object was
    renamed or deleted since (another tab, another person), and nothing changes.
    """
    st.subheader("Manage")
    message = st.session_state.pop("manage_message", None)
    if message:
        ok, text = message
        (st.success if ok else st.error)(text)
    kind = st.radio("Manage a", ["run", "dataset"], horizontal=True, key="manage_kind")
    names = ({r.id: r.name for r in runs} if kind == "run"
             else {d.id: d.name for d in datasets})
    if not names:
        st.caption(f"No {kind} in the store.")
        return
    targets = st.session_state.setdefault(TARGET, {})
    if targets.get(kind) not in names:
        targets[kind] = next(iter(names))
    target = pick_id(st, f"The {kind}", list(names),
                     lambda i: f"{plain(names[i], 'text')} (id {i})",
                     key=f"manage_target_{kind}", current=targets[kind],
                     on_pick=lambda i: targets.__setitem__(kind, i))
    shown = names[target]   # the name on screen now, bound into the buttons below
    # Every widget below belongs to this object: its id and when it was made (a store may give
    # a deleted object's id to a new one, which must not find the old one's typed name).
    made = {r.id: r.info.created_at for r in runs} if kind == "run" else \
        {d.id: d.created_at for d in datasets}
    form = f"manage_{kind}_{target}_{made[target]:%Y%m%d%H%M%S%f}"
    rename_col, delete_col = st.columns(2)
    with rename_col:
        with st.form(f"{form}_rename", border=True):
            st.text_input(f"New name of the {kind}", key=f"{form}_new_name",
                          max_chars=MAX_NAME_CHARS)
            st.form_submit_button("Rename", icon=":material/edit:", on_click=_rename,
                                  args=(kind, target, shown, f"{form}_new_name"))
    with delete_col:
        if not st.checkbox(f"Delete this {kind} ...", key=f"{form}_delete_open"):
            return
        delete = api_store().delete_run if kind == "run" else api_store().delete_dataset
        try:
            would = delete(target, dry_run=True, expect_name=shown)
        except CompAssessError as e:
            st.error(f"This {kind} cannot be deleted now: {plain_message(e)}", icon=":material/block:")
            return
        st.warning(f"Deleting the {kind} {plain(shown)} removes {plain(str(would))}. "
                   "This cannot be undone.", icon=":material/warning:")
        typed = st.text_input(f"Type the {kind}'s name to confirm", key=f"{form}_confirm_name")
        its_runs = tuple(r.id for r in runs if r.info.dataset_id == target) \
            if kind == "dataset" else (target,)
        st.button(f"Delete the {kind} for good", type="primary", icon=":material/delete:",
                  disabled=typed != shown, key=f"{form}_delete", on_click=_delete,
                  args=(kind, target, shown, its_runs, form))


if viewer().is_admin:
    manage_section(runs, datasets)

st.caption("Pages: **Upload** a CSV/JSONL · **Run** the judge · **Rankings** with the tau control · "
           "**Matrix** of p_ij per context · **Bias** audit · **Export** results with settings.")

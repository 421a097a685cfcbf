"""Home: what the app does, what the store holds, and a one-click sample so a newcomer sees everything.

Never computes or queries anything itself: the store lists, the engine validates.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from compassess_core.errors import CompAssessError
from pages import _view as view
from pages._auth import guard, require
from pages._common import SAMPLE_NAME, SAMPLE_PATH, api_store, list_runs, plain, state_text

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
                       into="text"), hide_index=True, width="stretch")
else:
    st.info("No dataset yet: load the sample above or upload your own file on **Upload**.")

st.subheader("Runs in the store")
runs = list_runs()
if runs:
    # `done` is the run loop's own count, right for every kind; n_comparisons counts pairs only.
    st.dataframe(plain(pd.DataFrame([dict(id=r.id, name=r.name, dataset=r.info.dataset_name,
                                          status=state_text(r.info), done=r.info.done,
                                          planned=r.info.total, unit=r.run_kind.unit,
                                          model=r.settings.model, aspect=r.settings.aspect,
                                          created=r.info.created_at) for r in runs]), into="text"),
                 hide_index=True, width="stretch")
else:
    st.info("No run yet: start one on **Run**.")

st.caption("Pages: **Upload** a CSV/JSONL · **Run** the judge · **Rankings** with the tau control · "
           "**Matrix** of p_ij per context · **Bias** audit · **Export** results with settings.")

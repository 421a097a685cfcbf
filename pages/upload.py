"""Upload: read a candidate CSV/JSONL, preview it, map its columns, show every validation problem and
save it all-or-nothing.

Reading and validation are ``compassess_core.data``'s; saving (idempotent by content) is the store's.
Uploads are bounded (``COMPASSESS_MAX_UPLOAD_MB``, ``compassess_core.limits``). This page must never
save a dataset that has a single problem, and shows names from the file only through ``plain``.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from compassess_core.data import (CANONICAL, GENERATE_IDS, OPTIONAL, ignored_columns,
                                  load_candidates, read_table, suggest_column_map)
from compassess_core.errors import CompAssessError, ValidationError
from compassess_core.limits import MAX_NAME_CHARS, max_upload_bytes, max_upload_mb, name_problem
from compassess_core.markup import find_markup, strip_dataset_markup
from compassess_core.prompts import TASK_WORDING, task_from_columns
from pages._auth import guard, require
from pages import _view as view
from pages._common import api_store, plain, problems_frame

guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

NONE = "(none)"
#: How the choices that are not file columns read in the mapping.
CHOICE_LABELS = {NONE: "(none)", GENERATE_IDS: "(generate: c1, c2, ... per context)"}

st.title("Upload candidates")
st.caption("One row per candidate. Canonical columns: context_id, context, candidate_id, text; "
           "optional system; any numeric columns can be reference scores (e.g. coherence).")

upload = st.file_uploader(f"Candidate file (CSV, TSV, JSONL or a JSON array; at most "
                          f"{max_upload_mb()} MB)", type=["csv", "tsv", "jsonl", "json"],
                          max_upload_size=max_upload_mb())
if upload is None:
    st.info("Choose a file to see its preview, the column mapping and the validation report. "
            "Nothing is saved until you press Save, and only if the file has no problem.")
    st.stop()

raw_bytes = upload.getvalue()
limit = max_upload_bytes()


def show_problems(err: ValidationError) -> None:
    by_mapping = any(p.cause == "mapping" for p in err.problems)
    advice = ("Change the column mapping above (a problem marked 'mapping' goes away with other "
              "columns, or with generated candidate ids); fix the file for the others."
              if by_mapping else
              "Fix the file (rows are numbered as a spreadsheet shows them) and upload it again.")
    st.error(f"{len(err.problems)} problem(s) found in {plain(upload.name)}; nothing was saved. {advice}",
             icon=":material/error:")
    st.dataframe(plain(problems_frame(err), into="text"), hide_index=True, width="stretch", placeholder="")


try:
    table = read_table(raw_bytes, file_label=upload.name, max_bytes=limit)
except ValidationError as err:
    show_problems(err)
    st.stop()

st.subheader("Preview")
st.caption(f"{len(table):,} rows x {len(table.columns)} columns; the first 20 rows (row = line in the file).")
st.dataframe(plain(table.head(20), into="text"), width="stretch", placeholder="")

st.subheader("Column mapping")
columns = list(table.columns)
suggested = suggest_column_map(columns, table)
column_map: dict[str, str | None] = {}
cols = st.columns(len(CANONICAL) + len(OPTIONAL))
for box, canon in zip(cols, CANONICAL + OPTIONAL):
    options = (([NONE] if canon in OPTIONAL else []) + columns
               + ([GENERATE_IDS] if canon == "candidate_id" else []))
    default = suggested.get(canon)
    # Nothing fits a required name: leave it empty for the user rather than take column 1.
    index = options.index(default) if default in options else (0 if canon in OPTIONAL else None)
    chosen = box.selectbox(canon, options, index=index, key=f"map_{canon}",
                           format_func=lambda c: CHOICE_LABELS.get(c) or plain(c, "text"),
                           placeholder="choose",
                           help=("One column may be both candidate_id and system (e.g. a 'model' "
                                 "column); or generate ids." if canon in ("candidate_id", "system")
                                 else None))
    column_map[canon] = None if chosen in (NONE, None) else chosen
used = {c for c in column_map.values() if c is not None}
score_columns = st.multiselect(
    "Reference-score columns", [c for c in columns if c not in used],
    format_func=lambda c: plain(c, "text"),
    help="Leave empty to use every remaining numeric column; pick some to use only those.")
name = st.text_input("Dataset name", value=Path(upload.name).stem[:MAX_NAME_CHARS],
                     max_chars=MAX_NAME_CHARS)

st.subheader("Validation report")
try:
    dataset = load_candidates(raw_bytes, name=name.strip() or Path(upload.name).stem,
                              column_map=column_map, file_label=upload.name,
                              score_columns=score_columns or None, max_bytes=limit)
except ValidationError as err:
    show_problems(err)
    st.stop()

markup = find_markup(dataset)
if markup.found:
    st.warning(f"HTML markup found in {markup.n_texts:,} of {markup.n_candidates:,} candidate texts "
               f"and {markup.n_contexts_marked:,} of {markup.n_contexts:,} contexts. The judge "
               "reads it as part of the text unless it is stripped. Examples:",
               icon=":material/code:")
    st.code("\n".join(markup.examples), language=None)
    if st.checkbox("Strip HTML tags and decode entities (`&amp;` -> `&`) before saving; the "
                   "dataset records it in its source", value=True, key="strip_markup"):
        try:
            dataset = strip_dataset_markup(dataset)
        except ValidationError as err:
            show_problems(err)
            st.stop()
st.success(f"No problem found: {len(dataset.contexts)} contexts, {dataset.n_candidates} candidates, "
           f"reference scores: {', '.join(map(plain, dataset.score_columns)) or 'none'}.",
           icon=":material/check_circle:")
task = task_from_columns(dataset.text_columns)
if task is not None:  # what the Run page's wording 'auto' will choose for this file
    st.caption(plain(f"The columns {', '.join(dataset.text_columns)} say these are {task} texts: "
                     f"the judge will read {TASK_WORDING[task].reads()} (the Run page's Wording "
                     "can change it)."))
unused = ignored_columns(table, column_map, score_columns or None)
if unused:
    st.caption("Not used: " + "; ".join(f"{plain(column)} ({why})"
                                        for column, why in unused.items()) + ".")
bad_name = name_problem(dataset.name, "dataset name")
if bad_name:
    st.error(f"Choose another dataset name: {plain(bad_name)}.", icon=":material/error:")
    st.stop()
if st.button("Save to the store", type="primary", icon=":material/save:"):
    require()  # the person holds the role now (pages/_auth.py)
    known = {d.content_hash: d for d in api_store().list_datasets()}
    try:
        stored = api_store().add_dataset(dataset)
    except CompAssessError as e:
        st.error(plain(str(e)), icon=":material/error:")
        st.stop()
    dataset_id = api_store().dataset_id(stored.name)
    view.put("dataset", dataset_id)
    if dataset.content_hash and dataset.content_hash in known:
        st.info(f"This content is already in the store as dataset "
                f"{plain(known[dataset.content_hash].name)} (id {known[dataset.content_hash].id}); "
                "it was not duplicated.")
    else:
        st.success(f"Saved as dataset {plain(dataset.name)} (id {dataset_id}). Next: start a run.")
    st.page_link("pages/run.py", label="Go to Run", icon=":material/play_arrow:")

"""Upload: read a candidate CSV/JSONL, preview it, map its columns, show every validation problem and
save it all-or-nothing.

Checking is ``api.Store.check_upload`` (reading and validation are ``compassess_core.data.candidates``'s,
markup ``markup``'s, the task ``prompts``'), saving ``api.Store.save_upload`` (idempotent by
content). The column mapping belongs to the file: its widgets are keyed by the file's identity
(``UploadCheck.file_key``), so another file starts from its own suggested mapping. Uploads are
bounded (``COMPASSESS_MAX_UPLOAD_MB``). This page must never save a dataset that has a single
problem, and shows names from the file only through ``plain``.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from compassess_core import api
from compassess_core.data.candidates import CANONICAL, GENERATE_IDS, OPTIONAL
from compassess_core.errors import CompAssessError
from compassess_core.limits import MAX_NAME_CHARS
from pages._auth import guard, require
from pages import _view as view
from pages._plain import plain_message, plain_within
from pages._common import api_store, plain, show_problems_table
from compassess_core.api import counted

guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

NONE = "(none)"
#: How the choices that are not file columns read in the mapping.
CHOICE_LABELS = {NONE: "(none)", GENERATE_IDS: "(generate ids)"}

st.title("Upload candidates")
st.caption("One row per candidate. Canonical columns: context_id, context, candidate_id, text; "
           "optional system; any numeric columns can be reference scores (e.g. coherence).")

upload = st.file_uploader(f"Candidate file (CSV, TSV, JSONL or a JSON array; at most "
                          f"{api.max_upload_mb()} MB)", type=["csv", "tsv", "jsonl", "json"],
                          max_upload_size=api.max_upload_mb())
if upload is None:
    st.info("Choose a file to see its preview, the column mapping and the validation report. "
            "Nothing is saved until you press Save, and only if the file has no problem.")
    st.stop()

raw_bytes = upload.getvalue()


def show_problems(check: api.UploadCheck) -> None:
    advice = ("Change the column mapping above (a problem marked 'mapping' goes away with other "
              "columns, or with generated candidate ids); fix the file for the others."
              if check.mapping_at_fault else
              "Fix the file (rows are numbered as a spreadsheet shows them) and upload it again.")
    if check.empty_texts and not check.dropped_empty:
        advice += (" Empty candidate texts can also be left out: tick 'Leave out ...' above.")
    st.error(f"{len(check.problems)} problem(s) found in {plain(upload.name)}; nothing was saved. "
             f"{advice}", icon=":material/error:")
    show_problems_table(check)


first = api_store().check_upload(raw_bytes, file_label=upload.name)
if first.table is None:
    show_problems(first)
    st.stop()
table = first.table
# The widgets of this file: keyed by its content, so another file starts from its own mapping.
file_key = first.file_key

st.subheader("Preview")
st.caption(f"{counted(len(table), 'row')} x {len(table.columns)} columns; the first 20 rows (row = "
           "line in the file).")
st.dataframe(plain(table.head(20), into="text"), width="stretch", placeholder="")

st.subheader("Column mapping")
columns = first.columns
column_map: dict[str, str | None] = {}
# Three to a row: five side by side cut a column name such as conversation_id at 1024 px.
cols = [box for _ in range(2) for box in st.columns(3)]
for box, canon in zip(cols, CANONICAL + OPTIONAL):
    # The likely columns first (an id column for an id, free text for context and text).
    options = (([NONE] if canon in OPTIONAL else []) + first.choices(canon)
               + ([GENERATE_IDS] if canon == "candidate_id" else []))
    default = first.suggested.get(canon)
    # Nothing fits a required name: leave it empty for the user rather than take column 1.
    index = options.index(default) if default in options else (0 if canon in OPTIONAL else None)
    chosen = box.selectbox(canon, options, index=index, key=f"map_{canon}_{file_key}",
                           format_func=lambda c: CHOICE_LABELS.get(c) or plain(c, "text"),
                           placeholder="choose",
                           help=("One column may be both candidate_id and system (e.g. a 'model' "
                                 "column); or generate ids: c1, c2, ... per context, in file "
                                 "order." if canon in ("candidate_id", "system")
                                 else None))
    column_map[canon] = None if chosen in (NONE, None) else chosen
if first.context_why and column_map.get("context") == first.mapping.get("context"):
    st.caption(plain_within(first.context_why, first.columns))  # why this context, not another
used = {c for c in column_map.values() if c is not None}
score_columns = st.multiselect(
    "Reference-score columns", [c for c in columns if c not in used],
    format_func=lambda c: plain(c, "text"), key=f"scores_{file_key}",
    help="Leave empty to use every remaining numeric column; pick some to use only those.")
name = st.text_input("Dataset name", value=Path(upload.name).stem[:MAX_NAME_CHARS],
                     max_chars=MAX_NAME_CHARS, key=f"name_{file_key}")
strip_key = f"strip_markup_{file_key}"

st.subheader("Validation report")
# Stripping is offered, and on by default only where no text is an HTML document itself (an
# answer that is a web form): stripping that would change the text people read and label.
strip_default = first.markup is None or not first.markup.n_documents
strip = bool(st.session_state.get(strip_key, strip_default))
# Empty candidate texts (a system that wrote nothing) are problems unless the person chooses to
# leave those candidates out: never silently.
drop_key = f"drop_empty_{file_key}"
drop_empty = bool(st.session_state.get(drop_key, False))
same = ({k: v for k, v in column_map.items() if v is not None} == dict(first.mapping)
        and not score_columns and name.strip() == Path(upload.name).stem[:MAX_NAME_CHARS]
        and not (strip and first.markup is not None and first.markup.found)
        and not (drop_empty and first.empty_texts))
check = first if same else api_store().check_upload(
    raw_bytes, file_label=upload.name, mapping=column_map, score_columns=score_columns,
    name=name, strip_markup=strip, drop_empty_text=drop_empty)   # read again only on a change
markup = check.markup
if markup is not None and markup.found:
    st.warning(f"HTML markup found in {markup.n_texts:,} of {markup.n_candidates:,} candidate texts "
               f"and {markup.n_contexts_marked:,} of {counted(markup.n_contexts, 'context')}. The "
               "judge "
               "reads it as part of the text unless it is stripped. Examples:",
               icon=":material/code:")
    st.code("\n".join(markup.examples), language=None)
    if markup.n_documents:
        rows = ", ".join(str(r) for r in markup.document_rows if r is not None)
        st.warning(f"{markup.n_documents:,} candidate text(s) are HTML themselves, markup from "
                   f"first character to last (rows {rows or '?'}"
                   f"{', ...' if markup.n_documents > len(markup.document_rows) else ''}): their "
                   "tags are what they say. Stripping would leave only their words, so the judge "
                   "would compare other texts than the ones people read and label. Kept as "
                   "written unless you tick the box below.", icon=":material/html:")
    st.checkbox("Strip HTML tags and decode entities (`&amp;` -> `&`) before saving; the "
                "dataset records it in its source"
                + (f" (removes every tag of the {markup.n_documents:,} HTML text(s) too)"
                   if markup.n_documents else ""), value=strip_default, key=strip_key)
if check.empty_texts:
    n_empty, rows = len(check.empty_texts), check.empty_texts
    shown_rows = ", ".join(f"{r}" for r in rows[:20]) + (", ..." if n_empty > 20 else "")
    st.checkbox(f"Leave out the {n_empty:,} candidate(s) whose text is empty (row(s) "
                f"{shown_rows} of column {plain(check.mapping.get('text') or 'text')}): the "
                "judge has nothing to compare in them. The dataset's source names the rows "
                "left out; unticked, each is a problem and nothing is saved.",
                key=drop_key, value=False)
if check.problems:
    show_problems(check)
    st.stop()
dataset = check.dataset
if check.dropped_empty:
    st.warning(f"{len(check.empty_texts):,} candidate(s) with an empty text are left out of the "
               f"dataset: row(s) {', '.join(str(r) for r in check.empty_texts)}. Their systems "
               "are ranked on their other candidates only.", icon=":material/filter_alt:")
st.success(f"No problem found: {counted(len(dataset.contexts), 'context')}, "
           f"{counted(dataset.n_candidates, 'candidate')}, "
           f"reference scores: {', '.join(map(plain, dataset.score_columns)) or 'none'}.",
           icon=":material/check_circle:")
if check.missing_scores:
    st.info("Missing reference scores (empty cells, or n/a, NA, - and the like), read as missing "
            "and left out of every correlation: "
            + "; ".join(f"{plain(column)} {n:,} of {counted(dataset.n_candidates, 'candidate')}"
                        for column, n in check.missing_scores.items()) + ".",
            icon=":material/info:")
if check.task is not None:  # what the Run page's wording 'auto' will choose for this file
    st.caption(f"The columns {', '.join(plain(c) for c in dataset.text_columns)} say these are "
               f"{check.task} texts: the judge will read {check.reads} (the Run page's Wording "
               "can change it).")
if check.ignored:
    st.caption("Not used: " + "; ".join(f"{plain(column)} ({why})"
                                        for column, why in check.ignored.items()) + ".")
if check.name_problem:
    st.error(f"Choose another dataset name: {plain_message(check.name_problem)}", icon=":material/error:")
    st.stop()
if st.button("Save to the store", type="primary", icon=":material/save:"):
    require()  # the person holds the role now (pages/_auth.py)
    try:
        saved = api_store().save_upload(check)
    except CompAssessError as e:
        st.error(plain_message(e), icon=":material/error:")
        st.stop()
    view.put("dataset", saved.id)
    if not saved.new:
        st.info(f"This content is already in the store as dataset {plain(saved.name)} (id "
                f"{saved.id}); it was not duplicated.")
    else:
        st.success(f"Saved as dataset {plain(saved.name)} (id {saved.id}). Next: start a run.")
    st.page_link("pages/run.py", label="Go to Run", icon=":material/play_arrow:")

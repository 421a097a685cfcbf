"""Uploading files the project has never seen: the column mapping (a column serving as candidate id
and system at once, generated ids, text-like columns preferred for ``text``), problems that the
mapping causes named as such, and HTML markup found, reported and stripped on request. The engine
(``compassess_core.data.candidates``, ``compassess_core.data.markup``) and the Upload page (AppTest, real store)."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from compassess_core.data.candidates import (GENERATE_IDS, context_reason, load_candidates,
                                             read_table, suggest_column_map)
from compassess_core.errors import ValidationError
from compassess_core.data.markup import (STRIPPED_NOTE, find_markup, strip_dataset_markup,
                                         strip_markup)
from db.store import Store
from tests.app.test_app_pages import APP, app_env, texts  # noqa: F401

#: A story benchmark laid out as such files are: prompt ids, prompts, one story per model, the model
#: as the only candidate identity, HTML line breaks in the texts.
STORIES = ("prompt_id,prompt,story,model,relevance\n"
           "p1,Write about a dragon who fears fire,The dragon hid <br/> from the <b>flames</b>.,gpt2,3\n"
           "p1,Write about a dragon who fears fire,A small dragon &amp; his fear lived alone.,human,5\n"
           "p2,A robot learns to paint,Beep. The robot painted the sea in grey.,gpt2,2\n"
           "p2,A robot learns to paint,The robot dipped its finger in oil and drew a sun.,human,4\n")
#: Summaries with a document id and no candidate id at all.
SUMMARIES = ("doc_id,article,summary,coherence\n"
             "d1,The council met on Monday and voted to repair the bridge.,Council votes bridge repair.,4\n"
             "d1,The council met on Monday and voted to repair the bridge.,Meeting Monday.,2\n"
             "d2,Rain is expected all week in the north of the country.,A rainy week up north.,5\n"
             "d2,Rain is expected all week in the north of the country.,Weather.,1\n")


def test_suggestions_prefer_text_like_columns_and_never_fall_back_to_column_one():
    table = read_table(STORIES.encode(), file_label="stories.csv")
    mapping = suggest_column_map(list(table.columns), table)
    assert mapping == {"context_id": "prompt_id", "context": "prompt", "text": "story",
                       "system": "model", "candidate_id": "model"}
    table = read_table(SUMMARIES.encode(), file_label="summaries.csv")
    mapping = suggest_column_map(list(table.columns), table)
    assert mapping["text"] == "summary" and mapping["context"] == "article"
    assert mapping["candidate_id"] == GENERATE_IDS          # never doc_id, the first column


def test_free_text_columns_are_found_by_content_when_names_do_not_say():
    csv = ("pid,passage,reply_text,label\n"
           "1,A long passage about the sea and the wind.,The sea was calm.,x\n"
           "1,A long passage about the sea and the wind.,Wind blew hard over the waves today.,y\n")
    table = read_table(csv.encode(), file_label="odd.csv")
    mapping = suggest_column_map(list(table.columns), table)
    assert mapping["context"] == "passage" and mapping["text"] == "reply_text"
    assert "pid" not in mapping.values() or mapping.get("context_id") == "pid"


#: A TopicalChat-shaped dialogue file: each context's history, and a `dialog` column that holds
#: the history with the candidate's turn (different on every row of one context).
DIALOGUES = ("context_id,history,dialog,response,model,engagingness\n"
             "c1,hi . do you like jazz ?,hi . do you like jazz ? yes I love it,yes I love it,m1,3\n"
             "c1,hi . do you like jazz ?,hi . do you like jazz ? not really,not really,m2,2\n"
             "c2,what did you read lately ?,what did you read lately ? a novel,a novel,m1,2\n"
             "c2,what did you read lately ?,what did you read lately ? the news today,"
             "the news today,m2,1\n")


def test_one_context_column_is_proposed_the_one_that_is_one_passage_per_context():
    """`dialog` is a context name, but it differs between the rows of one context id: the
    column that is the same passage on every row (`history`) is proposed, once, and one line
    says why; `dialog` as ids is passed over the same way."""
    table = read_table(DIALOGUES.encode(), file_label="dialogues.csv")
    mapping = suggest_column_map(list(table.columns), table)
    assert mapping["context"] == "history" and "dialog" not in mapping.values()
    assert (mapping["context_id"], mapping["text"], mapping["system"]) == ("context_id",
                                                                           "response", "model")
    assert context_reason(table, mapping) == (
        "history is the context: the same passage on every row of one context_id; dialog "
        "differs between those rows, so it is not one passage.")
    load_candidates(DIALOGUES.encode(), column_map=mapping)   # the proposal loads as it is
    as_ids = table.assign(dialog=table["context_id"].radd("dialogue-"))
    mapping = suggest_column_map(list(as_ids.columns), as_ids)
    assert mapping["context"] == "history"
    assert "dialog holds ids or short labels" in context_reason(as_ids, mapping)
    # a file whose only context-named column is the passage needs no explanation
    plain_file = table.drop(columns=["dialog"])
    assert context_reason(plain_file, suggest_column_map(list(plain_file.columns),
                                                         plain_file)) is None
    # where the name-matched column is one passage per context, it stays the proposal
    both = table.assign(dialog=table["history"])
    assert suggest_column_map(list(both.columns), both)["context"] == "dialog"


def test_a_column_named_context_is_kept_and_a_side_by_side_pair_file_is_named_as_such():
    """From a walk with files no test had used: TopicalChat's original JSON (one dialogue per
    row, its responses nested) keeps its `context` column as the context, not a repeated column
    of annotators' initials; LLMBar's MT-Bench JSON (input, output_1, output_2, label) is told
    that it holds a pair per row and what a candidate file needs instead."""
    import json

    dialogues = json.dumps([{"context": f"dialogue {k} so far , about jazz", "fact": "a fact",
                             "annotators": "['sm', 'me', 'er']",
                             "responses": [{"response": "yes", "model": "m1"}]}
                            for k in range(4)]).encode()
    table = read_table(dialogues, file_label="tc_usr_data.json")
    assert suggest_column_map(list(table.columns), table)["context"] == "context"
    pairs = json.dumps([{"input": f"Question {k}?", "output_1": f"Answer one to {k}.",
                         "output_2": f"Answer two to {k}.", "label": "1"}
                        for k in range(3)]).encode()
    with pytest.raises(ValidationError) as err:
        load_candidates(pairs, file_label="llmbar.json")
    said = str(err.value)
    assert "two candidates side by side ('output_1' and 'output_2')" in said, said
    assert "one row per candidate" in said and "import-labels" in said


def test_one_column_may_be_candidate_id_and_system():
    ds = load_candidates(STORIES.encode(), file_label="stories.csv",
                         column_map={"context_id": "prompt_id", "context": "prompt",
                                     "candidate_id": "model", "text": "story", "system": "model"})
    assert [(c.candidate_id, c.system) for c in ds.contexts[0].candidates] == [("gpt2", "gpt2"),
                                                                             ("human", "human")]


def test_generated_ids_number_each_context_in_file_order():
    ds = load_candidates(SUMMARIES.encode(), file_label="summaries.csv",
                         column_map={"context_id": "doc_id", "context": "article",
                                     "candidate_id": GENERATE_IDS, "text": "summary"})
    assert [c.candidate_ids for c in ds.contexts] == [["c1", "c2"], ["c1", "c2"]]


def test_explicit_no_system_is_respected_and_other_clashes_name_the_mapping():
    csv = "context_id,context,system,text\nc,ctx,A,one\nc,ctx,B,two\n"
    # the system column named 'system' is not taken when the user says none
    ds = load_candidates(csv.encode(), file_label="s.csv",
                         column_map={"candidate_id": "system", "system": None})
    assert [c.system for c in ds.contexts[0].candidates] == [None, None]
    with pytest.raises(ValidationError) as err:
        load_candidates(csv.encode(), file_label="s.csv", column_map={"text": "context"})
    clash = [p for p in err.value.problems if "mapped to both" in p.message]
    assert clash and clash[0].cause == "mapping"
    with pytest.raises(ValidationError) as err:   # system ids repeat within a context
        load_candidates(b"context_id,context,system,text\nc,ctx,A,one\nc,ctx,A,two\n",
                        file_label="s.csv", column_map={"candidate_id": "system"})
    assert {p.cause for p in err.value.problems} == {"mapping"}
    with pytest.raises(ValidationError) as err:   # a bad file stays the file's fault
        load_candidates(b"context_id,context,candidate_id,text\nc,ctx,a,one\nc,ctx,b,\n",
                        file_label="f.csv")
    assert [p.cause for p in err.value.problems] == ["file"]


def test_markup_is_found_and_stripped_with_a_record():
    ds = load_candidates(STORIES.encode(), file_label="stories.csv",
                         column_map={"candidate_id": GENERATE_IDS, "context_id": "prompt_id",
                                     "context": "prompt", "text": "story"})
    report = find_markup(ds)
    assert (report.n_texts, report.n_candidates, report.n_contexts_marked) == (2, 4, 0)
    assert "<br/>" in report.examples and "&amp;" in report.examples
    clean = strip_dataset_markup(ds)
    texts_ = [c.text for ctx in clean.contexts for c in ctx.candidates]
    assert texts_[0] == "The dragon hid \n from the flames." and texts_[1] == "A small dragon & his fear lived alone."
    assert STRIPPED_NOTE in clean.source and clean.content_hash != ds.content_hash
    assert not find_markup(clean).found
    assert strip_markup("a < b and 3 > 2") == "a < b and 3 > 2"    # prose is not markup


def test_a_text_that_is_only_markup_is_refused_when_stripping():
    csv = "context_id,context,candidate_id,text\nc,ctx,a,<br/>\nc,ctx,b,fine\n"
    ds = load_candidates(csv.encode(), file_label="m.csv")
    with pytest.raises(ValidationError, match="nothing but HTML markup"):
        strip_dataset_markup(ds)


# ------------------------------------------------------------------------------------ the page

def upload(at: AppTest, name: str, content: str) -> AppTest:
    at.switch_page("pages/upload.py").run()
    at.file_uploader[0].upload(name, content.encode(), "text/csv").run()
    assert not at.exception, at.exception
    return at


def map_key(at: AppTest, canon: str) -> str:
    """The key of the mapping widget of ``canon``: keyed by the file shown (``map_<canon>_<file>``)."""
    [key] = [s.key for s in at.selectbox if re.fullmatch(f"map_{canon}_[0-9a-f]{{16}}", s.key or "")]
    return key


def strip_key(at: AppTest) -> str:
    [key] = [c.key for c in at.checkbox if (c.key or "").startswith("strip_markup_")]
    return key


def shown_mapping(at: AppTest) -> dict:
    return {s.label: s.value for s in at.selectbox if s.label in
            ("context_id", "context", "candidate_id", "text", "system")}


def test_page_saves_a_file_whose_candidates_are_named_by_their_system(app_env):
    at = upload(AppTest.from_file(APP, default_timeout=60).run(), "stories.csv", STORIES)
    mapping = {s.label: s.value for s in at.selectbox if s.label in
               ("context_id", "context", "candidate_id", "text", "system")}
    assert mapping == {"context_id": "prompt_id", "context": "prompt", "candidate_id": "model",
                       "text": "story", "system": "model"}
    assert "HTML markup found in 2 of 4 candidate texts" in texts(at.warning)
    assert at.checkbox(key=strip_key(at)).value is True
    [b for b in at.button if b.label == "Save to the store"][0].click().run()
    [info] = Store(app_env).list_datasets()
    dataset = Store(app_env).load_dataset(info.id)
    assert STRIPPED_NOTE in dataset.source
    assert dataset.contexts[0].candidates[0].text == "The dragon hid \n from the flames."


def test_page_keeps_markup_when_asked(app_env):
    at = upload(AppTest.from_file(APP, default_timeout=60).run(), "stories.csv", STORIES)
    at.checkbox(key=strip_key(at)).uncheck().run()
    [b for b in at.button if b.label == "Save to the store"][0].click().run()
    [info] = Store(app_env).list_datasets()
    assert "<b>flames</b>" in Store(app_env).load_dataset(info.id).contexts[0].candidates[0].text


def test_page_says_change_the_mapping_when_the_mapping_is_at_fault(app_env):
    at = upload(AppTest.from_file(APP, default_timeout=60).run(), "summaries.csv", SUMMARIES)
    assert at.selectbox(key=map_key(at, "candidate_id")).value == GENERATE_IDS
    assert not at.error                                      # generated ids: saveable at once
    at.selectbox(key=map_key(at, "text")).set_value("article").run()  # the article as text and context
    message = texts(at.error)
    assert "Change the column mapping above" in message and "Fix the file" not in message
    report = at.dataframe[-1].value
    assert set(report["cause"]) == {"mapping"}


def test_page_says_why_each_column_is_not_used_and_shows_the_entity_example(app_env):
    """A numeric column left out of the chosen reference scores is 'numbers, not chosen', not
    'mostly text'; the strip-HTML option shows its own entity example as written."""
    table = ("prompt_id,prompt,story,model,relevance,engagement,note\n"
             "p1,Dragons,The dragon hid <br/> from the flames.,gpt2,3,2,draft\n"
             "p1,Dragons,A small dragon lived alone.,human,5,4,final\n")
    at = upload(AppTest.from_file(APP, default_timeout=60).run(), "stories.csv", table)
    at.multiselect[0].set_value(["relevance"]).run()
    shown = texts(at.caption)
    assert "`engagement` (numbers, not chosen as a reference score)" in shown, shown
    assert "`note` (mostly text, so not a reference score)" in shown, shown
    assert "(`&amp;` -> `&`)" in at.checkbox(key=strip_key(at)).label


def test_page_proposes_one_context_and_says_why_in_one_line(app_env):
    at = upload(AppTest.from_file(APP, default_timeout=60).run(), "dialogues.csv", DIALOGUES)
    assert shown_mapping(at)["context"] == "history"
    assert at.selectbox(key=map_key(at, "context")).options[0] == "history"
    why = [c.value for c in at.caption if "is the context" in c.value]
    assert len(why) == 1 and "`dialog` differs between those rows" in why[0], why
    assert "`history` is the context" in why[0]
    at.selectbox(key=map_key(at, "context")).set_value("dialog").run()
    assert "is the context" not in texts(at.caption)   # said of history only


def test_a_new_file_starts_from_its_own_suggested_mapping(app_env):
    """The mapping belongs to the file: a mapping changed for one file does not carry over to the
    next one (the widgets are keyed by the file's content), and coming back to the first file
    finds its own choices."""
    def box(label: str):   # found by label: what a person sees
        return next(s for s in at.selectbox if s.label == label)
    at = upload(AppTest.from_file(APP, default_timeout=60).run(), "summaries.csv", SUMMARIES)
    box("text").set_value("article").run()
    box("context").set_value("summary").run()
    assert shown_mapping(at)["text"] == "article"
    at.file_uploader[0].upload("stories.csv", STORIES.encode(), "text/csv").run()
    assert not at.exception, at.exception
    assert shown_mapping(at) == {"context_id": "prompt_id", "context": "prompt",
                                 "candidate_id": "model", "text": "story", "system": "model"}
    assert "No problem found: 2 contexts, 4 candidates" in texts(at.success)


def test_page_reads_missing_value_markers_as_missing_scores_and_counts_them(app_env):
    """A score column with n/a, NA, - and empty cells saves: they are missing scores, and the
    validation report says how many; the text picker offers text columns before id columns."""
    table = ("doc_id,article,summary,coherence\n"
             "d1,The council met on Monday and voted.,Council votes.,4\n"
             "d1,The council met on Monday and voted.,Meeting Monday.,n/a\n"
             "d2,Rain is expected all week in the north.,A rainy week.,NA\n"
             "d2,Rain is expected all week in the north.,Weather.,-\n")
    at = upload(AppTest.from_file(APP, default_timeout=60).run(), "summaries.csv", table)
    assert not at.error, texts(at.error)
    assert "No problem found: 2 contexts, 4 candidates" in texts(at.success)
    assert "coherence` 3 of 4 candidates" in texts(at.info), texts(at.info)
    options = at.selectbox(key=map_key(at, "text")).options
    assert options[0] == "summary" and options.index("article") < options.index("doc_id")
    [b for b in at.button if b.label == "Save to the store"][0].click().run()
    [info] = Store(app_env).list_datasets()
    scores = [c.scores["coherence"] for ctx in Store(app_env).load_dataset(info.id).contexts
              for c in ctx.candidates]
    assert scores[0] == 4.0 and all(x != x for x in scores[1:])


# ------------------------------------------------------------------------------------ the API

def test_check_upload_says_what_the_page_shows_and_stores_nothing(app_env):
    from compassess_core import api
    store = api.open_store(app_env)
    check = store.check_upload(STORIES.encode(), file_label="stories.csv", strip_markup=True)
    assert check.ok and len(check.file_key) == 16 and len(check.table) == 4
    assert check.suggested == {"context_id": "prompt_id", "context": "prompt", "text": "story",
                               "system": "model", "candidate_id": "model"}
    assert check.markup.found and check.stripped and STRIPPED_NOTE in check.dataset.source
    assert check.task == "story" and check.reads.startswith("Story prompt")
    assert check.dataset.name == "stories" and check.stored_as is None
    assert store.datasets().empty                                     # a check stores nothing
    # a mapping at fault: problems with file, row, column and cause, nothing to store
    bad = store.check_upload(SUMMARIES.encode(), file_label="summaries.csv",
                             mapping={"context_id": "doc_id", "context": "article",
                                      "candidate_id": GENERATE_IDS, "text": "article"})
    assert not bad.ok and bad.mapping_at_fault and bad.dataset is None
    assert {p.cause for p in bad.problems} == {"mapping"}
    with pytest.raises(api.InputError, match="cannot be stored"):
        store.save_upload(bad)
    saved = store.save_upload(check)
    assert saved.new and saved.name == "stories"
    again = store.check_upload(STORIES.encode(), file_label="copy.csv", strip_markup=True)
    assert again.stored_as == (saved.id, "stories") and again.file_key == check.file_key
    assert store.save_upload(again) == api.DatasetSaved(saved.id, "stories", new=False)
    # an unreadable file: its problem, no table, no key of a file read
    empty = store.check_upload(b"", file_label="empty.csv")
    assert not empty.ok and empty.table is None and "empty" in str(empty.problems[0])
    # bounded: a file over the limit is refused from its size
    assert "limit" in str(store.check_upload(STORIES.encode(), file_label="s.csv",
                                             max_bytes=10).problems[0])

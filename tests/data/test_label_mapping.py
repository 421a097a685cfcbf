"""Label files named otherwise: MT-Bench's and Chatbot Arena's ``question_id, model_a, model_b,
winner, judge`` (a winner of ``model_a``/``model_b``/``tie``/``tie (bothbad)``), and any names
through a column map. The same file through the Python API (``Store.check_labels``,
``Store.import_labels(mapping=)``), the CLI (``compassess import-labels --map``) and the Annotate
page's mapping step (AppTest, real SQLite store). No judge is involved.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from compassess_core import api
from compassess_core.cli import main
from compassess_core.data.labels import suggest_label_map, winner_of
from tests.app.test_app_pages import APP, SAMPLE, app_env, texts  # noqa: F401
from tests.answer_buttons import has_answer_button

MT_NAMES = ["question_id", "model_a", "model_b", "winner", "judge"]


def sample_pairs(store: api.Store) -> list[tuple[str, str, str]]:
    """(context, first, second) of three pairs of the stored sample."""
    d = store.dataset("sample_summeval")
    return [(c.context_id, c.candidate_ids[0], c.candidate_ids[k])
            for c in d.contexts for k in (1, 2)][:3]


def arena_file(pairs, winners=("model_a", "model_b", "tie")) -> bytes:
    """An MT-Bench / Chatbot Arena shaped file: a winner names a side by its column."""
    rows = [dict(question_id=c, model_a=a, model_b=b, winner=w, judge=f"expert_{k}", turn=1)
            for k, ((c, a, b), w) in enumerate(zip(pairs, winners))]
    return pd.DataFrame(rows).to_csv(index=False).encode()


@pytest.fixture
def store(app_env) -> api.Store:
    s = api.open_store(app_env)
    s.add_dataset(SAMPLE, name="sample_summeval")
    return s


def test_common_names_are_suggested_and_side_words_name_the_side():
    assert suggest_label_map(MT_NAMES + ["turn", "conversation_a"]) == {
        "context_id": "question_id", "candidate_a": "model_a", "candidate_b": "model_b",
        "winner": "winner", "annotator": "judge"}
    # canonical names win over synonyms; a column is proposed once
    assert suggest_label_map(["context_id", "question_id", "candidate_a", "model_b", "winner"]) \
        == {"context_id": "context_id", "candidate_a": "candidate_a", "candidate_b": "model_b",
            "winner": "winner"}
    assert winner_of("model_a", "x", "y", "model_a", "model_b") == "x"
    assert winner_of("Model-B", "x", "y", "model_a", "model_b") == "y"
    assert winner_of("candidate_b", "x", "y", "model_a", "model_b") == "y"
    assert winner_of("TIE", "x", "y") == "tie"
    assert winner_of("tie (bothbad)", "x", "y") == "both_bad"
    assert winner_of("model_a", "model_b", "model_a", "model_a", "model_b") == "model_a"  # an id first
    assert winner_of("maybe", "x", "y", "model_a", "model_b") is None


def test_check_and_import_an_arena_shaped_file_through_the_api(store):
    pairs = sample_pairs(store)
    body = arena_file(pairs)
    check = store.check_labels(body, dataset="sample_summeval", aspect="overall",
                               file_label="arena.csv")
    assert check.ok, check.problems
    assert dict(check.mapping) == {"context_id": "question_id", "candidate_a": "model_a",
                                   "candidate_b": "model_b", "winner": "winner",
                                   "annotator": "judge"}
    assert [(lb.winner, lb.annotator) for lb in check.labels] == [
        (pairs[0][1], "expert_0"), (pairs[1][2], "expert_1"), ("tie", "expert_2")]
    assert check.attributed("me@example.org", {"expert_1": "bob"}) == {"me@example.org": 2,
                                                                       "bob": 1}
    assert store.human_labels("sample_summeval").empty              # a check stores nothing
    done = store.import_labels(body, dataset="sample_summeval", aspect="overall")
    assert (done.stored, done.already_stored) == (3, 0)
    stored = store.human_labels("sample_summeval")
    assert stored["winner"].tolist() == ["A", "B", "tie"]
    assert stored["annotator"].tolist() == ["expert_0", "expert_1", "expert_2"]


def test_odd_names_need_a_mapping_and_a_wrong_one_is_named_as_such(store):
    pairs = sample_pairs(store)
    body = pd.DataFrame([dict(qid=c, left=a, right=b, pick=a) for c, a, b in pairs]) \
        .to_csv(index=False).encode()
    plain = store.check_labels(body, dataset="sample_summeval", file_label="odd.csv")
    assert not plain.ok and plain.mapping_at_fault
    # left/right are proposed as the two candidates (a side word); qid and pick are not
    assert (plain.suggested["candidate_a"], plain.suggested["candidate_b"]) == ("left", "right")
    assert {p.column for p in plain.problems} == {"context_id", "winner"}
    mapping = {"context_id": "qid", "candidate_a": "left", "candidate_b": "right",
               "winner": "pick", "annotator": None}
    assert store.check_labels(body, dataset="sample_summeval", mapping=mapping).ok
    wrong = store.check_labels(body, dataset="sample_summeval",
                               mapping=dict(mapping, winner="nope"))
    assert [(p.column, p.cause) for p in wrong.problems] == [("winner", "mapping")]
    with pytest.raises(api.ValidationError):
        store.import_labels(body, dataset="sample_summeval")
    done = store.import_labels(body, dataset="sample_summeval", mapping=mapping,
                               annotator="me@example.org")
    assert done.stored == 3 and done.attributed == {"me@example.org": 3}
    with pytest.raises(api.ObjectChanged):   # the dataset shown is called otherwise now
        store.import_labels(body, dataset="sample_summeval", mapping=mapping,
                            expect_name="an old name")


def test_cli_imports_with_a_column_map(store, app_env, tmp_path, capsys):
    pairs = sample_pairs(store)
    odd = tmp_path / "odd.csv"
    pd.DataFrame([dict(qid=c, left=a, right=b, pick="right") for c, a, b in pairs]).to_csv(
        odd, index=False)
    assert main(["import-labels", str(odd), "--dataset", "sample_summeval", "--db", app_env]) != 0
    err = capsys.readouterr().err
    assert "missing required column 'context_id'" in err
    assert "--map FILE_COLUMN=OUR_COLUMN,... (e.g. --map qid=context_id,left=candidate_a" in err
    assert main(["import-labels", str(odd), "--dataset", "sample_summeval", "--db", app_env,
                 "--map", "qid=context_id,left=candidate_a,right=candidate_b,pick=winner"]) == 0
    assert "0 already stored, 3 added" in capsys.readouterr().err
    assert store.human_labels("sample_summeval")["winner"].tolist() == ["B", "B", "B"]
    arena = tmp_path / "arena.csv"
    arena.write_bytes(arena_file(pairs))
    assert main(["import-labels", str(arena), "--dataset", "sample_summeval", "--aspect",
                 "fluency", "--db", app_env]) == 0    # common names need no map
    assert "3 added; attributed to expert_0 (1), expert_1 (1), expert_2 (1)" in \
        capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["import-labels", str(arena), "--dataset", "sample_summeval", "--map", "qid"])


def test_mtbench_human_votes_renamed_as_the_lmsys_release_names_them(tmp_path, app_env):
    """The bundled MT-Bench expert votes with the columns and winner words of the public
    ``mt_bench_human_judgments`` release: API, CLI and page store the same labels."""
    from tests.conftest import MTBENCH_CANDIDATES, MTBENCH_LABELS
    labels = pd.read_csv(MTBENCH_LABELS)
    shaped = pd.DataFrame({"question_id": labels["context_id"], "model_a": labels["candidate_a"],
                           "model_b": labels["candidate_b"],
                           "winner": ["model_a" if w == a else "model_b" if w == b else w
                                      for w, a, b in zip(labels["winner"], labels["candidate_a"],
                                                         labels["candidate_b"])],
                           "judge": labels["annotator"], "turn": 1})
    path = tmp_path / "mt_bench_human_judgments.csv"
    shaped.to_csv(path, index=False)
    store = api.open_store(app_env)
    store.add_dataset(MTBENCH_CANDIDATES, name="mtbench_human")
    check = store.check_labels(path, dataset="mtbench_human")
    assert check.ok and len(check.labels) == len(labels)
    assert [lb.winner for lb in check.labels] == labels["winner"].tolist()
    assert main(["import-labels", str(path), "--dataset", "mtbench_human", "--db", app_env,
                 "--map", "question_id=context_id,model_a=candidate_a,model_b=candidate_b,"
                          "judge=annotator"]) == 0
    stored = store.human_labels("mtbench_human")
    assert len(stored) == len(labels)
    assert stored["winner"].tolist() == ["A" if w == a else "B" for w, a in
                                         zip(labels["winner"], labels["candidate_a"])]


# ------------------------------------------------------------------------------------ the page

def annotate_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/annotate.py").run()
    assert not at.exception, at.exception
    return at


def box(at: AppTest, label: str):
    return next(s for s in at.selectbox if s.label == label)


def test_page_maps_an_arena_shaped_file_and_stores_it(store, app_env):
    pairs = sample_pairs(store)
    at = annotate_page()
    at.file_uploader(key="labels_file").upload("arena.csv", arena_file(pairs), "text/csv").run()
    assert not at.exception, at.exception
    assert {c: box(at, c).value for c in ("context_id", "candidate_a", "candidate_b", "winner",
                                          "annotator")} == {
        "context_id": "question_id", "candidate_a": "model_a", "candidate_b": "model_b",
        "winner": "winner", "annotator": "judge"}
    assert "No problem found: 3 labels" in texts(at.success)
    at.button(key="import_labels").click().run()
    assert not at.exception, at.exception
    assert "0 already stored, 3 added" in texts(at.success)
    stored = store.human_labels("sample_summeval")
    assert stored["winner"].tolist() == ["A", "B", "tie"] and set(stored["source"]) == {"import"}


def test_page_mapping_step_for_odd_names_and_a_fresh_mapping_per_file(store, app_env):
    pairs = sample_pairs(store)
    odd = pd.DataFrame([dict(qid=c, left=a, right=b, pick="left") for c, a, b in pairs]) \
        .to_csv(index=False).encode()
    at = annotate_page()
    at.file_uploader(key="labels_file").upload("odd.csv", odd, "text/csv").run()
    assert "Change the column mapping above" in texts(at.error)
    assert not [b for b in at.button if b.key == "import_labels"]
    for canon, column in (("context_id", "qid"), ("candidate_a", "left"),
                          ("candidate_b", "right"), ("winner", "pick")):
        box(at, canon).set_value(column).run()
    assert not at.exception, at.exception
    assert "No problem found: 3 labels" in texts(at.success)
    at.button(key="import_labels").click().run()
    assert "0 already stored, 3 added" in texts(at.success)
    assert store.human_labels("sample_summeval")["winner"].tolist() == ["A", "A", "A"]
    # another file starts from its own suggested mapping, not from the odd file's choices
    at.file_uploader(key="labels_file").upload("arena.csv", arena_file(pairs), "text/csv").run()
    assert not at.exception, at.exception
    assert box(at, "context_id").value == "question_id" and box(at, "winner").value == "winner"
    assert "No problem found: 3 labels" in texts(at.success)


def test_imported_labels_are_not_the_local_users_and_the_counters_follow_at_once(store):
    """Third-party labels of every pair, imported in single-user local mode: they are filed as
    ``imported`` (the file names no annotator), never as the local user, so Annotate still
    offers the user a pair to judge; the counts of the Judge pairs tab include them at once."""
    d = store.dataset("sample_summeval")
    rows = [dict(context_id=c.context_id, candidate_a=a, candidate_b=b, winner=a)
            for c in d.contexts for i, a in enumerate(c.candidate_ids)
            for b in c.candidate_ids[i + 1:]]
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/annotate.py").run()
    assert "0 judgements stored for this aspect" in texts(at.caption)
    at.file_uploader(key="labels_file").upload(
        "third_party.csv", pd.DataFrame(rows).to_csv(index=False).encode(), "text/csv").run()
    assert "filed as *imported*, not as yours" in texts(at.markdown)
    at.button(key="import_labels").click().run()
    assert not at.exception, at.exception
    assert f"0 already stored, {len(rows)} added" in texts(at.success)
    assert set(store.human_labels("sample_summeval")["annotator"]) == {"imported"}
    assert f"{len(rows)} judgements stored for this aspect" in texts(at.caption)
    assert "You have judged every pair" not in texts(at.success)
    assert has_answer_button(at, "answer_a")

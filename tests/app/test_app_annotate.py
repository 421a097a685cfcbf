"""AppTest tests of the Annotate page on a real SQLite store in ``tmp_path``.

The bundled sample (3 articles x 5 summaries = 30 unordered pairs) is stored as it is; a run, where
one is needed, is the hand-made one of ``test_app_pages.seed_run`` (no model). A named annotator is
a signed-in person with the admin role (``test_app_sign_in.app_as``): in a team, free annotation
(any dataset, the modes that read a run) is an admin's, while a person with the annotator role
labels in their campaigns only (``tests/app/test_app_campaigns.py``); without a name the app is in
single-user local mode, where the account running it is the (admin) annotator.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from compassess_core.people.access import local_identity
from compassess_core.data.candidates import load_candidates
from db.store import Store
from tests.app.test_app_pages import (APP, SAMPLE, app_env, seed_run,  # noqa: F401 - app_env is a fixture
                            texts)
from tests.app.test_app_sign_in import app_as
from tests.answer_buttons import answer_button, answer_key, has_answer_button

N_PAIRS = 30  # 3 contexts x C(5, 2)
ASPECT = "coherence"  # the first aspect the sample has reference scores of (no runs, no labels)


def store_sample(url: str) -> tuple[Store, int]:
    store = Store(url)
    return store, store.save_dataset(load_candidates(SAMPLE, name="sample_summeval"))


def annotate_page(annotator: str | None = None) -> AppTest:
    """The Annotate page signed in as ``annotator`` (given the admin role: free annotation is an
    admin's), or, without one, in single-user local mode."""
    if annotator is not None:
        Store(os.environ["COMPASSESS_DATABASE_URL"]).set_role(annotator, "admin", "test")
        # A deployment with sign-in is a server of its own (the mode is decided once per server).
        from pages import _auth
        _auth.forget_startup()
        return app_as(annotator, "pages/annotate.py")
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    at.switch_page("pages/annotate.py").run()
    assert not at.exception, at.exception
    return at


def shown_pair(at: AppTest) -> tuple[str, str, str]:
    """(context text, left text, right text) as displayed (the first three st.text elements)."""
    return tuple(t.value for t in at.text[:3])


def answer(at: AppTest, key: str) -> AppTest:
    answer_button(at, key).click().run()
    assert not at.exception, at.exception
    return at


def progress_text(at: AppTest) -> str:
    return texts(at.get("progress")) if at.get("progress") else ""


def test_single_user_mode_annotates_as_the_account_running_the_app(app_env):
    store, dataset_id = store_sample(app_env)
    at = annotate_page()
    assert not at.text_input  # nobody types a name
    me = local_identity()
    assert f"`{me}`: 0 / 30 judgements done" in at.get("progress")[0].proto.text
    answer(at, "answer_a")
    assert store.human_judgements_frame(dataset_id)["annotator"].tolist() == [me]


def test_answer_undo_progress_and_shortcuts(app_env):
    store, dataset_id = store_sample(app_env)
    dataset = store.load_dataset(dataset_id)
    at = annotate_page(annotator="alice")  # the signed-in person
    assert not at.sidebar.text_input
    # The keys are heard by pages._answer_keys (each press carries the pair on screen; the
    # browser tests press them); each button names its key.
    labels = {answer_key(b.key): b.label for b in at.button}
    assert {k: labels[k][-3:] for k in ("answer_a", "answer_b", "answer_tie", "answer_skip", "undo")} \
        == {"answer_a": "(A)", "answer_b": "(B)", "answer_tie": "(T)", "answer_skip": "(S)",
            "undo": "(U)"}
    assert at.button(key="undo").disabled  # nothing to undo yet
    assert "`alice`: 0 / 30 judgements done" in at.get("progress")[0].proto.text

    context, left, right = shown_pair(at)
    answer(at, "answer_a")
    df = store.human_judgements_frame(dataset_id, ASPECT)
    assert len(df) == 1
    row = df.iloc[0]
    ctx = dataset.context(row["context_id"])
    texts_of = {c.candidate_id: c.text for c in ctx.candidates}
    # What was stored is what was shown: left/right texts, the screen order and who answered.
    assert (ctx.text, texts_of[row["candidate_left"]], texts_of[row["candidate_right"]]) == \
        (context, left, right)
    assert row["winner"] == "A" and row["annotator"] == "alice" and row["source"] == "app"
    assert row["aspect"] == ASPECT  # no run yet: the aspect of its reference scores
    x, y = sorted((row["candidate_left"], row["candidate_right"]))
    assert row["shown_order"] == ("ab" if row["candidate_left"] == x else "ba")
    assert 0.0 <= row["seconds"] < 60.0
    assert f"Saved: `{row['candidate_left']}` (left) better" in texts(at.success)
    assert "`alice`: 1 / 30 judgements done" in at.get("progress")[0].proto.text

    answer(at, "answer_b")
    second = shown_pair(at)
    answer(at, "answer_tie")
    df = store.human_judgements_frame(dataset_id, ASPECT)
    assert df["winner"].tolist() == ["A", "B", "tie"]

    # Undo deletes the last answer and shows that very pair again, in the same order.
    answer(at, "undo")
    df = store.human_judgements_frame(dataset_id, ASPECT)
    assert df["winner"].tolist() == ["A", "B"]
    assert "Undone" in texts(at.info)
    assert "Saved" not in texts(at.success)  # the undone answer's "Saved" is gone with it
    assert "`alice`: 2 / 30 judgements done" in at.get("progress")[0].proto.text
    answer(at, "answer_skip")
    df = store.human_judgements_frame(dataset_id, ASPECT)
    assert df["winner"].tolist() == ["A", "B", "skip"]
    # A skip is stored (the pair is not shown again) but is no judgement towards the target.
    assert "`alice`: 2 / 30 judgements done" in at.get("progress")[0].proto.text
    assert "(1 skipped, not counted)" in at.get("progress")[0].proto.text
    assert second != shown_pair(at)


def test_never_the_same_pair_twice_then_done(app_env):
    store, dataset_id = store_sample(app_env)
    at = annotate_page(annotator="bob")
    for _ in range(N_PAIRS):
        answer(at, "answer_skip")
    df = store.human_judgements_frame(dataset_id, ASPECT)
    pairs = {(c, frozenset((a, b))) for c, a, b in
             df[["context_id", "candidate_left", "candidate_right"]].itertuples(index=False)}
    assert len(df) == N_PAIRS and len(pairs) == N_PAIRS  # every pair exactly once
    assert "You have judged every pair" in texts(at.success)
    assert not has_answer_button(at, "answer_a")
    # Asking for repeats offers them again.
    at.sidebar.checkbox(key="annotate_repeat").check().run()
    answer(at, "answer_a")
    assert len(store.human_judgements_frame(dataset_id, ASPECT)) == N_PAIRS + 1


def test_left_right_order_is_randomised(app_env):
    store, dataset_id = store_sample(app_env)
    at = annotate_page(annotator="carol")
    for _ in range(20):
        answer(at, "answer_a")
    orders = store.human_judgements_frame(dataset_id, ASPECT)["shown_order"]
    # 20 fair coins all landing the same way has probability 2 * 0.5**20 (about 2e-6).
    assert set(orders) == {"ab", "ba"}


def test_overlap_mode_offers_what_others_labelled(app_env):
    store, dataset_id = store_sample(app_env)
    alice = annotate_page(annotator="alice")
    for _ in range(3):
        answer(alice, "answer_a")
    done = store.human_judgements_frame(dataset_id, ASPECT)
    alice_pairs = {(c, frozenset((a, b))) for c, a, b in
                   done[["context_id", "candidate_left", "candidate_right"]].itertuples(index=False)}
    bob = annotate_page(annotator="bob")
    bob.sidebar.radio(key="annotate_mode").set_value("overlap").run()
    for _ in range(3):
        answer(bob, "answer_b")
    df = store.human_judgements_frame(dataset_id, ASPECT)
    bob_pairs = {(c, frozenset((a, b))) for c, a, b in
                 df.loc[df["annotator"] == "bob", ["context_id", "candidate_left", "candidate_right"]]
                 .itertuples(index=False)}
    assert bob_pairs == alice_pairs


def test_least_certain_mode_needs_a_run(app_env):
    store_sample(app_env)
    at = annotate_page(annotator="dave")
    at.sidebar.radio(key="annotate_mode").set_value("uncertain").run()
    assert "needs an LLM run" in texts(at.warning)


def test_least_certain_mode_with_a_run(app_env):
    store, dataset_id, run_id = seed_run(app_env)
    at = annotate_page(annotator="erin")
    at.sidebar.radio(key="annotate_mode").set_value("uncertain").run()
    assert at.sidebar.selectbox(key=f"annotate_run_{dataset_id}").value == run_id
    answer(at, "answer_a")
    assert len(store.human_judgements_frame(dataset_id, "coherence")) == 1  # the run's aspect


def test_guidelines_are_saved_and_shown_as_plain_text(app_env):
    store, dataset_id = store_sample(app_env)
    at = annotate_page()  # an admin writes them
    evil = "Prefer **faithful** summaries. <script>alert(1)</script>"
    at.text_area(key=f"guidelines_{dataset_id}").input(evil).run()
    at.button(key="save_guidelines").click().run()
    assert store.get_guidelines(dataset_id) == evil
    at = annotate_page(annotator="alice")  # shown above every pair, as plain text
    assert evil in texts(at.text)
    for md in at.markdown:
        assert "<script>" not in md.value


# ------------------------------------------------------------------------------------- import

GOOD_LABELS = ("context_id,candidate_a,candidate_b,winner,annotator\n"
               "{c0},{a},{b},{a},ann1\n"
               "{c0},{a},{b},TIE,ann2\n"
               "{c1},{d},{e},{e},ann1\n")


def who(at: AppTest, name: str):
    """The attribution picker of the file's annotator ``name`` (keyed by the dataset and file)."""
    return next(s for s in at.selectbox if s.label == f"File annotator `{name}`")


def sample_ids(store: Store, dataset_id: int) -> dict:
    d = store.load_dataset(dataset_id)
    c0, c1 = d.contexts[0], d.contexts[1]
    return dict(c0=c0.context_id, a=c0.candidate_ids[0], b=c0.candidate_ids[1],
                c1=c1.context_id, d=c1.candidate_ids[0], e=c1.candidate_ids[2])


def test_import_good_labels_once(app_env):
    store, dataset_id = store_sample(app_env)
    ids = sample_ids(store, dataset_id)
    at = annotate_page()
    at.sidebar.selectbox(key=f"aspect_w_{dataset_id}").set_value("fluency").run()
    body = GOOD_LABELS.format(**ids).encode()
    at.file_uploader(key="labels_file").upload("labels.csv", body, "text/csv").run()
    assert not at.exception, at.exception
    assert "No problem found: 3 labels" in texts(at.success)
    # The file names ann1 and ann2: the labels keep those names (never the importer's).
    assert "Will be stored as: `ann1` (2), `ann2` (1)." in texts(at.caption)
    at.button(key="import_labels").click().run()
    assert ("0 already stored, 3 added for aspect `fluency`; attributed to `ann1` (2), `ann2` (1)"
            in texts(at.success))
    df = store.human_judgements_frame(dataset_id, "fluency")
    assert df[["context_id", "candidate_left", "candidate_right", "winner", "annotator", "source"]] \
        .values.tolist() == [[ids["c0"], ids["a"], ids["b"], "A", "ann1", "import"],
                             [ids["c0"], ids["a"], ids["b"], "tie", "ann2", "import"],
                             [ids["c1"], ids["d"], ids["e"], "B", "ann1", "import"]]
    assert df["shown_order"].isna().all() and df["seconds"].isna().all()
    at.button(key="import_labels").click().run()  # the same file again adds nothing
    assert "3 already stored, 0 added for aspect `fluency`" in texts(at.success)
    assert len(store.human_judgements_frame(dataset_id)) == 3


def test_import_bad_labels_shows_rows_and_columns_and_stores_nothing(app_env):
    store, dataset_id = store_sample(app_env)
    ids = sample_ids(store, dataset_id)
    bad = ("context_id,candidate_a,candidate_b,winner\n"
           "{c0},{a},{b},{a}\n"            # row 2: fine
           "nope,{a},{b},{a}\n"            # row 3: unknown context
           "{c0},{a},{a},{a}\n"            # row 4: same candidate twice
           "{c0},{a},{b},maybe\n"          # row 5: winner neither candidate nor tie
           "{c0},{a},,{a}\n").format(**ids)  # row 6: empty candidate_b
    at = annotate_page()
    at.file_uploader(key="labels_file").upload("bad.csv", bad.encode(), "text/csv").run()
    assert not at.exception, at.exception
    assert any("problem(s) found in `bad.csv`; nothing was stored" in e.value for e in at.error)
    report = at.dataframe[-1].value
    got = {(int(r), c) for r, c in report[["row", "column"]].itertuples(index=False)}
    assert {(3, "context_id"), (4, "candidate_b"), (5, "winner"), (6, "candidate_b")} <= got
    assert not [b for b in at.button if b.key == "import_labels"]
    assert len(store.human_judgements_frame(dataset_id)) == 0


def test_mtbench_human_files_import_as_they_are(app_env):
    from tests.conftest import MTBENCH_CANDIDATES, MTBENCH_LABELS   # the bundled sample
    store = Store(app_env)
    dataset_id = store.save_dataset(load_candidates(MTBENCH_CANDIDATES, name="mtbench_human"))
    body = MTBENCH_LABELS.read_bytes()
    n_rows = len(pd.read_csv(MTBENCH_LABELS))
    at = annotate_page()
    at.file_uploader(key="labels_file").upload(MTBENCH_LABELS.name, body, "text/csv").run()
    assert not at.exception, at.exception
    assert f"No problem found: {n_rows} labels" in texts(at.success)
    at.button(key="import_labels").click().run()
    assert f"0 already stored, {n_rows} added for aspect `overall`" in texts(at.success)
    df = store.human_judgements_frame(dataset_id, "overall")
    assert len(df) == n_rows and set(df["source"]) == {"import"}
    assert math.isnan(df["seconds"].iloc[0])


def test_annotate_follows_the_selected_runs_dataset_and_aspect(app_env):
    """The labels must match the run: a change of dataset brings that dataset's run and its aspect,
    not the previous dataset's aspect and no run."""
    from compassess_core.types import ComparisonResult, Judgement, PairKey
    from tests.app.test_app_pages import settings_for

    store, first_id, first_run = seed_run(app_env, run="coherence-run")
    other_csv = SAMPLE.read_text(encoding="utf-8").replace("A0,", "B0,").replace("A1,", "B1,") \
        .replace("A2,", "B2,")
    other = load_candidates(other_csv.encode(), name="other_articles")
    other_id = store.save_dataset(other)
    run_id = store.create_run("relevance-run", other_id, settings_for("other_articles").with_changes(
        aspect="relevance", aspect_adjective="relevant").to_dict())
    ctx = other.contexts[0]
    store.add_results(run_id, "comparative", [ComparisonResult(
        PairKey(ctx.context_id, ctx.candidates[0].candidate_id, ctx.candidates[1].candidate_id),
        Judgement(0.7, -0.4, -1.2, 0.8), "h")])
    store.set_run_status(run_id, "completed", done=1, total=1)

    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["run"] = "coherence-run"  # single-user local mode: the person is the account
    at.run()
    at.switch_page("pages/annotate.py").run()
    assert not at.exception, at.exception
    assert at.sidebar.selectbox(key=f"aspect_w_{first_id}").value == "coherence"
    assert at.sidebar.selectbox(key=f"annotate_run_{first_id}").value == first_run
    dataset_box = next(s for s in at.sidebar.selectbox if s.label == "Dataset")
    dataset_box.set_value(other_id).run()
    assert not at.exception, at.exception
    assert at.sidebar.selectbox(key=f"aspect_w_{other_id}").value == "relevance"
    assert at.sidebar.selectbox(key=f"annotate_run_{other_id}").value == run_id
    # and back: the first dataset's run and aspect again
    next(s for s in at.sidebar.selectbox if s.label == "Dataset").set_value(first_id).run()
    assert at.sidebar.selectbox(key=f"aspect_w_{first_id}").value == "coherence"
    assert at.sidebar.selectbox(key=f"annotate_run_{first_id}").value == first_run
    answer(at, "answer_a")
    assert store.human_judgements_frame(first_id, "coherence")["annotator"].tolist() == \
        [local_identity()]


def test_a_run_selected_on_another_page_brings_its_dataset(app_env):
    store, first_id, _ = seed_run(app_env, run="coherence-run")
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["annotator"] = "bob"
    at.query_params["dataset"] = "999"          # a stale dataset choice in the link
    at.query_params["run"] = "coherence-run"
    at.run()
    at.switch_page("pages/annotate.py").run()
    assert next(s for s in at.sidebar.selectbox if s.label == "Dataset").value == first_id

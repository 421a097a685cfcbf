"""Regression tests of the app acting on an object other than the one on screen, one per defect a
person found by hand (AppTest on app.py, a real SQLite store). Each failed before the view named
objects by id, widgets were keyed by the object they belong to and writes named the object shown.
The model-based test (``test_app_state_model.py``) looks for more of the same at random."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from compassess_core import api
from compassess_core.data.candidates import load_candidates
from db.store import Store
from tests.app.test_app_pages import APP, SAMPLE, app_env, seed_run, settings_for, texts  # noqa: F401
from tests.answer_buttons import answer_button


def _other_dataset(url: str) -> int:
    """A second dataset: the sample with other context ids, stored."""
    csv = SAMPLE.read_text(encoding="utf-8")
    for k in range(3):
        csv = csv.replace(f"A{k},", f"B{k},")
    return Store(url).save_dataset(load_candidates(csv.encode(), name="other_articles"))


def _annotate(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    at.switch_page("pages/annotate.py").run()
    assert not at.exception, at.exception
    return at


def _dataset_box(at: AppTest):
    return next(s for s in at.sidebar.selectbox if s.label == "Dataset")


def _param(at: AppTest, name: str):
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def test_answers_after_a_dataset_switch_and_back_are_stored_under_the_aspect_shown(app_env):
    """The defect: after the sidebar's Dataset changed and changed back, the 'Aspect judged' box
    showed one aspect while the page and URL used another, and consecutive answers on one screen
    were stored under two aspects."""
    _, first, _ = seed_run(app_env)
    other = _other_dataset(app_env)
    at = _annotate({"dataset": str(first)})
    at.sidebar.selectbox(key=f"aspect_w_{first}").set_value("fluency").run()
    _dataset_box(at).set_value(other).run()
    _dataset_box(at).set_value(first).run()
    assert not at.exception, at.exception
    box = at.sidebar.selectbox(key=f"aspect_w_{first}").value
    assert _param(at, "aspect") == box
    for key in ("answer_a", "answer_b", "answer_tie"):
        answer_button(at, key).click().run()
        assert not at.exception, at.exception
    stored = api.open_store(app_env).human_labels(first)
    assert len(stored) == 3 and set(stored["aspect"]) == {box}
    assert len(api.open_store(app_env).human_labels(other)) == 0


def test_annotate_after_its_dataset_is_deleted_says_so_and_stores_nothing_elsewhere(app_env):
    _, first, _ = seed_run(app_env)
    other = _other_dataset(app_env)
    at = _annotate({"dataset": str(other)})
    assert _dataset_box(at).value == other
    api.open_store(app_env).delete_dataset(other)  # in another tab
    answer_button(at, "answer_a").click().run()
    assert not at.exception, at.exception
    assert "not in the store" in texts(at.warning) or "Not saved" in texts(at.error) + texts(at.info)
    assert len(api.open_store(app_env).human_labels(first)) == 0


def test_an_answer_whose_dataset_was_renamed_since_is_refused(app_env):
    _, first, _ = seed_run(app_env)
    at = _annotate()
    api.open_store(app_env).rename_dataset(first, "renamed-elsewhere")
    answer_button(at, "answer_a").click().run()
    assert not at.exception, at.exception
    assert len(api.open_store(app_env).human_labels(first)) == 0
    assert "is now called `renamed-elsewhere`" in " ".join(
        str(e.value) for e in (*at.error, *at.info, *at.warning, *at.markdown, *at.caption))


def test_the_annotators_target_belongs_to_each_dataset(app_env):
    """The defect: Annotate's target stayed at the previous dataset's value."""
    _, first, _ = seed_run(app_env)
    other = _other_dataset(app_env)
    at = _annotate({"dataset": str(first)})
    at.sidebar.number_input(key=f"annotate_target_{first}").set_value(7).run()
    _dataset_box(at).set_value(other).run()
    assert at.sidebar.number_input(key=f"annotate_target_{other}").value != 7
    _dataset_box(at).set_value(first).run()
    assert at.sidebar.number_input(key=f"annotate_target_{first}").value == 7


def test_switching_dataset_then_choosing_the_llm_run_and_uploading_labels_does_not_crash(app_env):
    """The defect: ``KeyError: st.session_state has no key "annotate_run"`` after switching
    dataset and re-uploading a label file (a callback read a widget key the page had dropped)."""
    store, first, run_id = seed_run(app_env)
    other = _other_dataset(app_env)
    c = store.load_dataset(first).contexts[0]
    body = (f"context_id,candidate_a,candidate_b,winner\n{c.context_id},{c.candidate_ids[0]},"
            f"{c.candidate_ids[1]},{c.candidate_ids[0]}\n").encode()
    at = _annotate({"dataset": str(first)})
    uploads = [u for u in at.get("file_uploader") if u.proto.label.startswith("Label file")]
    _dataset_box(at).set_value(other).run()
    _dataset_box(at).set_value(first).run()
    assert not at.exception, at.exception
    at.sidebar.selectbox(key=f"annotate_run_{first}").set_value(0).run()
    assert not at.exception, at.exception
    at.sidebar.selectbox(key=f"annotate_run_{first}").set_value(run_id).run()
    assert not at.exception, at.exception
    if uploads and hasattr(at, "file_uploader"):
        at.file_uploader(key=uploads[0].key).upload("labels.csv", body, "text/csv").run()
        assert not at.exception, at.exception
        _dataset_box(at).set_value(other).run()
        _dataset_box(at).set_value(first).run()
        at.file_uploader(key=uploads[0].key).upload("labels.csv", body, "text/csv").run()
        assert not at.exception, at.exception


def test_a_link_to_a_renamed_run_opens_that_run(app_env):
    _, _, first = seed_run(app_env, run="first-run")
    seed_run(app_env, run="second-run")
    api.open_store(app_env).rename_run(first, "first-run-renamed")
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["run"] = str(first)
    at.run()
    at.switch_page("pages/rankings.py").run()
    assert not at.exception, at.exception
    picker = at.sidebar.selectbox(key="run_pick_w")
    assert picker.value == first and "first-run-renamed" in picker.format_func(first)
    assert _param(at, "run") == str(first)


def test_a_link_to_a_deleted_run_says_so_and_shows_no_other_run(app_env):
    """The defect: a link (or an open tab) to a deleted run silently loaded the newest run, even
    of another dataset, and rewrote the URL."""
    _, _, first = seed_run(app_env, run="first-run")
    seed_run(app_env, run="second-run")
    api.open_store(app_env).delete_run(first)
    for page in ("rankings", "bias", "matrix", "leaderboard", "agreement", "export"):
        at = AppTest.from_file(APP, default_timeout=60)
        at.query_params["run"] = str(first)
        at.run()
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        assert f"(id {first}) is not in the store" in texts(at.warning), page
        assert at.sidebar.selectbox(key="run_pick_w").value is None, page
        assert not at.metric and not at.dataframe, page  # no number of another run
        assert _param(at, "run") == str(first), page  # the URL still names what it named


def test_an_open_tab_on_a_run_deleted_since_says_so_on_its_next_click(app_env):
    """The defect: a Rankings tab switched to another run after one checkbox click."""
    _, _, first = seed_run(app_env, run="first-run")
    seed_run(app_env, run="second-run")
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["run"] = str(first)
    at.run()
    at.switch_page("pages/rankings.py").run()
    assert at.sidebar.selectbox(key="run_pick_w").value == first
    api.open_store(app_env).delete_run(first)  # in another tab
    at.sidebar.checkbox(key="ci_w").check().run() if any(
        c.key == "ci_w" for c in at.sidebar.checkbox) else at.run()
    assert not at.exception, at.exception
    assert f"(id {first}) is not in the store" in texts(at.warning)
    assert at.sidebar.selectbox(key="run_pick_w").value is None


def test_a_link_by_a_runs_old_name_still_opens_it(app_env):
    """Links made before runs were named by id keep working: the name is looked up once."""
    _, _, first = seed_run(app_env, run="first-run")
    seed_run(app_env, run="second-run")
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["run"] = "first-run"
    at.run()
    at.switch_page("pages/rankings.py").run()
    assert at.sidebar.selectbox(key="run_pick_w").value == first
    assert _param(at, "run") == str(first)

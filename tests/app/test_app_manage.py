"""The Home page's Manage section (AppTest on app.py and a real SQLite store): an admin renames a
run and a dataset, deletes a run after a dry run shows what goes and its name is typed (nothing of it
left in the store, and the view no longer points at it), a delete is refused while a worker executes
the run, and an annotator never gets the section.

The section acts on the object it shows: its picker's choices are ids and every widget is keyed
by the id of the object it acts on, so a second rename acts on the renamed object (not on another
run that now sorts where it stood), and after a delete nothing of the deleted object's form is
left ticked."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from compassess_core import api
from db.store import Store
from tests.app.test_app_pages import APP, app_env, seed_run, texts  # noqa: F401 - app_env is a fixture
from tests.app.test_app_sign_in import app_as, unreachable
from tests.answer_buttons import manage_key


def home(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def param(at: AppTest, name: str):
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def widget(at: AppTest, kind: str, object_id: int, what: str) -> str:
    """The key of a Manage widget that belongs to the ``kind`` with id ``object_id`` (keyed by
    its id and its creation time: ``manage_KIND_ID_STAMP_WHAT``), as the page shows it now."""
    return manage_key(at, kind, object_id, what)


def test_rename_a_run_and_a_dataset(app_env):
    _, dataset_id, run_id = seed_run(app_env)
    at = home({"run": str(run_id)})
    assert "Manage" in [h.value for h in at.subheader]
    at.selectbox(key="manage_target_run").set_value(run_id)
    at.text_input(key=widget(at, "run", run_id, "new_name")).input("-bad name")
    button(at, "Rename").click().run()
    assert "Could not rename the run" in texts(at.error)
    assert [r.name for r in api.open_store(app_env).list_runs()] == ["hand-run"]

    at.text_input(key=widget(at, "run", run_id, "new_name")).input("coherence run")
    button(at, "Rename").click().run()
    assert not at.exception, at.exception
    assert "Renamed the run `hand-run` to `coherence run`." in texts(at.success)
    assert [r.name for r in api.open_store(app_env).list_runs()] == ["coherence run"]
    assert param(at, "run") == str(run_id)  # the view names the run by id: it follows it
    assert "coherence run" in set(at.dataframe[1].value["name"])
    # the picker shows the new name, and still the same run
    assert at.selectbox(key="manage_target_run").value == run_id
    assert "coherence run" in at.selectbox(key="manage_target_run").format_func(run_id)

    at.radio(key="manage_kind").set_value("dataset").run()
    at.selectbox(key="manage_target_dataset").set_value(dataset_id)
    at.text_input(key=widget(at, "dataset", dataset_id, "new_name")).input("summeval three")
    button(at, "Rename").click().run()
    assert not at.exception, at.exception
    assert [d.name for d in api.open_store(app_env).list_datasets()] == ["summeval three"]
    assert api.open_store(app_env).get_run("coherence run").info.dataset_name == "summeval three"


def test_delete_a_run_after_seeing_what_goes(app_env):
    store, dataset_id, run_id = seed_run(app_env)
    at = home({"run": str(run_id), "dataset": str(dataset_id)})
    at.checkbox(key=widget(at, "run", run_id, "delete_open")).check().run()
    assert "removes `1 run, 60 comparisons`" in texts(at.warning)
    delete = button(at, "Delete the run for good")
    assert delete.disabled  # until the name is typed
    at.text_input(key=widget(at, "run", run_id, "confirm_name")).input("hand-run").run()
    button(at, "Delete the run for good").click().run()
    assert not at.exception, at.exception
    assert "Deleted the run `hand-run`: `1 run, 60 comparisons`." in texts(at.success)
    # nothing of it is left: no run, and no comparison in its dataset
    kept = api.open_store(app_env)
    assert kept.list_runs() == []
    assert kept.delete_dataset("sample_summeval", dry_run=True).comparisons == 0
    assert param(at, "run") is None and param(at, "dataset") == str(dataset_id)
    assert "No run in the store." in texts(at.caption)

    # the dataset too: the view forgets it
    at.radio(key="manage_kind").set_value("dataset").run()
    # the form starts afresh
    assert not at.checkbox(key=widget(at, "dataset", dataset_id, "delete_open")).value
    at.checkbox(key=widget(at, "dataset", dataset_id, "delete_open")).check().run()
    assert "removes `1 dataset" in texts(at.warning)
    at.text_input(key=widget(at, "dataset", dataset_id, "confirm_name")).input(
        "sample_summeval").run()
    button(at, "Delete the dataset for good").click().run()
    assert not at.exception, at.exception
    assert api.open_store(app_env).list_datasets() == []
    assert param(at, "dataset") is None


def test_delete_is_refused_while_a_worker_runs(app_env):
    store, _, run_id = seed_run(app_env)
    at = home()
    at.checkbox(key=widget(at, "run", run_id, "delete_open")).check().run()
    at.text_input(key=widget(at, "run", run_id, "confirm_name")).input("hand-run").run()
    # a worker starts executing the run before the button is pressed: a fresh heartbeat
    Store(app_env).set_run_status(run_id, "running", done=10, total=60)
    button(at, "Delete the run for good").click().run()
    assert not at.exception, at.exception
    # the press redraws the page, whose dry run is refused first: the delete is never reached
    assert "This run cannot be deleted now" in texts(at.error)
    assert "being executed by a worker" in texts(at.error) and "cancel the run first" in texts(at.error)
    assert [r.name for r in api.open_store(app_env).list_runs()] == ["hand-run"]
    # drawn afresh, the section says so before offering the delete
    at = home()
    at.checkbox(key=widget(at, "run", run_id, "delete_open")).check().run()
    assert "This run cannot be deleted now" in texts(at.error)
    assert "Delete the run for good" not in [b.label for b in at.button]


def test_an_annotator_does_not_get_the_section(app_env):
    store, _, _ = seed_run(app_env)
    store.set_role("ann@example.org", "annotator", "test")
    store.set_role("admin@example.org", "admin", "test")
    at = app_as("ann@example.org")
    assert "Manage" not in [h.value for h in at.subheader]
    assert not [c for c in at.checkbox if "delete_open" in str(c.key)]
    assert unreachable(at, "pages/home.py")  # Home is not declared for them
    at = app_as("ann@example.org", "pages/annotate.py")
    at.switch_page("pages/home.py").run()  # and outside app.py's navigation it refuses them
    assert "not available to your account" in texts(at.error)
    assert "Manage" not in [h.value for h in at.subheader]
    # a signed-in admin gets it
    at = app_as("admin@example.org")
    assert "Manage" in [h.value for h in at.subheader]


def _second_run(app_env, name: str, dataset_id: int) -> int:
    """Another completed run on the same dataset (an empty one: no judge needed)."""
    store = Store(app_env)
    first = store.list_runs()[0]
    run_id = store.create_run(name, dataset_id, {**first.settings, "seed": 7})
    store.set_run_status(run_id, "completed", done=0, total=0)
    return run_id


def test_a_second_rename_acts_on_the_renamed_run_not_on_another(app_env):
    """The defect: after Rename the picker kept the old name, and a second Rename (fixing a
    typo) renamed a different run that now stood where the first one had."""
    store, dataset_id, run_id = seed_run(app_env)
    other = _second_run(app_env, "another-run", dataset_id)
    at = home()
    at.selectbox(key="manage_target_run").set_value(run_id).run()
    at.text_input(key=widget(at, "run", run_id, "new_name")).input("zz typo run")
    button(at, "Rename").click().run()
    assert not at.exception, at.exception
    # the same run is still the one in the picker, under its new name
    assert at.selectbox(key="manage_target_run").value == run_id
    at.text_input(key=widget(at, "run", run_id, "new_name")).input("fixed run")
    button(at, "Rename").click().run()
    assert not at.exception, at.exception
    names = {r.id: r.name for r in api.open_store(app_env).list_runs()}
    assert names == {run_id: "fixed run", other: "another-run"}


def test_a_rename_of_an_object_renamed_elsewhere_is_refused(app_env):
    """Every write names the object as shown: a rename in another tab since the page was drawn
    makes this page's rename refuse, and nothing changes."""
    _, _, run_id = seed_run(app_env)
    at = home()
    at.text_input(key=widget(at, "run", run_id, "new_name")).input("mine")
    api.open_store(app_env).rename_run(run_id, "theirs")  # another tab
    button(at, "Rename").click().run()
    assert not at.exception, at.exception
    assert "is now called `theirs`" in texts(at.error)
    assert [r.name for r in api.open_store(app_env).list_runs()] == ["theirs"]


def test_after_a_delete_the_picker_shows_no_deleted_run_and_nothing_is_ticked(app_env):
    store, dataset_id, run_id = seed_run(app_env)
    other = _second_run(app_env, "another-run", dataset_id)
    at = home()
    at.selectbox(key="manage_target_run").set_value(run_id).run()
    at.checkbox(key=widget(at, "run", run_id, "delete_open")).check().run()
    at.text_input(key=widget(at, "run", run_id, "confirm_name")).input("hand-run").run()
    button(at, "Delete the run for good").click().run()
    assert not at.exception, at.exception
    picker = at.selectbox(key="manage_target_run")
    assert run_id not in picker.options and picker.value == other
    # the other run's delete box is its own, unticked
    assert not at.checkbox(key=widget(at, "run", other, "delete_open")).value


def test_a_deleted_runs_typed_name_is_gone_and_never_confirms_a_new_run_of_its_name(app_env):
    """The delete box and the typed name belong to the object (its id and creation time) and
    go with it: a new run given the deleted one's name (the store may even give it the same
    id) opens with its delete box shut and nothing typed."""
    store, dataset_id, run_id = seed_run(app_env)
    other = _second_run(app_env, "another-run", dataset_id)
    at = home()
    at.selectbox(key="manage_target_run").set_value(other).run()
    at.checkbox(key=widget(at, "run", other, "delete_open")).check().run()
    at.text_input(key=widget(at, "run", other, "confirm_name")).input("another-run").run()
    button(at, "Delete the run for good").click().run()
    assert not at.exception, at.exception
    assert other not in {r.id for r in Store(app_env).list_runs()}
    assert not [k for k in at.session_state if str(k).startswith(f"manage_run_{other}_")]
    again = _second_run(app_env, "another-run", dataset_id)
    at.run()
    at.selectbox(key="manage_target_run").set_value(again).run()
    assert not at.exception, at.exception
    assert not at.checkbox(key=widget(at, "run", again, "delete_open")).value
    at.checkbox(key=widget(at, "run", again, "delete_open")).check().run()
    assert at.text_input(key=widget(at, "run", again, "confirm_name")).value == ""
    assert button(at, "Delete the run for good").disabled
    assert {r.name for r in Store(app_env).list_runs()} == {"hand-run", "another-run"}

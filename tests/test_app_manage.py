"""The Home page's Manage section (AppTest on app.py and a real SQLite store): an admin renames a
run and a dataset, deletes a run after a dry run shows what goes and its name is typed (nothing of it
left in the store, and the view no longer points at it), a delete is refused while a worker executes
the run, and an annotator never gets the section."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from compassess_core import api
from db.store import Store
from test_app_pages import APP, app_env, seed_run, texts  # noqa: F401 - app_env is a fixture
from test_app_sign_in import app_as, unreachable


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


def test_rename_a_run_and_a_dataset(app_env):
    seed_run(app_env)
    at = home({"run": "hand-run"})
    assert "Manage" in [h.value for h in at.subheader]
    at.selectbox(key="manage_target").set_value("hand-run")
    at.text_input(key="manage_new_name").input("-bad name")
    button(at, "Rename").click().run()
    assert "Could not rename the run" in texts(at.error)
    assert [r.name for r in api.open_store(app_env).list_runs()] == ["hand-run"]

    at.text_input(key="manage_new_name").input("coherence run")
    button(at, "Rename").click().run()
    assert not at.exception, at.exception
    assert "Renamed the run `hand-run` to `coherence run`." in texts(at.success)
    assert [r.name for r in api.open_store(app_env).list_runs()] == ["coherence run"]
    assert param(at, "run") == "coherence run"  # the view follows the new name
    assert "coherence run" in set(at.dataframe[1].value["name"])

    at.radio(key="manage_kind").set_value("dataset").run()
    at.selectbox(key="manage_target").set_value("sample_summeval")
    at.text_input(key="manage_new_name").input("summeval three")
    button(at, "Rename").click().run()
    assert not at.exception, at.exception
    assert [d.name for d in api.open_store(app_env).list_datasets()] == ["summeval three"]
    assert api.open_store(app_env).get_run("coherence run").info.dataset_name == "summeval three"


def test_delete_a_run_after_seeing_what_goes(app_env):
    store, dataset_id, run_id = seed_run(app_env)
    at = home({"run": "hand-run", "dataset": str(dataset_id)})
    at.checkbox(key="manage_delete_open").check().run()
    assert "removes `1 run, 60 comparisons`" in texts(at.warning)
    delete = button(at, "Delete the run for good")
    assert delete.disabled  # until the name is typed
    at.text_input(key="manage_confirm_name").input("hand-run").run()
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
    assert not at.checkbox(key="manage_delete_open").value  # the form starts afresh
    at.checkbox(key="manage_delete_open").check().run()
    assert "removes `1 dataset" in texts(at.warning)
    at.text_input(key="manage_confirm_name").input("sample_summeval").run()
    button(at, "Delete the dataset for good").click().run()
    assert not at.exception, at.exception
    assert api.open_store(app_env).list_datasets() == []
    assert param(at, "dataset") is None


def test_delete_is_refused_while_a_worker_runs(app_env):
    store, _, run_id = seed_run(app_env)
    at = home()
    at.checkbox(key="manage_delete_open").check().run()
    at.text_input(key="manage_confirm_name").input("hand-run").run()
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
    at.checkbox(key="manage_delete_open").check().run()
    assert "This run cannot be deleted now" in texts(at.error)
    assert "Delete the run for good" not in [b.label for b in at.button]


def test_an_annotator_does_not_get_the_section(app_env):
    store, _, _ = seed_run(app_env)
    store.set_role("ann@example.org", "annotator", "test")
    store.set_role("admin@example.org", "admin", "test")
    at = app_as("ann@example.org")
    assert "Manage" not in [h.value for h in at.subheader]
    assert not [c for c in at.checkbox if c.key == "manage_delete_open"]
    assert unreachable(at, "pages/home.py")  # Home is not declared for them
    at = app_as("ann@example.org", "pages/annotate.py")
    at.switch_page("pages/home.py").run()  # and outside app.py's navigation it refuses them
    assert "not available to your account" in texts(at.error)
    assert "Manage" not in [h.value for h in at.subheader]
    # a signed-in admin gets it
    at = app_as("admin@example.org")
    assert "Manage" in [h.value for h in at.subheader]

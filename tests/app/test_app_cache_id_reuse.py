"""SQLite gives a deleted row's id to the next row made: a panel deleted and made again (here
with other members) gets the deleted one's id, and the Panel page must show the new panel, not
the deleted one's cached numbers (the cache keys hold each panel's creation stamp beside its
id). AppTest on app.py, a real SQLite store, three SIMULATED judges."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.app.test_app_pages import APP, app_env  # noqa: F401 - fixture
from tests.app.test_app_panel import MEMBERS, table
from tests.stats.test_panel import seed_simulated_judges


def test_a_panel_made_again_under_a_reused_id_shows_its_own_members(app_env):
    api = seed_simulated_judges(app_env)
    first = api.create_panel("jury", MEMBERS[:2])
    # The panel page recombines three judges: on a loaded machine a run can pass 60 s.
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page("pages/panel.py").run()
    assert not at.exception, at.exception
    assert list(table(at, "member run")["member run"]) == MEMBERS[:2]
    api.delete_panel("jury")
    again = api.create_panel("jury", MEMBERS[1:])
    assert again.panel_info.id == first.panel_info.id  # the id was reused: the case at hand
    at.run()
    assert not at.exception, at.exception
    assert list(table(at, "member run")["member run"]) == MEMBERS[1:]


def test_a_dataset_stored_again_under_a_reused_id_is_read_anew(app_env):
    """The pages' dataset cache (Run, Annotate, Campaigns, Tune read through it): a dataset
    deleted, and another stored in its place under the same id, is served its own contexts
    (the cache key holds the dataset's creation stamp beside its id)."""
    import compassess_core as ca
    from pages._common import cached_dataset
    from tests.app.test_app_pages import SAMPLE

    store = ca.open_store(app_env)
    first = store.add_dataset(SAMPLE, name="data")
    first_id = next(d.id for d in store.list_datasets() if d.name == "data")
    assert [c.text for c in cached_dataset(first_id).contexts] == [c.text for c in first.contexts]
    store.delete_dataset(first_id)
    # New stores never reuse a dataset id (AUTOINCREMENT), but a store made before they did,
    # or another database's sequence reset, does: the same as resetting SQLite's counter here.
    import sqlite3
    with sqlite3.connect(app_env.removeprefix("sqlite:///")) as db:
        db.execute("UPDATE sqlite_sequence SET seq = 0 WHERE name = 'datasets'")
    other = store.add_dataset(SAMPLE.parent / "sample_mtbench.csv", name="data")
    again_id = next(d.id for d in store.list_datasets() if d.name == "data")
    assert again_id == first_id  # the id was reused: the case at hand
    assert ([c.text for c in cached_dataset(again_id).contexts]
            == [c.text for c in other.contexts] != [c.text for c in first.contexts])

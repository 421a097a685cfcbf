"""SQLite gives a deleted row's id to the next row made: a panel deleted and made again (here
with other members) gets the deleted one's id, and the Panel page must show the new panel, not
the deleted one's cached numbers (the cache keys hold each panel's creation stamp beside its
id). AppTest on app.py, a real SQLite store, three SIMULATED judges."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from test_app_pages import APP, app_env  # noqa: F401 - fixture
from test_app_panel import MEMBERS, table
from tests.test_panel import seed_simulated_judges


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

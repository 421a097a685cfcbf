"""AppTest tests of the Panel and Judges pages on a real SQLite store: three SIMULATED judges
(stored comparisons synthesised with known noise, ``tests/test_panel.seed_simulated_judges``)
and one person's labels; every number shown equals the Python API's."""

from __future__ import annotations

import compassess_core as ca
from test_app_pages import app_env, metric, open_page  # noqa: F401 - fixture
from tests.test_panel import SIMULATED, seed_simulated_judges

MEMBERS = [n for n, _, _ in SIMULATED]


def table(at, column: str):
    """The first table on the page with ``column``."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert found, f"no table with column {column!r}"
    return found[0]


def test_panel_page_creates_a_panel_and_shows_what_the_api_reads(app_env):
    api = seed_simulated_judges(app_env)
    at = open_page("panel")
    at.multiselect(key="panel_members").set_value(MEMBERS).run()
    at.text_input(key="panel_name").set_value("jury").run()
    at.radio(key="panel_weights").set_value("learnt").run()
    at.button(key="panel_create").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    panel = api.panel("jury")
    assert panel.weights_mode == "learnt"
    agree = panel.member_agreement()
    assert metric(at, "Fleiss' kappa of the members") == f"{agree.fleiss_kappa:.2f}"
    assert metric(at, "Krippendorff's alpha") == f"{agree.krippendorff_alpha:.2f}"
    assert metric(at, "Pairs where the members split") == f"{len(panel.split_pairs()):,}"
    members = table(at, "member run")
    assert list(members["member run"]) == MEMBERS
    ranks = panel.rankings("win-ratio", "none")
    assert list(table(at, "rank")["candidate_id"]) == list(ranks["candidate_id"])
    assert len(table(at, "member_1")) == 3
    assert len(table(at, "n_for_x")) == len(panel.split_pairs())
    ev = table(at, "spearman_x100")
    assert ev.loc[0, "spearman_x100"] == panel.evaluation().debiased.spearman_x100
    assert metric(at, "Panel vs people: Cohen's kappa without ties") == \
        f"{panel.agreement().report.debiased.majority.kappa_without_ties:.3f}"


def test_panel_page_refuses_a_bad_panel_and_says_why(app_env):
    seed_simulated_judges(app_env, judges=SIMULATED[:2])
    at = open_page("panel")
    at.multiselect(key="panel_members").set_value(MEMBERS[:1]).run()
    at.text_input(key="panel_name").set_value("solo").run()
    at.button(key="panel_create").click().run()
    assert not at.exception, at.exception
    assert any("at least 2" in e.value for e in at.error)
    assert len(ca.open_store(app_env).panels()) == 0


def test_judges_page_ranks_every_run_and_panel_as_the_api(app_env):
    api = seed_simulated_judges(app_env)
    api.create_panel("jury", MEMBERS)
    at = open_page("judge_leaderboard")
    assert not at.exception, at.exception
    at.number_input(key="judges_boot").set_value(100).run()
    assert not at.exception, at.exception
    shown = table(at, "kappa_low")
    board = api.judges("sample", "coherence", n_boot=100)
    assert list(shown["judge"]) == list(board.frame["judge"])
    assert list(shown["kappa_low"].round(6)) == list(board.frame["kappa_low"].round(6))
    assert set(shown["judge"]) == set(MEMBERS) | {"jury"}


def test_both_pages_say_what_is_missing_on_an_empty_store(app_env):
    for page in ("panel", "judge_leaderboard"):
        at = open_page(page)
        assert not at.exception, at.exception
        assert any("No dataset is stored yet" in i.value for i in at.info), page

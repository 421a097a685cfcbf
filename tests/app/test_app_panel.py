"""AppTest tests of the Panel and Judges pages on a real SQLite store: three SIMULATED judges
(stored comparisons synthesised with known noise, ``tests/test_panel.seed_simulated_judges``)
and one person's labels; every number shown equals the Python API's."""

from __future__ import annotations

import compassess_core as ca
from compassess_core.stats.leaderboard import DEFAULT_METHOD
from tests.app.test_app_pages import app_env, metric, open_page  # noqa: F401 - fixture
from tests.stats.test_panel import SIMULATED, seed_simulated_judges

MEMBERS = [n for n, _, _ in SIMULATED]


def table(at, column: str):
    """The first table on the page with ``column``."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert found, f"no table with column {column!r}"
    return found[0]


def form(api, what: str) -> str:
    """The key of a widget of the Panel page's creation form (it belongs to the dataset)."""
    return f"panel_new_{api.dataset_id('sample')}_{what}"


def run_ids(api, names) -> list[int]:
    return [api.get_run(n).id for n in names]


def test_panel_page_creates_a_panel_and_shows_what_the_api_reads(app_env):
    api = seed_simulated_judges(app_env)
    at = open_page("panel")
    at.multiselect(key=form(api, "members")).set_value(run_ids(api, MEMBERS)).run()
    at.text_input(key=form(api, "name")).set_value("jury").run()
    at.radio(key=form(api, "weights")).set_value("learnt").run()
    at.button(key=form(api, "create")).click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    panel = api.panel("jury")
    assert panel.weights_mode == "learnt"
    agree = panel.member_agreement()
    assert metric(at, "Fleiss' kappa") == f"{agree.fleiss_kappa:.2f}"
    assert metric(at, "Krippendorff's alpha") == f"{agree.krippendorff_alpha:.2f}"
    assert metric(at, "Split pairs") == f"{len(panel.split_pairs()):,}"
    members = table(at, "member run")
    assert list(members["member run"]) == MEMBERS
    ranks = panel.rankings(DEFAULT_METHOD, "none")  # the app's default method, as on every page
    assert list(table(at, "rank")["candidate_id"]) == list(ranks["candidate_id"])
    assert len(table(at, "member_1")) == 3
    assert len(table(at, "n_for_x")) == len(panel.split_pairs())
    ev = table(at, "spearman_x100")
    assert ev.loc[0, "spearman_x100"] == f"{panel.evaluation().debiased.spearman_x100:.1f}"
    assert metric(at, "Panel vs people: Cohen's kappa without ties") == \
        f"{panel.agreement().report.debiased.majority.kappa_without_ties:.3f}"
    labels = {b.proto.label for b in at.get("download_button")}
    # the CSV is the rankings the page shows: the page's method
    assert f"Download the panel's rankings (CSV, {DEFAULT_METHOD} at tau = 0.5)" in labels
    # the report is made when asked, in the page, then offered
    [prepare] = [b for b in at.button if b.label == "Prepare the panel's audit report"]
    prepare.click().run()
    assert not at.exception, at.exception
    labels = {b.proto.label for b in at.get("download_button")}
    assert "Download the panel's audit report (HTML)" in labels
    assert any("compassess panel report --name jury" in c.value for c in at.code)


def test_panel_page_refuses_a_bad_panel_and_says_why(app_env):
    api = seed_simulated_judges(app_env, judges=SIMULATED[:2])
    at = open_page("panel")
    at.multiselect(key=form(api, "members")).set_value(run_ids(api, MEMBERS[:1])).run()
    at.text_input(key=form(api, "name")).set_value("solo").run()
    at.button(key=form(api, "create")).click().run()
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


def test_a_link_reproduces_the_panel_and_judges_pages(app_env):
    """The panel, its ranking method, the Judges page's aspect and bootstrap size are in the
    URL: a new session opened on that link shows the same numbers."""
    from streamlit.testing.v1 import AppTest

    from tests.app.test_app_pages import APP
    api = seed_simulated_judges(app_env)
    api.create_panel("jury", MEMBERS)
    api.create_panel("pair", MEMBERS[:2], combine="vote")
    jury = api.panel("jury").panel_info.id
    at = open_page("panel")
    at.selectbox(key="panel_pick_w").set_value(jury).run()
    at.selectbox(key="panel_method").set_value("poe").run()
    assert not at.exception, at.exception
    assert (at.query_params["panel"], at.query_params["method"]) == (str(jury), "poe")
    shown = table(at, "rank")

    fresh = AppTest.from_file(APP, default_timeout=60)
    fresh.query_params.update(panel=str(jury), method="poe")
    fresh.run()
    fresh.switch_page("pages/panel.py").run()
    assert not fresh.exception, fresh.exception
    assert fresh.selectbox(key="panel_pick_w").value == jury
    assert table(fresh, "rank").equals(shown)
    assert list(shown["candidate_id"]) == list(api.panel("jury").rankings("poe", "none")["candidate_id"])

    judges = AppTest.from_file(APP, default_timeout=60)
    judges.query_params.update(aspect="coherence", boot="200")
    judges.run()
    judges.switch_page("pages/judge_leaderboard.py").run()
    assert not judges.exception, judges.exception
    assert judges.number_input(key="judges_boot").value == 200
    board = api.judges("sample", "coherence", n_boot=200)
    assert list(table(judges, "kappa_low")["kappa_low"].round(6)) == \
        list(board.frame["kappa_low"].round(6))


def test_every_panel_table_shows_a_bidi_control_as_its_code_point(app_env, tmp_path, monkeypatch):
    """Ids are the user's: a right-to-left override in context, candidate and system ids shows
    as ``⟨U+202E⟩`` in every table of the Panel page (``pages/_plain.plain``), never raw."""
    import pandas as pd

    import tests.stats.test_panel as panel_tests
    sample = pd.read_csv(panel_tests.SAMPLE)
    for column in ("context_id", "candidate_id", "system"):
        sample[column] = sample[column].astype(str) + "\u202e" + "x"
    bidi = tmp_path / "bidi.csv"
    sample.to_csv(bidi, index=False)
    monkeypatch.setattr(panel_tests, "SAMPLE", bidi)
    api = seed_simulated_judges(app_env)
    at = open_page("panel")
    at.multiselect(key=form(api, "members")).set_value(run_ids(api, MEMBERS)).run()
    at.text_input(key=form(api, "name")).set_value("jury").run()
    at.button(key=form(api, "create")).click().run()
    assert not at.exception, at.exception
    frames = [d.value for d in at.dataframe]
    assert len(frames) >= 7  # members, rankings, evaluation, leaderboard, 2 agreement, split
    for frame in frames:
        cells = [str(c) for c in frame.columns] + [str(v) for v in frame.to_numpy().ravel()]
        assert not [c for c in cells if "\u202e" in c], list(frame.columns)
    assert all("⟨U+202E⟩" in c for c in table(at, "rank")["candidate_id"])


def test_the_evaluation_table_says_n_a_where_a_number_is_undefined(app_env, tmp_path):
    """A dataset without reference scores (no Spearman) and a member that judged no pair in
    both orders (no flip rate): the Panel page's evaluation table says n/a there, never NaN
    or an empty cell. The judge is FAKE (lengths): this is about the table."""
    import pandas as pd

    from tests.fakes import FakeLengthJudge
    from tests.app.test_app_pages import SAMPLE

    bare = tmp_path / "no_reference.csv"
    pd.read_csv(SAMPLE).drop(columns=["coherence", "consistency", "fluency", "relevance"]
                             ).to_csv(bare, index=False)
    store = ca.open_store(app_env)
    store.run(bare, aspect="coherence", strategy="no-repeat", budget=1, name="one-order",
              judge=FakeLengthJudge(), progress=False)
    store.run(bare, aspect="coherence", name="both-orders", judge=FakeLengthJudge(),
              progress=False)
    store.create_panel("jury", ["one-order", "both-orders"], created_by="test")
    at = open_page("panel")
    assert not at.exception, at.exception
    ev = table(at, "flip_rate").set_index("judge")
    assert set(ev["spearman_x100"]) == set(ev["kendall_x100"]) == {"n/a"}
    assert ev.loc["one-order", "flip_rate"] == "n/a"
    assert ev.loc["both-orders", "flip_rate"] != "n/a"
    shown = ev.drop(columns=["comparisons"]).astype(str).to_numpy().ravel()
    assert not any(v.lower() in ("nan", "", "none") for v in shown), shown

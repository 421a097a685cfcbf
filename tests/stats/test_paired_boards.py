"""The paired tests where people compare judges, through the API, the CLI and the pages, on a
real SQLite store of SIMULATED judges (``tests/test_panel.seed_simulated_judges``: stored
comparisons with known noise, one person's labels): the judges board's "against the best" and
the panel against its best member. The numbers are checked against ``paired.paired_accuracy``
called on the same tables, and the two's success counts against a count by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

import compassess_core as ca
from compassess_core.stats import paired
from compassess_core.stats.analysis import resolve_tau
from tests.app.test_app_pages import app_env, open_page  # noqa: F401 - fixture
from tests.stats.test_panel import SIMULATED, cli, seed_simulated_judges

MEMBERS = [n for n, _, _ in SIMULATED]


@pytest.fixture(scope="module")
def store_url(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('paired') / 'paired.db'}"
    api = seed_simulated_judges(url)
    api.create_panel("jury", MEMBERS)
    return url


def test_the_judges_board_compares_each_judge_with_the_best(store_url):
    api = ca.open_store(store_url)
    board = api.judges("sample", "coherence", n_boot=200)
    f = board.frame.set_index("judge")
    best = board.best
    assert best == board.frame.iloc[0]["judge"]
    assert np.isnan(f.loc[best, "vs_best_pp"])  # the best is not compared with itself
    human = api.human_labels("sample", "coherence")
    for name, test in board.paired.items():
        assert name != best and test.name_b == best
        # the same test computed from the judges' own tables, each at its balanced tau*
        a, b = api.get_run(name) if name in MEMBERS else api.panel(name), (
            api.get_run(best) if best in MEMBERS else api.panel(best))
        ta, tb = a.results, b.results
        ref = paired.paired_accuracy(human, ta, resolve_tau("balanced", ta.p), tb,
                                     resolve_tau("balanced", tb.p), n_boot=200)
        assert test.difference == pytest.approx(ref.difference)
        assert (test.low, test.high) == pytest.approx((ref.low, ref.high))
        assert f.loc[name, "vs_best_pp"] == pytest.approx(100 * ref.difference)
        assert f.loc[name, "vs_best_mcnemar_p"] == pytest.approx(ref.mcnemar.p_value)
        assert bool(f.loc[name, "indistinguishable_from_best"]) == (ref.low <= 0 <= ref.high)
        # McNemar's discordant counts, by hand from the per-pair successes
        ca_ = paired.pair_correctness(human, ta, resolve_tau("balanced", ta.p))
        cb_ = paired.pair_correctness(human, tb, resolve_tau("balanced", tb.p))
        both = ca_.merge(cb_, on=["context_id", "x", "y"])
        assert test.mcnemar.n_a_only == int(((both.correct_x == 1) & (both.correct_y == 0)).sum())
        assert test.mcnemar.n_b_only == int(((both.correct_x == 0) & (both.correct_y == 1)).sum())
        assert test.n_contexts == 3 and test.n_pairs == len(both)
    assert set(board.paired) == set(board.frame["judge"]) - {best}
    payload = board.to_dict()
    json.dumps(payload)
    assert payload["best"] == best and set(payload["paired_with_best"]) == set(board.paired)


def test_the_panel_against_its_best_member(store_url):
    api = ca.open_store(store_url)
    jury = api.panel("jury")
    test, note = jury.vs_best_member(n_boot=200)
    assert note == "" and test.name_a == "jury"
    human = api.human_labels("sample", "coherence")
    # the best member is the one most often right with the people
    acc = {m: paired.pair_correctness(human, api.get_run(m).results,
                                      resolve_tau("balanced", api.get_run(m).results.p))
           ["correct"].mean() for m in MEMBERS}
    assert test.name_b == max(acc, key=acc.get)
    assert test.value_b == pytest.approx(acc[test.name_b])
    assert "McNemar's exact p" in test.sentence() and "percentage points" in test.sentence()
    # a dataset without labels: no paired test, and why
    bare = seed_simulated_judges(store_url.replace("paired.db", "bare.db"), labels=False,
                                 judges=SIMULATED[:2])
    bare.create_panel("pair", MEMBERS[:2])
    none, why = bare.panel("pair").vs_best_member(n_boot=50)
    assert none is None and "no human labels" in why


def test_cli_prints_the_paired_tests(store_url, capsys):
    judges = cli(capsys, "judges", "--dataset", "sample", "--aspect", "coherence",
                 "--bootstrap", "100", "--db", store_url)
    assert judges.returncode == 0, judges.stderr
    assert "paired with the best (" in judges.stdout and "McNemar's exact p" in judges.stdout
    assert " pp, p = " in judges.stdout
    out = cli(capsys, "panel", "evaluate", "--name", "jury", "--bootstrap", "100", "--db",
              store_url)
    assert out.returncode == 0, out.stderr
    assert "panel vs its best member" in out.stdout and "McNemar's exact p" in out.stdout
    data = cli(capsys, "panel", "evaluate", "--name", "jury", "--bootstrap", "100", "--json",
               "--db", store_url)
    payload = json.loads(data.stdout)
    assert payload["vs_best_member"]["a"] == "jury"
    assert payload["vs_best_member"]["mcnemar"]["p_value"] is not None


def test_the_pages_show_the_paired_tests(app_env):
    api = seed_simulated_judges(app_env)
    api.create_panel("jury", MEMBERS)
    at = open_page("judge_leaderboard")
    at.number_input(key="judges_boot").set_value(100).run()
    assert not at.exception, at.exception
    board = api.judges("sample", "coherence", n_boot=100)
    shown = next(d.value for d in at.dataframe if "vs_best_pp" in d.value.columns)
    assert list(shown["vs_best_pp"].round(6).fillna(-999)) == \
        list(board.frame["vs_best_pp"].round(6).fillna(-999))
    tests = next(d.value for d in at.dataframe if "McNemar exact p" in d.value.columns)
    assert len(tests) == len(board.paired)
    at = open_page("panel")
    at.tabs  # noqa: B018 - every tab renders on the first run in AppTest
    assert not at.exception, at.exception
    vs = next(d.value for d in at.dataframe if "McNemar exact p" in d.value.columns)
    test, _ = api.panel("jury").vs_best_member()
    assert vs.iloc[0]["A - B (percentage points)"] == pytest.approx(100 * test.difference)
    assert vs.iloc[0]["B"] == test.name_b

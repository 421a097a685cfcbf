"""Win rate against a baseline system (AlpacaEval's headline number), its context-bootstrap
interval, the length-controlled win rate against the baseline and the votes per pair of systems:
hand-worked numbers in the engine, the same numbers through the API and ``compassess leaderboard
--baseline``, and the Leaderboard page's baseline picker kept in the URL."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from streamlit.testing.v1 import AppTest

from compassess_core import api
from compassess_core.cli import main
from compassess_core.errors import InputError
from compassess_core.stats.leaderboard import leaderboard
from tests.app.test_app_pages import APP, app_env, open_page, seed_run, texts  # noqa: F401
from tests.stats.test_leaderboard import full_matrix, make_dataset, table_of

# Three systems, one candidate each per context (x0 of s0, x1 of s1, x2 of s2), at tau = 0.5
# (eq. 10: A wins iff p > tau, so p == 0.5 is a win for B):
#   s1 vs s0: d0 (x1, x0, 0.8) s1, (x0, x1, 0.7) s0; d1 (x1, x0, 0.9) s1, (x0, x1, 0.2) s1
#             -> s1 won 3 of 4
#   s2 vs s0: d0 (x2, x0, 0.5) s0 (tie: B), (x0, x2, 0.5) s2 (tie: B); d1 (x2, x0, 0.3) s0
#             -> s2 won 1 of 3
#   s1 vs s2: d0 (x1, x2, 0.6) s1; d1 (x2, x1, 0.4) s1 -> s1 won 2 of 2
HAND = [("d0", "x1", "x0", 0.8), ("d0", "x0", "x1", 0.7), ("d0", "x2", "x0", 0.5),
        ("d0", "x0", "x2", 0.5), ("d0", "x1", "x2", 0.6),
        ("d1", "x1", "x0", 0.9), ("d1", "x0", "x1", 0.2), ("d1", "x2", "x0", 0.3),
        ("d1", "x2", "x1", 0.4)]


def test_hand_worked_win_rates_against_the_baseline_and_pair_counts():
    ds = make_dataset(2, ["s0", "s1", "s2"])
    board = leaderboard(ds, table_of(HAND), method="win-ratio", tau=0.5, baseline="s0",
                        n_boot=100)
    frame = board.frame.set_index("system")
    assert frame.loc["s1", "win_rate_vs_baseline"] == 0.75
    assert frame.loc["s2", "win_rate_vs_baseline"] == pytest.approx(1 / 3)
    assert list(frame.loc[["s1", "s2"], "n_vs_baseline"]) == [4, 3]
    # the baseline's own row is blank, not 0.5
    base = frame.loc["s0"]
    assert pd.isna(base["win_rate_vs_baseline"]) and pd.isna(base["n_vs_baseline"])
    assert pd.isna(base["win_rate_vs_baseline_low"]) and pd.isna(base["lc_win_rate_vs_baseline"])
    counts = {frozenset((r.system_a, r.system_b)): {r.system_a: r.wins_a, r.system_b: r.wins_b,
                                                    "n": r.n_comparisons}
              for r in board.pair_counts.itertuples()}
    assert counts == {frozenset(("s0", "s1")): {"s0": 1, "s1": 3, "n": 4},
                      frozenset(("s0", "s2")): {"s0": 2, "s2": 1, "n": 3},
                      frozenset(("s1", "s2")): {"s1": 2, "s2": 0, "n": 2}}
    assert board.to_dict()["baseline"] == "s0"
    assert len(board.to_dict()["pair_counts"]) == 3
    # without a baseline: no baseline columns, the pair counts all the same
    plain = leaderboard(ds, table_of(HAND), method="win-ratio", tau=0.5, n_boot=10)
    assert "win_rate_vs_baseline" not in plain.frame.columns and plain.baseline is None
    pd.testing.assert_frame_equal(plain.pair_counts, board.pair_counts)


def test_an_unknown_baseline_names_the_systems():
    ds = make_dataset(2, ["s0", "s1", "s2"])
    with pytest.raises(InputError, match="unknown baseline system 'gpt'.*'s0', 's1', 's2'"):
        leaderboard(ds, table_of(HAND), baseline="gpt")


def test_the_interval_holds_the_estimate_and_narrows_with_more_contexts():
    theta = {"base": 0.0, "good": 0.7, "bad": -0.5}
    names = list(theta)
    rng = np.random.default_rng(5)

    def p_of(ctx, x, y):
        return float(expit(theta[x.system] - theta[y.system] + rng.normal(0, 1.5)))

    def board_of(n_contexts):
        ds = make_dataset(n_contexts, names)
        return leaderboard(ds, full_matrix(ds, p_of), baseline="base", n_boot=300,
                           tau=0.5).frame.set_index("system").loc[["good", "bad"]]

    few, many = board_of(8), board_of(80)
    for frame in (few, many):
        est = frame["win_rate_vs_baseline"]
        assert ((frame["win_rate_vs_baseline_low"] <= est)
                & (est <= frame["win_rate_vs_baseline_high"])).all(), frame
    width = lambda f: (f["win_rate_vs_baseline_high"] - f["win_rate_vs_baseline_low"]).mean()  # noqa: E731
    assert width(many) < 0.6 * width(few)
    assert many.loc["good", "win_rate_vs_baseline"] > 0.5 > many.loc["bad", "win_rate_vs_baseline"]


def test_length_controlled_equals_plain_at_equal_lengths_without_position_bias():
    # Two systems, equal lengths; in each context one system wins in both orders (no position
    # preference): "good" in 6 of 8 contexts. The plain win rate is 6/8; the GLM's strength
    # difference is logit of the mean soft outcome (0.999 or 0.001), sigmoid of it 0.75 too;
    # AlpacaEval's GLM (L1, cross-validated) shrinks it a little toward 0.5.
    ds = make_dataset(8, ["base", "good"])
    rows = []
    for k, ctx in enumerate(ds.contexts):
        good_wins = k < 6
        rows += [(ctx.context_id, "x1", "x0", 0.999 if good_wins else 0.001),
                 (ctx.context_id, "x0", "x1", 0.001 if good_wins else 0.999)]
    board = leaderboard(ds, table_of(rows), baseline="base", n_boot=50)
    good = board.frame.set_index("system").loc["good"]
    assert good["win_rate_vs_baseline"] == 0.75
    assert 0.73 < good["lc_win_rate_vs_baseline"] <= 0.75
    assert board.length_controlled.position_coef == pytest.approx(0.0, abs=1e-3)


def test_cli_and_api_give_the_same_numbers(db_url, capsys):
    seed_run(db_url, run="hand")
    run = api.open_store(db_url).get_run("hand")
    board = run.leaderboard(baseline="M9", n_boot=200)
    assert main(["leaderboard", "--run", "hand", "--baseline", "M9", "--bootstrap", "200",
                 "--format", "json", "--db", db_url]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["baseline"] == "M9"
    assert printed["systems"] == board.to_dict()["systems"]
    assert printed["pair_counts"] == board.to_dict()["pair_counts"]
    m9 = next(r for r in printed["systems"] if r["system"] == "M9")
    assert m9["win_rate_vs_baseline"] is None and m9["n_vs_baseline"] is None
    assert main(["leaderboard", "--run", "hand", "--baseline", "M9", "--bootstrap", "200",
                 "--format", "csv", "--db", db_url]) == 0
    csv = pd.read_csv(io.StringIO(capsys.readouterr().out)).set_index("system")
    np.testing.assert_allclose(csv["win_rate_vs_baseline_low"],
                               board.frame.set_index("system").loc[csv.index,
                                                                   "win_rate_vs_baseline_low"])
    assert main(["leaderboard", "--run", "hand", "--baseline", "M9", "--bootstrap", "200",
                 "--db", db_url]) == 0
    out = capsys.readouterr().out
    assert "# baseline M9" in out and "win_rate_vs_baseline" in out and "votes per pair" in out
    assert main(["leaderboard", "--run", "hand", "--baseline", "nope", "--db", db_url]) == 2
    assert "unknown baseline system 'nope'" in capsys.readouterr().err
    exported = run.leaderboard_bytes("json", baseline="M9", n_boot=200)
    assert exported.metadata["baseline"] == "M9"
    assert "win_rate_vs_baseline" in exported.frame.columns


def test_the_page_shows_the_columns_after_picking_a_baseline_and_the_url_holds_it(app_env):
    seed_run(app_env)
    at = open_page("leaderboard")
    table = next(d.value for d in at.dataframe if "p_best" in d.value.columns)
    assert "win_rate_vs_baseline" not in table.columns
    votes = next(d.value for d in at.dataframe if "wins_a" in d.value.columns)
    assert votes["n_comparisons"].sum() > 0
    at.selectbox(key="board_baseline_w").set_value("M9").run()
    assert not at.exception, at.exception
    table = next(d.value for d in at.dataframe if "p_best" in d.value.columns)
    m9 = table.set_index("system").loc["M9"]
    assert pd.isna(m9["win_rate_vs_baseline"])
    assert table["win_rate_vs_baseline"].notna().sum() == len(table) - 1
    assert {"win_rate_vs_baseline_low", "win_rate_vs_baseline_high", "n_vs_baseline",
            "lc_win_rate_vs_baseline"} <= set(table.columns)
    assert "Against the baseline `M9`" in texts(at.caption)
    assert at.query_params["baseline"] in ("M9", ["M9"])
    # a refresh: a new session with the same URL shows the same baseline
    fresh = AppTest.from_file(APP, default_timeout=60)
    fresh.query_params["baseline"] = "M9"
    fresh.run()
    fresh.switch_page("pages/leaderboard.py").run()
    assert not fresh.exception, fresh.exception
    assert fresh.selectbox(key="board_baseline_w").value == "M9"
    table = next(d.value for d in fresh.dataframe if "p_best" in d.value.columns)
    assert "win_rate_vs_baseline" in table.columns
    # back to none: the columns go, and so does the URL's field
    fresh.selectbox(key="board_baseline_w").set_value("(none)").run()
    assert "baseline" not in fresh.query_params

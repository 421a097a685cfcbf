"""The leaderboard of systems: hand-worked strengths, win rates and context-bootstrap intervals,
a simulated many-context run, and ``compassess leaderboard`` on a real store (and, marked ``model``,
on a run of the real bundled judge: the sample from a fresh store to one JSON row per system)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from compassess_core.data.candidates import content_hash
from compassess_core.errors import InputError
from compassess_core.stats.leaderboard import (NoSystemsError, context_multiplicity, leaderboard,
                                         system_comparisons, system_strengths, win_rate_matrix)
from compassess_core.types import Candidate, ComparisonTable, Context, Dataset
from tests import warm_cli

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "assets" / "sample_summeval.csv"


def make_dataset(n_contexts: int, systems: list[str], lengths=None, with_system=True) -> Dataset:
    lengths = lengths or [10] * len(systems)
    contexts = tuple(
        Context(f"d{c}", f"document {c}", tuple(
            Candidate(f"x{k}", "w" * lengths[k], system=s if with_system else None,
                      scores={"quality": float(len(systems) - k)})
            for k, s in enumerate(systems)))
        for c in range(n_contexts))
    return Dataset("made", contexts, ("quality",), "made.csv", content_hash(contexts))


def table_of(rows: list[tuple[str, str, str, float]]) -> ComparisonTable:
    c, a, b, p = zip(*rows)
    o = lambda v: np.array(v, dtype=object)  # noqa: E731
    f = np.asarray(p, dtype=np.float64)
    return ComparisonTable(o(c), o(a), o(b), f, np.log(f), np.log1p(-f), np.ones_like(f))


def full_matrix(dataset: Dataset, p_of) -> ComparisonTable:
    rows = [(ctx.context_id, x.candidate_id, y.candidate_id, p_of(ctx, x, y))
            for ctx in dataset.contexts for x in ctx.candidates for y in ctx.candidates if x is not y]
    return table_of(rows)


def test_bradley_terry_strengths_of_an_exact_judge_and_hand_worked_win_rates():
    # p(x beats y) = sigmoid(theta_x - theta_y) in both orders, no position bias: Bradley-Terry's
    # maximum-likelihood strengths are theta itself (mean zero).
    theta = {"s1": 1.0, "s2": 0.0, "s3": -1.0}
    ds = make_dataset(4, list(theta))
    table = full_matrix(ds, lambda c, x, y: float(expit(theta[x.system] - theta[y.system])))
    board = leaderboard(ds, table, n_boot=50, reference="quality")
    frame = board.frame.set_index("system")
    np.testing.assert_allclose(frame.loc[["s1", "s2", "s3"], "strength"], [1.0, 0.0, -1.0], atol=1e-4)
    assert list(board.frame["system"]) == ["s1", "s2", "s3"] and list(board.frame["rank"]) == [1, 2, 3]
    # win rates at tau = 0.5: s1 wins all 16 of its comparisons, s2 half, s3 none
    np.testing.assert_allclose(frame.loc[["s1", "s2", "s3"], "win_rate"], [1.0, 0.5, 0.0])
    assert list(frame["n_comparisons"]) == [16, 16, 16] and list(frame["n_contexts"]) == [4, 4, 4]
    # identical contexts: every context-bootstrap replicate is the full fit, so the intervals close
    np.testing.assert_allclose(frame["strength_ci_low"], frame["strength"], atol=1e-4)
    np.testing.assert_allclose(frame["strength_ci_high"], frame["strength"], atol=1e-4)
    np.testing.assert_allclose(frame["p_best"], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(frame["mean_reference"], [3.0, 2.0, 1.0])
    assert board.system_spearman_x100 == pytest.approx(100.0)
    np.testing.assert_allclose(board.win_matrix.loc["s1", "s2"], 1.0)
    np.testing.assert_allclose(board.win_matrix.loc["s2", "s1"], 0.0)


def test_context_bootstrap_interval_is_the_hand_worked_cluster_distribution():
    # Two contexts that disagree: in d0 s1 beats s2 in both orders, in d1 s2 beats s1. The win
    # rate of s1 is 1/2. Drawing 2 contexts with replacement gives (d0, d0) with probability 1/4
    # (win rate 1), a mixed draw with 1/2 (win rate 1/2), (d1, d1) with 1/4 (win rate 0): the
    # 95% interval is [0, 1] and s1 has the highest strength (ties shared) in 3/4 of replicates.
    ds = make_dataset(2, ["s1", "s2"])
    table = table_of([("d0", "x0", "x1", 0.9), ("d0", "x1", "x0", 0.1),
                      ("d1", "x0", "x1", 0.1), ("d1", "x1", "x0", 0.9)])
    board = leaderboard(ds, table, method="win-ratio", n_boot=4000, seed=1)
    s1 = board.frame.set_index("system").loc["s1"]
    assert s1["win_rate"] == 0.5
    assert (s1["win_rate_ci_low"], s1["win_rate_ci_high"]) == (0.0, 1.0)
    assert s1["p_best"] == pytest.approx(0.75, abs=0.03)
    # the two-stage draw: a context drawn c times lends its comparisons c x (its size) copies
    mult = context_multiplicity(np.array([0, 0, 0, 1]), 2, 500, seed=0)
    assert mult.shape == (500, 4)
    per_context = np.stack([mult[:, :3].sum(axis=1), mult[:, 3]], axis=1)
    assert set(np.unique(per_context[:, 0])) == {0, 3, 6}   # context 0 drawn 0, 1 or 2 times
    assert set(np.unique(mult[:, 0])) > {0, 3}              # and its comparisons resampled


def test_simulated_many_contexts_recover_the_order_and_the_intervals_cover_the_truth():
    """A simulated judge (logit p = theta_x - theta_y + 0.3 + noise, sd 0.8). Its soft outcomes
    shrink the strengths towards 0 (the mean of a noisy sigmoid), so the value the intervals
    should cover is the strength the same judge gives on a very large number of contexts."""
    theta = np.array([0.9, 0.4, 0.0, -0.4, -0.9])
    names = [f"sys{k}" for k in range(5)]
    rng = np.random.default_rng(3)

    def p_of(ctx, x, y):
        logit = theta[names.index(x.system)] - theta[names.index(y.system)] + 0.3
        return float(expit(logit + rng.normal(0, 0.8)))

    def tau_star(table):
        return float(np.median(table.p))

    big_ds = make_dataset(3000, names)
    big = full_matrix(big_ds, p_of)
    truth = system_strengths(big_ds, big, tau=tau_star(big))[names].to_numpy()
    ds = make_dataset(60, names)
    table = full_matrix(ds, p_of)
    board = leaderboard(ds, table, tau=tau_star(table), n_boot=300)
    frame = board.frame.set_index("system").loc[names]
    assert list(board.frame["system"]) == names
    covered = (frame["strength_ci_low"] <= truth) & (truth <= frame["strength_ci_high"])
    assert covered.sum() >= 4, (frame, truth)
    # fewer contexts give wider intervals
    small_ds = make_dataset(10, names)
    small_table = full_matrix(small_ds, p_of)
    small = leaderboard(small_ds, small_table, tau=tau_star(small_table), n_boot=300).frame
    width = lambda f: (f["strength_ci_high"] - f["strength_ci_low"]).mean()  # noqa: E731
    assert width(small) > 1.5 * width(frame)


def test_partial_selection_and_systems_missing_from_contexts():
    # 6 contexts, each comparing only 3 of 4 systems, one ordered pair each (a random selection)
    ds = make_dataset(6, ["a", "b", "c", "d"])
    rows = []
    for k, ctx in enumerate(ds.contexts):
        absent = k % 4
        present = [c for j, c in enumerate(ctx.candidates) if j != absent]
        for x, y in ((present[0], present[1]), (present[2], present[0])):
            rows.append((ctx.context_id, x.candidate_id, y.candidate_id, 0.7))
    board = leaderboard(ds, table_of(rows), n_boot=100)
    assert len(board.frame) == 4 and board.frame["strength"].notna().all()
    assert board.frame["strength_ci_low"].notna().all()
    assert board.n_comparisons == 12


def test_same_system_and_systemless_comparisons_are_left_out_with_a_note():
    contexts = (Context("d0", "doc", (Candidate("x", "aa", "s1"), Candidate("y", "bbbb", "s1"),
                                      Candidate("z", "cc", "s2"), Candidate("w", "dd", None))),)
    ds = Dataset("mixed", contexts, (), "", content_hash(contexts))
    table = table_of([("d0", "x", "y", 0.6), ("d0", "x", "z", 0.8), ("d0", "w", "z", 0.4),
                      ("d0", "z", "y", 0.3)])
    sc = system_comparisons(ds, table)
    assert (sc.n_same_system, sc.n_without_system, len(sc.p)) == (1, 1, 2)
    board = leaderboard(ds, table, n_boot=20)
    assert any("same system" in n for n in board.notes)
    assert any("without a system" in n for n in board.notes)


def test_without_systems_it_says_so_and_points_to_per_context_rankings():
    ds = make_dataset(2, ["a", "b"], with_system=False)
    table = full_matrix(ds, lambda c, x, y: 0.6)
    with pytest.raises(NoSystemsError, match="per-context rankings"):
        leaderboard(ds, table)


def test_unknown_reference_and_method_are_input_errors():
    ds = make_dataset(2, ["a", "b"])
    table = full_matrix(ds, lambda c, x, y: 0.6)
    with pytest.raises(InputError, match="reference column 'nope'"):
        leaderboard(ds, table, reference="nope")
    with pytest.raises(InputError, match="unknown ranking method"):
        leaderboard(ds, table, method="elo")


def test_win_rate_matrix_pools_both_orders():
    # s0 vs s1: (0,1) p=0.8 -> s0; (1,0) p=0.7 -> s1; (0,1) p=0.9 -> s0: s0 won 2 of 3
    w = win_rate_matrix(2, [0, 1, 0], [1, 0, 1], [0.8, 0.7, 0.9])
    np.testing.assert_allclose(w, [[np.nan, 2 / 3], [1 / 3, np.nan]])


def test_the_leaderboard_follows_tau():
    # Position-only judge: every first position wins with p in {0.9, 0.55}; at tau = 0.5 the
    # win rates are all 1/2; at the balancing tau 0.725 the better system wins.
    theta = {"s1": 1.0, "s2": 0.0}
    ds = make_dataset(3, list(theta))
    table = full_matrix(ds, lambda c, x, y: 0.9 if theta[x.system] > theta[y.system] else 0.55)
    raw = leaderboard(ds, table, method="win-ratio", tau=0.5, n_boot=20).frame.set_index("system")
    balanced = leaderboard(ds, table, method="win-ratio", tau=0.725, n_boot=20).frame.set_index("system")
    np.testing.assert_allclose(raw["win_rate"], [0.5, 0.5])
    np.testing.assert_allclose(balanced.loc[["s1", "s2"], "win_rate"], [1.0, 0.0])


# ------------------------------------------------------------------------------ the command line

def cli(*args: str, model: bool = False) -> warm_cli.Completed:
    """``compassess ARGS`` in a process of its own, forked from the warm command line (``model``:
    the one with the bundled judge loaded)."""
    return warm_cli.run(*args, model=model, cwd=REPO, timeout=900)


def test_cli_leaderboard_json_csv_and_table(db_url):
    from tests.app.test_app_pages import seed_run
    seed_run(db_url, run="hand")
    out = cli("leaderboard", "--run", "hand", "--format", "json", "--bootstrap", "200", "--db", db_url)
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    systems = payload["systems"]
    assert len(systems) == 9 and {s["system"] for s in systems} >= {"M11", "M23"}
    assert all(s["strength_ci_low"] is not None and s["strength_ci_high"] is not None for s in systems)
    assert payload["ci_resamples"] == "contexts, then comparisons within each"
    assert payload["n_bootstrap"] == 200
    assert any("met in one context only" in n for n in payload["notes"])
    assert payload["reference"] == "coherence" and payload["settings"]["aspect"] == "coherence"
    assert payload["tau"] == pytest.approx(0.725)          # --debias balanced by default
    assert any("answers by position" in w for w in payload["warnings"])
    csv_out = cli("leaderboard", "--run", "hand", "--format", "csv", "--bootstrap", "50", "--db", db_url)
    assert csv_out.stdout.splitlines()[0].startswith("rank,system,strength,strength_ci_low")
    table = cli("leaderboard", "--run", "hand", "--bootstrap", "50", "--db", db_url)
    assert "bootstrap replicates (contexts resampled" in table.stdout and "length bias:" in table.stdout


def test_cli_leaderboard_without_systems_exits_2(db_url, tmp_path):
    from tests.app.test_app_pages import seed_run
    frame = pd.read_csv(SAMPLE, dtype=str, keep_default_na=False).drop(columns=["system"])
    seed_run(db_url, source=frame.to_csv(index=False).encode(), name="nosys", run="nosys")
    out = cli("leaderboard", "--run", "nosys", "--db", db_url)
    assert out.returncode == 2 and "compassess rank" in out.stderr


@pytest.mark.model
def test_sample_run_with_the_bundled_judge_to_a_json_leaderboard(tmp_path, short_summeval):
    """The done-when of the feature: on a fresh store, `compassess run` on the sample then
    `compassess leaderboard --format json` prints one row per system with an interval. The
    sample's 9 systems and 60 comparisons, its articles cut to their opening sentences
    (tests/conftest.py: the leaderboard is checked, not what the articles say; the README's
    commands run the same two on the whole articles)."""
    from compassess_core.judges.models import default_model_path
    if not default_model_path().is_file():
        pytest.skip(f"bundled model not fetched ({default_model_path()})")
    db = str(tmp_path / "fresh.db")
    run = cli("run", str(short_summeval), "--aspect", "coherence", "--run", "s", "--db", db,
              model=True)
    assert run.returncode == 0, run.stderr
    out = cli("leaderboard", "--run", "s", "--format", "json", "--db", db)
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    systems = payload["systems"]
    assert len(systems) == len({s["system"] for s in systems}) == 9
    assert all(s["strength_ci_low"] is not None and s["win_rate_ci_high"] is not None for s in systems)

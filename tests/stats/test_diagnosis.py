"""What a result rests on, said plainly: the positional-bias diagnosis of a judge (hand-worked
comparisons) and the partial-run note, and both in ``compassess evaluate``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from compassess_core.stats.diagnosis import diagnose_position, partial_run_note

REPO = Path(__file__).resolve().parents[2]
# 3 candidates, all 6 ordered pairs; the first position always has p > 0.5
I6, J6 = np.array([0, 1, 0, 2, 1, 2]), np.array([1, 0, 2, 0, 2, 1])


def test_a_judge_that_always_picks_the_first_text_answers_by_position():
    p = np.array([0.9, 0.6, 0.8, 0.7, 0.95, 0.65])
    d = diagnose_position(I6, J6, p, tau=0.5)
    assert d.p_a_raw == 1.0 and d.flip_rate_raw == 1.0 and d.degenerate and d.flips_often
    message = d.message()
    assert "answers by position, not content" in message and "100% of 6 comparisons" in message
    assert "flips with the order in 100% of 3 pairs" in message
    assert "balanced threshold" in d.remedy()


def test_at_the_balancing_threshold_the_same_judge_is_described_not_remedied():
    # tau* = median = 0.75: P(A) = 0.5; pairs (0,1): 0.9 vs 0.6 -> 0 wins both orders, (0,2):
    # 0.8 / 0.7 -> 0 wins first order, 0 wins the other (0.7 <= 0.75), (1,2): 0.95 / 0.65 -> 1
    d = diagnose_position(I6, J6, [0.9, 0.6, 0.8, 0.7, 0.95, 0.65], tau=0.75)
    assert d.p_a_at_tau == 0.5 and d.flip_rate_at_tau == 0.0 and d.balanced
    assert "At the threshold in use (tau = 0.750) P(A) = 0.50" in d.message()
    assert d.remedy() is None


def test_a_sound_judge_gets_no_warning():
    p = np.array([0.9, 0.1, 0.8, 0.2, 0.3, 0.7])
    d = diagnose_position(I6, J6, p, tau=0.5)
    assert d.p_a_raw == 0.5 and d.flip_rate_raw == 0.0
    assert d.message() is None and d.warning() is None


def test_partial_run_note():
    assert partial_run_note("completed", 60, 60) is None
    assert partial_run_note("running", 10, 60) is None          # live: another message says so
    note = partial_run_note("cancelled", 40, 60)
    assert note.startswith("Partial run (cancelled): 40 of 60 planned comparisons (67%)")
    assert "candidates scored" in partial_run_note("failed", 1, 3, "candidates scored")


def test_evaluate_prints_the_warning_and_the_partial_run(db_url):
    from db.store import Store
    from tests.app.test_app_pages import seed_run
    _, _, run_id = seed_run(db_url, run="hand")
    Store(db_url).set_run_status(run_id, "cancelled", done=60, total=90)
    from tests import warm_cli
    cmd = ["evaluate", "--run", "hand", "--db", db_url]
    text = warm_cli.run(*cmd, "--debias", "none", cwd=REPO).stdout
    assert "warning: At tau = 0.5 this judge answers by position, not content: the first (A) text " \
           "wins 100% of 60 comparisons." in text
    assert "Remedy: the balanced threshold tau*" in text
    assert "warning: Partial run (cancelled): 60 of 90 planned comparisons" in text
    out = json.loads(warm_cli.run(*cmd, "--json", cwd=REPO).stdout)
    assert out["partial_run"].startswith("Partial run (cancelled)")
    assert out["warnings"] and "P(A) = 0.50" in out["warnings"][0]

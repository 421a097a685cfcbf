"""Comparing two runs on the same dataset: hand-worked verdict agreement, kappa (checked against
scikit-learn), rank correlations and disagreements, and ``compassess compare`` on a real store."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from compassess_core.stats.compare import compare_runs, shared_pairs
from compassess_core.data.candidates import content_hash
from compassess_core.errors import InputError
from compassess_core.types import ComparisonTable, Dataset
from tests import warm_cli

REPO = Path(__file__).resolve().parents[2]


def table_of(rows):
    c, a, b, p = zip(*rows)
    o = lambda v: np.array(v, dtype=object)  # noqa: E731
    f = np.asarray(p, dtype=np.float64)
    return ComparisonTable(o(c), o(a), o(b), f, np.log(f), np.log1p(-f), np.ones_like(f))


# tiny_dataset: doc1 and doc2, candidates c1 c2 c3 with systems s1 s2 s3.
RUN_A = [("doc1", "c1", "c2", 0.9), ("doc1", "c2", "c1", 0.2), ("doc1", "c1", "c3", 0.3),
         ("doc1", "c3", "c1", 0.8), ("doc1", "c2", "c3", 0.4), ("doc1", "c3", "c2", 0.7),
         ("doc2", "c1", "c2", 0.6), ("doc2", "c2", "c1", 0.3)]
# B agrees on doc1 except (c2, c3); judges doc2's (c1, c2) the other way; never judged (c2, c1) in doc2
RUN_B = [("doc1", "c1", "c2", 0.7), ("doc1", "c2", "c1", 0.1), ("doc1", "c1", "c3", 0.45),
         ("doc1", "c3", "c1", 0.6), ("doc1", "c2", "c3", 0.8), ("doc1", "c3", "c2", 0.6),
         ("doc2", "c1", "c2", 0.2), ("doc2", "c3", "c1", 0.5)]


def test_hand_worked_agreement_kappa_and_disagreements(tiny_dataset):
    result = compare_runs(tiny_dataset, table_of(RUN_A), tiny_dataset, table_of(RUN_B))
    # 7 shared ordered pairs; verdicts (first wins?) A: 1 0 0 1 0 1 1, B: 1 0 0 1 1 1 0
    a = [1, 0, 0, 1, 0, 1, 1]
    b = [1, 0, 0, 1, 1, 1, 0]
    assert result.n_shared == 7 and (result.n_a, result.n_b) == (8, 8)
    assert result.agreement == pytest.approx(5 / 7)
    assert result.kappa == pytest.approx(cohen_kappa_score(a, b))
    pa = [0.9, 0.2, 0.3, 0.8, 0.4, 0.7, 0.6]
    pb = [0.7, 0.1, 0.45, 0.6, 0.8, 0.6, 0.2]
    assert result.p_pearson == pytest.approx(np.corrcoef(pa, pb)[0, 1])
    assert result.p_a_first == pytest.approx(4 / 8)      # A: 0.9, 0.8, 0.7, 0.6 are > 0.5
    assert result.p_b_first == pytest.approx(4 / 8)      # B: 0.7, 0.6, 0.8, 0.6
    dis = result.disagreements
    assert set(zip(dis["context_id"], dis["first"], dis["second"])) == {("doc1", "c2", "c3"),
                                                                         ("doc2", "c1", "c2")}
    # confidence |p_A - 0.5| + |p_B - 0.5| is 0.4 for both; each row names each run's winner
    np.testing.assert_allclose(dis["confidence"], [0.4, 0.4])
    row = dis.set_index(["context_id", "first", "second"]).loc[("doc2", "c1", "c2")]
    assert (row["winner_a"], row["winner_b"]) == ("c1", "c2")


def test_identical_runs_agree_fully(tiny_dataset):
    t = table_of(RUN_A)
    result = compare_runs(tiny_dataset, t, tiny_dataset, t, method="win-ratio")
    assert result.agreement == 1.0 and result.kappa == pytest.approx(1.0)
    assert result.rank_spearman_x100 == pytest.approx(100.0)
    assert result.disagreements.empty


def test_each_run_uses_its_own_tau(tiny_dataset):
    pairs = shared_pairs(table_of(RUN_A), table_of(RUN_B), tau_a=0.5, tau_b=0.75)
    winners = {(r.context_id, r.first, r.second): (r.winner_a, r.winner_b)
               for r in pairs.itertuples(index=False)}
    # at tau_b = 0.75 B's first position wins only where p > 0.75: (doc1, c2, c3) with 0.8
    assert winners["doc1", "c2", "c3"] == ("c3", "c2")
    # B's 0.7 for (doc1, c1, c2) is a win of the first at 0.5 but of the second at 0.75
    assert winners["doc1", "c1", "c2"] == ("c1", "c2")


def test_system_level_correlation_needs_three_systems(tiny_dataset):
    result = compare_runs(tiny_dataset, table_of(RUN_A), tiny_dataset, table_of(RUN_A))
    assert result.n_systems == 3 and result.system_spearman_x100 == pytest.approx(100.0)


def test_different_datasets_and_no_shared_pair_are_refused(tiny_dataset):
    other_contexts = (tiny_dataset.contexts[0],)
    other = Dataset("other", other_contexts, ("coherence",), "", content_hash(other_contexts))
    with pytest.raises(InputError, match="different datasets"):
        compare_runs(tiny_dataset, table_of(RUN_A), other, table_of(RUN_A))
    with pytest.raises(InputError, match="no ordered pair in common"):
        compare_runs(tiny_dataset, table_of(RUN_A[:2]), tiny_dataset, table_of(RUN_A[2:4]))


def cli(*args: str) -> warm_cli.Completed:
    """``compassess ARGS`` in a process of its own (forked from the warm command line)."""
    return warm_cli.run(*args, cwd=REPO, timeout=300)


def test_cli_compare_two_stored_runs(db_url):
    from tests.app.test_app_pages import seed_run
    seed_run(db_url, run="first")
    seed_run(db_url, run="second")
    out = cli("compare", "--run", "first", "--run", "second", "--json", "--db", db_url)
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["run_a"] == "first" and payload["n_shared_pairs"] == 60
    assert payload["verdict_agreement"] == 1.0 and payload["n_disagreements"] == 0
    assert payload["system_spearman_x100"] == pytest.approx(100.0)
    text = cli("compare", "--run", "first", "--run", "second", "--db", db_url)
    assert "Cohen's kappa of the verdicts" in text.stdout
    # the paired test of the two runs: the same p, so 0 difference, no discordant pair
    assert "paired tests" in text.stdout and "McNemar's exact p = 1" in text.stdout
    assert "0.0 percentage points" in text.stdout and "60 ordered pairs judged by both" in text.stdout
    assert payload["paired_position"]["difference"] == 0.0
    one = cli("compare", "--run", "first", "--db", db_url)
    assert one.returncode == 2 and "exactly two runs" in one.stderr


def test_paired_tests_on_the_same_pairs(tiny_dataset):
    result = compare_runs(tiny_dataset, table_of(RUN_A), tiny_dataset, table_of(RUN_B),
                          names=("a", "b"), n_boot=200)
    pos = result.paired_position
    # 7 shared ordered pairs; first-position verdicts A: 1 0 0 1 0 1 1, B: 1 0 0 1 1 1 0
    assert (pos.value_a, pos.value_b) == pytest.approx((4 / 7, 4 / 7))
    assert pos.difference == pytest.approx(0.0) and pos.indistinguishable
    assert (pos.mcnemar.n_a_only, pos.mcnemar.n_b_only) == (1, 1)
    assert pos.mcnemar.p_value == pytest.approx(1.0)
    assert (pos.n_pairs, pos.n_contexts) == (7, 2)
    assert result.paired_people is None and "no human" in result.people_note
    assert result.paired is pos


def test_paired_accuracy_with_people(tiny_dataset):
    import pandas as pd
    # the people prefer c1 to c2 and c3, and c3 to c2, in doc1; c2 to c1 in doc2
    human = pd.DataFrame({"context_id": ["doc1", "doc1", "doc1", "doc2"],
                          "left_id": ["c1", "c1", "c2", "c1"], "right_id": ["c2", "c3", "c3", "c2"],
                          "winner_id": ["c1", "c1", "c3", "c2"]})
    result = compare_runs(tiny_dataset, table_of(RUN_A), tiny_dataset, table_of(RUN_B),
                          human=human, names=("a", "b"), n_boot=200)
    people = result.paired_people
    # per unordered pair, the mean of both orders (eq. 9-10 at 0.5):
    # A: c1c2 (0.9 + 0.8) / 2 -> c1 right; c1c3 (0.3 + 0.2) / 2 -> c3 wrong; c2c3 (0.4 + 0.3) / 2
    #    -> c3 right; doc2 c1c2 0.6 and 0.7 -> c1 wrong.   accuracy 2 / 4
    # B: c1c2 (0.7 + 0.9) / 2 right; c1c3 (0.45 + 0.4) / 2 -> c3 wrong; c2c3 (0.8 + 0.4) / 2 -> c2
    #    wrong; doc2 c1c2 0.2 -> c2 right.                  accuracy 2 / 4
    assert (people.value_a, people.value_b) == (0.5, 0.5)
    assert (people.mcnemar.n_a_only, people.mcnemar.n_b_only) == (1, 1)
    assert people.n_pairs == 4 and people.n_contexts == 2
    assert result.paired is people
    assert result.to_dict()["paired_people"]["mcnemar"]["p_value"] == pytest.approx(1.0)

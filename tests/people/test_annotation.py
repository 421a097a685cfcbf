"""Tests of compassess_core.people.annotation: which pairs to annotate next, and the screen order."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from compassess_core.stats import agreement as ag
from compassess_core.people.annotation import all_pairs, left_right_order, next_pairs, shown_pair
from compassess_core.errors import InputError
from compassess_core.types import Candidate, ComparisonTable, Context, Dataset

CANDIDATES = {"q1": ["c", "a", "b"], "q2": ["a", "b"]}
ALL = [("q1", "a", "b"), ("q1", "a", "c"), ("q1", "b", "c"), ("q2", "a", "b")]


def table(rows: list[tuple[str, str, str, float]]) -> ComparisonTable:
    o = lambda k: np.array([r[k] for r in rows], dtype=object)  # noqa: E731
    z = np.zeros(len(rows))
    return ComparisonTable(o(0), o(1), o(2), np.array([r[3] for r in rows]), z, z, z)


def human(rows: list[tuple[str, str, str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["context_id", "left_id", "right_id", "winner_id", "annotator"])


def test_all_pairs_from_mapping_and_dataset():
    assert list(all_pairs(CANDIDATES).itertuples(index=False, name=None)) == ALL
    ds = Dataset("d", tuple(Context(k, "", tuple(Candidate(c, c) for c in v))
                            for k, v in CANDIDATES.items()))
    assert list(all_pairs(ds).itertuples(index=False, name=None)) == ALL


def test_random_mode_is_seeded_and_complete():
    first = next_pairs(CANDIDATES, None, None, "u", "random", seed=3)
    assert sorted(first) == ALL
    assert next_pairs(CANDIDATES, None, None, "u", "random", seed=3) == first
    orders = {tuple(next_pairs(CANDIDATES, None, None, "u", "random", seed=s)) for s in range(20)}
    assert len(orders) > 1
    assert len(next_pairs(CANDIDATES, None, None, "u", "random", limit=2)) == 2


def test_never_repeats_a_pair_the_annotator_judged_skips_included():
    h = human([("q1", "b", "a", "a", "u"), ("q1", "c", "b", "skip", "u"),
               ("q2", "a", "b", "a", "v")])
    got = next_pairs(CANDIDATES, None, h, "u", "random", seed=0)
    assert sorted(got) == [("q1", "a", "c"), ("q2", "a", "b")]
    assert sorted(next_pairs(CANDIDATES, None, h, "u", "random", allow_repeat=True)) == ALL
    for seed in range(5):
        assert ("q1", "a", "b") not in next_pairs(CANDIDATES, None, h, "u", "overlap", seed=seed)


def test_uncertain_mode_orders_by_distance_from_threshold():
    t = table([("q1", "a", "b", 0.9), ("q1", "a", "c", 0.55), ("q1", "c", "b", 0.3),
               ("q1", "b", "c", 0.6)])
    # confidence at 0.5: ab 0.4, ac 0.05, bc |(0.6 + 1 - 0.3)/2 - 0.5| = 0.15; q2 has no verdict
    got = next_pairs(CANDIDATES, t, None, "u", "uncertain", seed=0)
    assert got == [("q1", "a", "c"), ("q1", "b", "c"), ("q1", "a", "b"), ("q2", "a", "b")]
    assert next_pairs(CANDIDATES, t, None, "u", "uncertain", only_priority=True, limit=1) == \
        [("q1", "a", "c")]
    # at tau = 0.9 the reweighted p of (a, b) = 0.9 sits on the threshold: most uncertain
    assert next_pairs(CANDIDATES, t, None, "u", "uncertain", tau=0.9)[0] == ("q1", "a", "b")
    # a verdict table works like the ComparisonTable
    assert next_pairs(CANDIDATES, ag.llm_pair_verdicts(t), None, "u", "uncertain") == got


def test_flips_mode_puts_order_dependent_pairs_first():
    t = table([("q1", "a", "b", 0.9), ("q1", "b", "a", 0.2),    # consistent: a wins both ways
               ("q1", "a", "c", 0.7), ("q1", "c", "a", 0.6),    # flips, gap |0.7 - 0.4| = 0.3
               ("q1", "b", "c", 0.95), ("q1", "c", "b", 0.9),   # flips, gap |0.95 - 0.1| = 0.85
               ("q2", "a", "b", 0.8)])                          # one order only
    got = next_pairs(CANDIDATES, t, None, "u", "flips", seed=1)
    assert got[:2] == [("q1", "b", "c"), ("q1", "a", "c")]
    assert sorted(got[2:]) == [("q1", "a", "b"), ("q2", "a", "b")]
    assert next_pairs(CANDIDATES, t, None, "u", "flips", only_priority=True) == got[:2]


def test_overlap_mode_prefers_pairs_most_labelled_by_others():
    h = human([("q1", "a", "b", "a", "v"), ("q1", "a", "b", "b", "w"),
               ("q2", "a", "b", "a", "v"), ("q2", "b", "a", "skip", "w"),
               ("q1", "a", "c", "skip", "v"), ("q1", "b", "c", "c", "u")])
    got = next_pairs(CANDIDATES, None, h, "u", "overlap", seed=0, only_priority=True)
    assert got == [("q1", "a", "b"), ("q2", "a", "b")]  # 2 others, then 1 (skips do not count)


def test_modes_are_checked():
    with pytest.raises(InputError, match="unknown annotation mode"):
        next_pairs(CANDIDATES, None, None, "u", "best")
    with pytest.raises(InputError, match="needs an LLM run"):
        next_pairs(CANDIDATES, None, None, "u", "uncertain")


def test_left_right_order_is_a_fair_seeded_coin():
    rng = np.random.default_rng(0)
    draws = np.array([left_right_order(rng) for _ in range(2000)])
    assert 0.45 < draws.mean() < 0.55
    assert left_right_order(7) == left_right_order(7)
    left, right, order = shown_pair("x", "y", 7)
    assert (order == "ab") == left_right_order(7)
    assert {left, right} == {"x", "y"} and (left == "x") == (order == "ab")


def test_judgements_read_back_from_a_real_store(store, tiny_dataset):
    """The store's frame (winner seen from the left, shown_order) feeds next_pairs and agreement."""
    ds_id = store.save_dataset(tiny_dataset)
    store.add_human_judgements(ds_id, [
        dict(context_id="doc1", candidate_left="c2", candidate_right="c1", winner="B",
             annotator="u", shown_order="ba", seconds=2.5),
        dict(context_id="doc1", candidate_left="c1", candidate_right="c3", winner="skip",
             annotator="u", shown_order="ab"),
        dict(context_id="doc2", candidate_left="c1", candidate_right="c2", winner="A",
             annotator="v", shown_order="ab"),
    ])
    frame = store.human_judgements_frame(ds_id)
    left = next_pairs(tiny_dataset, None, frame, "u", "overlap", seed=0)
    assert ("doc1", "c1", "c2") not in left and ("doc1", "c1", "c3") not in left
    assert left[0] == ("doc2", "c1", "c2")  # the only pair someone else labelled
    n = ag.normalise_human_labels(frame)
    assert n["preferred"].tolist() == ["c1", "c1"] and n.attrs["n_skipped"] == 1
    assert ag.human_positional_bias(frame) == (0.5, 2)

"""Tests of compassess_core.stats.agreement: LLM vs human and human vs human agreement, hand-worked and
against scikit-learn's kappa and the krippendorff package's alpha."""

from __future__ import annotations

from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from compassess_core.stats import agreement as ag
from compassess_core.errors import InputError
from compassess_core.types import Candidate, ComparisonTable, Context, Dataset

from tests.conftest import MTBENCH_CANDIDATES, MTBENCH_LABELS


def table(rows: list[tuple[str, str, str, float]]) -> ComparisonTable:
    """A ComparisonTable from (context, a, b, p) rows."""
    o = lambda k: np.array([r[k] for r in rows], dtype=object)  # noqa: E731
    p = np.array([r[3] for r in rows], dtype=np.float64)
    z = np.zeros(len(rows))
    return ComparisonTable(o(0), o(1), o(2), p, z, z, z)


def doubled(*codes):
    """Each code array followed by itself with x better (0) and y better (1) swapped: the pairs
    in both orientations, the data the symmetrised kappa and alpha are defined on."""
    swap = np.array([1, 0, 2])
    out = []
    for c in codes:
        c = np.asarray(c)
        if c.dtype.kind == "f":
            s = c.copy()
            s[c == 0], s[c == 1] = 1, 0
            out.append(np.concatenate([c, s], axis=-1))
        else:
            out.append(np.concatenate([c, swap[c]], axis=-1))
    return out


def human(rows: list[tuple[str, str, str, str, str]]) -> pd.DataFrame:
    """A canonical human table from (context, left, right, winner, annotator) rows."""
    df = pd.DataFrame(rows, columns=["context_id", "left_id", "right_id", "winner_id", "annotator"])
    df["seconds"] = 1.0
    return df


# Ten pairs (x = "a<k>", y = "b<k>") with hand-chosen human and LLM classes:
#   human 0 0 0 0 1 1 1 2 2 0   (0 = x better, 1 = y better, 2 = tie)
#   llm   0 0 0 1 1 1 0 0 1 0
HUMAN_CLASSES = [0, 0, 0, 0, 1, 1, 1, 2, 2, 0]
LLM_CLASSES = [0, 0, 0, 1, 1, 1, 0, 0, 1, 0]


def ten_pairs() -> tuple[pd.DataFrame, ComparisonTable]:
    rows, comps = [], []
    for k, (h, m) in enumerate(zip(HUMAN_CLASSES, LLM_CLASSES)):
        x, y = f"a{k}", f"b{k}"
        win = {0: x, 1: y, 2: "tie"}[h]
        # alternate the screen order so the canonical x < y mapping is exercised both ways
        left, right = (x, y) if k % 2 == 0 else (y, x)
        rows.append(("q", left, right, win, "ann"))
        comps.append(("q", x, y, 0.9 if m == 0 else 0.1))
    return human(rows), table(comps)


def test_accuracy_and_kappa_hand_worked_with_and_without_ties():
    h, t = ten_pairs()
    rep = ag.llm_vs_human(h, t, tau=0.95)
    s = rep.raw.majority
    # confusion rows = human, cols = LLM: x [4 1 0], y [1 2 0], tie [1 1 0]
    np.testing.assert_array_equal(s.confusion, [[4, 1, 0], [1, 2, 0], [1, 1, 0]])
    assert s.n_with_ties == 10 and s.n_without_ties == 8 and s.n_human_ties == 2
    assert s.accuracy_with_ties == pytest.approx(0.6)
    # symmetrised chance: humans decisive 8/10, tie 2/10; LLM decisive 1, tie 0:
    # p_e = 0.8 * 1 / 2 + 0.2 * 0 = 0.4 -> (0.6 - 0.4) / 0.6 = 1/3
    assert s.kappa_with_ties == pytest.approx(1 / 3)
    assert s.accuracy_without_ties == pytest.approx(0.75)
    # no ties: p_e = 1/2 -> kappa = 2 * 0.75 - 1 = 1/2
    assert s.kappa_without_ties == pytest.approx(0.5)
    # the single annotator's numbers equal the majority's
    assert rep.raw.per_annotator["ann"].kappa_with_ties == pytest.approx(1 / 3)
    # at tau = 0.95 every p = 0.9 or 0.1 is below tau: the LLM says "y" everywhere
    d = rep.debiased.majority
    assert rep.debiased.tau == 0.95
    np.testing.assert_array_equal(d.confusion, [[0, 5, 0], [0, 3, 0], [0, 2, 0]])
    assert d.accuracy_with_ties == pytest.approx(0.3)
    # p_o = 0.3, p_e = 0.4 -> -1/6 (a judge that always names the same id is chance, not 0)
    assert d.kappa_with_ties == pytest.approx(-1 / 6)
    assert rep.n_pairs_labelled == rep.n_pairs_matched == 10
    assert any("never answers tie" in n for n in rep.notes)
    summary = rep.summary_frame()
    assert list(summary["threshold"]) == ["raw"] * 3 + ["debiased"] * 3
    assert list(summary["scope"]) == ["majority", "all votes", "ann"] * 2
    assert summary.loc[0, "kappa_without_ties"] == pytest.approx(0.5)
    assert rep.raw.majority.confusion_frame().loc["human: tie", "LLM: second-listed better"] == 1


def test_llm_vs_human_accepts_a_verdict_table_and_skips_unjudged_pairs():
    h, t = ten_pairs()
    extra = human([("q", "zz1", "zz2", "zz1", "ann"), ("q", "a0", "b0", "skip", "other")])
    rep = ag.llm_vs_human(pd.concat([h, extra], ignore_index=True), ag.llm_pair_verdicts(t, 0.7))
    assert rep.n_pairs_labelled == 11 and rep.n_pairs_matched == 10
    assert rep.n_skipped == 1 and rep.n_judgements == 11
    assert rep.raw.majority.kappa_with_ties == pytest.approx(1 / 3)
    assert any("not judged by the run" in n for n in rep.notes)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("seed", range(40))
def test_kappa_matches_sklearn_on_random_data(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    k = int(rng.integers(2, 4))
    a = rng.integers(0, k, n)
    b = np.where(rng.random(n) < 0.5, a, rng.integers(0, k, n))
    expected = cohen_kappa_score(a, b)
    got = ag.cohen_kappa(a, b)
    if np.isnan(expected):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(expected, abs=1e-12)


def test_kappa_edge_cases():
    assert np.isnan(ag.cohen_kappa([], []))
    assert np.isnan(ag.cohen_kappa([1, 1, 1], [1, 1, 1]))  # p_e = 1: undefined
    assert ag.cohen_kappa([0, 1, 0, 1], [1, 0, 1, 0]) == pytest.approx(-1.0)
    with pytest.raises(InputError, match="class codes"):
        ag.cohen_kappa([0, 3], [0, 1])


def test_llm_verdicts_average_both_orders_and_reweight():
    t = table([("q", "a", "b", 0.8), ("q", "b", "a", 0.6), ("q", "c", "a", 0.3),
               ("q", "c", "a", 0.5)])
    v = ag.llm_pair_verdicts(t, 0.5).set_index(["x", "y"])
    ab = v.loc[("a", "b")]
    assert ab["p_xy"] == 0.8 and ab["p_yx"] == 0.6
    assert ab["p_avg"] == pytest.approx(0.6)  # (0.8 + 1 - 0.6) / 2
    assert ab["verdict"] == "a" and ab["confidence"] == pytest.approx(0.1)
    assert bool(ab["flips"])  # a wins first, b wins when first too
    ac = v.loc[("a", "c")]
    assert np.isnan(ac["p_xy"]) and ac["p_yx"] == pytest.approx(0.4)  # mean of 0.3 and 0.5
    assert ac["verdict"] == "a" and ac["p_avg"] == pytest.approx(0.6) and not ac["both_orders"]
    # tau = 0.7: a = 3/7; p^(0.8) = (2.4/7)/(2.4/7 + 0.2) = 12/19, p^(0.6) = (1.8/7)/(1.8/7 + 0.4) = 9/23
    w = ag.llm_pair_verdicts(t, 0.7).set_index(["x", "y"]).loc[("a", "b")]
    assert w["p_avg"] == pytest.approx((12 / 19 + 1 - 9 / 23) / 2)
    assert not bool(w["flips"])  # 0.8 > 0.7 and 0.6 <= 0.7: a wins in both orders
    with pytest.raises(InputError, match="tau"):
        ag.llm_pair_verdicts(t, 1.0)


@given(st.lists(st.tuples(st.sampled_from(["q", "r", "10", "9"]),
                          st.sampled_from(["a", "b", "B", "c2", "c10"]),
                          st.sampled_from(["a", "b", "B", "c2", "c10"]),
                          st.one_of(st.floats(0, 1), st.just(float("nan")))), max_size=40))
@settings(max_examples=80, deadline=None)
def test_pair_probabilities_are_what_plain_loops_over_the_comparisons_give(rows):
    """Each unordered pair's mean p per order, collected again comparison by comparison (no
    numpy grouping, no pandas): the pairs in sorted order, NaN for an order not judged, a
    comparison of a candidate with itself or with a non-finite p left out."""
    want: dict = {}
    for c, a, b, p in rows:
        if a == b or not np.isfinite(p):
            continue
        x, y = min(a, b), max(a, b)
        orders = want.setdefault((c, x, y), ([], []))
        orders[0 if a == x else 1].append(p)
    got = ag.pair_probabilities(table(rows))
    assert list(zip(got["context_id"], got["x"], got["y"])) == sorted(want)
    for row in got.itertuples(index=False):
        xy, yx = want[(row.context_id, row.x, row.y)]
        for value, ps in ((row.p_xy, xy), (row.p_yx, yx)):
            if ps:
                assert value == pytest.approx(sum(ps) / len(ps), rel=0, abs=1e-15)
            else:
                assert np.isnan(value)


def test_majority_vote_breaks_tied_votes_as_tie():
    rows = [("q", "a", "b", "a", "u"), ("q", "b", "a", "a", "v"), ("q", "a", "b", "b", "w"),
            ("q", "a", "c", "a", "u"), ("q", "a", "c", "c", "v"),
            ("q", "b", "c", "b", "u"), ("q", "b", "c", "tie", "v"),
            ("q", "c", "d", "tie", "u"), ("q", "c", "d", "tie", "v"), ("q", "c", "d", "d", "w"),
            ("q", "a", "d", "d", "u")]
    m = ag.majority_vote(ag.normalise_human_labels(human(rows))).set_index(["x", "y"])
    assert m.loc[("a", "b"), "preferred"] == "a" and m.loc[("a", "b"), "n_votes"] == 3
    assert m.loc[("a", "c"), "preferred"] == "tie"
    assert m.loc[("b", "c"), "preferred"] == "tie"
    assert m.loc[("c", "d"), "preferred"] == "tie"
    assert m.loc[("a", "d"), "preferred"] == "d" and m.loc[("a", "d"), "label"] == 1
    assert m.loc[("a", "b"), "annotators"] == "u, v, w"


@given(st.lists(st.tuples(st.sampled_from(["q", "r"]), st.sampled_from("abcd"),
                          st.sampled_from("abcd"), st.sampled_from(["left", "right", "tie"]),
                          st.sampled_from(["u", "v", "w"])), min_size=1, max_size=40))
@settings(max_examples=60, deadline=None)
def test_majority_vote_counts_what_plain_loops_over_the_votes_count(raw):
    """Each pair's votes, majority and annotators, counted again row by row (no pandas)."""
    rows = [(c, l, r, {"left": l, "right": r}[w] if w != "tie" else "tie", who)
            for c, l, r, w, who in raw if l != r]
    if not rows:
        return
    votes = ag.normalise_human_labels(human(rows))
    want: dict = {}
    for c, x, y, label, who in zip(votes["context_id"], votes["x"], votes["y"], votes["label"],
                                   votes["annotator"]):
        counts, names = want.setdefault((c, x, y), ([0, 0, 0], set()))
        counts[int(label)] += 1
        names.add(who)
    got = ag.majority_vote(votes)
    assert list(zip(got["context_id"], got["x"], got["y"])) == sorted(want)
    for row in got.itertuples(index=False):
        counts, names = want[(row.context_id, row.x, row.y)]
        assert [row.n_x, row.n_y, row.n_tie] == counts and row.n_votes == sum(counts)
        top = [k for k in range(3) if counts[k] == max(counts)]
        assert row.label == (top[0] if len(top) == 1 else 2)
        assert row.preferred == {0: row.x, 1: row.y, 2: "tie"}[row.label]
        assert row.annotators == ", ".join(sorted(names))


def test_normalise_drops_skips_keeps_last_repeat_and_reads_store_shape():
    store_frame = pd.DataFrame({
        "id": [1, 2, 3, 4], "context_id": ["q"] * 4,
        "candidate_left": ["b", "a", "a", "b"], "candidate_right": ["a", "b", "c", "a"],
        "shown_order": ["ba", "ab", "ab", "ba"], "winner": ["A", "skip", "B", "B"],
        "annotator": ["u", "u", "u", "u"], "aspect": [""] * 4, "seconds": [2.0, None, 3.0, 4.0],
        "source": ["app"] * 4})
    n = ag.normalise_human_labels(store_frame)
    assert n.attrs == {"n_skipped": 1, "n_replaced": 1}
    ab = n.loc[n["y"] == "b"].iloc[0]
    assert ab["winner_id"] == "a" and ab["label"] == 0 and ab["seconds"] == 4.0  # the later row
    ac = n.loc[n["y"] == "c"].iloc[0]
    assert ac["preferred"] == "c" and ac["left_picked"] == 0.0
    with pytest.raises(InputError, match="neither candidate"):
        ag.normalise_human_labels(human([("q", "a", "b", "zz", "u")]))
    with pytest.raises(InputError, match="itself"):
        ag.normalise_human_labels(human([("q", "a", "a", "a", "u")]))
    with pytest.raises(InputError, match="needs columns"):
        ag.normalise_human_labels(pd.DataFrame({"context_id": ["q"]}))


def test_human_human_agreement_hand_worked():
    # u = [x, x, y, tie], v = [x, y, y, tie] on four pairs; w labels one pair nobody else did
    rows = [("q", "a1", "b1", "a1", "u"), ("q", "a1", "b1", "a1", "v"),
            ("q", "a2", "b2", "a2", "u"), ("q", "b2", "a2", "b2", "v"),
            ("q", "a3", "b3", "b3", "u"), ("q", "a3", "b3", "b3", "v"),
            ("q", "a4", "b4", "tie", "u"), ("q", "a4", "b4", "tie", "v"),
            ("q", "a5", "b5", "a5", "w")]
    r = ag.human_human_agreement(human(rows))
    assert r.n_items == 4 and r.n_annotators == 2
    assert r.percent_agreement == pytest.approx(0.75)
    # both orientations: each side decisive 3/4, tie 1/4: p_e = (3/4)^2 / 2 + (1/4)^2 = 11/32,
    # p_o = 24/32 -> 13/21
    assert r.cohen_kappa == pytest.approx(13 / 21)
    # doubled items: coincidences o_xx = o_yy = 4, o_xy = o_yx = 2, o_tt = 4 (n = 16, n_x = n_y
    # = 6, n_t = 4); D_o = 4/16, D_e = (256 - 36 - 36 - 16) / (16 * 15) = 0.7 -> alpha = 9/14
    assert r.krippendorff_alpha == pytest.approx(9 / 14)
    assert r.pairwise.loc[0, "n_items"] == 4 and r.pairwise.loc[0, "agreement"] == 0.75


def test_human_human_agreement_without_overlap():
    r = ag.human_human_agreement(human([("q", "a", "b", "a", "u"), ("q", "a", "c", "a", "v")]))
    assert r.n_items == 0 and np.isnan(r.krippendorff_alpha) and r.cohen_kappa is None


@pytest.mark.parametrize("seed", range(8))
def test_alpha_and_percent_agreement_match_references_on_random_data(seed):
    rng = np.random.default_rng(seed)
    n_ann, n_items = int(rng.integers(2, 6)), int(rng.integers(5, 40))
    truth = rng.integers(0, 3, n_items)
    labels = np.where(rng.random((n_ann, n_items)) < 0.6, truth, rng.integers(0, 3, (n_ann, n_items)))
    present = rng.random((n_ann, n_items)) < 0.7
    rows = []
    for a in range(n_ann):
        for k in range(n_items):
            if present[a, k]:
                x, y = f"x{k:02d}", f"y{k:02d}"
                rows.append(("q", x, y, {0: x, 1: y, 2: "tie"}[int(labels[a, k])], f"ann{a}"))
    data = np.where(present, labels, np.nan)
    r = ag.human_human_agreement(human(rows))
    try:
        expected = krippendorff.alpha(reliability_data=doubled(data)[0],
                                      level_of_measurement="nominal")
    except ValueError:
        expected = np.nan
    np.testing.assert_allclose(r.krippendorff_alpha, expected, atol=1e-12)
    agree = total = 0
    for k in range(n_items):
        vals = labels[present[:, k], k]
        for i in range(len(vals)):
            for j in range(len(vals)):
                if i != j:
                    agree += vals[i] == vals[j]
                    total += 1
    assert r.percent_agreement == pytest.approx(agree / total)
    for _, row in r.pairwise.iterrows():
        a, b = int(row["annotator_1"][3:]), int(row["annotator_2"][3:])
        both = present[a] & present[b]
        expected_k = cohen_kappa_score(*doubled(labels[a, both], labels[b, both]))
        np.testing.assert_allclose(row["kappa"], expected_k, atol=1e-12)


def test_human_positional_bias_counts_decisive_screen_judgements_only():
    rows = [("q", "a", "b", "a", "u"), ("q", "a", "c", "a", "u"), ("q", "b", "c", "c", "u"),
            ("q", "a", "d", "tie", "u"), ("q", "b", "d", "skip", "u")]
    assert ag.human_positional_bias(human(rows)) == (pytest.approx(2 / 3), 3)
    imported = human(rows)
    imported["source"] = ["app", "import", "app", "app", "app"]
    assert ag.human_positional_bias(imported) == (pytest.approx(0.5), 2)
    assert np.isnan(ag.human_positional_bias(human([("q", "a", "b", "tie", "u")]))[0])
    side = ag.positional_bias_side_by_side(human(rows), table([("q", "a", "b", 0.8),
                                                               ("q", "b", "a", 0.6)]), 0.7)
    assert side["share_first"].tolist() == pytest.approx([2 / 3, 1.0, 0.5])


def tiny_dataset() -> Dataset:
    cands = lambda ids: tuple(Candidate(c, c) for c in ids)  # noqa: E731
    return Dataset("tiny", (Context("q1", "", cands(["a", "b", "c"])),
                            Context("q2", "", cands(["a", "b"])),
                            Context("q3", "", cands(["a", "b"]))))


def test_human_rankings_and_correlation_with_llm():
    rows = [("q1", "a", "b", "a", "u"), ("q1", "c", "a", "a", "u"), ("q1", "b", "c", "b", "u"),
            ("q2", "a", "b", "b", "u")]
    r = ag.human_rankings(human(rows), tiny_dataset())
    q1 = r.loc[r["context_id"] == "q1"].set_index("candidate_id")
    assert q1["rank"].to_dict() == {"a": 1, "b": 2, "c": 3}
    assert set(r["context_id"]) == {"q1", "q2"}  # q3 has no human votes
    q2 = r.loc[r["context_id"] == "q2"].set_index("candidate_id")
    assert q2.loc["b", "score"] > q2.loc["a", "score"]
    llm = pd.DataFrame({"context_id": ["q1"] * 3 + ["q2"] * 2,
                        "candidate_id": ["a", "b", "c", "a", "b"],
                        "score": [0.9, 0.5, 0.1, 0.7, 0.3]})
    c = ag.ranking_correlation(r, llm)
    # q1 agrees perfectly (+1), q2 is reversed (-1): mean 0
    assert c.per_context == pytest.approx([1.0, -1.0]) and c.mean_x100 == pytest.approx(0.0)
    with pytest.raises(InputError, match="not in dataset"):
        ag.human_rankings(human([("zz", "a", "b", "a", "u")]), tiny_dataset())


def test_disagreements_sorted_by_llm_confidence():
    rows = [("q", "a", "b", "b", "u"), ("q", "a", "c", "c", "u"), ("q", "a", "d", "tie", "u"),
            ("q", "a", "e", "a", "u")]
    t = table([("q", "a", "b", 0.6), ("q", "a", "c", 0.95), ("q", "a", "d", 0.8),
               ("q", "a", "e", 0.99)])
    d = ag.disagreements(human(rows), t, 0.5)
    assert d["y"].tolist() == ["c", "d", "b"]  # confidence 0.45, 0.3, 0.1; (a, e) agrees
    assert d["human"].tolist() == ["c", "tie", "b"]
    assert d["confidence"].tolist() == pytest.approx([0.45, 0.3, 0.1])
    assert d["verdict"].tolist() == ["a", "a", "a"]


def test_mtbench_labels_against_a_synthetic_llm():
    cand_path, label_path = MTBENCH_CANDIDATES, MTBENCH_LABELS   # the bundled sample
    try:
        from compassess_core.data.candidates import load_candidates
        from compassess_core.data.labels import load_human_labels
        dataset = load_candidates(cand_path)
        h = ag.human_table_from_labels(load_human_labels(label_path, dataset))
    except ImportError:
        h = pd.read_csv(label_path).rename(columns={"candidate_a": "left_id",
                                                    "candidate_b": "right_id",
                                                    "winner": "winner_id"})
    assert len(h) == 12
    n = ag.normalise_human_labels(h)
    # the synthetic judge agrees on the first 9 pairs and is wrong on the last 3
    agree = np.arange(len(n)) < 9
    x_better = n["label"].to_numpy() == 0
    p = np.where(agree == x_better, 0.8, 0.2)
    t = table(list(zip(n["context_id"], n["x"], n["y"], p)))
    rep = ag.llm_vs_human(h, t, tau=0.5)
    s = rep.raw.majority
    assert s.n_human_ties == 0 and s.n_with_ties == 12  # ties were removed from this data
    assert s.accuracy_with_ties == s.accuracy_without_ties == pytest.approx(0.75)
    expected = cohen_kappa_score(*doubled(n["label"].to_numpy(), np.where(x_better == agree, 0, 1)))
    assert s.kappa_without_ties == pytest.approx(expected)
    assert len(ag.disagreements(h, t)) == 3

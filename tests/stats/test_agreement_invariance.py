"""Agreement figures do not depend on the candidates' names or on any order.

Property tests (hypothesis): random renamings of candidates (which changes which one of a pair is
"x", the smaller id), shuffled rows and swapped screen orders of the human judgements leave every
agreement figure unchanged: accuracy (raw agreement), kappa, alpha, the counts and the seeded
cluster-bootstrap intervals, LLM vs humans (majority, every vote, each annotator; raw and at the
re-estimated tau*; with and without the LLM's tie verdict), human vs human, a campaign
annotator's agreement and a panel's members.

References computed another way: the symmetrised kappa is scikit-learn's ``cohen_kappa_score`` on
the pairs counted in both orientations, and a hand-worked case; the symmetrised alpha is the
``krippendorff`` package's on the doubled data; Fleiss' kappa on the doubled counts is
statsmodels'; FastChat's agreement with and without ties is re-counted by a loop written after
``fastchat/llm_judge/compute_agreement.py``; the weighted median of a replicate is ``np.median``
of the expanded sample.
"""

from __future__ import annotations

import itertools

import krippendorff
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from compassess_core.stats import agreement as ag
from compassess_core.stats import agreement_stats as stats
from compassess_core.stats import bias, panel
from compassess_core.people import campaigns
from compassess_core.types import ComparisonTable

GRID = [0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0]
SWAP = np.array([1, 0, 2])


def table(rows) -> ComparisonTable:
    o = lambda k: np.array([r[k] for r in rows], dtype=object)  # noqa: E731
    p = np.array([r[3] for r in rows], dtype=np.float64)
    z = np.zeros(len(rows))
    return ComparisonTable(o(0), o(1), o(2), p, z, z, z)


def human(rows) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["context_id", "left_id", "right_id", "winner_id",
                                     "annotator"])
    df["seconds"] = 1.0
    return df


@st.composite
def scenarios(draw):
    """Human votes and LLM comparisons on a few contexts; p on a grid so exact ties occur."""
    n_ctx = draw(st.integers(1, 3))
    h_rows, l_rows, names = [], [], []
    for c in range(n_ctx):
        ctx = f"ctx{c}"
        cands = [f"k{c}_{k}" for k in range(draw(st.integers(2, 4)))]
        names += cands
        for u, v in itertools.combinations(cands, 2):
            mode = draw(st.sampled_from(["both", "both", "uv", "vu", "none"]))
            if mode in ("both", "uv"):
                l_rows.append((ctx, u, v, draw(st.sampled_from(GRID))))
            if mode in ("both", "vu"):
                l_rows.append((ctx, v, u, draw(st.sampled_from(GRID))))
            for ann in draw(st.lists(st.sampled_from(["ann1", "ann2", "ann3"]), max_size=3,
                                     unique=True)):
                w = draw(st.sampled_from([u, v, u, v, "tie", "both_bad", "skip"]))
                left, right = (u, v) if draw(st.booleans()) else (v, u)
                h_rows.append((ctx, left, right, w, ann))
    if not l_rows:
        l_rows.append(("ctx0", names[0], names[1], 0.75))
    if not h_rows:
        h_rows.append(("ctx0", names[0], names[1], names[0], "ann1"))
    # a renaming: new ids in a random order, so "x" (the smaller id) changes for many pairs
    new = draw(st.permutations([f"id{n:03d}" for n in range(len(names))]))
    rename = dict(zip(names, new))
    h_perm = draw(st.permutations(range(len(h_rows))))
    l_perm = draw(st.permutations(range(len(l_rows))))
    flip_screen = draw(st.lists(st.booleans(), min_size=len(h_rows), max_size=len(h_rows)))
    return h_rows, l_rows, rename, h_perm, l_perm, flip_screen


def renamed(h_rows, l_rows, rename, h_perm, l_perm, flip_screen):
    r = lambda s: rename.get(s, s)  # noqa: E731  ("tie", "skip", "both_bad" stay)
    h2 = []
    for k in h_perm:
        ctx, left, right, w, ann = h_rows[k]
        if flip_screen[k]:
            left, right = right, left
        h2.append((ctx, r(left), r(right), r(w), ann))
    l2 = [(l_rows[k][0], r(l_rows[k][1]), r(l_rows[k][2]), l_rows[k][3]) for k in l_perm]
    return h2, l2


def scores_figures(s: ag.AgreementScores) -> dict:
    conf = np.asarray(s.confusion)
    # the confusion matrix is in id order; what it says whatever the names is its symmetrisation
    sym = conf + conf[np.ix_(SWAP, SWAP)]
    return dict(acc_t=s.accuracy_with_ties, kap_t=s.kappa_with_ties, n_t=s.n_with_ties,
                acc=s.accuracy_without_ties, kap=s.kappa_without_ties, n=s.n_without_ties,
                h_ties=s.n_human_ties, l_ties=s.n_llm_ties, sym=sym.tolist(),
                intervals={k: tuple(v) for k, v in sorted(s.intervals.items())})


def report_figures(rep: ag.AgreementReport) -> dict:
    out = dict(n=(rep.n_judgements, rep.n_skipped, rep.n_pairs_labelled, rep.n_pairs_matched))
    for name, at in (("raw", rep.raw), ("debiased", rep.debiased)):
        out[name] = dict(tau=at.tau, re=at.tau_reestimated, majority=scores_figures(at.majority),
                         votes=scores_figures(at.votes),
                         per={a: scores_figures(s) for a, s in at.per_annotator.items()})
    return out


def assert_same(a, b):
    """Equal nested figures, NaN equal to NaN, floats to 1e-12 (sums in another order)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, float) or isinstance(b, float):
        if np.isnan(a):
            assert np.isnan(b)
        else:
            assert b == pytest.approx(a, abs=1e-12)
    else:
        assert a == b


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(ag.TIE_MODES))
def test_renaming_and_reordering_change_no_llm_vs_human_figure(case, ties):
    h_rows, l_rows, *how = case
    h2, l2 = renamed(h_rows, l_rows, *how)
    t1, t2 = table(l_rows), table(l2)
    tau1 = bias.balanced_threshold(t1.p)
    assert bias.balanced_threshold(t2.p) == tau1
    if tau1 == 0.5:
        tau1 = 0.625  # a fixed threshold other than 0.5 (tau* is 0.5 itself here)
    for tau in (tau1, 0.375):
        one = ag.llm_vs_human(human(h_rows), t1, tau, n_boot=20, seed=3, ties=ties)
        two = ag.llm_vs_human(human(h2), t2, tau, n_boot=20, seed=3, ties=ties)
        assert_same(report_figures(one), report_figures(two))
        o1 = ag.pair_outcomes(human(h_rows), t1, tau, ties=ties)
        o2 = ag.pair_outcomes(human(h2), t2, tau, ties=ties)
        key = ["context_id", "correct", "decisive"]
        assert_same(o1[key].sort_values(key).to_numpy().tolist(),
                    o2[key].sort_values(key).to_numpy().tolist())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_renaming_and_reordering_change_no_human_agreement_figure(case):
    h_rows, l_rows, *how = case
    h2, _ = renamed(h_rows, l_rows, *how)
    a, b = ag.human_human_agreement(human(h_rows)), ag.human_human_agreement(human(h2))
    assert (a.n_items, a.n_annotators) == (b.n_items, b.n_annotators)
    assert_same([a.percent_agreement, a.krippendorff_alpha,
                 np.nan if a.cohen_kappa is None else a.cohen_kappa],
                [b.percent_agreement, b.krippendorff_alpha,
                 np.nan if b.cohen_kappa is None else b.cohen_kappa])
    cols = ["annotator_1", "annotator_2", "n_items", "agreement", "kappa"]
    assert_same(a.pairwise[cols].to_numpy().tolist(), b.pairwise[cols].to_numpy().tolist())
    for ann in ("ann1", "ann2", "ann3"):
        assert_same(campaigns.agreement_of(human(h_rows), ann), campaigns.agreement_of(human(h2), ann))


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 4), st.integers(1, 25), st.randoms(use_true_random=False))
def test_a_panels_member_agreement_does_not_depend_on_which_candidate_is_x(members, n, rnd):
    rng = np.random.default_rng(rnd.randint(0, 2**31))
    lo = rng.choice([-2.0, -0.5, 0.7, 1.5, np.nan], size=(n, members))  # no exact 0
    pan = rng.choice([-1.0, 0.3, 2.0], size=n)
    flip = np.where(rng.random(n) < 0.5, -1.0, 1.0)  # a pair named the other way round
    names = [f"m{k}" for k in range(members)]
    a = panel.member_agreement(names, lo, pan)
    b = panel.member_agreement(names, lo * flip[:, None], pan * flip)
    assert_same([a.fleiss_kappa, a.krippendorff_alpha, a.n_pairs_all, a.n_pairs_alpha],
                [b.fleiss_kappa, b.krippendorff_alpha, b.n_pairs_all, b.n_pairs_alpha])
    assert_same(a.pairwise.to_numpy().tolist(), b.pairwise.to_numpy().tolist())
    assert_same(a.with_panel.to_numpy().tolist(), b.with_panel.to_numpy().tolist())


# ------------------------------------------------------------------------------ references

def doubled(*codes):
    return [np.concatenate([np.asarray(c), SWAP[np.asarray(c)]]) for c in codes]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("seed", range(30))
def test_pair_kappa_is_sklearns_kappa_on_the_pairs_in_both_orientations(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 50))
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.6, a, rng.integers(0, 3, n))
    expected = cohen_kappa_score(*doubled(a, b))
    got = stats.pair_kappa(a, b)
    assert (np.isnan(got) and np.isnan(expected)) or got == pytest.approx(expected, abs=1e-12)
    # and the same swapped pair by pair: renaming cannot move it
    swap = rng.random(n) < 0.5
    assert_same(got, stats.pair_kappa(np.where(swap, SWAP[a], a), np.where(swap, SWAP[b], b)))


def test_pair_kappa_hand_worked_and_the_chance_model():
    # no ties: p_e = 1/2, kappa = 2 p_o - 1 whatever the marginals
    assert stats.pair_kappa([0, 0, 0, 1], [0, 0, 1, 1]) == pytest.approx(2 * 0.75 - 1)
    # the case: two annotators with identical votes agree perfectly, whatever the names
    assert stats.pair_kappa([0, 0, 0, 1, 1], [0, 0, 0, 1, 1]) == pytest.approx(1.0)
    assert stats.pair_kappa([0, 1, 0, 1, 0], [0, 1, 0, 1, 0]) == pytest.approx(1.0)
    # ties: rater 1 ties 1/4, rater 2 ties 3/4 -> p_e = (3/4)(1/4)/2 + (1/4)(3/4) = 9/32;
    # p_o = 2/4 -> (16/32 - 9/32) / (23/32) = 7/23
    assert stats.pair_kappa([0, 1, 2, 0], [0, 2, 2, 2]) == pytest.approx(7 / 23)
    assert np.isnan(stats.pair_kappa([2, 2], [2, 2]))  # both always tie: undefined


@pytest.mark.parametrize("seed", range(12))
def test_pair_alpha_is_the_krippendorff_packages_on_the_doubled_data(seed):
    rng = np.random.default_rng(seed)
    raters, items = int(rng.integers(2, 5)), int(rng.integers(3, 30))
    truth = rng.integers(0, 3, items)
    data = np.where(rng.random((raters, items)) < 0.6, truth,
                    rng.integers(0, 3, (raters, items))).astype(float)
    data[rng.random((raters, items)) < 0.25] = np.nan
    swapped = data.copy()
    swapped[data == 0], swapped[data == 1] = 1, 0
    try:
        expected = krippendorff.alpha(reliability_data=np.concatenate([data, swapped], axis=1),
                                      level_of_measurement="nominal")
    except ValueError:
        expected = np.nan
    assert_same(float(expected), stats.pair_alpha(data))


@pytest.mark.parametrize("seed", range(8))
def test_fleiss_kappa_of_the_doubled_counts_is_statsmodels(seed):
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(4, [0.5, 0.3, 0.2], size=int(rng.integers(3, 20)))
    doubled_counts = stats.symmetric_counts(counts)
    assert panel.fleiss_kappa(doubled_counts) == pytest.approx(sm_fleiss(doubled_counts),
                                                               abs=1e-12)
    assert doubled_counts[len(counts):, 0].tolist() == counts[:, 1].tolist()


def test_weighted_median_is_numpys_median_of_the_expanded_sample():
    rng = np.random.default_rng(0)
    v = rng.choice([0.1, 0.3, 0.5, 0.5, 0.8], size=13)
    w = rng.integers(0, 3, size=(50, 13))
    w[0] = 0
    got = stats.weighted_median(v, w, batch=7)
    assert np.isnan(got[0])
    for b in range(1, 50):
        assert got[b] == pytest.approx(np.median(np.repeat(v, w[b])))


# ------------------------------------------------------------------------------ ties

def fastchat_agreement(llm_verdict: dict, votes: list[tuple], ban: list[str]) -> tuple[int, int]:
    """FastChat's count (fastchat/llm_judge/compute_agreement.py, judge vs human): every human
    vote of a pair against the judge's one verdict; 'tie' agrees only with 'tie'; with ban =
    ['tie'] a pair is left out where the judge says tie, a vote where the human does."""
    agree = total = 0
    for key, verdict in llm_verdict.items():
        if verdict in ban:
            continue
        for k, v in votes:
            if k != key or v in ban:
                continue
            total += 1
            agree += v == verdict
    return agree, total


def test_a_flip_between_the_orders_is_a_tie_and_votes_are_counted_as_fastchat_does():
    # pair 1: x wins in both orders; pair 2: the first position wins both times (a flip);
    # pair 3: judged in one order only, y wins; pair 4: exactly equal in both orders
    t = table([("q", "a", "b", 0.9), ("q", "b", "a", 0.2),
               ("q", "c", "d", 0.8), ("q", "d", "c", 0.7),
               ("q", "e", "f", 0.3),
               ("q", "g", "h", 0.6), ("q", "h", "g", 0.6)])
    v = ag.llm_pair_verdicts(t, 0.5, ties=ag.TIES_FLIP).set_index(["x", "y"])["verdict"]
    assert v.to_dict() == {("a", "b"): "a", ("c", "d"): "tie", ("e", "f"): "f",
                           ("g", "h"): "tie"}
    plain = ag.llm_pair_verdicts(t, 0.5).set_index(["x", "y"])["verdict"]
    assert plain[("c", "d")] == "c" and plain[("g", "h")] == "tie"  # no name can break 0.6/0.6
    band = ag.llm_pair_verdicts(t, 0.5, tie_band=0.3).set_index(["x", "y"])["verdict"]
    # half the gap between the two orders, 0.35 for (a, b); one order, |0.3 - 0.5| for (e, f)
    assert band[("a", "b")] == "a" and band[("e", "f")] == "tie"
    votes = [("ab", "a"), ("ab", "b"), ("ab", "tie"), ("cd", "tie"), ("cd", "c"), ("ef", "f"),
             ("ef", "tie"), ("gh", "g")]
    pairs = {"ab": ("a", "b"), "cd": ("c", "d"), "ef": ("e", "f"), "gh": ("g", "h")}
    h = human([("q", *pairs[k], w, f"u{n}") for n, (k, w) in enumerate(votes)])
    rep = ag.llm_vs_human(h, t, 0.5, n_boot=0, ties=ag.TIES_FLIP).raw.votes
    verdicts = {k: v[pairs[k]] for k in pairs}
    for ban, acc, n in ((["none"], rep.accuracy_with_ties, rep.n_with_ties),
                        (["tie"], rep.accuracy_without_ties, rep.n_without_ties)):
        agree, total = fastchat_agreement(verdicts, votes, ban)
        assert (n, acc) == (total, pytest.approx(agree / total))
    assert rep.n_with_ties == 8 and rep.n_without_ties == 3  # (a; a,b), (f; f) left


def test_human_both_bad_is_scored_as_a_tie():
    t = table([("q", "a", "b", 0.9), ("q", "b", "a", 0.8)])  # a flip: a tie under flip
    for w in ("tie", "both_bad"):
        s = ag.llm_vs_human(human([("q", "a", "b", w, "u")]), t, 0.5, n_boot=0,
                            ties=ag.TIES_FLIP).raw.majority
        assert (s.accuracy_with_ties, s.n_human_ties, s.n_llm_ties) == (1.0, 1, 1)


def test_balanced_split_makes_a_sampled_judges_p_a_exactly_one_half():
    # a judge sampled 4 times: 39.5% of p above the median 0.5, 21% at it, 39.5% below
    p = np.repeat([0.0, 0.25, 0.5, 0.75, 1.0], [200, 195, 210, 195, 200])
    tau, share = bias.balanced_split(p)
    assert tau == 0.5
    assert bias.positional_bias(p, tau)[0] == pytest.approx(0.395)  # eq. 10 as written
    assert share == pytest.approx(0.5)
    assert bias.positional_bias(p, tau, share)[0] == pytest.approx(0.5)
    # continuous p: nothing sits at tau*, eq. 10 already balances
    q = np.random.default_rng(0).random(100)
    assert bias.balanced_split(q)[1] == 0.0
    with pytest.raises(Exception, match="share"):
        bias.split_decisions(p, 0.5, 1.5)


def test_tau_star_is_re_estimated_in_every_replicate_when_it_is_the_threshold():
    rng = np.random.default_rng(1)
    rows, hum = [], []
    for c in range(12):
        for k in range(5):
            x, y = f"a{c}_{k}", f"b{c}_{k}"
            p1, p2 = rng.random(2)
            rows += [(f"c{c}", x, y, p1)]  # one order only: the verdict depends on tau
            hum.append((f"c{c}", x, y, x if rng.random() < 0.6 else y, "u"))
    t = table(rows)
    tau = bias.balanced_threshold(t.p)
    rep = ag.llm_vs_human(human(hum), t, tau, n_boot=200, seed=0)
    fixed = ag.llm_vs_human(human(hum), t, tau, n_boot=200, seed=0, tau_star=False)
    assert rep.debiased.tau_reestimated and not fixed.debiased.tau_reestimated
    assert rep.debiased.majority.accuracy_without_ties == fixed.debiased.majority.accuracy_without_ties
    assert (rep.debiased.majority.intervals["accuracy_without_ties"]
            != fixed.debiased.majority.intervals["accuracy_without_ties"])


def test_the_leaderboard_re_estimates_tau_star_in_each_replicate():
    from scipy.special import expit

    from compassess_core.stats import leaderboard as lb
    from tests.stats.test_leaderboard import full_matrix, make_dataset

    rng = np.random.default_rng(5)
    p = rng.choice([0.2, 0.4, 0.5, 0.6, 0.9], size=40)
    mult = lb.context_multiplicity(np.repeat(np.arange(8), 5), 8, 60, seed=2)
    expected = [np.clip(np.median(np.repeat(p, m)), 2e-16, 1 - 2e-16) for m in mult]
    np.testing.assert_allclose(lb.replicate_taus(p, mult), expected)
    # a judge biased towards the first position: tau* moves from replicate to replicate
    ds = make_dataset(12, ["s0", "s1", "s2"])
    theta = {"s0": 0.8, "s1": 0.0, "s2": -0.8}
    table = full_matrix(ds, lambda c, x, y: float(expit(theta[x.system] - theta[y.system] + 1.0
                                                        + rng.normal(0, 1.0))))
    tau = bias.balanced_threshold(table.p)
    fixed = lb.leaderboard(ds, table, method="win-ratio", tau=tau, n_boot=80, seed=0)
    moving = lb.leaderboard(ds, table, method="win-ratio", tau=tau, n_boot=80, seed=0,
                            tau_star=True)
    pd.testing.assert_series_equal(fixed.frame["win_rate"], moving.frame["win_rate"])
    assert not np.allclose(fixed.frame["win_rate_ci_low"], moving.frame["win_rate_ci_low"])

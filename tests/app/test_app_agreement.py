"""AppTest tests of the Agreement page on a real SQLite store in ``tmp_path``.

The run is ``test_app_pages.seed_run``'s hand-made one on the bundled sample: p = 0.9 when the
first-shown summary has the higher coherence and 0.55 when it has the lower one, so the LLM's
order-averaged verdict on every pair (raw and at tau* = 0.725) is the more coherent summary.

Two people label the 10 pairs of the first article (pairs ``(x, y)`` with ``x < y``):

* alice sees x on the left and answers the more coherent one, except on pairs 0 and 1;
* bob sees y on the left and answers the more coherent one, except pair 0, which he calls a tie.

Majority votes: pairs 2-9 the more coherent summary, pairs 0 and 1 a tie (one vote each way).
So, raw and at tau*: accuracy with ties 8/10 = 80.0 %, without ties 8/8 = 100.0 %; people agree on
8 of 10 pairs (80.0 %); the LLM picks the first position in all 60 comparisons raw (P(A) = 1.000)
and in half at tau* (0.500); 2 disagreements (the two human ties).
"""

from __future__ import annotations

import itertools

import pytest
from sklearn.metrics import cohen_kappa_score
from streamlit.testing.v1 import AppTest

from compassess_core.stats.agreement import agreement_summary
from tests.app.test_app_pages import APP, TAU_STAR, app_env, metric, seed_run, texts  # noqa: F401


def label_first_article(store, dataset_id) -> dict:
    """Store alice's and bob's judgements (see the module docstring); returns what they mean."""
    dataset = store.load_dataset(dataset_id)
    ctx = dataset.contexts[0]
    coh = {c.candidate_id: c.scores["coherence"] for c in ctx.candidates}
    pairs = list(itertools.combinations(sorted(coh), 2))
    rows, alice, bob = [], [], []
    for k, (x, y) in enumerate(pairs):
        best = x if coh[x] > coh[y] else y
        worst = y if best == x else x
        a_pick = worst if k in (0, 1) else best
        b_pick = "tie" if k == 0 else best
        rows.append(dict(context_id=ctx.context_id, candidate_left=x, candidate_right=y,
                         winner="A" if a_pick == x else "B", annotator="alice",
                         aspect="coherence", shown_order="ab", seconds=3.0))
        rows.append(dict(context_id=ctx.context_id, candidate_left=y, candidate_right=x,
                         winner="tie" if b_pick == "tie" else ("A" if b_pick == y else "B"),
                         annotator="bob", aspect="coherence", shown_order="ba", seconds=4.0))
        code = {x: 0, y: 1, "tie": 2}
        alice.append(code[a_pick])
        bob.append(code[b_pick])
    store.add_human_judgements(dataset_id, rows)
    left_picks = sum(a == 0 for a in alice) + sum(b == 1 for b in bob)
    return dict(alice=alice, bob=bob, share_left=left_picks / 19, context=ctx.context_id,
                pairs=pairs)


def both_orientations(*codes):
    """Each code list followed by itself with x better (0) and y better (1) swapped: the pairs
    in both orientations, the data the page's kappa is defined on."""
    swap = {0: 1, 1: 0, 2: 2}
    return [list(c) + [swap[v] for v in c] for c in codes]


SCORE_KEYS = ("accuracy_without_ties", "kappa_without_ties", "accuracy_with_ties", "kappa_with_ties")


def llm_metrics(at: AppTest) -> dict[tuple[str, str], str]:
    """The eight LLM-vs-human metrics: raw then debiased, each ties left out then ties kept."""
    shown = list(at.metric)[:8]
    assert [m.label for m in shown] == ["Raw agreement", "Kappa"] * 4
    keys = [(which, key) for which in ("raw", "debiased") for key in SCORE_KEYS]
    for (which, key), m in zip(keys, shown):
        assert which in m.help and ("without ties" in m.help) == ("without" in key)
    return {k: m.value for k, m in zip(keys, shown)}


def agreement_page(tau_mode: str = "off") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/agreement.py").run()
    assert not at.exception, at.exception
    at.sidebar.radio(key="tau_mode_w").set_value(tau_mode).run()
    assert not at.exception, at.exception
    return at


def test_no_labels_points_to_annotate(app_env):
    seed_run(app_env)
    at = agreement_page()
    assert "No human labels for dataset `sample_summeval` yet" in texts(at.info)


@pytest.mark.parametrize("tau_mode,tau", [("off", 0.5), ("balanced", TAU_STAR)])
def test_numbers_are_hand_worked_and_equal_agreement_summary(app_env, tau_mode, tau):
    store, dataset_id, run_id = seed_run(app_env)
    truth = label_first_article(store, dataset_id)
    at = agreement_page(tau_mode)

    shown = llm_metrics(at)
    for which in ("raw", "debiased"):
        assert shown[which, "accuracy_with_ties"] == "80.0 %"
        assert shown[which, "accuracy_without_ties"] == "100.0 %"
    # Kappa with ties, against scikit-learn on the 10 majority labels counted in both
    # orientations (the symmetrised coding): the LLM says "the more coherent one" everywhere;
    # the majority says the same on pairs 2-9 and tie on 0 and 1.
    majority = [2, 2] + [a for a in truth["alice"][2:]]
    llm = [1 - a if k in (0, 1) else a for k, a in enumerate(truth["alice"])]
    kappa_ties = cohen_kappa_score(*both_orientations(majority, llm))
    assert shown["raw", "kappa_with_ties"] == f"{kappa_ties:.3f}"

    # Everything equals agreement_summary (what `compassess agreement` prints) on the same data.
    dataset = store.load_dataset(dataset_id)
    summary = agreement_summary(store.human_judgements_frame(dataset_id, "coherence"),
                                store.comparison_table(run_id), dataset, tau)
    llm_sum = summary["llm_vs_human"]
    assert llm_sum["debiased"]["tau"] == pytest.approx(tau)
    for which in ("raw", "debiased"):
        m = llm_sum[which]
        assert shown[which, "accuracy_with_ties"] == f"{100 * m['accuracy_with_ties']:.1f} %"
        assert shown[which, "accuracy_without_ties"] == f"{100 * m['accuracy_without_ties']:.1f} %"
        assert shown[which, "kappa_with_ties"] == f"{m['kappa_with_ties']:.3f}"
        expected = m["kappa_without_ties"]
        assert shown[which, "kappa_without_ties"] == \
            ("n/a" if expected is None else f"{expected:.3f}")
        assert (m["n_with_ties"], m["n_without_ties"], m["n_human_ties"]) == (10, 8, 2)

    # Human vs human: 8 of 10 shared pairs agree; kappa as scikit-learn computes it.
    assert metric(at, "Pairs labelled by 2+ annotators") == "10"
    assert metric(at, "Raw agreement between people") == "80.0 %"
    assert metric(at, "Cohen's kappa (2 annotators)") == \
        f"{cohen_kappa_score(*both_orientations(truth['alice'], truth['bob'])):.3f}"
    assert metric(at, "Krippendorff's alpha") == f"{summary['human_human']['krippendorff_alpha']:.3f}"

    # Positional bias: people vs the LLM's P(A) raw (1.000) and at the current tau.
    bias = at.dataframe[[i for i, d in enumerate(at.dataframe)
                         if "share first/left" in d.value.columns][0]].value
    shares = dict(zip(bias["who"], bias["share first/left"]))
    assert shares["humans"] == pytest.approx(truth["share_left"])
    assert shares["LLM raw (tau = 0.5)"] == pytest.approx(1.0)
    assert shares[f"LLM at current tau = {tau:.4g}"] == pytest.approx(1.0 if tau == 0.5 else 0.5)
    assert summary["positional_bias"]["human_share_left"] == pytest.approx(truth["share_left"])

    # Rankings: the Spearman of the human-only Bradley-Terry ranking with the LLM's.
    assert metric(at, "Spearman x100") == f"{summary['ranking_correlation']['spearman_x100']:.1f}"

    # Disagreements: exactly the two pairs people called a tie.
    dis = at.dataframe[[i for i, d in enumerate(at.dataframe)
                        if "verdict" in d.value.columns][0]].value
    assert sorted(zip(dis["x"], dis["y"])) == sorted(truth["pairs"][:2])
    assert set(dis["human"]) == {"tie"}


def test_disagreement_opens_the_comparison_with_human_answers(app_env):
    store, dataset_id, _ = seed_run(app_env)
    truth = label_first_article(store, dataset_id)
    at = agreement_page("balanced")
    at.selectbox(key="disagreement_pick").set_value(0).run()
    assert not at.exception, at.exception
    answers = at.dataframe[[i for i, d in enumerate(at.dataframe)
                            if "answer (A = left)" in d.value.columns][0]].value
    assert sorted(answers["annotator"]) == ["alice", "bob"]
    assert "The exact prompt sent" in texts(at.markdown)
    assert f"Comparison in context `{truth['context']}`" in texts(at.subheader)
    assert [b.proto.label for b in at.get("download_button")] == [
        "Human judgements (CSV, 20 rows)", "Human judgements (JSON, 20 rows)",
        "Agreement report (JSON)"]


def test_labels_of_another_aspect_are_flagged(app_env):
    store, dataset_id, _ = seed_run(app_env)
    store.add_human_judgements(dataset_id, [dict(
        context_id=store.load_dataset(dataset_id).contexts[0].context_id,
        candidate_left=store.load_dataset(dataset_id).contexts[0].candidate_ids[0],
        candidate_right=store.load_dataset(dataset_id).contexts[0].candidate_ids[1],
        winner="A", annotator="zoe", aspect="fluency")])
    at = agreement_page()
    assert "No human labels of aspect `coherence`" in texts(at.warning)
    at.sidebar.selectbox(key="agreement_aspect").set_value("fluency").run()
    assert not at.exception, at.exception
    assert "The run judged `coherence` but these labels are for `fluency`." in texts(at.warning)

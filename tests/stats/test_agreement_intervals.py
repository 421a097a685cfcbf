"""95% bootstrap intervals and the small-sample caution of the judge-vs-people agreement.

Known values: an accuracy's percentile bootstrap over n scored pairs, k of them agreeing, is the
spread of Binomial(n, k/n) / n (each resample draws n pairs with replacement); a statistic that
every resample gives alike has that value as both ends; a mean over contexts is resampled over
contexts. The page and the CLI are checked on ``test_app_agreement``'s hand-labelled pairs of
the sample's first article (8 pairs without ties: fewer than ``SMALL_SAMPLE_PAIRS``).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom
from streamlit.testing.v1 import AppTest

import compassess_core as ca
from compassess_core.types import ComparisonTable
from compassess_core.stats import agreement as ag
from compassess_core.data.candidates import load_candidates
from tests.app.test_app_agreement import label_first_article
from tests.app.test_app_pages import APP, SAMPLE, app_env, seed_run  # noqa: F401


# ------------------------------------------------------------------------------- the engine

@pytest.mark.parametrize("n,k", [(9, 7), (40, 30)])
def test_accuracy_interval_is_the_binomial_spread_of_the_pairs(n, k):
    human = np.zeros(n, dtype=np.int64)
    llm = np.r_[np.zeros(k, dtype=np.int64), np.ones(n - k, dtype=np.int64)]
    low, high = ag.agreement_intervals(human, llm, n_boot=4000, seed=1)["accuracy_with_ties"]
    exact_low = binom.ppf(0.025, n, k / n) / n
    exact_high = binom.ppf(0.975, n, k / n) / n
    assert low == pytest.approx(exact_low, abs=1.0 / n + 1e-9)
    assert high == pytest.approx(exact_high, abs=1.0 / n + 1e-9)
    assert low <= k / n <= high


def test_intervals_of_perfect_agreement_are_one_and_resamples_without_kappa_left_out():
    human = np.array([0, 1, 0, 1, 1, 0, 0, 1])
    got = ag.agreement_intervals(human, human.copy(), n_boot=500)
    assert got["accuracy_without_ties"] == (1.0, 1.0)
    assert got["kappa_without_ties"] == (1.0, 1.0)  # one-class resamples have no kappa: dropped


def test_kappa_interval_holds_the_estimate_and_ties_are_left_out_without_ties():
    human = np.array([0, 0, 1, 1, 0, 1, 2, 2, 0, 1, 0, 1])
    llm = np.array([0, 1, 1, 1, 0, 0, 0, 1, 0, 1, 1, 1])
    got = ag.agreement_intervals(human, llm, n_boot=2000, seed=3)
    point = ag.cohen_kappa(human[human != 2], llm[human != 2])
    low, high = got["kappa_without_ties"]
    assert -1.0 <= low <= point <= high <= 1.0
    assert got["accuracy_with_ties"][1] <= got["accuracy_without_ties"][1]
    assert ag.agreement_intervals(human, llm, n_boot=2000, seed=3) == got  # seeded


def test_correlation_interval_resamples_contexts():
    assert ag.correlation_interval([0.5, 0.5, np.nan, 0.5]) == pytest.approx((50.0, 50.0))
    low, high = ag.correlation_interval([1.0, -1.0, 1.0, 0.0], n_boot=2000)
    assert -100.0 <= low < 25.0 < high <= 100.0
    assert all(np.isnan(v) for v in ag.correlation_interval([0.3, np.nan]))  # one context


def test_bootstrap_interval_checks_its_inputs():
    with pytest.raises(ca.InputError):
        ag.bootstrap_interval(np.mean, ([1, 2, 3],), n_boot=0)
    assert all(np.isnan(v) for v in ag.bootstrap_interval(np.mean, ([1.0],)))


def sample_and_table():
    dataset = load_candidates(SAMPLE, name="sample", file_label="sample.csv")
    rows = []
    for ctx in dataset.contexts:
        for x, y in itertools.permutations(ctx.candidates, 2):
            better = x.scores["coherence"] > y.scores["coherence"]
            rows.append((ctx.context_id, x.candidate_id, y.candidate_id, 0.9 if better else 0.55))
    c, a, b, p = map(np.array, zip(*rows))
    nan = np.full(len(p), np.nan)
    table = ComparisonTable(c.astype(object), a.astype(object), b.astype(object),
                               p.astype(float), nan, nan, nan)
    return dataset, table


def labels_of_every_pair(dataset, contexts: int) -> pd.DataFrame:
    rows = []
    for ctx in dataset.contexts[:contexts]:
        for x, y in itertools.combinations(ctx.candidates, 2):
            best = x if x.scores["coherence"] > y.scores["coherence"] else y
            rows.append(dict(context_id=ctx.context_id, left_id=x.candidate_id,
                             right_id=y.candidate_id, winner_id=best.candidate_id,
                             annotator="ann"))
    return pd.DataFrame(rows)


def test_summary_cautions_below_the_named_sample_sizes():
    dataset, table = sample_and_table()
    few = ag.agreement_summary(labels_of_every_pair(dataset, 1), table, dataset, 0.725,
                               n_boot=200)
    deb = few["llm_vs_human"]["debiased"]
    assert deb["n_without_ties"] == 10 < ag.SMALL_SAMPLE_PAIRS and deb["small_sample"]
    assert deb["accuracy_without_ties_ci95"] == [1.0, 1.0]
    assert any(f"fewer than {ag.SMALL_SAMPLE_PAIRS}" in c for c in few["caution"])
    assert few["ranking_correlation"]["small_sample"]
    enough = ag.agreement_summary(labels_of_every_pair(dataset, 3), table, dataset, 0.725,
                                  n_boot=200)
    assert enough["llm_vs_human"]["debiased"]["n_without_ties"] == 30
    assert not enough["llm_vs_human"]["debiased"]["small_sample"]
    assert not any("scored pair" in c for c in enough["caution"])
    assert any(f"fewer than {ag.SMALL_SAMPLE_CONTEXTS}" in c for c in enough["caution"])
    assert enough["ranking_correlation"]["human_votes_per_context"] == [10, 10]
    low, high = enough["ranking_correlation"]["spearman_x100_ci95"]
    assert low <= enough["ranking_correlation"]["spearman_x100"] <= high


# ----------------------------------------------------------------------------- API, CLI, app

def test_run_agreement_and_cli_give_the_intervals_and_the_caution(tmp_path, capsys):
    from compassess_core.cli import main

    url = f"sqlite:///{tmp_path / 'store.db'}"
    store, dataset_id, _ = seed_run(url)
    label_first_article(store, dataset_id)
    found = ca.open_store(url).get_run("hand-run").agreement(None, "balanced", n_boot=300)
    m = found.summary["llm_vs_human"]["debiased"]
    assert m["accuracy_without_ties_ci95"] == [1.0, 1.0]  # 8 of 8 pairs agree
    assert m["small_sample"] and found.report.debiased.majority.small_sample
    assert main(["agreement", "--run", "hand-run", "--bootstrap", "300", "--db", url]) == 0
    out = capsys.readouterr().out
    assert "accuracy 1.000 [95% CI 1.000, 1.000]" in out
    assert f"caution: accuracy and kappa rest on 8 scored pair(s) (fewer than " \
           f"{ag.SMALL_SAMPLE_PAIRS})" in out
    assert "intervals: 95% two-stage cluster bootstrap: contexts resampled" in out
    assert "every vote against the LLM (FastChat's unit)" in out
    assert "kappa: kappa and alpha count every pair in both orientations" in out


def test_agreement_page_shows_intervals_and_the_caution(app_env):  # noqa: F811
    store, dataset_id, _ = seed_run(app_env)
    label_first_article(store, dataset_id)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/agreement.py").run()
    assert not at.exception, at.exception
    # a caution is an info box in plain words, not an error or a warning
    warnings = "\n".join(w.value for w in at.info)
    assert "Few labels, so read with care:" in warnings
    assert "accuracy and kappa rest on 8 scored pair(s) (fewer than 30)" in warnings
    assert "the ranking correlation is a mean over 1 context(s) (fewer than 10)" in warnings
    captions = "\n".join(c.value for c in at.caption)
    assert "95% CI 100.0-100.0 % (contexts, then 8 pairs resampled)" in captions
    assert "95% CI" in captions and "contexts resampled" in captions
    assert f"below {ag.SMALL_SAMPLE_PAIRS} pairs the numbers carry a caution" in captions

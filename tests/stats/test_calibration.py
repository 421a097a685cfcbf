"""Calibration of a judge on human A/B labels (compassess_core.stats.calibration) and its command line:
hand-worked measures, a simulated judge with a known bias and temperature, scikit-learn's
logistic regression as the reference fit, and ``compassess calibrate|rank|evaluate|export`` on a
real SQLite store."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from compassess_core.stats import agreement, calibration as cal
from compassess_core.cli import main as cli
from compassess_core.errors import InputError
from compassess_core.types import ComparisonTable
from tests.app.test_app_pages import seed_run  # noqa: F401  (the hand-made run on the bundled sample)


def table(rows) -> ComparisonTable:
    """A ComparisonTable from (context, a, b, p) rows."""
    o = lambda k: np.array([r[k] for r in rows], dtype=object)  # noqa: E731
    z = np.zeros(len(rows))
    return ComparisonTable(o(0), o(1), o(2), np.array([r[3] for r in rows], float), z, z, z)


def votes(rows) -> pd.DataFrame:
    """A canonical human table from (context, left, right, winner, annotator) rows."""
    df = pd.DataFrame(rows, columns=["context_id", "left_id", "right_id", "winner_id", "annotator"])
    df["seconds"] = 1.0
    return df


# ------------------------------------------------------------------------------ hand-worked

def test_measures_hand_worked():
    p = np.array([0.5, 0.5])
    y = np.array([1.0, 0.0])
    assert cal.log_loss(p, y) == pytest.approx(math.log(2))
    assert cal.accuracy([0.9, 0.2, 0.5], [1, 0, 1]) == pytest.approx(2 / 3)  # p == 0.5 says B
    # bins of width 0.5: [0, .5] holds 0.1, 0.3 (y 0, 1), (.5, 1] holds 0.8, 0.9, 0.6 (y 1, 1, 0)
    t = cal.reliability_table([0.1, 0.3, 0.8, 0.9, 0.6], [0, 1, 1, 1, 0], bins=2)
    assert t["n"].tolist() == [2, 3]
    assert t["mean_p"].tolist() == pytest.approx([0.2, 2.3 / 3])
    assert t["frequency"].tolist() == pytest.approx([0.5, 2 / 3])
    ece = (2 * abs(0.5 - 0.2) + 3 * abs(2 / 3 - 2.3 / 3)) / 5
    assert cal.expected_calibration_error([0.1, 0.3, 0.8, 0.9, 0.6], [0, 1, 1, 1, 0], 2) == \
        pytest.approx(ece)
    with pytest.raises(InputError):
        cal.log_loss([0.5], [0.5])  # ties are not labels


def test_identity_and_apply():
    c = cal.Calibration(bias=1.0, temperature=2.0)
    # logit p = 3 -> (3 - 1) / 2 = 1 -> sigmoid(1)
    p = 1 / (1 + math.exp(-3))
    assert c.apply([p])[0] == pytest.approx(1 / (1 + math.exp(-1)))
    assert cal.IDENTITY.apply([0.3])[0] == pytest.approx(0.3)


def test_fit_recovers_a_known_bias_and_temperature():
    # People prefer the first text with P = sigmoid(d); the judge says logit p = 2.5 d + 0.8,
    # i.e. temperature 2.5 and bias 0.8 in log-odds.
    rng = np.random.default_rng(0)
    d = rng.normal(0, 1.5, 20_000)
    y = (rng.random(len(d)) < 1 / (1 + np.exp(-d))).astype(float)
    fit = cal.fit_calibration(2.5 * d + 0.8, y, prior_strength=0.0)
    assert fit.temperature == pytest.approx(2.5, rel=0.05)
    assert fit.bias == pytest.approx(0.8, abs=0.08)


def test_unregularised_fit_is_scikit_learns_logistic_regression():
    rng = np.random.default_rng(1)
    z = rng.normal(0.3, 2.0, 500)
    y = (rng.random(500) < 1 / (1 + np.exp(-(0.4 * z - 0.2)))).astype(float)
    ref = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(z[:, None], y)
    a, c = ref.coef_[0, 0], ref.intercept_[0]
    fit = cal.fit_calibration(z, y, prior_strength=0.0)
    assert fit.temperature == pytest.approx(1 / a, rel=1e-4)
    assert fit.bias == pytest.approx(-c / a, rel=1e-4)


def test_prior_keeps_a_handful_of_labels_near_the_raw_judge():
    # Two separable examples: plain maximum likelihood would send T to 0.
    fit = cal.fit_calibration([2.0, -2.0], [1, 0])
    assert 0.2 < fit.temperature < 1.0 and abs(fit.bias) < 1e-9


def test_a_judge_at_chance_is_cooled_to_a_coin():
    rng = np.random.default_rng(2)
    z = rng.normal(0, 3, 4000)
    y = (rng.random(4000) < 0.5).astype(float)
    fit = cal.fit_calibration(z, y)
    assert 20 < fit.temperature <= 1 / cal.MIN_SLOPE
    p_cal = fit.apply(1 / (1 + np.exp(-z)))
    assert np.quantile(np.abs(p_cal - 0.5), 0.99) < 0.1


# ------------------------------------------------------------------------- labelled comparisons

def test_labelled_comparisons_join_both_orders_and_leave_out_ties():
    t = table([("q", "a", "b", 0.8), ("q", "b", "a", 0.4), ("q", "a", "c", 0.3),
               ("q", "b", "c", 0.6), ("r", "a", "b", 0.7)])
    h = votes([("q", "b", "a", "a", "ann"),       # a better, shown as (b, a)
               ("q", "c", "a", "tie", "ann"),     # a tie: left out
               ("q", "b", "c", "c", "ann"),       # c better
               ("r", "a", "c", "c", "ann")])      # not judged by the run
    f = cal.labelled_comparisons(t, h)
    got = {(r.context_id, r.a_id, r.b_id): (r.p, r.y) for r in f.itertuples()}
    assert got == {("q", "a", "b"): (0.8, 1.0), ("q", "b", "a"): (0.4, 0.0),
                   ("q", "b", "c"): (0.6, 0.0)}
    # both orders of {a, b} share a pair id
    assert f.set_index(["a_id", "b_id"]).loc[("a", "b"), "pair"].item() == \
        f.set_index(["a_id", "b_id"]).loc[("b", "a"), "pair"].item()
    assert (f.attrs["n_pairs_labelled"], f.attrs["n_human_ties"], f.attrs["n_pairs_unjudged"]) == (4, 1, 1)


def test_folds_are_deterministic_and_balanced():
    f1, f2 = cal.fold_of_pairs(23, 5, seed=3), cal.fold_of_pairs(23, 5, seed=3)
    np.testing.assert_array_equal(f1, f2)
    assert sorted(np.bincount(f1).tolist()) == [4, 4, 5, 5, 5]


def simulated_run(n_contexts=40, n=6, temperature=3.0, bias=1.2, seed=0):
    """A judge with known bias and temperature on pairs whose human label follows a true score."""
    rng = np.random.default_rng(seed)
    rows, labels = [], []
    for c in range(n_contexts):
        s = rng.normal(0, 1.2, n)
        ids = [f"c{k}" for k in range(n)]
        for a in range(n):
            for b in range(a + 1, n):
                win = ids[a] if rng.random() < 1 / (1 + np.exp(-(s[a] - s[b]))) else ids[b]
                labels.append((f"x{c}", ids[a], ids[b], win, "ann"))
                for i, j in ((a, b), (b, a)):
                    z = temperature * (s[i] - s[j]) + bias + rng.normal(0, 0.3)
                    rows.append((f"x{c}", ids[i], ids[j], 1 / (1 + np.exp(-z))))
    return table(rows), votes(labels)


def test_calibrate_report_on_a_biased_over_confident_judge():
    t, h = simulated_run()
    rep = cal.calibrate(t, h, folds=5)
    assert rep.calibration.temperature == pytest.approx(3.0, rel=0.25)
    assert rep.calibration.bias == pytest.approx(1.2, abs=0.3)
    # held out, calibration beats the raw judge on log-loss and calibration error ...
    assert rep.calibrated.log_loss < rep.raw.log_loss - 0.1
    assert rep.calibrated.ece < rep.raw.ece / 2
    # ... and removes the positional bias the raw verdicts suffer from
    assert rep.calibrated.accuracy > rep.raw.accuracy
    # the pair-level raw numbers are the Agreement page's
    ag = agreement.llm_vs_human(h, t, 0.5).raw.majority
    assert (rep.raw.pair_accuracy, rep.raw.pair_kappa, rep.raw.n_pairs) == \
        (ag.accuracy_without_ties, ag.kappa_without_ties, ag.n_without_ties)
    assert len(rep.fold_calibrations) == 5
    d = rep.to_dict()
    json.dumps(d)  # JSON-able
    assert d["calibration"]["n_pairs"] == 40 * 15 and d["raw"]["n_comparisons"] == 40 * 30


def test_calibrate_needs_two_labelled_pairs():
    t = table([("q", "a", "b", 0.8)])
    with pytest.raises(InputError, match="at least 2 labelled pairs"):
        cal.calibrate(t, votes([("q", "a", "b", "a", "ann")]))
    with pytest.raises(InputError, match="no comparison"):
        cal.fit_on_labels(t, votes([("q", "a", "c", "a", "ann")]))


# ---------------------------------------------------------------------------------- the CLI

def label_sample(store, dataset_id) -> None:
    """People prefer the more coherent summary of every pair of the bundled sample."""
    dataset = store.load_dataset(dataset_id)
    rows = []
    for ctx in dataset.contexts:
        cands = ctx.candidates
        for a in range(len(cands)):
            for b in range(a + 1, len(cands)):
                x, y = cands[a], cands[b]
                rows.append(dict(context_id=ctx.context_id, candidate_left=x.candidate_id,
                                 candidate_right=y.candidate_id, annotator="expert", aspect="coherence",
                                 winner="A" if x.scores["coherence"] > y.scores["coherence"] else "B",
                                 source="import"))
    store.add_human_judgements(dataset_id, rows)


def test_cli_calibrate_rank_evaluate_export_use_stored_labels(db_url, tmp_path, capsys):
    store, dataset_id, run_id = seed_run(db_url)
    assert cli(["calibrate", "--run", "hand-run", "--json", "--db", db_url]) == 2  # no labels yet
    assert "no human labels" in capsys.readouterr().err
    label_sample(store, dataset_id)
    assert cli(["calibrate", "--run", "hand-run", "--json", "--db", db_url]) == 0
    out = json.loads(capsys.readouterr().out)
    want = cal.calibrate(store.comparison_table(run_id),
                         store.human_judgements_frame(dataset_id, "coherence")).to_dict()
    assert out["calibration"] == want["calibration"] and out["calibrated"] == want["calibrated"]
    assert out["aspect"] == "coherence" and out["calibration"]["n_pairs"] == 30
    # the hand-made judge says 0.9 for the better first and 0.55 for the worse first: a bias
    # towards the first position that calibration removes (held-out accuracy 100%)
    assert out["calibration"]["bias"] > 0 and out["raw"]["accuracy"] == pytest.approx(0.5)
    assert out["calibrated"]["accuracy"] == pytest.approx(1.0)
    assert cli(["calibrate", "--run", "hand-run", "--db", db_url]) == 0
    text = capsys.readouterr().out
    assert "temperature T =" in text and "expected calibration error" in text

    assert cli(["rank", "--run", "hand-run", "--calibrate", "--format", "json", "--db", db_url]) == 0
    ranked = json.loads(capsys.readouterr().out)
    assert ranked["calibration"]["n_pairs"] == 30
    assert cli(["evaluate", "--run", "hand-run", "--calibrate", "--json", "--db", db_url]) == 0
    assert json.loads(capsys.readouterr().out)["calibration"]["bias"] == out["calibration"]["bias"]
    path = tmp_path / "comparisons.csv"
    assert cli(["export", "--run", "hand-run", "--what", "comparisons", "--format", "csv",
                "--calibrate", "-o", str(path), "--db", db_url]) == 0
    sidecar = json.loads((tmp_path / "comparisons.csv.settings.json").read_text())
    assert sidecar["calibration"]["temperature"] == out["calibration"]["temperature"]
    exported = pd.read_csv(path)
    c = cal.Calibration(out["calibration"]["bias"], out["calibration"]["temperature"])
    np.testing.assert_allclose(exported["p_calibrated"], c.apply(exported["p"]))

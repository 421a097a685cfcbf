"""Panels of judges: the engine (member scales, product of experts and majority vote, learnt
weights, agreement among members), the store's panels, ``Store.panel``/``Store.judges`` and the
``compassess panel|judges`` commands on a tiny real store with human labels.

The judges here are SIMULATED: stored comparisons synthesised from known true scores with a known
noise and positional bias per judge (the tests are about combining judges, not about a model)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from compassess_core.stats import panel
from compassess_core.errors import InputError
from compassess_core.stats.solvers import solve_differences
from compassess_core.types import ComparisonTable

REPO = Path(__file__).resolve().parents[2]

#: Simulated judges: (name, noise sd on the log-odds, positional bias in log-odds).
SIMULATED = (("simulated-sharp", 0.5, 1.0), ("simulated-middling", 1.5, -0.5),
             ("simulated-noisy", 3.0, 0.3))


def simulated_problem(n_contexts: int = 30, n_candidates: int = 6, seed: int = 0):
    """True scores and every ordered pair of each context, as arrays."""
    rng = np.random.default_rng(seed)
    true = rng.normal(size=(n_contexts, n_candidates))
    c, i, j = np.meshgrid(np.arange(n_contexts), np.arange(n_candidates),
                          np.arange(n_candidates), indexing="ij")
    keep = i != j
    c, i, j = c[keep], i[keep], j[keep]
    ids = np.array([f"k{k}" for k in range(n_candidates)], dtype=object)
    ctx = np.array([f"c{k}" for k in range(n_contexts)], dtype=object)
    return dict(rng=rng, true=true, ctx=ctx[c], a=ids[i], b=ids[j],
                diff=true[c, i] - true[c, j])


def simulated_table(problem, noise: float, bias: float) -> ComparisonTable:
    """A SIMULATED judge: logit p = 2 (s_a - s_b) + bias + N(0, noise^2)."""
    z = 2.0 * problem["diff"] + bias + problem["rng"].normal(size=len(problem["diff"])) * noise
    p = 1.0 / (1.0 + np.exp(-z))
    nan = np.full(len(p), np.nan)
    return ComparisonTable(problem["ctx"], problem["a"], problem["b"], p, nan, nan, nan)


def truth_labels(keys: pd.DataFrame, problem) -> pd.DataFrame:
    """One person's label per unordered pair: the candidate with the higher true score."""
    lookup = {(c, a, b): d for c, a, b, d in zip(problem["ctx"], problem["a"], problem["b"],
                                                   problem["diff"])}
    d = np.array([lookup[k] for k in keys.itertuples(index=False, name=None)])
    frame = pd.DataFrame({"context_id": keys["context_id"], "left_id": keys["a_id"],
                          "right_id": keys["b_id"],
                          "winner_id": np.where(d > 0, keys["a_id"], keys["b_id"]),
                          "annotator": "person", "seconds": np.nan})
    return frame.loc[(keys["a_id"] < keys["b_id"]).to_numpy()].reset_index(drop=True), d


def accuracy(p, d) -> float:
    ok = np.isfinite(p)
    return float(((p[ok] > 0.5) == (d[ok] > 0)).mean())


# ------------------------------------------------------------------------------------ engine

def test_learnt_weights_favour_the_better_judge():
    problem = simulated_problem()
    tables = [simulated_table(problem, noise, bias) for _, noise, bias in SIMULATED]
    keys, z = panel.aligned_log_odds(tables, [panel.balanced_scaling(t.p) for t in tables])
    human, _ = truth_labels(keys, problem)
    rows = panel.labelled_rows(keys, human)
    w = panel.fit_weights(z[rows["row"]], rows["y"])
    assert w.sum() == pytest.approx(1.0)
    assert w[0] > w[1] > w[2]
    assert w[0] > 0.6
    # held out: the learnt panel is as good as the best judge; equal weights are dragged down
    # each member's raw log-odds on the aligned pairs
    aligned = [z[:, m] + panel.balanced_scaling(t.p).offset for m, t in enumerate(tables)]
    learnt = panel.cross_validated_panel(aligned, [t.p for t in tables], keys, human)
    equal = panel.cross_validated_panel(aligned, [t.p for t in tables], keys, human,
                                        learn_weights=False)
    acc = lambda h: float(((h.p > 0.5) == (h.y == 1)).mean())  # noqa: E731
    assert acc(learnt) > acc(equal)
    assert all(fw[0] > fw[2] for fw in learnt.fold_weights)


def test_equal_panel_of_independent_judges_beats_each_member():
    problem = simulated_problem(seed=1)
    tables = [simulated_table(problem, 1.5, bias) for bias in (1.0, -0.5, 0.3)]
    keys, z = panel.aligned_log_odds(tables, [panel.balanced_scaling(t.p) for t in tables])
    _, d = truth_labels(keys, problem)
    members = [accuracy(1 / (1 + np.exp(-z[:, m])), d) for m in range(3)]
    for method in panel.COMBINERS:
        assert accuracy(panel.combine(z, [1, 1, 1], method), d) > max(members), method


def test_each_member_is_debiased_at_its_own_tau_star():
    problem = simulated_problem(n_contexts=10, seed=2)
    t = simulated_table(problem, 0.5, 2.0)  # strongly favours position A
    assert (t.p > 0.5).mean() > 0.7
    s = panel.balanced_scaling(t.p)
    z = s.apply(t.p)
    assert (z > 0).mean() == pytest.approx(0.5, abs=0.01)
    assert "balanced tau*" in s.how


def test_poe_is_the_gaussian_product_of_experts_and_uses_only_who_judged():
    z = np.array([[1.0, 3.0, np.nan], [np.nan, np.nan, -2.0], [np.nan, np.nan, np.nan]])
    w = np.array([1.0, 3.0, 2.0])
    delta = panel.poe_log_odds(z, w / w.sum())
    assert delta[0] == pytest.approx((1 * 1 + 3 * 3) / 4)
    assert delta[1] == pytest.approx(-2.0) and np.isnan(delta[2])
    # the same as solvers.solve_differences on one difference with an expert per member
    mean, _ = solve_differences(2, np.array([0, 0]), np.array([1, 1]), np.array([1.0, 3.0]),
                                np.array([1.0, 3.0]))
    assert mean[0] - mean[1] == pytest.approx(delta[0])
    vote = panel.combine(np.array([[1.0, -1.0, 2.0], [1.0, -3.0, np.nan]]), [1, 1, 1], "vote")
    assert vote[0] == pytest.approx(2 / 3)
    assert 0.5 < vote[1] < 0.5 + 1e-5 or 0.5 - 1e-5 < vote[1] < 0.5  # a tie, nudged by the PoE
    assert vote[1] < 0.5  # mean log-odds -1: towards B


def test_weights_and_names_are_checked():
    assert panel.parse_weights("equal", 3) == "equal"
    assert panel.parse_weights(" Learnt", 2) == "learnt"
    assert panel.parse_weights("1,2,1", 3) == [1.0, 2.0, 1.0]
    for bad in ("1,2", "1,-1,1", "a,b,c", "0,0,0", "nan,1,1"):
        with pytest.raises(InputError):
            panel.parse_weights(bad, 3)
    with pytest.raises(InputError, match="at least 2"):
        panel.member_names(["a"])
    with pytest.raises(InputError, match="at most 32"):
        panel.member_names([f"r{k}" for k in range(33)])
    with pytest.raises(InputError, match="'a' is given twice"):
        panel.member_names(["a", "b", "a"])
    with pytest.raises(InputError, match="unknown combination"):
        panel.combine(np.zeros((1, 2)), [1, 1], "median")


def test_fleiss_kappa_matches_the_worked_example():
    # Fleiss (1971) as worked on Wikipedia's "Fleiss' kappa" page: 10 items, 14 raters, 5 classes
    counts = np.array([[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0],
                       [2, 2, 8, 1, 1], [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2],
                       [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]])
    assert panel.fleiss_kappa(counts) == pytest.approx(0.210, abs=5e-4)
    assert np.isnan(panel.fleiss_kappa(np.array([[3, 0], [3, 0]])))
    with pytest.raises(InputError, match="same number of raters"):
        panel.fleiss_kappa(np.array([[2, 0], [1, 0]]))


def test_member_agreement_kappas_and_split_pairs():
    keys = pd.DataFrame({"context_id": ["d"] * 4, "a_id": ["p", "p", "q", "r"],
                         "b_id": ["q", "r", "r", "p"]})
    # three members, pair-level: (p,q): +,+,-   (p,r): +,-,-(from r,p order)   (q,r): +,+,+
    z = np.array([[1.0, 2.0, -1.0], [1.0, np.nan, np.nan], [0.5, 0.5, 2.0],
                  [np.nan, 1.0, 1.0]])
    pairs, lo = panel.pair_verdicts(keys, z)
    assert list(pairs["x"] + pairs["y"]) == ["pq", "pr", "qr"]
    assert lo[1, 0] == pytest.approx(1.0) and lo[1, 1] == pytest.approx(-1.0)
    names = ["m1", "m2", "m3"]
    panel_lo = panel.poe_log_odds(lo, np.full(3, 1 / 3))
    agree = panel.member_agreement(names, lo, panel_lo)
    labels = (lo <= 0).astype(int)
    row = agree.pairwise.iloc[0]
    assert row["n_pairs"] == 3 and row["agreement"] == pytest.approx(2 / 3)
    # kappa and alpha count every pair in both orientations (x better / y better swapped), so
    # the references are scikit-learn's and the krippendorff package's on the doubled labels
    both = np.concatenate([labels, 1 - labels])
    assert row["kappa"] == pytest.approx(cohen_kappa_score(both[:, 0], both[:, 1]))
    import krippendorff
    assert agree.krippendorff_alpha == pytest.approx(krippendorff.alpha(
        reliability_data=both.T.astype(float), level_of_measurement="nominal"))
    assert agree.n_pairs_all == 3
    split = panel.split_pairs(pairs, names, lo, panel_lo)
    assert len(split) == 2 and set(split["x"] + split["y"]) == {"pq", "pr"}
    assert split.loc[0, "minority"] == pytest.approx(1 / 3)
    assert set(agree.with_panel["member"]) == set(names)
    json.dumps(agree.to_dict())


def test_human_agreement_interval_brackets_the_estimate():
    problem = simulated_problem(n_contexts=10, seed=3)
    t = simulated_table(problem, 1.0, 0.0)
    keys, _ = panel.aligned_log_odds([t], [panel.balanced_scaling(t.p)])
    human, _ = truth_labels(keys, problem)
    a = panel.human_agreement_interval(human, t, 0.5, n_boot=300)
    assert a.accuracy_low <= a.accuracy <= a.accuracy_high
    assert a.kappa_low <= a.kappa <= a.kappa_high
    assert a.n_pairs == 150 and 0.6 < a.accuracy < 1.0


# ------------------------------------------------------------------------------ a tiny store

SAMPLE = REPO / "assets" / "sample_summeval.csv"


def seed_simulated_judges(url: str, *, labels: bool = True, judges=SIMULATED, seed: int = 0):
    """A real SQLite store with the sample (3 contexts x 5 candidates, systems, coherence), one
    stored run per SIMULATED judge (every ordered pair, logit p = true difference scaled, plus
    the judge's positional bias and noise; a rate recorded as a worker would) and, with
    ``labels``, one person's A/B label per unordered pair from the coherence scores."""
    import compassess_core as ca
    from compassess_core.types import ComparisonResult, Judgement, PairKey

    api = ca.open_store(url)
    ds = api.add_dataset(SAMPLE, name="sample")
    backend = api.backend
    dataset_id = api.dataset_id("sample")
    rng = np.random.default_rng(seed)
    for k, (name, noise, bias) in enumerate(judges):
        settings = ca.run_settings("sample", aspect="coherence",
                                   model=f"simulated-judge-{name}.gguf")
        run_id = backend.create_run(name, dataset_id, settings.to_dict())
        results = []
        for ctx in ds.contexts:
            for x in ctx.candidates:
                for y in ctx.candidates:
                    if x is y:
                        continue
                    d = x.scores["coherence"] - y.scores["coherence"]
                    z = 2.0 * d + bias + noise * rng.normal()
                    p = float(1.0 / (1.0 + np.exp(-z)))
                    results.append(ComparisonResult(
                        PairKey(ctx.context_id, x.candidate_id, y.candidate_id),
                        Judgement(p, float(np.log(p)), float(np.log1p(-p)), 1.0),
                        f"simulated-{name}-{ctx.context_id}-{x.candidate_id}-{y.candidate_id}"))
        backend.add_results(run_id, "comparative", results)
        backend.record_plan(run_id, {"work_tokens": 100 * (k + 1) * len(results)})
        backend.set_run_status(run_id, "completed", done=len(results), total=len(results),
                               rate=10.0 * (k + 1))
    if labels:
        rows = []
        for ctx in ds.contexts:
            c = ctx.candidates
            for i in range(len(c)):
                for j in range(i + 1, len(c)):
                    si, sj = c[i].scores["coherence"], c[j].scores["coherence"]
                    rows.append(dict(context_id=ctx.context_id, candidate_a=c[i].candidate_id,
                                     candidate_b=c[j].candidate_id,
                                     winner=(c[i].candidate_id if si > sj else
                                             c[j].candidate_id if sj > si else "tie"),
                                     annotator="person"))
        api.import_labels(pd.DataFrame(rows), dataset="sample", aspect="coherence")
    return api


@pytest.fixture(scope="module")
def labelled_store(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('panel') / 'panel.db'}"
    api = seed_simulated_judges(url)
    api.create_panel("jury", [n for n, _, _ in SIMULATED])
    api.create_panel("jury-learnt", [n for n, _, _ in SIMULATED], weights="learnt")
    api.create_panel("jury-vote", [n for n, _, _ in SIMULATED], combine="vote",
                     weights="1,2,1")
    return url


def test_store_round_trip_and_panel_reads_like_a_run(labelled_store):
    import compassess_core as ca
    api = ca.open_store(labelled_store)
    p = api.panel("jury")
    # a panel reads back as a run does (both are Verdicts) but is not a run of one judge
    assert isinstance(p, ca.Panel) and isinstance(p, ca.Verdicts) and not isinstance(p, ca.Run)
    assert [m.name for m in p.members] == [n for n, _, _ in SIMULATED]
    assert [m.weight for m in p.members] == pytest.approx([1 / 3] * 3)
    assert all("balanced tau*" in m.scaling for m in p.members)
    assert p.combine == "poe" and p.weights_mode == "equal" and p.n_comparisons == 60
    assert p.info.rate == pytest.approx(180 / (60 / 10 + 60 / 20 + 60 / 30))
    ranks = p.rankings("bradley-terry")
    assert len(ranks) == 15 and set(ranks["rank"]) <= set(range(1, 6))
    ev = p.evaluation()
    assert ev.debiased.spearman_x100 is not None and ev.run == "jury"
    assert p.leaderboard(n_boot=20).frame["system"].notna().all()
    assert 0.0 <= p.positional_bias("none").p_a_raw <= 1.0
    assert p.agreement().report.debiased.majority.n_without_ties > 0
    export = p.export_bytes("rankings", "json", method="win-ratio")
    assert export.metadata["panel"]["members"][0]["run"] == "simulated-sharp"
    assert b"simulated-sharp" in export.data and len(export.frame) == 15
    assert "p_simulated-sharp" in p.comparisons().columns
    agree = p.member_agreement()
    assert len(agree.pairwise) == 3 and agree.n_pairs_all == 30
    assert np.isfinite(agree.fleiss_kappa) and np.isfinite(agree.krippendorff_alpha)
    assert set(p.split_pairs().columns) >= {"panel", "n_for_x", "n_for_y", "minority"}
    assert p.member_warnings() == {}  # the simulated judges look at content
    listed = api.panels("sample")
    assert list(listed["name"]) == ["jury", "jury-learnt", "jury-vote"]
    assert listed.loc[2, "weights"] == "1, 2, 1" and listed.loc[2, "combine"] == "vote"
    learnt = api.panel("jury-learnt")
    w = [m.weight for m in learnt.members]
    assert w[0] > w[2]
    # what belongs to one judge's run (its prompts, executing, renaming) is not a panel's at all
    assert not any(hasattr(p, verb) for verb in ("prompt", "comparison", "execute",
                                                   "start_worker", "cancel", "rename",
                                                   "calibrated"))


def test_panel_creation_is_checked(labelled_store, tmp_path):
    import compassess_core as ca
    api = ca.open_store(labelled_store)
    with pytest.raises(InputError, match="at least 2"):
        api.create_panel("solo", ["simulated-sharp"])
    with pytest.raises(InputError, match="given twice"):
        api.create_panel("twice", ["simulated-sharp", "simulated-sharp"])
    with pytest.raises(InputError, match="already exists"):
        api.create_panel("jury", ["simulated-sharp", "simulated-noisy"])
    with pytest.raises(InputError, match="2 weights for 3|3 weights"):
        api.create_panel("w", [n for n, _, _ in SIMULATED], weights="1,2")
    with pytest.raises(InputError, match="unknown combination"):
        api.create_panel("c", ["simulated-sharp", "simulated-noisy"], combine="median")
    assert "w" not in set(api.panels()["name"])
    bare = ca.open_store(tmp_path / "bare.db")
    seed_simulated_judges(bare.url, labels=False, judges=SIMULATED[:2])
    with pytest.raises(InputError, match="needs human labels"):
        bare.create_panel("learnt", ["simulated-sharp", "simulated-middling"], weights="learnt")
    assert len(bare.panels()) == 0


def test_a_run_on_a_panel_is_not_deleted_and_a_dataset_delete_takes_its_panels(tmp_path):
    api = seed_simulated_judges(f"sqlite:///{tmp_path / 'd.db'}", labels=False,
                                judges=SIMULATED[:2])
    api.create_panel("pair", ["simulated-sharp", "simulated-middling"])
    with pytest.raises(InputError, match="member of panel\\(s\\) 'pair'"):
        api.delete_run("simulated-sharp")
    assert api.delete_panel("pair").panels == 1
    assert api.delete_run("simulated-sharp").runs == 1
    # a dataset's delete takes its panels (and their member rows) with its runs
    api2 = seed_simulated_judges(f"sqlite:///{tmp_path / 'e.db'}", labels=False,
                                 judges=SIMULATED[:2])
    api2.create_panel("pair", ["simulated-sharp", "simulated-middling"])
    gone = api2.delete_dataset("sample")
    assert (gone.datasets, gone.runs, gone.panels, gone.panel_members) == (1, 2, 1, 2)
    assert len(api2.panels()) == 0


def test_judges_leaderboard_ranks_by_kappa_with_intervals(labelled_store):
    import compassess_core as ca
    board = ca.open_store(labelled_store).judges("sample", "coherence", n_boot=200)
    f = board.frame
    assert board.basis == "kappa" and board.n_labels > 0
    assert set(f["judge"]) == {"simulated-sharp", "simulated-middling", "simulated-noisy",
                               "jury", "jury-learnt", "jury-vote"}
    # best first; equal kappas share the smallest rank (scipy's rankdata, method="min")
    from scipy.stats import rankdata
    assert list(f["rank"]) == list(rankdata(-f["kappa"].fillna(-np.inf), method="min"))
    assert (f["kappa"].diff().dropna() <= 1e-12).all()  # best first
    ok = f["kappa"].notna()
    assert ((f.loc[ok, "kappa_low"] <= f.loc[ok, "kappa"])
            & (f.loc[ok, "kappa"] <= f.loc[ok, "kappa_high"])).all()
    row = f.set_index("judge")
    assert row.loc["simulated-sharp", "kappa"] > row.loc["simulated-noisy", "kappa"]
    assert row.loc["jury-learnt", "held_out"] and not row.loc["jury", "held_out"]
    assert row.loc["simulated-middling", "comparisons_per_s"] == pytest.approx(20.0)
    assert row.loc["jury", "n_comparisons"] == 180
    # prompt tokens per comparison as the plan counted them; a panel's: all members' over all
    assert row.loc["simulated-middling", "tokens_per_comparison"] == pytest.approx(200.0)
    assert row.loc["jury", "tokens_per_comparison"] == pytest.approx(200.0)
    assert np.isfinite(row.loc["jury", "log_loss_raw"])
    json.dumps(board.to_dict())


def test_judges_without_labels_rank_by_reference_spearman(tmp_path):
    api = seed_simulated_judges(f"sqlite:///{tmp_path / 'r.db'}", labels=False)
    board = api.judges("sample", "coherence", n_boot=10)
    assert board.basis == "spearman_x100" and board.reference == "coherence"
    assert board.frame["kappa"].isna().all()
    assert board.frame.loc[0, "judge"] == "simulated-sharp"
    with pytest.raises(InputError, match="at most 10,000"):
        api.judges("sample", "coherence", n_boot=10_001)
    with pytest.raises(InputError, match="neither human labels for aspect .fluency-of-nothing. nor a reference"):
        api.judges("sample", "fluency-of-nothing")


# ------------------------------------------------------------------------------ the CLI

def cli(capsys, *args: str) -> subprocess.CompletedProcess:
    """``compassess ARGS`` in this process (``cli.main``, as the console script calls it), its
    exit code and output as a finished process's."""
    from compassess_core.cli import main
    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out.out, out.err)


def test_cli_panel_create_rank_evaluate_and_judges(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    seed_simulated_judges(url)
    made = cli(capsys, "panel", "create", "--name", "P", "--run", "simulated-sharp", "--run",
               "simulated-middling", "--run", "simulated-noisy", "--weights", "learnt",
               "--db", url)
    assert made.returncode == 0, made.stderr
    assert "simulated-sharp" in made.stdout and "learnt" in made.stdout
    ranked = cli(capsys, "panel", "rank", "--name", "P", "--db", url)
    assert ranked.returncode == 0, ranked.stderr
    out = cli(capsys, "panel", "evaluate", "--name", "P", "--json", "--db", url)
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["panel"]["debiased"]["spearman_x100"] is not None
    assert set(payload["members"]) == {"simulated-sharp", "simulated-middling",
                                       "simulated-noisy"}
    assert "p_a" in payload["members"]["simulated-sharp"]["raw"]
    assert payload["agreement"]["n_pairs_all"] == 30
    judges = cli(capsys, "judges", "--dataset", "sample", "--aspect", "coherence", "--json",
                 "--bootstrap", "100", "--db", url)
    assert judges.returncode == 0, judges.stderr
    board = json.loads(judges.stdout)
    assert board["basis"] == "kappa" and len(board["judges"]) == 4
    assert all(j["kappa_low"] <= j["kappa"] <= j["kappa_high"] for j in board["judges"])
    text = cli(capsys, "judges", "--dataset", "sample", "--aspect", "coherence", "--bootstrap",
               "100", "--db", url)
    assert text.returncode == 0 and "kappa" in text.stdout
    bad = cli(capsys, "panel", "create", "--name", "Q", "--run", "simulated-sharp", "--db", url)
    assert bad.returncode == 2 and "at least 2" in bad.stderr
    refused = cli(capsys, "delete-run", "--run", "simulated-sharp", "--yes", "--db", url)
    assert refused.returncode == 2 and "panel" in refused.stderr


def test_the_panel_audit_report_shows_its_members_and_each_members_p(labelled_store, tmp_path,
                                                                      capsys, monkeypatch):
    """The audit report of a panel: its setup lists the members with their models, templates
    and weights; a shown comparison has each member's debiased p (no prompt of its own); the
    CLI writes the same bytes as the API for the same date."""
    import compassess_core as ca
    from datetime import datetime, timezone
    api = ca.open_store(labelled_store)
    jury = api.panel("jury-learnt")
    when = datetime(2026, 11, 24, tzinfo=timezone.utc)
    html = jury.report_html(generated_at=when).decode()
    assert "Panel of judges 1: jury-learnt" in html and "<h4>Members</h4>" in html
    for run in jury.member_runs:
        assert run.name in html and run.settings.model in html
    assert "debiased at the member" in html
    assert "The exact prompt with" not in html  # a panel has no prompt of its own
    audit = jury.audit()
    assert audit.panel["weights"] == "learnt" and audit.tau == 0.5
    shown = audit.order_dependent[0]
    assert shown.prompt is None and set(shown.members) == {r.name for r in jury.member_runs}
    assert all(p is None or 0.0 < p < 1.0 for p in shown.members.values())
    out = tmp_path / "jury.html"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(int(when.timestamp())))
    made = cli(capsys, "panel", "report", "--name", "jury-learnt", "-o", str(out), "--db",
               labelled_store)
    assert made.returncode == 0, made.stderr
    assert out.read_bytes() == html.encode()


# ------------------------------------------------------------------------------ the benchmark

def markdown_rows(text: str) -> dict[str, dict[str, str]]:
    """The rows of the markdown table in ``text``, by first cell, as {column: cell}."""
    lines = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    cells = [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in lines]
    head = cells[0]
    return {row[0]: dict(zip(head, row)) for row in cells[1:]}


def test_panel_study_table_from_two_stores(labelled_store, tmp_path):
    from benchmarks.panel_study import main
    other = tmp_path / "second.db"
    seed_simulated_judges(f"sqlite:///{other}", labels=False, judges=SIMULATED[2:], seed=5)
    doc = tmp_path / "results.md"
    doc.write_text("# Results\n", encoding="utf-8")
    args = ["--db", labelled_store, "--db", str(other), "--dataset", "sample", "--aspect",
            "coherence", "--doc", str(doc),
            "--subset", "two=simulated-sharp,second:simulated-noisy"]
    assert main(args) == 0
    assert main(args) == 0  # the block is replaced, not appended twice
    text = doc.read_text(encoding="utf-8")
    assert text.count("<!-- generated: panel sample coherence -->") == 1
    rows = markdown_rows(text)
    assert {"simulated-sharp", "second:simulated-noisy",
            "best judge alone (simulated-sharp)",
            "panel of all 4, equal weights (product of experts)",
            "panel of all 4, weights learnt from human labels (held-out folds of contexts)",
            "panel of all 4: majority vote of debiased verdicts"} <= set(rows)
    assert rows["panel of all 4, equal weights (product of experts)"]["comparisons"] == "240"  # 4 x 60
    assert rows["panel two, equal weights (product of experts)"]["comparisons"] == "120"  # 2 x 60
    assert "panel two: majority vote of debiased verdicts" in rows
    picked = [r for r in rows if r.startswith("panel of all 4: its best judge alone, picked on held-out")]
    assert len(picked) == 1 and "simulated-sharp x" in picked[0]  # the sharp judge wins folds
    learnt_kappa = float(rows["panel of all 4, weights learnt from human labels (held-out "
                              "folds of contexts)"]["kappa [95%]"].split(" [")[0])
    assert learnt_kappa >= float(rows["simulated-noisy"]["kappa [95%]"].split(" [")[0])


def test_panel_study_learns_weights_from_reference_scores_without_labels(tmp_path):
    """No human labels: the weights are learnt from pairs ordered by the reference column, on
    held-out folds of contexts, and the row says so; accuracy stays n/a (no people)."""
    from benchmarks.panel_study import main, reference_labels, stored_judges
    db = tmp_path / "r.db"
    seed_simulated_judges(f"sqlite:///{db}", labels=False)
    runs, data, human = stored_judges([str(db)], "sample", "coherence", None)
    assert human is None
    derived = reference_labels(data, "coherence")
    ctx = data.contexts[0]
    s = {c.candidate_id: c.scores["coherence"] for c in ctx.candidates}
    first = derived[derived["context_id"] == ctx.context_id]
    assert len(first) == sum(s[a] != s[b] for i, a in enumerate(s) for b in list(s)[i + 1:])
    assert all(s[w] == max(s[a], s[b]) for a, b, w in
               first[["candidate_a", "candidate_b", "winner"]].itertuples(index=False))
    doc = tmp_path / "results.md"
    doc.write_text("# Results\n", encoding="utf-8")
    assert main(["--db", str(db), "--dataset", "sample", "--aspect", "coherence",
                 "--doc", str(doc)]) == 0
    rows = markdown_rows(doc.read_text(encoding="utf-8"))
    learnt = rows["panel of all 3, weights learnt from the 'coherence' scores (held-out folds of "
                  "contexts)"]
    # no people: their columns are left out; Spearman, its paired difference and pair accuracy
    assert "accuracy vs people" not in learnt and float(learnt["Spearman x100"]) > 0
    assert float(learnt["pair accuracy"]) > 0.5
    assert rows["simulated-noisy"]["vs best judge [95%]"].startswith("-")


def test_migration_0010_downgrades_keeping_the_runs_and_upgrades_again(tmp_path):
    from alembic import command
    from sqlalchemy import create_engine, inspect
    from sqlalchemy.pool import NullPool

    from db.connection import alembic_config

    url = f"sqlite:///{tmp_path / 'm.db'}"
    api = seed_simulated_judges(url, labels=False, judges=SIMULATED[:2])
    api.create_panel("pair", ["simulated-sharp", "simulated-middling"])
    api.close()

    def migrate(to: str) -> None:
        engine = create_engine(url, poolclass=NullPool)
        with engine.begin() as conn:
            cfg = alembic_config()
            cfg.attributes["connection"] = conn
            (command.downgrade if to == "0009" else command.upgrade)(cfg, to)
        engine.dispose()

    migrate("0009")
    engine = create_engine(url, poolclass=NullPool)
    assert not {"panels", "panel_members"} & set(inspect(engine).get_table_names())
    engine.dispose()
    migrate("head")
    import compassess_core as ca
    again = ca.open_store(url)
    assert len(again.runs()) == 2 and len(again.panels()) == 0
    again.create_panel("pair", ["simulated-sharp", "simulated-middling"])


def test_a_member_that_answers_by_position_is_named(tmp_path):
    api = seed_simulated_judges(f"sqlite:///{tmp_path / 'w.db'}", labels=False,
                                judges=(SIMULATED[0], ("simulated-positional", 0.1, 9.0)))
    jury = api.create_panel("jury", ["simulated-sharp", "simulated-positional"])
    warned = jury.member_warnings()
    assert list(warned) == ["simulated-positional"] and "P(A)" in warned["simulated-positional"]

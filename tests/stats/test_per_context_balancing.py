"""Per-context balancing (eq. 10 applied context by context) and what the threshold moves.

The run is hand-made, no judge: 3 contexts x 3 candidates on a full design (every ordered pair
once), ``p = sigmoid(q_a - q_b + lean)`` with the quality ``q`` of each candidate its coherence
and a positional lean of +2, 0 and -1.5 log-odds in contexts c0, c1 and c2. The global tau*
(the median of all 18 p) leaves c0 mostly won by A and c2 mostly by B; one tau* per context
(the median of its 6 p, an even count) gives every context P(A) = 0.5 exactly.
"""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import compassess_core as ca
from compassess_core.stats import analysis, bias
from compassess_core.data.candidates import load_candidates
from compassess_core.errors import LengthMismatchError
from compassess_core.types import ComparisonResult, Judgement, PairKey
from db.store import Store
from tests.app.test_app_pages import APP, app_env, settings_for  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
LEAN = {"c0": 2.0, "c1": 0.0, "c2": -1.5}
COHERENCE = {"x": 1.0, "y": 2.0, "z": 3.5}


def dataset_csv() -> bytes:
    rows = [dict(context_id=c, context=f"article {c}", candidate_id=k, text=f"summary {k} " * (2 + i),
                 system=f"s{k}", coherence=q)
            for c in LEAN for i, (k, q) in enumerate(COHERENCE.items())]
    return pd.DataFrame(rows).to_csv(index=False).encode()


def hand_p(context: str, a: str, b: str) -> float:
    return float(1.0 / (1.0 + np.exp(-(COHERENCE[a] - COHERENCE[b] + LEAN[context]))))


def seed_leaning_run(url: str, *, both_orders: bool = True, name: str = "leaning") -> tuple[int, int]:
    """Store the dataset and the hand-made run (see the module docstring); ``both_orders=False``
    keeps only the orders with the smaller id first (a no-repeat design)."""
    store = Store(url)
    dataset = load_candidates(dataset_csv(), name=f"leaning-{name}", file_label="leaning.csv")
    dataset_id = store.save_dataset(dataset)
    run_id = store.create_run(name, dataset_id, settings_for(dataset.name).to_dict())
    results = []
    for ctx in dataset.contexts:
        for a in COHERENCE:
            for b in COHERENCE:
                if a == b or (not both_orders and a > b):
                    continue
                p = hand_p(ctx.context_id, a, b)
                results.append(ComparisonResult(
                    PairKey(ctx.context_id, a, b),
                    Judgement(p, float(np.log(0.6 * p)), float(np.log(0.6 * (1 - p))), 0.6),
                    f"hash-{name}-{ctx.context_id}-{a}-{b}"))
    store.add_results(run_id, "comparative", results)
    store.set_run_status(run_id, "completed", done=len(results), total=len(results))
    return dataset_id, run_id


@pytest.fixture(scope="module")
def url(tmp_path_factory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('per_context') / 'store.db'}"
    seed_leaning_run(url)
    seed_leaning_run(url, both_orders=False, name="one-order")
    return url


@pytest.fixture(scope="module")
def run(url):
    return ca.open_store(url).get_run("leaning")


def context_p(context: str) -> np.ndarray:
    return np.array([hand_p(context, a, b) for a in COHERENCE for b in COHERENCE if a != b])


# ------------------------------------------------------------------------------- the engine

def test_balanced_thresholds_are_each_groups_median():
    labels, taus = bias.balanced_thresholds([0.9, 0.8, 0.7, 0.6, 0.2, 0.3], list("aaaabb"))
    assert labels.tolist() == ["a", "b"]
    assert taus == pytest.approx([0.75, 0.25])
    with pytest.raises(LengthMismatchError):
        bias.balanced_thresholds([0.5, 0.5], ["a"])


def test_debias_by_threshold_is_eq9_and_decides_exactly_at_each_threshold():
    p = np.array([0.9, 0.75, 0.6, 0.3, 0.25, 0.1])
    tau = np.array([0.75, 0.75, 0.75, 0.25, 0.25, 0.25])
    q = bias.debias_by_threshold(p, tau)
    assert ((q > 0.5) == (p > tau)).all()
    assert q[1] == 0.5 and q[4] == 0.5  # p equal to its threshold: a win for B, as eq. 10
    assert q[[0, 2]] == pytest.approx(bias.debias_probabilities(p[[0, 2]], 0.75))
    assert q[[3, 5]] == pytest.approx(bias.debias_probabilities(p[[3, 5]], 0.25))
    with pytest.raises(ca.InputError):
        bias.debias_by_threshold(p, 1.0)


# ---------------------------------------------------------------------------------- the API

def test_global_tau_leaves_contexts_leaning_and_per_context_balances_each(run):
    global_ = run.bias("balanced").set_index("context_id")
    assert global_.loc["c0", "p_a"] > 0.8 and global_.loc["c2", "p_a"] < 0.2
    per = run.bias("balanced-per-context").set_index("context_id")
    assert (per["p_a"] == 0.5).all()
    for c in LEAN:
        assert per.loc[c, "tau"] == pytest.approx(np.median(context_p(c)))
    assert run.thresholds("balanced-per-context") == pytest.approx(per["tau"].to_dict())
    assert np.isnan(run.tau("balanced-per-context"))
    assert run.threshold_label("balanced-per-context", 2).startswith("tau* per context (")
    position = run.positional_bias("balanced-per-context")
    # raw P(A) is the judge's own (every context holds 6 comparisons, so the mean of theirs)
    assert position.p_a_raw == pytest.approx(run.bias("none")["p_a"].mean())
    assert position.p_a == 0.5 and position.threshold.startswith("tau* per context")
    assert position.p_a_context_min == position.p_a_context_max == 0.5
    spread = run.positional_bias("balanced")
    assert (spread.p_a_context_min, spread.p_a_context_max) == (global_["p_a"].min(),
                                                                global_["p_a"].max())


def test_per_context_win_ratio_counts_verdicts_at_each_contexts_tau(run):
    ranked = run.rankings("win-ratio", "balanced-per-context")
    for c in LEAN:
        tau = np.median(context_p(c))
        wins = {k: 0 for k in COHERENCE}
        for a in COHERENCE:
            for b in COHERENCE:
                if a != b:
                    wins[a if hand_p(c, a, b) > tau else b] += 1
        got = ranked[ranked["context_id"] == c].set_index("candidate_id")["score"]
        assert got.to_dict() == pytest.approx({k: w / 4 for k, w in wins.items()})


def test_evaluation_and_export_say_which_thresholds_were_used(run):
    report = run.evaluation("win-ratio", "balanced-per-context")
    assert report.debias == "balanced-per-context" and np.isnan(report.debiased.tau)
    assert report.debiased.p_a == 0.5
    assert set(report.context_taus) == set(LEAN)
    exported = run.export_bytes("rankings", "json", method="win-ratio",
                                debias="balanced-per-context", ci=False)
    assert exported.metadata["debias"] == "balanced-per-context"
    assert exported.metadata["tau"] is None
    assert exported.metadata["tau_per_context"] == pytest.approx(report.context_taus)
    frame = exported.frame
    assert frame["tau"].to_numpy() == pytest.approx(frame["context_id"].map(report.context_taus))


def test_leaderboard_export_names_the_per_context_thresholds(run):
    exported = run.leaderboard_bytes("json", "bradley-terry", "balanced-per-context", n_boot=10)
    assert exported.metadata["tau"] is None
    assert exported.metadata["debias"] == "balanced-per-context"
    assert exported.metadata["threshold"].startswith("tau* per context (")


def test_every_debias_mode_reads_through_every_run_reader(run):
    """The mode is one more debias value: every reader that takes one takes it."""
    for read in (lambda d: run.leaderboard("bradley-terry", d, n_boot=10),
                 lambda d: run.compare(run, "bradley-terry", d),
                 lambda d: run.length_bias(d), lambda d: run.order_dependence(d),
                 lambda d: run.decision_matrix("c0", d), lambda d: run.position_warning(d),
                 lambda d: run.evaluation_at(d, method="poe")):
        read("balanced-per-context")


def test_tau_effect_is_derived_from_the_method_and_the_design(url, run):
    soft = run.tau_effect("bradley-terry", "balanced")
    assert soft.balanced_design and not soft.hard
    assert "full design (every pair judged once in each order)" in soft.reason
    assert soft.contexts_reordered == 0 and soft.n_contexts == 3
    hard = run.tau_effect("win-ratio", "balanced")
    assert hard.hard and "counts eq. 10 verdicts" in hard.reason
    one_order = ca.open_store(url).get_run("one-order").tau_effect("bradley-terry", "balanced")
    assert not one_order.balanced_design and "can move the ranking" in one_order.reason


def test_resolve_tau_refuses_a_single_tau_for_per_context():
    assert "balanced-per-context" in analysis.DEBIAS_CHOICES
    with pytest.raises(ca.InputError, match="one threshold per context"):
        analysis.resolve_tau("balanced-per-context", np.array([0.5]))
    with pytest.raises(ca.InputError, match="balanced-per-context"):
        analysis.resolve_tau("sideways", np.array([0.5]))


# ------------------------------------------------------------------------------- CLI, bench

def test_cli_takes_balanced_per_context(url, capsys):
    from compassess_core.cli import main

    assert main(["rank", "--run", "leaning", "--debias", "balanced-per-context", "--db", url]) == 0
    assert "scores at tau* per context (" in capsys.readouterr().out
    assert main(["evaluate", "--run", "leaning", "--debias", "balanced-per-context",
                 "--db", url]) == 0
    out = capsys.readouterr().out
    assert "per context" in out and "eq. 10 applied context by context" in out


def test_benchmark_table_compares_raw_global_and_per_context(url, tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "per_context_balancing", ROOT / "benchmarks" / "per_context_balancing.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    doc = tmp_path / "results.md"
    doc.write_text("# Results\n\nearlier text\n", encoding="utf-8")
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert bench.main(["--db", url, "--run", "leaning", "--method", "win-ratio",
                           "--doc", str(doc)]) == 0
    out = buf.getvalue()
    row = next(line for line in out.splitlines() if line.startswith("| leaning"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    ev = ca.open_store(url).get_run("leaning")
    expected = [ev.evaluation_at(d, method="win-ratio").spearman_x100
                for d in ("none", "balanced", "balanced-per-context")]
    assert cells[3:6] == [f"{v:.1f}" for v in expected]
    assert cells[8].startswith("0.50-0.50")  # every context balanced
    text = doc.read_text(encoding="utf-8")
    assert "earlier text" in text and text.count(bench.START) == 1
    with redirect_stdout(io.StringIO()):  # a second run replaces the block
        bench.main(["--db", url, "--run", "leaning", "--method", "win-ratio", "--doc", str(doc)])
    assert doc.read_text(encoding="utf-8").count(bench.START) == 1


# ---------------------------------------------------------------------------------- the app

def test_bias_page_balances_each_context_from_the_link(app_env):  # noqa: F811
    seed_leaning_run(app_env)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["tau_mode"] = "per-context"
    at.run()
    at.switch_page("pages/bias.py").run()
    assert not at.exception, at.exception
    assert at.sidebar.radio(key="tau_mode_w").value == "per-context"
    per = next(d.value for d in at.dataframe if "tau" in d.value.columns)
    assert (per["p_a"] == 0.5).all() and len(per) == 3
    assert any("What tau moves here" in i.value for i in at.info)
    captions = "\n".join(c.value for c in at.caption)
    assert "P(A) per context from 0.50 to 0.50" in captions
    at.button(key="bias_use_global").click().run()
    assert at.sidebar.radio(key="tau_mode_w").value == "balanced"
    per = next(d.value for d in at.dataframe if "tau" in d.value.columns)
    assert per["p_a"].max() > 0.8 and per["p_a"].min() < 0.2
    at.switch_page("pages/rankings.py").run()
    assert not at.exception, at.exception
    assert any("What tau moves here" in i.value for i in at.info)


def test_audit_report_names_the_per_context_thresholds(run):
    html = run.report_html(debias="balanced-per-context", n_boot=10).decode()
    assert "balanced-per-context: tau* per context (" in html
    assert "tau = nan" not in html and "at tau = 0.5000" not in html


def test_evaluate_json_has_no_single_tau_but_every_contexts(url, capsys):
    import json

    from compassess_core.cli import main

    assert main(["evaluate", "--run", "leaning", "--debias", "balanced-per-context", "--json",
                 "--db", url]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["debiased"]["tau"] is None and out["debias"] == "balanced-per-context"
    assert set(out["context_taus"]) == set(LEAN) and out["debiased"]["p_a"] == 0.5


@pytest.mark.parametrize("page", ["leaderboard", "matrix", "compare", "agreement", "export"])
def test_every_result_page_reads_per_context_balancing(app_env, page):  # noqa: F811
    seed_leaning_run(app_env)
    seed_leaning_run(app_env, name="second")
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["tau_mode"] = "per-context"
    at.query_params["run"] = "leaning"
    at.run()
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, at.exception
    assert at.sidebar.radio(key="tau_mode_w").value == "per-context"
    shown = "\n".join(str(e.value) for e in [*at.caption, *at.markdown, *at.info])
    assert "tau = nan" not in shown

"""AlpacaEval 2.0's length-controlled win rate against the ``alpaca-eval`` package itself.

The reference is the package's own ``get_length_controlled_winrate`` (alpaca_eval 0.6.6,
``alpaca_eval/metrics/glm_winrate.py``) on the same annotations, and, for the instruction
difficulty, the joint formula of its ``notebooks/instruction_difficulty.ipynb`` built with patsy
and fitted with the package's ``fit_LogisticRegressionCV``. The package downloads its
instruction difficulties from the Hugging Face hub; here that one download is replaced by a file
holding the difficulties of the same run, which is the only input the two sides share besides the
annotations.
"""

from __future__ import annotations

import importlib.metadata
import sys
import types

import numpy as np
import pandas as pd
import pytest

from compassess_core.stats.length_bias import (LC_FOLDS, alpaca_eval_lc_win_rates,
                                               baseline_annotations, instruction_difficulty)
from tests.app.test_app_pages import app_env  # noqa: F401

#: How close the length-controlled win rates must be, in points of a percentage.
TOL_POINTS = 0.1


def _alpaca_glm():
    """alpaca_eval's glm_winrate module. alpaca_eval imports ``pkg_resources`` (gone from
    setuptools >= 81) for two version helpers it does not use here: a stand-in provides them."""
    if "pkg_resources" not in sys.modules:
        try:
            import pkg_resources  # noqa: F401
        except ImportError:
            from packaging.version import parse
            shim = types.ModuleType("pkg_resources")
            shim.parse_version = parse
            shim.get_distribution = lambda name: types.SimpleNamespace(
                version=importlib.metadata.version(name))
            sys.modules["pkg_resources"] = shim
    import alpaca_eval.metrics.glm_winrate as glm
    return glm


def _simulated_run(n_systems: int, n_contexts: int, seed: int):
    """A run against baseline 0: every system's text in every context judged against the
    baseline's in both orders, with a judge that likes length, context difficulty and a
    position bias; soft p as a logprob judge gives."""
    rng = np.random.default_rng(seed)
    skill = np.r_[0.0, rng.normal(0.0, 0.8, n_systems - 1)]
    verbosity = np.r_[1.0, rng.uniform(0.5, 2.5, n_systems - 1)]
    hard = rng.normal(0.0, 1.0, n_contexts)
    length = np.round(rng.lognormal(6.0, 0.4, (n_systems, n_contexts)) * verbosity[:, None])
    i, j, p, ctx = [], [], [], []
    for s in range(1, n_systems):
        for c in range(n_contexts):
            lift = skill[s] + 1.2 * np.tanh((length[s, c] - length[0, c]) / 400.0) + hard[c]
            noise = rng.normal(0.0, 0.7, 2)
            i += [s, 0]
            j += [0, s]
            p += [1 / (1 + np.exp(-(lift + 0.4 + noise[0]))), 1 / (1 + np.exp(lift - 0.4 + noise[1]))]
            ctx += [c, c]
    i, j, ctx = np.array(i), np.array(j), np.array(ctx)
    return i, j, np.array(p), ctx, length[i, ctx], length[j, ctx]


def _annotations_frame(ann, system: int) -> pd.DataFrame:
    """AlpacaEval's annotation format for one system against the baseline: output_1 is the
    baseline, preference in [1, 2] (2: the system's output is better)."""
    rows = ann.system == system
    return pd.DataFrame({
        "index": ann.context[rows],
        "output_1": ["x" * int(k) for k in ann.len_baseline[rows]],
        "output_2": ["y" * int(k) for k in ann.len_system[rows]],
        "preference": 1.0 + ann.preference[rows],
        "generator_1": "baseline", "generator_2": f"system{system}", "annotator": "judge"})


@pytest.fixture()
def hub_difficulty(tmp_path, monkeypatch):
    """Point the package's hub download at a local file of instruction difficulties."""
    glm = _alpaca_glm()
    path = tmp_path / "df_gamed.csv"

    def use(difficulty: np.ndarray) -> None:
        pd.DataFrame({"model": "none", "index": np.arange(len(difficulty)),
                      "instruction_difficulty": difficulty}).to_csv(path, index=False)

    monkeypatch.setattr(glm, "hf_hub_download", lambda **kw: str(path))
    return glm, use


@pytest.mark.parametrize("gamed", [None, [False, False, True, False, False]],
                         ids=["no-rewrites", "a-rewrite-of-the-baseline"])
def test_instruction_difficulty_equals_alpaca_evals_joint_fit(gamed):
    glm = _alpaca_glm()
    i, j, p, ctx, la, lb = _simulated_run(5, 30, seed=1)
    ann = baseline_annotations(i, j, p, ctx, la, lb, baseline=0)
    ours = instruction_difficulty(ann, 30, gamed)

    flags = np.zeros(5, dtype=bool) if gamed is None else np.array(gamed)
    df = pd.DataFrame({"generator_2": [f"s{k}" for k in ann.system], "index": ann.context,
                       "preference": ann.preference,
                       "delta_len": ann.len_baseline - ann.len_system,
                       "not_gamed_baseline": ~flags[ann.system]})
    df["rand_delta_len_std_only"] = df["delta_len"] / df.groupby("generator_2")["delta_len"].transform("std")
    ordered_models = sorted(df["generator_2"].unique())  # noqa: F841 (read by the formula)
    formula = ("C(generator_2, levels=ordered_models): np.tanh(rand_delta_len_std_only) + "
               "C(generator_2, levels=ordered_models) + C(index) + not_gamed_baseline.astype(float) - 1")
    from patsy import dmatrix  # in this scope, as the notebook does, for ``ordered_models``
    train = dmatrix(formula, df, return_type="dataframe")
    train["preference"] = df["preference"]
    model = glm.fit_LogisticRegressionCV(train, "preference", is_ytrue_proba=True, n_splits=5)
    coef = pd.Series(model.coef_[0], index=model.feature_names_in_)
    ref = np.r_[0.0, [coef[f"C(index)[T.{c}]"] for c in range(1, 30)]]
    assert np.max(np.abs(ours - ref)) < 1e-3
    assert np.std(ref) > 0.1  # the simulated contexts do differ


@pytest.mark.parametrize("seed", [2, 3])
def test_lc_win_rate_equals_alpaca_evals_on_four_systems(hub_difficulty, seed):
    glm, use = hub_difficulty
    i, j, p, ctx, la, lb = _simulated_run(5, 40, seed=seed)
    ann = baseline_annotations(i, j, p, ctx, la, lb, baseline=0)
    ours = alpaca_eval_lc_win_rates(5, 0, ann, 40)
    assert ours.uses_difficulty and np.isnan(ours.win_rate[0])
    use(ours.difficulty)
    for s in range(1, 5):
        ref = glm.get_length_controlled_winrate(_annotations_frame(ann, s),
                                                glm_name="length_controlled_noreg",
                                                save_weights_dir=None,
                                                is_warn_extreme_changes=False)
        assert 100 * ours.win_rate[s] == pytest.approx(ref["length_controlled_winrate"],
                                                       abs=TOL_POINTS)
        assert 100 * ours.standard_error[s] == pytest.approx(ref["lc_standard_error"], abs=0.05)
        raw = 100 * ann.preference[ann.system == s].mean()
        assert ref["win_rate"] == pytest.approx(raw, abs=1e-9)  # the same annotations


def test_one_system_uses_alpaca_evals_minimal_formula(hub_difficulty):
    glm, use = hub_difficulty
    i, j, p, ctx, la, lb = _simulated_run(2, 25, seed=4)
    ann = baseline_annotations(i, j, p, ctx, la, lb, baseline=0)
    ours = alpaca_eval_lc_win_rates(2, 0, ann, 25)
    assert not ours.uses_difficulty and "no instruction difficulty" in ours.estimator
    use(np.zeros(25))
    ref = glm.get_length_controlled_winrate(_annotations_frame(ann, 1),
                                            glm_name="length_controlled_minimal",
                                            save_weights_dir=None, is_warn_extreme_changes=False)
    assert 100 * ours.win_rate[1] == pytest.approx(ref["length_controlled_winrate"], abs=TOL_POINTS)


def test_too_few_contexts_for_the_cross_validation_give_nan():
    i, j, p, ctx, la, lb = _simulated_run(3, LC_FOLDS - 1, seed=5)
    ann = baseline_annotations(i, j, p, ctx, la, lb, baseline=0)
    out = alpaca_eval_lc_win_rates(3, 0, ann, LC_FOLDS - 1)
    assert np.all(np.isnan(out.win_rate)) and list(out.n_contexts) == [0, 4, 4]


def test_annotations_average_both_orders_from_the_systems_side():
    # context 0: system 1 as A (p=0.8) and as B (p=0.4 -> 0.6 for system 1): mean 0.7
    ann = baseline_annotations([1, 0, 2], [0, 1, 0], [0.8, 0.4, 0.3], [0, 0, 1],
                               [100, 50, 30], [50, 100, 60], baseline=0)
    assert list(ann.system) == [1, 2] and list(ann.context) == [0, 1]
    assert ann.preference == pytest.approx([0.7, 0.3])
    assert list(ann.len_baseline) == [50, 60] and list(ann.len_system) == [100, 30]


def test_the_leaderboards_column_equals_alpaca_eval_on_the_runs_annotations(hub_difficulty):
    """End to end: a run of four systems and a baseline over 30 contexts (every pair, both
    orders); the annotations AlpacaEval would see are rebuilt here with pandas from the raw
    comparisons, and its function gives the leaderboard's column to 0.1 points."""
    from compassess_core.stats.leaderboard import leaderboard
    from tests.stats.test_leaderboard import table_of
    from compassess_core.data.candidates import content_hash
    from compassess_core.types import Candidate, Context, Dataset

    glm, use = hub_difficulty
    rng = np.random.default_rng(7)
    names = ["base", "s1", "s2", "s3", "s4"]
    skill = np.array([0.0, 0.8, -0.3, 0.4, -1.0])
    verbose = np.array([1.0, 2.0, 0.6, 1.4, 1.0])
    n_ctx = 30
    hard = rng.normal(0, 1, n_ctx)
    length = np.round(rng.lognormal(5.5, 0.3, (5, n_ctx)) * verbose[:, None]).astype(int)
    contexts = tuple(Context(f"c{c}", f"instruction {c}", tuple(
        Candidate(f"x{k}", "w" * int(length[k, c]), system=names[k]) for k in range(5)))
        for c in range(n_ctx))
    ds = Dataset("made", contexts, (), "made.csv", content_hash(contexts))
    rows = []
    for c in range(n_ctx):
        for a in range(5):
            for b in range(5):
                if a != b:
                    z = (skill[a] - skill[b] + np.tanh((length[a, c] - length[b, c]) / 300)
                         + (hard[c] if b == 0 else -hard[c] if a == 0 else 0.0)
                         + 0.3 + rng.normal(0, 0.5))
                    rows.append((f"c{c}", f"x{a}", f"x{b}", float(1 / (1 + np.exp(-z)))))
    board = leaderboard(ds, table_of(rows), baseline="base", n_boot=20)
    frame = board.frame.set_index("system")
    assert board.alpaca_lc is not None and board.alpaca_lc.uses_difficulty

    raw = pd.DataFrame(rows, columns=["ctx", "a", "b", "p"])
    raw = raw[(raw["a"] == "x0") ^ (raw["b"] == "x0")]
    raw["system"] = np.where(raw["a"] == "x0", raw["b"], raw["a"])
    raw["pref"] = np.where(raw["a"] == "x0", 1 - raw["p"], raw["p"])
    ann = raw.groupby(["system", "ctx"], as_index=False)["pref"].mean()
    ann["index"] = ann["ctx"].str[1:].astype(int)
    use(board.alpaca_lc.difficulty)
    for k in range(1, 5):
        mine = ann[ann["system"] == f"x{k}"].sort_values("index")
        frame_k = pd.DataFrame({
            "index": mine["index"], "output_1": ["x" * length[0, c] for c in mine["index"]],
            "output_2": ["y" * length[k, c] for c in mine["index"]],
            "preference": 1 + mine["pref"], "generator_1": "base", "generator_2": names[k],
            "annotator": "judge"})
        ref = glm.get_length_controlled_winrate(frame_k, glm_name="length_controlled_noreg",
                                                save_weights_dir=None,
                                                is_warn_extreme_changes=False)
        assert 100 * frame.loc[names[k], "lc_win_rate_vs_baseline"] == pytest.approx(
            ref["length_controlled_winrate"], abs=TOL_POINTS)
    assert pd.isna(frame.loc["base", "lc_win_rate_vs_baseline"])
    assert "length_controlled_noreg" in board.to_dict()["lc_win_rate_vs_baseline_estimator"]


def test_the_cli_and_the_page_name_the_estimator(app_env, capsys):
    """Where the length-controlled win rate against a baseline is shown, its estimator is named
    (AlpacaEval's GLM without its regularisation toward the baseline); the bundled sample's three
    articles are too few for the 5-fold cross-validation, and a note says so."""
    from compassess_core.cli import main
    from tests.app.test_app_pages import open_page, seed_run, texts

    seed_run(app_env)
    assert main(["leaderboard", "--run", "hand-run", "--baseline", "M9", "--bootstrap", "20",
                 "--db", app_env]) == 0
    out = capsys.readouterr().out
    assert "length_controlled_noreg" in out and "not AlpacaEval's" in out
    assert f"fewer than {LC_FOLDS} contexts" in out
    at = open_page("leaderboard")
    at.selectbox(key="board_baseline_w").set_value("M9").run()
    assert not at.exception, at.exception
    assert "length_controlled_noreg" in texts(at.caption)


def test_verbose_and_concise_rewrites_of_the_baseline_regularise_as_alpaca_eval(hub_difficulty):
    """With the judge's verdicts on verbose and concise rewrites of the baseline in the run,
    AlpacaEval's full estimator (length_controlled_v1: those rows join every system's fit with
    weight 0.2 / 2 and not_gamed_baseline = 0) is what the package computes."""
    from compassess_core.stats.length_bias import LC_ESTIMATOR_REGULARISED, is_gamed_baseline

    glm, use = hub_difficulty
    n_sys, n_ctx = 6, 40
    i, j, p, ctx, la, lb = _simulated_run(n_sys, n_ctx, seed=11)
    names = ["gpt", "gpt_verbose", "gpt_concise", "m3", "m4", "m5"]
    gamed = [is_gamed_baseline(s, "gpt") for s in names]
    assert gamed == [False, True, True, False, False, False]
    ann = baseline_annotations(i, j, p, ctx, la, lb, baseline=0)
    ours = alpaca_eval_lc_win_rates(n_sys, 0, ann, n_ctx, gamed)
    assert ours.estimator == LC_ESTIMATOR_REGULARISED

    # AlpacaEval's df_gamed: the rewrites' rows, each standardised on its own rows
    frames = []
    for g in (1, 2):
        rows = ann.system == g
        delta = pd.Series(ann.len_baseline[rows] - ann.len_system[rows])
        frames.append(pd.DataFrame({
            "model": names[g], "index": ann.context[rows], "preference": ann.preference[rows],
            "std_delta_len": delta / delta.std(), "not_gamed_baseline": False,
            "instruction_difficulty": ours.difficulty[ann.context[rows]]}))
    gamed_csv = pd.concat(frames, ignore_index=True)
    path = glm.hf_hub_download()
    gamed_csv.to_csv(path, index=False)
    for s in (3, 4, 5):
        ref = glm.get_length_controlled_winrate(_annotations_frame(ann, s),
                                                glm_name="length_controlled_v1",
                                                save_weights_dir=None,
                                                is_warn_extreme_changes=False)
        assert 100 * ours.win_rate[s] == pytest.approx(ref["length_controlled_winrate"],
                                                       abs=TOL_POINTS)

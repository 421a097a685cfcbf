"""Typed run options, built and checked once, and run kinds that answer for themselves.

* each options object refuses a bad value when it is made, naming the field (the CLI names its
  flag);
* the CLI (flags), the Python API (keywords or options objects) and the Run page (widgets) build
  the same ``RunSettings`` for the same options, for every kind;
* the advice before a run (a budget too small to rank every candidate, candidates the selection
  leaves unjudged) is one text, counted over the run's contexts, that the CLI prints and the
  page shows;
* ``compassess rank`` and ``evaluate`` print each kind's text by asking the kind (a FAKE judge
  here: these tests are about the wiring).
"""

from __future__ import annotations

import types
from pathlib import Path

import pytest

import compassess_core as ca
from compassess_core import api
from compassess_core.cli import main
from compassess_core.data.candidates import load_candidates
from compassess_core.runs.options import (AbsoluteOptions, ComparativeOptions, ModelOptions,
                                     OptionError, ScoringOptions, run_options)
from compassess_core.runs.run_kinds import RUN_KINDS, build_settings, get_kind
from compassess_core.runs.settings import GenerationOptions
from tests.fakes import FakeLengthJudge
from tests.app.test_app_pages import app_env  # noqa: F401 - the fixture

SAMPLE = Path(__file__).resolve().parents[2] / "assets" / "sample_summeval.csv"


# ---------------------------------------------------------------------- refused when made

@pytest.mark.parametrize("make, field", [
    (lambda: ModelOptions(batch_size=0), "batch_size"),
    (lambda: ModelOptions(contexts=0), "contexts"),
    (lambda: ModelOptions(chunk_size=0), "chunk_size"),
    (lambda: ModelOptions(threads=-1), "threads"),
    (lambda: ComparativeOptions("coherence", strategy="poe"), "budget"),
    (lambda: ComparativeOptions("coherence", strategy="random", budget=0), "budget"),
    (lambda: ComparativeOptions("coherence", strategy="sometimes"), "strategy"),
    (lambda: ComparativeOptions("coherence", task="poem"), "task"),
    (lambda: ComparativeOptions("coherence", seed=-1), "seed"),
    (lambda: ComparativeOptions(None), "aspect"),
    (lambda: ScoringOptions("coherence", template="t1"), "template"),
    (lambda: run_options("scoring", aspect="coherence", budget=3), "strategy"),
    (lambda: run_options("both", aspect="coherence"), "mode"),
    (lambda: AbsoluteOptions("coherence", n_levels=1), "n_levels"),
    (lambda: AbsoluteOptions("coherence", n_levels=21), "n_levels"),
    (lambda: AbsoluteOptions("coherence", variant="maybe"), "variant"),
    (lambda: AbsoluteOptions("coherence", orders="sideways"), "orders"),
    (lambda: AbsoluteOptions("coherence", reference_set="mine"), "reference_set"),
    (lambda: AbsoluteOptions("coherence", generation=GenerationOptions(max_new_tokens=0)),
     "max_new_tokens"),
    (lambda: AbsoluteOptions("coherence", generation=GenerationOptions(sample=True,
                                                                        temperature=0)),
     "temperature"),
])
def test_each_options_object_refuses_a_bad_value_naming_the_field(make, field):
    with pytest.raises(OptionError) as err:
        make()
    assert err.value.field == field and field in str(err.value)
    assert isinstance(err.value, ca.InputError)


def test_a_scoring_run_cannot_express_a_strategy_and_full_drops_the_budget():
    assert not {"strategy", "budget", "seed"} & set(ScoringOptions.__dataclass_fields__)
    assert ComparativeOptions("coherence", strategy="full", budget=7).budget is None


@pytest.mark.parametrize("argv, flag", [
    (["--batch-size", "0"], "--batch-size must be at least 1"),
    (["--threads", "-1"], "--threads must be at least 0"),
    (["--strategy", "poe"], "needs a --budget"),
    (["--mode", "scoring", "--budget", "3"], "a strategy and a budget do not apply"),
])
def test_the_cli_names_a_bad_option_by_its_flag_and_stores_nothing(tmp_path, capsys, argv, flag):
    db = tmp_path / "x.db"
    assert main(["run", str(SAMPLE), "--aspect", "coherence", *argv, "--db", str(db)]) == 2
    assert flag in capsys.readouterr().err
    assert not db.exists()
    assert main(["score", str(SAMPLE), "--aspect", "coherence", "--references", "1",
                 "--db", str(db)]) == 2
    assert "--references must be at least 2, not 1" in capsys.readouterr().err


# ------------------------------------------------------------- one builder behind every door

@pytest.fixture
def started(monkeypatch):
    """What the CLI hands ``Store.start``: its settings, chunk size and threads."""
    seen = {}

    def start(self, data, settings, **kw):
        seen.update(settings=settings, **kw)
        return types.SimpleNamespace(name=settings.default_run_name())
    monkeypatch.setattr(api.Store, "start", start)
    return seen


MODEL_FLAGS = ["--contexts", "2", "--batch-size", "3", "--device", "cpu", "--dtype", "float32",
               "--truncate-context", "--chunk-size", "16", "--threads", "2"]
MODEL = ModelOptions(contexts=2, batch_size=3, device="cpu", dtype="float32",
                     truncate_context=True, chunk_size=16, threads=2)


@pytest.mark.parametrize("command, flags, options, keywords", [
    ("run", ["--template", "t2", "--strategy", "symmetric", "--budget", "6", "--seed", "4"],
     ComparativeOptions("coherence", template="t2", strategy="symmetric", budget=6, seed=4),
     dict(template="t2", strategy="symmetric", budget=6, seed=4)),
    ("run", ["--mode", "scoring", "--template", "s2", "--task", "dialogue"],
     ScoringOptions("coherence", template="s2", task="dialogue"),
     dict(mode="scoring", template="s2", task="dialogue")),
    ("score", ["--references", "3", "--variant", "yes-no", "--orders", "target-first",
               "--max-new-tokens", "40", "--sample", "--temperature", "0.5", "--seed", "9"],
     AbsoluteOptions("coherence", n_levels=3, variant="yes-no", orders="target-first", seed=9,
                     generation=GenerationOptions(max_new_tokens=40, sample=True,
                                                  temperature=0.5)),
     dict(references=3, variant="yes-no", orders="target-first", max_new_tokens=40,
          sample=True, temperature=0.5, seed=9)),
])
def test_the_cli_and_the_api_build_the_same_settings(tmp_path, started, command, flags, options,
                                                      keywords):
    assert main([command, str(SAMPLE), "--aspect", "coherence", *flags, *MODEL_FLAGS,
                 "--db", str(tmp_path / "x.db")]) == 0
    from_cli = started["settings"].to_dict()
    assert (started["chunk_size"], started["threads"]) == (16, 2)
    builder = ca.score_settings if command == "score" else ca.run_settings
    model_keywords = dict(contexts=2, batch_size=3, device="cpu", dtype="float32",
                          truncate_context=True)
    assert builder("sample_summeval", aspect="coherence", **keywords,
                   **model_keywords).to_dict() == from_cli
    assert builder("sample_summeval", options=options,
                   model_options=MODEL).to_dict() == from_cli
    assert build_settings("sample_summeval", options, MODEL).to_dict() == from_cli


def test_the_api_takes_options_objects_and_refuses_a_value_given_twice(store):
    shop = ca.Store(store)
    run = shop.run(SAMPLE, options=ComparativeOptions("coherence", strategy="random", budget=8),
                   model_options=ModelOptions(contexts=1), judge=FakeLengthJudge(),
                   progress=False)
    assert (run.settings.strategy, run.settings.budget, run.info.done) == ("random", 8, 8)
    with pytest.raises(ca.InputError, match="aspect, budget given beside an options object"):
        ca.run_settings("d", aspect="fluency", budget=3,
                        options=ComparativeOptions("coherence"))
    with pytest.raises(ca.InputError, match="contexts given beside an options object"):
        shop.run(SAMPLE, aspect="coherence", contexts=2, model_options=ModelOptions())
    with pytest.raises(ca.InputError, match="not options of an absolute run"):
        ca.score_settings("d", options=ComparativeOptions("coherence"))
    with pytest.raises(ca.InputError, match="aspect is needed"):
        ca.run_settings("d")


def test_threads_are_set_for_the_process_once_a_run_starts(store, monkeypatch):
    monkeypatch.delenv("COMPASSESS_THREADS", raising=False)
    ca.Store(store).run(SAMPLE, aspect="coherence", contexts=1, threads=3,
                        judge=FakeLengthJudge(), progress=False)
    import os
    assert os.environ["COMPASSESS_THREADS"] == "3"


def test_the_run_page_builds_the_settings_the_api_builds(app_env, monkeypatch):
    import pages._common as common
    from db.store import Store
    from tests.app.test_app_pages import open_page, seed_run
    seed_run(app_env)
    monkeypatch.setattr(common.api.Job, "start", lambda job, *a, **k: None)
    at = open_page("run")
    at.selectbox(key="strategy_1").set_value("symmetric").run()
    at.number_input(key="budget_1").set_value(6).run()
    at.number_input(key="n_contexts_1").set_value(2).run()
    [t for t in at.text_input if t.label == "Run name"][0].set_value("from-page").run()
    [b for b in at.button if b.label == "Start"][0].click().run()
    assert not at.exception, at.exception
    stored = Store(app_env).get_run("from-page").settings
    assert stored == ca.run_settings("sample_summeval", aspect="coherence", strategy="symmetric",
                                     budget=6, contexts=2).to_dict()


# --------------------------------------------------------------------------------- advice

def test_the_advice_counts_the_runs_contexts_only():
    dataset = load_candidates(SAMPLE)              # 5 candidates per context
    kind = get_kind("comparative")
    small = ca.run_settings(dataset.name, aspect="coherence", strategy="poe", budget=3)
    assert kind.advice(dataset, small)[0] == (
        "A budget of 3 is below one comparison per candidate (5 in the largest context): some "
        "candidates cannot be ranked; at least 10 (two per candidate) is recommended.")
    random = ca.run_settings(dataset.name, aspect="coherence", strategy="random", budget=2,
                             contexts=2)
    assert kind.advice(dataset, random)[1].startswith("This selection leaves 5 candidate(s) in "
                                                      "2 context(s) unjudged (strategy 'random'")
    assert kind.advice(dataset, ca.run_settings(dataset.name, aspect="coherence")) == []
    assert kind.advice(dataset, ca.run_settings(dataset.name, aspect="coherence",
                                                strategy="no-repeat", budget=10)) == []
    for name in ("scoring", "absolute"):
        assert RUN_KINDS[name].advice(dataset, small) == []


def test_the_cli_prints_the_kinds_advice_as_warnings(tmp_path, monkeypatch, capsys):
    """The warnings come before the judge loads, which the test stops."""
    import compassess_core.judges as judges

    def stop(*a, **k):
        raise ca.InputError("stopped before loading a model (test)")
    monkeypatch.setattr(judges, "load_judge", stop)
    settings = ca.run_settings("sample_summeval", aspect="coherence", strategy="random",
                               budget=3, contexts=2)
    advice = get_kind("comparative").advice(load_candidates(SAMPLE), settings)
    assert len(advice) == 2
    assert main(["run", str(SAMPLE), "--aspect", "coherence", "--strategy", "random",
                 "--budget", "3", "--contexts", "2", "--db", str(tmp_path / "w.db")]) == 2
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("warning:")] == \
        [f"warning: {line}" for line in advice]


# ------------------------------------------------------------------- reading runs as text

def test_rank_and_evaluate_print_what_each_kind_says(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'r.db'}"
    shop = ca.open_store(db)
    pair = shop.run(SAMPLE, aspect="coherence", contexts=1, name="pair", judge=FakeLengthJudge(),
                    progress=False)
    scored = shop.run(SAMPLE, aspect="coherence", mode="scoring", contexts=1, name="scored",
                      judge=FakeLengthJudge(), progress=False)
    assert (get_kind(pair.kind).is_pairwise, get_kind(scored.kind).is_pairwise) == (True, False)
    assert get_kind(pair.kind).summary_line(pair.info) == "20 comparisons"
    assert get_kind(scored.kind).summary_line(scored.info) == "prompt scoring, 5 candidates scored"

    assert main(["evaluate", "--run", "pair", "--db", db]) == 0
    out = capsys.readouterr().out
    assert out.startswith("run pair: 20 comparisons over 1 context;") and "balancing threshold" in out
    assert main(["evaluate", "--run", "scored", "--db", db]) == 0
    assert capsys.readouterr().out.startswith("scoring run scored: 5 candidates scored")

    assert main(["rank", "--run", "pair", "--db", db]) == 0
    out = capsys.readouterr().out
    # rank reads Bradley-Terry at the balanced tau*, as evaluate, leaderboard and the app do
    assert out.startswith("# run pair: bradley-terry scores at tau = 0.5000 (20 comparisons)")
    assert "ci_low" not in out
    assert main(["rank", "--run", "scored", "--db", db]) == 0
    assert capsys.readouterr().out.startswith(
        "# scoring run scored: ranked by the G-Eval expected score (5 candidates)")
    assert main(["rank", "--run", "scored", "--format", "json", "--db", db]) == 0
    assert '"rankings": [' in capsys.readouterr().out

"""Prompt scoring and G-Eval (compassess_core.runs.scoring): token plan, arithmetic, the real model, storage."""

from __future__ import annotations

import math

import numpy as np
import pytest

from compassess_core.errors import InputError, TemplateError
from compassess_core.runs.prompts import Aspect
from compassess_core.runs.scoring import (ScorePlan, argmax_and_expected, plan_score_tokens,
                                     score_distribution, scoring_template)

# A toy tokenizer that splits digits like SmolLM2/Qwen: "Score: 10" -> [.., "1", "0"].
_VOCAB = {str(d): 100 + d for d in range(10)}


def _toy_tokenize(text: str) -> list[int]:
    head, _, tail = text.partition("Score: ")
    return [1, 2] + [_VOCAB[c] for c in tail]


def test_plan_resolves_ten_as_one_then_zero():
    plan = plan_score_tokens(_toy_tokenize)
    assert plan.single == tuple(range(9))                       # scores 1..9 are one token
    assert plan.first_ids == tuple(101 + k for k in range(9))
    assert plan.two_step == ((9, 101, 100),)                    # 10 = "1" then "0"
    assert plan.step_two_firsts == (101,)
    assert set(plan.piece_ids) == set(range(100, 110))          # all digits continue a number


def test_plan_rejects_unresolvable_scores():
    def three_tokens(text: str) -> list[int]:
        tail = text.partition("Score: ")[2]
        return [1, 2] + ([7, 8, 9] if tail == "10" else [_VOCAB[c] for c in tail])
    with pytest.raises(InputError, match="score 10 is 3 tokens"):
        plan_score_tokens(three_tokens)


def test_distribution_hand_worked():
    plan = plan_score_tokens(_toy_tokenize)
    cols = {t: k for k, t in enumerate(plan.read_ids)}
    lp1 = np.full((1, len(plan.read_ids)), -np.inf)
    # step 1: P("1") = 0.4, P("7") = 0.4, other tokens 0.2 (not a score)
    lp1[0, cols[101]] = math.log(0.4)
    lp1[0, cols[107]] = math.log(0.4)
    # step 2 after "1": P("0") = 0.5, P("5") = 0.25 (15: out of range), 0.25 stop
    lp2 = np.full((1, len(plan.read_ids)), -np.inf)
    lp2[0, cols[100]] = math.log(0.5)
    lp2[0, cols[105]] = math.log(0.25)
    probs, mass = score_distribution(plan, lp1, {101: lp2})
    # P(10) = .4 * .5 = .2, P(1) = .4 * .25 = .1, P(7) = .4; mass .7
    assert mass[0] == pytest.approx(0.7)
    expected = np.zeros(10)
    expected[[0, 6, 9]] = [0.1 / 0.7, 0.4 / 0.7, 0.2 / 0.7]
    np.testing.assert_allclose(probs[0], expected)
    arg, exp = argmax_and_expected(probs)
    assert arg[0] == 7.0
    assert exp[0] == pytest.approx((1 * 0.1 + 7 * 0.4 + 10 * 0.2) / 0.7)


def test_argmax_ties_go_low_and_nan_rows_stay_nan():
    probs = np.array([[0.5, 0.5] + [0.0] * 8, [np.nan] * 10])
    arg, exp = argmax_and_expected(probs)
    assert arg[0] == 1.0 and exp[0] == pytest.approx(1.5)
    assert math.isnan(arg[1]) and math.isnan(exp[1])


def test_templates_paper_wording():
    t = scoring_template("s1", Aspect.from_name("coherence"))
    p = t.render("The passage.", "The summary.", Aspect.from_name("coherence"))
    assert p.text == ("Passage: The passage.\n\nSummary: The summary.\n\nScore the response between "
                      "1 and 10 based on how coherent the summary is")
    assert p.primer == "Score: "
    t2 = scoring_template("s2", Aspect.from_name("engagingness"))
    assert t2.name == "s2-dialogue"
    assert t2.render("C", "R", Aspect.from_name("engagingness")).text == (
        "C\n\nResponse: R\n\nProvide a score between 1 and 10 that measures the response's engagingness")
    with pytest.raises(TemplateError, match="unknown scoring template 's3'"):
        scoring_template("s3", Aspect.from_name("coherence"))


# ------------------------------------------------------------------ the real bundled model

@pytest.fixture(scope="module")
def scorer(bundled_model):
    from compassess_core.runs.scoring import load_scorer
    s = load_scorer(None, device="cpu", dtype="fp32", batch_size=4)
    yield s
    s.close()


@pytest.mark.model
def test_real_model_scores_are_distributions(scorer, tiny_dataset):
    aspect = Aspect.from_name("coherence")
    t = scoring_template("s1", aspect)
    ctx = tiny_dataset.contexts[0]
    prompts = [t.render(ctx.text, c.text, aspect) for c in ctx.candidates]
    out = scorer.score(prompts)
    assert len(out) == 3
    for j in out:
        assert sum(j.probabilities) == pytest.approx(1.0, abs=1e-9)
        assert 1 <= j.score_argmax <= 10 and float(j.score_argmax).is_integer()
        assert 1.0 <= j.score_expected <= 10.0
        assert 0.0 < j.label_mass <= 1.0
    # batched = one at a time (same numbers whatever the batch)
    one = scorer.score(prompts[1:2])[0]
    np.testing.assert_allclose(one.probabilities, out[1].probabilities, atol=1e-5)
    assert scorer.model_key.endswith("|scores=1-10")


@pytest.mark.model
def test_real_model_run_is_stored_resumed_and_cached(scorer, store, tiny_dataset):
    import io
    import threading

    from compassess_core.errors import RunCancelled
    from compassess_core.runs.scoring import scoring_settings
    from compassess_core.types import CandidateKey
    from compassess_core.runs.executor import ConsoleReporter, execute_run

    aspect = Aspect.from_name("coherence")
    t = scoring_template("s2", aspect)
    ds_id = store.save_dataset(tiny_dataset)
    settings = scoring_settings("tiny", aspect, t, "bundled")
    run_id = store.create_run("score-run", ds_id, settings.to_dict())
    quiet = ConsoleReporter(stream=io.StringIO())
    stop = threading.Event()
    quiet.progress = lambda pr: stop.set() if pr.done >= 3 else None

    with pytest.raises(RunCancelled):
        execute_run(store, run_id, judge=scorer.judge, reporter=quiet, cancel=stop, chunk_prompts=3)
    assert set(store.stored_results(run_id, "scoring")) == {
        CandidateKey("doc1", c) for c in ("c1", "c2", "c3")}
    assert store.get_run(run_id).judge_key == scorer.model_key
    quiet = ConsoleReporter(stream=io.StringIO())
    summary = execute_run(store, run_id, judge=scorer.judge, reporter=quiet, chunk_prompts=3)
    assert (summary.total, summary.already_stored, summary.computed) == (6, 3, 3)
    table = store.score_table(run_id)
    assert len(table) == 6 and table.probabilities.shape == (6, 10)
    np.testing.assert_allclose(table.probabilities.sum(axis=1), 1.0)
    assert store.get_run(run_id).status == "completed"
    # a second run of the same model and prompts is served from the cache
    run2 = store.create_run("score-run-2", ds_id, settings.to_dict())
    s2 = execute_run(store, run2, judge=scorer.judge, reporter=quiet)
    assert (s2.computed, s2.cached) == (0, 6)
    by_key = lambda t: dict(zip(zip(t.context_ids, t.candidate_ids), t.score_expected))  # noqa: E731
    cached = by_key(store.score_table(run2))
    assert cached == pytest.approx(by_key(table))  # stored in another order: batches finish unordered


# ------------------------------------------------------------------ CLI progress wording

def test_cli_scoring_progress_counts_candidates_not_comparisons(db_url, store, tiny_dataset,
                                                                monkeypatch, capsys):
    """`compassess run --mode scoring` reports candidates scored (a FAKE causal judge, no model)."""
    from compassess_core.runs import executor
    from compassess_core.cli import main
    from tests.fakes import FakeLengthJudge

    monkeypatch.setattr(executor, "load_run_judge", lambda settings: FakeLengthJudge())
    store.save_dataset(tiny_dataset)
    code = main(["run", "tiny", "--mode", "scoring", "--aspect", "coherence", "--template", "s2",
                 "--run", "fake-scoring", "--db", db_url])
    err = capsys.readouterr().err
    assert code == 0, err
    progress = [line for line in err.splitlines() if line.startswith("[")]
    assert progress and progress[-1].startswith("[" + "#" * 30 + "] 6/6 candidates scored (100%)")
    assert "candidates/s" in progress[-1]
    assert not any("comparisons" in line for line in progress)
    assert len(store.score_table(store.get_run("fake-scoring").id)) == 6


def test_cli_pairwise_progress_still_counts_comparisons():
    import io

    from compassess_core.runs.run_loop import Progress
    from compassess_core.runs.executor import ConsoleReporter

    out = io.StringIO()
    ConsoleReporter(stream=out).progress(Progress(2, 2, 2, 0, 1.0, 2.0, 0.0))
    assert "2/2 comparisons (100%) | 2.00 comparisons/s" in out.getvalue()

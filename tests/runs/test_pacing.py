"""A steady rate and micro-batches of a few seconds (``pacing``): the window rate with its prior,
the token budget it sets, and a pacer on a FAKE judge whose time per token is known."""

from __future__ import annotations

import numpy as np
import pytest

from compassess_core.runs.pacing import (MIN_BATCH_TOKENS, BatchPacer, RateWindow,
                                    batch_token_budget, window_rate)


def test_before_any_batch_the_rate_is_the_prior_and_after_a_full_window_the_measured_one():
    assert window_rate([], [], 2.0, 60.0) == 2.0
    assert window_rate([], [], None, 60.0) == 0.0
    # 120 s of batches at 5 units/s: the window (60 s) holds only them
    assert window_rate([50] * 12, [10.0] * 12, 2.0, 60.0) == pytest.approx(5.0)
    # 30 s measured at 4/s, 30 s of the prior at 2/s
    assert window_rate([40, 80], [10.0, 20.0], 2.0, 60.0) == pytest.approx((120 + 60) / 60)


def test_the_window_takes_the_newest_batches_and_the_oldest_in_part():
    # oldest first: 100 units in 50 s, then 30 units in 30 s; a 60 s window takes the newest
    # 30 s whole and 30 s of the oldest (60 units), no prior needed
    assert window_rate([100, 30], [50.0, 30.0], None, 60.0) == pytest.approx((30 + 60) / 60)
    assert window_rate([100, 30], [50.0, 30.0], 9.0, 60.0) == pytest.approx((30 + 60) / 60)


def test_one_slow_batch_moves_the_rate_by_its_share_of_the_window_only():
    steady = RateWindow(prior_rate=1.0, window_s=60.0)
    for _ in range(30):
        steady.add(4, 4.0)                 # 1 unit/s
    before = steady.rate
    steady.add(4, 12.0)                    # one batch three times slower
    assert before == pytest.approx(1.0)
    # 4 units in its 12 s and 48 in the 48 s before it: 52/60, not the batch's own 1/3
    assert steady.rate == pytest.approx(52 / 60)


def test_the_budget_follows_the_rate_within_its_bounds():
    assert batch_token_budget(1000.0, 2.0) == 2000
    assert batch_token_budget(10.0, 2.0) == MIN_BATCH_TOKENS
    assert batch_token_budget(1e6, 2.0, most=8192) == 8192


class FakeTimedJudge:
    """FAKE judge: counts tokens as the local judges do and takes a known time per batch."""

    def __init__(self, token_budget: int = 8192):
        self.token_budget = token_budget
        self.stats = {"model_tokens": 0}
        self.budgets: list[int] = []

    def stream(self, n_batches: int, seconds_per_token: float, clock: list[float]):
        for _ in range(n_batches):
            self.budgets.append(self.token_budget)
            tokens = self.token_budget                 # each batch fills its budget
            self.stats["model_tokens"] += tokens
            clock[0] += tokens * seconds_per_token     # what the batch took
            yield np.arange(1), [None]


def test_the_pacer_sizes_batches_to_the_target_time_and_gives_the_budget_back(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr("compassess_core.runs.pacing.time.perf_counter", lambda: clock[0])
    judge = FakeTimedJudge(token_budget=8192)
    pacer = BatchPacer(judge, prior_token_rate=200.0, target_s=2.0)
    assert judge.token_budget == 400                  # the prior: 200 tokens/s x 2 s
    for _ in pacer.paced(judge.stream(12, 1 / 1000, clock)):   # the judge runs 1000 tokens/s
        pass
    assert judge.budgets[0] == 400 and judge.budgets[-1] == pytest.approx(2000, rel=0.05)
    pacer.restore()
    assert judge.token_budget == 8192


def test_a_judge_without_a_token_budget_is_left_alone():
    class Served:
        pass
    pacer = BatchPacer(Served(), prior_token_rate=100.0)
    assert not pacer.active and list(pacer.paced(iter([1, 2]))) == [1, 2]


def test_a_budget_lowered_by_the_judge_is_never_raised_above_again(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr("compassess_core.runs.pacing.time.perf_counter", lambda: clock[0])
    judge = FakeTimedJudge(token_budget=8192)
    pacer = BatchPacer(judge, prior_token_rate=1000.0, target_s=2.0)
    stream = pacer.paced(judge.stream(6, 1 / 4000, clock))    # fast: the pacer wants 8000
    next(stream)
    judge.token_budget = 1000                                  # e.g. halved after running out of memory
    for _ in stream:
        pass
    assert max(judge.budgets[2:]) <= 1000 and pacer.most == 1000


@pytest.mark.model
def test_a_prompt_longer_than_a_micro_batch_runs_in_pieces_a_caller_can_stop_between(
        fake_weights):
    """With a token budget far below one prompt (a long story on a slow machine), the judge
    computes every prompt in pieces and hands out an empty micro-batch after each: the run loop
    looks for a cancel there. p is that of one pass up to fp32 rounding; every prompt still comes
    once. (The bundled judge's prompts and tokens on FAKE weights, ``fake_weights``: how a prompt
    is cut into pieces is the engine's, the same for any weights.)"""
    from compassess_core.data.candidates import load_candidates
    from compassess_core.judges.transformers_judge import CausalJudge
    from compassess_core.runs.prompts import ASPECT_ADJECTIVES, Aspect, builtin_template
    judge = CausalJudge(fake_weights, batch_size=8)
    ctx = load_candidates("assets/sample_summeval.csv").contexts[0]
    t1 = builtin_template("t1", "summary")
    prompts = [t1.render(ctx.text, ctx.candidates[a].text, ctx.candidates[b].text,
                         Aspect.from_name(x)) for a, b in ((0, 1), (1, 2))
               for x in ("coherence", "fluency")] + [
        t1.render(ctx.text, ctx.candidates[2].text, ctx.candidates[3].text,
                  Aspect("coherence", ASPECT_ADJECTIVES["coherence"]))]
    whole = np.array([j.p for j in judge.judge(prompts)])
    judge.token_budget = 64
    batches = list(judge.judge_stream(prompts))
    assert sum(1 for rows, _ in batches if len(rows) == 0) >= 10, "checkpoints between pieces"
    rows = np.concatenate([r for r, _ in batches])
    assert sorted(rows.tolist()) == list(range(len(prompts)))
    pieces = np.empty(len(prompts))
    for r, js in batches:
        pieces[r] = [j.p for j in js]
    assert np.abs(pieces - whole).max() < 1e-5
    stream = judge.judge_stream(prompts)   # a caller that stops at the first checkpoint
    first = next(stream)
    assert len(first[0]) == 0
    stream.close()


def test_a_judge_far_faster_than_the_prior_reaches_its_full_budget_in_a_few_batches(monkeypatch):
    """A plan's default rate is a CPU's; a GPU judge runs 100,000 tokens/s. The prior sizes the
    first batch only: the budget then doubles per batch up to what memory allows, instead of
    staying tiny until seconds of tiny batches fill the window."""
    clock = [0.0]
    monkeypatch.setattr("compassess_core.runs.pacing.time.perf_counter", lambda: clock[0])
    judge = FakeTimedJudge(token_budget=65536)
    pacer = BatchPacer(judge, prior_token_rate=200.0, target_s=2.0)
    for _ in pacer.paced(judge.stream(12, 1 / 100_000, clock)):
        pass
    assert judge.budgets[0] == 400
    assert all(b <= 2 * a for a, b in zip(judge.budgets, judge.budgets[1:]))  # at most doubling
    assert judge.budgets[-1] == 65536 and judge.budgets.index(65536) <= 9

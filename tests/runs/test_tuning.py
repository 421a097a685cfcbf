"""The engine of wording tuning (``compassess_core.runs.tuning``): ZEPO's fairness, the candidate
wordings, a writer's paraphrases parsed back into templates, the scores of a wording, the pick
and the greedy search within a budget. Pure functions on hand-made numbers; no judge."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from compassess_core.stats import paired
from compassess_core.runs import tuning
from compassess_core.errors import InputError
from compassess_core.runs.options import OptionError
from compassess_core.runs.prompts import Aspect, builtin_template, validate_template_text
from compassess_core.types import ComparisonTable


def table(rows) -> ComparisonTable:
    """A ComparisonTable from (context, a, b, p) rows."""
    c, a, b, p = (np.array(x, dtype=object) for x in zip(*rows))
    p = p.astype(float)
    return ComparisonTable(c, a, b, p, np.log(p), np.log1p(-p), np.ones(len(p)))


# ------------------------------------------------------------------------------ fairness

def test_fairness_is_minus_the_distance_of_the_share_of_a_decisions_from_one_half():
    assert tuning.preference_share([0.9, 0.8, 0.3, 0.2]) == 0.5
    assert tuning.fairness([0.9, 0.8, 0.3, 0.2]) == 0.0
    # p = 0.5 is no decision (ZEPO counts A and B decisions only); NaN is left out
    assert tuning.preference_share([0.9, 0.5, np.nan, 0.1]) == 0.5
    assert tuning.fairness([0.9, 0.9, 0.9, 0.1]) == pytest.approx(-0.25)
    assert tuning.fairness([0.99] * 5) == -0.5 == tuning.fairness([0.01] * 5)
    assert np.isnan(tuning.fairness([0.5, 0.5])) and np.isnan(tuning.fairness([]))
    assert str(tuning.fairness([0.9, 0.1])) == "0.0"  # not -0.0 in a table


# ------------------------------------------------------------------------------ wordings

@pytest.mark.parametrize("task", ["summary", "dialogue", "story", "instruction", "qa", "code",
                                  "text"])
def test_starting_wordings_are_t1_t2_then_valid_paraphrases_on_t1s_body(task):
    ws = tuning.starting_wordings(task)
    t1, t2 = builtin_template("t1", task), builtin_template("t2", task)
    assert [w.key for w in ws] == [f"w{k}" for k in range(1, 3 + len(tuning.BUILT_IN_QUESTIONS))]
    assert (ws[0].text, ws[0].label, ws[0].origin) == (t1.text, "t1", tuning.LIBRARY)
    assert (ws[1].text, ws[1].label) == (t2.text, "t2")
    body = tuning.split_question(t1.text)[0]
    for w in ws[2:]:
        validate_template_text(w.text)  # placeholders intact, braces balanced
        assert w.text.startswith(body) and w.origin == tuning.BUILT_IN and w.parent == "w1"
        assert f"{t1.noun} A" in w.question and f"{t1.noun} B" in w.question
        assert "{aspect}" in w.question
    assert len({w.text for w in ws}) == len(ws)


def test_the_question_reads_the_aspect_as_the_judge_does():
    w = tuning.starting_wordings("summary")[0]
    assert tuning.rendered_question(w, Aspect.from_name("coherence")) == (
        "Which Summary is more coherent relative to the passage, Summary A or Summary B?")
    assert "is better relative" in tuning.rendered_question(w, Aspect.from_name("overall"))


def test_a_written_paraphrase_becomes_a_template_with_the_aspect_placeholder():
    parent = tuning.starting_wordings("dialogue")[0]
    aspect = Aspect.from_name("engagingness")
    request = tuning.paraphrase_request(parent, aspect)
    assert '"engaging"' in request and '"Response A"' in request
    assert tuning.rendered_question(parent, aspect) in request
    text = tuning.parse_paraphrase(
        'New question: "Of Response A and Response B, which is more Engaging {really}?"\nmore',
        parent, aspect)
    assert text == (tuning.split_question(parent.text)[0] + "\n\nOf Response A and Response B, "
                    "which is more {aspect} {{really}}?")
    validate_template_text(text)
    # dropping an answer's name or the aspect's word, or saying nothing, is no wording
    assert tuning.parse_paraphrase(
        'The new question is: "Which Response is more engaging, Response A or Response B?',
        parent, aspect).endswith("\n\nWhich Response is more {aspect}, Response A or Response B?")
    for bad in ("Which is more engaging, A or B?", "Response A or Response B: which is nicer?",
                "Response A is more engaging, but Response B remains uninfluenced.",
                "", "   \n  ", "Response A Response B engaging? " * 30):
        assert tuning.parse_paraphrase(bad, parent, aspect) is None, bad


def test_overall_paraphrases_keep_better():
    parent = tuning.starting_wordings("summary")[0]
    text = tuning.parse_paraphrase("Is Summary A or Summary B better?", parent,
                                   Aspect.from_name("overall"))
    assert text.endswith("Is Summary A or Summary B more {aspect}?")


def test_written_wordings_are_new_usable_and_numbered_on():
    parent = tuning.starting_wordings("summary")[0]
    aspect = Aspect.from_name("coherence")
    replies = ["Of Summary A and Summary B, which is more coherent?", "nonsense",
               "Of Summary A and Summary B, which is more coherent?",  # twice: once
               "Which of Summary A or Summary B reads more coherent?"]
    ws = tuning.written_wordings(replies, parent, aspect, round=2, first_key=8,
                                 known=[parent.text])
    assert [w.key for w in ws] == ["w8", "w9"]
    assert all(w.origin == tuning.WRITTEN and w.round == 2 and w.parent == "w1" for w in ws)
    assert tuning.Wording.from_dict(ws[0].to_dict()) == ws[0]


# ------------------------------------------------------------------------------ scores

def test_score_wording_reads_fairness_on_tuning_contexts_and_agreement_held_out(tiny_dataset):
    # doc1 tunes (P(A) = 2/3 of decisions, one pair flips of 3); doc2 is held out and ranks
    # the candidates exactly by coherence at tau = 0.5
    ctx1, ctx2 = tiny_dataset.contexts
    ids1, ids2 = ctx1.candidate_ids, ctx2.candidate_ids
    rows = [("doc1", ids1[0], ids1[1], 0.9), ("doc1", ids1[1], ids1[0], 0.8),
            ("doc1", ids1[0], ids1[2], 0.7), ("doc1", ids1[2], ids1[0], 0.2),
            ("doc1", ids1[1], ids1[2], 0.6), ("doc1", ids1[2], ids1[1], 0.4)]
    by = sorted(ctx2.candidates, key=lambda c: -c.scores["coherence"])
    for x in by:
        for y in by:
            if x is not y:
                rows.append(("doc2", x.candidate_id, y.candidate_id,
                             0.8 if x.scores["coherence"] > y.scores["coherence"] else 0.3))
    w = tuning.starting_wordings("summary")[0]
    s = tuning.score_wording(w, tiny_dataset, table(rows), ["doc1"], ["doc2"],
                             reference="coherence", n_boot=50)
    assert s.p_a_raw == pytest.approx(4 / 6) and s.fairness == pytest.approx(-(4 / 6 - 0.5))
    assert s.flip_rate == pytest.approx(1 / 3)
    assert (s.n_tune, s.n_holdout) == (6, 6)
    assert s.agreement.metric == "spearman_x100" and s.agreement.raw == pytest.approx(100.0)
    assert s.agreement.n == 1
    # without held-out contexts or anything to agree with: no agreement
    assert tuning.score_wording(w, tiny_dataset, table(rows), ["doc1"], []).agreement is None
    assert tuning.score_wording(w, tiny_dataset, table(rows), ["doc1"], ["doc2"]).agreement is None


def test_label_agreement_is_kappa_with_the_human_majority(tiny_dataset):
    ctx = tiny_dataset.contexts[1]
    a, b, c = ctx.candidate_ids
    rows = [("doc2", a, b, 0.9), ("doc2", b, a, 0.2), ("doc2", a, c, 0.8), ("doc2", c, a, 0.3),
            ("doc2", b, c, 0.3), ("doc2", c, b, 0.8)]
    human = pd.DataFrame(dict(context_id=["doc2"] * 3, candidate_a=[a, a, b],
                              candidate_b=[b, c, c], winner=[a, a, c]))
    ag = tuning.label_agreement(table(rows), human, n_boot=50)
    assert ag.metric == "kappa" and ag.raw == pytest.approx(1.0) and ag.n == 3


def test_split_contexts_takes_the_first_then_the_next(tiny_dataset):
    assert tuning.split_contexts(tiny_dataset, 1, 1) == (["doc1"], ["doc2"])
    assert tuning.split_contexts(tiny_dataset, 2, 0) == (["doc1", "doc2"], [])
    with pytest.raises(InputError, match="has 2 context"):
        tuning.split_contexts(tiny_dataset, 2, 1)
    with pytest.raises(InputError):
        tuning.split_contexts(tiny_dataset, 0, 1)


# ------------------------------------------------------------------------------ picking

def _score(key: str, fairness: float, agreement: float | None = None) -> tuning.WordingScore:
    w = tuning.Wording(key, f"text {key}", "Summary", tuning.BUILT_IN, key)
    ag = (None if agreement is None else
          tuning.Agreement("spearman_x100", agreement, np.nan, np.nan, agreement - 1, np.nan,
                           np.nan, 3))
    return tuning.WordingScore(w, fairness, 0.5 - fairness, 0.1, 10, 10, ag)


def _vs(diff: float, low: float, high: float) -> paired.PairedDifference:
    return paired.PairedDifference("fairness", "on the A-rate scale", "ordered pairs", "w", "T1",
                                   0.0, 0.0, diff, low, high, 0.95, 100, 8, 160)


def test_the_fairest_breaks_ties_by_saturation_and_a_draw_keeps_the_earlier():
    scores = [_score("w1", -0.2), _score("w2", -0.1), _score("w3", -0.1), _score("w4", np.nan)]
    assert tuning.fairest(scores).key == "w2"
    assert tuning.fairest([_score("w1", np.nan)]) is None and tuning.fairest([]) is None
    # a saturated judge: every wording at -0.5; the one whose tau* is nearest 0.5 is fairest
    sat = [dataclasses.replace(_score(k, -0.5), saturation=g)
           for k, g in (("w1", 0.3), ("w2", 0.1), ("w3", 0.2))]
    assert tuning.fairest(sat).key == "w2"


def test_a_wording_replaces_t1_only_outside_the_paired_interval():
    t1 = _score("w1", -0.3)
    close = dataclasses.replace(_score("w2", -0.1), vs_baseline=_vs(0.2, -0.05, 0.4))
    clear = dataclasses.replace(_score("w3", -0.2), vs_baseline=_vs(0.1, 0.02, 0.2))
    # the fairest (w2) does not beat T1 outside its interval; w3 does, so w3 is picked
    d = tuning.decide([t1, close, clear])
    assert d.picked.key == "w3" and d.fairest.key == "w2"
    assert "fairer than T1 by +0.100 [95% +0.020, +0.200]" in d.reason
    # nothing beats T1: T1 is kept, and the reason names the fairest other and its interval
    d = tuning.decide([t1, close])
    assert d.picked.key == "w1" and d.reason.startswith("T1 kept")
    assert "w2" in d.reason and "[95% -0.050, +0.400]" in d.reason
    assert tuning.pick([t1, close]).key == "w1"
    # without T1: the fairest, said so
    assert tuning.decide([close]).picked.key == "w2"
    assert "without a paired test" in tuning.decide([close]).reason
    assert tuning.pick([]) is None


def test_fairness_is_zepos_per_context_a_rate_with_an_interval(tiny_dataset):
    # doc1: all 6 decisions for A; doc2: 1 of 6 (the judge leans to A in doc1 only). ZEPO:
    # mean(1, 1/6) = 7/12, fairness -1/12; the pooled share 7/12 too (equal counts) ...
    ctx1, ctx2 = tiny_dataset.contexts
    rows = [("doc1", x, y, 0.9) for x in ctx1.candidate_ids for y in ctx1.candidate_ids
            if x != y]
    rows += [("doc2", x, y, 0.8 if k == 0 else 0.2) for k, (x, y) in enumerate(
        (x, y) for x in ctx2.candidate_ids for y in ctx2.candidate_ids if x != y)]
    w = tuning.starting_wordings("summary")[0]
    s = tuning.score_wording(w, tiny_dataset, table(rows), ["doc1", "doc2"], [], n_boot=200)
    assert s.a_rate == pytest.approx(7 / 12) and s.fairness == pytest.approx(-1 / 12)
    assert s.fairness_low <= s.fairness <= s.fairness_high <= 0
    assert (s.n_decisions, s.n_contexts) == (12, 2)
    # ... but with one decision left in doc2 they part: ZEPO mean(1, 0) = 0.5 (fair), pooled 6/7
    few = table(rows[:6] + [rows[7]])
    s = tuning.score_wording(w, tiny_dataset, few, ["doc1", "doc2"], [], n_boot=50)
    assert s.a_rate == pytest.approx(0.5) and s.fairness == 0.0
    assert s.p_a_raw == pytest.approx(6 / 7)
    assert tuning.fairness(few.p, few.context_ids) == 0.0
    assert tuning.fairness(few.p) == pytest.approx(-(6 / 7 - 0.5))  # one context: pooled


def test_a_fair_wording_beats_an_always_a_t1_on_the_same_pairs():
    # 12 contexts x 6 ordered pairs: T1 answers A everywhere; the other wording is fair
    rows_t1, rows_w = [], []
    for k in range(12):
        for j, (x, y) in enumerate([("a", "b"), ("b", "a"), ("a", "c"), ("c", "a"), ("b", "c"),
                                    ("c", "b")]):
            rows_t1.append((f"c{k}", x, y, 0.9))
            rows_w.append((f"c{k}", x, y, 0.9 if j % 2 == 0 else 0.1))
    t1, w = table(rows_t1), table(rows_w)
    ids = [f"c{k}" for k in range(12)]
    vs = tuning.baseline_difference(w, t1, name="w2", n_boot=300)
    assert vs.difference == pytest.approx(0.5) and vs.low > 0
    assert (vs.mcnemar.n_a_only, vs.mcnemar.n_b_only) == (0, 36)
    assert vs.mcnemar.p_value == pytest.approx(2 * 0.5 ** 36)
    assert (vs.n_pairs, vs.n_contexts) == (72, 12)
    words = tuning.starting_wordings("summary")

    class Contexts:  # the flip rate reads the dataset's candidates: none here
        contexts = ()
    scored = [tuning.score_wording(wd, Contexts, tb, ids, [], baseline=t1, n_boot=300)
              for wd, tb in ((words[0], t1), (words[1], w))]
    assert scored[0].vs_baseline is None and scored[1].beats_baseline
    assert tuning.decide(scored).picked.key == "w2"
    frame = tuning.tuning_table(scored, Aspect.from_name("coherence"))
    assert frame["picked"].tolist() == [False, True]
    assert frame["beats_t1"].tolist() == [False, True]
    assert frame.loc[1, "vs_t1_low"] > 0 and frame.loc[1, "vs_t1_mcnemar_p"] < 1e-9
    assert not tuning.sample_warnings(scored)[:0]


def test_sample_warnings():
    few = dataclasses.replace(_score("w1", -0.5), n_contexts=3, n_decisions=60)
    warn = tuning.sample_warnings([few])
    assert any("only 3 tuning context(s)" in w for w in warn)
    assert any("60 decision(s)" in w for w in warn)
    assert any("same position under every wording" in w for w in warn)
    enough = dataclasses.replace(_score("w1", -0.1), n_contexts=10, n_decisions=500)
    assert tuning.sample_warnings([enough]) == []


def test_a_whole_written_instruction_becomes_a_template():
    parent = tuning.starting_wordings("summary")[0]
    aspect = Aspect.from_name("coherence")
    request = tuning.paraphrase_request(parent, aspect)
    assert "[[SOURCE]]" in request and "Paraphrase the following instruction" in request
    reply = ("New instruction: Read the article {below}.\n[[SOURCE]]\n\nFirst, Summary A: "
             "[[TEXT A]]\nThen Summary B: [[TEXT B]]\n\nJudging only how Coherent each is, "
             "which is more coherent: Summary A or Summary B?")
    text = tuning.parse_paraphrase(reply, parent, aspect)
    assert text == ("Read the article {{below}}.\n{context}\n\nFirst, Summary A: {a}\nThen "
                    "Summary B: {b}\n\nJudging only how {aspect} each is, which is more "
                    "{aspect}: Summary A or Summary B?")
    validate_template_text(text)
    # a marker twice or missing, or a last paragraph that is no question: no wording (and no
    # one-line question either)
    for bad in (reply.replace("[[TEXT B]]", "[[TEXT A]]"), reply.replace("[[SOURCE]]", ""),
                reply.replace("Summary A or Summary B?", "Summary A or Summary B.")):
        assert tuning.parse_paraphrase(bad, parent, aspect) is None


def test_best_in_hindsight_is_the_best_held_out_agreement():
    scores = [_score("w1", -0.2, 10.0), _score("w2", -0.1, 30.0), _score("w3", 0.0)]
    assert tuning.best_in_hindsight(scores).key == "w2"
    assert tuning.best_in_hindsight(scores, balanced=True).key == "w2"
    assert tuning.best_in_hindsight([_score("w1", 0.0)]) is None


def test_greedy_search_paraphrases_the_fairest_within_the_budget():
    fairness = {"a": -0.3, "b": -0.1, "c": -0.2, "b1": -0.05, "b2": -0.4, "b11": 0.0,
                "b12": -0.3}
    evaluated, asked = [], []

    def evaluate(w):
        evaluated.append(w.key)
        return tuning.WordingScore(w, fairness[w.key], 0.5, 0.0, 1, 0)

    def write(best, r):
        asked.append((best.key, r))
        return [tuning.Wording(best.key + s, best.key + s, "Summary", tuning.WRITTEN, "", r)
                for s in ("1", "2")]
    start = [tuning.Wording(k, k, "Summary", tuning.LIBRARY, k) for k in ("a", "b", "c")]
    state = tuning.greedy_search(start, evaluate, write, rounds=2)
    assert evaluated == ["a", "b", "c", "b1", "b2", "b11", "b12"]
    assert asked == [("b", 1), ("b1", 2)]
    assert state.rounds_done == 2
    # the budget: at most four wordings, whatever the rounds
    evaluated.clear()
    state = tuning.greedy_search(start, evaluate, write, rounds=5, max_wordings=4)
    assert evaluated == ["a", "b", "c", "b1"] and "budget" in state.stopped
    # no writer: the starting wordings only; a cancel stops before the next wording
    evaluated.clear()
    assert "no writer" in tuning.greedy_search(start, evaluate, None, rounds=3).stopped
    evaluated.clear()
    calls = iter([False, True])
    state = tuning.greedy_search(start, evaluate, write, rounds=1,
                                 cancelled=lambda: next(calls, True))
    assert evaluated == ["a"] and state.stopped == "cancelled"


def test_greedy_search_hands_each_steps_wordings_to_judge_together_first():
    fairness = {"a": -0.3, "b": -0.1, "c": -0.2, "b1": -0.05, "b2": -0.4}
    events = []

    def evaluate(w):
        events.append(("score", w.key))
        return tuning.WordingScore(w, fairness[w.key], 0.5, 0.0, 1, 0)

    def write(best, r):
        return [tuning.Wording(best.key + s, best.key + s, "Summary", tuning.WRITTEN, "", r)
                for s in ("1", "2")]
    start = [tuning.Wording(k, k, "Summary", tuning.LIBRARY, k) for k in ("a", "b", "c")]
    start.append(tuning.Wording("a again", "a", "Summary", tuning.LIBRARY, "a"))  # a text judged once
    together = lambda ws: events.append(("together", [w.key for w in ws]))  # noqa: E731
    tuning.greedy_search(start, evaluate, write, rounds=1, judge_together=together)
    assert events == [("together", ["a", "b", "c"]), ("score", "a"), ("score", "b"),
                      ("score", "c"), ("together", ["b1", "b2"]), ("score", "b1"),
                      ("score", "b2")]
    # the budget: only what will be scored is judged together
    events.clear()
    state = tuning.greedy_search(start, evaluate, write, rounds=1, max_wordings=4,
                                 judge_together=together)
    assert events[-2:] == [("together", ["b1"]), ("score", "b1")] and "budget" in state.stopped
    # a cancel asked before a step judges nothing
    events.clear()
    state = tuning.greedy_search(start, evaluate, write, cancelled=lambda: True,
                                 judge_together=together)
    assert events == [] and state.stopped == "cancelled"


def test_a_text_is_judged_once():
    seen = []

    def evaluate(w):
        seen.append(w.key)
        return tuning.WordingScore(w, -0.1, 0.6, 0.0, 1, 0)
    start = [tuning.Wording("a", "same", "Summary", tuning.LIBRARY, "a"),
             tuning.Wording("b", "same", "Summary", tuning.LIBRARY, "b")]
    state = tuning.greedy_search(start, evaluate, lambda best, r: [best], rounds=1)
    assert seen == ["a"] and "no usable new wording" in state.stopped


def test_tuning_table_marks_the_pick():
    frame = tuning.tuning_table([_score("w1", -0.3, 5.0), _score("w2", -0.1)],
                                Aspect.from_name("coherence"))
    assert list(frame.columns) == list(tuning.TABLE_COLUMNS)
    # w2 is fairer but was not compared with T1 on the same pairs: T1 is kept
    assert frame["picked"].tolist() == [True, False]
    assert frame["agreement_raw"].iloc[0] == 5.0 and np.isnan(frame["agreement_raw"].iloc[1])


def test_tuning_options_are_checked_when_made():
    assert tuning.TuningOptions.from_dict(tuning.TuningOptions(contexts=3).to_dict()).contexts == 3
    # no writer is stored as before writers could be chosen (a stored tuning resumes); one is kept
    assert "writer" not in tuning.TuningOptions().to_dict()
    served = tuning.TuningOptions(writer=" openai:http://h/v1#m ")
    assert tuning.TuningOptions.from_dict(served.to_dict()).writer == "openai:http://h/v1#m"
    for bad, field in ((dict(contexts=0), "contexts"), (dict(holdout=-1), "holdout"),
                       (dict(pairs=1), "pairs"), (dict(rounds=11), "rounds"),
                       (dict(per_round=0), "per_round"), (dict(budget=0), "budget"),
                       (dict(task="poem"), "task"), (dict(writer="x" * 1001), "writer")):
        with pytest.raises(OptionError) as e:
            tuning.TuningOptions(**bad)
        assert e.value.field == field
    with pytest.raises(InputError, match="unknown tuning options"):
        tuning.TuningOptions.from_dict({"contexts": 2, "colour": "red"})

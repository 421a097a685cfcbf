"""The engine of wording tuning (``compassess_core.tuning``): ZEPO's fairness, the candidate
wordings, a writer's paraphrases parsed back into templates, the scores of a wording, the pick
and the greedy search within a budget. Pure functions on hand-made numbers; no judge."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from compassess_core import tuning
from compassess_core.errors import InputError
from compassess_core.options import OptionError
from compassess_core.prompts import Aspect, builtin_template, validate_template_text
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


def test_pick_is_the_fairest_and_a_draw_keeps_the_earlier():
    scores = [_score("w1", -0.2), _score("w2", -0.1), _score("w3", -0.1), _score("w4", np.nan)]
    assert tuning.pick(scores).key == "w2"
    assert tuning.pick([_score("w1", np.nan)]) is None and tuning.pick([]) is None


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
    assert "cannot write" in tuning.greedy_search(start, evaluate, None, rounds=3).stopped
    evaluated.clear()
    calls = iter([False, True])
    state = tuning.greedy_search(start, evaluate, write, rounds=1,
                                 cancelled=lambda: next(calls, True))
    assert evaluated == ["a"] and state.stopped == "cancelled"


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
    assert frame["picked"].tolist() == [False, True]
    assert frame["agreement_raw"].iloc[0] == 5.0 and np.isnan(frame["agreement_raw"].iloc[1])


def test_tuning_options_are_checked_when_made():
    assert tuning.TuningOptions.from_dict(tuning.TuningOptions(contexts=3).to_dict()).contexts == 3
    for bad, field in ((dict(contexts=0), "contexts"), (dict(holdout=-1), "holdout"),
                       (dict(pairs=1), "pairs"), (dict(rounds=11), "rounds"),
                       (dict(per_round=0), "per_round"), (dict(budget=0), "budget"),
                       (dict(task="poem"), "task")):
        with pytest.raises(OptionError) as e:
            tuning.TuningOptions(**bad)
        assert e.value.field == field
    with pytest.raises(InputError, match="unknown tuning options"):
        tuning.TuningOptions.from_dict({"contexts": 2, "colour": "red"})

"""Tests of compassess_core.data.labels: human pairwise-label import and each validation rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compassess_core.data.candidates import load_candidates
from compassess_core.errors import Problem, ValidationError
from compassess_core.data.labels import TIE, HumanLabel, labels_frame, load_human_labels
from compassess_core.types import Outcome

from tests.conftest import MTBENCH_CANDIDATES, MTBENCH_LABELS

CANDIDATES = ("context_id,context,candidate_id,text\n"
              "A0,a,S0,t\nA0,a,S1,t\nA0,a,S2,t\n"
              "A1,b,S0,t\nA1,b,S3,t\n")
HEADER = "context_id,candidate_a,candidate_b,winner,annotator\n"


@pytest.fixture()
def dataset():
    return load_candidates(CANDIDATES.encode(), file_label="cands.csv")


def problems_of(content: str, dataset, name: str = "labels.csv") -> list[Problem]:
    with pytest.raises(ValidationError) as info:
        load_human_labels(content.encode(), dataset, file_label=name)
    return info.value.problems


def only(problems: list[Problem]) -> Problem:
    assert len(problems) == 1, [str(p) for p in problems]
    return problems[0]


def test_good_labels_load(dataset, tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text(HEADER + "A0,S0,S1,S1,ann1\nA0,S2,S0,TIE,\nA1,S3,S0,S0,ann2\n")
    labels = load_human_labels(path, dataset)
    assert labels == [
        HumanLabel("A0", "S0", "S1", "S1", "ann1", 2),
        HumanLabel("A0", "S2", "S0", TIE, "imported", 3),
        HumanLabel("A1", "S3", "S0", "S0", "ann2", 4),
    ]
    assert [x.outcome for x in labels] == [Outcome.B, Outcome.TIE, Outcome.B]
    assert list(labels_frame(labels)["winner"]) == ["S1", "tie", "S0"]


def test_annotator_column_optional_and_default(dataset):
    labels = load_human_labels(b"context_id,candidate_a,candidate_b,winner\nA0,S0,S1,S0\n",
                               dataset, file_label="l.csv", default_annotator="me")
    assert labels == [HumanLabel("A0", "S0", "S1", "S0", "me", 2)]


def test_jsonl_labels(dataset):
    lines = "".join(json.dumps(r) + "\n" for r in [
        {"context_id": "A0", "candidate_a": "S0", "candidate_b": "S1", "winner": "S0"},
        {"context_id": "A0", "candidate_a": "S2", "candidate_b": "S1", "winner": "S9"}])
    p = only(problems_of(lines, dataset, "l.jsonl"))
    assert (p.row, p.column) == (2, "winner")


def test_missing_columns(dataset):
    p = only(problems_of("context_id,candidate_a,candidate_b\nA0,S0,S1\n", dataset))
    assert (p.row, p.column) == (None, "winner")
    assert "'context_id', 'candidate_a', 'candidate_b'" in p.message


def test_unknown_context(dataset):
    p = only(problems_of(HEADER + "A0,S0,S1,S0,x\nA9,S0,S1,S0,x\n", dataset))
    assert (p.row, p.column) == (3, "context_id")
    assert "unknown context 'A9'" in p.message


def test_unknown_candidate_in_that_context(dataset):
    # S2 exists in A0 but not in A1.
    p = only(problems_of(HEADER + "A1,S0,S2,S0,x\n", dataset))
    assert (p.row, p.column) == (2, "candidate_b")
    assert "unknown candidate 'S2' in context 'A1'" in p.message


def test_same_candidate_twice(dataset):
    p = only(problems_of(HEADER + "A0,S1,S1,S1,x\n", dataset))
    assert (p.row, p.column) == (2, "candidate_b")


def test_winner_not_one_of_the_pair(dataset):
    p = only(problems_of(HEADER + "A0,S0,S1,S2,x\n", dataset))
    assert (p.row, p.column) == (2, "winner")
    assert "winner 'S2' is neither" in p.message


def test_empty_value(dataset):
    p = only(problems_of(HEADER + "A0,S0,,S0,x\n", dataset))
    assert (p.row, p.column) == (2, "candidate_b")


def test_duplicate_unordered_pair_for_same_annotator(dataset):
    content = HEADER + "A0,S0,S1,S0,ann\nA0,S0,S1,S0,other\nA0,S1,S0,S1,ann\n"
    p = only(problems_of(content, dataset))
    assert (p.row, p.column) == (4, "annotator")
    assert "rows 2 and 4" in p.message


def test_every_problem_reported(dataset):
    content = HEADER + "A9,S0,S1,S0,x\nA0,S0,S0,S0,x\nA0,S0,S1,nobody,x\n"
    probs = problems_of(content, dataset)
    assert [(p.row, p.column) for p in probs] == [(2, "context_id"), (3, "candidate_b"),
                                                  (4, "winner")]


def test_mtbench_labels_import():
    cands, labels = MTBENCH_CANDIDATES, MTBENCH_LABELS   # the bundled sample
    result = load_human_labels(labels, load_candidates(cands))
    assert len(result) == 12
    assert result[0] == HumanLabel("Q6", "out1", "out2", "out2", "mtbench-majority", 2)
    assert {x.winner for x in result} == {"out1", "out2"}

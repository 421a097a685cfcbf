"""What an annotator is told of their agreement with the others gives no co-annotator's vote
away (``campaigns.agreement_of``), through the Python API on a real SQLite store.

Answers are given one at a time, in a shuffled order, the way a team works; after every single
answer the figure the annotator would see is read again:

* with overlap 2 (each pair has exactly one other voter) it never changes: it stays hidden, and
  so does the number of pairs shared with others (which alone would say when the other labelled
  one of your pairs);
* with overlap 5 it changes only when a batch of ``AGREEMENT_BATCH`` more pairs, each labelled by
  at least ``MIN_OTHERS_PER_PAIR`` others, is complete; its value is checked against a count made
  by hand over those pairs.
"""

from __future__ import annotations

import math
import random

import pytest

from compassess_core import api
from compassess_core.people import campaigns
from compassess_core.data.candidates import content_hash
from compassess_core.types import Candidate, Context, Dataset

ADMIN = "boss@x.org"
PEOPLE = [f"p{k}@x.org" for k in range(5)]


@pytest.fixture
def wide(store) -> api.Store:
    """A dataset of 4 contexts x 5 candidates (40 pairs) in a real store."""
    contexts = tuple(
        Context(f"doc{i}", f"Context {i}.", tuple(
            Candidate(candidate_id=f"c{j}", text=f"Text {i}-{j}.", system=f"s{j}",
                      scores={}, row=2 + 5 * i + j) for j in range(5)))
        for i in range(4))
    dataset = Dataset(name="wide", contexts=contexts, score_columns=(), source="wide.csv",
                      content_hash=content_hash(contexts))
    s = api.Store(store)
    s.add_dataset(dataset)
    return s


def seen(figure: dict) -> tuple:
    """What the Agreement page shows of ``figure`` (NaN as None, so equal figures compare equal)."""
    def num(x):
        return None if isinstance(x, float) and math.isnan(x) else x
    return (figure["n_items"], num(figure["agreement"]), num(figure["kappa"]),
            figure["withheld"])


def answer_in_turns(campaign, people, rng, choose):
    """Every person answers their whole queue, one answer at a time, the order of who answers
    next shuffled; yields after each answer (who answered, the pair)."""
    waiting = list(people)
    while waiting:
        who = rng.choice(waiting)
        queue = campaign.queue(who)
        if not queue:
            waiting.remove(who)
            continue
        pair = queue[0]
        assert campaign.label(who, pair, choose(who, pair)) is not None
        yield who, pair


def test_with_overlap_two_no_single_answer_changes_what_an_annotator_sees(wide):
    rng = random.Random(7)
    people = PEOPLE[:3]
    c = wide.create_campaign("pairs", "wide", "coherence", people, overlap=2, created_by=ADMIN)

    def choose(_who, pair):
        return rng.choice([pair[1], pair[2], "tie"])

    shown = {who: [] for who in people}
    for _ in answer_in_turns(c, people, rng, choose):
        for who in people:
            shown[who].append(seen(c.agreement_of(who)))
    assert sum(1 for _ in c.labels().itertuples()) == 2 * len(c.pairs())
    for who in people:
        after_first = shown[who][next(k for k, s in enumerate(shown[who]) if s[3]):]
        assert set(after_first) == {(0, None, None, True)}, who


def test_with_overlap_five_the_figure_moves_only_by_whole_batches(wide):
    rng = random.Random(11)
    batch, least = campaigns.AGREEMENT_BATCH, campaigns.MIN_OTHERS_PER_PAIR
    c = wide.create_campaign("five", "wide", "coherence", PEOPLE, overlap=5, created_by=ADMIN)
    me = PEOPLE[0]
    votes: dict[tuple, dict[str, str]] = {}

    def choose(who, pair):
        choice = pair[1] if who == me or rng.random() < 0.6 else rng.choice([pair[2], "tie"])
        votes.setdefault(tuple(pair), {})[who] = choice
        return choice

    counted: list[tuple] = []  # my pairs with enough others, in the order they qualified
    before = seen(c.agreement_of(me))
    changes = 0
    for who, pair in answer_in_turns(c, PEOPLE, rng, choose):
        on_pair = votes[tuple(pair)]
        if me in on_pair and len(on_pair) - 1 >= least and tuple(pair) not in counted:
            counted.append(tuple(pair))
        now = seen(c.agreement_of(me))
        if now[:3] == before[:3] and now[3] != before[3]:
            # "hidden" from my own first answer on: my answer, not theirs.
            assert who == me and now[:3] == (0, None, None)
        elif now != before:
            changes += 1
            # Only the answer that completes a batch moves the figure.
            assert len(counted) % batch == 0 and now[0] == len(counted), (now, len(counted))
            # The figure by hand: over the covered pairs, my vote against each other vote
            # stored so far on them.
            same = total = 0
            for p in counted:
                for other, choice in votes[p].items():
                    if other != me:
                        same, total = same + (choice == votes[p][me]), total + 1
            assert now[1] == pytest.approx(round(100 * same / total) / 100)
        else:
            assert now[0] == len(counted) // batch * batch
        before = now
    assert changes == len(c.pairs()) // batch

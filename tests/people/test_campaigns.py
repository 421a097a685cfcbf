"""Annotation campaigns through the store, the engine, the Python API and the CLI: pairs fixed at
creation, each annotator's queue with overlap, progress, agreement, disagreements settled by an
admin's adjudication (stored as such, never a vote), export; a removed annotator's answer and an
answer in a closed campaign are refused. Runs on PostgreSQL too (``.ci/run``)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compassess_core import api
from compassess_core.people import campaigns
from compassess_core.cli import main
from compassess_core.errors import InputError

ALICE, BOB, CAROL, ADMIN = "alice@x.org", "bob@x.org", "carol@x.org", "boss@x.org"


@pytest.fixture
def api_store(store, tiny_dataset):
    s = api.Store(store)
    s.add_dataset(tiny_dataset)
    return s


def _answer_all(c, who, choose):
    """``who`` answers every pair of their queue; ``choose(pair)`` gives the choice."""
    n = 0
    while True:
        q = c.queue(who)
        if not q:
            return n
        assert c.label(who, q[0], choose(q[0]), shown_order="ab", seconds=1.0) is not None
        n += 1


def test_pairs_are_fixed_and_deterministic(tiny_dataset):
    every = campaigns.choose_pairs(tiny_dataset, "all")
    assert len(every) == 6 and all(x < y for _, x, y in every)
    one = campaigns.choose_pairs(tiny_dataset, "sample", 3, seed=7)
    assert one == campaigns.choose_pairs(tiny_dataset, "sample", 3, seed=7) and len(one) == 3
    assert set(one) <= set(every)
    informative = campaigns.choose_pairs(tiny_dataset, "informative", 2, seed=1)
    assert len(informative) == 2 and set(informative) <= set(every)
    with pytest.raises(InputError):
        campaigns.choose_pairs(tiny_dataset, "sample")
    with pytest.raises(InputError):
        campaigns.choose_pairs(tiny_dataset, "nearest")


def test_queue_least_labelled_first_and_overlap_caps(tiny_dataset):
    pairs = campaigns.choose_pairs(tiny_dataset, "all")
    ctx, x, y = pairs[0]
    labels = pd.DataFrame([dict(context_id=ctx, candidate_left=x, candidate_right=y, winner="A",
                                annotator=BOB, source="app")])
    q = campaigns.queue(pairs, labels, ALICE, overlap=2, seed=3)
    assert len(q) == 6 and q[-1] == pairs[0]  # labelled once: after the unlabelled ones
    assert q == campaigns.queue(pairs, labels, ALICE, overlap=2, seed=3)
    assert pairs[0] not in campaigns.queue(pairs, labels, BOB, overlap=2)  # Bob did it
    assert pairs[0] not in campaigns.queue(pairs, labels, ALICE, overlap=1)  # enough votes
    later = campaigns.queue(pairs, labels, ALICE, overlap=2, later=[pairs[1]])
    assert later[-1] == pairs[1] and len(later) == 6  # a skip stays in the queue, last


def test_campaign_end_to_end_with_overlap_two(api_store):
    c = api_store.create_campaign("round1", "tiny", "coherence", [ALICE, BOB], overlap=2,
                                  guidelines="Prefer the faithful text.", created_by=ADMIN)
    assert c.info.n_pairs == 6 and c.status == "open" and c.annotators == (ALICE, BOB)
    assert [x.name for x in api_store.campaigns(for_identity=ALICE)] == ["round1"]
    assert api_store.campaigns(for_identity=CAROL) == []
    # Alice always prefers the first-listed candidate; Bob agrees except on context doc2.
    _answer_all(c, ALICE, lambda p: p[1])
    _answer_all(c, BOB, lambda p: p[2] if p[0] == "doc2" else p[1])
    assert c.queue(ALICE) == [] and c.queue(BOB) == []
    progress = c.progress().set_index("annotator")
    assert progress.loc[ALICE, "labelled"] == 6 and progress.loc[BOB, "labelled"] == 6
    assert c.completed() == 6
    agree = c.agreement()
    assert agree.n_items == 6 and agree.n_annotators == 2
    assert agree.percent_agreement == pytest.approx(0.5)
    disputed = c.disagreements()
    assert len(disputed) == 3 and set(disputed["context_id"]) == {"doc2"}
    assert disputed["majority"].isna().all() and disputed["adjudicated"].isna().all()
    # An admin settles one: stored as an adjudication, not as a third vote.
    pair = tuple(disputed.loc[0, ["context_id", "x", "y"]])
    assert c.adjudicate(pair, pair[2], ADMIN, comment="faithful") is not None
    labels = c.labels()
    ruling = labels.loc[labels["source"] == "adjudication"]
    assert len(ruling) == 1 and ruling["annotator"].iloc[0] == ADMIN
    assert ruling["comment"].iloc[0] == "faithful"
    assert c.agreement().percent_agreement == pytest.approx(0.5)  # unchanged
    assert ADMIN not in set(c.progress()["annotator"])
    after = c.disagreements().set_index(["context_id", "x", "y"])
    assert after.loc[pair, "adjudicated"] == pair[2] and after.loc[pair, "adjudicated_by"] == ADMIN
    # Export: every answer and the adjudication, with the campaign recorded.
    out = c.export_bytes("json")
    written = json.loads(out.data)
    assert len(out.frame) == 13 and set(out.frame["source"]) == {"app", "adjudication"}
    assert out.metadata["campaign"] == "round1" and "round1" in json.dumps(written)
    csv = c.export_bytes("csv")
    assert b"adjudication" in csv.data and csv.sidecar is not None


def test_answers_are_refused_for_removed_annotators_closed_campaigns_and_other_pairs(api_store):
    c = api_store.create_campaign("r", "tiny", "coherence", [ALICE, BOB], pairs="sample",
                                  n_pairs=2, seed=5, created_by=ADMIN)
    mine = c.queue(ALICE)[0]
    others = [p for p in campaigns.choose_pairs(c.dataset(), "all") if p not in set(
        map(tuple, c.pairs().to_numpy()))]
    with pytest.raises(InputError, match="not one of"):
        c.label(ALICE, others[0], "tie")
    with pytest.raises(InputError, match="not assigned"):
        c.label(CAROL, mine, "tie")
    assert c.label(ALICE, mine, "both_bad", comment="both miss the point") is not None
    assert c.label(ALICE, mine, "tie") is None  # a second answer (another tab) is not stored
    api_store.unassign("r", [BOB])
    with pytest.raises(InputError, match="not assigned"):
        c.label(BOB, mine, mine[1])
    assert c.queue(BOB) == []
    api_store.assign("r", [CAROL], by=ADMIN)
    assert CAROL in api_store.campaign("r").annotators
    api_store.close("r")
    with pytest.raises(InputError, match="closed"):
        c.label(CAROL, mine, mine[1])
    labels = c.labels()
    assert labels["winner"].tolist() == ["both_bad"]
    assert labels["comment"].tolist() == ["both miss the point"]


def test_an_answer_elsewhere_does_not_count_and_does_not_block(api_store):
    """Labels given on the free annotate page are not the campaign's; the person can still
    answer the pair in the campaign (the next revision), and both campaigns stay apart."""
    c = api_store.create_campaign("a", "tiny", "coherence", [ALICE], overlap=1)
    ctx, x, y = c.pairs().iloc[0]
    api_store.add_judgements("tiny", [dict(context_id=ctx, candidate_left=x, candidate_right=y,
                                           winner="A", annotator=ALICE, aspect="coherence")])
    assert len(c.queue(ALICE)) == 6
    assert c.label(ALICE, (ctx, x, y), y) is not None
    other = api_store.create_campaign("b", "tiny", "coherence", [ALICE], overlap=1)
    assert len(other.queue(ALICE)) == 6 and len(other.labels()) == 0
    assert len(c.labels()) == 1
    assert len(api_store.human_labels("tiny", "coherence")) == 2


def test_create_refuses_bad_input(api_store):
    api_store.create_campaign("dup", "tiny", "coherence", [ALICE, BOB])
    with pytest.raises(InputError, match="already exists"):
        api_store.create_campaign("dup", "tiny", "coherence", [ALICE, BOB])
    with pytest.raises(InputError, match="overlap"):
        api_store.create_campaign("x", "tiny", "coherence", [ALICE], overlap=2)
    with pytest.raises(InputError):
        api_store.create_campaign("y", "nope", "coherence", [ALICE])
    with pytest.raises(InputError):
        api_store.campaign("nope")


def test_both_bad_counts_as_a_tie_in_agreement():
    from compassess_core.stats.agreement import human_human_agreement, normalise_human_labels
    df = pd.DataFrame([dict(context_id="d", candidate_left="a", candidate_right="b",
                            winner=w, annotator=who) for w, who in (("both_bad", "p"),
                                                                    ("tie", "q"))])
    assert normalise_human_labels(df)["label"].tolist() == [2, 2]
    assert human_human_agreement(df).percent_agreement == 1.0


def test_both_bad_in_a_label_file_is_stored_as_such(api_store):
    body = "context_id,candidate_a,candidate_b,winner,annotator\ndoc1,c1,c2,Both_Bad,p\n"
    done = api_store.import_labels(body.encode(), dataset="tiny", aspect="coherence")
    assert done.stored == 1
    assert api_store.human_labels("tiny", "coherence")["winner"].tolist() == ["both_bad"]


def test_cli_create_assign_status_export(db_url, tiny_dataset, tmp_path, capsys):
    s = api.Store(__import__("db.store", fromlist=["Store"]).Store(db_url))
    s.add_dataset(tiny_dataset)
    guide = tmp_path / "guide.txt"
    guide.write_text("Read both.", encoding="utf-8")
    assert main(["campaign", "create", "--name", "c1", "--dataset", "tiny", "--aspect",
                 "coherence", "--annotator", ALICE, "--annotator", BOB, "--pairs", "sample",
                 "--n-pairs", "4", "--guidelines", str(guide), "--db", db_url]) == 0
    assert "4 pairs" in capsys.readouterr().out
    assert main(["campaign", "assign", "--name", "c1", "--annotator", CAROL, "--db", db_url]) == 0
    c = s.campaign("c1")
    assert c.guidelines == "Read both." and CAROL in c.annotators
    for who in (ALICE, BOB):
        _answer_all(c, who, lambda p: p[1])
    capsys.readouterr()
    assert main(["campaign", "status", "--name", "c1", "--json", "--db", db_url]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["completed_pairs"] == 4 and status["agreement"]["percent_agreement"] == 1.0
    assert {r["annotator"]: r["labelled"] for r in status["annotators"]}[ALICE] == 4
    assert main(["campaign", "status", "--name", "c1", "--db", db_url]) == 0
    assert "Krippendorff" in capsys.readouterr().out
    out = tmp_path / "labels.csv"
    assert main(["campaign", "export", "--name", "c1", "--format", "csv", "-o", str(out),
                 "--db", db_url]) == 0
    assert len(pd.read_csv(out)) == 8
    assert main(["campaign", "create", "--name", "c1", "--dataset", "tiny", "--aspect", "x",
                 "--annotator", ALICE, "--overlap", "1", "--db", db_url]) == 2


def test_informative_pairs_weigh_a_named_run(db_url):
    from tests.app.test_app_pages import seed_run
    backend, _, _ = seed_run(db_url)
    s = api.Store(backend)
    c = s.create_campaign("inf", "sample_summeval", "coherence", [ALICE], overlap=1,
                          pairs="informative", n_pairs=5, run="hand-run", seed=2)
    again = campaigns.choose_pairs(s.dataset("sample_summeval"), "informative", 5, seed=2,
                                   human_df=s.human_labels("sample_summeval", "coherence"),
                                   llm=s.get_run("hand-run").results)
    assert [tuple(p) for p in c.pairs().to_numpy()] == again and c.info.selection == "informative"
    assert main(["campaign", "create", "--name", "inf2", "--dataset", "sample_summeval",
                 "--aspect", "coherence", "--annotator", ALICE, "--overlap", "1", "--pairs",
                 "informative", "--n-pairs", "3", "--run", "hand-run", "--db", db_url]) == 0
    assert s.campaign("inf2").info.n_pairs == 3


def test_migration_0009_downgrades_keeping_the_labels_and_upgrades_again(db_url, tiny_dataset):
    from alembic import command
    from sqlalchemy import create_engine, inspect
    from sqlalchemy.pool import NullPool

    from db.connection import alembic_config
    from db.store import Store

    s = api.Store(Store(db_url))
    s.add_dataset(tiny_dataset)
    c = s.create_campaign("m", "tiny", "coherence", [ALICE], overlap=1)
    c.label(ALICE, c.queue(ALICE)[0], "tie", comment="hm")
    s.backend.close()

    def migrate(to: str) -> None:
        engine = create_engine(db_url, poolclass=NullPool)
        with engine.begin() as conn:
            cfg = alembic_config()
            cfg.attributes["connection"] = conn
            (command.downgrade if to == "0008" else command.upgrade)(cfg, to)
        engine.dispose()

    migrate("0008")
    engine = create_engine(db_url, poolclass=NullPool)
    tables = set(inspect(engine).get_table_names())
    columns = {col["name"] for col in inspect(engine).get_columns("human_judgements")}
    engine.dispose()
    assert not {"campaigns", "campaign_annotators", "campaign_pairs"} & tables
    assert "campaign_id" not in columns and "comment" not in columns
    migrate("head")
    again = api.Store(Store(db_url))
    assert again.human_labels("tiny", "coherence")["winner"].tolist() == ["tie"]
    assert again.campaigns() == []


def test_agreement_with_the_others_is_withheld_below_three_co_annotators(api_store):
    """With one or two others on a pair, an annotator's agreement figure would give their votes
    away (it moves after each shared answer): a pair counts once three others labelled it, and
    the figure covers whole batches of such pairs (tests/people/test_agreement_privacy.py follows it
    answer by answer)."""
    from compassess_core.people.campaigns import AGREEMENT_BATCH, MIN_OTHERS_PER_PAIR
    people = [ALICE, BOB, CAROL, "dave@example.org"]
    c = api_store.create_campaign("round1", "tiny", "coherence", people, overlap=4,
                                  created_by=ADMIN)
    assert c.agreement_of(ALICE)["n_items"] == 0 and not c.agreement_of(ALICE)["withheld"]
    _answer_all(c, ALICE, lambda p: p[1])
    for n, other in enumerate(people[1:], start=1):
        _answer_all(c, other, lambda p: p[1])
        mine = c.agreement_of(ALICE)
        if n < MIN_OTHERS_PER_PAIR:
            assert mine["withheld"] and mine["n_items"] == 0
            assert mine["agreement"] != mine["agreement"] and mine["kappa"] != mine["kappa"]
        else:  # 6 pairs: one batch of 5 counts
            assert not mine["withheld"] and mine["agreement"] == 1.0
            assert mine["n_items"] == AGREEMENT_BATCH and mine["n_others"] == 3


# ---------------------------------------------------------------------------------------------
# queue, progress, completed_pairs and agreement_of against a reference written another way:
# plain loops over the label rows in stored order (agreement_of's replayed answer by answer),
# no pandas; kappa from scikit-learn.

_IDS = ("b", "a", "c10", "c9")  # their sorted order is not their listed one
_ALL_PAIRS = [(ctx, x, y) for ctx in ("d1", "d0") for i, x in enumerate(sorted(_IDS))
              for y in sorted(_IDS)[i + 1:]]
_PEOPLE = ("p0", "p1", "p2", "p3", "p4")


def _labels_frame(rows: list[tuple], shape: str) -> pd.DataFrame:
    """``rows``: (pair, annotator, winner as stored: A/B/tie/both_bad/skip, shown y first,
    adjudication), as the store's frame or as a canonical table (left_id, right_id, winner_id)."""
    out = []
    for (ctx, x, y), who, winner, flipped, adjudication in rows:
        left, right = (y, x) if flipped else (x, y)
        source = campaigns.ADJUDICATION if adjudication else "app"
        if shape == "store":
            out.append(dict(context_id=ctx, candidate_left=left, candidate_right=right,
                            winner=winner, annotator=who, source=source, comment=""))
        else:
            won = {"A": left, "B": right}.get(winner, winner)
            out.append(dict(context_id=ctx, left_id=left, right_id=right, winner_id=won,
                            annotator=who, source=source))
    columns = (["context_id", "candidate_left", "candidate_right", "winner", "annotator",
                "source", "comment"] if shape == "store"
               else ["context_id", "left_id", "right_id", "winner_id", "annotator", "source"])
    return pd.DataFrame(out, columns=columns)


def _ref_votes(rows: list[tuple], upto: int | None = None) -> dict:
    """{(annotator, pair): choice}: the newest vote of each person on each pair among the first
    ``upto + 1`` rows; skips and adjudications are none."""
    newest = {}
    for k, ((ctx, x, y), who, winner, flipped, adjudication) in enumerate(rows):
        if upto is not None and k > upto:
            break
        if winner == "skip" or adjudication:
            continue
        left, right = (y, x) if flipped else (x, y)
        newest[(who, (ctx, x, y))] = {"A": left, "B": right}.get(winner, winner)
    return newest


def _ref_queue(pairs, rows, who, overlap, seed, later) -> list:
    newest = _ref_votes(rows)
    n = [sum(1 for (_, p) in newest if p == pair) for pair in pairs]
    shuffle = np.random.default_rng(seed).permutation(len(pairs))
    open_ = [k for k, pair in enumerate(pairs) if (who, pair) not in newest and n[k] < overlap]
    return [pairs[k] for k in sorted(open_, key=lambda k: (pairs[k] in later, n[k], shuffle[k]))]


def _ref_agreement_of(rows, me) -> dict:
    """Replays the answers one by one: a pair counts at the answer after which I and at least
    MIN_OTHERS_PER_PAIR others have voted on it; the figures cover whole batches of counted pairs
    with the votes as they stood when the last of them counted."""
    from sklearn.metrics import cohen_kappa_score
    counted, at = [], []
    for k in range(len(rows)):
        newest = _ref_votes(rows, upto=k)
        for (ctx, x, y) in _ALL_PAIRS:
            voters = {who for (who, p) in newest if p == (ctx, x, y)}
            if (me in voters and len(voters - {me}) >= campaigns.MIN_OTHERS_PER_PAIR
                    and (ctx, x, y) not in counted):
                counted.append((ctx, x, y))
                at.append(k)
    covered = len(counted) // campaigns.AGREEMENT_BATCH * campaigns.AGREEMENT_BATCH
    if covered == 0:
        return dict(n_items=0, withheld=any(who == me for (who, _) in _ref_votes(rows)))
    newest = _ref_votes(rows, upto=at[covered - 1])
    mine, theirs, others = [], [], set()
    for pair in counted[:covered]:
        def as_code(choice):
            return "x" if choice == pair[1] else "y" if choice == pair[2] else "tie"
        for (who, p), choice in newest.items():
            if p == pair and who != me:
                mine.append(as_code(newest[(me, pair)]))
                theirs.append(as_code(choice))
                others.add(who)
    share = sum(a == b for a, b in zip(mine, theirs)) / len(mine)
    # Every pair counted in both orientations (x better <-> y better swapped).
    swap = {"x": "y", "y": "x", "tie": "tie"}
    a2, b2 = mine + [swap[v] for v in mine], theirs + [swap[v] for v in theirs]
    kappa = (float("nan") if set(a2) == set(b2) == {"tie"}
             else float(cohen_kappa_score(a2, b2, labels=["x", "y", "tie"])))
    return dict(n_items=covered, n_others=len(others), share=share, kappa=kappa,
                withheld=False)


def _check_against_reference(rows, pairs, overlap, seed, later, shape) -> dict:
    labels = _labels_frame(rows, shape)
    for who in _PEOPLE:
        assert campaigns.queue(pairs, labels, who, overlap, seed=seed, later=later) == \
            _ref_queue(pairs, rows, who, overlap, seed, set(later)), who
    newest = _ref_votes(rows)
    n = {pair: sum(1 for (_, p) in newest if p == pair) for pair in pairs}
    assert campaigns.completed_pairs(pairs, labels, overlap) == \
        sum(1 for pair in pairs if n[pair] >= overlap)
    assigned = list(_PEOPLE[:3])
    people = assigned + sorted({who for (who, _) in newest} - set(assigned))
    target = min(len(pairs), math.ceil(len(pairs) * overlap / len(assigned)))
    expected = []
    for who in people:
        labelled = sum(1 for (w, _) in newest if w == who)
        mine = who in assigned
        expected.append(dict(
            annotator=who, assigned=mine, labelled=labelled, target=target if mine else labelled,
            remaining=len(_ref_queue(pairs, rows, who, overlap, 0, set())) if mine else 0,
            done=min(labelled / target, 1.0) if mine else 1.0))
    assert campaigns.progress(pairs, labels, assigned, overlap).to_dict("records") == expected
    figures = {}
    for who in _PEOPLE:
        got, want = campaigns.agreement_of(labels, who), _ref_agreement_of(rows, who)
        assert (got["n_items"], got["withheld"]) == (want["n_items"], want["withheld"]), who
        if want["n_items"]:
            assert got["n_others"] == want["n_others"]
            assert abs(got["agreement"] - want["share"]) <= 0.005 + 1e-9
            assert (math.isnan(got["kappa"]) if math.isnan(want["kappa"])
                    else abs(got["kappa"] - want["kappa"]) <= 0.005 + 1e-9), (got, want)
        else:
            assert math.isnan(got["agreement"]) and math.isnan(got["kappa"])
        figures[who] = got
    return figures


_row = st.tuples(st.integers(0, len(_ALL_PAIRS) - 1), st.sampled_from(_PEOPLE),
                 st.sampled_from(["A", "B", "tie", "both_bad", "skip"]), st.booleans(),
                 st.sampled_from([False] * 9 + [True]))  # an adjudication, now and then


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy=st.lists(st.sets(st.sampled_from(_PEOPLE), min_size=2), min_size=5,
                     max_size=len(_ALL_PAIRS)),
       extra=st.lists(_row, max_size=40), rnd=st.randoms(use_true_random=False),
       pairs=st.lists(st.sampled_from(_ALL_PAIRS), min_size=1, unique=True),
       overlap=st.integers(1, 4), seed=st.integers(0, 2**16),
       n_later=st.integers(0, 3), shape=st.sampled_from(["store", "canonical"]))
def test_queue_progress_and_agreement_match_a_plain_reference(busy, extra, rnd, pairs, overlap,
                                                              seed, n_later, shape):
    # ``busy[k]`` all vote on the k-th pair (so that agreement_of's batches are reached too);
    # ``extra`` adds re-answers, skips and adjudications anywhere; all in a shuffled order.
    rows = [(_ALL_PAIRS[k], who, rnd.choice(["A", "B", "tie", "both_bad"]), rnd.random() < 0.5,
             False) for k, voters in enumerate(busy) for who in sorted(voters)]
    rows += [(_ALL_PAIRS[k], *rest) for k, *rest in extra]
    rnd.shuffle(rows)
    _check_against_reference(rows, pairs, overlap, seed, pairs[:n_later], shape)


def test_the_reference_check_covers_whole_batches_of_agreement():
    """Busy random campaigns (many answers on few pairs), so agreement_of's batches are reached:
    the property above rarely gets that far."""
    rng = np.random.default_rng(5)
    reached = 0
    for _ in range(6):
        pairs = _ALL_PAIRS[:8]
        rows = [(pairs[rng.integers(len(pairs))], str(rng.choice(_PEOPLE)),
                 str(rng.choice(["A", "B", "A", "tie", "both_bad", "skip"])),
                 bool(rng.random() < 0.5), bool(rng.random() < 0.05)) for _ in range(90)]
        figures = _check_against_reference(rows, pairs, 3, int(rng.integers(100)), pairs[:2],
                                           "store")
        reached += sum(f["n_items"] > 0 for f in figures.values())
    assert reached > 0


def test_a_bad_label_table_is_refused_naming_its_first_bad_row():
    pairs = [("d", "a", "b")]
    good = dict(context_id="d", candidate_left="a", candidate_right="b", winner="A",
                annotator="p", source="app", comment="")
    for bad, says in ((dict(winner="maybe"), "row 1: winner 'maybe'"),
                      (dict(candidate_right="a"), "row 1 compares candidate 'a' with itself")):
        labels = pd.DataFrame([good, {**good, **bad}])
        for call in (lambda: campaigns.queue(pairs, labels, "q", 2),
                     lambda: campaigns.progress(pairs, labels, ["q"], 2),
                     lambda: campaigns.completed_pairs(pairs, labels, 2),
                     lambda: campaigns.agreement_of(labels, "q")):
            with pytest.raises(InputError, match=says):
                call()

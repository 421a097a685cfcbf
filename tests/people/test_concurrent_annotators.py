"""Several annotators writing to one database at once, and the undo behind the annotate page.

The concurrency test starts real OS processes (each its own ``Store``, as each browser session of
a Streamlit server or each server would), releases them together, and has each add judgements one
transaction at a time, read the table in between and undo some of its own answers. Afterwards the
stored rows are counted exactly: nothing lost, nothing duplicated, no undo touching another
person's answer.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from db.store import Store
from tests.start_line import WAIT_FOR_GO, release_together

ROOT = Path(__file__).resolve().parents[2]

N_PROCESSES = 4
N_ANSWERS = 30
UNDO_EVERY = 7  # each process undoes its 7th, 14th, ... answer right after giving it

WORKER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from db.store import Store

    url, dataset_id, annotator, n, undo_every, go = sys.argv[1:7]
    store = Store(url)
    pairs = [("doc1", "c1", "c2"), ("doc1", "c2", "c3"), ("doc1", "c1", "c3"),
             ("doc2", "c1", "c2"), ("doc2", "c2", "c3"), ("doc2", "c1", "c3")]
    # start together, to make the writers collide
""") + WAIT_FOR_GO + textwrap.dedent("""
    for k in range(1, int(n) + 1):
        ctx, left, right = pairs[k % len(pairs)]
        # Each pair comes round five times: every answer after the first is a deliberate
        # re-judgement (the annotate page's "show pairs I already judged again").
        store.add_human_judgements(int(dataset_id), [dict(
            context_id=ctx, candidate_left=left, candidate_right=right, winner="A",
            annotator=annotator, aspect="coherence", seconds=float(k), shown_order="ab")],
            again=True)
        frame = store.human_judgements_frame(int(dataset_id), "coherence")
        if k % int(undo_every) == 0:
            mine = frame.loc[(frame["annotator"] == annotator) & (frame["seconds"] == float(k))]
            assert len(mine) == 1, (annotator, k, len(mine))
            assert store.delete_human_judgement(int(mine["id"].iloc[0]), annotator)
    store.close()
""")


def test_concurrent_annotators_lose_and_duplicate_nothing(store, tiny_dataset, db_url, tmp_path):
    dataset_id = store.save_dataset(tiny_dataset)
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, db_url, str(dataset_id), f"ann{i}",
                               str(N_ANSWERS), str(UNDO_EVERY), str(go)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for i in range(N_PROCESSES)]
    release_together(go, procs)   # once all have imported and opened the store
    for p in procs:
        out, _ = p.communicate(timeout=240)
        assert p.returncode == 0, out.decode(errors="replace")[-3000:]

    df = Store(db_url).human_judgements_frame(dataset_id, "coherence")
    kept = [k for k in range(1, N_ANSWERS + 1) if k % UNDO_EVERY != 0]  # 26 of 30
    assert len(df) == N_PROCESSES * len(kept) == 104
    assert df["id"].is_unique
    for i in range(N_PROCESSES):
        mine = df.loc[df["annotator"] == f"ann{i}", "seconds"].astype(int).tolist()
        assert sorted(mine) == kept  # each answer exactly once, and exactly the undone ones gone


def test_undo_deletes_only_the_annotators_own_answer(store, tiny_dataset):
    dataset_id = store.save_dataset(tiny_dataset)
    store.add_human_judgements(dataset_id, [
        dict(context_id="doc1", candidate_left="c1", candidate_right="c2", winner="A",
             annotator="alice", aspect="coherence", shown_order="ab", seconds=2.0),
        dict(context_id="doc1", candidate_left="c1", candidate_right="c2", winner="B",
             annotator="bob", aspect="coherence", shown_order="ba", seconds=3.0)])
    ids = dict(zip(*store.human_judgements_frame(dataset_id)[["annotator", "id"]].T.values))
    assert not store.delete_human_judgement(ids["alice"], "bob")  # not bob's to undo
    assert store.delete_human_judgement(ids["alice"], "alice")
    assert not store.delete_human_judgement(ids["alice"], "alice")  # already gone
    assert store.human_judgements_frame(dataset_id)["annotator"].tolist() == ["bob"]


def test_undo_of_an_unknown_id_is_false(store, tiny_dataset):
    store.save_dataset(tiny_dataset)
    assert not store.delete_human_judgement(10_000, "alice")

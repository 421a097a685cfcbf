"""A human judgement is stored once: one person, one unordered pair, one aspect, one revision.

Importing a label file twice adds nothing (``compassess import-labels`` says "N already stored,
M added"), two imports at once (real OS processes on one database) store each label once, the same
pair shown the other way round is still the same judgement, a deliberate re-judgement is a new
revision, and migration 0007 removes the exact duplicates earlier versions stored and says so.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from compassess_core.cli import main
from db.store import Store, alembic_config
from tests.start_line import WAIT_FOR_GO, release_together

ROOT = Path(__file__).resolve().parents[2]


def label_file(tmp_path: Path, tiny_dataset, annotators=("ann1", "ann2")) -> Path:
    """Every pair of every context, once per annotator (2 contexts x 3 pairs x 2 = 12 labels)."""
    lines = ["context_id,candidate_a,candidate_b,winner,annotator"]
    for ann in annotators:
        for ctx in tiny_dataset.contexts:
            ids = ctx.candidate_ids
            for i in range(len(ids)):
                for j in range(i + 1, len(ids)):
                    lines.append(f"{ctx.context_id},{ids[i]},{ids[j]},{ids[i]},{ann}")
    path = tmp_path / "labels.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_import_twice_adds_nothing_the_second_time(store, tiny_dataset, tmp_path, capsys):
    store.save_dataset(tiny_dataset)
    labels = label_file(tmp_path, tiny_dataset)
    args = ["import-labels", str(labels), "--dataset", "tiny", "--aspect", "coherence",
            "--db", store.url]
    assert main(args) == 0
    first = capsys.readouterr().err
    assert "12 human labels" in first and "0 already stored, 12 added" in first
    assert "attributed to ann1 (6), ann2 (6) (the file's annotator column)" in first
    assert main(args) == 0
    assert "12 already stored, 0 added" in capsys.readouterr().err
    assert len(store.human_judgements_frame(1)) == 12
    # --annotator attributes every label to one person: a new person, so 6 new judgements
    # (the file's two annotators collapse onto one, whose second label of a pair is a repeat).
    assert main(args + ["--annotator", "lead@example.org"]) == 0
    assert "6 already stored, 6 added; attributed to lead@example.org (12) (--annotator)" in \
        capsys.readouterr().err
    assert main(args + ["--annotator=two\nlines"]) == 2  # an unprintable name is refused


IMPORTER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from compassess_core.data.labels import load_human_labels, store_rows
    from db.store import Store

    url, dataset_id, labels_path, go = sys.argv[1:5]
    store = Store(url)
    dataset = store.load_dataset(int(dataset_id))
    rows = store_rows(load_human_labels(Path(labels_path), dataset), aspect="coherence")
    # start together, to make the imports collide
""") + WAIT_FOR_GO + textwrap.dedent("""
    print(store.add_human_judgements(int(dataset_id), rows))
    store.close()
""")


def test_concurrent_imports_cannot_both_insert(store, tiny_dataset, db_url, tmp_path):
    dataset_id = store.save_dataset(tiny_dataset)
    labels = label_file(tmp_path, tiny_dataset)
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", IMPORTER, db_url, str(dataset_id),
                               str(labels), str(go)], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for _ in range(4)]
    release_together(go, procs)
    added = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0, out[-2000:]
        added.append(int(out.strip().splitlines()[-1]))
    assert sum(added) == 12 and sorted(added)[-1] <= 12  # each label stored by exactly one import
    assert len(store.human_judgements_frame(dataset_id)) == 12


def test_the_same_pair_either_way_round_is_one_judgement_unless_judged_again(store, tiny_dataset):
    dataset_id = store.save_dataset(tiny_dataset)
    row = dict(context_id="doc1", candidate_left="c1", candidate_right="c2", winner="A",
               annotator="alice", aspect="coherence", shown_order="ab")
    assert store.add_human_judgements(dataset_id, [row]) == 1
    swapped = dict(row, candidate_left="c2", candidate_right="c1", winner="B", shown_order="ba")
    assert store.add_human_judgements(dataset_id, [swapped]) == 0  # a second tab, a double click
    assert store.add_human_judgements(dataset_id, [dict(row, aspect="fluency")]) == 1
    assert store.add_human_judgements(dataset_id, [dict(row, annotator="bob")]) == 1
    # Judging again on purpose keeps both answers, newest last.
    assert store.add_human_judgements(dataset_id, [swapped], again=True) == 1
    alice = store.human_judgements_frame(dataset_id, "coherence")
    alice = alice[alice["annotator"] == "alice"]
    assert alice["revision"].tolist() == [0, 1] and alice["winner"].tolist() == ["A", "B"]


def test_migration_0007_removes_exact_duplicates_and_reports_them(db_url, tiny_dataset, caplog):
    from alembic import command

    with Store(db_url) as s:
        dataset_id = s.save_dataset(tiny_dataset)
    engine = create_engine(db_url, poolclass=NullPool)
    with engine.begin() as conn:
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0006")
        ids = dict(conn.execute(sa.text(
            "SELECT d.key, d.id FROM candidates d JOIN contexts c ON c.id = d.context_id "
            "WHERE c.key = 'doc1'")).all())
        ctx = conn.execute(sa.text("SELECT id FROM contexts WHERE key = 'doc1'")).scalar_one()
        now = datetime.now(timezone.utc)

        def row(left, right, winner, annotator="alice", source="import", shown=None):
            return dict(dataset_id=dataset_id, context_id=ctx, left_id=ids[left],
                        right_id=ids[right], shown_order=shown, winner=winner,
                        annotator=annotator, aspect="coherence", seconds=None, source=source,
                        created_at=now)
        table = sa.table("human_judgements", *(sa.column(c) for c in (
            "dataset_id", "context_id", "left_id", "right_id", "shown_order", "winner",
            "annotator", "aspect", "seconds", "source", "created_at")))
        conn.execute(table.insert(), [
            row("c1", "c2", "A"), row("c1", "c2", "A"),            # an import done twice
            row("c1", "c3", "B"), row("c1", "c3", "B"),
            row("c2", "c3", "A", source="app", shown="ab"),         # answered, revised, revised
            row("c3", "c2", "A", source="app", shown="ba"),         # back: all three are kept
            row("c2", "c3", "A", source="app", shown="ab"),
            row("c1", "c2", "A", annotator="bob"),                  # another person: kept
        ])
    engine.dispose()
    with caplog.at_level(logging.WARNING, logger="alembic"):
        with Store(db_url) as s:  # opening upgrades to head
            df = s.human_judgements_frame(dataset_id)
    assert "removed 2 exact duplicate human judgement(s)" in caplog.text
    assert len(df) == 6
    alice = df[df["annotator"] == "alice"]
    revisions = {(l, r): rev for l, r, rev in
                 alice[["candidate_left", "candidate_right", "revision"]].itertuples(index=False)}
    assert revisions[("c1", "c2")] == 0 and revisions[("c1", "c3")] == 0
    assert sorted(alice.loc[alice["source"] == "app", "revision"]) == [0, 1, 2]
    with Store(db_url) as s:  # and from now on the key holds
        assert s.add_human_judgements(dataset_id, [dict(
            context_id="doc1", candidate_left="c2", candidate_right="c1", winner="A",
            annotator="alice", aspect="coherence")]) == 0

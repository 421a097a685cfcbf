"""A human judgement is stored once: one person, one unordered pair, one aspect, one revision.

Importing the same label file twice doubled its rows, and two imports (or two tabs) at once could
both insert. Upgrading:

1. adds ``pair_low_id``/``pair_high_id`` (the pair's candidate keys in order, so the key does not
   depend on which one was shown on the left) and ``revision``;
2. removes **exact duplicates**: a row identical to the row before it of the same person, pair
   and aspect (same left/right, winner, source and screen order) is a repeat of that row (a second
   import, a double click), not a new answer; the earliest is kept, and the removed count is
   reported per dataset on the ``alembic`` logger (a warning, so a CLI shows it);
3. numbers the remaining answers of a person to a pair (deliberate re-judgements, which agreement
   reads newest-first) 0, 1, 2, ... in the order stored;
4. adds the unique key ``(pair_low_id, pair_high_id, annotator, aspect, revision)``.

Downgrading drops the key and the columns (removed duplicates are not restored).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

log = logging.getLogger("alembic.runtime.migration")

# The table as this revision knows it (migrations must not import db.schema: it changes).
_judgements = sa.table(
    'human_judgements', sa.column('id', sa.Integer()), sa.column('dataset_id', sa.Integer()),
    sa.column('left_id', sa.Integer()), sa.column('right_id', sa.Integer()),
    sa.column('pair_low_id', sa.Integer()), sa.column('pair_high_id', sa.Integer()),
    sa.column('revision', sa.Integer()), sa.column('shown_order', sa.String(8)),
    sa.column('winner', sa.String(8)), sa.column('annotator', sa.String(255)),
    sa.column('aspect', sa.String(255)), sa.column('source', sa.String(32)))
_CHUNK = 500


def _deduplicate_and_number() -> None:
    conn = op.get_bind()
    t = _judgements
    rows = conn.execute(sa.select(t.c.id, t.c.dataset_id, t.c.left_id, t.c.right_id,
                                  t.c.shown_order, t.c.winner, t.c.annotator, t.c.aspect,
                                  t.c.source).order_by(t.c.id)).all()
    last: dict[tuple, tuple] = {}
    revisions: Counter = Counter()
    drop: list[int] = []
    dropped_per_dataset: Counter = Counter()
    numbered: list[dict] = []
    for r in rows:
        key = (min(r.left_id, r.right_id), max(r.left_id, r.right_id), r.annotator, r.aspect)
        answer = (r.left_id, r.right_id, r.winner, r.source, r.shown_order)
        if last.get(key) == answer:
            drop.append(r.id)
            dropped_per_dataset[r.dataset_id] += 1
            continue
        last[key] = answer
        numbered.append(dict(row_id=r.id, low=key[0], high=key[1], rev=revisions[key]))
        revisions[key] += 1
    for i in range(0, len(drop), _CHUNK):
        conn.execute(t.delete().where(t.c.id.in_(drop[i:i + _CHUNK])))
    if numbered:
        conn.execute(t.update().where(t.c.id == sa.bindparam('row_id'))
                     .values(pair_low_id=sa.bindparam('low'), pair_high_id=sa.bindparam('high'),
                             revision=sa.bindparam('rev')), numbered)
    if drop:
        per = ", ".join(f"dataset {d}: {n}" for d, n in sorted(dropped_per_dataset.items()))
        log.warning("removed %d exact duplicate human judgement(s) (%s); the earliest of each "
                    "is kept", len(drop), per)


def upgrade() -> None:
    with op.batch_alter_table('human_judgements') as batch:
        batch.add_column(sa.Column('pair_low_id', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('pair_high_id', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('revision', sa.Integer(), server_default='0', nullable=False))
    _deduplicate_and_number()
    with op.batch_alter_table('human_judgements') as batch:
        batch.alter_column('pair_low_id', existing_type=sa.Integer(), nullable=False)
        batch.alter_column('pair_high_id', existing_type=sa.Integer(), nullable=False)
        batch.create_unique_constraint('uq_human_judgements_pair', ['pair_low_id', 'pair_high_id',
                                                                    'annotator', 'aspect',
                                                                    'revision'])


def downgrade() -> None:
    with op.batch_alter_table('human_judgements') as batch:
        batch.drop_constraint('uq_human_judgements_pair', type_='unique')
        batch.drop_column('revision')
        batch.drop_column('pair_high_id')
        batch.drop_column('pair_low_id')

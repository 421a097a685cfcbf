"""Index every foreign key column that no index leads, so deletes stay fast.

Deleting a dataset deletes its candidates and contexts; for each deleted row the database looks
up the rows that reference it (to cascade, or to check that none is left). Without an index on
the referencing column that is a scan of the whole table per deleted row: deleting a dataset of
600 candidates from a store of about 100,000 comparisons took about 40 s on SQLite, holding the
write lock the whole time (a worker writing meanwhile gives up after SQLite's busy timeout). With these
indexes it takes well under a second. Upgrading only adds indexes; downgrading drops them.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from typing import Sequence

from alembic import op

revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: (table, column) of each foreign key column that no existing index starts with.
_FOREIGN_KEY_COLUMNS = (
    ('comparisons', 'context_id'),
    ('comparisons', 'a_id'),
    ('comparisons', 'b_id'),
    ('human_judgements', 'left_id'),
    ('human_judgements', 'right_id'),
    ('candidate_scores', 'context_id'),
    ('candidate_scores', 'candidate_id'),
    ('absolute_comparisons', 'context_id'),
    ('absolute_comparisons', 'candidate_id'),
)


def upgrade() -> None:
    for table, column in _FOREIGN_KEY_COLUMNS:
        op.create_index(f'ix_{table}_{column}', table, [column], unique=False)


def downgrade() -> None:
    for table, column in reversed(_FOREIGN_KEY_COLUMNS):
        op.drop_index(f'ix_{table}_{column}', table_name=table)

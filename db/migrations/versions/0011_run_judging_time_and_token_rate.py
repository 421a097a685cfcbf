"""What a finished run measured: its seconds of judging and the prompt tokens it processed per second.

``runs.judge_s`` is the time from the worker's first judged batch to its last (the judge's loading
left out), so a completed run shows its rate and how long it judged; ``runs.token_rate`` is the
prompt tokens the judge processed per second of it, from which the plan of a later run with other
prompt lengths estimates its time.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0011'
down_revision: str | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('judge_s', sa.Float(), nullable=True))
        batch.add_column(sa.Column('token_rate', sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.drop_column('token_rate')
        batch.drop_column('judge_s')

"""What a run's worker does now, and since when.

``runs.phase`` is the worker's phase (``starting``, ``loading`` the judge, ``planning``,
``judging``) and ``runs.phase_at`` the time it began, written with the run's status: the Run page
shows each phase with its elapsed time. Runs stored before keep NULL (their message still says
what the worker did).

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0014'
down_revision: str | None = '0013'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('phase', sa.String(length=32), nullable=True))
        batch.add_column(sa.Column('phase_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.drop_column('phase_at')
        batch.drop_column('phase')

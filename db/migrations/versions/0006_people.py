"""People and their roles: who may use a shared app (sign-in through the team's identity provider)
and whether as an admin or an annotator.

An empty table means nobody has a role yet: the first admins come from configuration
(``COMPASSESS_ADMINS``) when they first sign in. A local single-user app never reads it.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0006'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'people',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('identity', sa.String(length=255), nullable=False),
        sa.Column('role', sa.String(length=16), nullable=False),
        sa.Column('added_by', sa.String(length=255), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_people')),
        sa.UniqueConstraint('identity', name=op.f('uq_people_identity')),
    )


def downgrade() -> None:
    op.drop_table('people')

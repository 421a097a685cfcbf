"""When each person last signed out of a shared app: Streamlit's sign-in cookie outlives a
sign-out (it holds the identity provider's claims for 30 days), so the app refuses a cookie whose
ID token was issued at or before ``sign_outs.signed_out_through`` (seconds since the epoch).

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0013'
down_revision: str | None = '0012'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'sign_outs',
        sa.Column('identity', sa.String(length=255), nullable=False),
        sa.Column('signed_out_through', sa.BigInteger(), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('identity', name=op.f('pk_sign_outs')),
    )


def downgrade() -> None:
    op.drop_table('sign_outs')

"""Panels of judges: ``panels`` (a name, the dataset and aspect, how the members are combined,
their weights and how each member's p is debiased) and ``panel_members`` (the runs on a panel, in
order). Only the definition is stored; the combined verdicts are computed when read. Downgrading
drops both tables (the runs stay).

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0010'
down_revision: str | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'panels',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('name', sa.String(length=255), nullable=False),
        sa.Column('dataset_id', sa.Integer(), nullable=False),
        sa.Column('aspect', sa.String(length=255), nullable=False),
        sa.Column('combine', sa.String(length=16), nullable=False),
        sa.Column('weights', sa.JSON(), nullable=False),
        sa.Column('scaling', sa.String(length=16), nullable=False),
        sa.Column('created_by', sa.String(length=255), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], ondelete='CASCADE',
                                name=op.f('fk_panels_dataset_id_datasets')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_panels')),
        sa.UniqueConstraint('name', name=op.f('uq_panels_name')),
    )
    op.create_index('ix_panels_dataset_id', 'panels', ['dataset_id'], unique=False)
    op.create_table(
        'panel_members',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('panel_id', sa.Integer(), nullable=False),
        sa.Column('run_id', sa.Integer(), nullable=False),
        sa.Column('position', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['panel_id'], ['panels.id'], ondelete='CASCADE',
                                name=op.f('fk_panel_members_panel_id_panels')),
        sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE',
                                name=op.f('fk_panel_members_run_id_runs')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_panel_members')),
        sa.UniqueConstraint('panel_id', 'run_id', name='uq_panel_members_panel_id'),
    )
    op.create_index('ix_panel_members_run_id', 'panel_members', ['run_id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_panel_members_run_id', table_name='panel_members')
    op.drop_table('panel_members')
    op.drop_index('ix_panels_dataset_id', table_name='panels')
    op.drop_table('panels')

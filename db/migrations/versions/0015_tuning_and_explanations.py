"""Tuned wordings and the judge's reasons: ``templates`` (named comparison templates that runs
take by name, e.g. the wording a tuning picked), ``tunings`` (a tuning's options and the
wordings it tried, each judged by a run of its own) and ``explanations`` (what a judge wrote
when asked why it gave a stored verdict, keyed by the judge and the prompt like the comparison
cache). Downgrading drops the three tables (the tunings' runs stay).

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0015'
down_revision: str | None = '0014'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'templates',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('name', sa.String(length=255), nullable=False),
        sa.Column('text', sa.Text(), nullable=False),
        sa.Column('noun', sa.String(length=64), nullable=False),
        sa.Column('tuning', sa.String(length=255), nullable=True),
        sa.Column('source', sa.Text(), nullable=False),
        sa.Column('created_by', sa.String(length=255), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_templates')),
        sa.UniqueConstraint('name', name=op.f('uq_templates_name')),
    )
    op.create_table(
        'tunings',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('name', sa.String(length=255), nullable=False),
        sa.Column('dataset_id', sa.Integer(), nullable=False),
        sa.Column('aspect', sa.Text(), nullable=False),
        sa.Column('options', sa.JSON(), nullable=False),
        sa.Column('wordings', sa.JSON(), nullable=False),
        sa.Column('status', sa.String(length=32), nullable=False),
        sa.Column('message', sa.Text(), nullable=True),
        sa.Column('cancel_requested', sa.Boolean(), nullable=False),
        sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('created_by', sa.String(length=255), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], ondelete='CASCADE',
                                name=op.f('fk_tunings_dataset_id_datasets')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_tunings')),
        sa.UniqueConstraint('name', name=op.f('uq_tunings_name')),
    )
    op.create_index('ix_tunings_dataset_id', 'tunings', ['dataset_id'], unique=False)
    op.create_table(
        'explanations',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('context_id', sa.Integer(), nullable=False),
        sa.Column('a_id', sa.Integer(), nullable=False),
        sa.Column('b_id', sa.Integer(), nullable=False),
        sa.Column('prompt_hash', sa.String(length=128), nullable=False),
        sa.Column('judge_key', sa.String(length=1024), nullable=False),
        sa.Column('max_tokens', sa.Integer(), nullable=False),
        sa.Column('verdict', sa.String(length=8), nullable=False),
        sa.Column('p', sa.Float(), nullable=True),
        sa.Column('text', sa.Text(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['context_id'], ['contexts.id'], ondelete='CASCADE',
                                name=op.f('fk_explanations_context_id_contexts')),
        sa.ForeignKeyConstraint(['a_id'], ['candidates.id'], ondelete='CASCADE',
                                name=op.f('fk_explanations_a_id_candidates')),
        sa.ForeignKeyConstraint(['b_id'], ['candidates.id'], ondelete='CASCADE',
                                name=op.f('fk_explanations_b_id_candidates')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_explanations')),
        sa.UniqueConstraint('prompt_hash', 'judge_key', 'max_tokens',
                            name='uq_explanations_prompt_hash'),
    )
    op.create_index('ix_explanations_context_id', 'explanations', ['context_id'], unique=False)
    op.create_index('ix_explanations_a_id', 'explanations', ['a_id'], unique=False)
    op.create_index('ix_explanations_b_id', 'explanations', ['b_id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_explanations_b_id', table_name='explanations')
    op.drop_index('ix_explanations_a_id', table_name='explanations')
    op.drop_index('ix_explanations_context_id', table_name='explanations')
    op.drop_table('explanations')
    op.drop_index('ix_tunings_dataset_id', table_name='tunings')
    op.drop_table('tunings')
    op.drop_table('templates')

"""Initial schema: datasets, contexts, candidates, reference scores, runs, comparisons,
human judgements, guidelines.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('datasets',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('content_hash', sa.String(length=128), nullable=False),
    sa.Column('source', sa.Text(), nullable=False),
    sa.Column('score_columns', sa.JSON(), nullable=False),
    sa.Column('n_contexts', sa.Integer(), nullable=False),
    sa.Column('n_candidates', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_datasets')),
    sa.UniqueConstraint('content_hash', name=op.f('uq_datasets_content_hash')),
    sa.UniqueConstraint('name', name=op.f('uq_datasets_name')),
    sqlite_autoincrement=True
    )
    op.create_table('contexts',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=255), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], name=op.f('fk_contexts_dataset_id_datasets'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_contexts')),
    sa.UniqueConstraint('dataset_id', 'key', name=op.f('uq_contexts_dataset_id_key')),
    sa.UniqueConstraint('dataset_id', 'position', name=op.f('uq_contexts_dataset_id_position'))
    )
    op.create_table('guidelines',
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], name=op.f('fk_guidelines_dataset_id_datasets'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('dataset_id', name=op.f('pk_guidelines'))
    )
    op.create_table('runs',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('settings', sa.JSON(), nullable=False),
    sa.Column('model', sa.String(length=1024), nullable=True),
    sa.Column('model_key', sa.String(length=1024), nullable=True),
    sa.Column('label_words', sa.String(length=255), nullable=True),
    sa.Column('aspect', sa.Text(), nullable=True),
    sa.Column('template_name', sa.String(length=255), nullable=True),
    sa.Column('strategy', sa.String(length=64), nullable=True),
    sa.Column('budget', sa.Integer(), nullable=True),
    sa.Column('seed', sa.Integer(), nullable=True),
    sa.Column('status', sa.String(length=32), nullable=False),
    sa.Column('done', sa.Integer(), nullable=False),
    sa.Column('total', sa.Integer(), nullable=True),
    sa.Column('message', sa.Text(), nullable=True),
    sa.Column('cancel_requested', sa.Boolean(), nullable=False),
    sa.Column('worker_pid', sa.Integer(), nullable=True),
    sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], name=op.f('fk_runs_dataset_id_datasets'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_runs')),
    sa.UniqueConstraint('name', name=op.f('uq_runs_name')),
    sqlite_autoincrement=True
    )
    op.create_index('ix_runs_dataset_id', 'runs', ['dataset_id'], unique=False)
    op.create_index('ix_runs_model_key_label_words', 'runs', ['model_key', 'label_words'], unique=False)

    op.create_table('candidates',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('context_id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=255), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('system', sa.String(length=255), nullable=True),
    sa.Column('source_row', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['context_id'], ['contexts.id'], name=op.f('fk_candidates_context_id_contexts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], name=op.f('fk_candidates_dataset_id_datasets'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_candidates')),
    sa.UniqueConstraint('context_id', 'key', name=op.f('uq_candidates_context_id_key')),
    sa.UniqueConstraint('context_id', 'position', name=op.f('uq_candidates_context_id_position'))
    )
    op.create_index('ix_candidates_dataset_id', 'candidates', ['dataset_id'], unique=False)

    op.create_table('comparisons',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('context_id', sa.Integer(), nullable=False),
    sa.Column('a_id', sa.Integer(), nullable=False),
    sa.Column('b_id', sa.Integer(), nullable=False),
    sa.Column('p', sa.Float(), nullable=True),
    sa.Column('logp_a', sa.Float(), nullable=True),
    sa.Column('logp_b', sa.Float(), nullable=True),
    sa.Column('label_mass', sa.Float(), nullable=True),
    sa.Column('latency_ms', sa.Float(), nullable=True),
    sa.Column('prompt_hash', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['a_id'], ['candidates.id'], name=op.f('fk_comparisons_a_id_candidates'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['b_id'], ['candidates.id'], name=op.f('fk_comparisons_b_id_candidates'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['context_id'], ['contexts.id'], name=op.f('fk_comparisons_context_id_contexts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_comparisons_run_id_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_comparisons')),
    sa.UniqueConstraint('run_id', 'a_id', 'b_id', name=op.f('uq_comparisons_run_id_a_id_b_id'))
    )
    op.create_index('ix_comparisons_prompt_hash', 'comparisons', ['prompt_hash'], unique=False)

    op.create_table('human_judgements',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('context_id', sa.Integer(), nullable=False),
    sa.Column('left_id', sa.Integer(), nullable=False),
    sa.Column('right_id', sa.Integer(), nullable=False),
    sa.Column('shown_order', sa.String(length=8), nullable=True),
    sa.Column('winner', sa.String(length=8), nullable=False),
    sa.Column('annotator', sa.String(length=255), nullable=False),
    sa.Column('aspect', sa.String(length=255), nullable=False),
    sa.Column('seconds', sa.Float(), nullable=True),
    sa.Column('source', sa.String(length=32), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['context_id'], ['contexts.id'], name=op.f('fk_human_judgements_context_id_contexts'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], name=op.f('fk_human_judgements_dataset_id_datasets'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['left_id'], ['candidates.id'], name=op.f('fk_human_judgements_left_id_candidates'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['right_id'], ['candidates.id'], name=op.f('fk_human_judgements_right_id_candidates'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_human_judgements'))
    )
    op.create_index('ix_human_judgements_annotator', 'human_judgements', ['annotator'], unique=False)
    op.create_index('ix_human_judgements_context_id', 'human_judgements', ['context_id'], unique=False)
    op.create_index('ix_human_judgements_dataset_id_aspect', 'human_judgements', ['dataset_id', 'aspect'], unique=False)

    op.create_table('reference_scores',
    sa.Column('candidate_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('value', sa.Float(), nullable=True),
    sa.ForeignKeyConstraint(['candidate_id'], ['candidates.id'], name=op.f('fk_reference_scores_candidate_id_candidates'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('candidate_id', 'name', name=op.f('pk_reference_scores'))
    )


def downgrade() -> None:
    op.drop_table('reference_scores')
    op.drop_index('ix_human_judgements_dataset_id_aspect', table_name='human_judgements')
    op.drop_index('ix_human_judgements_context_id', table_name='human_judgements')
    op.drop_index('ix_human_judgements_annotator', table_name='human_judgements')

    op.drop_table('human_judgements')
    op.drop_index('ix_comparisons_prompt_hash', table_name='comparisons')

    op.drop_table('comparisons')
    op.drop_index('ix_candidates_dataset_id', table_name='candidates')

    op.drop_table('candidates')
    op.drop_index('ix_runs_model_key_label_words', table_name='runs')
    op.drop_index('ix_runs_dataset_id', table_name='runs')

    op.drop_table('runs')
    op.drop_table('guidelines')
    op.drop_table('contexts')
    op.drop_table('datasets')

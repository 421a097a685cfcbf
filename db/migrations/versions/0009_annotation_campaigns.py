"""Annotation campaigns: work assigned to named people, with a fixed pair list per campaign.

``campaigns`` (one dataset and aspect, guidelines, the overlap = how many people label each pair,
how the pairs were chosen, who created it, open/closed), ``campaign_annotators`` (who is assigned)
and ``campaign_pairs`` (the unordered pairs, fixed when the campaign is created). The labels stay in
``human_judgements``, which gains the campaign a label was given in (``campaign_id``, NULL for the
free annotate page and imports) and an optional ``comment``. Downgrading drops the two columns and
the three tables (campaign labels stay as ordinary labels).

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0009'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'campaigns',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('name', sa.String(length=255), nullable=False),
        sa.Column('dataset_id', sa.Integer(), nullable=False),
        sa.Column('aspect', sa.String(length=255), nullable=False),
        sa.Column('guidelines', sa.Text(), nullable=False),
        sa.Column('overlap', sa.Integer(), nullable=False),
        sa.Column('selection', sa.String(length=16), nullable=False),
        sa.Column('seed', sa.Integer(), nullable=False),
        sa.Column('created_by', sa.String(length=255), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], ondelete='CASCADE',
                                name=op.f('fk_campaigns_dataset_id_datasets')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_campaigns')),
        sa.UniqueConstraint('name', name=op.f('uq_campaigns_name')),
    )
    op.create_index('ix_campaigns_dataset_id', 'campaigns', ['dataset_id'], unique=False)
    op.create_table(
        'campaign_annotators',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('campaign_id', sa.Integer(), nullable=False),
        sa.Column('identity', sa.String(length=255), nullable=False),
        sa.Column('added_by', sa.String(length=255), nullable=False),
        sa.Column('added_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['campaign_id'], ['campaigns.id'], ondelete='CASCADE',
                                name=op.f('fk_campaign_annotators_campaign_id_campaigns')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_campaign_annotators')),
        sa.UniqueConstraint('campaign_id', 'identity', name='uq_campaign_annotators_campaign_id'),
    )
    op.create_index('ix_campaign_annotators_identity', 'campaign_annotators', ['identity'],
                    unique=False)
    op.create_table(
        'campaign_pairs',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('campaign_id', sa.Integer(), nullable=False),
        sa.Column('position', sa.Integer(), nullable=False),
        sa.Column('context_id', sa.Integer(), nullable=False),
        sa.Column('low_id', sa.Integer(), nullable=False),
        sa.Column('high_id', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['campaign_id'], ['campaigns.id'], ondelete='CASCADE',
                                name=op.f('fk_campaign_pairs_campaign_id_campaigns')),
        sa.ForeignKeyConstraint(['context_id'], ['contexts.id'], ondelete='CASCADE',
                                name=op.f('fk_campaign_pairs_context_id_contexts')),
        sa.ForeignKeyConstraint(['low_id'], ['candidates.id'], ondelete='CASCADE',
                                name=op.f('fk_campaign_pairs_low_id_candidates')),
        sa.ForeignKeyConstraint(['high_id'], ['candidates.id'], ondelete='CASCADE',
                                name=op.f('fk_campaign_pairs_high_id_candidates')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_campaign_pairs')),
        sa.UniqueConstraint('campaign_id', 'low_id', 'high_id',
                            name='uq_campaign_pairs_campaign_id'),
    )
    op.create_index('ix_campaign_pairs_context_id', 'campaign_pairs', ['context_id'], unique=False)
    op.create_index('ix_campaign_pairs_low_id', 'campaign_pairs', ['low_id'], unique=False)
    op.create_index('ix_campaign_pairs_high_id', 'campaign_pairs', ['high_id'], unique=False)
    with op.batch_alter_table('human_judgements') as batch:
        batch.add_column(sa.Column('campaign_id', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('comment', sa.Text(), nullable=True))
        batch.create_foreign_key('fk_human_judgements_campaign_id_campaigns', 'campaigns',
                                 ['campaign_id'], ['id'], ondelete='CASCADE')
        batch.create_index('ix_human_judgements_campaign_id', ['campaign_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('human_judgements') as batch:
        batch.drop_index('ix_human_judgements_campaign_id')
        batch.drop_constraint('fk_human_judgements_campaign_id_campaigns', type_='foreignkey')
        batch.drop_column('comment')
        batch.drop_column('campaign_id')
    op.drop_index('ix_campaign_pairs_high_id', table_name='campaign_pairs')
    op.drop_index('ix_campaign_pairs_low_id', table_name='campaign_pairs')
    op.drop_index('ix_campaign_pairs_context_id', table_name='campaign_pairs')
    op.drop_table('campaign_pairs')
    op.drop_index('ix_campaign_annotators_identity', table_name='campaign_annotators')
    op.drop_table('campaign_annotators')
    op.drop_index('ix_campaigns_dataset_id', table_name='campaigns')
    op.drop_table('campaigns')

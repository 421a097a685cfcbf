"""What a file called its context and text columns, kept with the dataset.

``datasets.text_columns`` holds the file's names of the columns mapped to ``context`` and ``text``
(``story_prompt``, ``story``): the prompt library reads from them which task's wording the judge
is given. Datasets stored before keep NULL and are worded from the aspect, as before.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0012'
down_revision: str | None = '0011'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('datasets') as batch:
        batch.add_column(sa.Column('text_columns', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('datasets') as batch:
        batch.drop_column('text_columns')

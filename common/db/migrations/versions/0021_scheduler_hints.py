"""instances: the same_host / different_host scheduler hints (issue 22).

* ``scheduler_hints``: the placement hints of the create that every
  build and move of the instance honours (Nova keeps them in its request
  spec), JSON ``{"same_host": [uuid, ...], "different_host": [uuid,
  ...]}`` (a hint not given is absent); null when the create gave
  neither (common/db/host_hints.py).

Existing instances get none.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-27
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

# as in the models, frozen here
JSON = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')

revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None


def upgrade():
    # ADD COLUMN, not a batch (see 0009: SQLite's batch copies the table).
    op.add_column('instances', sa.Column('scheduler_hints', JSON,
                                         nullable=True))


def downgrade():
    with op.batch_alter_table('instances') as batch:
        batch.drop_column('scheduler_hints')

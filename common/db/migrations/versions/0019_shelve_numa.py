"""instances: guest NUMA cells and shelving (issue 22).

* ``numa_cells``: the guest's NUMA cells from its flavor's ``hw:numa_*``
  extra specs (common/numa.py), JSON ``[{"id", "cpus", "memory_mb"}]``;
  null for the one cell every guest has.
* ``shelved_at``: when the instance was shelved (the offload sweep's
  clock, ``[compute] shelved_offload_time``); null when not shelved.
* ``shelved_image_id``: the snapshot a shelve made, which an unshelve of
  an offloaded instance builds from and every unshelve (or a hard delete)
  deletes; null when none.

Existing instances get none of them.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

# as in the models, frozen here
JSON = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade():
    # ADD COLUMN, not a batch (see 0009: SQLite's batch copies the table).
    op.add_column('instances', sa.Column('numa_cells', JSON, nullable=True))
    op.add_column('instances', sa.Column('shelved_at', sa.DateTime(),
                                         nullable=True))
    op.add_column('instances', sa.Column('shelved_image_id', sa.String(36),
                                         nullable=True))


def downgrade():
    with op.batch_alter_table('instances') as batch:
        for name in ('numa_cells', 'shelved_at', 'shelved_image_id'):
            batch.drop_column(name)

"""instances: what the user says of a server (issue 22): ``description``,
user ``metadata`` (JSON object), ``tags`` (JSON list), the lock
(``locked``, ``locked_by``, ``locked_reason``), and the boot request's
``boot_reservation_id`` and ``launch_index`` (min_count/max_count).

Existing servers get no description, no metadata, no tags, unlocked.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')
_COLUMNS = ('description', 'metadata', 'tags', 'locked', 'locked_by',
            'locked_reason', 'boot_reservation_id', 'launch_index')


def upgrade():
    # ADD COLUMN, not a batch: SQLite's batch copies the table, which its
    # foreign keys (allocations, quota charges) refuse while rows exist.
    for column in (
            sa.Column('description', sa.Text(), nullable=True),
            sa.Column('metadata', JSON, nullable=False,
                      server_default='{}'),
            sa.Column('tags', JSON, nullable=False, server_default='[]'),
            sa.Column('locked', sa.Boolean(), nullable=False,
                      server_default=sa.false()),
            sa.Column('locked_by', sa.String(16), nullable=True),
            sa.Column('locked_reason', sa.String(255), nullable=True),
            sa.Column('boot_reservation_id', sa.String(36), nullable=True),
            sa.Column('launch_index', sa.Integer(), nullable=False,
                      server_default='0')):
        op.add_column('instances', column)
    op.create_index('ix_instances_boot_reservation_id', 'instances',
                    ['boot_reservation_id'])


def downgrade():
    op.drop_index('ix_instances_boot_reservation_id', 'instances')
    with op.batch_alter_table('instances') as batch:
        for name in _COLUMNS:
            batch.drop_column(name)

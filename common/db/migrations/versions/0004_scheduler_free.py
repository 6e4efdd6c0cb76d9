"""The scheduler's weigher as stored columns with an index: hosts.ram_ratio,
hosts.free_memory_mb, ix_hosts_spread, ix_hosts_pack.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from alembic import op
import sqlalchemy as sa

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

# Existing hosts count with ratio 1 until their next heartbeat stamps the
# conductor's; their free RAM is what their allocations leave.
_BACKFILL = ('UPDATE hosts SET ram_ratio = 1, '
             'free_memory_mb = memory_mb - used_memory_mb')


def upgrade():
    # Added with server defaults (NOT NULL without a default cannot be added
    # to a table with rows), then filled in.
    op.add_column('hosts', sa.Column('ram_ratio', sa.Float(), nullable=False,
                                     server_default='1'))
    op.add_column('hosts', sa.Column('free_memory_mb', sa.Float(),
                                     nullable=False, server_default='0'))
    op.execute(_BACKFILL)
    op.create_index('ix_hosts_spread', 'hosts',
                    ['ram_ratio', sa.text('free_memory_mb DESC'), 'name'])
    op.create_index('ix_hosts_pack', 'hosts',
                    ['ram_ratio', 'free_memory_mb', 'name'])


def downgrade():
    op.drop_index('ix_hosts_pack', table_name='hosts')
    op.drop_index('ix_hosts_spread', table_name='hosts')
    with op.batch_alter_table('hosts') as batch:
        batch.drop_column('free_memory_mb')
        batch.drop_column('ram_ratio')

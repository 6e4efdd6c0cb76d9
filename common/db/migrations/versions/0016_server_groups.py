"""Server groups and reserved host resources (issue 25): the
``server_groups`` and ``server_group_members`` tables; on ``hosts`` what
the agent reserves for the host itself and its own allocation ratios.

Existing hosts reserve nothing and use the scheduler's ratios until their
next heartbeat.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27
"""

from alembic import op
import sqlalchemy as sa

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None

_RESERVED = ('reserved_vcpus', 'reserved_memory_mb', 'reserved_disk_gb')
_RATIOS = ('own_cpu_ratio', 'own_ram_ratio', 'own_disk_ratio')


def upgrade():
    op.create_table(
        'server_groups',
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255), nullable=False),
        sa.Column('policy', sa.String(32), nullable=False),
        sa.Column('max_server_per_host', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_server_groups'),
        sa.UniqueConstraint('uuid', name='uq_server_groups_uuid'))
    op.create_index('ix_server_groups_project_id', 'server_groups',
                    ['project_id'])
    op.create_table(
        'server_group_members',
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('group_id', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ['group_id'], ['server_groups.id'],
            name='fk_server_group_members_group_id_server_groups'),
        sa.PrimaryKeyConstraint('instance_uuid',
                                name='pk_server_group_members'))
    op.create_index('ix_server_group_members_group_id',
                    'server_group_members', ['group_id'])
    # ADD COLUMN, not a batch (see 0009): SQLite's batch copies the table.
    for name in _RESERVED:
        op.add_column('hosts', sa.Column(name, sa.Integer(), nullable=False,
                                         server_default='0'))
    for name in _RATIOS:
        op.add_column('hosts', sa.Column(name, sa.Float(), nullable=True))


def downgrade():
    with op.batch_alter_table('hosts') as batch:
        for name in _RESERVED + _RATIOS:
            batch.drop_column(name)
    op.drop_index('ix_server_group_members_group_id',
                  table_name='server_group_members')
    op.drop_table('server_group_members')
    op.drop_index('ix_server_groups_project_id', table_name='server_groups')
    op.drop_table('server_groups')

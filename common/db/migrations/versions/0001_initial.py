"""The first schema: instances, hosts, allocations and the action log.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from alembic import op
import sqlalchemy as sa

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def _timestamps():
    return [sa.Column('created_at', sa.DateTime(), nullable=False),
            sa.Column('updated_at', sa.DateTime(), nullable=False)]


def upgrade():
    op.create_table(
        'instances',
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255), nullable=False),
        sa.Column('host', sa.String(255), nullable=True),
        sa.Column('flavor_name', sa.String(255), nullable=False),
        sa.Column('vcpus', sa.Integer(), nullable=False),
        sa.Column('memory_mb', sa.Integer(), nullable=False),
        sa.Column('disk_gb', sa.Integer(), nullable=False),
        sa.Column('image_ref', sa.String(255), nullable=False),
        sa.Column('vm_state', sa.String(32), nullable=False),
        sa.Column('return_vm_state', sa.String(32), nullable=True),
        sa.Column('task_state', sa.String(32), nullable=True),
        sa.Column('task_id', sa.String(36), nullable=True),
        sa.Column('task_action', sa.String(32), nullable=True),
        sa.Column('task_started_at', sa.DateTime(), nullable=True),
        sa.Column('task_updated_at', sa.DateTime(), nullable=True),
        sa.Column('progress_step', sa.String(32), nullable=True),
        sa.Column('progress_percent', sa.Integer(), nullable=False),
        sa.Column('power_state', sa.Integer(), nullable=False),
        sa.Column('power_reason', sa.String(16), nullable=True),
        sa.Column('power_seq', sa.BigInteger(), nullable=False),
        sa.Column('power_reported_at', sa.DateTime(), nullable=True),
        sa.Column('user_shutdown_policy', sa.String(16), nullable=False),
        sa.Column('crash_policy', sa.String(16), nullable=False),
        *_timestamps(),
        sa.Column('launched_at', sa.DateTime(), nullable=True),
        sa.Column('soft_deleted_at', sa.DateTime(), nullable=True),
        sa.Column('hard_deleted_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('uuid', name='pk_instances'),
        sa.UniqueConstraint('task_id', name='uq_instances_task_id'),
    )
    op.create_index('ix_instances_project_id', 'instances', ['project_id'])
    op.create_index('ix_instances_host', 'instances', ['host'])
    op.create_index('ix_instances_vm_state', 'instances', ['vm_state'])

    op.create_table(
        'hosts',
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('vcpus', sa.Integer(), nullable=False),
        sa.Column('memory_mb', sa.Integer(), nullable=False),
        sa.Column('disk_gb', sa.Integer(), nullable=False),
        sa.Column('used_vcpus', sa.Integer(), nullable=False),
        sa.Column('used_memory_mb', sa.Integer(), nullable=False),
        sa.Column('used_disk_gb', sa.Integer(), nullable=False),
        sa.Column('enabled', sa.Boolean(), nullable=False),
        sa.Column('disabled_reason', sa.String(255), nullable=True),
        sa.Column('last_heartbeat', sa.DateTime(), nullable=True),
        sa.Column('agent_started_at', sa.DateTime(), nullable=True),
        *_timestamps(),
        sa.PrimaryKeyConstraint('name', name='pk_hosts'),
    )

    op.create_table(
        'allocations',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('purpose', sa.String(16), nullable=False),
        sa.Column('flavor_name', sa.String(255), nullable=True),
        sa.Column('vcpus', sa.Integer(), nullable=False),
        sa.Column('memory_mb', sa.Integer(), nullable=False),
        sa.Column('disk_gb', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_allocations'),
        sa.ForeignKeyConstraint(['instance_uuid'], ['instances.uuid'],
                                name='fk_allocations_instance_uuid_instances'),
        sa.ForeignKeyConstraint(['host'], ['hosts.name'],
                                name='fk_allocations_host_hosts'),
    )
    op.create_index('ix_allocations_instance_uuid', 'allocations',
                    ['instance_uuid'])
    op.create_index('ix_allocations_host', 'allocations', ['host'])

    op.create_table(
        'instance_actions',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('task_id', sa.String(36), nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('action', sa.String(32), nullable=False),
        sa.Column('user_id', sa.String(255), nullable=True),
        sa.Column('project_id', sa.String(255), nullable=True),
        sa.Column('request_id', sa.String(255), nullable=True),
        sa.Column('started_at', sa.DateTime(), nullable=False),
        sa.Column('finished_at', sa.DateTime(), nullable=True),
        sa.Column('result', sa.String(16), nullable=False),
        sa.Column('vm_state_before', sa.String(32), nullable=True),
        sa.Column('vm_state_after', sa.String(32), nullable=True),
        sa.Column('message', sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint('id', name='pk_instance_actions'),
        sa.UniqueConstraint('task_id', name='uq_instance_actions_task_id'),
        sa.ForeignKeyConstraint(
            ['instance_uuid'], ['instances.uuid'],
            name='fk_instance_actions_instance_uuid_instances'),
    )
    op.create_index('ix_instance_actions_instance_uuid', 'instance_actions',
                    ['instance_uuid'])
    op.create_index('ix_instance_actions_result', 'instance_actions',
                    ['result'])


def downgrade():
    op.drop_table('instance_actions')
    op.drop_table('allocations')
    op.drop_table('hosts')
    op.drop_table('instances')

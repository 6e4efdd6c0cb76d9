"""Quotas, usage for billing and services: quota_limits, quota_usages,
quota_charges, usage_intervals, services.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

import datetime

from alembic import op
import sqlalchemy as sa

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

_RESOURCES = ('instances', 'cores', 'ram', 'disk')
# Instances that exist already start to count now (as with [quota]
# count_pending = true); running ones start a billable interval now.
_BACKFILL = (
    "INSERT INTO quota_charges (instance_uuid, project_id, instances, cores, "
    "ram, disk) SELECT uuid, project_id, 1, vcpus, memory_mb, disk_gb FROM "
    "instances WHERE vm_state != 'hard_deleted'",
    "INSERT INTO quota_usages (project_id, instances, cores, ram, disk, "
    "updated_at) SELECT project_id, SUM(instances), SUM(cores), SUM(ram), "
    "SUM(disk), :now FROM quota_charges GROUP BY project_id",
    "INSERT INTO usage_intervals (instance_uuid, project_id, flavor_name, "
    "vcpus, memory_mb, disk_gb, started_at) SELECT uuid, project_id, "
    "flavor_name, vcpus, memory_mb, disk_gb, :now FROM instances WHERE "
    "vm_state IN ('active', 'rescued', 'paused', 'resized')",
)


def _resource_columns():
    return [sa.Column(name, sa.Integer(), nullable=False)
            for name in _RESOURCES]


def upgrade():
    op.create_table(
        'quota_limits',
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('resource', sa.String(32), nullable=False),
        sa.Column('hard_limit', sa.Integer(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('project_id', 'resource',
                                name='pk_quota_limits'),
    )
    op.create_table(
        'quota_usages',
        sa.Column('project_id', sa.String(255), nullable=False),
        *_resource_columns(),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('project_id', name='pk_quota_usages'),
    )
    op.create_table(
        'quota_charges',
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        *_resource_columns(),
        sa.PrimaryKeyConstraint('instance_uuid', name='pk_quota_charges'),
        sa.ForeignKeyConstraint(
            ['instance_uuid'], ['instances.uuid'],
            name='fk_quota_charges_instance_uuid_instances'),
    )
    op.create_index('ix_quota_charges_project_id', 'quota_charges',
                    ['project_id'])
    op.create_table(
        'usage_intervals',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('flavor_name', sa.String(255), nullable=False),
        sa.Column('vcpus', sa.Integer(), nullable=False),
        sa.Column('memory_mb', sa.Integer(), nullable=False),
        sa.Column('disk_gb', sa.Integer(), nullable=False),
        sa.Column('started_at', sa.DateTime(), nullable=False),
        sa.Column('ended_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name='pk_usage_intervals'),
        sa.ForeignKeyConstraint(
            ['instance_uuid'], ['instances.uuid'],
            name='fk_usage_intervals_instance_uuid_instances'),
    )
    op.create_index('ix_usage_intervals_instance_uuid', 'usage_intervals',
                    ['instance_uuid'])
    op.create_index('ix_usage_intervals_project_id', 'usage_intervals',
                    ['project_id'])
    op.create_table(
        'services',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('binary', sa.String(64), nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('version', sa.String(64), nullable=True),
        sa.Column('started_at', sa.DateTime(), nullable=True),
        sa.Column('last_seen', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_services'),
        sa.UniqueConstraint('binary', 'host', name='uq_services_binary'),
    )
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    for statement in _BACKFILL:
        op.get_bind().execute(sa.text(statement), {'now': now})


def downgrade():
    op.drop_table('services')
    op.drop_table('usage_intervals')
    op.drop_table('quota_charges')
    op.drop_table('quota_usages')
    op.drop_table('quota_limits')

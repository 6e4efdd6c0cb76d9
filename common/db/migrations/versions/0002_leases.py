"""Leases: leases, their reservations, the hosts and instances those hold,
and their events.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from alembic import op
import sqlalchemy as sa

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def _timestamps():
    return [sa.Column('created_at', sa.DateTime(), nullable=False),
            sa.Column('updated_at', sa.DateTime(), nullable=False)]


def upgrade():
    op.create_table(
        'leases',
        sa.Column('id', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255), nullable=False),
        sa.Column('start_date', sa.DateTime(), nullable=False),
        sa.Column('end_date', sa.DateTime(), nullable=False),
        sa.Column('before_end_date', sa.DateTime(), nullable=True),
        sa.Column('on_end', sa.String(16), nullable=False),
        sa.Column('status', sa.String(32), nullable=False),
        sa.Column('status_reason', sa.Text(), nullable=True),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_leases'),
    )
    op.create_index('ix_leases_project_id', 'leases', ['project_id'])
    op.create_index('ix_leases_status', 'leases', ['status'])

    op.create_table(
        'reservations',
        sa.Column('id', sa.String(36), nullable=False),
        sa.Column('lease_id', sa.String(36), nullable=False),
        sa.Column('resource_type', sa.String(32), nullable=False),
        sa.Column('min_hosts', sa.Integer(), nullable=False),
        sa.Column('max_hosts', sa.Integer(), nullable=False),
        sa.Column('hypervisor_properties', sa.Text(), nullable=False),
        sa.Column('status', sa.String(32), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_reservations'),
        sa.ForeignKeyConstraint(['lease_id'], ['leases.id'],
                                name='fk_reservations_lease_id_leases'),
    )
    op.create_index('ix_reservations_lease_id', 'reservations', ['lease_id'])

    op.create_table(
        'reservation_hosts',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('reservation_id', sa.String(36), nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_reservation_hosts'),
        sa.ForeignKeyConstraint(
            ['reservation_id'], ['reservations.id'],
            name='fk_reservation_hosts_reservation_id_reservations'),
        sa.ForeignKeyConstraint(['host'], ['hosts.name'],
                                name='fk_reservation_hosts_host_hosts'),
    )
    op.create_index('ix_reservation_hosts_reservation_id',
                    'reservation_hosts', ['reservation_id'])
    op.create_index('ix_reservation_hosts_host', 'reservation_hosts',
                    ['host'])

    op.create_table(
        'reservation_instances',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('reservation_id', sa.String(36), nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_reservation_instances'),
        sa.ForeignKeyConstraint(
            ['reservation_id'], ['reservations.id'],
            name='fk_reservation_instances_reservation_id_reservations'),
        sa.ForeignKeyConstraint(
            ['instance_uuid'], ['instances.uuid'],
            name='fk_reservation_instances_instance_uuid_instances'),
    )
    op.create_index('ix_reservation_instances_reservation_id',
                    'reservation_instances', ['reservation_id'])
    op.create_index('ix_reservation_instances_instance_uuid',
                    'reservation_instances', ['instance_uuid'])

    op.create_table(
        'lease_events',
        sa.Column('id', sa.String(36), nullable=False),
        sa.Column('lease_id', sa.String(36), nullable=False),
        sa.Column('event_type', sa.String(32), nullable=False),
        sa.Column('time', sa.DateTime(), nullable=False),
        sa.Column('status', sa.String(32), nullable=False),
        sa.Column('run_id', sa.String(36), nullable=True),
        sa.Column('claimed_at', sa.DateTime(), nullable=True),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('message', sa.Text(), nullable=True),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_lease_events'),
        sa.ForeignKeyConstraint(['lease_id'], ['leases.id'],
                                name='fk_lease_events_lease_id_leases'),
    )
    op.create_index('ix_lease_events_lease_id', 'lease_events', ['lease_id'])
    op.create_index('ix_lease_events_time', 'lease_events', ['time'])
    op.create_index('ix_lease_events_status', 'lease_events', ['status'])


def downgrade():
    op.drop_table('lease_events')
    op.drop_table('reservation_instances')
    op.drop_table('reservation_hosts')
    op.drop_table('reservations')
    op.drop_table('leases')

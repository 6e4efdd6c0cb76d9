"""Networks, ports and fixed addresses (issue 23): ``networks`` an admin
defines, ``ports`` (one network card of an instance, its MAC unique) and
``fixed_ips`` (unique per network by their primary key); an instance's
``requested_networks``.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')


def upgrade():
    op.create_table(
        'networks',
        sa.Column('id', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('bridge', sa.String(255), nullable=True),
        sa.Column('libvirt_network', sa.String(255), nullable=True),
        sa.Column('cidr', sa.String(64), nullable=False),
        sa.Column('gateway', sa.String(64), nullable=True),
        sa.Column('dns', JSON, nullable=False, server_default='[]'),
        sa.Column('allocation_start', sa.String(64), nullable=False),
        sa.Column('allocation_end', sa.String(64), nullable=False),
        sa.Column('ipv6_cidr', sa.String(64), nullable=True),
        sa.Column('ipv6_gateway', sa.String(64), nullable=True),
        sa.Column('mtu', sa.Integer(), nullable=True),
        sa.Column('project_id', sa.String(255), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name='pk_networks'),
        sa.UniqueConstraint('name', name='uq_networks_name'))
    op.create_index('ix_networks_project_id', 'networks', ['project_id'])
    op.create_table(
        'ports',
        sa.Column('id', sa.String(36), nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('network_id', sa.String(36), nullable=False),
        sa.Column('mac', sa.String(17), nullable=False),
        sa.Column('position', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['instance_uuid'], ['instances.uuid'],
                                name='fk_ports_instance_uuid_instances'),
        sa.ForeignKeyConstraint(['network_id'], ['networks.id'],
                                name='fk_ports_network_id_networks'),
        sa.PrimaryKeyConstraint('id', name='pk_ports'),
        sa.UniqueConstraint('mac', name='uq_ports_mac'))
    op.create_index('ix_ports_instance_uuid', 'ports', ['instance_uuid'])
    op.create_index('ix_ports_network_id', 'ports', ['network_id'])
    op.create_table(
        'fixed_ips',
        sa.Column('network_id', sa.String(36), nullable=False),
        sa.Column('address', sa.String(64), nullable=False),
        sa.Column('port_id', sa.String(36), nullable=False),
        sa.Column('version', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['network_id'], ['networks.id'],
                                name='fk_fixed_ips_network_id_networks'),
        sa.ForeignKeyConstraint(['port_id'], ['ports.id'],
                                name='fk_fixed_ips_port_id_ports'),
        sa.PrimaryKeyConstraint('network_id', 'address',
                                name='pk_fixed_ips'))
    op.create_index('ix_fixed_ips_port_id', 'fixed_ips', ['port_id'])
    with op.batch_alter_table('instances') as batch:
        batch.add_column(sa.Column('requested_networks', JSON,
                                   nullable=True))


def downgrade():
    with op.batch_alter_table('instances') as batch:
        batch.drop_column('requested_networks')
    for table in ('fixed_ips', 'ports', 'networks'):
        op.drop_table(table)

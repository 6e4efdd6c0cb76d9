"""Host aggregates and availability zones, and the migrations record
(issue 25): ``aggregates``, ``aggregate_hosts``, ``aggregate_metadata``,
``migrations``; the zone a boot request asked for on ``instances``.

Revision ID: 0015
Revises: 0010
Create Date: 2026-11-27
"""

from alembic import op
import sqlalchemy as sa

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'aggregates',
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name='pk_aggregates'),
        sa.UniqueConstraint('uuid', name='uq_aggregates_uuid'),
        sa.UniqueConstraint('name', name='uq_aggregates_name'))
    op.create_table(
        'aggregate_hosts',
        sa.Column('aggregate_id', sa.Integer(), nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.ForeignKeyConstraint(
            ['aggregate_id'], ['aggregates.id'],
            name='fk_aggregate_hosts_aggregate_id_aggregates'),
        sa.PrimaryKeyConstraint('aggregate_id', 'host',
                                name='pk_aggregate_hosts'))
    op.create_index('ix_aggregate_hosts_host', 'aggregate_hosts', ['host'])
    op.create_table(
        'aggregate_metadata',
        sa.Column('aggregate_id', sa.Integer(), nullable=False),
        sa.Column('key', sa.String(255), nullable=False),
        sa.Column('value', sa.String(255), nullable=False),
        sa.ForeignKeyConstraint(
            ['aggregate_id'], ['aggregates.id'],
            name='fk_aggregate_metadata_aggregate_id_aggregates'),
        sa.PrimaryKeyConstraint('aggregate_id', 'key',
                                name='pk_aggregate_metadata'))
    op.create_index('ix_aggregate_metadata_key_value', 'aggregate_metadata',
                    ['key', 'value'])
    op.create_table(
        'migrations',
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('task_id', sa.String(36), nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('migration_type', sa.String(32), nullable=False),
        sa.Column('source_host', sa.String(255), nullable=True),
        sa.Column('dest_host', sa.String(255), nullable=True),
        sa.Column('old_flavor_name', sa.String(255), nullable=True),
        sa.Column('new_flavor_name', sa.String(255), nullable=True),
        sa.Column('user_id', sa.String(255), nullable=True),
        sa.Column('project_id', sa.String(255), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ['instance_uuid'], ['instances.uuid'],
            name='fk_migrations_instance_uuid_instances'),
        sa.PrimaryKeyConstraint('id', name='pk_migrations'),
        sa.UniqueConstraint('uuid', name='uq_migrations_uuid'),
        sa.UniqueConstraint('task_id', name='uq_migrations_task_id'))
    op.create_index('ix_migrations_instance_uuid', 'migrations',
                    ['instance_uuid'])
    with op.batch_alter_table('instances') as batch:
        batch.add_column(sa.Column('availability_zone', sa.String(255),
                                   nullable=True))


def downgrade():
    with op.batch_alter_table('instances') as batch:
        batch.drop_column('availability_zone')
    op.drop_index('ix_migrations_instance_uuid', table_name='migrations')
    op.drop_table('migrations')
    op.drop_index('ix_aggregate_metadata_key_value',
                  table_name='aggregate_metadata')
    op.drop_table('aggregate_metadata')
    op.drop_index('ix_aggregate_hosts_host', table_name='aggregate_hosts')
    op.drop_table('aggregate_hosts')
    op.drop_table('aggregates')

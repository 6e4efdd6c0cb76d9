"""Flavors in the database (issue 22): ``flavors``, their extra specs and
access lists, the configured flavors once seeded; quota classes; a host's
``forced_down`` and its hypervisor ``number``.

The configured ``[conductor] flavors`` are inserted by the first process
that reads flavors (common/flavors.py), not here: a migration does not read
the services' configuration.

Revision ID: 0010
Revises: 0008
Create Date: 2026-11-26
"""

from alembic import op
import sqlalchemy as sa

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'flavors',
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('flavorid', sa.String(255), nullable=False),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('vcpus', sa.Integer(), nullable=False),
        sa.Column('memory_mb', sa.Integer(), nullable=False),
        sa.Column('disk_gb', sa.Integer(), nullable=False),
        sa.Column('swap', sa.Integer(), nullable=False),
        sa.Column('ephemeral_gb', sa.Integer(), nullable=False),
        sa.Column('rxtx_factor', sa.Float(), nullable=False),
        sa.Column('is_public', sa.Boolean(), nullable=False),
        sa.Column('disabled', sa.Boolean(), nullable=False),
        sa.Column('description', sa.Text(), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.Column('deleted', sa.Integer(), nullable=False,
                  server_default='0'),
        sa.PrimaryKeyConstraint('id', name='pk_flavors'),
        sa.UniqueConstraint('flavorid', 'deleted',
                            name='uq_flavors_flavorid'),
        sa.UniqueConstraint('name', 'deleted', name='uq_flavors_name'))
    for table, column in (('flavor_extra_specs', 'key'),
                          ('flavor_projects', 'project_id')):
        columns = [sa.Column('flavor_id', sa.Integer(), nullable=False),
                   sa.Column(column, sa.String(255), nullable=False)]
        if column == 'key':
            columns.append(sa.Column('value', sa.String(255),
                                     nullable=False))
        op.create_table(
            table, *columns,
            sa.ForeignKeyConstraint(
                ['flavor_id'], ['flavors.id'],
                name='fk_%s_flavor_id_flavors' % table),
            sa.PrimaryKeyConstraint('flavor_id', column, name='pk_' + table))
    op.create_table(
        'flavor_seeds',
        sa.Column('flavorid', sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint('flavorid', name='pk_flavor_seeds'))
    op.create_table(
        'quota_class_limits',
        sa.Column('class_name', sa.String(255), nullable=False),
        sa.Column('resource', sa.String(64), nullable=False),
        sa.Column('hard_limit', sa.Integer(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('class_name', 'resource',
                                name='pk_quota_class_limits'))
    with op.batch_alter_table('hosts') as batch:
        batch.add_column(sa.Column('forced_down', sa.Boolean(),
                                   nullable=False,
                                   server_default=sa.false()))
        batch.add_column(sa.Column('number', sa.Integer(), nullable=True))
        batch.create_unique_constraint('uq_hosts_number', ['number'])
    hosts = sa.table('hosts', sa.column('name'), sa.column('number'))
    conn = op.get_bind()
    names = [r[0] for r in conn.execute(
        sa.select(hosts.c.name).order_by(hosts.c.name))]
    for number, name in enumerate(names, start=1):
        conn.execute(sa.update(hosts).where(hosts.c.name == name).values(
            number=number))


def downgrade():
    with op.batch_alter_table('hosts') as batch:
        batch.drop_constraint('uq_hosts_number', type_='unique')
        batch.drop_column('number')
        batch.drop_column('forced_down')
    for table in ('quota_class_limits', 'flavor_seeds', 'flavor_projects',
                  'flavor_extra_specs', 'flavors'):
        op.drop_table(table)

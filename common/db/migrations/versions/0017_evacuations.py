"""Evacuations (issue 25): when the source host of an evacuation, back
again, no longer had the evacuated domain (``migrations.cleaned_at``), and
the index a returning host's report looks its evacuations up with.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27
"""

from alembic import op
import sqlalchemy as sa

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('migrations') as batch:
        batch.add_column(sa.Column('cleaned_at', sa.DateTime(),
                                   nullable=True))
    op.create_index('ix_migrations_source_host_type', 'migrations',
                    ['source_host', 'migration_type'])


def downgrade():
    op.drop_index('ix_migrations_source_host_type', table_name='migrations')
    with op.batch_alter_table('migrations') as batch:
        batch.drop_column('cleaned_at')

"""instances: Nova's ``accessIPv4``/``accessIPv6`` (issue 22), two
addresses the user sets on create, update and rebuild and reads back in
the server's views. Tristate does not act on them (neither does Nova):
they are data the user keeps on the server.

Existing servers get none (shown as ``""``).

Revision ID: 0014
Revises: 0010
Create Date: 2026-11-27
"""

from alembic import op
import sqlalchemy as sa

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None

_COLUMNS = ('access_ip_v4', 'access_ip_v6')


def upgrade():
    # ADD COLUMN, not a batch (see 0009: SQLite's batch copies the table).
    for name in _COLUMNS:
        op.add_column('instances', sa.Column(name, sa.String(39),
                                             nullable=True))


def downgrade():
    with op.batch_alter_table('instances') as batch:
        for name in _COLUMNS:
            batch.drop_column(name)

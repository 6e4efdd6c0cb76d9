"""instances: Nova's ``hostname`` (2.90, an FQDN from 2.94) and
``OS-DCF:diskConfig`` (``auto_disk_config``) (issue 22).

``hostname`` is the one the user gave on create, update or rebuild; a
server without one (every existing server) keeps the hostname derived from
its name (common/hostnames.py). ``auto_disk_config`` is true for AUTO,
false for MANUAL, null for a server made before it was kept (shown as
MANUAL, what Tristate answered until then).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27
"""

from alembic import op
import sqlalchemy as sa

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade():
    # ADD COLUMN, not a batch (see 0009: SQLite's batch copies the table).
    op.add_column('instances', sa.Column('hostname', sa.String(255),
                                         nullable=True))
    op.add_column('instances', sa.Column('auto_disk_config', sa.Boolean(),
                                         nullable=True))


def downgrade():
    with op.batch_alter_table('instances') as batch:
        batch.drop_column('auto_disk_config')
        batch.drop_column('hostname')

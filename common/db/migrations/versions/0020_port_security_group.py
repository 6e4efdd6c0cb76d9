"""ports: the security group of each port (issue 22).

* ``security_group``: ``default`` (the one group Tristate has: all traffic
  allowed) or null (in no group: as Neutron's port with port security and
  no groups, all traffic dropped; the agent sets the guest's link down).

Existing ports are in ``default``, as they were built.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27
"""

from alembic import op
import sqlalchemy as sa

revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade():
    # ADD COLUMN, not a batch (see 0009: SQLite's batch copies the table).
    op.add_column('ports', sa.Column('security_group', sa.String(255),
                                     nullable=True,
                                     server_default='default'))


def downgrade():
    with op.batch_alter_table('ports') as batch:
        batch.drop_column('security_group')

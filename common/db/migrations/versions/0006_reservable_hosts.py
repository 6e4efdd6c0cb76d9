"""The leases' reservable pool: hosts.reservable (Blazar's os-hosts).

Only a host an admin has put into the pool can be leased. Existing hosts
start outside it: leases already made keep the hosts they hold; an admin
adds the hosts meant for leases (``tristate lease host add NAME``).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""

from alembic import op
import sqlalchemy as sa

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('hosts', sa.Column('reservable', sa.Boolean(),
                                     nullable=False,
                                     server_default=sa.false()))


def downgrade():
    with op.batch_alter_table('hosts') as batch:
        batch.drop_column('reservable')

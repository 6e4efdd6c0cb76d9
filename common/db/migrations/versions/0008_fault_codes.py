"""instance_actions.fault_code: the HTTP-style code of a failed task's
fault (issue 21: a missing or corrupt image is the user's mistake, a 400,
not the service's 500). NULL: the fault is the service's (500).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26
"""

from alembic import op
import sqlalchemy as sa

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('instance_actions',
                  sa.Column('fault_code', sa.Integer(), nullable=True))


def downgrade():
    with op.batch_alter_table('instance_actions') as batch:
        batch.drop_column('fault_code')

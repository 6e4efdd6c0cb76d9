"""stray_domains: domains reported where their instance is not placed, and
the destinations of preempted moves told to destroy their copy (issue 19).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26
"""

from alembic import op
import sqlalchemy as sa

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'stray_domains',
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('power_state', sa.Integer(), nullable=True),
        sa.Column('power_seq', sa.BigInteger(), nullable=False),
        sa.Column('reported_at', sa.DateTime(), nullable=True),
        sa.Column('doomed', sa.Boolean(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('host', 'instance_uuid',
                                name='pk_stray_domains'),
    )


def downgrade():
    op.drop_table('stray_domains')

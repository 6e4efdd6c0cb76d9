"""Console tokens (issue 24): ``console_tokens``, one row per console URL
handed out, keyed by the token's SHA-256 digest.

Revision ID: 0013
Revises: 0010
Create Date: 2026-11-27
"""

from alembic import op
import sqlalchemy as sa

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'console_tokens',
        sa.Column('token_hash', sa.String(64), nullable=False),
        sa.Column('instance_uuid', sa.String(36), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('console_type', sa.String(32), nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('address', sa.String(255), nullable=False),
        sa.Column('port', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('expires_at', sa.DateTime(), nullable=False),
        sa.Column('used_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('token_hash', name='pk_console_tokens'))
    op.create_index('ix_console_tokens_instance_uuid', 'console_tokens',
                    ['instance_uuid'])
    op.create_index('ix_console_tokens_expires_at', 'console_tokens',
                    ['expires_at'])


def downgrade():
    op.drop_index('ix_console_tokens_expires_at', 'console_tokens')
    op.drop_index('ix_console_tokens_instance_uuid', 'console_tokens')
    op.drop_table('console_tokens')

"""Key pairs and guest access (issue 24): the ``key_pairs`` table (a
user's public keys, unique by name per user), and on ``instances`` the
key pair named at create (``key_name``) with its public key
(``key_data``), the ``user_data`` (base64 text) and ``config_drive``.

Existing servers have no key, no user data and no config drive.

Revision ID: 0012
Revises: 0010
Create Date: 2026-11-27
"""

from alembic import op
import sqlalchemy as sa

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None

_COLUMNS = ('key_name', 'key_data', 'user_data', 'config_drive')


def upgrade():
    op.create_table(
        'key_pairs',
        sa.Column('id', sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255), nullable=False),
        sa.Column('fingerprint', sa.String(255), nullable=False),
        sa.Column('public_key', sa.Text(), nullable=False),
        sa.Column('type', sa.String(4), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_key_pairs'),
        sa.UniqueConstraint('user_id', 'name', name='uq_key_pairs_user_id'))
    # ADD COLUMN, not a batch (see 0009): SQLite's batch copies the table.
    for column in (
            sa.Column('key_name', sa.String(255), nullable=True),
            sa.Column('key_data', sa.Text(), nullable=True),
            sa.Column('user_data', sa.Text(), nullable=True),
            sa.Column('config_drive', sa.Boolean(), nullable=False,
                      server_default=sa.false())):
        op.add_column('instances', column)


def downgrade():
    with op.batch_alter_table('instances') as batch:
        for name in _COLUMNS:
            batch.drop_column(name)
    op.drop_table('key_pairs')

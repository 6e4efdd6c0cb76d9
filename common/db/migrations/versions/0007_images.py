"""images, image_members, service_keys: the image catalogue (issue 21).

Image records and their sharing live in Tristate's database (the API tier
and the conductor read and write them; agents never do); ``service_keys``
holds secrets the services share through the database, such as the HMAC
key of image grants, each created on first use.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26
"""

from alembic import op
import sqlalchemy as sa

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'images',
        sa.Column('id', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=True),
        sa.Column('status', sa.String(32), nullable=False),
        sa.Column('visibility', sa.String(32), nullable=False),
        sa.Column('owner', sa.String(255), nullable=True),
        sa.Column('protected', sa.Boolean(), nullable=False),
        sa.Column('os_hidden', sa.Boolean(), nullable=False),
        sa.Column('disk_format', sa.String(32), nullable=True),
        sa.Column('container_format', sa.String(32), nullable=True),
        sa.Column('size', sa.BigInteger(), nullable=True),
        sa.Column('virtual_size', sa.BigInteger(), nullable=True),
        sa.Column('checksum', sa.String(32), nullable=True),
        sa.Column('os_hash_algo', sa.String(64), nullable=True),
        sa.Column('os_hash_value', sa.String(128), nullable=True),
        sa.Column('min_disk', sa.Integer(), nullable=False),
        sa.Column('min_ram', sa.Integer(), nullable=False),
        sa.Column('location', sa.Text(), nullable=True),
        sa.Column('properties', sa.JSON(), nullable=False),
        sa.Column('tags', sa.JSON(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.Column('deleted_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name='pk_images'),
    )
    op.create_index('ix_images_owner', 'images', ['owner'])
    op.create_index('ix_images_status', 'images', ['status'])
    op.create_table(
        'image_members',
        sa.Column('image_id', sa.String(36), nullable=False),
        sa.Column('member', sa.String(255), nullable=False),
        sa.Column('status', sa.String(32), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['image_id'], ['images.id'],
                                name='fk_image_members_image_id_images'),
        sa.PrimaryKeyConstraint('image_id', 'member',
                                name='pk_image_members'),
    )
    op.create_index('ix_image_members_member', 'image_members', ['member'])
    op.create_table(
        'service_keys',
        sa.Column('name', sa.String(64), nullable=False),
        sa.Column('secret', sa.String(255), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('name', name='pk_service_keys'),
    )


def downgrade():
    op.drop_table('service_keys')
    op.drop_index('ix_image_members_member', table_name='image_members')
    op.drop_table('image_members')
    op.drop_index('ix_images_status', table_name='images')
    op.drop_index('ix_images_owner', table_name='images')
    op.drop_table('images')

"""The Alembic migrations build exactly the schema the models declare."""

from alembic import autogenerate
from alembic import migration as alembic_migration

from common.db import migration
from common.db import models


def test_migrations_match_the_models(db):
    with db.engine.connect() as conn:
        context = alembic_migration.MigrationContext.configure(
            conn, opts={'compare_type': True, 'compare_server_default': True})
        diff = autogenerate.compare_metadata(context, models.Base.metadata)
    assert diff == []


def test_head_is_current_after_upgrade(db):
    assert migration.head_revision() is not None
    assert migration.current_revision(db) == migration.head_revision()


def test_upgrade_twice_is_harmless(db):
    migration.upgrade(db)
    assert migration.current_revision(db) == migration.head_revision()

"""Schema migrations with Alembic: ``tristate-manage db sync`` and the tests.

The Alembic environment lives in ``common/db/migrations``; no alembic.ini is
needed, the configuration is built here and handed the connection to use.
"""

import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration
from alembic import script

MIGRATIONS = os.path.join(os.path.dirname(__file__), 'migrations')


def _config(connection=None):
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location', MIGRATIONS)
    cfg.attributes['connection'] = connection
    return cfg


def upgrade(database, revision='head'):
    """Bring the schema of ``database`` (a :class:`Database`) to ``revision``."""
    with database.engine.begin() as conn:
        command.upgrade(_config(conn), revision)


def current_revision(database):
    with database.engine.connect() as conn:
        return migration.MigrationContext.configure(conn).get_current_revision()


def head_revision():
    return script.ScriptDirectory.from_config(_config()).get_current_head()


def downgrade(database, revision):
    """Take the schema of ``database`` back to ``revision`` ('base': none)."""
    with database.engine.begin() as conn:
        command.downgrade(_config(conn), revision)


def revisions():
    """Every revision, newest first, each with the one before it (None for
    the first): ``[(revision, down_revision), ...]``."""
    scripts = script.ScriptDirectory.from_config(_config())
    return [(rev.revision, rev.down_revision)
            for rev in scripts.walk_revisions()]

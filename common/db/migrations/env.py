"""Alembic environment: runs on the connection :mod:`common.db.migration` hands over."""

from alembic import context

from common.db import models

config = context.config
connection = config.attributes['connection']
context.configure(connection=connection,
                  target_metadata=models.Base.metadata,
                  render_as_batch=connection.dialect.name == 'sqlite',
                  compare_type=True)
with context.begin_transaction():
    context.run_migrations()

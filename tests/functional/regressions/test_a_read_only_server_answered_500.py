"""A write that met a read-only PostgreSQL server failed with a 500, for good.

During a failover a client can reach a server that only reads: a hot
standby, when the URL names one host behind an address or a proxy that
moves, or lacks ``target_session_attrs=read-write``. PostgreSQL refuses the
write with SQLSTATE 25006 ("cannot execute INSERT in a read-only
transaction"). :mod:`common.db.engine` took that for a bug, not for an
unavailable database: the request failed at once with an unexpected error
(the API's 500) instead of being retried and answered 503, and the pooled
session was kept: on a standby that is not the one promoted (two standbys,
another one chosen), or on a server read-only by its settings, that
connection refused every write it was given from then on. Found while
writing the primary/standby failover scenario of issue 26 and its pgBouncer
advice (the failover test itself, whose multi-host URL passes standbys
over, never meets it). Fixed: a read-only refusal is transient (retried,
then :class:`~common.exception.DBUnavailable`: 503) and drops the
connection from the pool as a lost one is, so the next attempt connects
again and finds the server that takes writes.

Here the server turns read-only as a standby is to a client: its sessions
are cut and new ones may only read (``default_transaction_read_only``),
then, "promoted", it takes writes again (for new sessions only: an old one
would refuse still). Both ways a statement runs are checked: SQLAlchemy
Core and :mod:`common.db.prepared`.
"""

import uuid as uuidlib

import pytest
import sqlalchemy as sa

from common import exception
from common.db import engine
from common.db import prepared

pytestmark = pytest.mark.postgresql

TABLE = sa.Table('scratch', sa.MetaData(), sa.Column('n', sa.Integer))
PREPARED = prepared.Prepared(sa.insert(TABLE).values(n=prepared.bind(
    'n', sa.Integer)))


def _core(conn, n):
    conn.execute(sa.insert(TABLE).values(n=n))


def _prepared(conn, n):
    PREPARED.run(conn, n=n)


def _read_only(admin, name, on):
    """New sessions of database ``name`` may only read (``on``) or write
    again; with ``on``, every session it has now is cut."""
    with admin.connect() as conn:
        conn.exec_driver_sql('ALTER DATABASE %s SET default_transaction_'
                             'read_only = %s' % (name, 'on' if on else 'off'))
        if on:
            conn.exec_driver_sql(
                'SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
                'WHERE datname = %(name)s', {'name': name})


def test_a_write_on_a_read_only_server_is_unavailable_then_retried(
        pg_admin):
    name = 'tristate_test_%s' % uuidlib.uuid4().hex
    with pg_admin.connect() as conn:
        conn.exec_driver_sql('CREATE DATABASE %s' % name)
    database = engine.Database(pg_admin.url.set(database=name),
                               max_retries=3, retry_interval=0.01)
    try:
        database.transaction(TABLE.create)
        written = []
        for n, write in enumerate((_core, _prepared, _core, _prepared)):
            database.transaction(write, n)      # on a pooled connection
            written.append(n)
            _read_only(pg_admin, name, True)
            with pytest.raises(exception.DBUnavailable) as err:
                database.transaction(write, -1)
            assert 'read-only transaction' in str(err.value)
            _read_only(pg_admin, name, False)       # "promoted"
        assert database.transaction(lambda conn: conn.execute(
            sa.select(TABLE.c.n).order_by(TABLE.c.n)).scalars().all(),
            readonly=True) == written
    finally:
        database.dispose()
        with pg_admin.connect() as conn:
            conn.exec_driver_sql('DROP DATABASE %s WITH (FORCE)' % name)

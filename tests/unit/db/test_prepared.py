"""Prepared statements store and read what SQLAlchemy Core would, and fail
as it would (on SQLite and PostgreSQL)."""

import datetime

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from common import exception
from common.db import models
from common.db import prepared
from common.db.prepared import bind
from tests.conftest import pg_database

UI = models.UsageInterval.__table__
I = models.Instance.__table__          # noqa: E741

_COLUMNS = ('instance_uuid', 'project_id', 'flavor_name', 'vcpus',
            'memory_mb', 'disk_gb', 'started_at', 'ended_at')
INSERT = prepared.Prepared(sa.insert(UI).values(
    {c: bind(c, UI.c[c].type) for c in _COLUMNS}))
BY_INSTANCE = prepared.Prepared(sa.select(UI).where(
    UI.c.instance_uuid == bind('uuid')).order_by(UI.c.id))
CLOSE = prepared.Prepared(sa.update(UI).where(
    UI.c.instance_uuid == bind('uuid'), UI.c.ended_at.is_(None)).values(
        ended_at=bind('now', UI.c.ended_at.type)).returning(UI.c.id,
                                                            UI.c.ended_at))


def _row(uuid, started, **extra):
    values = dict(instance_uuid=uuid, project_id='p', flavor_name='tiny',
                  vcpus=1, memory_mb=64, disk_gb=1, started_at=started,
                  ended_at=None)
    values.update(extra)
    return values


def _instance(conn, uuid):
    now = datetime.datetime(2026, 1, 1)
    conn.execute(sa.insert(I).values(
        uuid=uuid, name='n', project_id='p', user_id='u', flavor_name='tiny',
        vcpus=1, memory_mb=64, disk_gb=1, image_ref='img', vm_state='active',
        user_shutdown_policy='stop', crash_policy='restart', created_at=now,
        updated_at=now))


@pytest.mark.parametrize('started', [
    datetime.datetime(2026, 11, 23, 4, 5, 6),            # no microseconds
    datetime.datetime(2026, 11, 23, 4, 5, 6, 789),
], ids=['whole second', 'microseconds'])
def test_values_are_stored_and_read_as_core_does(db, started):
    """A row written by a prepared statement reads back the same through
    Core and through the prepared read, and compares in SQL like a row
    written by Core (SQLite keeps datetimes as text: same text)."""
    def txn(conn):
        _instance(conn, 'a')
        _instance(conn, 'b')
        INSERT.run(conn, **_row('a', started))
        conn.execute(sa.insert(UI).values(**_row('b', started)))
        core = [dict(r._mapping) for r in conn.execute(
            sa.select(UI).order_by(UI.c.instance_uuid))]
        mine = BY_INSTANCE.run(conn, uuid='a').rows + BY_INSTANCE.run(
            conn, uuid='b').rows
        same = conn.execute(sa.select(sa.func.count()).where(
            UI.c.started_at == started)).scalar()
        return core, mine, same
    core, mine, same = db.transaction(txn)
    assert mine == core
    assert mine[0]['started_at'] == started
    assert isinstance(mine[0]['vcpus'], int)
    assert same == 2


def test_rowcount_and_returning(db):
    now = datetime.datetime(2026, 11, 23, 12, 0, 0)

    def txn(conn):
        _instance(conn, 'a')
        INSERT.run(conn, **_row('a', now))
        INSERT.run(conn, **_row('a', now, ended_at=now))
        first = CLOSE.run(conn, uuid='a', now=now)
        again = CLOSE.run(conn, uuid='a', now=now)
        return first, again
    first, again = db.transaction(txn)
    assert first.rowcount == 1 and first.first()['ended_at'] == now
    assert set(first.first()) == {'id', 'ended_at'}
    assert again.rowcount == 0 and again.first() is None
    assert again.scalar() is None


def test_a_driver_error_is_raised_as_sqlalchemy_raises_it(db):
    """A constraint violation is SQLAlchemy's IntegrityError (so the
    engine's retry and the callers' handlers see what they saw before),
    and the transaction is rolled back."""
    def txn(conn):
        _instance(conn, 'a')
        INSERT.run(conn, **_row('a', datetime.datetime(2026, 1, 1)))
        INSERT.run(conn, **_row('nope', datetime.datetime(2026, 1, 1)))
    with pytest.raises(sa_exc.IntegrityError):
        db.transaction(txn)
    count = db.transaction(lambda conn: conn.execute(
        sa.select(sa.func.count()).select_from(UI)).scalar(), readonly=True)
    assert count == 0


def test_a_missing_value_is_named():
    with pytest.raises(TypeError, match='started_at'):
        def txn(conn):
            row = _row('a', None)
            del row['started_at']
            INSERT.run(conn, **row)
        from common.db import engine
        engine.Database('sqlite://').transaction(txn)


def test_statements_that_cannot_be_prepared_are_refused_when_compiled(db):
    expanding = prepared.Prepared(sa.select(UI).where(
        UI.c.instance_uuid.in_(['a', 'b'])))
    untyped = prepared.Prepared(sa.select(UI).where(
        UI.c.vcpus > sa.func.abs(bind('n'))))
    unnamed = prepared.Prepared(sa.select(UI).where(
        UI.c.instance_uuid == sa.bindparam('x')))
    for statement, why in [(expanding, 'expanding IN'),
                           (untyped, 'no type'), (unnamed, 'name it')]:
        with pytest.raises(ValueError, match=why):
            db.transaction(lambda conn, s=statement: s.run(conn, n=1, x='a'))


def test_cached_keeps_one_statement_per_key():
    built = []

    def build():
        built.append(1)
        return sa.select(UI.c.id).where(UI.c.id == bind('id'))
    first = prepared.cached(('test_prepared', 'k'), build)
    assert prepared.cached(('test_prepared', 'k'), build) is first
    assert len(built) == 1


@pytest.mark.postgresql
def test_a_lost_connection_is_transient_and_invalidated(pg_admin):
    """On PostgreSQL a backend killed under a prepared statement is the
    retried kind of error, and the pool drops that connection (the retry
    gets a new one and succeeds)."""
    with pg_database(pg_admin) as db:
        _lose_a_connection(db)


def _lose_a_connection(db):
    attempts = []

    def txn(conn):
        attempts.append(conn.connection.dbapi_connection)
        if len(attempts) == 1:
            with db.engine.connect() as killer:
                killer.exec_driver_sql(
                    'SELECT pg_terminate_backend(%d)'
                    % conn.connection.dbapi_connection.get_backend_pid())
        return BY_INSTANCE.run(conn, uuid='x').rows
    assert db.transaction(txn) == []
    assert len(attempts) == 2 and attempts[0] is not attempts[1]
    assert attempts[0].closed


@pytest.mark.postgresql
@pytest.mark.parametrize('through', ['prepared', 'core'])
def test_after_a_server_restart_one_retry_gets_a_live_connection(pg_admin,
                                                                 through):
    """Every pooled connection dies at once (as when PostgreSQL restarts;
    nothing checks a connection before use): the first statement on one
    fails, and that recycles them all, so the retry needs one attempt,
    whether the statement was prepared or plain Core."""
    with pg_database(pg_admin) as db:
        # four connections in the pool, all idle
        held = [db.engine.connect() for _ in range(4)]
        pids = [c.connection.dbapi_connection.get_backend_pid() for c in held]
        for conn in held:
            conn.close()
        with pg_admin.connect() as killer:
            for pid in pids:
                killer.exec_driver_sql('SELECT pg_terminate_backend(%d)' % pid)
        db.max_retries = 2
        attempts = []

        def txn(conn):
            attempts.append(conn.connection.dbapi_connection.get_backend_pid())
            if through == 'core':
                return conn.execute(sa.select(UI).where(
                    UI.c.instance_uuid == 'x')).all()
            return BY_INSTANCE.run(conn, uuid='x').rows
        assert db.transaction(txn) == []
        assert len(attempts) == 2 and attempts[1] not in pids


def test_an_error_that_is_not_transient_is_raised_at_once(db):
    """A statement the database refuses (no such column) is not retried:
    one attempt, SQLAlchemy's error, not DBUnavailable."""
    bad = prepared.Prepared(sa.select(sa.literal_column(
        'nothing_here', sa.Integer)).select_from(UI))
    attempts = []

    def txn(conn):
        attempts.append(1)
        return bad.run(conn)
    with pytest.raises(sa_exc.DBAPIError) as err:
        db.transaction(txn)
    assert not isinstance(err.value, exception.DBUnavailable)
    assert len(attempts) == 1

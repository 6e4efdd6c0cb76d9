"""Transient errors are retried, a bounded number of times, then reported."""

import sqlite3
import threading

import pytest
from sqlalchemy import exc as sa_exc

from common import exception
from common.db import engine


class FakePGError(Exception):
    """Looks like a psycopg2 error: carries a SQLSTATE in ``pgcode``."""

    def __init__(self, pgcode, text='pg error'):
        super().__init__(text)
        self.pgcode = pgcode


def _operational(orig):
    return sa_exc.OperationalError('UPDATE instances ...', {}, orig)


@pytest.mark.parametrize('err,transient', [
    (_operational(sqlite3.OperationalError('database is locked')), True),
    (_operational(sqlite3.OperationalError('database table is locked')), True),
    (_operational(sqlite3.OperationalError('no such table: instances')), False),
    (_operational(FakePGError('40P01', 'deadlock detected')), True),
    (_operational(FakePGError('40001', 'could not serialize')), True),
    (_operational(FakePGError('08006', 'connection failure')), True),
    (sa_exc.IntegrityError('INSERT', {}, FakePGError('23505', 'duplicate')),
     False),
    (sa_exc.IntegrityError('INSERT', {}, sqlite3.IntegrityError('UNIQUE')),
     False),
    (ValueError('database is locked'), False),
], ids=lambda v: str(v)[:40] if not isinstance(v, bool) else str(v))
def test_is_transient(err, transient):
    assert engine.is_transient(err) is transient


def _database():
    return engine.Database('sqlite://', max_retries=3, retry_interval=0)


def test_transient_errors_are_retried():
    calls = []

    def txn(conn):
        calls.append(conn)
        if len(calls) < 3:
            raise _operational(sqlite3.OperationalError('database is locked'))
        return conn.exec_driver_sql('SELECT 42').scalar()

    assert _database().transaction(txn) == 42
    assert len(calls) == 3


def test_retries_are_bounded():
    calls = []

    def txn(conn):
        calls.append(conn)
        raise _operational(sqlite3.OperationalError('database is locked'))

    with pytest.raises(exception.DBUnavailable) as err:
        _database().transaction(txn)
    assert len(calls) == 3
    assert err.value.kwargs['attempts'] == 3
    assert '3 attempts' in str(err.value)
    assert 'database is locked' in str(err.value)
    assert err.value.code == 503


def test_each_retry_is_logged_and_waits_exponentially(monkeypatch, caplog):
    """Attempts are numbered from 1 in the log, and the waits between them
    double from retry_interval up to max_retry_interval."""
    slept = []
    monkeypatch.setattr(engine.time, 'sleep', slept.append)
    monkeypatch.setattr(engine.tenacity.nap.time, 'sleep', slept.append)
    database = engine.Database('sqlite://', max_retries=5, retry_interval=0.1,
                               max_retry_interval=0.3)

    def txn(conn):
        raise _operational(sqlite3.OperationalError('database is locked'))
    with pytest.raises(exception.DBUnavailable) as err:
        database.transaction(txn)
    assert err.value.kwargs['attempts'] == 5
    assert slept == pytest.approx([0.1, 0.2, 0.3, 0.3])
    logged = [r.getMessage() for r in caplog.records
              if 'Transient database error' in r.getMessage()]
    assert [m.split(',')[1].split(':')[0] for m in logged] == [
        ' attempt 1', ' attempt 2', ' attempt 3', ' attempt 4']


def test_one_attempt_only_is_reported_unavailable():
    database = engine.Database('sqlite://', max_retries=1, retry_interval=0)

    def txn(conn):
        raise _operational(sqlite3.OperationalError('database is locked'))
    with pytest.raises(exception.DBUnavailable) as err:
        database.transaction(txn)
    assert err.value.kwargs['attempts'] == 1


def test_other_errors_are_not_retried():
    calls = []

    def txn(conn):
        calls.append(conn)
        raise _operational(sqlite3.OperationalError('no such table: x'))

    with pytest.raises(sa_exc.OperationalError):
        _database().transaction(txn)
    assert len(calls) == 1


def test_a_failed_attempt_is_rolled_back():
    database = _database()
    database.transaction(lambda conn: conn.exec_driver_sql(
        'CREATE TABLE t (x INTEGER)'))
    calls = []

    def txn(conn):
        calls.append(conn)
        conn.exec_driver_sql('INSERT INTO t VALUES (1)')
        if len(calls) == 1:
            raise _operational(sqlite3.OperationalError('database is locked'))

    database.transaction(txn)
    count = database.transaction(lambda conn: conn.exec_driver_sql(
        'SELECT count(*) FROM t').scalar(), readonly=True)
    assert count == 1


def test_default_sqlite_url_creates_the_state_dir(tmp_path):
    state_dir = tmp_path / 'state'
    url = engine.default_sqlite_url(str(state_dir))
    assert state_dir.is_dir()
    assert url == 'sqlite:///%s' % (state_dir / 'tristate.sqlite')


def _lose_the_commit(database, lost):
    """Make the next COMMIT of ``database`` fail as a lost connection does
    (psycopg2's error, the connection invalidated), ``lost`` times."""
    from sqlalchemy import event

    left = [lost]

    @event.listens_for(database.engine, 'commit')
    def _commit(conn):
        if left[0] > 0:
            left[0] -= 1
            raise sa_exc.OperationalError(
                'COMMIT', {}, FakePGError('08006', 'server closed the '
                                          'connection unexpectedly'),
                connection_invalidated=True)


def test_a_commit_that_lost_its_connection_is_not_run_again(db):
    """On a server database the change may have been committed before the
    connection went: the transaction is not run a second time (that could
    apply it twice); the caller hears the outcome is unknown. SQLite's
    failed commit committed nothing: retried there."""
    db.transaction(lambda conn: conn.exec_driver_sql(
        'CREATE TABLE lost_commit (x INTEGER)'))
    _lose_the_commit(db, lost=1)
    calls = []

    def txn(conn):
        calls.append(conn)
        conn.exec_driver_sql('INSERT INTO lost_commit VALUES (1)')

    if db.is_sqlite:
        db.transaction(txn)
        assert len(calls) == 2
    else:
        with pytest.raises(exception.DBUnavailable) as err:
            db.transaction(txn)
        assert len(calls) == 1
        assert 'may or may not have been made' in str(err.value)
        assert err.value.code == 503
    # The database answers again; the row is there once on SQLite, and not
    # at all on PostgreSQL (here the COMMIT never reached the server).
    assert db.transaction(lambda conn: conn.exec_driver_sql(
        'SELECT count(*) FROM lost_commit').scalar(), readonly=True) == (
            1 if db.is_sqlite else 0)


def test_a_begin_that_finds_the_file_locked_is_retried(tmp_path):
    """Another process (here: a raw connection) holds SQLite's write lock:
    BEGIN IMMEDIATE, which Tristate sends to the driver itself, fails busy
    and is retried like any transient error, then succeeds once the lock
    is given back; while it is held, the error reported names it."""
    url = 'sqlite:///%s' % (tmp_path / 'locked.sqlite')
    holder = sqlite3.connect(str(tmp_path / 'locked.sqlite'),
                             isolation_level=None, check_same_thread=False)
    holder.execute('PRAGMA journal_mode=WAL')
    holder.execute('CREATE TABLE t (x INTEGER)')
    holder.execute('BEGIN IMMEDIATE')
    db = engine.Database(url, sqlite_busy_timeout=0.01, max_retries=2,
                         retry_interval=0)
    with pytest.raises(exception.DBUnavailable) as err:
        db.transaction(lambda conn: conn.exec_driver_sql(
            'INSERT INTO t VALUES (1)'))
    assert err.value.kwargs['attempts'] == 2
    assert 'database is locked' in str(err.value)

    patient = engine.Database(url, sqlite_busy_timeout=0.01, max_retries=200,
                              retry_interval=0.01, max_retry_interval=0.01)
    release = threading.Timer(0.2, holder.execute, args=('COMMIT',))
    release.start()
    patient.transaction(lambda conn: conn.exec_driver_sql(
        'INSERT INTO t VALUES (2)'))
    release.join()
    assert holder.execute('SELECT x FROM t').fetchall() == [(2,)]
    db.dispose()
    patient.dispose()
    holder.close()


def test_sqlite_reuses_the_connection_whose_pages_are_cached(tmp_path):
    """In WAL mode a connection drops its page cache when another one
    committed since its last transaction: after a moment of concurrency
    left several connections in the pool, transactions one after another
    keep taking the one used last (its cache still valid), not each
    pooled connection in turn, which read every page from the file
    again."""
    db = engine.Database('sqlite:///%s' % (tmp_path / 'pool.sqlite'))
    db.transaction(lambda conn: conn.exec_driver_sql(
        'CREATE TABLE t (x INTEGER)'))
    inside = threading.Barrier(3)

    def held(conn):     # three connections checked out at once
        inside.wait(timeout=10)

    readers = [threading.Thread(target=db.transaction, args=(held,),
                                kwargs={'readonly': True}) for _ in range(3)]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join(timeout=20)
    assert db.engine.pool.checkedin() >= 2

    def write(conn):
        conn.exec_driver_sql('INSERT INTO t VALUES (1)')
        return conn.connection.dbapi_connection
    used = {id(db.transaction(write)) for _ in range(5)}
    assert len(used) == 1
    db.dispose()

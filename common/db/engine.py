"""Engines, transactions and the bounded retry of transient errors.

A :class:`Database` owns one SQLAlchemy engine. Every unit of work is a
function of a connection run by :meth:`Database.transaction`, which retries
the *whole* transaction (with tenacity, exponential backoff, bounded) when it
fails for a transient reason: a deadlock or serialization failure, a lost
connection, a server that only reads (a standby during a failover: its
connection is dropped too), SQLite's "database is locked". After the bound
the caller gets :class:`~common.exception.DBUnavailable` naming the attempts
and the cause.

SQLite runs in WAL mode; write transactions start with ``BEGIN IMMEDIATE`` so
that two writers queue for the lock instead of failing half-way through.
"""

import contextlib
import logging
import os
import sqlite3
import threading
import time

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
import tenacity

from common import exception
from common import metrics
from common.db import prepared

LOG = logging.getLogger(__name__)

# PostgreSQL SQLSTATEs worth another attempt: serialization failure,
# deadlock, admin shutdown, crash shutdown, cannot connect now.
_PG_TRANSIENT = {'40001', '40P01', '57P01', '57P02', '57P03'}


def is_transient(err):
    """True if ``err`` may succeed when the transaction is tried again."""
    if not isinstance(err, sa_exc.DBAPIError):
        return False
    if err.connection_invalidated:
        return True
    orig = err.orig
    code = getattr(orig, 'pgcode', None)
    if code is not None:
        return code in _PG_TRANSIENT or code.startswith('08')
    if not isinstance(err, sa_exc.OperationalError):
        return False
    text = str(orig).lower()
    if 'locked' in text or 'busy' in text:      # SQLite
        return True
    # psycopg2 reports a lost or refused connection with no SQLSTATE.
    return type(orig).__module__.startswith('psycopg')


def _read_only_is_lost(context):
    """A write refused by a server that only reads (a standby, during a
    failover) is handled as a lost connection: retried on a new one, the
    pool's older connections recycled (see :func:`prepared.read_only`)."""
    if prepared.read_only(context.original_exception):
        context.is_disconnect = True


def default_sqlite_url(state_dir):
    os.makedirs(state_dir, exist_ok=True)
    return 'sqlite:///%s' % os.path.join(state_dir, 'tristate.sqlite')


class Database:
    """One engine and the retry policy around its transactions."""

    def __init__(self, url, *, sqlite_synchronous='NORMAL',
                 sqlite_busy_timeout=5.0, max_retries=5, retry_interval=0.05,
                 max_retry_interval=1.0, pool_size=10, max_overflow=20,
                 pool_timeout=10):
        self.url = sa.engine.make_url(url)
        self.max_retries = max_retries
        self.retry_interval = retry_interval
        self.max_retry_interval = max_retry_interval
        if self.is_sqlite:
            self.engine = self._sqlite_engine(sqlite_synchronous,
                                              sqlite_busy_timeout)
            # SQLite has one writer at a time. Writers of this process wait
            # their turn on a lock, woken as soon as it is free, instead of
            # in SQLite's busy handler, which sleeps 1, 2, 5... up to 100
            # ms between tries. (Other processes still meet the busy
            # handler; reads never wait, in WAL mode.)
            self._write_lock = threading.RLock()
        else:
            # No pre-ping: it costs every transaction a round trip (a fifth
            # of a short one's CPU). A connection that died while idle (the
            # server restarted) fails at its first statement, before anything
            # is written: that is retried, on a new connection, and the
            # first such failure recycles every connection made before it
            # (SQLAlchemy does so for its statements, common.db.prepared
            # for its own).
            self.engine = sa.create_engine(
                self.url, pool_size=pool_size, max_overflow=max_overflow,
                pool_timeout=pool_timeout, pool_pre_ping=False,
                future=True)
            event.listen(self.engine, 'handle_error', _read_only_is_lost)
            self._write_lock = contextlib.nullcontext()
        self._readonly = self.engine.execution_options(tristate_readonly=True)

    @classmethod
    def from_conf(cls, conf):
        db = conf.database
        url = db.connection or default_sqlite_url(conf.state_dir)
        return cls(url, sqlite_synchronous=db.sqlite_synchronous,
                   sqlite_busy_timeout=db.sqlite_busy_timeout,
                   max_retries=db.max_retries,
                   retry_interval=db.retry_interval,
                   max_retry_interval=db.max_retry_interval,
                   pool_size=db.pool_size, max_overflow=db.max_overflow,
                   pool_timeout=db.pool_timeout)

    @property
    def is_sqlite(self):
        return self.url.get_backend_name() == 'sqlite'

    def _sqlite_engine(self, synchronous, busy_timeout):
        memory = self.url.database in (None, '', ':memory:')
        kwargs = {'connect_args': {'check_same_thread': False,
                                   'timeout': busy_timeout}}
        if memory:
            # One shared connection, or every checkout sees an empty db.
            kwargs['poolclass'] = sa.pool.StaticPool
        else:
            # The connection returned last is taken first: in WAL mode a
            # connection drops its page cache when another one has
            # committed since its last transaction, so taking the pool's
            # connections in turn (its default) read every page again from
            # the file each time. Measured in a burst of builds: 104 read
            # system calls a build, 44 with this.
            kwargs['pool_use_lifo'] = True
        engine = sa.create_engine(self.url, **kwargs)

        @event.listens_for(engine, 'connect')
        def _on_connect(dbapi_conn, _record):
            # Let SQLAlchemy's "begin" event below issue BEGIN itself.
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            if not memory:
                cur.execute('PRAGMA journal_mode=WAL')
            cur.execute('PRAGMA synchronous=%s' % synchronous)
            cur.execute('PRAGMA foreign_keys=ON')
            cur.close()

        @event.listens_for(engine, 'begin')
        def _on_begin(conn):
            # Straight to the driver: through SQLAlchemy's execute, the
            # BEGIN cost a third of a short transaction. A driver error is
            # wrapped as SQLAlchemy wraps its own, so that a busy database
            # is retried as before.
            sql = ('BEGIN' if conn.get_execution_options().get(
                'tristate_readonly') else 'BEGIN IMMEDIATE')
            dbapi_conn = conn.connection.dbapi_connection
            try:
                dbapi_conn.execute(sql)
            except sqlite3.Error as err:
                raise prepared.wrapped(conn, dbapi_conn, None, sql, (),
                                       err) from err

        return engine

    def transaction(self, fn, *args, readonly=False, **kwargs):
        """Run ``fn(conn, *args, **kwargs)`` in one transaction, retried.

        ``fn`` must be safe to run again from the start: it is, because the
        transaction it ran in was rolled back. A write transaction whose
        COMMIT lost its connection (PostgreSQL) is not run again: it may
        have been committed; :class:`~common.exception.DBUnavailable` says so.
        """
        started = time.monotonic()
        try:
            # The first attempt runs outside tenacity, whose bookkeeping
            # costs more than a short transaction; a transient failure goes
            # on to the retries.
            return self._run_once(fn, args, kwargs, readonly)
        except Exception as err:
            if not is_transient(err):
                raise
            first = err
        return self._retry(first, started, fn, args, kwargs, readonly)

    def _retry(self, first, started, fn, args, kwargs, readonly):
        """Attempts 2 to ``max_retries``, after the first failed with
        ``first``; waits and logs as if tenacity had made all of them."""
        if self.max_retries <= 1:
            raise self._unavailable(1, started, first) from first
        self._log_retry(1, first)
        time.sleep(self._wait(1))
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.max_retries - 1),
            wait=lambda state: self._wait(state.attempt_number + 1),
            retry=tenacity.retry_if_exception(is_transient),
            before_sleep=lambda state: self._log_retry(
                state.attempt_number + 1, state.outcome.exception()),
            reraise=False)
        try:
            return retrying(self._run_once, fn, args, kwargs, readonly)
        except tenacity.RetryError as err:
            last = err.last_attempt.exception()
            raise self._unavailable(err.last_attempt.attempt_number + 1,
                                    started, last) from last

    def _wait(self, attempt):
        """Seconds before the attempt after ``attempt``: exponential from
        ``retry_interval``, at most ``max_retry_interval``."""
        return max(0.0, min(self.retry_interval * 2 ** (attempt - 1),
                            self.max_retry_interval))

    @staticmethod
    def _unavailable(attempts, started, last):
        metrics.db_error('unavailable')
        return exception.DBUnavailable(
            attempts=attempts, seconds=time.monotonic() - started,
            reason=str(getattr(last, 'orig', last)).strip())

    def _run_once(self, fn, args, kwargs, readonly):
        if readonly:
            with self._readonly.begin() as conn:
                return fn(conn, *args, **kwargs)
        committing = False
        try:
            with self._write_lock, self.engine.begin() as conn:
                result = fn(conn, *args, **kwargs)
                committing = True       # the block's end commits
            return result
        except sa_exc.DBAPIError as err:
            if committing and not self.is_sqlite and is_transient(err):
                # The server may have committed before the connection went:
                # running the transaction again could apply it twice (two
                # instances for one create). Not retried; the caller hears
                # that the outcome is unknown. (SQLite's outcome is always
                # known: a failed commit committed nothing.)
                metrics.db_error('unavailable')
                raise exception.DBUnavailable(
                    attempts=1, seconds=0.0,
                    reason='the connection was lost while committing; the '
                           'change may or may not have been made: %s'
                           % str(getattr(err, 'orig', err)).strip()) from err
            raise

    @staticmethod
    def _log_retry(attempt, err):
        metrics.db_error('retried')
        LOG.warning('Transient database error, attempt %d: %s', attempt, err)

    def dispose(self):
        self.engine.dispose()

"""A PostgreSQL primary and its streaming standby, for the failover tests.

:class:`Pair` drives ``tools/test-services.sh pgpair DIR ...``: Debian's
PostgreSQL 15, a primary made by initdb (``wal_level = replica``, a
replication user allowed from loopback only) and a hot standby made by
``pg_basebackup -R`` (``standby.signal``) streaming from it, the primary
committing synchronously to it, both on free loopback ports, in a directory
the postgres user can enter. :func:`running_pair` (for a fixture) stops
them and removes the directory whatever happened. :attr:`Pair.url` is the
multi-host URL the operator guide recommends: both servers,
``target_session_attrs=read-write``.
"""

import os
import shutil
import subprocess
import tempfile

import pytest
import sqlalchemy as sa

from tests import daemon_support
from tests import support

SCRIPT = os.path.join(daemon_support.SOURCE_ROOT, 'tools', 'test-services.sh')
PG_BIN = '/usr/lib/postgresql/15/bin'
DATABASE = 'tristate'


class Pair:
    """A primary and its streaming standby; :attr:`url` names both."""

    def __init__(self):
        self.path = tempfile.mkdtemp(prefix='tristate-pgha-')
        os.chmod(self.path, 0o755)
        self.ports = None
        self.url = None

    def _run(self, *args, timeout=120):
        done = subprocess.run([SCRIPT, 'pgpair', self.path, *args],
                              capture_output=True, text=True, check=False,
                              timeout=timeout)
        assert done.returncode == 0, 'pgpair %s failed (%d): %s%s' % (
            ' '.join(args), done.returncode, done.stdout, done.stderr)

    def start(self):
        primary = support.free_port()
        standby = next(p for p in iter(support.free_port, None)
                       if p != primary)
        self.ports = (primary, standby)
        self._run('start', str(primary), str(standby))
        admin = sa.create_engine(
            'postgresql+psycopg2://postgres@127.0.0.1:%d/postgres' % primary,
            isolation_level='AUTOCOMMIT')
        with admin.connect() as conn:
            conn.exec_driver_sql('CREATE DATABASE %s' % DATABASE)
        admin.dispose()
        self.url = ('postgresql+psycopg2://postgres@/%s?'
                    'host=127.0.0.1:%d&host=127.0.0.1:%d'
                    '&target_session_attrs=read-write'
                    % ((DATABASE,) + self.ports))
        return self

    def kill_primary(self):
        """``pg_ctl stop -m immediate``: sessions cut, nothing flushed."""
        self._run('primary', 'kill')

    def promote(self):
        """``pg_ctl promote``; returns once the standby takes writes."""
        self._run('promote')

    def stop(self, logs):
        """Stop whatever still runs, keep the servers' logs in ``logs``,
        remove the rest."""
        self._run('stop')
        logs.mkdir(exist_ok=True)
        for name in ('primary.log', 'standby.log', 'basebackup.log'):
            found = os.path.join(self.path, 'pgpair', name)
            if os.path.exists(found):
                shutil.copy(found, logs / name)
        shutil.rmtree(self.path, ignore_errors=True)


def serving_port(database):
    """The port of the server ``database`` (a common.db.engine.Database on
    :attr:`Pair.url`) leads to now."""
    return database.transaction(
        lambda conn: conn.exec_driver_sql(
            'SELECT inet_server_port()').scalar(), readonly=True)


def running_pair(logs):
    """For a fixture: yields a started :class:`Pair`, then stops it, its
    servers' logs kept in ``logs``. Skips (fails in CI) without
    PostgreSQL 15's server programs or root."""
    missing = [name for name in ('initdb', 'pg_basebackup', 'pg_ctl')
               if not os.path.exists(os.path.join(PG_BIN, name))]
    reason = ('PostgreSQL 15 (%s) is not installed' % ', '.join(missing)
              if missing else None)
    if not missing and os.geteuid() != 0:
        reason = 'the PostgreSQL pair runs as user postgres: needs root'
    if reason:
        if os.environ.get('CI') == 'true':
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    made = Pair()
    try:
        yield made.start()
    finally:
        made.stop(logs)

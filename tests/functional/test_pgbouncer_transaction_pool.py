"""Tristate through pgBouncer in transaction pool mode.

The operator guide ("Scaling out") recommends pgBouncer with ``pool_mode =
transaction`` in front of a PostgreSQL that fails over, because Tristate
keeps nothing in a session between two transactions (no server-side
prepared statements, no ``SET``, no advisory locks): any transaction may run
on any of pgBouncer's server connections. This checks it. A plane on a
fresh database of the test server, reached through Debian's pgBouncer
(started here, as user postgres, on a free loopback port) with two server
connections shared by every client connection; builds, stops, starts and
hard deletes from several threads while ``tristate-manage check``'s reading
(one REPEATABLE READ transaction) runs again and again: every task ends in
its target state, every check reads its snapshot, the check at the end is
clean, and pgBouncer really did share its server connections (its ``SHOW
POOLS``).
"""

import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
import time

import psycopg2
import pytest

from common.db import checks
from common.states import power
from common.states import vm
from tests import support
from tests.conftest import pg_database
from tests.functional.conftest import act
from tests.functional.conftest import build
from tests.functional.conftest import domain
from tests.functional.conftest import wait_for

pytestmark = pytest.mark.postgresql

PGBOUNCER = '/usr/sbin/pgbouncer'
SERVER_CONNECTIONS = 2
WORKERS = 4


def _require_pgbouncer():
    reason = None
    if not os.path.exists(PGBOUNCER):
        reason = 'pgbouncer is not installed (apt-get install pgbouncer)'
    elif os.geteuid() != 0:
        reason = 'pgBouncer runs as user postgres here: needs root'
    if reason:
        if os.environ.get('CI') == 'true':
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)


@contextlib.contextmanager
def _pgbouncer(server_url):
    """pgBouncer in transaction mode in front of ``server_url``'s server;
    yields its own URL for the same database and user."""
    path = tempfile.mkdtemp(prefix='tristate-pgbouncer-')
    port = support.free_port()
    with open(os.path.join(path, 'userlist.txt'), 'w') as out:
        out.write('"%s" ""\n' % server_url.username)
    with open(os.path.join(path, 'pgbouncer.ini'), 'w') as out:
        out.write('\n'.join([
            '[databases]',
            '* = host=%s port=%d' % (server_url.host, server_url.port or 5432),
            '[pgbouncer]',
            'listen_addr = 127.0.0.1', 'listen_port = %d' % port,
            'unix_socket_dir =', 'auth_type = trust',
            'auth_file = %s/userlist.txt' % path,
            'pool_mode = transaction',
            'default_pool_size = %d' % SERVER_CONNECTIONS,
            'stats_users = %s' % server_url.username,
            'max_client_conn = 200',
            'logfile = %s/pgbouncer.log' % path, '']))
    shutil.chown(path, 'postgres', 'postgres')
    proc = subprocess.Popen(
        ['setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups',
         PGBOUNCER, os.path.join(path, 'pgbouncer.ini')],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: support.listening(port) or proc.poll() is not None,
                 what='pgBouncer to listen')
        assert proc.poll() is None, open(
            os.path.join(path, 'pgbouncer.log')).read()
        yield server_url.set(host='127.0.0.1', port=port)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(path, ignore_errors=True)


def _pools(url, database):
    """pgBouncer's SHOW POOLS row of ``database`` (its console takes no
    transaction: a plain driver connection in autocommit)."""
    conn = psycopg2.connect(host=url.host, port=url.port, user=url.username,
                            dbname='pgbouncer')
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute('SHOW POOLS')
            names = [column[0] for column in cur.description]
            rows = [dict(zip(names, row, strict=True)) for row in cur]
    finally:
        conn.close()
    return next(r for r in rows if r['database'] == database)


def _violations(plane):
    found, _seen = checks.find_violations(
        plane.statedb.db, checks.Limits(ratios=(4.0, 1.0, 1.0)))
    return [str(v) for v in found]


def _wait_destroyed(plane, inst):
    """Until the deleted ``inst``'s domain is gone and reported so."""
    wait_for(lambda: domain(plane, inst['host'], inst['uuid']) is None
             and plane.statedb.get_instance(inst['uuid'])['power_state']
             == power.NOSTATE,
             what='the domain of deleted %s to be reported gone'
             % inst['uuid'])


def _lifecycle(plane, ctx, n, failures, made):
    """Build, stop, start and delete one instance; what went wrong is
    added to ``failures``."""
    try:
        inst = build(plane, ctx, name='pooled-%d' % n)
        made.append(inst['uuid'])
        steps = [inst['vm_state']]
        steps.append(act(plane, ctx, inst['uuid'], 'stop')['vm_state'])
        steps.append(act(plane, ctx, inst['uuid'], 'start')['vm_state'])
        plane.client.delete_instance(ctx, inst['uuid'])
        steps.append(plane.statedb.get_instance(inst['uuid'])['vm_state'])
        if steps != [vm.ACTIVE, vm.STOPPED, vm.ACTIVE, vm.HARD_DELETED]:
            failures.append((n, steps))
    except Exception as err:    # noqa: BLE001 - reported by the test
        failures.append((n, repr(err)))


def test_a_plane_through_pgbouncer_in_transaction_mode(
        pg_admin, conf, make_plane, ctx):
    _require_pgbouncer()
    with pg_database(pg_admin) as database, _pgbouncer(
            database.url) as url:
        conf.set_override('connection', url.render_as_string(
            hide_password=False), group='database')
        plane = make_plane(hosts=2)
        failures, checked, made, done = [], [], [], threading.Event()

        def check_all_along():
            # While tasks run, a check may rightly name what is in
            # flight (a domain reported just after its hard delete); what
            # counts here is that its REPEATABLE READ snapshot can be read.
            while not done.is_set():
                try:
                    checked.append(len(_violations(plane)))
                except Exception as err:    # noqa: BLE001 - asserted below
                    checked.append(err)
                time.sleep(0.05)

        checker = threading.Thread(target=check_all_along, daemon=True)
        checker.start()
        workers = [threading.Thread(target=_lifecycle,
                                    args=(plane, ctx, n, failures, made))
                   for n in range(WORKERS)]
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join(120)
        done.set()
        checker.join(30)
        pools = _pools(url, database.url.database)
        for uuid in made:
            _wait_destroyed(plane, plane.statedb.get_instance(uuid))
        violations = _violations(plane)

    assert failures == []
    assert checked and all(isinstance(n, int) for n in checked), checked
    assert violations == []
    # Far more client connections than server ones: the transactions of
    # many sessions took turns on the same two.
    assert pools['cl_active'] + pools['cl_waiting'] > SERVER_CONNECTIONS, pools
    assert pools['sv_idle'] + pools['sv_used'] + pools['sv_active'] <= (
        SERVER_CONNECTIONS), pools

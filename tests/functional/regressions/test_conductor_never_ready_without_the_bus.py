"""The conductor never told systemd READY=1 while the broker was away.

Found trying the plane with RabbitMQ stopped (issue 20, item 13): the
conductor's RPC server connects to the broker in its ``start()``, retried
forever, before the daemon notified systemd, so ``Type=notify`` with
``TimeoutStartSec=60`` killed and restarted it every minute, to no use,
and SIGTERM was not even handled yet. Fixed as Nova operators expect: the
RPC server connects in the background (:class:`common.rpc.BackgroundStart`);
the conductor is ready once its database answers (its first heartbeat is
recorded), says in ``STATUS=`` whether the bus is connected or still being
retried, and stops on SIGTERM either way. While the database does not
answer it is not ready and says so. Tested with a fake NOTIFY_SOCKET.
"""

from common.db import engine
from common.db import migration
from tests import daemon_support
from tests import support

START = 60.0


def _conductor(tmp_path, database_url):
    return daemon_support.Daemon(tmp_path, 'tristate-conductor', {
        'DEFAULT': {'transport_url': daemon_support.closed_url(
            support.free_port()), 'state_dir': tmp_path / 'state'},
        'database': {'connection': database_url, 'max_retries': 1},
        'metrics': {'host': '127.0.0.1', 'port': 0},
    }).start()


def test_ready_once_the_database_answers_while_the_bus_is_retried(
        tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'c.sqlite')
    database = engine.Database(url)
    migration.upgrade(database)
    database.dispose()
    proc = _conductor(tmp_path, url)
    try:
        ready = proc.message('READY=1', START)
        assert 'MAINPID=%d' % proc.proc.pid in ready
        assert 'message bus connecting' in ready, ready
        code, _seconds = proc.terminate()
        assert code == 0, proc.output()[-3000:]
    finally:
        proc.close()


def test_not_ready_while_the_database_does_not_answer(tmp_path):
    proc = _conductor(tmp_path, 'sqlite:///%s' % (
        tmp_path / 'no-such-dir' / 'c.sqlite'))
    try:
        waiting = proc.message('STATUS=waiting for the database', START)
        assert 'READY=1' not in waiting
        code, _seconds = proc.terminate()
        assert code == 0, proc.output()[-3000:]
        assert 'READY=1' not in proc.output()
    finally:
        proc.close()

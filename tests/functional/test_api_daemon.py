"""``tristate-api`` as systemd runs it: a separate process that tells
NOTIFY_SOCKET it is ready once it listens, serves version discovery and the
hard delete (database only: no conductor is running here), and says it is
stopping on SIGTERM, then exits 0."""

import signal
import socket
import subprocess
import sys

import pytest
import requests

from common.db import api as db_api
from common.db import engine
from common.db import migration
from tests import support
from tests.conftest import FakeClock
from tests.conftest import Instances

TIMEOUT = 60.0


@pytest.fixture
def statedb(tmp_path):
    database = engine.Database('sqlite:///%s' % (tmp_path / 'api.sqlite'))
    migration.upgrade(database)
    yield db_api.StateDB(database, clock=FakeClock())
    database.dispose()


@pytest.fixture
def notify(tmp_path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / 'notify'))
    sock.settimeout(TIMEOUT)
    yield sock
    sock.close()


def test_the_daemon_notifies_systemd_and_deletes_without_a_conductor(
        tmp_path, statedb, notify, ctx):
    uuid = Instances(statedb, ctx).active()
    port = support.free_port()
    conf = tmp_path / 'api.conf'
    conf.write_text(
        '[DEFAULT]\ntransport_url = inproc://\nstate_dir = %s\n'
        '[database]\nconnection = sqlite:///%s\n'
        '[api]\nlisten = 127.0.0.1\nport = %d\nauth_strategy = noauth\n'
        'rpc_timeout = 2\n'
        '[oslo_messaging_rabbit]\nheartbeat_timeout_threshold = 0\n'
        % (tmp_path, tmp_path / 'api.sqlite', port))
    log = open(tmp_path / 'api.log', 'w')
    proc = subprocess.Popen(
        [sys.executable, '-c',
         'import sys; from api.cmd.api import main; sys.exit(main())',
         '--config-file', str(conf)],
        stdout=log, stderr=subprocess.STDOUT,
        env={'NOTIFY_SOCKET': str(tmp_path / 'notify'),
             'PATH': '/usr/bin:/bin'})
    try:
        ready = notify.recv(4096).decode()
        assert ready.startswith('READY=1\n'), ready
        assert 'MAINPID=%d' % proc.pid in ready
        base = 'http://127.0.0.1:%d' % port
        assert 'STATUS=serving on %s' % base in ready
        versions = requests.get(base + '/', timeout=10).json()
        assert [v['id'] for v in versions['versions']] == ['v2.0', 'v2.1']
        deleted = requests.delete('%s/v2.1/servers/%s' % (base, uuid),
                                  headers={'X-Auth-Token': 'alice:demo'},
                                  timeout=10)
        assert deleted.status_code == 204, deleted.text
        assert statedb.get_instance(uuid)['vm_state'] == 'hard_deleted'
        proc.send_signal(signal.SIGTERM)
        assert notify.recv(4096) == b'STOPPING=1'
        assert proc.wait(timeout=TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()

"""Each daemon, as systemd runs it, stops on SIGTERM within its unit's
``TimeoutStopSec``, bus or no bus (issue 20, item 12).

Before: ``tristate-api`` closed its socket on SIGTERM but went on retrying
the broker for minutes (its request threads and oslo.messaging's cleanup
waited on a reply queue that could not be made), and the conductor and the
agent sat in their RPC server's start, forever, without telling systemd they
were ready. Here each runs as its own process with a fake NOTIFY_SOCKET:

* broker down (a loopback port nothing listens on): READY=1 comes (the
  bus is being connected), a request to the API that needs the bus gets
  its 503 within ``rpc_timeout``, and SIGTERM ends the process, status 0,
  well within TimeoutStopSec;
* broker killed (SIGKILL) under daemons that were connected and served (a
  private RabbitMQ node of this test, started by ``tools/test-services.sh``):
  the same.
"""

import os
import shutil
import subprocess
import tempfile
import time

import pytest
import requests

from common.db import engine
from common.db import migration
from tests import daemon_support
from tests import support

BINARIES = ('tristate-api', 'tristate-conductor', 'tristate-compute-agent')
RPC_TIMEOUT = 3
# How long a daemon may take to start here (2 shared cores).
START = 60
RABBIT_SERVER = '/usr/lib/rabbitmq/bin/rabbitmq-server'


def _sections(tmp_path, binary, url, port):
    sections = {
        'DEFAULT': {'transport_url': url, 'state_dir': tmp_path / 'state',
                    'host': 'stop-test', 'debug': 'true'},
        'metrics': {'host': '127.0.0.1', 'port': 0},
        'compute': {'heartbeat_interval': 0.5},
        'conductor': {'rpc_timeout': RPC_TIMEOUT},
        'oslo_messaging_rabbit': {'rabbit_interval_max': 2},
    }
    if binary != 'tristate-compute-agent':
        db_url = 'sqlite:///%s' % (tmp_path / 'tristate.sqlite')
        database = engine.Database(db_url)
        migration.upgrade(database)
        database.dispose()
        sections['database'] = {'connection': db_url}
    if binary == 'tristate-api':
        sections['api'] = {'listen': '127.0.0.1', 'port': port,
                           'auth_strategy': 'noauth',
                           'rpc_timeout': RPC_TIMEOUT}
    return sections


@pytest.fixture
def daemon(tmp_path):
    started = []

    def start(binary, url):
        port = support.free_port()
        proc = daemon_support.Daemon(
            tmp_path, binary, _sections(tmp_path, binary, url, port))
        proc.port = port
        started.append(proc)
        return proc.start()
    yield start
    for proc in started:
        proc.close()


def _ask_the_api(proc):
    """A request that needs the bus: its status and how long it took."""
    started = time.monotonic()
    resp = requests.get('http://127.0.0.1:%d/v2.1/servers' % proc.port,
                        headers={'X-Auth-Token': 'alice:demo'},
                        timeout=10 * RPC_TIMEOUT)
    return resp, time.monotonic() - started


def _stops_in_time(proc):
    code, seconds = proc.terminate()
    limit = daemon_support.timeout_stop(proc.binary)
    assert code == 0, '%s: exit %s after %.1f s (TimeoutStopSec %s):\n%s' % (
        proc.binary, code, seconds, limit, proc.output()[-4000:])
    # Well within: not by the graceful_shutdown_timeout watchdog.
    assert seconds < limit / 2, seconds
    assert proc.message('STOPPING=1', 5)


@pytest.mark.parametrize('binary', BINARIES)
def test_a_daemon_is_ready_and_stops_with_the_broker_down(daemon, binary):
    proc = daemon(binary, daemon_support.closed_url(support.free_port()))
    ready = proc.message('READY=1', START)
    if binary != 'tristate-api':
        assert 'message bus connecting' in ready, ready
    else:
        resp, seconds = _ask_the_api(proc)
        assert resp.status_code == 503, resp.text
        assert 'Retry-After' in resp.headers
        assert seconds < RPC_TIMEOUT + 2, seconds
    _stops_in_time(proc)


@pytest.fixture
def own_broker():
    """A RabbitMQ node of this test alone, which it may kill: its URL and a
    function that kills it. In a directory of its own that the rabbitmq
    user can enter (pytest's are the test user's alone)."""
    if not os.path.exists(RABBIT_SERVER):
        pytest.skip('rabbitmq-server is not installed')
    path = tempfile.mkdtemp(prefix='tristate-broker-')
    os.chmod(path, 0o755)
    port = support.free_port()      # the node uses port to port + 13
    ctl = [os.path.join(daemon_support.SOURCE_ROOT, 'tools',
                        'test-services.sh'), 'rabbit', str(path)]
    started = subprocess.run(
        ctl + ['start'], capture_output=True, text=True, timeout=120,
        check=False, env=dict(os.environ, TRISTATE_TEST_RABBIT_PORT=str(
            port)))
    assert started.returncode == 0, started.stderr

    def kill():
        subprocess.run(ctl + ['kill'], check=True, timeout=60,
                       capture_output=True)
    yield 'rabbit://guest:guest@127.0.0.1:%d/' % port, kill
    subprocess.run(ctl[:1] + ['stop', str(path)], capture_output=True,
                   timeout=120, check=False)
    shutil.rmtree(path, ignore_errors=True)


def test_each_daemon_stops_after_its_broker_was_killed(daemon, own_broker):
    url, kill = own_broker
    procs = {binary: daemon(binary, url) for binary in BINARIES}
    for proc in procs.values():
        proc.message('READY=1', START)
    for binary in ('tristate-conductor', 'tristate-compute-agent'):
        procs[binary].wait_for_text('message bus connected', START)
    api = procs['tristate-api']
    deadline = time.monotonic() + START
    while _ask_the_api(api)[0].status_code != 200:     # the conductor answers
        assert time.monotonic() < deadline, api.output()[-3000:]
        time.sleep(0.2)

    health = requests.get('http://127.0.0.1:%d/healthcheck' % api.port,
                          timeout=30)
    assert health.status_code == 200, health.text
    assert 'message bus OK' in health.text.splitlines()

    kill()
    resp, seconds = _ask_the_api(api)
    assert resp.status_code == 503, resp.text
    assert seconds < RPC_TIMEOUT + 3, seconds
    started = time.monotonic()
    health = requests.get('http://127.0.0.1:%d/healthcheck' % api.port,
                          timeout=30)
    assert health.status_code == 503, health.text
    assert 'message bus unavailable' in health.text.splitlines()
    assert time.monotonic() - started < RPC_TIMEOUT
    for proc in procs.values():
        _stops_in_time(proc)

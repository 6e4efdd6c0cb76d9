"""With RabbitMQ unreachable, ``GET /servers`` never answered.

The operator guide promises a 503 after ``[api] rpc_timeout``; a client
gave up after 150 s (issue 20, item 12, found by trying the API as an
operator with the broker stopped). Cause: oslo.messaging's rabbit driver
makes a process's reply queue on its first call, on a connection it retries
forever (the client's ``retry`` bounds only the publish), holding a lock
every later call waits for; the call's own timeout starts only after that.
``/healthcheck`` said OK meanwhile: it checked the database only.

Fixed: the API's conductor client is *bounded* (:class:`common.rpc.
Connector`): a daemon thread makes the reply queue, a call waits for it at
most its timeout (then at once while the broker stays away) and answers
503 with Retry-After; publishes retry once, not forever. The health check
has a line for the database and one for the bus, and shows an admin the
details. Delete, made in the database, still works.
"""

import threading
import time

import pytest

from api import service as api_service
from api import wsgi
from common import rpc
from common.db import api as db_api
from common.db import engine
from common.db import migration
from tests import support
from tests.conftest import Instances
from tests.functional import api_support

RPC_TIMEOUT = 2


@pytest.fixture
def down(conf, tmp_path):
    """The API tier's client on a broker that is down (a closed port)."""
    database = engine.Database('sqlite:///%s' % (tmp_path / 'api.sqlite'))
    migration.upgrade(database)
    statedb = db_api.StateDB(database)
    bus = rpc.Bus(conf, url='rabbit://guest:guest@127.0.0.1:%d/'
                  % support.free_port())
    api_support.configure(conf, rpc_timeout=RPC_TIMEOUT)
    client = api_service.make_client(conf, bus, statedb)
    yield wsgi.create_app(conf, client), statedb
    # Before the fix, closing waits for the stuck reply queue for ever.
    closing = threading.Thread(target=bus.cleanup, daemon=True)
    closing.start()
    closing.join(15)
    database.dispose()


def _timed(app, path, **kwargs):
    """(response or None if none came, seconds), given at most
    3 x rpc_timeout."""
    answer = []
    started = time.monotonic()

    def ask():
        answer.append(app.test_client().get(path, **kwargs))
    asking = threading.Thread(target=ask, daemon=True)
    asking.start()
    asking.join(3 * RPC_TIMEOUT)
    return (answer[0] if answer else None), time.monotonic() - started


@pytest.mark.parametrize('path', ['/v2.1/servers', '/v2.1/leases'])
def test_a_request_needing_the_bus_answers_503_within_rpc_timeout(down,
                                                                  path):
    app, _statedb = down
    for _ in range(2):      # the first, and one while the broker stays away
        resp, seconds = _timed(app, path)
        assert resp is not None, 'GET %s did not answer in %d s' % (
            path, 3 * RPC_TIMEOUT)
        assert resp.status_code == 503, resp.get_data(as_text=True)
        assert seconds < RPC_TIMEOUT + 1.5
        assert resp.headers['Retry-After'].isdigit()
        message = resp.get_json()['serviceUnavailable']['message']
        assert 'message bus' in message and '127.0.0.1' in message
        assert 'guest:' not in message      # never the password


def test_delete_still_works_and_the_healthcheck_names_the_bus(down, ctx):
    app, statedb = down
    uuid = Instances(statedb, ctx).active()
    resp = app.test_client().delete(
        '/v2.1/servers/%s' % uuid,
        headers={'X-Auth-Token': '%s:%s' % (ctx.user_id, ctx.project_id)})
    assert resp.status_code == 204, resp.get_data(as_text=True)

    resp, _seconds = _timed(app, '/healthcheck')
    assert resp is not None and resp.status_code == 503
    lines = resp.get_data(as_text=True).splitlines()
    assert 'database OK' in lines and 'message bus unavailable' in lines
    assert '127.0.0.1' not in resp.get_data(as_text=True)   # summary only

    resp, _seconds = _timed(app, '/healthcheck', headers={
        'X-Auth-Token': api_support.ADMIN_TOKEN,
        'Accept': 'application/json'})
    detailed = resp.get_json()
    bus = [r for r in detailed['detailed'] and detailed['reasons']
           if r['reason'] == 'message bus unavailable']
    assert bus and '127.0.0.1' in bus[0]['details']

    member = app.test_client().get('/healthcheck', headers={
        'X-Auth-Token': 'alice:demo', 'Accept': 'application/json'})
    assert member.status_code == 503
    assert member.get_json()['detailed'] is False

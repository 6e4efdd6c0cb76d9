"""What the API tests share: the WSGI app over a plane, and a client that
speaks to it in-process as one user (werkzeug's test client, no socket).

Every test acts as a project of its own (:func:`new_project`), so it sees
only its own servers even on a plane shared by a whole module.
"""

import contextlib
import threading
import uuid as uuidlib

from api import service as api_service
from api import wsgi
from tests import conftest as common_fixtures
from tests import images_support
from tests.functional.conftest import Planes
from tests.functional.conftest import new_conf
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_for

ADMIN_TOKEN = 'admin:admin'
IMAGE = images_support.IMAGE


def configure(conf, **api_opts):
    """noauth, admin as the user of token-less requests, short RPC waits."""
    values = {'auth_strategy': 'noauth', 'noauth_default_user': 'admin',
              'rpc_timeout': 5}
    values.update(api_opts)
    set_opts(conf, 'api', **values)
    return conf


def make_app(plane, **api_opts):
    conf = configure(plane.conf, **api_opts)
    client = api_service.make_client(conf, plane.bus, plane.statedb)
    return wsgi.create_app(conf, client)


@contextlib.contextmanager
def plane_on(request, backend, state_dir):
    """A two-host plane whose database is SQLite or a fresh PostgreSQL
    database (``backend``; for fixtures parametrized on both, the
    PostgreSQL one skipped without TRISTATE_TEST_PG_URL, as ``db``)."""
    conf = new_conf(state_dir)
    with contextlib.ExitStack() as stack:
        if backend == 'postgresql':
            admin = request.getfixturevalue('pg_admin')
            database = stack.enter_context(common_fixtures.pg_database(admin))
            conf.set_override('connection', database.url.render_as_string(
                hide_password=False), group='database')
        planes = Planes(conf)
        stack.callback(conf.reset)
        stack.callback(planes.stop_all)
        yield planes.start(hosts=2)


def new_project():
    """A user:project token of a project no other test uses."""
    suffix = uuidlib.uuid4().hex[:8]
    return 'user-%s:project-%s' % (suffix, suffix)


def new_flavor(admin, *, vcpus=2, ram=512, specs=None, prefix='numa'):
    """A new flavor's name, made by ``admin`` (an :class:`Api` of the
    admin), with ``specs`` as its extra specs when given."""
    name = '%s-%s' % (prefix, uuidlib.uuid4().hex[:8])
    resp = admin.post('/flavors', {'flavor': {
        'name': name, 'id': name, 'ram': ram, 'vcpus': vcpus, 'disk': 1}})
    assert resp.status_code == 200, resp.get_json()
    if specs is not None:
        resp = admin.post('/flavors/%s/os-extra_specs' % name,
                          {'extra_specs': specs})
        assert resp.status_code == 200, resp.get_json()
    return name


# The microversion of a request that names none: Tristate's own, whose
# bodies carry the ``tristate:*`` keys the tests read. A test of Nova's
# shapes names its version (``version='2.1'``); ``version=NO_HEADER`` (or
# a version header of the test's own) sends no version header.
DEFAULT_VERSION = 'latest'
NO_HEADER = 'no-header'
_VERSION_HEADERS = ('openstack-api-version', 'x-openstack-nova-api-version')


class Api:
    """Requests to ``/v2.1`` (or to ``/reservation``, when the path says
    so) as one user, at one microversion (:data:`DEFAULT_VERSION` unless
    told)."""

    def __init__(self, app, token=None, version=None):
        self.http = app.test_client()
        self.token = token
        self.version = version

    def as_(self, token=None, version=None):
        api = Api.__new__(Api)
        api.http, api.token, api.version = self.http, token, version
        return api

    def request(self, method, path, *, json=None, version=None, headers=None,
                **kwargs):
        all_headers = {}
        if self.token:
            all_headers['X-Auth-Token'] = self.token
        version = version or self.version or DEFAULT_VERSION
        own = any(h.lower() in _VERSION_HEADERS for h in headers or ())
        if version != NO_HEADER and not own:
            all_headers['OpenStack-API-Version'] = 'compute %s' % version
        all_headers.update(headers or {})
        url = path if path.startswith(('/v2.1', '/reservation')) or (
            path == '/') else '/v2.1' + path
        return self.http.open(url, method=method, json=json,
                              headers=all_headers, **kwargs)

    def get(self, path, **kwargs):
        return self.request('GET', path, **kwargs)

    def post(self, path, json=None, **kwargs):
        return self.request('POST', path, json=json, **kwargs)

    def put(self, path, json=None, **kwargs):
        return self.request('PUT', path, json=json, **kwargs)

    def delete(self, path, **kwargs):
        return self.request('DELETE', path, **kwargs)

    # --- servers ------------------------------------------------------------

    def server(self, server_id, **kwargs):
        resp = self.get('/servers/%s' % server_id, **kwargs)
        assert resp.status_code == 200, resp.get_json()
        return resp.get_json()['server']

    def create(self, name='vm', flavor='tiny', *, metadata=None):
        body = {'name': name, 'flavorRef': flavor, 'imageRef': IMAGE}
        if metadata is not None:
            body['metadata'] = metadata
        resp = self.post('/servers', {'server': body})
        assert resp.status_code == 202, resp.get_json()
        # Nova's answer holds the id and links only: the rest is read
        return self.server(resp.get_json()['server']['id'])

    def host(self, server_id):
        """Where the server runs, read as an admin: only admins see
        ``OS-EXT-SRV-ATTR:host`` (Nova's default policy)."""
        admin = self.as_(ADMIN_TOKEN, self.version)
        return admin.server(server_id)['OS-EXT-SRV-ATTR:host']

    def action(self, server_id, body, expect=(200, 202, 204)):
        resp = self.post('/servers/%s/action' % server_id, body)
        assert resp.status_code in expect, (body, resp.get_json())
        return resp

    def settled(self, server_id, **kwargs):
        """The server once no task runs on it (polled, with a deadline)."""
        last = {}

        def idle():
            last['server'] = self.server(server_id, **kwargs)
            return last['server']['OS-EXT-STS:task_state'] is None

        wait_for(idle, what='server %s to settle' % server_id,
                 show=lambda: _states(last.get('server')))
        return last['server']

    def active(self, name='vm', flavor='tiny', **kwargs):
        server = self.settled(self.create(name, flavor, **kwargs)['id'])
        assert server['status'] == 'ACTIVE', _states(server)
        return server

    def act(self, server_id, body):
        """Run an action and wait for it to settle; the server after."""
        self.action(server_id, body)
        return self.settled(server_id)

    def ids(self, path='/servers', **kwargs):
        resp = self.get(path, **kwargs)
        assert resp.status_code == 200, resp.get_json()
        return [s['id'] for s in resp.get_json()['servers']]


def _states(server):
    if not server:
        return server
    keys = ('status', 'OS-EXT-STS:vm_state', 'OS-EXT-STS:task_state',
            'tristate:task_id', 'OS-EXT-STS:power_state',
            'OS-EXT-SRV-ATTR:host')
    return {k: server.get(k) for k in keys}


def message(resp):
    """The message of a Nova fault body (or of a Blazar error, from the
    reservation API)."""
    body = resp.get_json()
    if 'error_message' in body:
        assert body['error_code'] == resp.status_code, body
        return body['error_message']
    (fault,) = body.values()
    return fault['message']


def answered_within(seconds, call):
    """``call()``'s answer, or a test failure if it takes longer than
    ``seconds`` (the call is left to run in a daemon thread): for input
    that must be refused at once, not after a slow parse."""
    answers = []
    thread = threading.Thread(target=lambda: answers.append(call()),
                              daemon=True)
    thread.start()
    thread.join(seconds)
    assert answers, 'no answer within %s s' % seconds
    return answers[0]

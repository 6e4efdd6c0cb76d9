"""``tristate-all`` ran without authentication whatever its config said.

``serve_embedded`` forced ``[api] auth_strategy = noauth`` (and an admin as
the user of token-less requests), so ``tristate-all --config-file`` with
``auth_strategy = keystone`` silently served a request with no token as admin
and took any token as a user name. Found by trying the API as an operator
would (issue 20). Fixed: noauth is only the embedded plane's default; a
strategy a config file sets is honoured (``api/service.py``).

The test runs ``tristate-all`` as a process with keystonemiddleware pointed at
a small identity endpoint on loopback that knows the service's own password
and no other token: a bad token and no token get 401.
"""

import datetime
import http.server
import json
import subprocess
import sys
import threading
import time

import pytest
import requests

from tests import support

SERVICE_TOKEN = 'service-token'
BAD_TOKEN = 'not-a-token'
TIMEOUT = 60.0


class _Identity(http.server.BaseHTTPRequestHandler):
    """Keystone v3 as keystonemiddleware needs it: version discovery, a
    password authentication for the service user, and a token validation
    that knows no user token (404: invalid)."""

    validated = []

    def log_message(self, *args):
        pass

    def _send(self, code, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _base(self):
        return 'http://%s:%d' % self.server.server_address[:2]

    def do_GET(self):
        if self.path.rstrip('/').endswith('/auth/tokens'):
            subject = self.headers.get('X-Subject-Token')
            type(self).validated.append(subject)
            return self._send(404, {'error': {
                'code': 404, 'message': 'Could not find token: %s' % subject,
                'title': 'Not Found'}})
        version = {'id': 'v3.14', 'status': 'stable',
                   'updated': '2020-04-07T00:00:00Z',
                   'links': [{'rel': 'self', 'href': self._base() + '/v3/'}],
                   'media-types': [{
                       'base': 'application/json',
                       'type': 'application/vnd.openstack.identity-v3+json'}]}
        if self.path.rstrip('/') == '/v3':
            return self._send(200, {'version': version})
        return self._send(300, {'versions': {'values': [version]}})

    def do_POST(self):
        length = int(self.headers.get('Content-Length', 0))
        self.rfile.read(length)
        now = datetime.datetime.now(datetime.UTC)
        expires = now + datetime.timedelta(hours=1)
        endpoint = self._base() + '/v3'
        token = {
            'methods': ['password'], 'expires_at': expires.isoformat(),
            'issued_at': now.isoformat(),
            'user': {'id': 'nova', 'name': 'nova',
                     'domain': {'id': 'default', 'name': 'Default'}},
            'project': {'id': 'service', 'name': 'service',
                        'domain': {'id': 'default', 'name': 'Default'}},
            'roles': [{'id': 'service', 'name': 'service'},
                      {'id': 'admin', 'name': 'admin'}],
            'catalog': [{'type': 'identity', 'name': 'keystone', 'id': 'id',
                         'endpoints': [
                             {'id': iface, 'interface': iface,
                              'region': 'RegionOne', 'region_id': 'RegionOne',
                              'url': endpoint}
                             for iface in ('public', 'internal', 'admin')]}]}
        self._send(201, {'token': token},
                   headers=[('X-Subject-Token', SERVICE_TOKEN)])


@pytest.fixture
def identity():
    _Identity.validated = []
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Identity)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield 'http://127.0.0.1:%d' % server.server_address[1]
    server.shutdown()
    server.server_close()


def _config(tmp_path, identity_url):
    path = tmp_path / 'all.conf'
    path.write_text(
        '[api]\nauth_strategy = keystone\n'
        '[keystone_authtoken]\nauth_type = password\n'
        'auth_url = %(url)s/v3\nwww_authenticate_uri = %(url)s/v3\n'
        'username = nova\npassword = secret\nproject_name = service\n'
        'user_domain_name = Default\nproject_domain_name = Default\n'
        'http_request_max_retries = 0\n' % {'url': identity_url})
    return path


def _wait_listening(base, proc):
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        assert proc.poll() is None, 'tristate-all exited: %s' % proc.returncode
        try:
            return requests.get(base + '/', timeout=5)
        except requests.ConnectionError:
            time.sleep(0.1)
    raise AssertionError('tristate-all did not listen on %s' % base)


def test_tristate_all_with_keystone_refuses_a_bad_token(tmp_path, identity):
    port = support.free_port()
    log = open(tmp_path / 'all.log', 'w')
    proc = subprocess.Popen(
        [sys.executable, '-c',
         'import sys; from conductor.cmd.all import main; sys.exit(main())',
         '--config-file', str(_config(tmp_path, identity)),
         '--state-dir', str(tmp_path / 'state'), '--hosts', '1',
         '--api-port', str(port)],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        base = 'http://127.0.0.1:%d' % port
        assert _wait_listening(base, proc).status_code == 200
        bad = requests.get(base + '/v2.1/servers', timeout=TIMEOUT,
                           headers={'X-Auth-Token': BAD_TOKEN})
        assert bad.status_code == 401, bad.text
        assert BAD_TOKEN in _Identity.validated     # keystone was asked
        none = requests.get(base + '/v2.1/servers', timeout=TIMEOUT)
        assert none.status_code == 401, none.text
        admin = requests.get(base + '/v2.1/os-hypervisors', timeout=TIMEOUT,
                             headers={'X-Auth-Token': 'admin'})
        assert admin.status_code == 401, admin.text
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()

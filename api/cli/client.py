"""The command line's HTTP client of the API (requests), and its waits.

Every error the API answers becomes :class:`ApiError` carrying the API's
own message (a 409 names the instance, its vm_state, the running task and
the states the action needs), so the command line can print it as it is.
"""

import time

import requests

DEFAULT_ENDPOINT = 'http://127.0.0.1:8774'
POLL_INTERVAL = 0.2


class ApiError(Exception):
    """What the API (or the way to it) said went wrong."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


def _message(resp):
    try:
        body = resp.json()
    except ValueError:
        return resp.text.strip() or resp.reason
    if isinstance(body, dict) and 'error_message' in body:
        return body['error_message']        # the reservation API's (Blazar)
    if isinstance(body, dict) and len(body) == 1:
        fault = next(iter(body.values()))
        if isinstance(fault, dict) and 'message' in fault:
            return fault['message']
    return str(body)


class ApiClient:
    """Talks to one API endpoint as one user."""

    def __init__(self, endpoint=DEFAULT_ENDPOINT, *, token=None,
                 microversion='latest', timeout=30.0):
        base = (endpoint or DEFAULT_ENDPOINT).rstrip('/')
        if not base.endswith('/v2.1'):
            base += '/v2.1'
        self.base = base
        # The API's port: other APIs than compute's are mounted there.
        self.root = base[:-len('/v2.1')]
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers.update({
            'Accept': 'application/json',
            'OpenStack-API-Version': 'compute %s' % microversion,
            'User-Agent': 'tristate-cli'})
        if token:
            self.session.headers['X-Auth-Token'] = token

    def request(self, method, path, *, body=None, params=None, base=None):
        """``path`` under ``base`` (default: the compute API's /v2.1)."""
        url = (self.base if base is None else base) + path
        try:
            resp = self.session.request(method, url, json=body, params=params,
                                        timeout=self.timeout)
        except requests.RequestException as err:
            raise ApiError('Cannot reach the Tristate API at %s: %s. Is it '
                           'running (tristate-all, tristate-api)? Set '
                           '--os-endpoint or TRISTATE_ENDPOINT.'
                           % (self.base, err)) from None
        if resp.status_code >= 400:
            raise ApiError('%s (HTTP %d)' % (_message(resp), resp.status_code),
                           status=resp.status_code)
        if resp.status_code == 204 or not resp.content:
            return None
        return resp.json()

    def get(self, path, **params):
        return self.request('GET', path, params=params or None)

    def post(self, path, body):
        return self.request('POST', path, body=body)

    def put(self, path, body):
        return self.request('PUT', path, body=body)

    def delete(self, path):
        return self.request('DELETE', path)

    # --- servers ------------------------------------------------------------

    def server(self, server_id):
        return self.get('/servers/%s' % server_id)['server']

    def find_server(self, name_or_id):
        """A server by id, or by its exact name if that is unique."""
        try:
            return self.server(name_or_id)
        except ApiError as err:
            if err.status != 404:
                raise
        found = [s for s in self.get('/servers/detail')['servers']
                 if s['name'] == name_or_id]
        if len(found) == 1:
            return found[0]
        if not found:
            raise ApiError('No server with a name or ID of %r exists.'
                           % name_or_id, status=404)
        raise ApiError('More than one server is named %r: use its ID (%s).'
                       % (name_or_id, ', '.join(s['id'] for s in found)))

    def action(self, server_id, body):
        return self.post('/servers/%s/action' % server_id, body)

    # --- waiting --------------------------------------------------------------

    def wait_settled(self, server_id, *, timeout):
        """Poll until no task runs on the server; return it."""
        deadline = time.monotonic() + timeout
        while True:
            server = self.server(server_id)
            if server['OS-EXT-STS:task_state'] is None:
                return server
            if time.monotonic() > deadline:
                raise ApiError(
                    'Server %s did not settle within %.0f s: status %s, task '
                    '%s (task_id %s)' % (server_id, timeout, server['status'],
                                         server['OS-EXT-STS:task_state'],
                                         server['tristate:task_id']))
            time.sleep(POLL_INTERVAL)

    def wait_gone(self, server_id, *, timeout):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.server(server_id)
            except ApiError as err:
                if err.status == 404:
                    return
                raise
            if time.monotonic() > deadline:
                raise ApiError('Server %s was still there after %.0f s'
                               % (server_id, timeout))
            time.sleep(POLL_INTERVAL)

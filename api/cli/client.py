"""The command line's HTTP client of the API (requests), and its waits.

Every error the API answers becomes :class:`ApiError` carrying the API's
own message (a 409 names the instance, its vm_state, the running task and
the states the action needs), so the command line can print it as it is.
"""

import string
import time
from urllib import parse

from keystoneauth1 import exceptions as ks_exceptions
import requests

DEFAULT_ENDPOINT = 'http://127.0.0.1:8774'
POLL_INTERVAL = 0.2
TASK_ID_HEADER = 'Tristate-Task-Id'


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


def exact_name_pattern(name):
    """A regular expression (RE2, as the API's ``name`` filter takes) that
    matches ``name`` alone: punctuation escaped, other characters that are
    not letters or digits (spaces, symbols) each in a class of its own."""
    out = []
    for char in name:
        if char.isalnum() or char == '_':
            out.append(char)
        elif char in string.punctuation:
            out.append('\\' + char)
        else:
            out.append('[%s]' % char)
    return '^%s$' % ''.join(out)


def next_marker(links):
    """The ``marker`` of a list's ``next`` link, or None."""
    for link in links or ():
        if link.get('rel') == 'next':
            query = parse.parse_qs(parse.urlsplit(link['href']).query)
            return (query.get('marker') or [None])[-1]
    return None


class ApiClient:
    """Talks to one API endpoint as one user: over a keystoneauth
    ``session`` (its auth plugin adds the token), else plain requests with
    ``token`` as ``X-Auth-Token``."""

    def __init__(self, endpoint=DEFAULT_ENDPOINT, *, token=None,
                 session=None, microversion='latest', timeout=30.0):
        base = (endpoint or DEFAULT_ENDPOINT).rstrip('/')
        if '/v2' not in base:
            base += '/v2.1'
        self.base = base
        # The API's port: other APIs than compute's are mounted there.
        self.root = base.rsplit('/v2', 1)[0]
        self.timeout = timeout
        self.ks_session = session
        self.headers = {
            'Accept': 'application/json',
            'OpenStack-API-Version': 'compute %s' % microversion,
            'User-Agent': 'tristate-cli'}
        self.session = requests.Session()
        if token:
            self.headers['X-Auth-Token'] = token

    def _send(self, method, url, **kwargs):
        if self.ks_session is None:
            return self.session.request(method, url, headers=self.headers,
                                        timeout=self.timeout, **kwargs)
        try:
            return self.ks_session.request(
                url, method, headers=dict(self.headers), raise_exc=False,
                timeout=self.timeout, **kwargs)
        except ks_exceptions.ConnectionError as err:
            raise requests.ConnectionError(str(err)) from None
        except ks_exceptions.ClientException as err:
            raise ApiError('Cannot authenticate: %s' % err) from None

    def request(self, method, path, *, body=None, params=None, base=None):
        """``path`` under ``base`` (default: the compute API's /v2.1)."""
        return self.request_full(method, path, body=body, params=params,
                                 base=base)[0]

    def request_full(self, method, path, *, body=None, params=None,
                     base=None):
        """(the answer's JSON body or None, its headers)."""
        url = (self.base if base is None else base) + path
        try:
            resp = self._send(method, url, json=body, params=params)
        except requests.RequestException as err:
            raise ApiError('Cannot reach the Tristate API at %s: %s. Is it '
                           'running (tristate-all, tristate-api)? Set '
                           '--os-endpoint, --os-cloud or '
                           '--os-compute-endpoint-override.'
                           % (self.base, err)) from None
        if resp.status_code >= 400:
            raise ApiError('%s (HTTP %d)' % (_message(resp), resp.status_code),
                           status=resp.status_code)
        if resp.status_code == 204 or not resp.content:
            return None, resp.headers
        return resp.json(), resp.headers

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
        # Every page, narrowed by the API's name filter (a regular
        # expression: the name matched exactly, its characters literal).
        found = [s for s in self.list_servers({'name': exact_name_pattern(
            name_or_id)}) if s['name'] == name_or_id]
        if len(found) == 1:
            return found[0]
        if not found:
            raise ApiError('No server with a name or ID of %r exists.'
                           % name_or_id, status=404)
        raise ApiError('More than one server is named %r: use its ID (%s).'
                       % (name_or_id, ', '.join(s['id'] for s in found)))

    def list_servers(self, params, *, limit=None):
        """``/servers/detail`` with ``params``, following the API's next
        links (``marker``) until ``limit`` servers or the last page."""
        params, out = dict(params), []
        if limit == 0:
            return out
        while True:
            if limit is not None:
                params['limit'] = limit - len(out)
            found = self.get('/servers/detail', **params)
            out.extend(found['servers'])
            marker = next_marker(found.get('servers_links'))
            if (not marker or not found['servers']
                    or (limit is not None and len(out) >= limit)):
                return out[:limit] if limit is not None else out
            if marker == params.get('marker'):
                raise ApiError('The API answered the page after %s twice: '
                               'stopped after %d servers.'
                               % (marker, len(out)))
            params['marker'] = marker

    def action(self, server_id, body):
        return self.post('/servers/%s/action' % server_id, body)

    def start_task(self, path, body):
        """POST a request that starts a task: (answer, the task's id or
        None when the API names none)."""
        answer, headers = self.request_full('POST', path, body=body)
        return answer, headers.get(TASK_ID_HEADER)

    # --- waiting --------------------------------------------------------------

    def wait_settled(self, server_id, *, timeout, progress=None):
        """Poll until no task runs on the server; return it. ``progress``
        is called with the server after each poll."""
        deadline = time.monotonic() + timeout
        while True:
            server = self.server(server_id)
            if progress is not None:
                progress(server)
            if server['OS-EXT-STS:task_state'] is None:
                return server
            if time.monotonic() > deadline:
                raise ApiError(
                    'Server %s did not settle within %.0f s: status %s, task '
                    '%s (task_id %s)' % (server_id, timeout, server['status'],
                                         server['OS-EXT-STS:task_state'],
                                         server.get('tristate:task_id')))
            time.sleep(POLL_INTERVAL)

    def actions(self, server_ref):
        """(the server, its action log newest first) by name or id."""
        server = self.find_server(server_ref)
        return server, self.get('/servers/%s/os-instance-actions'
                                % server['id'])['instanceActions']

    def task_entry(self, server_id, task_id):
        """The action log's entry of one task, or None if the API keeps
        none by that id."""
        try:
            return self.get('/servers/%s/os-instance-actions/%s'
                            % (server_id, task_id))['instanceAction']
        except ApiError as err:
            if err.status == 404:
                return None
            raise

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

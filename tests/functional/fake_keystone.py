"""A stand-in for Keystone's identity v3, just enough for keystoneauth's
plugins and a catalog: version discovery, ``POST /v3/auth/tokens`` (any
password, token or application credential is accepted and recorded) and
the services, endpoints and regions an operator registers.

The token it issues is ``USER:PROJECT``, so a ``tristate-all`` on noauth
takes whoever authenticated here for that user in that project: the
command line's Keystone path is then exercised end to end without a real
Keystone. Tests that need real Keystone use the tempest environment.
"""

import http.server
import json
import threading
import uuid


class FakeKeystone:
    """``FakeKeystone(catalog).start()``; ``url`` is its ``/v3``."""

    def __init__(self, *, user='kuser', project='kproj'):
        self.user, self.project = user, project
        self.services, self.endpoints = [], []
        self.regions = [{'id': 'RegionOne'}]
        self.auth_methods = []
        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                      self._handler())
        self.url = 'http://127.0.0.1:%d/v3' % self.server.server_port

    def register(self, service_type, url, *, interface='public',
                 region='RegionOne'):
        service = {'id': uuid.uuid4().hex, 'type': service_type,
                   'name': service_type, 'enabled': True}
        self.services.append(service)
        self.endpoints.append({'id': uuid.uuid4().hex, 'url': url,
                               'interface': interface, 'region': region,
                               'region_id': region, 'enabled': True,
                               'service_id': service['id']})

    def start(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def catalog(self):
        return [dict(s, endpoints=[e for e in self.endpoints
                                   if e['service_id'] == s['id']])
                for s in self.services]

    def token(self):
        return {'token': {
            'methods': self.auth_methods[-1:], 'expires_at':
            '2099-01-01T00:00:00.000000Z',
            'issued_at': '2026-01-01T00:00:00.000000Z',
            'user': {'id': self.user, 'name': self.user,
                     'domain': {'id': 'default', 'name': 'Default'}},
            'project': {'id': self.project, 'name': self.project,
                        'domain': {'id': 'default', 'name': 'Default'}},
            'roles': [{'id': 'admin', 'name': 'admin'}],
            'catalog': self.catalog()}}

    def _issue(self, body):
        self.auth_methods.append(body['auth']['identity']['methods'][0])
        return self.token(), [('X-Subject-Token',
                               '%s:%s' % (self.user, self.project))]

    def _add_service(self, body):
        made = dict({'enabled': True}, **body['service'],
                    id=uuid.uuid4().hex)
        self.services.append(made)
        return {'service': made}, ()

    def _add_endpoint(self, body):
        made = dict({'enabled': True}, **body['endpoint'],
                    id=uuid.uuid4().hex)
        made['region'] = made.get('region_id')
        self.endpoints.append(made)
        return {'endpoint': made}, ()

    def _handler(self):
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, body, headers=()):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _body(self):
                length = int(self.headers.get('Content-Length') or 0)
                return json.loads(self.rfile.read(length) or b'{}')

            def do_GET(self):
                path = self.path.split('?')[0].rstrip('/')
                if path in ('', '/v3'):
                    return self._send(200, {'version': {
                        'id': 'v3.14', 'status': 'stable',
                        'updated': '2020-01-01T00:00:00Z',
                        'links': [{'rel': 'self', 'href': fake.url + '/'}],
                        'media-types': [{
                            'base': 'application/json',
                            'type': 'application/vnd.openstack.identity-v3'
                                    '+json'}]}})
                lists = {'/v3/services': 'services',
                         '/v3/endpoints': 'endpoints',
                         '/v3/regions': 'regions'}
                if path in lists:
                    key = lists[path]
                    return self._send(200, {key: getattr(fake, key),
                                            'links': {'next': None}})
                return self._send(404, {'error': {'code': 404}})

            def do_POST(self):
                path = self.path.split('?')[0].rstrip('/')
                post = {'/v3/auth/tokens': fake._issue,
                        '/v3/services': fake._add_service,
                        '/v3/endpoints': fake._add_endpoint}.get(path)
                if post is None:
                    return self._send(404, {'error': {'code': 404}})
                return self._send(201, *post(self._body()))

        return Handler

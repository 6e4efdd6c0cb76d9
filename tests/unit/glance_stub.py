"""A small Glance v2 stand-in over real HTTP, for the client and cache tests.

It speaks the calls :class:`common.images.client.GlanceClient` makes (show,
download, upload chunked or sized, create, patch, delete, list with
``next`` links) with Glance's error bodies, and counts requests. Knobs:

* ``grant``: the ``X-Tristate-Image-Grant`` value required (403 without);
* ``token``: an ``X-Auth-Token`` required (401 without);
* ``hold``: a :class:`threading.Event` each download waits for before it
  sends a byte (so concurrent fetches pile up);
* ``cut_after``: a download sends this many bytes of a longer promised
  body and closes the connection;
* ``fail``: ``{(method, path): status}`` answered with a Glance error.

The lead wires the real image API later; these tests pin the client's and
the cache's side of the protocol.
"""

import hashlib
import http.server
import json
import threading
import urllib.parse
import uuid as uuidlib


def record(data, *, image_id=None, status='active', disk_format='raw',
           **extra):
    """An image record with the hashes of ``data``."""
    meta = {'id': image_id or str(uuidlib.uuid4()), 'status': status,
            'disk_format': disk_format, 'container_format': 'bare',
            'size': len(data), 'checksum': hashlib.md5(data).hexdigest(),
            'os_hash_algo': 'sha512',
            'os_hash_value': hashlib.sha512(data).hexdigest(),
            'visibility': 'private', 'name': 'img'}
    meta.update(extra)
    return meta


class GlanceStub:
    def __init__(self):
        self.images = {}        # id -> {'meta': {...}, 'data': bytes}
        self.requests = []      # (method, path, headers)
        self.grant = None
        self.token = None
        self.hold = None
        self.cut_after = None
        self.fail = {}
        self.page_size = None
        self.lock = threading.Lock()
        stub = self

        class Handler(_Handler):
            glance = stub

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                      Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]

    def add(self, data, **kwargs):
        meta = record(data, **kwargs)
        self.images[meta['id']] = {'meta': meta, 'data': data}
        return meta['id']

    def count(self, method, suffix):
        with self.lock:
            return sum(1 for m, p, _h in self.requests
                       if m == method and p.endswith(suffix))

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    glance = None

    def log_message(self, *args):
        pass

    # --- answers ---------------------------------------------------------------

    def _send(self, status, body=None, headers=None):
        data = b'' if body is None else json.dumps(body).encode()
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if body is not None:
            self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status, message):
        self._send(status, {'code': status, 'title': 'Error',
                            'message': message})

    def _read_body(self):
        if self.headers.get('Transfer-Encoding', '').lower() == 'chunked':
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b';')[0], 16)
                if not size:
                    self.rfile.readline()
                    return b''.join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get('Content-Length') or 0))

    # --- routing -----------------------------------------------------------------

    def _route(self, method):
        glance = self.glance
        url = urllib.parse.urlsplit(self.path)
        with glance.lock:
            glance.requests.append((method, url.path, dict(self.headers)))
        body = self._read_body() if method in ('PUT', 'POST', 'PATCH') \
            else b''
        if (method, url.path) in glance.fail:
            return self._error(glance.fail[(method, url.path)], 'injected')
        if glance.token and self.headers.get('X-Auth-Token') != glance.token:
            return self._error(401, 'The request you have made requires '
                                    'authentication.')
        if glance.grant and self.headers.get(
                'X-Tristate-Image-Grant') != glance.grant:
            return self._error(403, 'grant refused')
        parts = url.path.strip('/').split('/')
        if parts[:2] != ['v2', 'images']:
            return self._error(404, 'no such route')
        query = dict(urllib.parse.parse_qsl(url.query))
        return self._dispatch(method, parts[2:], body, query)

    def _dispatch(self, method, rest, body, query):
        if not rest:
            handler = {'GET': lambda: self._list(query),
                       'POST': lambda: self._create(json.loads(body))}
            return handler.get(method, self._not_allowed)()
        image = self.glance.images.get(rest[0])
        if image is None:
            return self._error(404, 'No image found with ID %s' % rest[0])
        if rest[1:] == ['file']:
            handler = {'GET': lambda: self._download(image),
                       'PUT': lambda: self._upload(image, body)}
            return handler.get(method, self._not_allowed)()
        if len(rest) == 1:
            return self._one(method, rest[0], image, body)
        return self._not_allowed()

    def _not_allowed(self):
        return self._error(405, 'method not allowed')

    def _one(self, method, image_id, image, body):
        if method == 'GET':
            return self._send(200, image['meta'])
        if method == 'DELETE':
            del self.glance.images[image_id]
            return self._send(204)
        if method == 'PATCH':
            for change in json.loads(body):
                image['meta'][change['path'].strip('/')] = change.get('value')
            return self._send(200, image['meta'])
        return self._error(405, 'method not allowed')

    def _list(self, query):
        metas = [i['meta'] for i in self.glance.images.values()
                 if all(i['meta'].get(k) == v for k, v in query.items()
                        if k not in ('limit', 'marker'))]
        metas.sort(key=lambda m: m['id'])
        if 'marker' in query:
            metas = [m for m in metas if m['id'] > query['marker']]
        limit = int(query.get('limit', 0)) or len(metas)
        page = metas[:limit]
        body = {'images': page}
        if len(metas) > limit:
            body['next'] = '/v2/images?limit=%d&marker=%s' % (
                limit, page[-1]['id'])
        return self._send(200, body)

    def _create(self, fields):
        meta = record(b'', **fields)
        meta.update(status='queued', size=None, checksum=None,
                    os_hash_value=None)
        self.glance.images[meta['id']] = {'meta': meta, 'data': b''}
        return self._send(201, meta)

    def _upload(self, image, body):
        image['data'] = body
        image['meta'].update(record(body, image_id=image['meta']['id'],
                                    disk_format=image['meta']['disk_format'],
                                    name=image['meta'].get('name')))
        return self._send(204)

    def _download(self, image):
        glance = self.glance
        if glance.hold is not None:
            glance.hold.wait(10)
        data = image['data']
        self.send_response(200)
        self.send_header('Content-Type', 'application/octet-stream')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        if glance.cut_after is not None:
            self.wfile.write(data[:glance.cut_after])
            self.wfile.flush()
            self.close_connection = True
            return
        for start in range(0, len(data), 65536):
            self.wfile.write(data[start:start + 65536])

    def do_GET(self):       # noqa: N802 (http.server's names)
        self._route('GET')

    def do_PUT(self):       # noqa: N802
        self._route('PUT')

    def do_POST(self):      # noqa: N802
        self._route('POST')

    def do_PATCH(self):     # noqa: N802
        self._route('PATCH')

    def do_DELETE(self):    # noqa: N802
        self._route('DELETE')

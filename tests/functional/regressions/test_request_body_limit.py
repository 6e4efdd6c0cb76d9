"""The API read request bodies of any size.

Four concurrent ``POST /servers`` with 64 MB each in a field were read whole,
parsed and accepted (202 in 1.4 s), and the process grew from 146 MB to
916 MB: any user could exhaust the API's memory. Found by trying the API as an
attacker would (issue 20). Fixed: oslo.middleware's RequestBodySizeLimiter
(``api/middleware.py``) refuses a body over ``[api] max_request_body_size``
(112 KiB by default, Nova's) with 413 before reading it, by its
Content-Length; a chunked body is refused once it passes the limit.
"""

import json
import socket

import pytest
import requests

from api import service as api_service
from tests.functional import api_support

LIMIT = 4096
BIG = 64 * 1024 * 1024


@pytest.fixture
def server(plane):
    conf = api_support.configure(plane.conf, max_request_body_size=LIMIT)
    client = api_service.make_client(conf, plane.bus, plane.statedb)
    server = api_service.serve(conf, client, host='127.0.0.1', port=0)
    yield server
    server.stop()


def _answer(sock):
    """Status code and JSON body of the one response on ``sock``."""
    data = b''
    while b'\r\n\r\n' not in data:
        chunk = sock.recv(65536)
        assert chunk, 'connection closed before a response: %r' % data
        data += chunk
    head, _, rest = data.partition(b'\r\n\r\n')
    lines = head.decode('latin-1').split('\r\n')
    headers = dict(line.split(': ', 1) for line in lines[1:])
    length = int(headers['Content-Length'])
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, 'connection closed inside the response'
        rest += chunk
    return int(lines[0].split()[1]), json.loads(rest[:length])


def _connect(server):
    sock = socket.create_connection((server.host, server.port), timeout=10)
    return sock


def _head(method, path, length=None, chunked=False):
    lines = ['%s %s HTTP/1.1' % (method, path), 'Host: api',
             'X-Auth-Token: %s' % api_support.new_project(),
             'Content-Type: application/json']
    if length is not None:
        lines.append('Content-Length: %d' % length)
    if chunked:
        lines.append('Transfer-Encoding: chunked')
    return ('\r\n'.join(lines) + '\r\n\r\n').encode()


def _assert_too_large(code, body):
    assert code == 413, body
    assert body['overLimit']['message'] == (
        'Request body too large: at most %d bytes ([api] '
        'max_request_body_size)' % LIMIT)


def test_a_large_body_is_refused_before_it_is_read(server):
    with _connect(server) as sock:
        # 64 MB announced, a few bytes sent: the answer comes without them.
        sock.sendall(_head('POST', '/v2.1/servers', length=BIG)
                     + b'{"server": {"name": "')
        _assert_too_large(*_answer(sock))


def test_a_large_chunked_body_is_refused(server):
    chunk = b'x' * 1024
    with _connect(server) as sock:
        sock.sendall(_head('POST', '/v2.1/servers', chunked=True))
        try:
            for _ in range(2 * LIMIT // len(chunk)):
                sock.sendall(b'%x\r\n%s\r\n' % (len(chunk), chunk))
            sock.sendall(b'0\r\n\r\n')
        except (BrokenPipeError, ConnectionResetError):
            pass            # refused while we were still sending
        _assert_too_large(*_answer(sock))


def test_bodies_within_the_limit_are_served(server):
    base = server.url + '/v2.1'
    token = api_support.new_project()
    body = {'server': {'name': 'small', 'flavorRef': 'tiny',
                       'imageRef': api_support.IMAGE}}
    resp = requests.post(base + '/servers', json=body, timeout=30,
                         headers={'X-Auth-Token': token})
    assert resp.status_code == 202, resp.text
    # The same body sent chunked is read whole and served too.
    data = json.dumps(body).encode()
    resp = requests.post(base + '/servers', data=iter([data[:10], data[10:]]),
                         timeout=30, headers={
                             'X-Auth-Token': token,
                             'Content-Type': 'application/json'})
    assert resp.status_code == 202, resp.text
    names = [s['name'] for s in requests.get(
        base + '/servers', headers={'X-Auth-Token': token},
        timeout=30).json()['servers']]
    assert names == ['small', 'small']


def test_a_negative_content_length_is_a_400(server):
    with _connect(server) as sock:
        sock.sendall(_head('POST', '/v2.1/servers', length=-5) + b'{}')
        code, body = _answer(sock)
    assert code == 400, body
    assert body['badRequest']['message'] == (
        "Content-Length must be a whole number of bytes, not '-5'")

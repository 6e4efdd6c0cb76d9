"""The HTTP server runs a WSGI app from a thread and stops cleanly, and
refuses connections past its limit."""

import socket
import time

import requests

from api import server as server_mod


def _app(environ, start_response):
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [environ['PATH_INFO'].encode()]


def test_serves_on_a_free_port_and_stops():
    server = server_mod.ApiServer(_app, host='127.0.0.1', port=0,
                                  threads=2).start()
    try:
        assert server.port > 0
        assert server.url == 'http://127.0.0.1:%d' % server.port
        resp = requests.get(server.url + '/hello', timeout=5)
        assert (resp.status_code, resp.text) == (200, '/hello')
        assert resp.headers['Server'] == 'tristate-api'
    finally:
        server.stop()
    assert server.thread is None
    server.stop()       # twice is harmless


def _get(sock):
    sock.sendall(b'GET /x HTTP/1.1\r\nHost: api\r\n\r\n')
    data = b''
    while b'\r\n\r\n' not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def test_connections_past_max_connections_are_refused_until_one_closes():
    limits = server_mod.Limits(max_connections=1)
    server = server_mod.ApiServer(_app, host='127.0.0.1', port=0, threads=2,
                                  limits=limits).start()
    address = (server.host, server.port)
    try:
        with socket.create_connection(address, timeout=10) as first:
            assert _get(first).startswith(b'HTTP/1.1 200 ')   # kept alive
            with socket.create_connection(address, timeout=10) as second:
                refused = _get(second)
                while chunk := second.recv(4096):     # then closed
                    refused += chunk
            assert refused.startswith(b'HTTP/1.1 503 Service Unavailable'), (
                refused)
            assert b'Retry-After: 1' in refused
            assert b'[api] max_connections (1)' in refused
        # Once the first is closed, a new connection is served.
        deadline = time.monotonic() + 10
        while True:
            with socket.create_connection(address, timeout=10) as third:
                answer = _get(third)
            if answer.startswith(b'HTTP/1.1 200 ') or (
                    time.monotonic() > deadline):
                break
            time.sleep(0.05)
        assert answer.startswith(b'HTTP/1.1 200 '), answer
    finally:
        server.stop()


def test_headers_past_their_limit_are_refused():
    server = server_mod.ApiServer(_app, host='127.0.0.1', port=0,
                                  threads=2).start()
    try:
        huge = 'x' * server_mod.MAX_HEADER_BYTES
        resp = requests.get(server.url + '/hello', timeout=10,
                            headers={'X-Huge': huge})
        assert resp.status_code == 413, resp.text
        resp = requests.get(server.url + '/' + huge, timeout=10)
        assert resp.status_code == 414, resp.text
        assert requests.get(server.url + '/hello', timeout=10).ok
    finally:
        server.stop()

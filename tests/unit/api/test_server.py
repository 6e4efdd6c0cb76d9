"""The HTTP server runs a WSGI app from a thread and stops cleanly."""

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

"""The API behind a reverse proxy, as the operator guide's "Running the API in
production" sets it up: HAProxy on loopback in front of the API's server
(``api.service.serve``, what ``tristate-api`` runs), with ``[oslo_middleware]
enable_proxy_headers_parsing`` so that links name the URL the client used,
and the proxy's ``timeout http-request`` cutting clients that dribble headers
before they reach the API. Skipped where HAProxy is not installed
(``apt-get install haproxy``); the middleware's wiring is tested without it.
"""

import shutil
import socket
import subprocess
import time

import pytest
import requests

from api import service as api_service
from tests import support
from tests.functional import api_support
from tests.functional.conftest import set_opts

HAPROXY = shutil.which('haproxy')
PUBLIC_HOST = 'compute.example.com'
THREADS = 2

# The guide's configuration, with loopback ports and short client timeouts.
HAPROXY_CFG = '''
global
    maxconn 256
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 60s
    timeout http-request 1s
    option http-buffer-request
    option forwardfor
frontend compute
    bind 127.0.0.1:%(front)d
    http-request set-header X-Forwarded-Proto https
    http-request set-header X-Forwarded-Host %%[req.hdr(host)]
    default_backend tristate_api
backend tristate_api
    option httpchk GET /healthcheck
    server api1 127.0.0.1:%(api)d check maxconn %(threads)d
'''


@pytest.fixture
def api_server(plane):
    conf = api_support.configure(plane.conf, threads=THREADS)
    set_opts(conf, 'oslo_middleware', enable_proxy_headers_parsing=True)
    client = api_service.make_client(conf, plane.bus, plane.statedb)
    server = api_service.serve(conf, client, host='127.0.0.1', port=0)
    yield server
    server.stop()


@pytest.fixture
def proxy(tmp_path, api_server):
    if HAPROXY is None:
        pytest.skip('HAProxy is not installed (apt-get install haproxy)')
    front = support.free_port()
    cfg = tmp_path / 'haproxy.cfg'
    cfg.write_text(HAPROXY_CFG % {'front': front, 'api': api_server.port,
                                  'threads': THREADS})
    log = open(tmp_path / 'haproxy.log', 'w')
    proc = subprocess.Popen([HAPROXY, '-db', '-f', str(cfg)], stdout=log,
                            stderr=subprocess.STDOUT)
    base = 'http://127.0.0.1:%d' % front
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, (tmp_path / 'haproxy.log').read_text()
            try:
                requests.get(base + '/', timeout=5)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline, 'HAProxy did not listen'
                time.sleep(0.05)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_links_name_the_url_the_client_used(proxy):
    token = api_support.new_project()
    body = {'server': {'name': 'web', 'flavorRef': 'tiny',
                       'imageRef': api_support.IMAGE}}
    resp = requests.post(proxy + '/v2.1/servers', json=body, timeout=30,
                         headers={'X-Auth-Token': token,
                                  'Host': PUBLIC_HOST})
    assert resp.status_code == 202, resp.text
    server_id = resp.json()['server']['id']
    hrefs = [link['href'] for link in resp.json()['server']['links']]
    assert 'https://%s/v2.1/servers/%s' % (PUBLIC_HOST, server_id) in hrefs
    versions = requests.get(proxy + '/', headers={'Host': PUBLIC_HOST},
                            timeout=30).json()
    assert versions['versions'][0]['links'][0]['href'].startswith(
        'https://%s/' % PUBLIC_HOST)


def test_the_proxy_cuts_dribbled_headers_and_serves_others(proxy):
    host, port = proxy.rsplit(':', 1)
    slow = []
    try:
        for _ in range(THREADS * 4):
            sock = socket.create_connection(('127.0.0.1', int(port)),
                                            timeout=30)
            sock.sendall(b'GET /v2.1/servers HTTP/1.1\r\nHost: x\r\n')
            slow.append(sock)
        for _ in range(5):
            for sock in slow:
                try:
                    sock.sendall(b'X-Slow: 1\r\n')
                except OSError:
                    pass
            resp = requests.get(proxy + '/v2.1/servers', timeout=10,
                                headers={'X-Auth-Token':
                                         api_support.new_project()})
            assert resp.status_code == 200, resp.text
            time.sleep(0.3)
        answers = []
        for sock in slow:
            try:
                answers.append(sock.recv(4096).split(b'\r\n')[0])
            except OSError as err:
                answers.append(repr(err).encode())
        assert set(answers) == {b'HTTP/1.1 408 Request Time-out'}, answers
    finally:
        for sock in slow:
            sock.close()


def test_proxy_headers_are_ignored_unless_enabled(plane):
    app = api_support.make_app(plane)
    api = api_support.Api(app, api_support.new_project())
    headers = {'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': PUBLIC_HOST}
    doc = api.get('/', headers=headers).get_json()
    assert doc['versions'][0]['links'][0]['href'].startswith('http://localhost/')
    set_opts(plane.conf, 'oslo_middleware', enable_proxy_headers_parsing=True)
    api = api_support.Api(api_support.make_app(plane),
                          api_support.new_project())
    doc = api.get('/', headers=headers).get_json()
    assert doc['versions'][0]['links'][0]['href'].startswith(
        'https://%s/' % PUBLIC_HOST)

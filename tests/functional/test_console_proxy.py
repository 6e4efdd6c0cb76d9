"""``tristate-console-proxy`` (issue 24): a WebSocket client (websocket-
client) reaches a guest's serial console through the proxy, once per token.

The plane's fake hypervisors put every guest's serial console on one port
(``[serial_console] port_range`` P:P); the test runs a TCP echo server
there on loopback, standing for QEMU's raw serial listener. The proxy runs
in the test's process, checking tokens with the plane's conductors over
the bus (``session_check_interval`` 0.1 s).
"""

import socket
import socketserver
import threading
import time
import urllib.parse

import pytest
import websocket

from api import service as api_service
from api.console_proxy import proxy as proxy_mod
from tests.functional import api_support
from tests.functional.conftest import TIMEOUT
from tests.functional.conftest import Planes
from tests.functional.conftest import new_conf
from tests.functional.conftest import set_opts


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class _Echo(socketserver.BaseRequestHandler):
    def handle(self):
        self.server.connections += 1
        while True:
            data = self.request.recv(4096)
            if not data:
                return
            # what a guest's shell would answer to what it was typed
            self.request.sendall(b'echo:' + data)


class EchoServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    connections = 0


@pytest.fixture(scope='module')
def serial_port():
    return _free_port()


@pytest.fixture(scope='module')
def echo(serial_port):
    server = EchoServer(('127.0.0.1', serial_port), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope='module')
def plane(tmp_path_factory, serial_port):
    conf = new_conf(tmp_path_factory.mktemp('plane'))
    set_opts(conf, 'serial_console', enabled=True,
             port_range='%d:%d' % (serial_port, serial_port),
             session_check_interval=0.1)
    planes = Planes(conf)
    yield planes.start(hosts=2)
    planes.stop_all()
    conf.reset()


@pytest.fixture(scope='module')
def proxy(plane):
    client = api_service.make_client(api_support.configure(plane.conf),
                                     plane.bus, plane.statedb)
    server = proxy_mod.ConsoleProxy(
        host='127.0.0.1', port=0, conductor=client,
        check_interval=plane.conf.serial_console.session_check_interval)
    server.start()
    set_opts(plane.conf, 'serial_console', base_url=server.url)
    yield server
    server.stop()


@pytest.fixture(scope='module')
def app(plane, proxy):
    return api_support.make_app(plane)


@pytest.fixture
def api(app):
    return api_support.Api(app, api_support.new_project())


def console_url(api, server_id):
    resp = api.post('/servers/%s/remote-consoles' % server_id,
                    {'remote_console': {'protocol': 'serial',
                                        'type': 'serial'}})
    assert resp.status_code == 200, resp.get_json()
    return resp.get_json()['remote_console']['url']


def connect(url):
    return websocket.create_connection(url, timeout=TIMEOUT)


def test_bytes_flow_both_ways(api, proxy, echo):
    server = api.active()
    ws = connect(console_url(api, server['id']))
    try:
        ws.send_binary(b'echo $((6*7))\n')
        assert ws.recv() == b'echo:echo $((6*7))\n'
        ws.send_binary(b'\x00\xff')
        assert ws.recv() == b'echo:\x00\xff'
    finally:
        ws.close()


def test_a_token_works_once(api, proxy, echo):
    server = api.active()
    url = console_url(api, server['id'])
    connect(url).close()
    with pytest.raises(websocket.WebSocketBadStatusException) as err:
        connect(url)
    assert err.value.status_code == 403


def test_no_or_unknown_token_is_refused(api, proxy, echo):
    with pytest.raises(websocket.WebSocketBadStatusException) as err:
        connect(proxy.url)
    assert err.value.status_code == 403
    with pytest.raises(websocket.WebSocketBadStatusException) as err:
        connect(proxy.url + '?token=nothing-like-it')
    assert err.value.status_code == 403


def test_an_expired_token_is_refused(api, proxy, echo, plane):
    set_opts(plane.conf, 'serial_console', token_ttl=1)
    try:
        server = api.active()
        url = console_url(api, server['id'])
    finally:
        plane.conf.clear_override('token_ttl', group='serial_console')
    time.sleep(1.2)    # the TTL's floor is 1 s; the conductor's clock is real
    with pytest.raises(websocket.WebSocketBadStatusException) as err:
        connect(url)
    assert err.value.status_code == 403


def test_deleting_the_instance_closes_its_open_session(api, proxy, echo):
    server = api.active()
    other = api.active()
    ws = connect(console_url(api, server['id']))
    kept = connect(console_url(api, other['id']))
    try:
        ws.send_binary(b'x')
        assert ws.recv() == b'echo:x'
        assert api.delete('/servers/%s' % server['id']).status_code == 204
        started = time.monotonic()
        opcode, frame = ws.recv_data_frame(True)   # blocks until closed
        assert opcode == websocket.ABNF.OPCODE_CLOSE
        assert frame.data[:2] == (1000).to_bytes(2, 'big')
        assert frame.data[2:].decode() == proxy_mod.DELETED_REASON
        assert time.monotonic() - started < TIMEOUT
        # the other instance's session is still open
        kept.send_binary(b'y')
        assert kept.recv() == b'echo:y'
    finally:
        ws.close()
        kept.close()


def test_the_url_is_the_configured_base_with_the_token(api, proxy):
    server = api.active()
    url = urllib.parse.urlsplit(console_url(api, server['id']))
    assert url.netloc == urllib.parse.urlsplit(proxy.url).netloc
    assert list(urllib.parse.parse_qs(url.query)) == ['token']


class _SilentConductor:
    """A conductor client whose calls time out (no conductor answers)."""

    def consume_console_token(self, ctx, token):
        from common import rpc
        raise rpc.MessagingTimeout('no reply')

    def consoles_alive(self, ctx, uuids):
        return list(uuids)


def test_no_conductor_is_a_503_not_a_refusal():
    server = proxy_mod.ConsoleProxy(host='127.0.0.1', port=0,
                                    conductor=_SilentConductor(),
                                    check_interval=1).start()
    try:
        with pytest.raises(websocket.WebSocketBadStatusException) as err:
            connect(server.url + '?token=whatever')
        assert err.value.status_code == 503
    finally:
        server.stop()

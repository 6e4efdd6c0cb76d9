"""Clients dribbling their headers froze the API.

cheroot gives a connection one of the API's worker threads from its first
byte until its request is read, and reads with no deadline on the whole (the
socket timeout bounds each read only). 16 connections sending a header line
every few seconds (as many as ``[api] threads``) held every worker, and 100 %
of another user's requests timed out. Found by trying the API as an attacker
would (issue 20). Fixed (``api/server.py``): the request line and headers must
arrive within ``[api] header_timeout`` (408 and closed otherwise), the body
within ``[api] body_timeout``, and ``[api] max_connections_per_client``
refuses a client's connections past its share with 503.
"""

import socket
import threading
import time

import pytest
import requests

from api import service as api_service
from tests.functional import api_support

THREADS = 4
SLOW = THREADS + 4          # more slow connections than worker threads
ATTACKER = '127.0.0.2'      # another loopback address than the user's


class Dribbler:
    """A connection that sends a request line, then a header line every
    ``every`` seconds and never ends its headers."""

    def __init__(self, server, every=0.2):
        self.sock = socket.create_connection(
            (server.host, server.port), timeout=30,
            source_address=(ATTACKER, 0))
        self.every = every
        self.answer = b''
        self.stop = threading.Event()
        self.end_headers = False
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def _run(self):
        try:
            self.sock.sendall(b'GET /v2.1/servers HTTP/1.1\r\nHost: api\r\n')
            while not self.stop.wait(self.every):
                self.sock.sendall(b'X-Slow: 1\r\n')
            if self.end_headers:
                self.sock.sendall(b'\r\n')
        except OSError:
            pass            # the server ended the connection
        try:
            self.answer = self.sock.recv(4096)
        except OSError:
            pass

    def close(self):
        self.stop.set()
        self.thread.join(timeout=30)
        self.sock.close()


@pytest.fixture
def serve(plane):
    servers = []

    def start(**api_opts):
        conf = api_support.configure(plane.conf, threads=THREADS, **api_opts)
        client = api_service.make_client(conf, plane.bus, plane.statedb)
        servers.append(api_service.serve(conf, client, host='127.0.0.1',
                                         port=0))
        return servers[-1]
    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def dribblers():
    started = []
    yield started
    for dribbler in started:
        dribbler.close()


def _served_while_dribbling(server, dribblers, deadline):
    """Another user's listing, asked while SLOW connections dribble."""
    for _ in range(SLOW):
        dribblers.append(Dribbler(server).start())
    time.sleep(0.3)             # every worker is now reading a dribbler
    resp = requests.get(server.url + '/v2.1/servers', timeout=deadline,
                        headers={'X-Auth-Token': api_support.new_project()})
    assert resp.status_code == 200, resp.text
    return resp


def test_dribbled_headers_time_out_and_others_are_served(serve, dribblers):
    server = serve(header_timeout=1)
    _served_while_dribbling(server, dribblers, deadline=15)
    for dribbler in dribblers:        # still dribbling: cut by the server
        dribbler.thread.join(timeout=15)
        assert dribbler.answer.startswith(b'HTTP/1.1 408 '), dribbler.answer
        assert b'[api] header_timeout' in dribbler.answer


def test_connections_past_a_clients_share_are_refused(serve, dribblers):
    # The header deadline is far: the per-client limit alone keeps workers.
    server = serve(header_timeout=60, max_connections_per_client=THREADS // 2)
    _served_while_dribbling(server, dribblers, deadline=15)
    for dribbler in dribblers:
        dribbler.end_headers = True     # the admitted ones are then served
        dribbler.stop.set()
    for dribbler in dribblers:
        dribbler.thread.join(timeout=15)
    answers = [d.answer.split(b'\r\n')[0] for d in dribblers]
    assert sorted(answers) == sorted(
        [b'HTTP/1.1 200 OK'] * (THREADS // 2)
        + [b'HTTP/1.1 503 Service Unavailable'] * (SLOW - THREADS // 2))


def test_a_dribbled_body_times_out(serve):
    server = serve(body_timeout=1)
    with socket.create_connection((server.host, server.port),
                                  timeout=30) as sock:
        sock.sendall(b'POST /v2.1/servers HTTP/1.1\r\nHost: api\r\n'
                     b'Content-Type: application/json\r\n'
                     b'Content-Length: 1000\r\n\r\n{')
        started = time.monotonic()
        answer = b''
        try:
            while b'\r\n\r\n' not in answer:
                sock.sendall(b' ')
                sock.settimeout(0.2)
                try:
                    answer += sock.recv(4096)
                except TimeoutError:
                    pass
        except OSError:
            answer += sock.recv(4096)
    assert answer.startswith(b'HTTP/1.1 408 '), answer
    assert time.monotonic() - started < 20

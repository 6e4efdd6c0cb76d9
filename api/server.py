"""The HTTP server: cheroot (CherryPy's production WSGI server), run in a
thread so that ``tristate-api`` and ``tristate-all`` control its life.

``ApiServer(app, host=..., port=...).start()`` returns once the socket
listens (port 0 picks a free one: see :attr:`ApiServer.url`); :meth:`stop`
finishes the requests in flight, up to a few seconds, and returns.

Slow clients: cheroot gives a connection a worker thread once it has sent
its first bytes, and the thread reads the request line, the headers and the
body with blocking reads (each bounded by cheroot's socket timeout, not the
whole). A client that dribbles a header line every few seconds kept a worker
forever, so as many such connections as workers froze the API. Here
:class:`Limits` bounds it:

* ``header_timeout``: the request line and headers must arrive within it
  from the first byte, else 408 and the connection is closed;
* ``body_timeout``: the body (read whole by :mod:`api.middleware`) must
  arrive within it once the headers are in, else 408 (an image upload,
  streamed, has instead a deadline per chunk: ``[image]
  upload_idle_timeout``);
* ``max_connections`` and ``max_connections_per_client``: connections past
  them are answered 503 (``Retry-After``) and closed at their first request;
* the request line and headers are at most :data:`MAX_HEADER_BYTES`.

A deadline is kept by :class:`_Watchdog`: a thread that shuts down the read
side of a socket whose deadline passed, which ends the blocked read at once.
Behind a reverse proxy (the operator guide's "Running the API in
production") the proxy absorbs slow clients and these bounds are a backstop.
"""

import collections
import dataclasses
import functools
import json
import logging
import socket
import threading
import time

from cheroot import server as cheroot_server
from cheroot import wsgi as cheroot_wsgi

from api import faults
from api import middleware

LOG = logging.getLogger(__name__)
# The request line and headers together, at most (cheroot answers 414 or
# 413 past it): a Keystone token is a few hundred bytes.
MAX_HEADER_BYTES = 64 * 1024


@dataclasses.dataclass(frozen=True)
class Limits:
    """How long a client may take, and how many connections it may hold
    (0: no limit)."""
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 0
    max_connections_per_client: int = 0

    @classmethod
    def from_conf(cls, conf):
        api = conf.api
        return cls(header_timeout=api.header_timeout,
                   body_timeout=api.body_timeout,
                   max_connections=api.max_connections,
                   max_connections_per_client=api.max_connections_per_client)


class _Watchdog:
    """Deadlines of the reads in progress (one per connection at a time),
    and the thread that ends the reads that overran theirs."""

    def __init__(self, tick):
        self.tick = tick
        self._lock = threading.Lock()
        self._due = {}          # connection -> (deadline, socket)
        self._expired = set()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='tristate-api-deadlines')

    def start(self):
        self._thread.start()

    def stop(self):
        self._stopped.set()
        self._thread.join(timeout=5)

    def arm(self, conn, seconds):
        with self._lock:
            self._due[conn] = (time.monotonic() + seconds, conn.socket)
            self._expired.discard(conn)

    def disarm(self, conn):
        with self._lock:
            self._due.pop(conn, None)

    def expired(self, conn):
        with self._lock:
            return conn in self._expired

    def forget(self, conn):
        """``conn`` is closed."""
        with self._lock:
            self._due.pop(conn, None)
            self._expired.discard(conn)

    def _run(self):
        while not self._stopped.wait(self.tick):
            now = time.monotonic()
            with self._lock:
                late = [(conn, sock) for conn, (due, sock) in self._due.items()
                        if due <= now]
                for conn, _ in late:
                    del self._due[conn]
                    self._expired.add(conn)
            for conn, sock in late:
                LOG.info('Client %s too slow: its read ends',
                         getattr(conn, 'remote_addr', '?'))
                try:
                    sock.shutdown(socket.SHUT_RD)
                except OSError:
                    pass        # already closed


class _Admission:
    """Counts the connections that have sent a request, per client."""

    def __init__(self, limits):
        self.limits = limits
        self._lock = threading.Lock()
        self._total = 0
        self._per_client = collections.Counter()

    def admit(self, client):
        limits = self.limits
        with self._lock:
            if limits.max_connections and (
                    self._total >= limits.max_connections):
                return 'max_connections (%d)' % limits.max_connections
            if limits.max_connections_per_client and (
                    self._per_client[client]
                    >= limits.max_connections_per_client):
                return 'max_connections_per_client (%d)' % (
                    limits.max_connections_per_client)
            self._total += 1
            self._per_client[client] += 1
            return None

    def release(self, client):
        with self._lock:
            self._total -= 1
            self._per_client[client] -= 1
            if not self._per_client[client]:
                del self._per_client[client]


class _Request(cheroot_server.HTTPRequest):
    """A request whose request line and headers have a deadline."""

    def parse_request(self):
        watchdog = self.server.watchdog
        watchdog.arm(self.conn, self.server.limits.header_timeout)
        try:
            super().parse_request()
        finally:
            watchdog.disarm(self.conn)
        if watchdog.expired(self.conn):
            self.ready = False          # answered 408 below; then closed

    def simple_response(self, status, msg=''):
        if self.server.watchdog.expired(self.conn):
            status = '408 Request Timeout'
            msg = ('The request line and headers did not arrive within %g '
                   's ([api] header_timeout)'
                   % self.server.limits.header_timeout)
        super().simple_response(status, msg)


class _Connection(cheroot_server.HTTPConnection):
    """A connection admitted (or refused) at its first request."""

    RequestHandlerClass = _Request
    admitted = None

    def communicate(self):
        if self.admitted is None:
            refused = self.server.admission.admit(self.remote_addr)
            if refused:
                self._refuse(refused)
                return False
            self.admitted = True
        return super().communicate()

    def _refuse(self, limit):
        LOG.warning('Refused a connection from %s: over %s',
                    self.remote_addr, limit)
        data = json.dumps(faults.body(503, 'Too many connections: over '
                                      '[api] %s; try again later' % limit))
        head = ('HTTP/1.1 503 Service Unavailable\r\nContent-Type: '
                'application/json\r\nContent-Length: %d\r\nRetry-After: 1\r\n'
                'Connection: close\r\n\r\n' % len(data))
        try:
            self.wfile.write((head + data).encode())
            self.wfile.flush()
        except OSError:
            pass

    def close(self):
        if self.admitted:
            self.admitted = False
            self.server.admission.release(self.remote_addr)
        self.server.watchdog.forget(self)
        super().close()


def _deadline(watchdog, conn, seconds):
    """Arm (``seconds``) or end (None) the deadline of the next read of
    ``conn``: a streamed body (an image upload) reads under it chunk by
    chunk instead of under ``body_timeout`` as a whole."""
    if seconds is None:
        watchdog.disarm(conn)
    else:
        watchdog.arm(conn, seconds)


class _Gateway(cheroot_wsgi.Gateway_10):
    """Gives the body its deadline, ended when the body has been read."""

    def get_environ(self):
        environ = super().get_environ()
        server, conn = self.req.server, self.req.conn
        server.watchdog.arm(conn, server.limits.body_timeout)
        environ[middleware.BODY_READ] = lambda: server.watchdog.disarm(conn)
        environ[middleware.BODY_DEADLINE] = functools.partial(
            _deadline, server.watchdog, conn)
        return environ

    def respond(self):
        try:
            return super().respond()
        finally:
            self.req.server.watchdog.disarm(self.req.conn)


class _Server(cheroot_wsgi.Server):
    ConnectionClass = _Connection

    def __init__(self, *args, limits, **kwargs):
        super().__init__(*args, **kwargs)
        self.gateway = _Gateway
        self.max_request_header_size = MAX_HEADER_BYTES
        self.limits = limits
        self.admission = _Admission(limits)
        tick = min(limits.header_timeout, limits.body_timeout) / 10
        self.watchdog = _Watchdog(tick=max(0.02, min(tick, 1.0)))


class ApiServer:
    def __init__(self, app, *, host='127.0.0.1', port=8774, threads=16,
                 shutdown_timeout=5, limits=None):
        self.server = _Server(
            (host, port), app, numthreads=threads,
            server_name='tristate-api', request_queue_size=128,
            shutdown_timeout=shutdown_timeout, limits=limits or Limits())
        self.thread = None

    def start(self):
        """Bind and listen (raises ``OSError`` if the port is taken), then
        serve from a thread."""
        self.server.prepare()
        self.server.watchdog.start()
        self.thread = threading.Thread(target=self.server.serve,
                                       name='tristate-api', daemon=True)
        self.thread.start()
        LOG.info('Tristate API listening on %s', self.url)
        return self

    @property
    def host(self):
        return self.server.bind_addr[0]

    @property
    def port(self):
        return self.server.bind_addr[1]

    @property
    def url(self):
        host = self.host
        if host in ('0.0.0.0', '::'):
            host = '127.0.0.1'
        elif ':' in host:
            host = '[%s]' % host
        return 'http://%s:%d' % (host, self.port)

    def stop(self):
        if self.thread is None:
            return
        self.server.stop()
        self.thread.join(timeout=10)
        self.thread = None
        self.server.watchdog.stop()
        LOG.info('Tristate API stopped')

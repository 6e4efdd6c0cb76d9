"""The console proxy: a WebSocket server (websockify) that opens a guest's
serial console for whoever holds a one-time token.

A client connects to ``[serial_console] base_url`` with ``?token=...``
(the URL ``remote-consoles`` answered with). Before the WebSocket
handshake the proxy consumes the token with a conductor (RPC 1.11,
:mod:`conductor.consoles`): unknown, used, expired, or its instance
deleted → HTTP 403 and nothing is opened (no conductor answering within
``[api] rpc_timeout``: 503). Accepted → the proxy connects
to the address and port the token names (the raw TCP listener of the
guest's serial port on its host, ``[serial_console] listen_address``)
and websockify copies bytes both ways.

Deleted instances: a hard delete is a database UPDATE, maybe made by the
API tier with no bus, so nothing is told to the proxy. Instead a thread
asks a conductor every ``[serial_console] session_check_interval`` which
of the open sessions' instances still exist, and shuts down the TCP side
of every session whose instance is gone: websockify then closes the
WebSocket (status 1000, reason ``the server was deleted``). A conductor
that does not answer closes nothing (the check is tried again).
"""

import http.server
import itertools
import logging
import socket
import threading
import urllib.parse

from websockify import websocketproxy

from common import context
from common import exception

LOG = logging.getLogger(__name__)
DELETED_REASON = 'the server was deleted'


class Session:
    def __init__(self, number, target, sock):
        self.number = number
        self.instance_uuid = target['instance_uuid']
        self.sock = sock
        self.deleted = False

    def kill(self):
        self.deleted = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass            # already closed


class Sessions:
    """The open sessions, and the thread that closes those whose instance
    was deleted."""

    def __init__(self, conductor, interval):
        self.conductor = conductor
        self.interval = interval
        self._open = {}
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='console-sessions')

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)

    def add(self, target, sock):
        session = Session(next(self._numbers), target, sock)
        with self._lock:
            self._open[session.number] = session
        return session

    def remove(self, session):
        with self._lock:
            self._open.pop(session.number, None)

    def open_count(self):
        with self._lock:
            return len(self._open)

    def _run(self):
        while not self._stop.wait(self.interval):
            try:
                self.check()
            except Exception as err:     # the bus or a conductor is away
                LOG.warning('Could not check the console sessions: %s', err)

    def check(self):
        """Close the sessions whose instance no longer exists."""
        with self._lock:
            sessions = list(self._open.values())
        if not sessions:
            return
        uuids = sorted({s.instance_uuid for s in sessions})
        alive = set(self.conductor.consoles_alive(
            context.get_admin_context(), uuids))
        for session in sessions:
            if session.instance_uuid not in alive:
                LOG.info('Closing console session %d: instance %s was '
                         'deleted', session.number, session.instance_uuid)
                session.kill()


class ConsoleHandler(websocketproxy.ProxyRequestHandler):
    """One client: the token checked before the handshake, then the bytes
    copied by websockify's ``do_proxy``."""

    target = None

    def handle_upgrade(self):
        token = _token_of(self.path)
        if token is None:
            self.send_error(403, 'No console token (?token=...)')
            return
        try:
            self.target = self.server.conductor.consume_console_token(
                context.get_admin_context(), token)
        except exception.TristateError as err:
            LOG.info('Console token refused: %s', err)
            self.send_error(403, 'Console token refused')
            return
        except Exception as err:    # no conductor answered: try again later
            LOG.warning('Console token not checked: %s', err)
            self.send_error(503, 'No conductor answered; try again')
            return
        super().handle_upgrade()

    def validate_connection(self):
        pass        # done above, before the handshake

    def new_websocket_client(self):
        target = self.target
        try:
            sock = socket.create_connection(
                (target['address'], int(target['port'])), timeout=10)
        except OSError as err:
            LOG.warning('Console of %s at %s:%s unreachable: %s',
                        target['instance_uuid'], target['address'],
                        target['port'], err)
            raise self.CClose(1011, 'the console is unreachable') from None
        sock.settimeout(None)
        session = self.server.sessions.add(target, sock)
        LOG.info('Console session %d: instance %s on %s (%s:%s)',
                 session.number, target['instance_uuid'], target['host'],
                 target['address'], target['port'])
        try:
            self.do_proxy(sock)
        except self.CClose:
            if session.deleted:
                raise self.CClose(1000, DELETED_REASON) from None
            raise
        finally:
            self.server.sessions.remove(session)
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def log_message(self, format, *args):  # noqa: A002 (the base's name)
        LOG.debug('%s %s', self.client_address[0], format % args)


def _token_of(path):
    values = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query).get(
        'token')
    return values[0] if values else None


class ConsoleProxy(http.server.ThreadingHTTPServer):
    """The proxy's server: one thread per client. ``conductor``: a
    :class:`conductor.rpcapi.ConductorAPI` (or anything with its
    ``consume_console_token`` and ``consoles_alive``)."""

    daemon_threads = True
    # What websockify's handler reads from its server.
    only_upgrade = True
    verbose = False
    record = ''
    run_once = False
    handler_id = 0
    heartbeat = None
    token_plugin = None
    auth_plugin = None
    ssl_target = None
    unix_target = None
    wrap_cmd = None
    unix_listen = None
    target_host = None
    target_port = None

    def __init__(self, *, host, port, conductor, check_interval):
        super().__init__((host, port), ConsoleHandler)
        self.conductor = conductor
        self.sessions = Sessions(conductor, check_interval)
        self._thread = None

    @property
    def url(self):
        host, port = self.server_address[:2]
        return 'ws://%s:%d/' % (host, port)

    def start(self):
        self.sessions.start()
        self._thread = threading.Thread(target=self.serve_forever,
                                        daemon=True, name='console-proxy')
        self._thread.start()
        return self

    def stop(self):
        self.shutdown()
        self.server_close()
        self.sessions.stop()

"""The libvirt connection: opened from a URI, re-opened when it is lost.

:class:`Connection` runs each operation on the current ``virConnect``; an
error that says the connection is gone (libvirtd restarted, the socket
closed, ``close()`` called on it) drops it, re-opens it with a bounded
exponential backoff (tenacity) and runs the operation once more. Every
``on_open`` hook runs on each new connection, which is how the driver
re-registers its event callbacks. When libvirt reports the close itself
(``registerCloseCallback``, remote URIs), a background thread re-opens the
connection at once so events keep flowing without waiting for an operation.

libvirt's test driver (``test:///``) runs inside this process: see
:func:`resolve_uri` for how each host gets its own domains.
"""

import logging
import os
import socket
import threading

import libvirt
import tenacity

from compute_agent.virt.driver import VirtError

LOG = logging.getLogger(__name__)

TEST_DEFAULT_URI = 'test:///default'

# Errors that mean the connection, not the operation, failed.
_CONN_ERRORS = frozenset({libvirt.VIR_ERR_INVALID_CONN,
                          libvirt.VIR_ERR_NO_CONNECT})
_RPC_ERRORS = frozenset({libvirt.VIR_ERR_SYSTEM_ERROR,
                         libvirt.VIR_ERR_INTERNAL_ERROR, libvirt.VIR_ERR_RPC})
_RPC_DOMAINS = frozenset({libvirt.VIR_FROM_REMOTE, libvirt.VIR_FROM_RPC})

_TEST_NODE = """<node>
  <cpu>
    <mhz>2000</mhz><model>x86_64</model><active>16</active><max>16</max>
    <nodes>1</nodes><sockets>1</sockets><cores>8</cores><threads>2</threads>
  </cpu>
  <memory>67108864</memory>
</node>
"""


def quiet_errors():
    """Keep libvirt from printing every error on stderr; we raise them."""
    libvirt.registerErrorHandler(lambda _ctx, _err: None, None)


def is_connection_error(err):
    """Whether a libvirtError means the connection is gone."""
    code, domain = err.get_error_code(), err.get_error_domain()
    return code in _CONN_ERRORS or (code in _RPC_ERRORS
                                    and domain in _RPC_DOMAINS)


def _alive(conn):
    try:
        return conn.isAlive() == 1
    except libvirt.libvirtError:
        return False                     # e.g. close() was called on it


def _close(conn):
    """Close ``conn``, dead or alive, without raising."""
    for step in (conn.unregisterCloseCallback, conn.close):
        try:
            step()
        except libvirt.libvirtError as err:
            LOG.debug('Closing a libvirt connection: %s', err)


def resolve_uri(uri, *, host, instances_path, per_host):
    """The URI to open for ``host``.

    ``test:///default`` is one set of domains shared by every connection of
    the process, so agents of several hosts in one process (the embedded
    plane) would see each other's domains. With ``per_host`` it becomes
    ``test://<instances_path>/test-nodes/<host>.xml``, a node file written
    here (16 vCPUs, 64 GiB, no domains); the test driver gives every open()
    of a node file its own copy, and never writes it back.
    """
    if uri != TEST_DEFAULT_URI or not per_host:
        return uri
    directory = os.path.abspath(os.path.join(instances_path, 'test-nodes'))
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, '%s.xml' % host)
    with open(path, 'w') as f:
        f.write(_TEST_NODE)
    return 'test://' + path


class Connection:
    """A virConnect that comes back after it is lost. Thread-safe."""

    def __init__(self, uri, *, interval_min=0.5, interval_max=30.0,
                 timeout=60.0, on_open=()):
        self.uri = uri
        self.interval_min = interval_min
        self.interval_max = max(interval_min, interval_max)
        self.timeout = timeout
        self.on_open = list(on_open)
        self.opened = 0                  # how many times a connection opened
        self._conn = None
        self._lock = threading.RLock()
        self._closed = threading.Event()

    def get(self):
        """The open connection, (re-)opening it with retries if needed."""
        with self._lock:
            if self._closed.is_set():
                raise VirtError('the libvirt connection to %s is closed'
                                % self.uri)
            if self._conn is not None and not _alive(self._conn):
                LOG.warning('Libvirt connection to %s lost; re-opening',
                            self.uri)
                self.drop(self._conn)
            if self._conn is None:
                self._conn = self._open_retrying()
            return self._conn

    def run(self, fn, *, retry=True):
        """``fn(conn)`` on a live connection. If the connection is lost
        during ``fn``, it is dropped and, with ``retry`` (operations that
        can run again from the start), ``fn`` runs once more on a new one.
        """
        conn = self.get()
        try:
            return fn(conn)
        except libvirt.libvirtError as err:
            if not is_connection_error(err):
                raise
            LOG.warning('Libvirt connection to %s lost (%s)', self.uri, err)
            self.drop(conn)
            if not retry:
                raise VirtError('the libvirt connection to %s was lost '
                                'during the operation: %s' % (self.uri, err),
                                rolled_back=False) from None
        return fn(self.get())

    def drop(self, conn):
        """Forget ``conn`` if it is the current one; the next use re-opens."""
        with self._lock:
            if self._conn is not conn:
                return
            self._conn = None
        _close(conn)

    def close(self):
        """Close for good: no more re-opening."""
        self._closed.set()
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            _close(conn)

    # --- opening ------------------------------------------------------------

    def _open_retrying(self):
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(libvirt.libvirtError),
            wait=tenacity.wait_exponential(multiplier=self.interval_min,
                                           min=self.interval_min,
                                           max=self.interval_max),
            stop=(tenacity.stop_after_delay(self.timeout)
                  if self.timeout > 0 else tenacity.stop_after_attempt(1)),
            before_sleep=self._log_retry, reraise=True)
        try:
            return retrying(self._open_once)
        except libvirt.libvirtError as err:
            raise VirtError('cannot connect to libvirt at %s: %s'
                            % (self.uri, err)) from None

    def _log_retry(self, state):
        LOG.warning('Cannot connect to libvirt at %s (attempt %d): %s; '
                    'retrying in %.1f s', self.uri, state.attempt_number,
                    state.outcome.exception(), state.next_action.sleep)

    def _open_once(self):
        conn = libvirt.open(self.uri)
        try:
            try:
                conn.registerCloseCallback(self._on_close, conn)
            except libvirt.libvirtError as err:      # not every driver has it
                LOG.debug('No close callback on %s: %s', self.uri, err)
            for hook in self.on_open:
                hook(conn)
        except BaseException:
            conn.close()
            raise
        self.opened += 1
        LOG.info('Connected to libvirt at %s', self.uri)
        return conn

    def _on_close(self, _conn, reason, closed):
        """libvirt says ``closed`` was closed (in the event loop thread)."""
        if (self._closed.is_set()
                or reason == libvirt.VIR_CONNECT_CLOSE_REASON_CLIENT):
            return                       # we closed it ourselves
        LOG.warning('Libvirt connection to %s closed (reason %s); '
                    're-opening', self.uri, reason)
        threading.Thread(target=self._reopen_in_background, args=(closed,),
                         daemon=True, name='libvirt-reconnect').start()

    def _reopen_in_background(self, closed):
        self.drop(closed)
        while not self._closed.is_set():
            try:
                self.get()
                return
            except VirtError as err:
                LOG.warning('%s; still trying', err)


def port_free(address, port):
    """Whether nothing listens on ``address``:``port`` (a bind succeeds)."""
    with socket.socket(socket.AF_INET6 if ':' in address
                       else socket.AF_INET) as sock:
        try:
            sock.bind((address, port))
        except OSError:
            return False
    return True

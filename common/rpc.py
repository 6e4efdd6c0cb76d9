"""The bus: transports, the context serializer, RPC servers, clients, notifier.

Everything that touches oslo.messaging goes through here, so the rest of the
tree sees small, plain functions. Services use the **threading** executor
(no eventlet). The RequestContext, task_id included, rides in every message;
payloads are plain values (dicts, lists, strings), never ORM rows.
"""

import logging
import ssl
import threading
import time
import warnings

from oslo_config import cfg
from oslo_serialization import jsonutils

from common import context as tcontext
from common import exception

with warnings.catch_warnings():
    # oslo.messaging imports oslo.service, which imports eventlet and warns
    # about it. Tristate never uses eventlet; the warning is not for us.
    warnings.simplefilter('ignore')
    import oslo_messaging as messaging
    from oslo_messaging.rpc import dispatcher as rpc_dispatcher

LOG = logging.getLogger(__name__)

# Our exceptions are rebuilt with their class on the calling side.
ALLOWED_EXMODS = [exception.__name__]
NOTIFICATION_TOPIC = 'tristate_notifications'
PAYLOAD_VERSION = '1.0'


def register_opts(conf):
    """oslo.messaging's options, and the two groups a private ConfigOpts
    lacks (NOTES.md: ``call()`` fails without them)."""
    from oslo_messaging import opts as msg_opts
    from oslo_messaging._metrics import client as metrics_client
    from oslo_messaging._tracing import client as tracing_client

    set_defaults()
    # Registering the same option twice on one ConfigOpts is a no-op.
    for group, opts in msg_opts.list_opts():
        conf.register_opts(opts, group=group)
    conf.register_opts(metrics_client.oslo_messaging_metrics,
                       group='oslo_messaging_metrics')
    conf.register_opts(tracing_client.oslo_messaging_tracing,
                       group='oslo_messaging_tracing')


def set_defaults():
    """oslo.messaging's defaults as Tristate's daemons use them (the
    exchange ``tristate``); the sample config shows these too."""
    messaging.set_transport_defaults(control_exchange='tristate')


def transport_problems(conf):
    """What is wrong with ``transport_url`` (a driver oslo.messaging does
    not have, a port that is not a number): ``[DEFAULT] transport_url:
    why``, never with the password. Found otherwise when the daemon first
    uses the bus, in a traceback."""
    from importlib import metadata
    try:
        url = conf.transport_url
    except (cfg.Error, AttributeError):
        return []
    try:
        parsed = messaging.TransportURL.parse(conf, url)
    except (ValueError, messaging.InvalidTransportURL) as err:
        return ['[DEFAULT] transport_url: not a transport URL (%s); expected '
                'e.g. rabbit://USER:PASS@HOST:5672/' % err]
    drivers = sorted(e.name for e in metadata.entry_points(
        group='oslo.messaging.drivers'))
    if parsed.transport.split('+')[0] not in drivers:
        return ['[DEFAULT] transport_url: no oslo.messaging driver %r; '
                'expected one of %s' % (parsed.transport, ', '.join(drivers))]
    return []


# What [oslo_messaging_rabbit] ssl_version accepts; the driver itself finds
# a bad value only when it connects, after the daemon has started.
SSL_VERSIONS = ('tlsv1', 'tlsv1_1', 'tlsv1_2', 'sslv23')
_TLS_FILES = ('ssl_ca_file', 'ssl_cert_file', 'ssl_key_file')


def tls_problems(conf):
    """What is wrong with the TLS options of ``[oslo_messaging_rabbit]``,
    as ``[oslo_messaging_rabbit] name: why`` lines (none when the group is
    not registered, or one of its values does not parse: that is reported
    with the option's own check)."""
    try:
        group = conf.oslo_messaging_rabbit
        enabled, version = group.ssl, group.ssl_version
        files = {name: getattr(group, name) for name in _TLS_FILES}
    except (cfg.Error, ValueError, AttributeError):
        return []
    problems = []
    if not enabled:
        problems.extend(
            '%s: set, but ssl is false: the connection would be plain AMQP, '
            'passwords in clear; set ssl = true' % name
            for name, path in files.items() if path)
    else:
        problems.extend(_tls_file_problems(files))
        problems.extend(_tls_version_problems(version, files['ssl_ca_file']))
    return ['[oslo_messaging_rabbit] ' + p for p in problems]


def _unreadable(files):
    for name, path in files.items():
        if path:
            try:
                with open(path, 'rb'):
                    pass
            except OSError as err:
                yield '%s: cannot read %s: %s' % (name, path, err.strerror)


def _tls_file_problems(files):
    unreadable = list(_unreadable(files))
    if unreadable:
        yield from unreadable
        return
    ca, cert, key = (files[name] for name in _TLS_FILES)
    if ca:
        try:
            ssl.create_default_context(cafile=ca)
        except ssl.SSLError as err:
            yield ('ssl_ca_file: %s holds no usable PEM certificate (%s)'
                   % (ca, err.reason or err))
    if key and not cert:
        yield 'ssl_key_file: set without ssl_cert_file'
    elif cert:
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_cert_chain(
                cert, key or None)
        except ssl.SSLError as err:
            yield ('ssl_cert_file: %s does not load with its key %s (%s)'
                   % (cert, key or '(in the same file)', err.reason or err))


def _tls_version_problems(version, ca_file):
    if not version:
        return
    if version.lower() not in SSL_VERSIONS:
        yield ('ssl_version: %r is not one of %s; leave it unset to let '
               'Python pick the best' % (version, ', '.join(SSL_VERSIONS)))
    elif not ca_file:
        # With a protocol given, the driver builds a context that checks
        # no certificate at all unless a CA file is named.
        yield ('ssl_version: set without ssl_ca_file, the broker\'s '
               'certificate would not be checked; set ssl_ca_file, or '
               'leave ssl_version unset (the system CAs check it)')


_SCALARS = (str, int, float, bool, type(None))


def plain(value):
    """``value`` as JSON can carry it: what
    ``jsonutils.to_primitive(value)`` gives (datetimes as ISO 8601 strings,
    tuples as lists), but dicts, lists and scalars, which are nearly all
    that Tristate sends, are walked here without its per-node type tests
    and partials (a build's messages are about a hundred such nodes);
    anything else is left to ``to_primitive``."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return {(key if type(key) is str else plain(key)): plain(item)
                for key, item in value.items()}
    if kind is list or kind is tuple:
        return [plain(item) for item in value]
    return jsonutils.to_primitive(value, convert_instances=False)


class ContextSerializer(messaging.Serializer):
    """Serialises the RequestContext; entities are already plain values."""

    def serialize_entity(self, ctxt, entity):
        # Datetimes travel as ISO 8601 strings on every transport alike.
        return plain(entity)

    def deserialize_entity(self, ctxt, entity):
        return entity

    def serialize_context(self, ctxt):
        return ctxt.to_dict()

    def deserialize_context(self, ctxt):
        ctx = tcontext.RequestContext.from_dict(ctxt)
        ctx.update_store()      # this thread's log lines carry its ids
        return ctx


def describe_transport(conf, url=None):
    """Where the bus goes, never with a password: ``rabbit://USER@HOST:
    PORT/VHOST, TLS (CA FILE)`` or ``..., plain AMQP``."""
    parsed = messaging.TransportURL.parse(conf, url)
    hosts = ','.join('%s@%s:%s' % (h.username or '', h.hostname,
                                   h.port or 5672) for h in parsed.hosts)
    where = '%s://%s/%s' % (parsed.transport, hosts,
                            parsed.virtual_host or '')
    if parsed.transport != 'rabbit':
        return where
    group = conf.oslo_messaging_rabbit
    if not group.ssl:
        return where + ', plain AMQP'
    return where + ', TLS (CA %s%s)' % (
        group.ssl_ca_file or 'the system CAs',
        ', client certificate %s' % group.ssl_cert_file
        if group.ssl_cert_file else '')


# A server nobody runs: the connector's call to it is dropped by the broker.
PROBE_SERVER = 'tristate-bus-probe'
# Publish attempts of a bounded call after the first (oslo.messaging retries
# forever by default): a broker lost after the reply queue was made fails
# the call within about rabbit_retry_interval seconds.
BOUNDED_RETRY = 1
# Seconds Bus.cleanup() waits for oslo.messaging's cleanup, which waits
# without bound for a connection to a broker that is gone.
CLEANUP_TIMEOUT = 5.0


class BusUnreachable(messaging.MessageDeliveryFailure):
    """No connection to the broker: the call was not sent."""


def publish_problem(client, where):
    """Why ``client`` cannot publish now, or None: a cast with no retry to
    :data:`PROBE_SERVER`, which nobody serves (the broker drops it)."""
    try:
        client.prepare(server=PROBE_SERVER, retry=0).cast(
            tcontext.RequestContext(), 'bus_probe')
    except Exception as err:
        return 'cannot publish to %s: %s' % (where, err)
    return None


class Connector:
    """Connects a process's RPC calls to the broker in the background, so
    that no caller waits on the broker without bound.

    Why: oslo.messaging's AMQP driver makes a process's reply queue on its
    first call, on a connection it retries forever (the client's ``retry``
    bounds only the publish), while holding a lock that every later call,
    and ``transport.cleanup()``, waits for. With the broker down, the first
    call of the API never returned, and no other after it, whatever its
    timeout (issue 20, item 12). Here a daemon thread makes that first call,
    to a server nobody runs (the broker drops the message); a bounded call
    waits for it at most its own timeout, then fails with
    :class:`BusUnreachable` without having sent anything.
    """

    def __init__(self, client, where, *, clock=time.monotonic):
        self._client = client.prepare(server=PROBE_SERVER, timeout=0.05,
                                      retry=0)
        self.where = where
        self._clock = clock
        self.since = clock()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._connect, daemon=True,
                                        name='bus-connector')
        self._thread.start()

    @property
    def connected(self):
        return self._ready.is_set()

    def _connect(self):
        try:
            self._client.call(tcontext.RequestContext(), 'bus_probe')
        except Exception:   # noqa: S110 - any answer: the reply queue exists
            pass
        self._ready.set()
        LOG.info('Connected to the message bus %s', self.where)

    def problem(self):
        """Why the bus cannot take a call now, or None: not connected yet,
        or a message cannot be published (a cast to :data:`PROBE_SERVER`
        with no retry, which the broker drops)."""
        if not self.connected:
            return 'no connection to %s for %d s' % (
                self.where, self._clock() - self.since)
        return publish_problem(self._client, self.where)

    def wait(self, timeout):
        """Seconds left of ``timeout`` once connected (at once when it is);
        :class:`BusUnreachable` if it is not within ``timeout``, or at once
        when it has been trying for longer than that already."""
        started = self._clock()
        trying = started - self.since
        if not self._ready.wait(0 if trying > timeout else timeout):
            raise BusUnreachable(
                'no connection to the message bus (%s) for %d s; nothing '
                'was sent' % (self.where, max(trying, timeout)))
        return max(timeout - (self._clock() - started), 0.05)


class BackgroundStart:
    """Starts an oslo.messaging RPC server in a daemon thread.

    ``server.start()`` connects to the broker, retried forever, and a
    server whose start has not returned cannot be stopped. A daemon that
    started it in its main thread therefore neither told systemd it was
    ready nor handled SIGTERM while the broker was away (issue 20, items 12
    and 13). Here the daemon goes on; :meth:`stop` stops the server if it
    started, and leaves the thread (a daemon) otherwise.
    """

    def __init__(self, server, what, *, on_started=None):
        self.server = server
        self.what = what
        self._on_started = on_started
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._start, daemon=True,
                                        name='start-%s' % what)

    @property
    def started(self):
        return self._started.is_set()

    def start(self, *, background=True):
        """Start (in the caller's thread, waiting for the broker, when
        ``background`` is false)."""
        if background:
            self._thread.start()
        else:
            self._start()
        return self

    def wait(self, timeout=None):
        return self._started.wait(timeout)

    def _start(self):
        self.server.start()
        self._started.set()
        LOG.info('%s is consuming from the message bus', self.what)
        if self._on_started is not None:
            self._on_started()

    def stop(self):
        if not self.started:
            LOG.warning('%s never connected to the message bus: nothing to '
                        'stop there', self.what)
            return
        self.server.stop()
        self.server.wait()


class Bus:
    """One process's view of the bus: an RPC and a notification transport."""

    def __init__(self, conf, url=None):
        self.conf = conf
        self.url = url
        self._connector = None
        self._connector_lock = threading.Lock()
        self.transport = messaging.get_rpc_transport(
            conf, url=url, allowed_remote_exmods=ALLOWED_EXMODS)
        self.notification_transport = messaging.get_notification_transport(
            conf, url=url)
        self.serializer = ContextSerializer()
        # A broker that cannot be reached is logged by the driver without
        # its address or TLS settings: say them once here.
        LOG.info('Message bus: %s', describe_transport(conf, url))

    def client(self, topic, version, *, server=None, version_cap=None,
               timeout=None, fanout=False):
        target = messaging.Target(topic=topic, version=version, server=server,
                                  fanout=fanout)
        return messaging.get_rpc_client(
            self.transport, target, version_cap=version_cap,
            serializer=self.serializer, timeout=timeout)

    def connector(self, topic):
        """This bus's :class:`Connector` (started on first use)."""
        with self._connector_lock:
            if self._connector is None:
                self._connector = Connector(
                    self.client(topic, '1.0'),
                    describe_transport(self.conf, self.url))
            return self._connector

    def probe(self, topic):
        """Why this bus cannot take a message now, or None (one connection
        attempt, no retry: for ``tristate-manage status``)."""
        return publish_problem(self.client(topic, '1.0'),
                               describe_transport(self.conf, self.url))

    def server(self, topic, endpoints, *, server):
        target = messaging.Target(topic=topic, server=server)
        return messaging.get_rpc_server(
            self.transport, target, endpoints, executor='threading',
            serializer=self.serializer,
            access_policy=rpc_dispatcher.DefaultRPCAccessPolicy)

    def notifier(self, publisher_id):
        # retry=1: a notification sent while the broker is down is dropped
        # after one reconnect attempt instead of holding the state change
        # (and the thread that made it) until the broker is back.
        drivers = self.conf.oslo_messaging_notifications.driver
        return Notifier(messaging.Notifier(
            self.notification_transport, publisher_id=publisher_id,
            serializer=self.serializer, topics=[NOTIFICATION_TOPIC],
            retry=1), enabled=any(d != 'noop' for d in drivers))

    def notification_listener(self, endpoints, *, pool=None):
        targets = [messaging.Target(topic=NOTIFICATION_TOPIC)]
        return messaging.get_notification_listener(
            self.notification_transport, targets, endpoints,
            executor='threading', serializer=self.serializer, pool=pool)

    def cleanup(self, timeout=CLEANUP_TIMEOUT):
        """Close the transports; gives up after ``timeout`` seconds (the
        driver waits without bound for a broker that is gone: its threads
        are daemons and end with the process)."""
        closing = threading.Thread(target=self._cleanup, daemon=True,
                                   name='bus-cleanup')
        closing.start()
        closing.join(timeout)
        if closing.is_alive():
            LOG.warning('The message bus did not close within %s s (is the '
                        'broker reachable?); leaving it', timeout)

    def _cleanup(self):
        self.transport.cleanup()
        if self.notification_transport is not self.transport:
            self.notification_transport.cleanup()


class Notifier:
    """Sends versioned notifications; never lets a failure break a task."""

    def __init__(self, notifier, *, enabled=True):
        self._notifier = notifier
        # With no driver configured (or only noop) nothing is sent; skip
        # building and serialising the payload, which costs more than the
        # state change it reports.
        self.enabled = enabled

    def info(self, ctx, event_type, name, data):
        self._send('info', ctx, event_type, name, data)

    def error(self, ctx, event_type, name, data):
        self._send('error', ctx, event_type, name, data)

    def _send(self, priority, ctx, event_type, name, data):
        if not self.enabled:
            return
        payload = {'tristate_object.name': name,
                   'tristate_object.version': PAYLOAD_VERSION,
                   'tristate_object.data': data}
        try:
            getattr(self._notifier, priority)(ctx, event_type, payload)
        except Exception:     # the bus may be down; the state change stands
            LOG.warning('Could not send notification %s', event_type,
                        exc_info=True)


expected_exceptions = messaging.expected_exceptions
MessagingTimeout = messaging.MessagingTimeout
MessagingException = messaging.MessagingException
RemoteError = messaging.RemoteError
Target = messaging.Target

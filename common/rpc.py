"""The bus: transports, the context serializer, RPC servers, clients, notifier.

Everything that touches oslo.messaging goes through here, so the rest of the
tree sees small, plain functions. Services use the **threading** executor
(no eventlet). The RequestContext, task_id included, rides in every message;
payloads are plain values (dicts, lists, strings), never ORM rows.
"""

import logging
import warnings

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

    messaging.set_transport_defaults(control_exchange='tristate')
    # Registering the same option twice on one ConfigOpts is a no-op.
    for group, opts in msg_opts.list_opts():
        conf.register_opts(opts, group=group)
    conf.register_opts(metrics_client.oslo_messaging_metrics,
                       group='oslo_messaging_metrics')
    conf.register_opts(tracing_client.oslo_messaging_tracing,
                       group='oslo_messaging_tracing')


class ContextSerializer(messaging.Serializer):
    """Serialises the RequestContext; entities are already plain values."""

    def serialize_entity(self, ctxt, entity):
        # Datetimes travel as ISO 8601 strings on every transport alike.
        return jsonutils.to_primitive(entity, convert_instances=False)

    def deserialize_entity(self, ctxt, entity):
        return entity

    def serialize_context(self, ctxt):
        return ctxt.to_dict()

    def deserialize_context(self, ctxt):
        ctx = tcontext.RequestContext.from_dict(ctxt)
        ctx.update_store()      # this thread's log lines carry its ids
        return ctx


class Bus:
    """One process's view of the bus: an RPC and a notification transport."""

    def __init__(self, conf, url=None):
        self.conf = conf
        self.transport = messaging.get_rpc_transport(
            conf, url=url, allowed_remote_exmods=ALLOWED_EXMODS)
        self.notification_transport = messaging.get_notification_transport(
            conf, url=url)
        self.serializer = ContextSerializer()

    def client(self, topic, version, *, server=None, version_cap=None,
               timeout=None, fanout=False):
        target = messaging.Target(topic=topic, version=version, server=server,
                                  fanout=fanout)
        return messaging.get_rpc_client(
            self.transport, target, version_cap=version_cap,
            serializer=self.serializer, timeout=timeout)

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
        return Notifier(messaging.Notifier(
            self.notification_transport, publisher_id=publisher_id,
            serializer=self.serializer, topics=[NOTIFICATION_TOPIC],
            retry=1))

    def notification_listener(self, endpoints, *, pool=None):
        targets = [messaging.Target(topic=NOTIFICATION_TOPIC)]
        return messaging.get_notification_listener(
            self.notification_transport, targets, endpoints,
            executor='threading', serializer=self.serializer, pool=pool)

    def cleanup(self):
        self.transport.cleanup()
        if self.notification_transport is not self.transport:
            self.notification_transport.cleanup()


class Notifier:
    """Sends versioned notifications; never lets a failure break a task."""

    def __init__(self, notifier):
        self._notifier = notifier

    def info(self, ctx, event_type, name, data):
        self._send('info', ctx, event_type, name, data)

    def error(self, ctx, event_type, name, data):
        self._send('error', ctx, event_type, name, data)

    def _send(self, priority, ctx, event_type, name, data):
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

"""``inproc://``: an oslo.messaging driver for one process, which wakes its
consumers instead of polling them.

The embedded control plane (``tristate-all``, the functional tests) runs a
conductor and its agents in one process. kombu's memory transport polls every
queue of every consumer (oslo.messaging sets its interval to zero, a spinning
core; Tristate pinned it to a millisecond, still a wait per hop and most of
an idle plane's CPU). Here a message is handed over under one lock and the
listeners that can take it are woken at once.

Semantics follow the AMQP drivers where Tristate relies on them:

* RPC: a target with a server goes to that server's queue; without, to the
  topic's queue, which its listeners share (competing consumers); fanout
  gives every listener of the topic a copy. A queue exists from its first
  use and keeps its messages while no one listens (an agent not started yet
  finds them when it starts), like a declared, non-auto-delete queue.
* A call waits for its reply up to its timeout (MessagingTimeout after);
  an exception travels as the AMQP drivers send it, so it is rebuilt on the
  caller's side with its class when its module is allowed.
* Notifications go to ``<topic>.<priority>``: every pool gets a copy, the
  listeners of one pool share it, and a queue without a pool keeps what was
  sent before anyone listened (the last :data:`NOTIFICATIONS_KEPT`).
* Every message and reply is a JSON round trip: what a process could not
  send over a real bus fails here too, and no object is shared.
"""

import itertools
import threading
import time

from oslo_serialization import jsonutils

import oslo_messaging
from oslo_messaging._drivers import base
from oslo_messaging._drivers import common as driver_common

_lock = threading.Lock()
_queues = {}             # key -> list of (ctxt, message, reply slot or None)
_listeners = {}          # key -> set of _Listener
_fanout = {}             # (exchange, topic) -> set of _Listener
_ids = itertools.count(1)
# Notifications kept per queue while no one takes them (the oldest go):
# notifications sent with no listener must not grow the process forever.
NOTIFICATIONS_KEPT = 10000


def _copy(value):
    return jsonutils.loads(jsonutils.dumps(value))


class _Reply:
    """Where a call's answer lands."""

    def __init__(self):
        self._done = threading.Event()
        self.value = None
        self.failure = None

    def put(self, value, failure):
        self.value, self.failure = value, failure
        self._done.set()

    def wait(self, timeout):
        return self._done.wait(timeout)


def _deliver(key, item, limit=None):
    """Queue ``item`` under ``key`` and wake the listeners of it. Call with
    ``_lock`` held. ``limit``: drop the oldest beyond it."""
    queue = _queues.setdefault(key, [])
    queue.append(item)
    if limit is not None and len(queue) > limit:
        del queue[:len(queue) - limit]
    for listener in _listeners.get(key, ()):
        listener.wake()


class _Incoming(base.RpcIncomingMessage):
    def __init__(self, listener, ctxt, message, reply, key):
        super().__init__(ctxt, message)
        self._listener = listener
        self._reply = reply
        self._key = key

    def reply(self, reply=None, failure=None):
        if self._reply is None:
            return
        if failure is not None:
            self._reply.put(None,
                            driver_common.serialize_remote_exception(failure))
        else:
            self._reply.put(_copy(reply), None)

    def acknowledge(self):
        pass

    def requeue(self):
        with _lock:
            _queues.setdefault(self._key, []).insert(
                0, (self.ctxt, self.message, self._reply))
            for listener in _listeners.get(self._key, ()):
                listener.wake()

    def heartbeat(self):
        pass


class _Listener(base.PollStyleListener):
    """Takes messages from its queues, in order of its keys."""

    def __init__(self, keys, fanout=None, fanout_key=None):
        super().__init__()
        self._keys = keys
        self._fanout = fanout
        self.fanout_key = fanout_key
        self._cv = threading.Condition(threading.Lock())
        self._pending = False
        self._stopped = False
        with _lock:
            for key in keys:
                _queues.setdefault(key, [])
                _listeners.setdefault(key, set()).add(self)
            if fanout is not None:
                _fanout.setdefault(fanout, set()).add(self)

    def wake(self):
        with self._cv:
            self._pending = True
            self._cv.notify()

    def _take(self):
        with _lock:
            for key in self._keys:
                queue = _queues.get(key)
                if queue:
                    return key, queue.pop(0)
        return None, None

    @base.batch_poll_helper
    def poll(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._cv:
                if self._stopped:
                    return None
                self._pending = False
            key, item = self._take()
            if item is not None:
                ctxt, message, reply = item
                return _Incoming(self, ctxt, message, reply, key)
            with self._cv:
                while not self._pending and not self._stopped:
                    left = None if deadline is None else (
                        deadline - time.monotonic())
                    if left is not None and left <= 0:
                        return None
                    self._cv.wait(left)

    def stop(self):
        with self._cv:
            self._stopped = True
            self._cv.notify_all()

    def cleanup(self):
        with _lock:
            for key in self._keys:
                _listeners.get(key, set()).discard(self)
            if self._fanout is not None:
                _fanout.get(self._fanout, set()).discard(self)
                _queues.pop(self.fanout_key, None)


class InProcDriver(base.BaseDriver):
    """``transport_url = inproc://`` (one process only)."""

    def require_features(self, requeue=True):
        pass

    def _exchange(self, target):
        return target.exchange or self._default_exchange

    def send(self, target, ctxt, message, wait_for_reply=None, timeout=None,
             call_monitor_timeout=None, retry=None, transport_options=None):
        exchange = self._exchange(target)
        reply = _Reply() if wait_for_reply else None
        item = (_copy(ctxt), _copy(message), reply)
        with _lock:
            if target.fanout:
                for listener in _fanout.get((exchange, target.topic), ()):
                    _deliver(listener.fanout_key, item)
            elif target.server:
                _deliver(('rpc', exchange, target.topic, target.server), item)
            else:
                _deliver(('rpc', exchange, target.topic), item)
        if reply is None:
            return None
        if not reply.wait(timeout):
            raise oslo_messaging.MessagingTimeout(
                'No reply on topic %s within %s s' % (target.topic, timeout))
        if reply.failure is not None:
            raise driver_common.deserialize_remote_exception(
                reply.failure, self._allowed_remote_exmods)
        return reply.value

    def send_notification(self, target, ctxt, message, version, retry=None):
        exchange = self._exchange(target)
        item = (_copy(ctxt), _copy(message), None)
        with _lock:
            pools = {key for key in _queues
                     if key[:3] == ('notify', exchange, target.topic)}
            pools.add(('notify', exchange, target.topic, None))
            for key in pools:
                _deliver(key, item, NOTIFICATIONS_KEPT)

    def listen(self, target, batch_size, batch_timeout):
        exchange = self._exchange(target)
        fanout_key = ('fanout', exchange, target.topic, next(_ids))
        keys = [('rpc', exchange, target.topic, target.server),
                ('rpc', exchange, target.topic), fanout_key]
        listener = _Listener(keys, fanout=(exchange, target.topic),
                             fanout_key=fanout_key)
        return base.PollStyleListenerAdapter(listener, batch_size,
                                             batch_timeout)

    def listen_for_notifications(self, targets_and_priorities, pool,
                                 batch_size, batch_timeout):
        keys = [('notify', self._exchange(target),
                 '%s.%s' % (target.topic, priority), pool)
                for target, priority in targets_and_priorities]
        return base.PollStyleListenerAdapter(_Listener(keys), batch_size,
                                             batch_timeout)

    def cleanup(self):
        pass

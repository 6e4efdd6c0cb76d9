"""``inproc://``: an oslo.messaging driver for one process, which wakes its
consumers instead of polling them.

The embedded control plane (``tristate-all``, the functional tests) runs a
conductor and its agents in one process. kombu's memory transport polls every
queue of every consumer (oslo.messaging sets its interval to zero, a spinning
core; Tristate pinned it to a millisecond, still a wait per hop and most of
an idle plane's CPU). Here the sender's thread hands a message straight to a
started server's executor (oslo.messaging's ``on_incoming`` callback): no
polling thread between the two, so a call costs one thread hand-over each
way. A message no started server takes waits in its queue, and a server
takes what waits when it starts.

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
import logging
import threading

from oslo_serialization import jsonutils

import oslo_messaging
from oslo_messaging._drivers import base
from oslo_messaging._drivers import common as driver_common

_lock = threading.Lock()
_queues = {}             # key -> list of (ctxt, message, reply slot or None)
_listeners = {}          # key -> set of _Listener
_fanout = {}             # (exchange, topic) -> set of _Listener
_ids = itertools.count(1)
LOG = logging.getLogger(__name__)
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


_turns = {}              # key -> count of messages handed to its listeners
_idle = threading.Condition(_lock)      # a listener's last hand-over ended


def _deliver(key, item, limit=None, front=False):
    """Give ``item`` to a started listener of ``key`` (in turn, when they
    share it), or queue it there (``limit``: drop the oldest beyond it;
    ``front``: a requeued message goes first). Call with ``_lock`` held;
    returns the hand-over ``(listener, callback, key, item)`` for
    :func:`_hand` to run once the lock is released, or None when queued."""
    started = sorted((listener for listener in _listeners.get(key, ())
                      if listener.callback is not None),
                     key=lambda listener: listener.serial)
    if started:
        turn = _turns.get(key, 0)
        _turns[key] = turn + 1
        listener = started[turn % len(started)]
        listener.busy += 1
        return listener, listener.callback, key, item
    queue = _queues.setdefault(key, [])
    if front:
        queue.insert(0, item)
    else:
        queue.append(item)
    if limit is not None and len(queue) > limit:
        del queue[:len(queue) - limit]
    return None


def _hand(handover):
    """Run what :func:`_deliver` chose, outside ``_lock``: the server's
    callback (it submits the message to the server's executor). A server
    whose callback fails (its executor shut down) takes no more messages:
    this one goes to another listener of its queue, or waits there."""
    while handover is not None:
        listener, callback, key, item = handover
        ctxt, message, reply = item
        try:
            callback([_Incoming(listener, ctxt, message, reply, key)])
            handover = None
        except Exception:
            LOG.exception('The in-process bus could not hand a message to '
                          'its server; it goes to another or waits')
            with _lock:
                if listener.callback is callback:
                    listener.callback = None
                handover = _deliver(key, item, front=True)
        finally:
            with _lock:
                listener.busy -= 1
                if not listener.busy:
                    _idle.notify_all()


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
            handover = _deliver(self._key,
                                (self.ctxt, self.message, self._reply),
                                front=True)
        _hand(handover)

    def heartbeat(self):
        pass


class _Listener(base.Listener):
    """A server's queues: messages are handed to its callback while it is
    started, in the sender's thread; a listener that starts takes what
    waits in its queues, in order of its keys."""

    def __init__(self, keys, fanout=None, fanout_key=None):
        super().__init__(batch_size=1, batch_timeout=None)
        self._keys = keys
        self._fanout = fanout
        self.fanout_key = fanout_key
        self.serial = next(_ids)
        self.callback = None        # guarded by _lock, as busy is
        self.busy = 0               # hand-overs to the callback under way
        with _lock:
            for key in keys:
                _queues.setdefault(key, [])
                _listeners.setdefault(key, set()).add(self)
            if fanout is not None:
                _fanout.setdefault(fanout, set()).add(self)

    def start(self, on_incoming_callback):
        super().start(on_incoming_callback)
        with _lock:
            waiting = [(key, item) for key in self._keys
                       for item in _queues.get(key, ())]
            for key in self._keys:
                if key in _queues:
                    _queues[key] = []
            self.callback = on_incoming_callback
            self.busy += len(waiting)
        for key, item in waiting:
            _hand((self, on_incoming_callback, key, item))

    def stop(self):
        """No message is handed over once this returns."""
        with _lock:
            self.callback = None
            while self.busy:
                _idle.wait()
        super().stop()

    def cleanup(self):
        with _lock:
            for key in self._keys:
                _listeners.get(key, set()).discard(self)
            if self._fanout is not None:
                _fanout.get(self._fanout, set()).discard(self)
                _queues.pop(self.fanout_key, None)
                _turns.pop(self.fanout_key, None)


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
                handovers = [_deliver(listener.fanout_key, item)
                             for listener in _fanout.get(
                                 (exchange, target.topic), ())]
            elif target.server:
                handovers = [_deliver(
                    ('rpc', exchange, target.topic, target.server), item)]
            else:
                handovers = [_deliver(('rpc', exchange, target.topic), item)]
        for handover in handovers:
            _hand(handover)
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
            handovers = [_deliver(key, item, NOTIFICATIONS_KEPT)
                         for key in sorted(pools, key=repr)]
        for handover in handovers:
            _hand(handover)

    def listen(self, target, batch_size, batch_timeout):
        exchange = self._exchange(target)
        fanout_key = ('fanout', exchange, target.topic, next(_ids))
        keys = [('rpc', exchange, target.topic, target.server),
                ('rpc', exchange, target.topic), fanout_key]
        listener = _Listener(keys, fanout=(exchange, target.topic),
                             fanout_key=fanout_key)
        return listener

    def listen_for_notifications(self, targets_and_priorities, pool,
                                 batch_size, batch_timeout):
        keys = [('notify', self._exchange(target),
                 '%s.%s' % (target.topic, priority), pool)
                for target, priority in targets_and_priorities]
        return _Listener(keys)

    def cleanup(self):
        pass

"""Lifecycle events: libvirt's event loop, the debounce, and delivery.

* :func:`start_event_loop`: libvirt's default event loop implementation,
  run forever by one daemon thread per process (libvirt has one loop per
  process). It must be registered before a connection that wants events is
  opened, so the driver starts it before it connects.
* :class:`DomainWatcher`: one per driver, with its own thread. An event only
  names a domain and the power_state it claims; after ``debounce`` seconds
  (counted from the domain's first event, so a flapping domain is still
  reported) the domain's current state is read again and

  - dropped if the latest event claims a power_state that no longer holds
    (a stale event: Nova bug 1468431);
  - dropped if it is what was last delivered (the stop/start pair of a
    reboot made inside the guest nets out to nothing);
  - read again later while the driver's own operation on the domain runs
    (``busy``): its intermediate states (QEMU starts a domain paused) are
    not worth reporting, its end state is;
  - otherwise given to every callback.

  A callback that raises gets the same report again later (backoff up to
  ``retry_max``), unless a newer one for the domain replaces it: the latest
  state per domain is never lost.
"""

import logging
import threading
import time

import libvirt

from common.states import power

LOG = logging.getLogger(__name__)

_loop_lock = threading.Lock()
_loop_thread = None


def start_event_loop():
    """Register and run libvirt's default event loop (once per process)."""
    global _loop_thread
    with _loop_lock:
        if _loop_thread is not None:
            return _loop_thread
        libvirt.virEventRegisterDefaultImpl()
        _loop_thread = threading.Thread(target=_run_loop, daemon=True,
                                        name='libvirt-event-loop')
        _loop_thread.start()
        return _loop_thread


def _run_loop():
    while True:
        try:
            libvirt.virEventRunDefaultImpl()
        except Exception:
            LOG.exception('libvirt event loop iteration failed')
            time.sleep(0.1)


class _Pending:
    __slots__ = ('due', 'claimed', 'attempt', 'info', 'callbacks')

    def __init__(self, due, claimed):
        self.due, self.claimed = due, claimed
        self.attempt, self.info, self.callbacks = 0, None, None


class DomainWatcher:
    """Debounces events per domain and delivers the state they lead to.

    ``read(uuid)`` returns the domain's :class:`DomainInfo` now (power_state
    NOSTATE when it is gone); ``delivered(info)`` is told of each report
    every callback took.
    """

    def __init__(self, *, read, debounce, delivered=None, busy=None,
                 retry_max=5.0, name='libvirt'):
        self.read = read
        self.busy = busy or (lambda uuid: False)
        self.debounce = debounce
        self.retry_max = retry_max
        self.callbacks = []
        self._delivered_hook = delivered
        self._pending = {}          # uuid -> _Pending
        self._last = {}             # uuid -> DomainInfo last delivered
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='%s-events' % name)

    def start(self):
        if not self._thread.is_alive():
            self._thread.start()

    def stop(self):
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def add_callback(self, callback):
        with self._cond:
            self.callbacks.append(callback)

    def event(self, uuid, claimed, *, final=False):
        """A lifecycle event for ``uuid`` claiming power_state ``claimed``
        (None: no claim). ``final``: nothing can follow that the debounce
        should merge with it (a guest's own power-off on QEMU): read at
        once. Called from libvirt's event loop thread."""
        with self._cond:
            entry = self._pending.get(uuid)
            now = time.monotonic()
            if entry is None or entry.info is not None:   # new or a retry
                entry = self._pending[uuid] = _Pending(now + self.debounce,
                                                       claimed)
            else:
                entry.claimed = claimed      # the latest event decides
            if final:
                entry.due = min(entry.due, now)
            self._cond.notify()

    def resync(self, uuids):
        """Read these domains again soon (after a reconnect: events that
        came while the connection was down are lost)."""
        for uuid in set(uuids) | set(self.last_delivered()):
            self.event(uuid, None)

    def last_delivered(self):
        with self._cond:
            return dict(self._last)

    # --- the thread ----------------------------------------------------------

    def _run(self):
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            for uuid, entry in batch:
                try:
                    self._handle(uuid, entry)
                except Exception:
                    LOG.exception('Handling events of domain %s failed', uuid)
                    self._retry(uuid, entry, entry.info, entry.callbacks)

    def _next_batch(self):
        with self._cond:
            while not self._stopping:
                now = time.monotonic()
                due = [(uuid, e) for uuid, e in self._pending.items()
                       if e.due <= now]
                if due:
                    for uuid, _entry in due:
                        del self._pending[uuid]
                    return sorted(due, key=lambda item: item[1].due)
                wait = min((e.due for e in self._pending.values()),
                           default=now + 60) - now
                self._cond.wait(timeout=max(wait, 0.001))
            return None

    def _handle(self, uuid, entry):
        if entry.info is not None:               # a failed delivery, again
            return self._deliver(uuid, entry, entry.info, entry.callbacks)
        if self.busy(uuid):
            return self._later(uuid, entry)
        info = self.read(uuid)
        if entry.claimed is not None and info.power_state != entry.claimed:
            LOG.debug('Dropping a stale event of %s: it claimed power %s, '
                      'the domain is %s now', uuid, entry.claimed,
                      info.power_state)
            return None
        with self._cond:
            unchanged = self._last.get(uuid) == info
        if unchanged:
            return None
        return self._deliver(uuid, entry, info, None)

    def _deliver(self, uuid, entry, info, callbacks):
        with self._cond:
            targets = list(self.callbacks if callbacks is None else callbacks)
        failed = []
        for callback in targets:
            try:
                callback(info)
            except Exception:
                LOG.exception('Event callback failed for domain %s; the '
                              'report is kept and retried', uuid)
                failed.append(callback)
        if failed:
            return self._retry(uuid, entry, info, failed)
        with self._cond:
            if info.power_state == power.NOSTATE:   # gone: nothing to compare
                self._last.pop(uuid, None)
            else:
                self._last[uuid] = info
        if self._delivered_hook is not None:
            self._delivered_hook(info)
        return None

    def _later(self, uuid, entry):
        with self._cond:
            if uuid not in self._pending:    # else a newer event is there
                self._pending[uuid] = _Pending(
                    time.monotonic() + max(self.debounce, 0.05),
                    entry.claimed)
                self._cond.notify()

    def _retry(self, uuid, entry, info, callbacks):
        delay = min(0.1 * 2 ** entry.attempt, self.retry_max)
        with self._cond:
            if uuid in self._pending:        # a newer event replaces it
                return
            again = _Pending(time.monotonic() + delay, entry.claimed)
            again.attempt = entry.attempt + 1
            again.info = info
            again.callbacks = callbacks
            self._pending[uuid] = again
            self._cond.notify()

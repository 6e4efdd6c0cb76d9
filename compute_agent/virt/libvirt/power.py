"""From libvirt's (state, reason) to Tristate's power_state and reason.

The mapping is data (:data:`POWER`, :data:`REASONS`, :data:`EVENT_POWER`);
:class:`ReasonBook` holds what libvirt cannot say by itself:

* an operation the agent asked for leaves its reason None (libvirt says
  ``SHUTOFF_SHUTDOWN`` whether the guest or the agent's ACPI request shut it
  down, and ``DESTROYED`` for our own destroy);
* a preserved Xen domain destroyed by the cleanup keeps the reason it was
  reported with (``guest``, ``crashed``), not the ``host`` of the destroy;
* a ``SHUTDOWN`` lifecycle event says whether the guest or the host asked
  (QEMU's detail): the domain's SHUTDOWN state (QEMU keeps the process a
  moment after the guest powered off) and the ``SHUTOFF_SHUTDOWN`` after
  it take that reason; when the guest asked, the domain is powering off
  from then on (:meth:`ReasonBook.powering_off`) until its next event;
* once the host is shutting down, every ``guest`` shutdown is ``host``.

An expectation holds while the domain stays in the power_state it was made
for: a read showing another power_state (outside the driver's own
operations on it) drops it. Expectations are kept in a small file (when the
book has a ``path``), so an agent that restarts still knows which stopped
domains it stopped itself instead of calling them stopped by their guest.
"""

import contextlib
import json
import logging
import os
import threading

import libvirt

from common import states
from common.states import power

LOG = logging.getLogger(__name__)
POWER = {
    libvirt.VIR_DOMAIN_NOSTATE: power.NOSTATE,
    libvirt.VIR_DOMAIN_RUNNING: power.RUNNING,
    libvirt.VIR_DOMAIN_BLOCKED: power.RUNNING,
    libvirt.VIR_DOMAIN_PAUSED: power.PAUSED,
    libvirt.VIR_DOMAIN_SHUTDOWN: power.SHUTDOWN,
    libvirt.VIR_DOMAIN_SHUTOFF: power.SHUTDOWN,
    libvirt.VIR_DOMAIN_CRASHED: power.CRASHED,
    libvirt.VIR_DOMAIN_PMSUSPENDED: power.SUSPENDED,
}

GUEST, HOST = states.REASON_GUEST, states.REASON_HOST
CRASHED, SAVED = states.REASON_CRASHED, states.REASON_SAVED
UNKNOWN = states.REASON_UNKNOWN

STATE_NAMES = {
    libvirt.VIR_DOMAIN_NOSTATE: 'NOSTATE', libvirt.VIR_DOMAIN_RUNNING: 'RUNNING',
    libvirt.VIR_DOMAIN_BLOCKED: 'BLOCKED', libvirt.VIR_DOMAIN_PAUSED: 'PAUSED',
    libvirt.VIR_DOMAIN_SHUTDOWN: 'SHUTDOWN', libvirt.VIR_DOMAIN_SHUTOFF: 'SHUTOFF',
    libvirt.VIR_DOMAIN_CRASHED: 'CRASHED',
    libvirt.VIR_DOMAIN_PMSUSPENDED: 'PMSUSPENDED',
}

# state: {reason code: Tristate reason}; a code not listed is "unknown".
REASONS = {
    libvirt.VIR_DOMAIN_SHUTOFF: {
        libvirt.VIR_DOMAIN_SHUTOFF_SHUTDOWN: GUEST,      # powered itself off
        libvirt.VIR_DOMAIN_SHUTOFF_DESTROYED: HOST,
        libvirt.VIR_DOMAIN_SHUTOFF_CRASHED: CRASHED,
        libvirt.VIR_DOMAIN_SHUTOFF_MIGRATED: HOST,
        libvirt.VIR_DOMAIN_SHUTOFF_SAVED: SAVED,         # managed save
        libvirt.VIR_DOMAIN_SHUTOFF_FROM_SNAPSHOT: HOST,
        libvirt.VIR_DOMAIN_SHUTOFF_DAEMON: HOST,         # libvirtd stopped it
    },
    libvirt.VIR_DOMAIN_SHUTDOWN: {libvirt.VIR_DOMAIN_SHUTDOWN_USER: GUEST},
    libvirt.VIR_DOMAIN_CRASHED: {},                       # always crashed
    libvirt.VIR_DOMAIN_PAUSED: {
        libvirt.VIR_DOMAIN_PAUSED_USER: HOST,            # paused from outside
        libvirt.VIR_DOMAIN_PAUSED_STARTING_UP: None,     # QEMU starts paused
        libvirt.VIR_DOMAIN_PAUSED_CRASHED: CRASHED,
    },
    libvirt.VIR_DOMAIN_PMSUSPENDED: {0: GUEST},          # the guest's own S3
}
_DEFAULT_REASON = {libvirt.VIR_DOMAIN_CRASHED: CRASHED}

# Lifecycle event: the power_state it says the domain is in, or None when it
# says nothing about power (the state is read and reported as it is).
EVENT_POWER = {
    libvirt.VIR_DOMAIN_EVENT_DEFINED: None,
    libvirt.VIR_DOMAIN_EVENT_UNDEFINED: power.NOSTATE,
    libvirt.VIR_DOMAIN_EVENT_STARTED: power.RUNNING,
    libvirt.VIR_DOMAIN_EVENT_SUSPENDED: power.PAUSED,
    libvirt.VIR_DOMAIN_EVENT_RESUMED: power.RUNNING,
    libvirt.VIR_DOMAIN_EVENT_STOPPED: power.SHUTDOWN,
    libvirt.VIR_DOMAIN_EVENT_SHUTDOWN: None,        # a shutdown has begun
    libvirt.VIR_DOMAIN_EVENT_PMSUSPENDED: power.SUSPENDED,
    libvirt.VIR_DOMAIN_EVENT_CRASHED: power.CRASHED,
}

# Detail of a SHUTDOWN event: who asked (QEMU >= 2.10 says).
SHUTDOWN_BY = {
    libvirt.VIR_DOMAIN_EVENT_SHUTDOWN_GUEST: GUEST,
    libvirt.VIR_DOMAIN_EVENT_SHUTDOWN_HOST: HOST,
}


def name_of(state):
    """libvirt's name of a virDomainState, for messages."""
    return STATE_NAMES.get(state, 'state %s' % state)


def power_of(state):
    """Tristate power_state of a libvirt virDomainState."""
    return POWER.get(state, power.NOSTATE)


def reason_of(state, code):
    """Tristate reason of a (state, reason code); None while running."""
    table = REASONS.get(state)
    if table is None:
        return None
    return table.get(code, _DEFAULT_REASON.get(state, UNKNOWN))


def event_power(event):
    """The power_state a lifecycle event claims, or None."""
    return EVENT_POWER.get(event)


class ReasonBook:
    """What the driver knows of a domain's reason that libvirt does not say.

    An expectation (:meth:`expect`) holds until a read shows the domain in
    another power_state; reads made while an operation on the domain runs
    (:meth:`busy`) do not count, since the operation passes through other
    states on its way. Events do not drop expectations: libvirt delivers
    them a little later, so an event of an earlier operation could drop the
    expectation of the next one. Thread-safe.
    """

    def __init__(self, path=None):
        self._lock = threading.Lock()
        self._path = path
        self._override = self._load()   # uuid -> (power_state, reason)
        self._shutdown_by = {}      # uuid -> 'guest' | 'host'
        self._powering_off = set()  # uuids whose guest powered itself off
        self._busy = {}             # uuid -> operations running
        self.host_shutting_down = False

    def _load(self):
        if self._path is None:
            return {}
        try:
            with open(self._path) as f:
                return {uuid: (int(state), reason)
                        for uuid, (state, reason) in json.load(f).items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, TypeError) as err:
            LOG.warning('Ignoring unreadable %s (%s): reasons of domains '
                        'stopped before this start may say guest', self._path,
                        err)
            return {}

    def _save(self):
        """Write the expectations; call with the lock held."""
        if self._path is None:
            return
        tmp = '%s.tmp' % self._path
        try:
            with open(tmp, 'w') as f:
                json.dump(self._override, f)
            os.replace(tmp, self._path)
        except OSError as err:
            LOG.warning('Could not save %s: %s', self._path, err)

    def expect(self, uuid, power_state, reason=None):
        """The domain is, by our doing, in ``power_state`` for ``reason``."""
        with self._lock:
            if self._override.get(uuid) != (power_state, reason):
                self._override[uuid] = (power_state, reason)
                self._save()

    def forget(self, uuid):
        """The driver starts or removes the domain: nothing noted holds."""
        with self._lock:
            self._powering_off.discard(uuid)
            if self._override.pop(uuid, None) is not None:
                self._save()

    @contextlib.contextmanager
    def busy(self, uuid):
        """An operation on ``uuid`` runs inside this block."""
        with self._lock:
            self._busy[uuid] = self._busy.get(uuid, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                if self._busy[uuid] == 1:
                    del self._busy[uuid]
                else:
                    self._busy[uuid] -= 1

    def is_busy(self, uuid):
        with self._lock:
            return uuid in self._busy

    def saw_event(self, uuid, event, detail):
        """Note who asked for a shutdown (QEMU's SHUTDOWN event detail); a
        new run of the domain forgets it. A guest's own power-off is noted
        until the domain's next event (see :meth:`powering_off`)."""
        with self._lock:
            if event == libvirt.VIR_DOMAIN_EVENT_SHUTDOWN:
                by = SHUTDOWN_BY.get(detail)
                if by is not None:
                    self._shutdown_by[uuid] = by
                if by == GUEST:
                    self._powering_off.add(uuid)
                return
            self._powering_off.discard(uuid)
            if event == libvirt.VIR_DOMAIN_EVENT_STARTED:
                self._shutdown_by.pop(uuid, None)

    def powering_off(self, uuid):
        """Whether the latest event of ``uuid`` was a SHUTDOWN the guest
        asked for: the guest has powered itself off and QEMU is going
        away (libvirt emits no SHUTDOWN event in its fake reboot, and with
        ``on_poweroff`` ``destroy`` kills QEMU after it)."""
        with self._lock:
            return uuid in self._powering_off

    def events_lost(self):
        """A new connection: the events of the old one may be missing,
        so what they said no longer holds."""
        with self._lock:
            self._powering_off.clear()

    def reason(self, uuid, power_state, natural, *, shutting_down=False):
        """The reason to report for a domain read as (power_state,
        natural); ``shutting_down``: libvirt's state is SHUTDOWN (a shutdown
        in progress), whose own reason code says nothing of who asked."""
        with self._lock:
            entry = self._override.get(uuid)
            if entry is not None:
                if entry[0] == power_state:
                    return entry[1]
                if uuid not in self._busy:
                    del self._override[uuid]
                    self._save()
            if natural == GUEST or shutting_down:
                natural = self._shutdown_by.get(uuid, natural)
            if natural == GUEST and self.host_shutting_down:
                return HOST
            return natural

"""Leases, reservations and events: their statuses, the allowed transitions
and seed 002's table of allowed combinations (DESIGN.md section 7).

Declared once, as data. :mod:`common.db.leases` checks every change against
both tables before it makes the change with a conditional UPDATE;
``tristate-manage docs leases`` renders them into ``docs/leases.md``; the
tests walk them. Nothing else in the tree decides whether a lease may move.

* A **lease** (name, project, start, end) has a stable status (PENDING,
  ACTIVE, TERMINATED, ERROR) or, while an operation runs, that operation's
  transitional status (CREATING, STARTING, UPDATING, TERMINATING,
  DELETING). An operation moves the lease to its transitional status, does
  its work and settles in the stable status *derived from its events*
  (:func:`derive_status`). Delete is allowed from every status and always
  wins.
* A **reservation** (``physical:host``: how many hosts, which properties)
  is pending, active, deleted or error.
* An **event** (``start_lease``, ``before_end_lease``, ``end_lease``) is
  UNDONE, IN_PROGRESS, DONE or ERROR; the conductors' periodic job runs it
  when it is due.

The transitions are Blazar's (``blazar/status.py``) with two differences,
both written next to their rows: DELETING -> DELETING (a delete that stopped
half-way is run again) replaces DELETING -> ERROR, so that delete always
wins; and an IN_PROGRESS event may be claimed again (a retry). The
combinations are seed 002's table as written (Blazar's code is laxer in
TERMINATING and stricter in DELETING); ERROR, not in the seed's table, is
where anything else lands and allows every combination.
"""

import dataclasses
import types

from common import exception


class lease:
    """Lease statuses (Blazar's, upper case)."""
    PENDING = 'PENDING'
    ACTIVE = 'ACTIVE'
    TERMINATED = 'TERMINATED'
    ERROR = 'ERROR'
    CREATING = 'CREATING'
    STARTING = 'STARTING'
    UPDATING = 'UPDATING'
    TERMINATING = 'TERMINATING'
    DELETING = 'DELETING'


class reservation:
    """Reservation statuses (lower case, as Blazar keeps them)."""
    PENDING = 'pending'
    ACTIVE = 'active'
    DELETED = 'deleted'
    ERROR = 'error'


class event:
    """Event statuses."""
    UNDONE = 'UNDONE'
    IN_PROGRESS = 'IN_PROGRESS'
    DONE = 'DONE'
    ERROR = 'ERROR'


STABLE = (lease.PENDING, lease.ACTIVE, lease.TERMINATED, lease.ERROR)
TRANSITIONAL = (lease.CREATING, lease.STARTING, lease.UPDATING,
                lease.TERMINATING, lease.DELETING)
LEASE_STATUSES = STABLE + TRANSITIONAL
RESERVATION_STATUSES = (reservation.PENDING, reservation.ACTIVE,
                        reservation.DELETED, reservation.ERROR)
EVENT_STATUSES = (event.UNDONE, event.IN_PROGRESS, event.DONE, event.ERROR)

START_LEASE = 'start_lease'
BEFORE_END_LEASE = 'before_end_lease'
END_LEASE = 'end_lease'
# In the order they run when several are due at once.
EVENT_TYPES = (START_LEASE, BEFORE_END_LEASE, END_LEASE)

RESOURCE_HOST = 'physical:host'
RESOURCE_TYPES = (RESOURCE_HOST,)
# What happens at the end to the instances that used the reservation.
ON_END_DELETE = 'delete'
ON_END_STOP = 'stop'
ON_END = (ON_END_DELETE, ON_END_STOP)      # the first is the default


@dataclasses.dataclass(frozen=True)
class Transition:
    source: str
    target: str
    why: str


def _t(source, target, why):
    return Transition(source, target, why)


# Read each line as "source -> target: why".
LEASE_TRANSITIONS = (
    _t(lease.CREATING, lease.PENDING, 'created: hosts picked, events set'),
    _t(lease.CREATING, lease.DELETING, 'deleted while being created'),
    _t(lease.PENDING, lease.STARTING, 'its start_lease event runs'),
    _t(lease.PENDING, lease.UPDATING, 'update (dates, name, on_end)'),
    _t(lease.PENDING, lease.DELETING, 'delete'),
    _t(lease.STARTING, lease.ACTIVE, 'the hosts are reserved'),
    _t(lease.STARTING, lease.ERROR, 'the start failed, retries spent'),
    _t(lease.STARTING, lease.DELETING, 'delete wins over a start'),
    _t(lease.ACTIVE, lease.TERMINATING, 'its end_lease event runs'),
    _t(lease.ACTIVE, lease.UPDATING, 'update (end date, name, on_end)'),
    _t(lease.ACTIVE, lease.DELETING, 'delete: on_end applies first'),
    _t(lease.TERMINATING, lease.TERMINATED, 'instances handled, hosts '
       'back in the common pool'),
    _t(lease.TERMINATING, lease.ERROR, 'the end failed, retries spent'),
    _t(lease.TERMINATING, lease.DELETING, 'delete wins over an end'),
    _t(lease.TERMINATED, lease.UPDATING, 'update (name only)'),
    _t(lease.TERMINATED, lease.DELETING, 'delete'),
    _t(lease.ERROR, lease.TERMINATING, 'its end_lease event runs'),
    _t(lease.ERROR, lease.UPDATING, 'update'),
    _t(lease.ERROR, lease.DELETING, 'delete'),
    *(_t(lease.UPDATING, status, 'the update settles as its events say')
      for status in STABLE),
    _t(lease.UPDATING, lease.DELETING, 'delete wins over an update'),
    # Blazar has DELETING -> ERROR instead: here delete always wins.
    _t(lease.DELETING, lease.DELETING, 'a delete that stopped half-way '
       'runs again'),
)

RESERVATION_TRANSITIONS = (
    _t(reservation.PENDING, reservation.ACTIVE, 'start: hosts reserved'),
    _t(reservation.PENDING, reservation.DELETED, 'released before it '
       'started'),
    _t(reservation.PENDING, reservation.ERROR, 'the start failed'),
    _t(reservation.ACTIVE, reservation.DELETED, 'end: hosts released'),
    _t(reservation.ACTIVE, reservation.ERROR, 'the end failed'),
    _t(reservation.ERROR, reservation.DELETED, 'end of a lease in error'),
)

EVENT_TRANSITIONS = (
    _t(event.UNDONE, event.IN_PROGRESS, 'due: one conductor claims it'),
    # Not in Blazar: a run that failed, or whose conductor stopped, is
    # claimed again (a new run id) until [leases] event_retries is spent.
    _t(event.IN_PROGRESS, event.IN_PROGRESS, 'claimed again: a retry'),
    _t(event.IN_PROGRESS, event.DONE, 'the run ended'),
    _t(event.IN_PROGRESS, event.ERROR, 'the run failed, retries spent'),
)


class Machine:
    """One state machine as a value: its statuses and transition rows."""

    def __init__(self, kind, statuses, rows):
        self.kind = kind
        self.statuses = tuple(statuses)
        self.rows = tuple(rows)
        self._edges = {(r.source, r.target) for r in self.rows}
        for source, target in self._edges:
            if source not in self.statuses or target not in self.statuses:
                raise ValueError('%s transition %s -> %s names an unknown '
                                 'status' % (kind, source, target))
        if len(self._edges) != len(self.rows):
            raise ValueError('%s: a transition is listed twice' % kind)

    def __iter__(self):
        """Yield ``(source, target)`` pairs, in table order."""
        return ((r.source, r.target) for r in self.rows)

    def allowed(self, source, target):
        return (source, target) in self._edges

    def sources(self, target):
        """The statuses ``target`` may be reached from, in status order."""
        return tuple(s for s in self.statuses if (s, target) in self._edges)


LEASES = Machine('lease', LEASE_STATUSES, LEASE_TRANSITIONS)
RESERVATIONS = Machine('reservation', RESERVATION_STATUSES,
                       RESERVATION_TRANSITIONS)
EVENTS = Machine('event', EVENT_STATUSES, EVENT_TRANSITIONS)


@dataclasses.dataclass(frozen=True)
class Operation:
    """What moves a lease: its transitional status, and the event that
    triggers it (None: an API call)."""
    name: str
    status: str
    event_type: str | None
    description: str


OPERATIONS = types.MappingProxyType({op.name: op for op in (
    Operation('create', lease.CREATING, None,
              'POST /leases: picks hosts free for the whole window'),
    Operation('start', lease.STARTING, START_LEASE,
              'the hosts become usable only by the lease\'s project, only '
              'for instances that name the reservation'),
    Operation('update', lease.UPDATING, None,
              'PUT /leases/{id}: new dates (host availability checked '
              'again), name or on_end'),
    Operation('end', lease.TERMINATING, END_LEASE,
              'on_end applies to the instances that used the reservation '
              '(with stop, an instance that cannot stop yet, another task '
              'running or its host down, makes the event run again at the '
              'next pass); the hosts go back to the common pool'),
    Operation('delete', lease.DELETING, None,
              'DELETE /leases/{id}: from any status; an active lease ends '
              'first (on_end), then its rows are removed'),
)})
# The event that only notifies (lease.before_end): no operation, and it
# runs only while the lease is ACTIVE.
BEFORE_END_NEEDS = lease.ACTIVE


def operation_of(event_type):
    """The operation an event type triggers (None for before_end_lease)."""
    for op in OPERATIONS.values():
        if op.event_type == event_type:
            return op
    return None


@dataclasses.dataclass(frozen=True)
class Combination:
    """Seed 002: what reservations and events must be while a lease has
    ``status``."""
    status: str
    reservations: frozenset
    start_lease: frozenset
    end_lease: frozenset
    note: str = ''

    def events(self, event_type):
        return {START_LEASE: self.start_lease,
                END_LEASE: self.end_lease}[event_type]


def _c(status, reservations, start, end, note=''):
    return Combination(status, frozenset(reservations), frozenset(start),
                       frozenset(end), note)


_ANY_RESERVATION = RESERVATION_STATUSES
_ANY_EVENT = EVENT_STATUSES
_NOT_RUNNING = tuple(s for s in EVENT_STATUSES if s != event.IN_PROGRESS)

COMBINATIONS = types.MappingProxyType({c.status: c for c in (
    _c(lease.CREATING, [reservation.PENDING], [event.UNDONE], [event.UNDONE]),
    _c(lease.PENDING, [reservation.PENDING], [event.UNDONE], [event.UNDONE]),
    _c(lease.STARTING, [reservation.PENDING, reservation.ACTIVE,
                        reservation.ERROR],
       [event.IN_PROGRESS], [event.UNDONE]),
    _c(lease.ACTIVE, [reservation.ACTIVE], [event.DONE], [event.UNDONE]),
    _c(lease.TERMINATING, [reservation.ACTIVE, reservation.DELETED,
                           reservation.ERROR],
       [event.DONE], [event.IN_PROGRESS]),
    _c(lease.TERMINATED, [reservation.DELETED], [event.DONE], [event.DONE]),
    _c(lease.DELETING, _ANY_RESERVATION, _ANY_EVENT, _ANY_EVENT),
    _c(lease.UPDATING, _ANY_RESERVATION, _NOT_RUNNING, _NOT_RUNNING),
    _c(lease.ERROR, _ANY_RESERVATION, _ANY_EVENT, _ANY_EVENT,
       'not in seed 002: where anything else lands'),
)})

# The stable status a lease settles in, from (start_lease, end_lease).
DERIVED = types.MappingProxyType({
    (event.UNDONE, event.UNDONE): lease.PENDING,
    (event.DONE, event.UNDONE): lease.ACTIVE,
    (event.DONE, event.DONE): lease.TERMINATED,
})


# --- the checks --------------------------------------------------------------

def _listing(values):
    values = list(values)
    if len(values) < 2:
        return ''.join(values)
    return '%s or %s' % (', '.join(values[:-1]), values[-1])


def check_move(lease_id, action, current, target):
    """Raise :class:`~common.exception.LeaseActionNotAllowed` unless the
    lease may move from ``current`` to ``target`` for ``action``."""
    if LEASES.allowed(current, target):
        return
    sources = LEASES.sources(target)
    raise exception.LeaseActionNotAllowed(
        action=action, lease=lease_id,
        reason='its status is %s and %s needs %s (%s cannot go to %s)' % (
            current, action, _listing(sources) or 'a status it never has',
            current, target))


def check_step(machine, lease_id, action, what, current, target):
    """The same for a reservation or an event (``what`` names it)."""
    if machine.allowed(current, target):
        return
    raise exception.LeaseActionNotAllowed(
        action=action, lease=lease_id,
        reason='%s %s cannot go from %s to %s (it may go to %s)' % (
            machine.kind, what, current, target,
            _listing(t for s, t in machine if s == current) or 'nothing'))


def combination_errors(status, reservations, events):
    """What is wrong with the combination, as phrases ([] if it is allowed).

    ``reservations``: the statuses of the lease's reservations;
    ``events``: ``{event_type: status}`` (only start and end are checked).
    """
    rule = COMBINATIONS[status]
    wrong = []
    bad = sorted(set(reservations) - rule.reservations)
    if bad:
        wrong.append('reservations %s (needs %s)' % (
            ', '.join(bad), _listing(sorted(rule.reservations))))
    for event_type in (START_LEASE, END_LEASE):
        have = events.get(event_type)
        allowed = rule.events(event_type)
        if have not in allowed:
            wrong.append('%s %s (needs %s)' % (
                event_type, have, _listing(
                    s for s in EVENT_STATUSES if s in allowed)))
    return wrong


def check_combination(lease_id, action, status, reservations, events):
    """Raise :class:`~common.exception.LeaseActionNotAllowed` unless seed
    002's table allows the combination for a lease in ``status``."""
    wrong = combination_errors(status, reservations, events)
    if wrong:
        raise exception.LeaseActionNotAllowed(
            action=action, lease=lease_id,
            reason='a %s lease cannot have %s' % (status, '; '.join(wrong)))


def derive_status(reservations, events):
    """The stable status the events give (start/end: UNDONE/UNDONE ->
    PENDING, DONE/UNDONE -> ACTIVE, DONE/DONE -> TERMINATED, anything else
    -> ERROR), or ERROR when the reservations do not fit it."""
    status = DERIVED.get((events.get(START_LEASE), events.get(END_LEASE)),
                         lease.ERROR)
    if combination_errors(status, reservations, events):
        return lease.ERROR
    return status

"""Which hosts a lease may hold, which hosts a request may land on, and
which instances used a reservation.

* :func:`pick` (:func:`hold` stores what it picks, :func:`recheck` picks
  again for an update): hosts for one reservation, among the enabled hosts
  an admin put into the reservable pool (``hosts.reservable``, Blazar's
  os-hosts), free of every other lease for the whole window and matching
  its ``hypervisor_properties``. A refusal counts the hosts other leases
  hold, never names them nor their dates: they may be other projects'.
  Run inside the transaction that stores them; the matching host rows are
  locked first (``SELECT ... FOR UPDATE`` on PostgreSQL, ``BEGIN
  IMMEDIATE`` on SQLite), so two conductors creating overlapping leases at
  once cannot both get a host: the second sees the first's rows.
* :func:`placement`: the scheduler's lease filter, one SQL condition on
  ``hosts.name``: a request that names no reservation never lands on a host
  an active reservation holds; one that names a reservation lands only on
  that reservation's hosts, and only while its lease is ACTIVE and for the
  lease's project.
* :func:`parse_properties`: Blazar's ``hypervisor_properties`` JSON query
  (``[">=", "$memory_mb", "4096"]``, ``["and", [...], [...]]``) on the
  hosts' fields, as an SQL condition.
* :func:`record_instance`, :func:`instances_of`: the instances placed on
  a reservation (the scheduler records them), what ``on_end`` applies to.
"""

import datetime
import json

import sqlalchemy as sa

from common import exception
from common import leases as rules
from common import states
from common.db import models
from common.db import quotas
from common.db.quotas import UNLIMITED

H = models.Host.__table__
I = models.Instance.__table__           # noqa: E741 (the table, read as "I")
L = models.Lease.__table__
R = models.Reservation.__table__
RH = models.ReservationHost.__table__
RI = models.ReservationInstance.__table__

# Reservations in these statuses hold their hosts for their lease's window.
HOLDING = (rules.reservation.PENDING, rules.reservation.ACTIVE)

# Host fields a query may name (Blazar's names too), and their types.
FIELDS = {'name': (H.c.name, str), 'hypervisor_hostname': (H.c.name, str),
          'vcpus': (H.c.vcpus, float), 'memory_mb': (H.c.memory_mb, float),
          'disk_gb': (H.c.disk_gb, float), 'local_gb': (H.c.disk_gb, float)}
OPERATORS = {'==': '__eq__', '=': '__eq__', '!=': '__ne__', '<': '__lt__',
             '<=': '__le__', '>': '__gt__', '>=': '__ge__'}


# --- hypervisor_properties ---------------------------------------------------

def parse_properties(text, field='hypervisor_properties'):
    """The SQL condition of a Blazar JSON query ('' or '[]': any host).

    Raises :class:`~common.exception.Invalid` naming ``field`` and what is
    wrong with it.
    """
    if not text or not text.strip():
        return sa.true()
    try:
        query = json.loads(text)
    except RecursionError:
        raise _bad(field, text, _TOO_DEEP) from None
    except ValueError as err:
        raise _bad(field, text, 'It is not JSON: %s' % err) from None
    if query == []:
        return sa.true()
    if _depth(query) > MAX_DEPTH:
        # _condition, and SQLAlchemy compiling what it builds, recurse.
        raise _bad(field, text, _TOO_DEEP)
    try:
        return _condition(query)
    except ValueError as err:
        raise _bad(field, text, str(err)) from None


MAX_DEPTH = 16
_TOO_DEEP = 'Its lists are nested more than %d levels deep' % MAX_DEPTH


def _depth(query):
    """How deep lists nest in ``query`` (counted without recursion)."""
    deepest, pending = 0, [(query, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, list):
            deepest = max(deepest, depth)
            if depth <= MAX_DEPTH:
                pending.extend((item, depth + 1) for item in value)
    return deepest


def _bad(field, text, why):
    shown = repr(text)
    if len(shown) > 200:
        shown = shown[:200] + '...'
    return exception.Invalid('Invalid input for field/attribute %s. Value: '
                             '%s. %s' % (field, shown, why))


def _condition(query):
    if not isinstance(query, list) or not query:
        raise ValueError('Expected a list like [">=", "$memory_mb", "4096"] '
                         'or ["and", [...], ...], got %r' % (query,))
    op = query[0]
    if op in ('and', 'or'):
        if len(query) < 2:
            raise ValueError('%r needs at least one condition' % op)
        parts = [_condition(part) for part in query[1:]]
        return sa.and_(*parts) if op == 'and' else sa.or_(*parts)
    if op not in OPERATORS or len(query) != 3:
        raise ValueError('%r is not [OPERATOR, "$FIELD", VALUE] with '
                         'OPERATOR one of %s, and, or'
                         % (query, ', '.join(OPERATORS)))
    name, value = query[1], query[2]
    if not isinstance(name, str) or name.lstrip('$') not in FIELDS:
        raise ValueError('Unknown host field %r; known: %s' % (
            name, ', '.join('$' + f for f in FIELDS)))
    column, kind = FIELDS[name.lstrip('$')]
    try:
        value = kind(value)
    except (TypeError, ValueError):
        raise ValueError('%s compares with a number, not %r'
                         % (name, value)) from None
    return getattr(column, OPERATORS[op])(value)


# --- picking hosts for a lease -----------------------------------------------

def busy_hosts(conn, *, start, end, lease_id):
    """{host: (start, end)} of the other leases' holds overlapping the window."""
    query = sa.select(RH.c.host, L.c.start_date, L.c.end_date).select_from(
        RH.join(R, R.c.id == RH.c.reservation_id).join(
            L, L.c.id == R.c.lease_id)).where(
        R.c.status.in_(HOLDING), L.c.id != lease_id,
        L.c.start_date < end, L.c.end_date > start)
    return {row.host: (row.start_date, row.end_date)
            for row in conn.execute(query)}


def pick(conn, *, lease_id, index, reservation, start, end, taken=(),
         prefer=()):
    """Host names for ``reservation`` (min_hosts to max_hosts of them).

    ``taken``: hosts another reservation of the same lease already has;
    ``prefer``: hosts to keep when possible (an update re-picking). Raises
    :class:`~common.exception.NotEnoughHosts` with the reason.
    """
    field = 'reservations.%d.hypervisor_properties' % index
    matching = conn.execute(
        sa.select(H.c.name, H.c.used_memory_mb).where(
            H.c.enabled.is_(True), H.c.forced_down.is_(False),
            H.c.reservable.is_(True),
            parse_properties(reservation['hypervisor_properties'], field))
        .order_by(H.c.name).with_for_update()).all()
    busy = busy_hosts(conn, start=start, end=end, lease_id=lease_id)
    free = [row for row in matching
            if row.name not in busy and row.name not in taken]
    # Keep what it had, then the emptiest hosts: fewer instances to share.
    free.sort(key=lambda row: (row.name not in prefer, row.used_memory_mb,
                               row.name))
    if len(free) < reservation['min_hosts']:
        raise exception.NotEnoughHosts(lease=lease_id, reason=_shortage(
            index, reservation, start, end, matching, busy, taken, free))
    return [row.name for row in free[:reservation['max_hosts']]]


def _shortage(index, reservation, start, end, matching, busy, taken, free):
    held = sum(1 for row in matching if row.name in busy)
    parts = ['%d enabled host(s) of the reservable pool match'
             % len(matching)]
    if held:
        parts.append('%d held by other leases then' % held)
    mine = sorted(row.name for row in matching if row.name in taken)
    if mine:
        parts.append('%s taken by this lease\'s other reservations'
                     % ', '.join(mine))
    parts.append('%d free' % len(free))
    return ('reservation %d needs at least %d host(s)%s free from %s to %s; '
            '%s' % (index, reservation['min_hosts'],
                    (' matching %s' % reservation['hypervisor_properties'])
                    if reservation['hypervisor_properties'] else '',
                    start, end, ', '.join(parts)))


def hold(conn, lease_id, index, res_id, spec, start, end, taken, prefer=(),
         quota=None):
    """:func:`pick` hosts for reservation ``res_id`` and hold them.
    ``quota``: ``(project_id, limits, now)`` to stay within its
    ``lease_hosts`` (this lease's earlier reservations in ``taken``)."""
    if quota is not None:
        project_id, limits, now = quota
        left = room(conn, lease_id, project_id, limits, now)
        spec = within(spec, None if left is None else left - len(taken),
                      project_id, limits)
    hosts = pick(conn, lease_id=lease_id, index=index, reservation=spec,
                 start=start, end=end, taken=taken, prefer=prefer)
    for host in hosts:
        conn.execute(sa.insert(RH).values(reservation_id=res_id, host=host))
    return hosts


def recheck(conn, lease, new, quota=None):
    """Hosts for the new window of ``lease`` (dates in ``new``): one that
    has not started picks again (keeping its hosts where it can, within
    ``quota`` as :func:`hold` takes it); one that has must keep its hosts,
    free of other leases until its new end."""
    started = any(e['event_type'] == rules.START_LEASE
                  and e['status'] != rules.event.UNDONE
                  for e in lease['events'])
    taken = []
    for index, res in enumerate(lease['reservations']):
        if not started:
            conn.execute(sa.delete(RH).where(RH.c.reservation_id == res['id']))
            taken += hold(conn, lease['id'], index, res['id'], res,
                          new['start_date'], new['end_date'], taken,
                          prefer=res['hosts'], quota=quota)
            continue
        busy = busy_hosts(conn, start=new['start_date'], end=new['end_date'],
                          lease_id=lease['id'])
        clash = sorted(h for h in res['hosts'] if h in busy)
        if clash:
            # Its own hosts, named; the other lease is not.
            raise exception.NotEnoughHosts(lease=lease['id'], reason=(
                'it has started, so it keeps its hosts, and %s %s held by '
                'another lease before %s' % (
                    ', '.join(clash), 'is' if len(clash) == 1 else 'are',
                    new['end_date'])))


def record_instance(conn, reservation_id, instance_uuid, now):
    """The scheduler placed ``instance_uuid`` on the reservation's hosts
    because it named it. Nothing is recorded if the reservation is gone
    (its lease was deleted meanwhile)."""
    conn.execute(sa.insert(RI).from_select(
        ['reservation_id', 'instance_uuid', 'created_at'],
        sa.select(R.c.id, sa.literal(instance_uuid), sa.literal(now))
        .where(R.c.id == reservation_id)))


def instances_of(conn, reservation):
    """Live instances placed on ``reservation`` (a lease's reservation with
    its ``hosts``) that are still on its hosts: what ``on_end`` handles."""
    if not reservation['hosts']:
        return []
    query = sa.select(I).select_from(
        I.join(RI, RI.c.instance_uuid == I.c.uuid)).where(
        RI.c.reservation_id == reservation['id'],
        I.c.host.in_(reservation['hosts']),
        I.c.vm_state != states.vm.HARD_DELETED).order_by(I.c.created_at)
    return [dict(r._mapping) for r in conn.execute(query)]


# --- the scheduler's filter --------------------------------------------------

def _held_now():
    return sa.select(RH.c.host).select_from(
        RH.join(R, R.c.id == RH.c.reservation_id)).where(
        R.c.status == rules.reservation.ACTIVE)


# The filter of every request that names no reservation: one object, so that
# the statements built on it can be built once (common/db/api.py).
NOT_HELD = H.c.name.not_in(_held_now())


def placement(reservation_id, project_id):
    """The lease filter: an SQL condition on ``hosts.name``."""
    if reservation_id is None:
        return NOT_HELD
    mine = sa.select(RH.c.host).select_from(
        RH.join(R, R.c.id == RH.c.reservation_id).join(
            L, L.c.id == R.c.lease_id)).where(
        R.c.id == reservation_id, R.c.status == rules.reservation.ACTIVE,
        L.c.status == rules.lease.ACTIVE, L.c.project_id == project_id)
    return H.c.name.in_(mine)


def explain_placement(conn, reservation_id, project_id):
    """Why the lease filter left so few hosts, for a NoValidHost reason."""
    if reservation_id is None:
        # Counted, not named: the reason reaches the instance's project.
        held = len(set(conn.execute(_held_now()).scalars()))
        if not held:
            return ''
        return '%d host(s) held by active leases' % held
    row = conn.execute(sa.select(R.c.status, L.c.id, L.c.status.label(
        'lease_status'), L.c.project_id, L.c.start_date, L.c.end_date)
        .select_from(R.join(L, L.c.id == R.c.lease_id))
        .where(R.c.id == reservation_id)).first()
    if row is None or row.project_id != project_id:
        return 'reservation %s does not exist' % reservation_id
    if (row.lease_status, row.status) != (rules.lease.ACTIVE,
                                          rules.reservation.ACTIVE):
        return ('reservation %s is not usable now: its lease %s is %s '
                '(from %s to %s)' % (reservation_id, row.id,
                                     row.lease_status, row.start_date,
                                     row.end_date))
    hosts = sorted(conn.execute(sa.select(RH.c.host).where(
        RH.c.reservation_id == reservation_id)).scalars())
    return 'reservation %s holds only %s' % (reservation_id,
                                              ', '.join(hosts))


# --- the project's lease quotas ------------------------------------------------

def _held_by_project(conn, project_id, *, but=None):
    query = sa.select(sa.func.count()).select_from(
        RH.join(R, R.c.id == RH.c.reservation_id).join(
            L, L.c.id == R.c.lease_id)).where(
        L.c.project_id == project_id, R.c.status.in_(HOLDING))
    if but is not None:
        query = query.where(L.c.id != but)
    return conn.execute(query).scalar()


def quota_usage(conn, project_id):
    """What a project uses of its lease quotas (``lease_hours`` limits
    each lease, so nothing is "in use" of it)."""
    return {'lease_hosts': _held_by_project(conn, project_id),
            'lease_hours': 0}


def check_hours(project_id, start, end, limits):
    """Refuse a window longer than the project's ``lease_hours``."""
    hours = limits['lease_hours']
    if hours != UNLIMITED and end - start > datetime.timedelta(hours=hours):
        raise exception.QuotaExceeded(
            'Quota exceeded for lease_hours: the lease would last %.1f '
            'hours, and a lease of project %s may last %d.' % (
                (end - start).total_seconds() / 3600, project_id, hours))


def room(conn, lease_id, project_id, limits, now):
    """Hosts the project's ``lease_hosts`` quota leaves for ``lease_id``
    (its own holds not counted), or None when unlimited."""
    limit = limits['lease_hosts']
    if limit == UNLIMITED:
        return None
    _lock_project(conn, project_id, now)
    return limit - _held_by_project(conn, project_id, but=lease_id)


def _lock_project(conn, project_id, now):
    """Two leases of one project made at once (by two conductors on
    PostgreSQL) count each other's hosts: the second waits on the project's
    quota_usages row, locked here, until the first commits. (SQLite's
    BEGIN IMMEDIATE serialises writers already.)"""
    usage = quotas.U
    quotas.insert_new(conn, usage, project_id=project_id,
                      updated_at=now, **quotas.NOTHING)
    conn.execute(sa.select(usage.c.project_id).where(
        usage.c.project_id == project_id).with_for_update())


def within(spec, left, project_id, limits):
    """``spec`` (a reservation) with its max capped to ``left`` hosts
    (None: unlimited); refused when even its min does not fit."""
    if left is None:
        return spec
    if spec['min_hosts'] > left:
        limit = limits['lease_hosts']
        raise exception.QuotaExceeded(
            resource='lease_hosts', project=project_id, limit=limit,
            used=limit - left, requested=spec['min_hosts'])
    return dict(spec, max_hosts=min(spec['max_hosts'], left))


# --- the reservable pool -----------------------------------------------------

def set_reservable(conn, host, reservable):
    """Put ``host`` into the pool, or take it out (its leases keep it until
    they end). :class:`~common.exception.HostNotFound` if no such host;
    :class:`~common.exception.Conflict` to take out a host a lease holds
    now or later."""
    if not reservable:
        held = conn.execute(sa.select(sa.func.count()).select_from(
            RH.join(R, R.c.id == RH.c.reservation_id)).where(
            RH.c.host == host, R.c.status.in_(HOLDING))).scalar()
        if held:
            raise exception.Conflict(
                'Host %s is held by %d reservation(s) of leases not ended '
                'yet: it can leave the reservable pool once they end or are '
                'deleted.' % (host, held))
    res = conn.execute(sa.update(H).where(H.c.name == host).values(
        reservable=reservable))
    if res.rowcount != 1:
        raise exception.HostNotFound(host=host)


def pool(conn):
    """The hosts of the reservable pool, by name."""
    return [dict(r._mapping) for r in conn.execute(
        sa.select(H.c.name, H.c.enabled, H.c.vcpus, H.c.memory_mb,
                  H.c.disk_gb, H.c.created_at)
        .where(H.c.reservable.is_(True))
        .order_by(H.c.name))]

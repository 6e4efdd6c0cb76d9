"""The leases' database half: every status change checked, then made by
conditional UPDATEs (DESIGN.md section 7).

Every change of a lease, of its reservations or of its events goes through
:meth:`LeaseDB._change`, in one retried transaction
(:class:`common.db.engine.Database`), which

1. locks the lease's row (``SELECT ... FOR UPDATE``; SQLite's ``BEGIN
   IMMEDIATE`` serialises writers anyway) and reads its reservations and
   events;
2. checks every status it moves against the transition tables of
   :mod:`common.leases`, and the combination it leads to against seed 002's
   table; a denial raises
   :class:`~common.exception.LeaseActionNotAllowed` with the reason;
3. writes each row with ``UPDATE ... WHERE status = :the_status_it_read``
   (events also ``AND run_id = :the_run``), so that two conductors can never
   both move one lease or both run one event.

Operations on top: :meth:`~LeaseDB.create_lease` (CREATING, hosts picked in
the same transaction: no hosts, nothing stored), :meth:`~LeaseDB.begin` and
:meth:`~LeaseDB.settle` (to the operation's transitional status, then to
the stable status derived from the events), :meth:`~LeaseDB.claim_event`,
:meth:`~LeaseDB.finish_event`, :meth:`~LeaseDB.fail_event` (the periodic
job's runs), :meth:`~LeaseDB.update_lease` and :meth:`~LeaseDB.remove`.
Everything returns plain dicts, never ORM rows.
"""

import dataclasses

import sqlalchemy as sa

from common import exception
from common import leases as rules
from common.db import api as db_api
from common.db import lease_hosts
from common.db import models
from common.db import quotas

L = models.Lease.__table__
R = models.Reservation.__table__
RH = models.ReservationHost.__table__
RI = models.ReservationInstance.__table__
E = models.LeaseEvent.__table__

DERIVE = 'DERIVE'           # _change(to=DERIVE): the status the events give
ANY_RUN = object()          # EventChange(run_id=ANY_RUN): no run guard
_EVENT_ORDER = {t: i for i, t in enumerate(rules.EVENT_TYPES)}
LEASE_COLUMNS = frozenset({'name', 'start_date', 'end_date',
                           'before_end_date', 'on_end', 'status_reason'})


@dataclasses.dataclass(frozen=True)
class EventChange:
    """What :meth:`LeaseDB._change` does to one event of the lease."""
    event_type: str
    to: str | None = None                 # new status; None: unchanged
    run_id: object = ANY_RUN              # the run that must hold it
    values: dict = dataclasses.field(default_factory=dict)


def _runnable(event_type, event_status):
    """The lease statuses in which an event in ``event_status`` may be
    claimed: UNDONE, where its operation may start; IN_PROGRESS (a retry),
    while its operation runs."""
    op = rules.operation_of(event_type)
    if op is None:
        return (rules.BEFORE_END_NEEDS,)
    if event_status == rules.event.UNDONE:
        return rules.LEASES.sources(op.status)
    return (op.status,)


def _rows(conn, query):
    return [dict(r._mapping) for r in conn.execute(query)]


class LeaseDB:
    """Leases over one :class:`~common.db.engine.Database`; ``clock``
    returns naive UTC (tests inject their own)."""

    def __init__(self, database, *, clock=db_api.utcnow, quota=None):
        self.db = database
        self.clock = clock
        # The lease quotas (common.db.quotas.Settings): none limited
        # without it.
        self.quota = quota or quotas.Settings()

    def _limits(self, conn, project_id):
        return quotas.limits(conn, project_id, self.quota)

    # --- reads --------------------------------------------------------------

    def get_lease(self, lease_id):
        """The lease with its ``reservations`` (each with ``hosts``) and
        ``events``; :class:`~common.exception.LeaseNotFound` if none."""
        return self.db.transaction(self._load, lease_id, readonly=True)

    def list_leases(self, *, project_id=None):
        def txn(conn):
            query = sa.select(L.c.id).order_by(L.c.created_at, L.c.id)
            if project_id is not None:
                query = query.where(L.c.project_id == project_id)
            return [self._load(conn, lid)
                    for lid in conn.execute(query).scalars()]
        return self.db.transaction(txn, readonly=True)

    def _load(self, conn, lease_id, lock=False):
        query = sa.select(L).where(L.c.id == lease_id)
        if lock:
            query = query.with_for_update()
        found = _rows(conn, query)
        if not found:
            raise exception.LeaseNotFound(lease=lease_id)
        lease = found[0]
        lease['reservations'] = _rows(conn, sa.select(R).where(
            R.c.lease_id == lease_id).order_by(R.c.created_at, R.c.id))
        for res in lease['reservations']:
            res['hosts'] = sorted(conn.execute(sa.select(RH.c.host).where(
                RH.c.reservation_id == res['id'])).scalars())
        lease['events'] = sorted(
            _rows(conn, sa.select(E).where(E.c.lease_id == lease_id)),
            key=lambda e: (e['time'], _EVENT_ORDER[e['event_type']]))
        return lease

    def due_events(self, *, now, stale_before):
        """Events to run now, oldest first: UNDONE ones whose time has come
        while their lease may take their operation, and IN_PROGRESS ones
        whose run failed or was claimed before ``stale_before``."""
        ready = [sa.and_(E.c.event_type == t, E.c.status == status,
                         L.c.status.in_(_runnable(t, status)))
                 for t in rules.EVENT_TYPES
                 for status in (rules.event.UNDONE, rules.event.IN_PROGRESS)]
        query = sa.select(E, L.c.status.label('lease_status')).select_from(
            E.join(L, L.c.id == E.c.lease_id)).where(sa.or_(
                sa.and_(E.c.status == rules.event.UNDONE, E.c.time <= now),
                sa.and_(E.c.status == rules.event.IN_PROGRESS,
                        sa.or_(E.c.claimed_at.is_(None),
                               E.c.claimed_at < stale_before))),
            sa.or_(*ready))
        events = self.db.transaction(lambda conn: _rows(conn, query),
                                     readonly=True)
        return sorted(events, key=lambda e: (
            e['time'], _EVENT_ORDER[e['event_type']], e['id']))

    def reservation_instances(self, reservation):
        """See :func:`common.db.lease_hosts.instances_of`."""
        return self.db.transaction(lease_hosts.instances_of, reservation,
                                   readonly=True)

    def set_reservable(self, host, reservable):
        """See :func:`common.db.lease_hosts.set_reservable`."""
        self.db.transaction(lease_hosts.set_reservable, host, reservable)

    def reservable_hosts(self):
        return self.db.transaction(lease_hosts.pool, readonly=True)

    def explain_placement(self, reservation_id, project_id):
        return self.db.transaction(lease_hosts.explain_placement,
                                   reservation_id, project_id, readonly=True)

    # --- the one checked change ----------------------------------------------

    def _change(self, conn, lease_id, action, *, expect=None, to=None,
                reservations=None, events=(), values=None):
        """Check, then make, one change of a lease in ``conn``'s transaction.

        ``expect``: statuses the lease must be in; ``to``: its new status
        (None: unchanged; :data:`DERIVE`: the one its events give);
        ``reservations``: ``{from: to}`` for the lease's reservations;
        ``events``: :class:`EventChange` values; ``values``: other lease
        columns. Returns ``(before, after)`` full lease dicts.
        """
        before = self._load(conn, lease_id, lock=True)
        current = before['status']
        guarded = any(ev.run_id is not ANY_RUN for ev in events)
        if expect is not None and current not in expect:
            self._deny(lease_id, action, guarded,
                       'its status is %s and %s needs %s' % (
                           current, action, ', '.join(expect)))
        res_moves = self._reservation_moves(before, action, reservations)
        statuses = {e['event_type']: e['status'] for e in before['events']}
        ev_rows = {e['event_type']: e for e in before['events']}
        for ev in events:
            row = ev_rows.get(ev.event_type)
            if row is None or (ev.run_id is not ANY_RUN
                               and row['run_id'] != ev.run_id):
                self._deny(lease_id, action, guarded,
                           '%s is no longer held by this run' % ev.event_type)
            if ev.to is not None:
                rules.check_step(rules.EVENTS, lease_id, action,
                                 ev.event_type, row['status'], ev.to)
                statuses[ev.event_type] = ev.to
        res_after = [res_moves.get(r['id'], (None, r['status']))[1]
                     for r in before['reservations']]
        target = current if to is None else to
        if to == DERIVE:
            target = rules.derive_status(res_after, statuses)
        if to is not None:
            rules.check_move(lease_id, action, current, target)
        rules.check_combination(lease_id, action, target, res_after, statuses)
        self._write(conn, before, target, values or {}, res_moves, events,
                    ev_rows)
        return before, self._load(conn, lease_id)

    @staticmethod
    def _deny(lease_id, action, guarded, reason):
        if guarded:     # a run of the periodic job lost its lease
            raise exception.LeaseEventPreempted(event_type=action,
                                                lease=lease_id, reason=reason)
        raise exception.LeaseActionNotAllowed(action=action, lease=lease_id,
                                              reason=reason)

    @staticmethod
    def _reservation_moves(lease, action, moves):
        out = {}
        for res in lease['reservations']:
            if moves and res['status'] in moves:
                target = moves[res['status']]
                rules.check_step(rules.RESERVATIONS, lease['id'], action,
                                 res['id'], res['status'], target)
                out[res['id']] = (res['status'], target)
        return out

    def _write(self, conn, before, target, values, res_moves, events, ev_rows):
        now = self.clock()
        res = conn.execute(sa.update(L).where(
            L.c.id == before['id'], L.c.status == before['status'])
            .values(status=target, updated_at=now, **values))
        if res.rowcount != 1:       # the row lock makes this unreachable
            raise exception.LeaseEventPreempted(
                event_type='change', lease=before['id'],
                reason='its status moved from %s meanwhile' % before['status'])
        for res_id, (old, new) in res_moves.items():
            conn.execute(sa.update(R).where(R.c.id == res_id,
                                            R.c.status == old)
                         .values(status=new, updated_at=now))
        for ev in events:
            row = ev_rows[ev.event_type]
            new = {'updated_at': now, **ev.values}
            if ev.to is not None:
                new['status'] = ev.to
            guard = (E.c.run_id.is_(None) if row['run_id'] is None
                     else E.c.run_id == row['run_id'])
            res = conn.execute(sa.update(E).where(
                E.c.id == row['id'], E.c.status == row['status'], guard)
                .values(**new))
            if res.rowcount != 1:
                raise exception.LeaseEventPreempted(
                    event_type=ev.event_type, lease=before['id'],
                    reason='the event changed meanwhile')

    # --- create, begin, settle -----------------------------------------------

    def create_lease(self, ctx, *, name, start, end, before_end, on_end,
                     reservations):
        """Store a new lease as CREATING, with its reservations (pending),
        the hosts they hold and its events (UNDONE), then settle it
        (PENDING). Hosts are picked in the same transaction: when there are
        not enough, :class:`~common.exception.NotEnoughHosts` and nothing
        is stored."""
        lease_id = db_api.new_uuid()
        rules.check_combination(
            lease_id, 'create', rules.lease.CREATING,
            [rules.reservation.PENDING] * len(reservations),
            {rules.START_LEASE: rules.event.UNDONE,
             rules.END_LEASE: rules.event.UNDONE})

        project_id = ctx.project_id or ''

        def txn(conn):
            now = self.clock()
            limits = self._limits(conn, project_id)
            lease_hosts.check_hours(project_id, start, end, limits)
            conn.execute(sa.insert(L).values(
                id=lease_id, name=name, project_id=project_id,
                user_id=ctx.user_id or '', start_date=start, end_date=end,
                before_end_date=before_end, on_end=on_end,
                status=rules.lease.CREATING, created_at=now, updated_at=now))
            taken = []
            for index, spec in enumerate(reservations):
                res_id = db_api.new_uuid()
                conn.execute(sa.insert(R).values(
                    id=res_id, lease_id=lease_id,
                    resource_type=spec['resource_type'],
                    min_hosts=spec['min_hosts'], max_hosts=spec['max_hosts'],
                    hypervisor_properties=spec['hypervisor_properties'],
                    status=rules.reservation.PENDING, created_at=now,
                    updated_at=now))
                taken += lease_hosts.hold(conn, lease_id, index, res_id,
                                          spec, start, end, taken,
                                          quota=(project_id, limits, now))
            times = {rules.START_LEASE: start, rules.END_LEASE: end,
                     rules.BEFORE_END_LEASE: before_end}
            for event_type, when in times.items():
                if when is not None:
                    self._insert_event(conn, lease_id, event_type, when, now)
        self.db.transaction(txn)
        return self.settle(lease_id, 'create')

    @staticmethod
    def _insert_event(conn, lease_id, event_type, when, now):
        conn.execute(sa.insert(E).values(
            id=db_api.new_uuid(), lease_id=lease_id, event_type=event_type,
            time=when, status=rules.event.UNDONE, attempts=0,
            created_at=now, updated_at=now))

    def begin(self, lease_id, op_name):
        """Move the lease to the operation's transitional status. Returns
        ``(before, after)``."""
        op = rules.OPERATIONS[op_name]
        return self.db.transaction(lambda conn: self._change(
            conn, lease_id, op_name, to=op.status))

    def settle(self, lease_id, op_name):
        """From the operation's transitional status to the stable status
        its events give. Returns the lease after."""
        op = rules.OPERATIONS[op_name]
        return self.db.transaction(lambda conn: self._change(
            conn, lease_id, op_name, expect=(op.status,), to=DERIVE))[1]

    # --- the periodic job's runs ---------------------------------------------

    def claim_event(self, event_id, *, stale_before, max_attempts):
        """Claim a due event for one run; None if another conductor has it,
        or its lease cannot take it now.

        Returns ``(lease, event, run_id)``; ``run_id`` is None when the
        event had no attempts left: it was failed here instead.
        """
        def txn(conn):
            row = _rows(conn, sa.select(E).where(E.c.id == event_id))
            if not row:
                return None
            lease = self._load(conn, row[0]['lease_id'], lock=True)
            event = next(e for e in lease['events'] if e['id'] == event_id)
            op = rules.operation_of(event['event_type'])
            if lease['status'] not in _runnable(event['event_type'],
                                                event['status']):
                return None
            if event['status'] == rules.event.UNDONE:
                if event['time'] > self.clock():
                    return None
                to = op.status if op else None
            elif event['status'] == rules.event.IN_PROGRESS and (
                    event['claimed_at'] is None
                    or event['claimed_at'] < stale_before):
                if event['attempts'] >= max_attempts:
                    after = self._fail(conn, lease, event, event['run_id'],
                                       event['message'] or 'its conductor '
                                       'stopped during the run')
                    return after, event, None
                to = None
            else:
                return None
            run_id = db_api.new_uuid()
            _before, after = self._change(
                conn, lease['id'], event['event_type'], to=to,
                events=[EventChange(
                    event['event_type'], rules.event.IN_PROGRESS,
                    run_id=event['run_id'],
                    values={'run_id': run_id, 'claimed_at': self.clock(),
                            'attempts': event['attempts'] + 1})])
            claimed = next(e for e in after['events'] if e['id'] == event_id)
            return after, claimed, run_id
        return self.db.transaction(txn)

    def activate(self, lease_id, run_id):
        """The start's work: the reservations hold their hosts from now."""
        return self.db.transaction(lambda conn: self._change(
            conn, lease_id, rules.START_LEASE, expect=(rules.lease.STARTING,),
            reservations={rules.reservation.PENDING: rules.reservation.ACTIVE},
            events=[EventChange(rules.START_LEASE, run_id=run_id)]))[1]

    def finish_event(self, lease_id, event_type, run_id):
        """The run ``run_id`` ended well: the event is DONE and, for the
        start and the end, the lease settles (the end also releases the
        hosts). Returns the lease after."""
        op = rules.operation_of(event_type)
        moves = None
        if event_type == rules.END_LEASE:
            moves = {rules.reservation.ACTIVE: rules.reservation.DELETED,
                     rules.reservation.ERROR: rules.reservation.DELETED}
        return self.db.transaction(lambda conn: self._change(
            conn, lease_id, event_type,
            expect=(op.status,) if op else (rules.BEFORE_END_NEEDS,),
            to=DERIVE if op else None, reservations=moves,
            events=[EventChange(event_type, rules.event.DONE, run_id=run_id,
                                values={'claimed_at': None})]))[1]

    def fail_event(self, lease_id, event_type, run_id, *, error,
                   max_attempts):
        """The run ``run_id`` failed: released for a retry while attempts
        are left (the event stays IN_PROGRESS), else the event goes to
        ERROR and the lease settles (ERROR). Returns True if final."""
        def txn(conn):
            lease = self._load(conn, lease_id, lock=True)
            event = next((e for e in lease['events']
                          if e['event_type'] == event_type), None)
            if event is not None and event['attempts'] >= max_attempts:
                self._fail(conn, lease, event, run_id, error)
                return True
            self._change(conn, lease_id, event_type, expect=_runnable(
                event_type, rules.event.IN_PROGRESS), events=[EventChange(
                event_type, run_id=run_id, values={
                    'run_id': None, 'claimed_at': None, 'message': error})])
            return False
        return self.db.transaction(txn)

    def _fail(self, conn, lease, event, run_id, error):
        op = rules.operation_of(event['event_type'])
        moves = None
        if op is not None:
            moves = {rules.reservation.PENDING: rules.reservation.ERROR,
                     rules.reservation.ACTIVE: rules.reservation.ERROR}
        return self._change(
            conn, lease['id'], event['event_type'],
            expect=_runnable(event['event_type'], rules.event.IN_PROGRESS),
            to=DERIVE if op else None, reservations=moves,
            values={'status_reason': '%s failed after %d attempt(s): %s' % (
                event['event_type'], event['attempts'], error)} if op else None,
            events=[EventChange(event['event_type'], rules.event.ERROR,
                                run_id=run_id,
                                values={'message': error,
                                        'claimed_at': None})])[1]

    # --- update and delete ---------------------------------------------------

    def update_lease(self, lease_id, values, *, recheck):
        """The update's work, on an UPDATING lease: new ``values`` (lease
        columns) and event times; when the window changed (``recheck``),
        host availability checked again: a lease that has not started
        picks again (keeping its hosts where it can), a started one must
        keep its hosts. Returns the lease after."""
        unknown = set(values) - LEASE_COLUMNS
        if unknown:
            raise exception.Invalid('a lease has no field %s' % sorted(unknown))

        def txn(conn):
            lease = self._load(conn, lease_id, lock=True)
            new = dict(lease, **values)
            if recheck:
                limits = self._limits(conn, lease['project_id'])
                lease_hosts.check_hours(lease['project_id'],
                                        new['start_date'], new['end_date'],
                                        limits)
                lease_hosts.recheck(conn, lease, new, quota=(
                    lease['project_id'], limits, self.clock()))
            changes = self._event_times(conn, lease, new)
            return self._change(conn, lease_id, 'update',
                                expect=(rules.lease.UPDATING,),
                                events=changes, values=values)[1]
        return self.db.transaction(txn)

    def _event_times(self, conn, lease, new):
        """EventChanges (or inserts/deletes) for the new dates."""
        times = {rules.START_LEASE: new['start_date'],
                 rules.END_LEASE: new['end_date'],
                 rules.BEFORE_END_LEASE: new['before_end_date']}
        have = {e['event_type']: e for e in lease['events']}
        changes = []
        for event_type, when in times.items():
            event = have.get(event_type)
            if event is None:
                if when is not None:
                    self._insert_event(conn, lease['id'], event_type, when,
                                       self.clock())
            elif event['status'] == rules.event.UNDONE:
                if when is None:
                    conn.execute(sa.delete(E).where(E.c.id == event['id']))
                elif when != event['time']:
                    changes.append(EventChange(event_type,
                                               values={'time': when}))
        return changes

    def remove(self, lease_id):
        """Delete's last step: the rows of a DELETING lease go."""
        def txn(conn):
            lease = self._load(conn, lease_id, lock=True)
            if lease['status'] != rules.lease.DELETING:
                raise exception.LeaseActionNotAllowed(
                    action='delete', lease=lease_id,
                    reason='its status is %s, not DELETING' % lease['status'])
            res_ids = [r['id'] for r in lease['reservations']]
            for table in (RH, RI):
                conn.execute(sa.delete(table).where(
                    table.c.reservation_id.in_(res_ids)))
            conn.execute(sa.delete(E).where(E.c.lease_id == lease_id))
            conn.execute(sa.delete(R).where(R.c.lease_id == lease_id))
            conn.execute(sa.delete(L).where(L.c.id == lease_id,
                                            L.c.status == rules.lease.DELETING))
            return lease
        return self.db.transaction(txn)

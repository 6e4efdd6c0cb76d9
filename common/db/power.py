"""The StateDB's cheap path for periodic power reports (mixed into
:class:`common.db.api.StateDB`).

A full report of a host usually says what is stored already. Its cost is
then one transaction: a narrow read of the host's instances
(:meth:`PowerMixin.power_view`: the columns a report is compared with, no
full rows) and one UPDATE per distinct state (:meth:`PowerMixin.confirm_power`)
that moves the
unchanged instances' ``power_seq`` up to the read's: the stored power_state
is then known as of that read, so a late, older report can never overwrite it
(DESIGN.md section 5: "a late report never undoes a newer one"). A report
that changes something goes through :meth:`StateDB.store_power_report`.

The read and that UPDATE are :class:`~common.db.prepared.Prepared`
statements: compiled once per dialect and run on the driver's cursor. A
list of uuids cannot be an expanding IN there (and in plain Core one is
compiled again at every run), so it is bound one uuid per slot, padded with
NULL to the next of a few fixed sizes (:data:`IN_SIZES`): one statement per
size. The UPDATE names each uuid it confirms, so an instance the read did
not find (which a full report then stores as gone, at the read's seq) is
never confirmed first.
"""

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from common.db import hosts
from common.db import models
from common.db import prepared
from common.db.prepared import bind
from common.states import POWER_STATES
from common.states import SEQ_LIMIT
from common.states import power
from common.states import vm

I = models.Instance.__table__          # noqa: E741 (the table, as in api.py)

# What a report is compared with, and what decides whether reconcile acts.
POWER_KEYS = ('uuid', 'host', 'task_id', 'vm_state', 'power_state',
              'power_reason', 'power_seq')
_COLUMNS = [I.c[key] for key in POWER_KEYS]
# The instances of a host a full report speaks for: the live ones, and the
# hard-deleted ones whose domain was last seen there (a read that no longer
# finds it stores it gone: issue 19).
_REPORTED_ON = sa.or_(I.c.vm_state != vm.HARD_DELETED,
                      I.c.power_state != power.NOSTATE)
_ON_HOST = prepared.Prepared(sa.select(*_COLUMNS).where(
    I.c.host == bind('host'), _REPORTED_ON))

# A list of uuids is bound one per slot, padded with NULL (which matches
# nothing) up to the next of these sizes: an expanding IN cannot be
# prepared, and in plain Core it is compiled again at every run. A longer
# list goes in chunks of the largest size (SQLite takes 999 binds at least).
IN_SIZES = (8, 32, 128, 512)
_SLOTS = tuple('u%d' % n for n in range(IN_SIZES[-1]))


def _uuid_slots(size):
    return [bind(name, I.c.uuid.type) for name in _SLOTS[:size]]


def _by_uuid(size):
    # Hard-deleted instances included: their domains are destroyed again.
    return prepared.cached(('instances.power_by_uuid', size), lambda: sa.select(
        *_COLUMNS).where(I.c.uuid.in_(_uuid_slots(size))))


def _confirm_read(size):
    """A full read's unchanged instances, in groups of one (state,
    reason): moved to the read's seq, only rows that still hold the state
    the report was compared with, placed on the reporting host, and not
    already known as of a newer report."""
    return prepared.cached(('instances.confirm_read', size), lambda: sa.update(
        I).where(
            I.c.uuid.in_(_uuid_slots(size)), I.c.host == bind('host'),
            I.c.power_seq < bind('seq', I.c.power_seq.type),
            I.c.power_state == bind('state'),
            I.c.power_reason.is_not_distinct_from(bind('reason')),
    ).values(power_seq=bind('seq', I.c.power_seq.type),
             power_reported_at=bind('now', I.c.power_reported_at.type)))


def _chunks(uuids):
    """(size, {slot: uuid}) per chunk of ``uuids``, padded to ``size``."""
    largest = IN_SIZES[-1]
    for start in range(0, len(uuids), largest):
        chunk = uuids[start:start + largest]
        size = next(s for s in IN_SIZES if s >= len(chunk))
        slots = dict.fromkeys(_SLOTS[:size])
        slots.update(zip(_SLOTS[:len(chunk)], chunk, strict=True))
        yield size, slots


# Any other unchanged report (an event's), each to its own seq
# (executemany), with the same conditions.
_CONFIRM_ONE = sa.update(I).where(
    I.c.uuid == sa.bindparam('c_uuid'), I.c.host == sa.bindparam('c_host'),
    I.c.power_seq < sa.bindparam('c_seq'),
    I.c.power_state == sa.bindparam('c_state'),
    I.c.power_reason.is_not_distinct_from(sa.bindparam('c_reason')),
).values(power_seq=sa.bindparam('c_seq'),
         power_reported_at=sa.bindparam('c_now'))


def _full_read_statement(with_beat):
    """PostgreSQL: a full report's read and the confirm of its plainly
    unchanged reports in one statement (and, ``with_beat``, the heartbeat
    carrying it: :func:`hosts.beat_counts`), so one round trip instead of
    two or four.

    The confirm is :func:`_confirm_read`'s UPDATE with each report's own
    state: the reports (uuid, power_state, reason) come as three arrays,
    and a row moves to the read's seq only where it holds that very state,
    is placed on the host, is not hard-deleted and is not known as of a
    newer report; the rows it moved are RETURNING'd. The read is
    :data:`_ON_HOST`'s, with a column ``confirmed`` saying which of its
    rows the confirm moved. Data-modifying CTEs run once, to completion,
    on the statement's snapshot: the read sees every row as it was before
    the confirm. A row changed by another transaction meanwhile is left
    alone by the confirm (its WHERE is checked again on the new row), and
    the caller compares it as read, as before. One LEFT JOIN row with NULL
    columns comes back for a host with no instances, for the counts."""
    def build():
        arrays = sa.func.unnest(
            bind('r_uuids', postgresql.ARRAY(sa.String)),
            bind('r_states', postgresql.ARRAY(sa.Integer)),
            bind('r_reasons', postgresql.ARRAY(sa.String)),
        ).table_valued('uuid', 'state', 'reason').render_derived(name='r')
        seq = bind('seq', I.c.power_seq.type)
        confirmed = sa.update(I).where(
            I.c.uuid == arrays.c.uuid, I.c.host == bind('host'),
            I.c.vm_state != vm.HARD_DELETED, I.c.power_seq < seq,
            I.c.power_state == arrays.c.state,
            I.c.power_reason.is_not_distinct_from(arrays.c.reason),
        ).values(power_seq=seq, power_reported_at=bind(
            'now', I.c.power_reported_at.type)).returning(
                I.c.uuid).cte('confirmed')
        read = sa.select(*_COLUMNS, I.c.uuid.in_(
            sa.select(confirmed.c.uuid)).label('confirmed')).where(
                I.c.host == bind('host'), _REPORTED_ON)
        if not with_beat:
            return read
        rows = read.subquery('on_host')
        one = sa.select(sa.literal(1).label('one')).subquery('one')
        return sa.select(*hosts.beat_counts(), *rows.c).select_from(
            one.outerjoin(rows, sa.true()))
    return prepared.cached(('instances.pg_full_read', with_beat), build)


def _quick_confirm(reports, read_seq):
    """The reports of a full read (seq ``read_seq``) that
    :func:`_full_read_statement` may confirm in SQL: (uuids, states,
    reasons) of those whose every field has the plain type a report has (a
    uuid string, one of the power state numbers, a reason string or None, a
    seq after the read and below 2**63) and whose uuid comes once. Anything
    else (a bad report, which the comparison logs and ignores, among them)
    is left to the caller's comparison, as on every other backend."""
    picked, twice = {}, set()
    for report in reports:
        uuid, state = report.get('uuid'), report.get('power_state')
        seq, reason = report.get('seq'), report.get('reason')
        if not (type(uuid) is str and type(state) is int
                and state in POWER_STATES
                and type(seq) is int and read_seq < seq < SEQ_LIMIT
                and (reason is None or type(reason) is str)):
            continue
        if uuid in picked:
            twice.add(uuid)
        picked[uuid] = (state, reason)
    for uuid in twice:
        del picked[uuid]
    return (list(picked), [v[0] for v in picked.values()],
            [v[1] for v in picked.values()])


def _keyed(rows):
    return {row['uuid']: row for row in rows}


class PowerMixin:
    """Needs ``self.db`` and ``self.clock``."""

    def power_view(self, *, host=None, uuids=(), confirm=None,
                   read_seq=None, beat=None, reports=None, reporter=None,
                   also=None):
        """{uuid: {POWER_KEYS...}} of the instances placed on ``host`` (not
        hard-deleted) and of those of ``uuids`` not among them (wherever
        they are, hard-deleted too).

        ``confirm``, if given, is called with that view and the set of
        uuids already confirmed (below), and returns the unchanged
        reports to confirm (see :meth:`confirm_power`), which are then
        confirmed in the same transaction: one transaction per report
        batch. It may run again (a retried transaction).

        ``beat``: the keyword arguments of :meth:`agent_heartbeat`, for a
        report carried by a heartbeat: the heartbeat is stored first, in
        the same transaction (its BEGIN and COMMIT serve both).

        ``reporter``: the host whose agent sent the reports, when it is not
        ``host`` (reports of events read only the instances they name): the
        confirm moves only instances placed on it.

        ``also``: called with the connection last, in the same
        transaction (the strays the sort found: :mod:`common.db.domains`).

        ``reports``: a full read's (``host`` and ``read_seq``). On
        PostgreSQL those of :func:`_quick_confirm` that say what is stored
        are confirmed by the read itself, with the heartbeat, in one
        statement (:func:`_full_read_statement`); elsewhere, or without
        ``reports``, nothing is confirmed before ``confirm`` is called."""
        def txn(conn):
            done = frozenset()
            if (reports is not None and host and read_seq is not None
                    and confirm is not None
                    and conn.dialect.name == 'postgresql'):
                found, done = self._pg_full_read(conn, host, beat, reports,
                                                 read_seq)
            else:
                if beat is not None:
                    self._agent_beat(conn, **beat)
                found = (_keyed(_ON_HOST.run(conn, host=host).rows)
                         if host else {})
            rest = [u for u in uuids if u is not None and u not in found]
            for size, slots in _chunks(rest):
                found.update(_keyed(_by_uuid(size).run(conn, **slots).rows))
            if confirm is not None:
                self._confirm(conn, reporter or host, confirm(found, done),
                              read_seq)
            if also is not None:
                also(conn)
            return found
        if beat is None and not host and not any(
                u is not None for u in uuids):
            if confirm is not None:
                confirm({}, frozenset())
            return {}
        return self.db.transaction(
            txn, readonly=confirm is None and beat is None)

    def _pg_full_read(self, conn, host, beat, reports, read_seq):
        """(found, confirmed uuids): :func:`_full_read_statement`, run."""
        r_uuids, r_states, r_reasons = _quick_confirm(reports, read_seq)
        values = {'host': host, 'seq': int(read_seq), 'now': self.clock(),
                  'r_uuids': r_uuids, 'r_states': r_states,
                  'r_reasons': r_reasons}
        if beat is not None:
            beat = dict(beat)
            values = dict(hosts.beat_values(beat.pop('host'), values['now'],
                                            **beat), **values)
        rows = _full_read_statement(beat is not None).run(conn, **values).rows
        if beat is not None:
            hosts.after_beat(conn, values,
                             hosts_beaten=rows[0]['hosts_beaten'],
                             services_beaten=rows[0]['services_beaten'])
        found, done = {}, set()
        for row in rows:
            uuid = row['uuid']
            if uuid is None:        # the LEFT JOIN's row: no instances
                continue
            if row.pop('confirmed'):
                done.add(uuid)
            if beat is not None:
                del row['hosts_beaten'], row['services_beaten']
            found[uuid] = row
        return found, done

    def confirm_power(self, host, confirmed, *, read_seq=None):
        """Mark unchanged instances as known as of their report.

        ``confirmed``: (uuid, seq, power_state, power_reason) of reports
        that said what was stored. Those of a full read (``read_seq``, and
        a seq after it) move to ``read_seq``: the read began there, and no
        other report can be numbered between it and theirs (the agent
        numbers under one lock), so this never claims more than was seen;
        it lets one statement per distinct state serve the whole host.
        Rows changed since they were compared (by a task's end, another
        report) are left alone: their own report decides. One transaction;
        returns how many rows moved."""
        if not confirmed:
            return 0
        return self.db.transaction(self._confirm, host, confirmed, read_seq)

    def _confirm(self, conn, host, confirmed, read_seq):
        if not confirmed:
            return 0
        now = self.clock()
        groups, singles = {}, []
        for uuid, seq, state, reason in confirmed:
            if read_seq is not None and int(seq) > read_seq:
                groups.setdefault((state, reason), []).append(uuid)
            else:
                singles.append({'c_uuid': uuid, 'c_host': host,
                                'c_seq': int(seq), 'c_state': state,
                                'c_reason': reason, 'c_now': now})
        moved = 0
        for (state, reason), uuids in groups.items():
            for size, slots in _chunks(uuids):
                moved += _confirm_read(size).run(
                    conn, host=host, seq=int(read_seq), state=state,
                    reason=reason, now=now, **slots).rowcount
        if singles:
            moved += conn.execute(_CONFIRM_ONE, singles).rowcount
        return moved

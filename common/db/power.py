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

from common.db import models
from common.db import prepared
from common.db.prepared import bind
from common.states import vm

I = models.Instance.__table__          # noqa: E741 (the table, as in api.py)

# What a report is compared with, and what decides whether reconcile acts.
POWER_KEYS = ('uuid', 'host', 'task_id', 'vm_state', 'power_state',
              'power_reason', 'power_seq')
_COLUMNS = [I.c[key] for key in POWER_KEYS]
_ON_HOST = prepared.Prepared(sa.select(*_COLUMNS).where(
    I.c.host == bind('host'), I.c.vm_state != vm.HARD_DELETED))

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


def _keyed(rows):
    return {row['uuid']: row for row in rows}


class PowerMixin:
    """Needs ``self.db`` and ``self.clock``."""

    def power_view(self, *, host=None, uuids=(), confirm=None,
                   read_seq=None, beat=None):
        """{uuid: {POWER_KEYS...}} of the instances placed on ``host`` (not
        hard-deleted) and of those of ``uuids`` not among them (wherever
        they are, hard-deleted too).

        ``confirm``, if given, is called with that view and returns the
        unchanged reports to confirm (see :meth:`confirm_power`), which are
        then confirmed in the same transaction: one transaction per report
        batch. It may run again (a retried transaction).

        ``beat``: the keyword arguments of :meth:`agent_heartbeat`, for a
        report carried by a heartbeat: the heartbeat is stored first, in
        the same transaction (its BEGIN and COMMIT serve both)."""
        def txn(conn):
            if beat is not None:
                self._agent_beat(conn, **beat)
            found = _keyed(_ON_HOST.run(conn, host=host).rows) if host else {}
            rest = [u for u in uuids if u is not None and u not in found]
            for size, slots in _chunks(rest):
                found.update(_keyed(_by_uuid(size).run(conn, **slots).rows))
            if confirm is not None:
                self._confirm(conn, host, confirm(found), read_seq)
            return found
        if beat is None and not host and not any(
                u is not None for u in uuids):
            if confirm is not None:
                confirm({})
            return {}
        return self.db.transaction(
            txn, readonly=confirm is None and beat is None)

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

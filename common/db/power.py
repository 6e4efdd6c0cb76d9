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

The statements are built once, here, with bound parameters, so SQLAlchemy
only looks them up in its compiled cache.
"""

import sqlalchemy as sa

from common.db import models
from common.states import vm

I = models.Instance.__table__          # noqa: E741 (the table, as in api.py)

# What a report is compared with, and what decides whether reconcile acts.
POWER_KEYS = ('uuid', 'host', 'task_id', 'vm_state', 'power_state',
              'power_reason', 'power_seq')
_COLUMNS = [I.c[key] for key in POWER_KEYS]
_ON_HOST = sa.select(*_COLUMNS).where(
    I.c.host == sa.bindparam('on_host'), I.c.vm_state != vm.HARD_DELETED)
# Hard-deleted instances included: their domains are destroyed again.
_BY_UUID = sa.select(*_COLUMNS).where(
    I.c.uuid.in_(sa.bindparam('uuids', expanding=True)))
# A full read's unchanged instances, in groups of one (state, reason): one
# statement, moved to the read's seq, only rows that still hold the state
# the report was compared with, placed on the reporting host, and not
# already known as of a newer report.
_CONFIRM_READ = sa.update(I).where(
    I.c.uuid.in_(sa.bindparam('c_uuids', expanding=True)),
    I.c.host == sa.bindparam('c_host'),
    I.c.power_seq < sa.bindparam('c_seq'),
    I.c.power_state == sa.bindparam('c_state'),
    I.c.power_reason.is_not_distinct_from(sa.bindparam('c_reason')),
).values(power_seq=sa.bindparam('c_seq'),
         power_reported_at=sa.bindparam('c_now'))
# Any other unchanged report (an event's), each to its own seq
# (executemany), with the same conditions.
_CONFIRM_ONE = sa.update(I).where(
    I.c.uuid == sa.bindparam('c_uuid'), I.c.host == sa.bindparam('c_host'),
    I.c.power_seq < sa.bindparam('c_seq'),
    I.c.power_state == sa.bindparam('c_state'),
    I.c.power_reason.is_not_distinct_from(sa.bindparam('c_reason')),
).values(power_seq=sa.bindparam('c_seq'),
         power_reported_at=sa.bindparam('c_now'))


def _rows(conn, query, params):
    return {row[0]: dict(zip(POWER_KEYS, row, strict=True))
            for row in conn.execute(query, params)}


class PowerMixin:
    """Needs ``self.db`` and ``self.clock``."""

    def power_view(self, *, host=None, uuids=(), confirm=None,
                   read_seq=None):
        """{uuid: {POWER_KEYS...}} of the instances placed on ``host`` (not
        hard-deleted) and of those of ``uuids`` not among them (wherever
        they are, hard-deleted too).

        ``confirm``, if given, is called with that view and returns the
        unchanged reports to confirm (see :meth:`confirm_power`), which are
        then confirmed in the same transaction: one transaction per report
        batch. It may run again (a retried transaction)."""
        def txn(conn):
            found = _rows(conn, _ON_HOST, {'on_host': host}) if host else {}
            rest = [u for u in uuids if u is not None and u not in found]
            if rest:
                found.update(_rows(conn, _BY_UUID, {'uuids': rest}))
            if confirm is not None:
                self._confirm(conn, host, confirm(found), read_seq)
            return found
        if not host and not any(u is not None for u in uuids):
            if confirm is not None:
                confirm({})
            return {}
        return self.db.transaction(txn, readonly=confirm is None)

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
            moved += conn.execute(_CONFIRM_READ, {
                'c_uuids': uuids, 'c_host': host, 'c_seq': int(read_seq),
                'c_state': state, 'c_reason': reason, 'c_now': now}).rowcount
        if singles:
            moved += conn.execute(_CONFIRM_ONE, singles).rowcount
        return moved

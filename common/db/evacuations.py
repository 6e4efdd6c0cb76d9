"""Evacuations (mixed into :class:`common.db.api.StateDB`; issue 25).

An evacuation moves an instance off a host an admin forced down and whose
agent is silent: the scheduler takes the destination's room with an
allocation of purpose ``evacuation``, in the transaction that records the
move (``migrations``, ``migration_type`` ``evacuation``, with its source
and destination: :mod:`common.db.moves`); :meth:`place_evacuated` then
places the instance on the destination, frees what it held on the source
and makes the destination's allocation its own, before the build is sent
there. From then on the instance lives on the destination, whatever the
build's outcome.

The source host's copy is destroyed from that record, never guessed: when
the host's agent comes back, a domain it reports is destroyed only if an
evacuation of that very instance away from that host is recorded and not
yet cleaned, the instance is placed on another host, holds nothing on
this one, and no task of that evacuation still runs
(:meth:`evacuated_away`). Any other domain there keeps the rules it had
(its own instance's, or the ``orphan_action`` policy for a domain of no
instance). A full report of the host that no longer lists the domain
marks the evacuation cleaned (:meth:`settle_evacuated_in`; Nova's
``completed``), so a restart of the agent between the destroy and that
report only means the destroy is asked for again.
"""

import sqlalchemy as sa

from common.db import models
from common.db import moves

M = models.Migration.__table__
I = models.Instance.__table__          # noqa: E741 (the table, as in api.py)
A = models.Allocation.__table__
PURPOSE = 'evacuation'


def _pending(host):
    """The evacuations away from ``host`` not yet cleaned."""
    return (M.c.migration_type == moves.EVACUATION, M.c.source_host == host,
            M.c.cleaned_at.is_(None))


class EvacuationsMixin:
    """Needs ``self.db``, ``self.clock``, ``self._preempted`` and
    ``self._free_allocations``."""

    def place_evacuated(self, ctx, instance_uuid):
        """The evacuation ``ctx.task_id`` holds a destination: place the
        instance there, free what it held elsewhere and make the
        destination's allocation its own, in one transaction guarded by
        the task. Returns the row."""
        def txn(conn):
            row = conn.execute(sa.select(I).where(
                I.c.uuid == instance_uuid, I.c.task_id == ctx.task_id)
                .with_for_update()).first()
            if row is None:
                self._preempted(conn, instance_uuid, ctx.task_id)
            dest = conn.execute(sa.select(A.c.host).where(
                A.c.instance_uuid == instance_uuid,
                A.c.purpose == PURPOSE)).scalar_one()
            self._free_allocations(conn, instance_uuid, purpose='instance')
            conn.execute(sa.update(A).where(
                A.c.instance_uuid == instance_uuid,
                A.c.purpose == PURPOSE).values(purpose='instance'))
            now = self.clock()
            # power_state stays the source's last word until the
            # destination's first (the build's result, or a full report
            # that does not find the domain: reconcile then decides)
            values = {'host': dest, 'task_updated_at': now,
                      'updated_at': now}
            conn.execute(sa.update(I).where(
                I.c.uuid == instance_uuid,
                I.c.task_id == ctx.task_id).values(**values))
            return dict(row._mapping, **values)
        return self.db.transaction(txn)

    def evacuated_away(self, host, uuids):
        """Those of ``uuids`` (domains ``host`` reported where their
        instance is not placed) that ``host`` must destroy: see the
        module's docstring."""
        uuids = sorted(set(uuids))
        if not uuids:
            return []
        holds = sa.exists().where(A.c.instance_uuid == M.c.instance_uuid,
                                  A.c.host == host)
        query = sa.select(M.c.instance_uuid).join(
            I, I.c.uuid == M.c.instance_uuid).where(
                *_pending(host), M.c.instance_uuid.in_(uuids),
                sa.or_(I.c.host.is_(None), I.c.host != host),
                sa.or_(I.c.task_id.is_(None), I.c.task_id != M.c.task_id),
                ~holds).distinct()
        return self.db.transaction(
            lambda conn: [r[0] for r in conn.execute(query)], readonly=True)

    def settle_evacuated_in(self, conn, host, listed):
        """In ``conn``'s transaction, for a full report of ``host`` that
        lists the domains ``listed`` (uuids, any but NOSTATE): the
        evacuations away from it whose domain is not among them are
        cleaned. Returns how many."""
        pending = conn.execute(sa.select(M.c.id, M.c.instance_uuid).where(
            *_pending(host))).all()
        done = [row.id for row in pending if row.instance_uuid not in listed]
        if done:
            conn.execute(sa.update(M).where(M.c.id.in_(done)).values(
                cleaned_at=self.clock()))
        return len(done)

    def list_evacuations(self, *, source_host=None, pending=False):
        """The evacuations recorded (away from ``source_host``; only those
        not cleaned with ``pending``), oldest first."""
        where = [M.c.migration_type == moves.EVACUATION]
        if source_host is not None:
            where.append(M.c.source_host == source_host)
        if pending:
            where.append(M.c.cleaned_at.is_(None))
        query = sa.select(M).where(*where).order_by(M.c.id)
        return self.db.transaction(
            lambda conn: [dict(r._mapping) for r in conn.execute(query)],
            readonly=True)

"""Domains the instances table cannot place (mixed into
:class:`common.db.api.StateDB`; issue 19).

An instance's row holds what the agent of *its own* host reports. A domain
reported by another host (the destination of a move that a delete or an
admin reset preempted, a host renamed under its domains) or for a
hard-deleted instance placed elsewhere, or for no instance at all, would
leave no trace: ``stray_domains`` records it, so that ``tristate-manage
check`` can name it while it lasts. A full report of the host that no
longer lists it removes it, as does a report that it is gone.

A row can also be a **doomed mark**, written in the transaction of the
delete or reset that preempted a move: the move's destination is to destroy
its copy of the instance, whether it has it yet or not (the move may
still be finishing). A domain reported there is destroyed while the
instance is placed elsewhere and holds nothing on that host; a mark never
reported stays (it costs one row), one reported and then gone is removed.
"""

import sqlalchemy as sa

from common import exception
from common.db import models
from common.db import prepared
from common.db import scheduling
from common.db.prepared import bind
from common.states import power
from common.states import vm

S = models.StrayDomain.__table__
A = models.Allocation.__table__
H = models.Host.__table__
I = models.Instance.__table__          # noqa: E741 (the table, as in api.py)
_RESOURCES = ('vcpus', 'memory_mb', 'disk_gb')

# Rows of a host no longer listed by a read of every domain at ``seq``: all
# but the doomed marks not yet reported.
_FORGET_UNLISTED = prepared.Prepared(sa.delete(S).where(
    S.c.host == bind('host'), S.c.power_seq < bind('seq', S.c.power_seq.type),
    sa.or_(S.c.doomed.is_(False), S.c.power_seq > 0)))


class DomainsMixin:
    """Needs ``self.db`` and ``self.clock``."""

    def record_strays_in(self, conn, host, strays, read_seq):
        """In ``conn``'s transaction: ``strays`` (uuid, power_state, seq),
        reported by ``host`` where their instance is not, recorded (a gone
        one removed); with ``read_seq``, those the read did not list
        forgotten."""
        now = self.clock()
        for uuid, state, seq in strays:
            if state == power.NOSTATE:
                conn.execute(sa.delete(S).where(
                    S.c.host == host, S.c.instance_uuid == uuid,
                    S.c.power_seq < seq))
                continue
            res = conn.execute(sa.update(S).where(
                S.c.host == host, S.c.instance_uuid == uuid,
                S.c.power_seq < seq).values(power_state=state, power_seq=seq,
                                            reported_at=now))
            if res.rowcount == 0 and not _one(conn, sa.select(S.c.host).where(
                    S.c.host == host, S.c.instance_uuid == uuid)):
                conn.execute(sa.insert(S).values(
                    host=host, instance_uuid=uuid, power_state=state,
                    power_seq=seq, reported_at=now, doomed=False,
                    created_at=now))
        if read_seq is not None:
            _FORGET_UNLISTED.run(conn, host=host, seq=int(read_seq))

    def record_strays(self, host, strays, read_seq=None):
        """:meth:`record_strays_in` in a transaction of its own."""
        if strays or read_seq is not None:
            self.db.transaction(self.record_strays_in, host, strays,
                                read_seq)

    def _doom(self, conn, instance_uuid, hosts):
        """Doomed marks for ``hosts`` (see the module's docstring)."""
        now = self.clock()
        for host in hosts:
            res = conn.execute(sa.update(S).where(
                S.c.host == host, S.c.instance_uuid == instance_uuid).values(
                    doomed=True))
            if res.rowcount == 0:
                conn.execute(sa.insert(S).values(
                    host=host, instance_uuid=instance_uuid, power_state=None,
                    power_seq=0, reported_at=None, doomed=True,
                    created_at=now))

    def doomed_on(self, host, uuids):
        """Those of ``uuids`` whose domain ``host`` must destroy: marked
        doomed there, their instance placed on another host, and no
        allocation of theirs on ``host`` (a new move there holds one)."""
        uuids = sorted(set(uuids))
        if not uuids:
            return []
        holds = sa.exists().where(A.c.instance_uuid == S.c.instance_uuid,
                                  A.c.host == host)
        query = sa.select(S.c.instance_uuid).join(
            I, I.c.uuid == S.c.instance_uuid).where(
                S.c.host == host, S.c.doomed.is_(True),
                S.c.instance_uuid.in_(uuids),
                sa.or_(I.c.host.is_(None), I.c.host != host), ~holds)
        return self.db.transaction(
            lambda conn: [r[0] for r in conn.execute(query)], readonly=True)

    def _end_moves(self, conn, instance_uuid):
        """A move the caller preempts: its destinations' allocations
        freed and doomed marks written for them; returns those hosts."""
        hosts = sorted({r.host for r in conn.execute(sa.select(A.c.host).where(
            A.c.instance_uuid == instance_uuid, A.c.purpose == 'migration'))})
        if hosts:
            self._free_allocations(conn, instance_uuid, purpose='migration')
            self._doom(conn, instance_uuid, hosts)
        return hosts

    def _count_on_host(self, conn, inst, ratios):
        """Whatever runs on a host is counted there: an instance reset to
        ACTIVE on its host takes its flavor's allocation there if it holds
        none (a failed build freed it), in the caller's transaction; the
        host's room is checked under ``ratios`` (cpu, ram, disk), whether
        or not it is enabled (the domain is there already), and not at all
        with ``ratios`` None (the domain runs: counting it is the truth).
        Raises :class:`~common.exception.HostFull` when there is no room.
        True if it took an allocation."""
        host = inst['host']
        if host is None or _one(conn, sa.select(A.c.id).where(
                A.c.instance_uuid == inst['uuid'], A.c.host == host,
                A.c.purpose == 'instance')):
            return False
        take = {key: inst[key] for key in _RESOURCES}
        room = [H.c['used_' + key] + take[key] <= H.c[key] * float(ratio)
                for key, ratio in zip(_RESOURCES, ratios or (), strict=False)]
        new_ram = H.c.used_memory_mb + take['memory_mb']
        res = conn.execute(sa.update(H).where(H.c.name == host, *room).values(
            used_vcpus=H.c.used_vcpus + take['vcpus'],
            used_memory_mb=new_ram,
            used_disk_gb=H.c.used_disk_gb + take['disk_gb'],
            free_memory_mb=scheduling.free_ram(new_ram)))
        if res.rowcount != 1:
            raise exception.HostFull(instance=inst['uuid'], host=host,
                                     **take)
        conn.execute(sa.insert(A).values(
            instance_uuid=inst['uuid'], host=host, purpose='instance',
            flavor_name=inst['flavor_name'], created_at=self.clock(), **take))
        return True

    def count_running_error(self, instance_uuid):
        """An ERROR instance whose domain is reported on its host (a build
        lost with its agent, its allocation freed before the domain was
        seen) regains its allocation there, room or not; only while it is
        ERROR with no task. True if it took one."""
        def txn(conn):
            row = _one(conn, sa.select(I).where(I.c.uuid == instance_uuid)
                       .with_for_update())
            if (row is None or row.vm_state != vm.ERROR
                    or row.task_id is not None
                    or row.power_state == power.NOSTATE):
                return False
            return self._count_on_host(conn, dict(row._mapping), None)
        return self.db.transaction(txn)

    def list_strays(self, *, host=None):
        query = sa.select(S).order_by(S.c.host, S.c.instance_uuid)
        if host is not None:
            query = query.where(S.c.host == host)
        return self.db.transaction(
            lambda conn: [dict(r._mapping) for r in conn.execute(query)],
            readonly=True)


def _one(conn, query):
    return conn.execute(query).first()

"""The StateDB's hosts and allocations (mixed into
:class:`common.db.api.StateDB`): heartbeats, the scheduler's search and the
allocation that takes a host's room in the same transaction, and giving it
back."""

import logging

import sqlalchemy as sa

from common import exception
from common.db import host_hints
from common.db import lease_hosts
from common.db import models
from common.db import moves
from common.db import prepared
from common.db import scheduling
from common.db import server_groups
from common.db import services
from common.db.prepared import bind
from common.states import vm

LOG = logging.getLogger(__name__)

I = models.Instance.__table__          # noqa: E741 (the table, as in api.py)
H = models.Host.__table__
A = models.Allocation.__table__


def _give_back():
    """Add one freed allocation back to its host's room (built once)."""
    vcpus, memory_mb = bind('vcpus', H.c.vcpus.type), bind('memory_mb',
                                                           H.c.memory_mb.type)
    disk_gb = bind('disk_gb', H.c.disk_gb.type)
    return prepared.Prepared(sa.update(H).where(H.c.name == bind('host')).values(
        used_vcpus=H.c.used_vcpus - vcpus,
        used_memory_mb=H.c.used_memory_mb - memory_mb,
        used_disk_gb=H.c.used_disk_gb - disk_gb,
        free_memory_mb=scheduling.free_ram(H.c.used_memory_mb - memory_mb)))


_GIVE_BACK = _give_back()
_HOST = prepared.Prepared(sa.select(H).where(H.c.name == bind('host')))
# A known host's heartbeat: its capacity now, agent_started_at and ram_ratio
# kept when not given, and its free_memory_mb: scheduling.free_ram's
# expression (as every other writer computes it) on the values this UPDATE
# stores, since the right-hand sides read the row as it was.
_NEW_RATIO = sa.func.coalesce(bind('ram_ratio', H.c.ram_ratio.type),
                              H.c.ram_ratio)
_NEW_MEMORY = bind('memory_mb', H.c.memory_mb.type)
_KEPT = ('reserved_vcpus', 'reserved_memory_mb', 'reserved_disk_gb')
_OWN = ('own_cpu_ratio', 'own_ram_ratio', 'own_disk_ratio')
_BEAT = prepared.Prepared(sa.update(H).where(H.c.name == bind('host')).values(
    **{c: bind(c, H.c[c].type) for c in _KEPT + _OWN},
    vcpus=bind('vcpus', H.c.vcpus.type),
    memory_mb=_NEW_MEMORY,
    disk_gb=bind('disk_gb', H.c.disk_gb.type),
    last_heartbeat=bind('now', H.c.last_heartbeat.type),
    updated_at=bind('updated_at', H.c.updated_at.type),
    agent_started_at=sa.func.coalesce(
        bind('started', H.c.agent_started_at.type), H.c.agent_started_at),
    ram_ratio=_NEW_RATIO,
    free_memory_mb=_NEW_MEMORY * _NEW_RATIO - H.c.used_memory_mb))
_FREE_RAM = prepared.Prepared(sa.update(H).where(
    H.c.name == bind('host')).values(
        free_memory_mb=scheduling.free_ram(H.c.used_memory_mb)))
_ALLOCATIONS = prepared.Prepared(sa.select(A).where(
    A.c.instance_uuid == bind('uuid')).order_by(A.c.id))


# Why a host that registered itself with [scheduler] enable_new_hosts = false
# takes no build (shown to admins as the host's disabled_reason).
NEW_HOST_DISABLED = ('new host, not enabled yet: [scheduler] enable_new_hosts '
                     'is false (tristate-manage host enable NAME)')


def kept_back(capacity, ram_ratio):
    """An agent's heartbeat capacity as a host row keeps it (issue 25):
    ``vcpus``, ``memory_mb``, ``disk_gb`` without what the agent reserves
    for the host (what instances may use), ``reserved`` (column: value)
    and ``own_ratios`` (the host's own allocation ratios, None where the
    scheduler's apply), and ``ram_ratio``, the one the stored weigher is
    computed with: the host's own, else ``ram_ratio`` (the conductor's).
    Keys an older agent does not send reserve nothing."""
    if not isinstance(capacity, dict):
        raise TypeError('heartbeat capacity must be a dict, not %s'
                        % type(capacity).__name__)
    reserved, own = {}, {}
    for key in _KEPT:
        reserved[key] = _whole(capacity.get(key) or 0, key)
    for kind in ('cpu', 'ram', 'disk'):
        value = capacity.get('%s_ratio' % kind)
        own['own_%s_ratio' % kind] = (None if value is None
                                      else _ratio(value, kind + '_ratio'))
    return {'vcpus': max(0, capacity['vcpus'] - reserved['reserved_vcpus']),
            'memory_mb': max(0, capacity['memory_mb']
                             - reserved['reserved_memory_mb']),
            'disk_gb': max(0, capacity['disk_gb']
                           - reserved['reserved_disk_gb']),
            'reserved': reserved, 'own_ratios': own,
            'ram_ratio': (ram_ratio if own['own_ram_ratio'] is None
                          else own['own_ram_ratio'])}


def _whole(value, key):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise exception.Invalid(reason='heartbeat capacity %s must be a '
                                'whole number >= 0, got %r' % (key, value))
    return value


def _ratio(value, key):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            value < 0):
        raise exception.Invalid(reason='heartbeat capacity %s must be a '
                                'number >= 0, got %r' % (key, value))
    return float(value)


def beat_values(host, now, *, vcpus, memory_mb, disk_gb, agent_started_at,
                ram_ratio, binary=None, version=None, new_host_enabled=True,
                reserved=None, own_ratios=None):
    """The values of a heartbeat's statements (:data:`_BEAT`, the service's
    :data:`services.BEAT`, and both in one: :func:`beat_counts`).
    ``new_host_enabled``: whether a host this heartbeat registers (its
    first) is enabled at once, or waits for an admin; ``reserved``,
    ``own_ratios``: see :func:`kept_back` (default: none)."""
    return {**dict.fromkeys(_KEPT, 0), **(reserved or {}),
            **dict.fromkeys(_OWN), **(own_ratios or {}),
            'host': host, 'now': now, 'updated_at': now, 'vcpus': vcpus,
            'memory_mb': memory_mb, 'disk_gb': disk_gb,
            'started': agent_started_at, 'started_at': agent_started_at,
            'ram_ratio': None if ram_ratio is None else float(ram_ratio),
            'binary': binary, 'version': version,
            'new_host_enabled': bool(new_host_enabled)}


def beat_counts():
    """PostgreSQL: an agent's heartbeat (its host's row and its service's
    row, each one UPDATE) as two data-modifying CTEs, and the columns that
    count the rows each found (``hosts_beaten``, ``services_beaten``), for a
    SELECT that runs both with whatever else it reads: one round trip
    instead of two. A row not found is inserted after (:func:`after_beat`).
    Takes :func:`beat_values`."""
    found_host = _BEAT.stmt.returning(H.c.name).cte('beat_host')
    found_service = services.BEAT.stmt.returning(
        services.S.c.host).cte('beat_service')
    return [sa.select(sa.func.count()).select_from(cte).scalar_subquery()
            .label(name) for cte, name in ((found_host, 'hosts_beaten'),
                                           (found_service, 'services_beaten'))]


def after_beat(conn, values, *, hosts_beaten, services_beaten):
    """Insert what a heartbeat's UPDATEs did not find: a new host, a new
    agent's service row."""
    if not hosts_beaten:
        _new_host(conn, values)
    if not services_beaten:
        services.insert_beat(conn, **values)


# A new host's hypervisor number: the largest so far plus one, read in the
# inserting transaction (two hosts registering at once on PostgreSQL: one
# INSERT fails on the unique number, and its next heartbeat registers it).
_LAST_NUMBER = prepared.Prepared(sa.select(
    sa.func.coalesce(sa.func.max(H.c.number), 0).label('last')))


def _new_host(conn, values):
    ratio = values['ram_ratio']
    enabled = values.get('new_host_enabled', True)
    if not enabled:
        LOG.warning('New host %s registered disabled: an admin must enable '
                    'it before it takes builds ([scheduler] '
                    'enable_new_hosts = false)', values['host'])
    conn.execute(sa.insert(H).values(
        name=values['host'],
        number=_LAST_NUMBER.one(conn)['last'] + 1,
        used_vcpus=0, used_memory_mb=0, used_disk_gb=0,
        free_memory_mb=0, enabled=enabled,
        disabled_reason=None if enabled else NEW_HOST_DISABLED,
        created_at=values['now'],
        vcpus=values['vcpus'], memory_mb=values['memory_mb'],
        disk_gb=values['disk_gb'], last_heartbeat=values['now'],
        **{c: values[c] for c in _KEPT + _OWN},
        updated_at=values['now'], agent_started_at=values['started'],
        ram_ratio=1.0 if ratio is None else ratio))
    _FREE_RAM.run(conn, host=values['host'])


_BOTH_BEATS = prepared.Prepared(sa.select(*beat_counts()))


def _freeing(by_host, by_purpose):
    """DELETE the instance's allocations [of a host] [of a purpose],
    returning what they held."""
    def build():
        query = sa.delete(A).where(A.c.instance_uuid == bind('uuid'))
        if by_host:
            query = query.where(A.c.host == bind('host'))
        if by_purpose:
            query = query.where(A.c.purpose == bind('purpose'))
        return query.returning(A.c.host, A.c.vcpus, A.c.memory_mb,
                               A.c.disk_gb)
    return prepared.cached(('allocations.free', by_host, by_purpose), build)


def one(conn, query):
    """The first row of ``query`` as a dict, or None."""
    row = conn.execute(query).first()
    return dict(row._mapping) if row is not None else None


def _binds(vcpus, memory_mb, disk_gb, ratios):
    """The values :mod:`common.db.scheduling`'s statements bind."""
    cpu_ratio, ram_ratio, disk_ratio = ratios
    return {'b_vcpus': vcpus, 'b_memory_mb': memory_mb, 'b_disk_gb': disk_gb,
            'b_cpu_ratio': float(cpu_ratio), 'b_ram_ratio': float(ram_ratio),
            'b_disk_ratio': float(disk_ratio)}


def _search(vcpus, memory_mb, disk_gb, ratios, alive_since, pack, limit,
            only, exclude, reserved, zone=None):
    """The bound values and the shape of a scheduler's search. ``zone``:
    None, or (name, whether it is the default zone)."""
    values = dict(_binds(vcpus, memory_mb, disk_gb, ratios),
                  b_alive_since=alive_since, b_only=only,
                  b_exclude=list(exclude), b_free_above=memory_mb - 1,
                  b_zone=zone[0] if zone else None)
    shape = {'pack': pack, 'only': only is not None, 'exclude': bool(exclude),
             'limit': limit, 'reserved': reserved,
             'zone': None if not zone else ('default' if zone[1]
                                            else 'named')}
    return values, shape


class HostsMixin:
    """Needs ``self.db``, ``self.clock`` and ``self._preempted``."""

    # --- hosts and allocations --------------------------------------------------

    def host_heartbeat(self, host, *, vcpus, memory_mb, disk_gb,
                       agent_started_at=None, ram_ratio=None, reserved=None,
                       own_ratios=None):
        """Record an agent's heartbeat and capacity, creating the host.

        ``ram_ratio``: the recording conductor's [scheduler]
        ram_allocation_ratio, which the stored weigher (``free_memory_mb``)
        is computed with from then on (None: keep the host's, 1 for a new
        host).
        """
        return self.db.transaction(
            self._host_beat, host, self.clock(), vcpus=vcpus,
            memory_mb=memory_mb, disk_gb=disk_gb,
            agent_started_at=agent_started_at, ram_ratio=ram_ratio,
            reserved=reserved, own_ratios=own_ratios)

    def agent_heartbeat(self, host, *, vcpus, memory_mb, disk_gb,
                        agent_started_at, ram_ratio, binary, version,
                        new_host_enabled=True, reserved=None,
                        own_ratios=None):
        """:meth:`host_heartbeat` and the agent's service row
        (:meth:`service_heartbeat`), in one transaction.
        ``new_host_enabled``, ``reserved``, ``own_ratios``: see
        :func:`beat_values`."""
        self.db.transaction(self._agent_beat, host, vcpus=vcpus,
                            memory_mb=memory_mb, disk_gb=disk_gb,
                            agent_started_at=agent_started_at,
                            ram_ratio=ram_ratio, binary=binary,
                            version=version,
                            new_host_enabled=new_host_enabled,
                            reserved=reserved, own_ratios=own_ratios)

    def _agent_beat(self, conn, host, **beat):
        values = beat_values(host, self.clock(), **beat)
        if conn.dialect.name == 'postgresql':
            # Both UPDATEs in one statement: one round trip to the server.
            row = _BOTH_BEATS.one(conn, **values)
            after_beat(conn, values, hosts_beaten=row['hosts_beaten'],
                       services_beaten=row['services_beaten'])
            return
        after_beat(conn, values,
                   hosts_beaten=_BEAT.run(conn, **values).rowcount,
                   services_beaten=services.beat_known(conn, **values))

    @staticmethod
    def _host_beat(conn, host, now, *, vcpus, memory_mb, disk_gb,
                   agent_started_at, ram_ratio, reserved, own_ratios):
        """One UPDATE for a known host (the common case); a new one is
        inserted, its free_memory_mb then computed from the stored columns.
        Two agents that beat first under the same name at once: one INSERT
        fails and that heartbeat is not recorded (the next one is)."""
        values = beat_values(host, now, vcpus=vcpus, memory_mb=memory_mb,
                             disk_gb=disk_gb,
                             agent_started_at=agent_started_at,
                             ram_ratio=ram_ratio, reserved=reserved,
                             own_ratios=own_ratios)
        if not _BEAT.run(conn, **values).rowcount:
            _new_host(conn, values)

    def get_host(self, host):
        def txn(conn):
            found = _HOST.one(conn, host=host)
            if found is None:
                raise exception.HostNotFound(host=host)
            return found
        return self.db.transaction(txn, readonly=True)

    def list_hosts(self):
        query = sa.select(H).order_by(H.c.name)
        return self.db.transaction(
            lambda conn: [dict(r._mapping) for r in conn.execute(query)],
            readonly=True)

    def find_hosts(self, *, vcpus, memory_mb, disk_gb, ratios, alive_since,
                   pack=False, limit=10, only=None, exclude=(),
                   reserved=None, zone=None):
        """Hosts that pass the scheduler's filters, best first.

        Filters: enabled; heartbeat since ``alive_since``; room for the
        resources under the allocation ratios; ``only`` (one host) and
        ``exclude``; ``reserved``, the lease filter
        (:func:`common.db.lease_hosts.placement`), if given; ``zone``, (an
        availability zone, whether it is the default one). Weigher: most
        free RAM under ``ram_ratio`` first (spread), or least (``pack``),
        ties by name.

        When every host's stored weigher was computed with this RAM ratio
        (the usual case: heartbeats stamp the conductors' ratio), an index
        gives the hosts in order and only the first few that pass are read.
        Otherwise (a ratio changed and some hosts have not heartbeated
        since) the weigher is computed for every host and sorted: slower,
        same answer.
        """
        values, shape = _search(vcpus, memory_mb, disk_gb, ratios,
                                alive_since, pack, limit, only, exclude,
                                reserved, zone)
        return self.db.transaction(
            lambda conn: scheduling.find(conn, values, **shape),
            readonly=True)

    def find_and_allocate(self, ctx, instance_uuid, *, vcpus, memory_mb,
                          disk_gb, ratios, alive_since, pack=False, limit=10,
                          only=None, exclude=(), reserved=None,
                          purpose='instance', flavor_name=None,
                          reservation_id=None, zone=None):
        """:meth:`find_hosts`, then :meth:`allocate` on the first of them
        that still has room, in one transaction; the host's name, or None
        when none had room. ``zone``: (name, is the default zone) to
        choose among that availability zone's hosts only. An instance in
        a server group is placed by its policy, the group's row locked
        for the transaction (:mod:`common.db.server_groups`), and one
        with same_host / different_host hints by them
        (:mod:`common.db.host_hints`)."""
        take = scheduling.take_query(reserved=reserved)

        def txn(conn):
            group = server_groups.placement(conn, instance_uuid)
            where = (only, exclude, limit)
            if group is not None:
                where = server_groups.narrow(group, only=only,
                                             exclude=exclude, limit=limit)
                if where is None:
                    return None
            hinted = host_hints.placement(conn, instance_uuid)
            if hinted is not None:
                narrowed = host_hints.narrow(conn, hinted, only=where[0],
                                             exclude=where[1])
                if narrowed is None:
                    return None
                where = narrowed + (where[2],)
            values, shape = _search(vcpus, memory_mb, disk_gb, ratios,
                                    alive_since, pack, where[2], where[0],
                                    where[1], reserved, zone)
            found = scheduling.find(conn, values, **shape)
            if group is not None:
                found = server_groups.ordered(group, found)
            for host in found:
                name = host['name']
                if self._allocate(conn, ctx, instance_uuid, take,
                                  dict(values, b_host=name), purpose,
                                  flavor_name, reservation_id):
                    return name
            return None
        return self.db.transaction(txn)

    def hint_placement(self, instance_uuid):
        """:func:`common.db.host_hints.placement` read alone, to explain a
        failed placement."""
        return self.db.transaction(
            lambda conn: host_hints.placement(conn, instance_uuid),
            readonly=True)

    def count_hosts(self, *, alive_since):
        """(all, disabled, down) host counts, to explain a NoValidHost."""
        def txn(conn):
            rows = conn.execute(sa.select(
                H.c.enabled, H.c.forced_down, H.c.last_heartbeat)).all()
            disabled = sum(1 for r in rows if not r.enabled)
            down = sum(1 for r in rows if r.enabled and (
                r.forced_down or
                r.last_heartbeat is None or r.last_heartbeat < alive_since))
            return len(rows), disabled, down
        return self.db.transaction(txn, readonly=True)

    def set_host_enabled(self, host, enabled, reason=None):
        def txn(conn):
            res = conn.execute(sa.update(H).where(H.c.name == host).values(
                enabled=enabled, disabled_reason=None if enabled else reason,
                updated_at=self.clock()))
            if res.rowcount != 1:
                raise exception.HostNotFound(host=host)
        self.db.transaction(txn)

    def set_host_forced_down(self, host, forced_down):
        """An admin says the host is down (Nova's forced_down): it takes
        no build or move and shows as down until this is undone."""
        def txn(conn):
            res = conn.execute(sa.update(H).where(H.c.name == host).values(
                forced_down=bool(forced_down), updated_at=self.clock()))
            if res.rowcount != 1:
                raise exception.HostNotFound(host=host)
        self.db.transaction(txn)

    def delete_host(self, host):
        """Forget a host that holds nothing (no allocation, no instance
        placed there, not in the reservable pool): its row and its agent's
        service row. Conflict (409) otherwise, naming what it holds."""
        def txn(conn):
            found = _HOST.one(conn, host=host)
            if found is None:
                raise exception.HostNotFound(host=host)
            held = conn.execute(sa.select(sa.func.count()).select_from(A)
                                .where(A.c.host == host)).scalar()
            placed = conn.execute(sa.select(sa.func.count()).select_from(I)
                                  .where(I.c.host == host,
                                         I.c.vm_state != vm.HARD_DELETED)
                                  ).scalar()
            leased = conn.execute(sa.select(sa.func.count()).select_from(
                lease_hosts.RH).where(lease_hosts.RH.c.host == host)).scalar()
            if held or placed or leased or found['reservable']:
                raise exception.Conflict(
                    'Unable to delete compute service that is hosting '
                    'instances or allocations (host %s: %d instance(s), %d '
                    'allocation(s)%s). Migrate or delete the instances '
                    'first.' % (host, placed, held, ', in the reservable '
                                'pool' if found['reservable'] else ''))
            conn.execute(sa.delete(services.S).where(
                services.S.c.host == host,
                services.S.c.binary == services.AGENT))
            self.forget_host_in_aggregates(conn, host)
            conn.execute(sa.delete(H).where(H.c.name == host))
        self.db.transaction(txn)

    def allocate(self, ctx, instance_uuid, host, *, vcpus, memory_mb, disk_gb,
                 ratios=(1.0, 1.0, 1.0), purpose='instance', flavor_name=None,
                 reserved=None, reservation_id=None, disabled_ok=False):
        """Take resources on ``host`` for the task ``ctx.task_id``.

        One conditional UPDATE that fails if the host no longer has room
        under the allocation ratios (so concurrent conductors never
        over-commit) or, with ``reserved`` (the lease filter of
        :func:`common.db.lease_hosts.placement`), no longer passes it (a
        lease that started since the host was chosen); the instance's
        ``host`` set in the same transaction, guarded by the task_id, and,
        with ``reservation_id``, the instance recorded as the
        reservation's (its lease's on_end applies to it). ``disabled_ok``:
        a disabled host too (Nova's forced evacuation skips the scheduler,
        whose filter is the only one to look at ``enabled``).
        """
        take = scheduling.take_query(reserved=reserved,
                                     disabled_ok=disabled_ok)
        values = dict(_binds(vcpus, memory_mb, disk_gb, ratios), b_host=host)

        def txn(conn):
            if not self._allocate(conn, ctx, instance_uuid, take, values,
                                  purpose, flavor_name, reservation_id):
                raise exception.HostCapacityExceeded(
                    host=host, vcpus=vcpus, memory_mb=memory_mb,
                    disk_gb=disk_gb)
        self.db.transaction(txn)

    def _allocate(self, conn, ctx, instance_uuid, take, values, purpose,
                  flavor_name, reservation_id):
        """False if the host (``b_host``) has no room left; else took it."""
        if take.run_with(conn, values).rowcount != 1:
            return False
        now = self.clock()
        res = scheduling.PLACE[purpose == 'instance'].run(
            conn, uuid=instance_uuid, task_id=ctx.task_id, now=now,
            host=values['b_host'])
        if res.rowcount != 1:
            self._preempted(conn, instance_uuid, ctx.task_id)
        scheduling.RECORD.run(
            conn, instance_uuid=instance_uuid, host=values['b_host'],
            purpose=purpose, flavor_name=flavor_name, vcpus=values['b_vcpus'],
            memory_mb=values['b_memory_mb'], disk_gb=values['b_disk_gb'],
            created_at=now)
        if reservation_id is not None:
            lease_hosts.record_instance(conn, reservation_id, instance_uuid,
                                        now)
        moves.record(conn, instance_uuid=instance_uuid, task_id=ctx.task_id,
                     purpose=purpose, dest_host=values['b_host'],
                     flavor_name=flavor_name, now=now)
        return True

    def free_allocations(self, ctx, instance_uuid, *, host=None,
                         purpose=None):
        """Give back what the task ``ctx.task_id`` holds (rolled back build,
        confirmed or reverted resize, finished migration)."""
        def txn(conn):
            res = conn.execute(sa.select(I.c.uuid).where(
                I.c.uuid == instance_uuid, I.c.task_id == ctx.task_id))
            if res.first() is None:
                self._preempted(conn, instance_uuid, ctx.task_id)
            return len(self._free_allocations(conn, instance_uuid, host=host,
                                              purpose=purpose))
        return self.db.transaction(txn)

    def _free_allocations(self, conn, instance_uuid, host=None, purpose=None):
        """In ``conn``'s transaction; returns the allocations freed
        (``host`` and what each held)."""
        freeing = _freeing(host is not None, purpose is not None)
        freed = freeing.run(conn, uuid=instance_uuid, host=host,
                            purpose=purpose).rows
        for alloc in freed:
            _GIVE_BACK.run(conn, **alloc)
        return freed

    @staticmethod
    def allocations_in(conn, instance_uuid):
        """{purpose: allocation} of the instance, in ``conn``'s transaction."""
        return {row['purpose']: row for row in
                _ALLOCATIONS.run(conn, uuid=instance_uuid).rows}

    @staticmethod
    def allocation_rows_in(conn, instance_uuid):
        """Every allocation of the instance, in ``conn``'s transaction."""
        return _ALLOCATIONS.run(conn, uuid=instance_uuid).rows

    def list_allocations(self, *, instance_uuid=None, host=None):
        query = sa.select(A).order_by(A.c.id)
        if instance_uuid is not None:
            query = query.where(A.c.instance_uuid == instance_uuid)
        if host is not None:
            query = query.where(A.c.host == host)
        return self.db.transaction(
            lambda conn: [dict(r._mapping) for r in conn.execute(query)],
            readonly=True)

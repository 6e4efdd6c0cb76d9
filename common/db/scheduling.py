"""The scheduler's statements (:meth:`common.db.api.StateDB.find_hosts` and
:meth:`~common.db.api.StateDB.allocate`), built once and run with bound
values.

A scheduler decision is a few cheap statements; building them anew each
time (SQLAlchemy's expressions and their cache keys) cost more than the
database's work. Each shape of statement (spread or pack, index or not,
with ``only``, ``exclude``, a lease filter) is built on first use and kept.
A lease filter is kept only when it is :data:`common.db.lease_hosts.NOT_HELD`
(every request that names no reservation); one naming a reservation carries
its values and is built each time.

The weigher, ``memory_mb x ram_ratio - used_memory_mb``, is stored in
``hosts.free_memory_mb`` by every statement that changes one of its terms
(:func:`free_ram`), so that an index (``ix_hosts_spread``,
``ix_hosts_pack``) gives the hosts best first.
"""

import sqlalchemy as sa

from common.db import aggregates
from common.db import lease_hosts
from common.db import models
from common.db import prepared

H = models.Host.__table__
I = models.Instance.__table__          # noqa: E741 (the table, read as "I")
A = models.Allocation.__table__

_CACHE = {}


def free_ram(used):
    """``hosts.free_memory_mb`` once ``used_memory_mb`` is ``used``: in an
    UPDATE every column on the right is read before any is written."""
    return H.c.memory_mb * H.c.ram_ratio - used


STAMPED = prepared.Prepared(sa.select(
    sa.select(sa.func.min(H.c.ram_ratio)).scalar_subquery().label('low'),
    sa.select(sa.func.max(H.c.ram_ratio)).scalar_subquery().label('high')))


def stamped_with(conn, ratio):
    """True if every host's free_memory_mb is computed with ``ratio`` (or
    there is no host): two index lookups."""
    row = STAMPED.one(conn)
    low, high = row['low'], row['high']
    return low is None or low == high == ratio


def _p(name, type_=None):
    """A bound value, named apart from every column (``b_`` + name)."""
    return sa.bindparam('b_' + name, type_=type_)


def ratio(kind):
    """A host's allocation ratio of ``kind`` (cpu, ram, disk): its own
    (the agent's [compute] option, issue 25), else the bound one (the
    scheduler's)."""
    return sa.func.coalesce(H.c['own_%s_ratio' % kind],
                            _p('%s_ratio' % kind, sa.Float()))


def _room(*, disabled_ok=False):
    """The filters on capacity, with the resources and ratios bound.
    The capacity columns are without what the host reserves.
    ``disabled_ok``: a disabled host too (an admin's forced evacuation)."""
    enabled = [] if disabled_ok else [H.c.enabled.is_(True)]
    return enabled + [
        H.c.forced_down.is_(False),
        H.c.used_vcpus + _p('vcpus') <= H.c.vcpus * ratio('cpu'),
        H.c.used_memory_mb + _p('memory_mb') <= H.c.memory_mb * ratio('ram'),
        H.c.used_disk_gb + _p('disk_gb') <= H.c.disk_gb * ratio('disk')]


def _cached(key, reserved, build, *, expanding=False):
    """The statement of ``key``: prepared once, unless it carries a lease
    filter of its own or an expanding IN (then built and run by Core)."""
    if expanding or (reserved is not None
                     and reserved is not lease_hosts.NOT_HELD):
        return prepared.Plain(build())
    if key not in _CACHE:
        _CACHE[key] = prepared.Prepared(build())
    return _CACHE[key]


def find_query(*, pack, fast, only, exclude, limit, reserved, zone=None):
    """Hosts with room, best first. Binds (``b_`` + name): vcpus,
    memory_mb, disk_gb, the three ratios, alive_since, free_above (fast),
    only, exclude, zone. ``zone``: None (any zone), ``'named'`` (the hosts
    of zone ``b_zone``) or ``'default'`` (``b_zone`` is the default zone:
    its hosts and those no aggregate puts in a zone)."""
    def build():
        where = _room() + [H.c.last_heartbeat >= _p('alive_since')]
        if fast:
            weigher = H.c.free_memory_mb
            where += [H.c.ram_ratio == _p('ram_ratio', sa.Float()),
                      H.c.free_memory_mb > _p('free_above', sa.Float())]
        else:
            weigher = H.c.memory_mb * ratio('ram') - H.c.used_memory_mb
        if only:
            where.append(H.c.name == _p('only'))
        if exclude:
            where.append(H.c.name.not_in(sa.bindparam('b_exclude',
                                                      expanding=True)))
        if reserved is not None:
            where.append(reserved)
        if zone is not None:
            where.append(aggregates.zone_filter(default=zone == 'default'))
        return sa.select(H).where(*where).order_by(
            weigher.asc() if pack else weigher.desc(), H.c.name).limit(limit)
    key = ('find', pack, fast, only, exclude, limit, reserved is not None,
           zone)
    return _cached(key, reserved, build, expanding=exclude)


def find(conn, values, **shape):
    """The hosts of :func:`find_query`, as dicts. When every host is
    stamped with the asked RAM ratio the stored weigher is the exact one:
    the index is walked from the hosts with room for the flavor
    (``free_above`` is loose by one MiB against rounding; the exact filter
    is there too); otherwise the weigher is computed for every host."""
    fast = stamped_with(conn, values['b_ram_ratio'])
    query = find_query(fast=fast, **shape)
    return query.run_with(conn, values).rows


def take_query(*, reserved, disabled_ok=False):
    """Take the resources on one host if it still has room. Binds: host,
    vcpus, memory_mb, disk_gb, the three ratios (all ``b_`` + name).
    ``disabled_ok``: even if the host is disabled."""
    def build():
        where = _room(disabled_ok=disabled_ok) + [H.c.name == _p('host')]
        if reserved is not None:
            where.append(reserved)
        return sa.update(H).where(*where).values(
            used_vcpus=H.c.used_vcpus + _p('vcpus'),
            used_memory_mb=H.c.used_memory_mb + _p('memory_mb'),
            used_disk_gb=H.c.used_disk_gb + _p('disk_gb'),
            free_memory_mb=free_ram(H.c.used_memory_mb + _p('memory_mb')))
    return _cached(('take', reserved is not None, disabled_ok), reserved,
                   build)


def _place(host):
    values = {'updated_at': _p('now')}
    if host:
        values['host'] = _p('host')
    return sa.update(I).where(I.c.uuid == _p('uuid'),
                              I.c.task_id == _p('task_id')).values(**values)


# The instance placed by its task (a build's or migration's: its host too),
# and the allocation recorded, in allocate's transaction.
PLACE = {True: prepared.Prepared(_place(True)),
         False: prepared.Prepared(_place(False))}
RECORD = prepared.Prepared(sa.insert(A).values(
    {c: prepared.bind(c, A.c[c].type)
     for c in ('instance_uuid', 'host', 'purpose', 'flavor_name', 'vcpus',
               'memory_mb', 'disk_gb', 'created_at')}))

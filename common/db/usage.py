"""Usage for billing: billable intervals of each instance, and the
Nova-compatible ``os-simple-tenant-usage`` report computed from them.

The rule (docs/operator-guide.md, "Quotas and usage"): an instance is
billed while its vm_state is ACTIVE, RESCUED, PAUSED or RESIZED (its guest
holds the host's CPU and RAM). An interval opens, with the instance's
flavor, when it enters one of those; it closes when it leaves them (STOPPED,
SUSPENDED, SOFT_DELETED, ERROR, HARD_DELETED, ...) or its flavor changes (a
new interval then opens with the new flavor). :func:`track` is called in
the transaction of every vm_state change, so a hard delete ends the
interval at the moment of the delete.
"""

import sqlalchemy as sa

from common import exception

from common.db import models
from common.db import prepared
from common.db.prepared import bind
from common.states import vm

BILLABLE = frozenset({vm.ACTIVE, vm.RESCUED, vm.PAUSED, vm.RESIZED})
_FLAVOR = ('flavor_name', 'vcpus', 'memory_mb', 'disk_gb')

UI = models.UsageInterval.__table__
I = models.Instance.__table__          # noqa: E741


# Built once (common.db.prepared): track() runs in every state change.
_OPEN = prepared.Prepared(sa.select(UI).where(
    UI.c.instance_uuid == bind('uuid'), UI.c.ended_at.is_(None)))
_CLOSE = prepared.Prepared(sa.update(UI).where(UI.c.id == bind('id')).values(
    ended_at=bind('now', UI.c.ended_at.type)))
# Close whatever is open: for a change to a vm_state that is not billed.
_CLOSE_OPEN = prepared.Prepared(sa.update(UI).where(
    UI.c.instance_uuid == bind('uuid'), UI.c.ended_at.is_(None)).values(
        ended_at=bind('now', UI.c.ended_at.type)))
_START = prepared.Prepared(sa.insert(UI).values(
    {c: bind(c, UI.c[c].type) for c in ('instance_uuid', 'project_id',
                                         'started_at') + _FLAVOR}))


def _open_interval(conn, instance_uuid):
    return _OPEN.one(conn, uuid=instance_uuid)


def track(conn, after, now):
    """Open or close ``after``'s interval for its new vm_state and flavor."""
    billable = after['vm_state'] in BILLABLE
    if not billable:
        # One statement: nothing to open, and no need to read what it closes.
        _CLOSE_OPEN.run(conn, uuid=after['uuid'], now=now)
        return
    current = _open_interval(conn, after['uuid'])
    if current is not None and any(current[k] != after[k] for k in _FLAVOR):
        _CLOSE.run(conn, id=current['id'], now=now)
        current = None
    if current is None:
        _START.run(conn, instance_uuid=after['uuid'],
                   project_id=after['project_id'], started_at=now,
                   **{k: after[k] for k in _FLAVOR})


def intervals(conn, *, start, end, project_id=None):
    """Intervals that overlap [start, end), with their instance's name and
    state, oldest first."""
    query = (sa.select(UI, I.c.name, I.c.vm_state)
             .join(I, I.c.uuid == UI.c.instance_uuid)
             .where(UI.c.started_at < end,
                    sa.or_(UI.c.ended_at.is_(None), UI.c.ended_at > start))
             .order_by(UI.c.started_at, UI.c.id))
    if project_id is not None:
        query = query.where(UI.c.project_id == project_id)
    return [dict(r._mapping) for r in conn.execute(query)]


def page(rows, *, marker=None, limit=None):
    """The rows of one page of instances (Nova's usage paging, 2.40):
    instances in the order of their first interval, those after
    ``marker`` (an instance uuid; 400 if it has no row here), at most
    ``limit`` of them. Returns ``(rows, more, last)``: ``more`` says
    whether instances are left after the page, ``last`` is the page's
    last instance (the next page's marker)."""
    order = list(dict.fromkeys(r['instance_uuid'] for r in rows))
    if marker is not None:
        if marker not in order:
            raise exception.Invalid('marker [%s] not found' % marker)
        order = order[order.index(marker) + 1:]
    more = limit is not None and len(order) > limit
    order = order[:limit] if limit is not None else order
    kept = set(order)
    return ([r for r in rows if r['instance_uuid'] in kept], more,
            order[-1] if order else None)


def last_positions(rows):
    """{project_id: position of its last instance in the page's order}."""
    order = {u: i for i, u in enumerate(
        dict.fromkeys(r['instance_uuid'] for r in rows))}
    ends = {}
    for row in rows:
        ends[row['project_id']] = max(ends.get(row['project_id'], -1),
                                      order[row['instance_uuid']])
    return ends


# --- the report ---------------------------------------------------------------

def hours(interval, start, end, now):
    """Hours of ``interval`` inside [start, end); an open one runs to now."""
    stop = min(interval['ended_at'] or now, end)
    begin = max(interval['started_at'], start)
    return max((stop - begin).total_seconds(), 0.0) / 3600.0


def report(rows, *, start, end, now):
    """{project_id: tenant usage} (Nova's body, server_usages per instance)
    from :func:`intervals`' rows."""
    projects = {}
    for row in rows:
        tenant = projects.setdefault(row['project_id'], _tenant(
            row['project_id'], start, end))
        spent = hours(row, start, end, now)
        tenant['total_hours'] += spent
        tenant['total_vcpus_usage'] += spent * row['vcpus']
        tenant['total_memory_mb_usage'] += spent * row['memory_mb']
        tenant['total_local_gb_usage'] += spent * row['disk_gb']
        _add_server(tenant['server_usages'], row, spent, now)
    return projects


def _tenant(project_id, start, end):
    return {'tenant_id': project_id, 'total_hours': 0.0,
            'total_vcpus_usage': 0.0, 'total_memory_mb_usage': 0.0,
            'total_local_gb_usage': 0.0, 'start': start, 'stop': end,
            'server_usages': {}}


def _add_server(servers, row, spent, now):
    """One entry per instance: hours summed over its intervals, the flavor
    of the latest, started at the first, ended at the last (if closed)."""
    server = servers.get(row['instance_uuid'])
    if server is None:
        server = servers[row['instance_uuid']] = {
            'instance_id': row['instance_uuid'], 'name': row['name'],
            'tenant_id': row['project_id'], 'hours': 0.0,
            'started_at': row['started_at']}
    server['hours'] += spent
    server.update(flavor=row['flavor_name'], vcpus=row['vcpus'],
                  memory_mb=row['memory_mb'], local_gb=row['disk_gb'],
                  ended_at=row['ended_at'],
                  state=('terminated' if row['vm_state'] == vm.HARD_DELETED
                         else row['vm_state']),
                  uptime=int(((row['ended_at'] or now)
                              - server['started_at']).total_seconds()))

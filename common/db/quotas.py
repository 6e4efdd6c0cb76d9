"""Quotas in the database: what each instance holds of its project's limits.

Each instance that counts holds a :class:`~common.db.models.QuotaCharge`
row (1 instance and its flavor's vCPUs, RAM and disk); ``quota_usages``
keeps each project's sums. Every change of a charge is made in the
transaction of the state change that causes it (:mod:`common.db.api`), and
the project's sums move by one UPDATE which, when the change is checked,
carries the limits in its WHERE clause (``used + asked <= limit``): two
requests, or two conductors, can never both take the last unit.

What an instance holds (:func:`wanted`):

* nothing once HARD_DELETED;
* its flavor while a task runs on it, and while idle in any other vm_state,
  except PENDING and ERROR, which hold it only with ``[quota]
  count_pending`` (default true);
* during a resize and while RESIZED: the larger of the old and the new
  flavor, per resource; confirm or revert settles it to the flavor kept.
"""

import dataclasses

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from common import exception
from common.db import models
from common.db import prepared
from common.db.prepared import bind
from common.states import vm

# Nova's quota-set names, and the instance column each one counts.
RESOURCES = ('instances', 'cores', 'ram', 'disk')
_COLUMNS = {'cores': 'vcpus', 'ram': 'memory_mb', 'disk': 'disk_gb'}
# The limits of a project's leases (Blazar's enforcement, in the same quota
# sets): hosts its leases not ended yet hold at once, and hours one lease
# may last. Limits only, checked when a lease is made or moved
# (common/db/lease_hosts.py): no charge rows, no usage columns.
LEASE_RESOURCES = ('lease_hosts', 'lease_hours')
LIMITS = RESOURCES + LEASE_RESOURCES
UNLIMITED = -1
NOTHING = dict.fromkeys(RESOURCES, 0)

U = models.QuotaUsage.__table__
C = models.QuotaCharge.__table__
L = models.QuotaLimit.__table__


# The statements of every state change's bookkeeping, built once
# (common.db.prepared).
_HELD = prepared.Prepared(sa.select(*(C.c[r] for r in RESOURCES)).where(
    C.c.instance_uuid == bind('uuid')))
_LIMITS = prepared.Prepared(sa.select(L.c.resource, L.c.hard_limit).where(
    L.c.project_id == bind('project')))
_UNCHARGE = prepared.Prepared(sa.delete(C).where(
    C.c.instance_uuid == bind('uuid')))
# The same, answering what the charge held: an instance that stops counting
# (a hard delete) gives back what it held in two statements, not three.
_RELEASE = prepared.Prepared(sa.delete(C).where(
    C.c.instance_uuid == bind('uuid')).returning(*(C.c[r] for r in RESOURCES)))
_RECHARGE = prepared.Prepared(sa.update(C).where(
    C.c.instance_uuid == bind('uuid')).values(
        {r: bind('want_' + r, C.c[r].type) for r in RESOURCES}))
_CHARGE = prepared.Prepared(sa.insert(C).values(
    instance_uuid=bind('uuid', C.c.instance_uuid.type),
    project_id=bind('project', C.c.project_id.type),
    **{r: bind('want_' + r, C.c[r].type) for r in RESOURCES}))


def _move(guarded):
    """The UPDATE that moves a project's usage by ``delta_*``, refused
    (no row) if a resource of ``guarded`` would go over ``limit_*``."""
    def build():
        delta = {r: bind('delta_' + r, U.c[r].type) for r in RESOURCES}
        guards = [U.c[r] + delta[r] <= bind('limit_' + r, U.c[r].type)
                  for r in guarded]
        return sa.update(U).where(U.c.project_id == bind('project'),
                                  *guards).values(
            updated_at=bind('now', U.c.updated_at.type),
            **{r: U.c[r] + delta[r] for r in RESOURCES})
    return prepared.cached(('quota_usages.move', guarded), build)


@dataclasses.dataclass(frozen=True)
class Settings:
    """The ``[quota]`` options a conductor checks with."""

    defaults: dict = dataclasses.field(
        default_factory=lambda: dict.fromkeys(LIMITS, UNLIMITED))
    count_pending: bool = True
    # user metadata items per server, unless a quota class or the project
    # says otherwise (common/db/quota_classes.py)
    metadata_items: int = 128
    # Nova's per-user key pair limit ([quota] key_pairs), the same way
    key_pairs: int = 100

    @classmethod
    def from_conf(cls, conf):
        group = conf.quota
        return cls({r: getattr(group, r) for r in LIMITS},
                   group.count_pending, group.metadata_items,
                   group.key_pairs)


# --- what an instance holds ---------------------------------------------------

def of_flavor(row):
    """The resources of one instance with ``row``'s flavor columns."""
    return dict({r: row[c] for r, c in _COLUMNS.items()}, instances=1)


def counts(inst, settings):
    """Whether ``inst`` (a row, after its change) holds anything at all."""
    if inst['vm_state'] == vm.HARD_DELETED:
        return False
    if inst['task_id'] is not None:
        return True
    return settings.count_pending or inst['vm_state'] not in (vm.PENDING,
                                                              vm.ERROR)


def _larger(a, b):
    return {r: max(a[r], b[r]) for r in RESOURCES}


def wanted(inst, settings, *, held=NOTHING, extra=None):
    """What ``inst`` (a row, after its change) should hold. ``extra``: a
    flavor the task being claimed needs as well (a resize's new one)."""
    if not counts(inst, settings):
        return dict(NOTHING)
    want = of_flavor(inst)
    if extra is not None:
        want = _larger(want, extra)
    if inst['vm_state'] == vm.RESIZED or inst['task_action'] == 'resize':
        want = _larger(want, held)      # both flavors until settled
    return want


def held_by(conn, instance_uuid):
    row = _HELD.one(conn, uuid=instance_uuid)
    return dict(NOTHING) if row is None else row


# --- limits ---------------------------------------------------------------------

# The default quota class's values (os-quota-class-sets), over [quota].
_CLASS_DEFAULTS = prepared.Prepared(sa.select(
    models.QuotaClassLimit.__table__.c.resource,
    models.QuotaClassLimit.__table__.c.hard_limit).where(
        models.QuotaClassLimit.__table__.c.class_name == 'default'))


def defaults(conn, settings):
    """{resource: limit} of a project with no override: the default quota
    class's values over the ``[quota]`` options."""
    found = dict(settings.defaults)
    for row in _CLASS_DEFAULTS.run(conn).rows:
        if row['resource'] in found:
            found[row['resource']] = row['hard_limit']
    return found


def limits(conn, project_id, settings):
    """{resource: limit} for the project: overrides over the defaults."""
    found = defaults(conn, settings)
    for row in _LIMITS.run(conn, project=project_id).rows:
        found[row['resource']] = row['hard_limit']
    return found


def set_limits(conn, project_id, values, now):
    for resource, limit in values.items():
        updated = conn.execute(sa.update(L).where(
            L.c.project_id == project_id, L.c.resource == resource).values(
                hard_limit=limit, updated_at=now))
        if updated.rowcount == 0:
            insert_new(conn, L, project_id=project_id, resource=resource,
                        hard_limit=limit, updated_at=now)


def usage(conn, project_id):
    row = conn.execute(sa.select(U).where(U.c.project_id == project_id)).first()
    return dict(NOTHING) if row is None else {r: row._mapping[r]
                                              for r in RESOURCES}


def insert_new(conn, table, **values):
    """INSERT unless the row exists (a concurrent transaction may insert it
    first: that is not an error)."""
    dialects = {'postgresql': postgresql.insert, 'sqlite': sqlite.insert}
    make = dialects.get(conn.dialect.name)
    if make is None:        # MySQL
        conn.execute(sa.insert(table).prefix_with('IGNORE').values(**values))
        return
    conn.execute(make(table).values(**values).on_conflict_do_nothing())


# --- charging -------------------------------------------------------------------

def charge(conn, inst, want, *, settings, now, check, held=None):
    """Make ``inst`` hold ``want``, moving its project's usage by the
    difference. With ``check``, an increase over a limit raises
    :class:`~common.exception.QuotaExceeded` and changes nothing (the caller's
    transaction rolls back). ``held``: what :func:`held_by` returned in this
    transaction, if the caller read it already."""
    if held is None:
        held = held_by(conn, inst['uuid'])
    delta = {r: want[r] - held[r] for r in RESOURCES}
    if not any(delta.values()):
        return
    project = inst['project_id']
    binds = {'project': project, 'now': now}
    binds.update(('delta_' + r, delta[r]) for r in RESOURCES)
    guarded = ()
    if check:
        limit = limits(conn, project, settings)
        guarded = tuple(r for r in RESOURCES
                        if delta[r] > 0 and limit[r] != UNLIMITED)
        binds.update(('limit_' + r, limit[r]) for r in guarded)
    move = _move(guarded)
    if move.run(conn, **binds).rowcount != 1:
        # The project's first instance (no usage row yet), or over a limit.
        insert_new(conn, U, project_id=project, updated_at=now, **NOTHING)
        if move.run(conn, **binds).rowcount != 1:
            _explain(conn, project, delta, limits(conn, project, settings))
    _store_charge(conn, inst, want, held)


def release(conn, inst, now):
    """Give back everything ``inst`` holds (it no longer counts): delete its
    charge and move its project's usage down by what the charge held."""
    held = _RELEASE.one(conn, uuid=inst['uuid'])
    if held is None or not any(held.values()):
        return
    binds = {'project': inst['project_id'], 'now': now}
    binds.update(('delta_' + r, -held[r]) for r in RESOURCES)
    move = _move(())
    if move.run(conn, **binds).rowcount != 1:
        # No usage row for the project: as charge() does, make it first.
        insert_new(conn, U, project_id=inst['project_id'], updated_at=now,
                   **NOTHING)
        move.run(conn, **binds)


def _store_charge(conn, inst, want, held):
    if not any(want.values()):
        _UNCHARGE.run(conn, uuid=inst['uuid'])
        return
    binds = {'want_' + r: want[r] for r in RESOURCES}
    if any(held.values()):
        _RECHARGE.run(conn, uuid=inst['uuid'], **binds)
    else:
        _CHARGE.run(conn, uuid=inst['uuid'], project=inst['project_id'],
                    **binds)


def _explain(conn, project, delta, limit):
    used = usage(conn, project)
    for resource in RESOURCES:
        if (delta[resource] > 0 and limit[resource] != UNLIMITED
                and used[resource] + delta[resource] > limit[resource]):
            raise exception.QuotaExceeded(
                resource=resource, project=project, limit=limit[resource],
                used=used[resource], requested=delta[resource])
    # The usage moved between the UPDATE and this read (another request
    # took and gave back): name what was asked and where each stands.
    asked = [r for r in RESOURCES if delta[r] > 0]
    raise exception.QuotaExceeded(
        resource=', '.join(asked), project=project,
        requested=', '.join('%s %d' % (r, delta[r]) for r in asked),
        used=', '.join('%s %d' % (r, used[r]) for r in asked),
        limit=', '.join('%s %s' % (r, limit[r]) for r in asked))


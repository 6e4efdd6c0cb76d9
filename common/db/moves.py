"""The migrations record (issue 25): one row per move of an instance (a
resize, a cold migration, a live migration, an evacuation), written in
the transaction that takes the destination's resources
(:meth:`common.db.hosts.HostsMixin._allocate`), with where it comes from
and goes to and the flavors before and after.

Its status is not stored: it is read from the action log, the one place a
task's outcome is written, so the two can never disagree; an evacuation's
last step, its source host back and rid of the domain, is the row's
``cleaned_at`` (:mod:`common.db.evacuations`). Nova's names:

=================  ==========================  ===================  =================
task               resize, migration (cold)    live-migration       evacuation
=================  ==========================  ===================  =================
running            ``migrating``               ``running``          ``pre-migrating``
succeeded          ``finished`` (to confirm)   ``completed``        ``done``
then confirmed     ``confirmed``
then reverted      ``reverted``
source cleaned                                                      ``completed``
rolled back        ``error``                   ``failed``           ``failed``
failed, preempted  ``error``                   ``error``            ``error``
=================  ==========================  ===================  =================

A move of purpose ``resize`` that keeps the flavor is Nova's cold
``migration`` (the ``migrate`` action); one that changes it is a
``resize``, on the same host or another.
"""

import uuid as uuidlib

import sqlalchemy as sa

from common import states
from common.db import models

M = models.Migration.__table__
I = models.Instance.__table__          # noqa: E741 (the table, as in api.py)
LOGT = models.InstanceAction.__table__
F = models.Flavor.__table__

RESIZE = 'resize'
COLD = 'migration'
LIVE = 'live-migration'
EVACUATION = 'evacuation'
_TYPES = {'resize': RESIZE, 'migration': LIVE, 'evacuation': EVACUATION}
_ENDS = {'confirm_resize': 'confirmed', 'revert_resize': 'reverted'}
_SUCCEEDED = {RESIZE: 'finished', COLD: 'finished', LIVE: 'completed',
              EVACUATION: 'done'}
_ROLLED_BACK = {RESIZE: 'error', COLD: 'error', LIVE: 'failed',
                EVACUATION: 'failed'}
_RUNNING = {RESIZE: 'migrating', COLD: 'migrating', LIVE: 'running',
            EVACUATION: 'pre-migrating'}
# Moves the user ends with confirm_resize or revert_resize.
CONFIRMED = (RESIZE, COLD)


def record(conn, *, instance_uuid, task_id, purpose, dest_host, flavor_name,
           now):
    """Record the move an allocation of ``purpose`` starts (a resize's or
    a migration's; nothing for a build's)."""
    kind = _TYPES.get(purpose)
    if kind is None:
        return
    inst = conn.execute(sa.select(
        I.c.host, I.c.flavor_name, I.c.user_id, I.c.project_id).where(
            I.c.uuid == instance_uuid)).first()
    if kind == RESIZE and flavor_name == inst.flavor_name:
        kind = COLD
    conn.execute(sa.insert(M).values(
        uuid=str(uuidlib.uuid4()), task_id=task_id,
        instance_uuid=instance_uuid, migration_type=kind,
        source_host=inst.host, dest_host=dest_host,
        old_flavor_name=inst.flavor_name,
        new_flavor_name=flavor_name if kind != LIVE else inst.flavor_name,
        user_id=inst.user_id, project_id=inst.project_id, created_at=now))


def _status(kind, log, ends):
    """(status, updated_at) of a move from its task's log row and the
    confirm or revert rows after it."""
    result = log['result'] if log else states.RESULT_ERROR
    if result == states.RESULT_RUNNING:
        return _RUNNING[kind], None
    if result == states.RESULT_SUCCESS:
        for end in ends:
            if (end['result'] == states.RESULT_SUCCESS
                    and end['started_at'] >= log['finished_at']):
                return _ENDS[end['action']], end['finished_at']
        return _SUCCEEDED[kind], log['finished_at']
    if result == states.RESULT_ROLLED_BACK:
        return _ROLLED_BACK[kind], log['finished_at']
    return 'error', log['finished_at'] if log else None


def _rows(conn, where):
    query = sa.select(M, LOGT.c.result, LOGT.c.finished_at).outerjoin(
        LOGT, LOGT.c.task_id == M.c.task_id).where(*where).order_by(
            M.c.created_at.desc(), M.c.id.desc())
    return [dict(r._mapping) for r in conn.execute(query)]


def _ends(conn, instances):
    found = {}
    if not instances:
        return found
    query = sa.select(LOGT.c.instance_uuid, LOGT.c.action, LOGT.c.result,
                      LOGT.c.started_at, LOGT.c.finished_at).where(
        LOGT.c.instance_uuid.in_(sorted(instances)),
        LOGT.c.action.in_(sorted(_ENDS))).order_by(LOGT.c.started_at)
    for row in conn.execute(query):
        found.setdefault(row.instance_uuid, []).append(dict(row._mapping))
    return found


def _flavor_ids(conn, names):
    """{flavor name: integer id} of the live flavors of ``names``."""
    if not names:
        return {}
    query = sa.select(F.c.name, F.c.id).where(F.c.name.in_(sorted(names)),
                                              F.c.deleted == 0)
    return {r.name: r.id for r in conn.execute(query)}


def listed(conn, *, instance_uuid=None):
    """Every recorded move (of one instance), newest first, each with its
    ``status``, ``updated_at`` and the flavors' integer ids."""
    where = [] if instance_uuid is None else [
        M.c.instance_uuid == instance_uuid]
    rows = _rows(conn, where)
    ends = _ends(conn, {r['instance_uuid'] for r in rows
                        if r['migration_type'] in CONFIRMED})
    ids = _flavor_ids(conn, {n for r in rows for n in (
        r['old_flavor_name'], r['new_flavor_name']) if n})
    for row in rows:
        log = ({'result': row['result'], 'finished_at': row['finished_at']}
               if row['result'] is not None else None)
        row['status'], row['updated_at'] = _status(
            row['migration_type'], log,
            ends.get(row['instance_uuid'], ()) if row['migration_type']
            in CONFIRMED else ())
        if row.get('cleaned_at') is not None and row['status'] == 'done':
            row['status'], row['updated_at'] = 'completed', row['cleaned_at']
        row['old_flavor_id'] = ids.get(row['old_flavor_name'])
        row['new_flavor_id'] = ids.get(row['new_flavor_name'])
    return rows


class MovesMixin:
    """Needs ``self.db``."""

    def place_for_task(self, ctx, instance_uuid, host):
        """The running task ``ctx.task_id`` moves the instance's placing
        to ``host`` (a cross-host revert, before the source restores the
        guest: its reports are the instance's from then on); preempted if
        the task no longer holds the instance."""
        def txn(conn):
            res = conn.execute(sa.update(I).where(
                I.c.uuid == instance_uuid, I.c.task_id == ctx.task_id).values(
                    host=host, task_updated_at=self.clock()))
            if res.rowcount != 1:
                self._preempted(conn, instance_uuid, ctx.task_id)
        self.db.transaction(txn)

    def list_migrations(self, *, instance_uuid=None):
        return self.db.transaction(
            lambda conn: listed(conn, instance_uuid=instance_uuid),
            readonly=True)

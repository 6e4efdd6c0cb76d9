"""The task gateway's database half: every state change is one conditional UPDATE.

DESIGN.md sections 3 and 4, made real:

* :meth:`StateDB.claim_task`: ``SET task_id, task_state ... WHERE task_id IS
  NULL AND vm_state IN (allowed)``. Zero rows means denied; a read then says
  why. Two claims can never both win, on SQLite or PostgreSQL.
* :meth:`~StateDB.update_progress`, :meth:`~StateDB.finish_task`,
  :meth:`~StateDB.fail_task`, :meth:`~StateDB.bury`: ``WHERE task_id =
  :task_id``. Zero rows means the task was preempted: the caller is told
  (:class:`~common.exception.TaskPreempted`) and nothing changes.
* :meth:`~StateDB.hard_delete`: always succeeds while the database answers;
  clears any task, frees the instance's allocations in the same transaction.
* :meth:`~StateDB.reset_state`: admin's way out, also preempting.
* :meth:`~StateDB.store_power_report`: bottom-up, ignored when older than the
  last report stored; a report that changes nothing only moves the stored
  ``power_seq`` up, in bulk (:mod:`common.db.power`).
* Quotas and billing (:mod:`common.db.accounting`) follow every vm_state
  change in its own transaction: a build, a rebuild of a PENDING instance,
  a resize and a restore are checked against the project's quota there
  (:class:`~common.exception.QuotaExceeded` rolls the change back).

Every method returns plain dicts, never ORM rows, and runs in one retried
transaction (:class:`common.db.engine.Database`). The action log is written in
the same transaction as the change it records.
"""

import datetime
import uuid as uuidlib

import sqlalchemy as sa

from common import actions
from common import exception
from common import states
from common.db import accounting
from common.db import aggregates
from common.db import attributes
from common.db import domains
from common.db import evacuations
from common.db import flavors as flavors_db
from common.db import hosts as hosts_db
from common.db import keypairs as keypairs_db
from common.db import models
from common.db import moves
from common.db import networks as networks_db
from common.db import power as power_db
from common.db import prepared
from common.db import quotas
from common.db import server_groups as groups_db
from common.db import shelving
from common.db.prepared import bind
from common.states import vm

I = models.Instance.__table__          # noqa: E741 (the table, read as "I")
A = hosts_db.A
LOGT = models.InstanceAction.__table__

TABLE = actions.TABLE

# Columns a finishing task may set besides the states (resize, rebuild, ...).
FINISH_COLUMNS = frozenset({'host', 'flavor_name', 'vcpus', 'memory_mb',
                            'disk_gb', 'image_ref', 'launched_at',
                            'shelved_at', 'shelved_image_id'})
CREATE_COLUMNS = frozenset({'name', 'project_id', 'user_id', 'flavor_name',
                            'vcpus', 'memory_mb', 'disk_gb', 'image_ref',
                            'user_shutdown_policy', 'crash_policy',
                            'description', 'metadata', 'tags',
                            'boot_reservation_id', 'launch_index',
                            'availability_zone', 'key_name', 'key_data',
                            'user_data', 'config_drive', 'access_ip_v4',
                            'access_ip_v6', 'hostname',
                            'auto_disk_config', 'numa_cells',
                            'scheduler_hints'})
# Claims checked against the project's quota (the others hold what they held).
QUOTA_CHECKED = frozenset({'rebuild', 'resize', 'restore'})
_CLEAR_TASK = {'task_id': None, 'task_state': None, 'task_action': None,
               'task_started_at': None, 'task_updated_at': None,
               'progress_step': None, 'progress_percent': 0}


# --- the statements of the hot paths, built once (common.db.prepared) ------------

_GET = prepared.Prepared(sa.select(I).where(I.c.uuid == bind('uuid')))
# PostgreSQL: hold the row for this transaction (SQLite's BEGIN IMMEDIATE
# already serialises writers).
_GET_LOCKED = prepared.Prepared(
    sa.select(I).where(I.c.uuid == bind('uuid')).with_for_update())
_NOW = bind('now', sa.DateTime())
_HARD_DELETE = prepared.Prepared(sa.update(I).where(
    I.c.uuid == bind('uuid'), I.c.vm_state != vm.HARD_DELETED).values(
        dict(_CLEAR_TASK, vm_state=vm.HARD_DELETED, hard_deleted_at=_NOW,
             updated_at=_NOW)))
_PREEMPT_LOG = prepared.Prepared(sa.update(LOGT).where(
    LOGT.c.instance_uuid == bind('uuid'),
    LOGT.c.result == states.RESULT_RUNNING).values(
        finished_at=_NOW, result=states.RESULT_PREEMPTED,
        vm_state_after=bind('vm_state', LOGT.c.vm_state_after.type),
        message='preempted by a hard delete or an admin reset'))
_LOG_COLUMNS = ('task_id', 'instance_uuid', 'action', 'user_id', 'project_id',
                'request_id', 'started_at', 'result', 'vm_state_before',
                'message', 'finished_at', 'vm_state_after')
_LOG_INSERT = prepared.Prepared(sa.insert(LOGT).values(
    {c: bind(c, LOGT.c[c].type) for c in _LOG_COLUMNS}))
_LOG_END = prepared.Prepared(sa.update(LOGT).where(
    LOGT.c.task_id == bind('task_id')).values(
        finished_at=_NOW, result=bind('result', LOGT.c.result.type),
        vm_state_after=bind('vm_state', LOGT.c.vm_state_after.type)))
_MESSAGE = bind('message', LOGT.c.message.type)
# keep why the task was started (reconcile's reason, which the crash budget
# counts), then what happened
_LOG_END_SAYING = prepared.Prepared(sa.update(LOGT).where(
    LOGT.c.task_id == bind('task_id')).values(
        finished_at=_NOW, result=bind('result', LOGT.c.result.type),
        vm_state_after=bind('vm_state', LOGT.c.vm_state_after.type),
        message=sa.case((LOGT.c.message.is_(None), _MESSAGE),
                        else_=LOGT.c.message + ': ' + _MESSAGE)))
# a failure that is the user's mistake, with its fault code
_LOG_END_FAULT = prepared.Prepared(sa.update(LOGT).where(
    LOGT.c.task_id == bind('task_id')).values(
        finished_at=_NOW, result=bind('result', LOGT.c.result.type),
        vm_state_after=bind('vm_state', LOGT.c.vm_state_after.type),
        fault_code=bind('fault_code', LOGT.c.fault_code.type),
        message=sa.case((LOGT.c.message.is_(None), _MESSAGE),
                        else_=LOGT.c.message + ': ' + _MESSAGE)))


def _setting(table, keys, prefix=''):
    """``{column: bind(prefix + column)}`` for an UPDATE's or INSERT's
    values (``prefix`` keeps them apart from the WHERE clause's)."""
    return {k: bind(prefix + k, table.c[k].type) for k in keys}


def _set(values):
    """An UPDATE's values named as :func:`_update_task_row` binds them."""
    return {'set_' + k: v for k, v in values.items()}


def _insert_instance(record):
    keys = tuple(sorted(record))
    return prepared.cached(('instances.insert', keys), lambda: sa.insert(
        I).values(_setting(I, keys)))


def _update_task_row(keys, host):
    """UPDATE instances SET ``keys`` WHERE uuid and task_id [and host]."""
    keys = tuple(sorted(keys))
    return prepared.cached(
        ('instances.task_update', keys, host is not None),
        lambda: sa.update(I).where(
            I.c.uuid == bind('uuid'), I.c.task_id == bind('task_id'),
            *_host_guard(host)).values(_setting(I, keys, 'set_')))


def _task_row(host):
    """The row of the running task ``task_id``, held until the end of the
    transaction (PostgreSQL; SQLite's writers are serialised already)."""
    return prepared.cached(
        ('instances.task_row', host is not None),
        lambda: sa.select(I).where(I.c.uuid == bind('uuid'),
                                   I.c.task_id == bind('task_id'),
                                   *_host_guard(host)).with_for_update())


def _finish_values(values):
    unknown = set(values) - FINISH_COLUMNS
    if unknown:
        raise exception.Invalid(reason='a task may not set %s; allowed: %s'
                                % (sorted(unknown), sorted(FINISH_COLUMNS)))
    return dict(values)


def _checked(derive):
    def checked(conn, inst):
        values, settle = derive(conn, inst)
        return _finish_values(values), settle
    return checked


def _claim_statement(action, with_power_seq):
    """The claim's conditional UPDATE for ``action``, built once."""
    def build():
        allowed = TABLE.allowed_from(action)
        task_by_source = {src: TABLE.row(action, src).task_state
                          for src in allowed}
        now = bind('now', sa.DateTime())
        values = {
            'task_id': bind('task_id', I.c.task_id.type),
            'task_state': sa.case(task_by_source, value=I.c.vm_state),
            'task_action': action, 'task_started_at': now,
            'task_updated_at': now, 'progress_step': None,
            'progress_percent': 0, 'updated_at': now,
        }
        if TABLE.action(action).saves_return:
            values['return_vm_state'] = I.c.vm_state
        guards = [I.c.uuid == bind('uuid'), I.c.task_id.is_(None),
                  _among(I.c.vm_state, allowed)]
        if with_power_seq:
            guards.append(I.c.power_seq == bind('power_seq', I.c.power_seq.type))
        return sa.update(I).where(*guards).values(values).returning(*I.c)
    return prepared.cached(('instances.claim', action, with_power_seq), build)


def _among(column, values):
    """``column IN (...)`` with each value its own fixed parameter (a
    prepared statement cannot expand a list)."""
    return column.in_([sa.literal(v, column.type) for v in sorted(values)])


def _dicts(result):
    """The rows as dicts (from the keys: faster than each row's mapping)."""
    keys = list(result.keys())
    return [dict(zip(keys, row, strict=True)) for row in result]


def utcnow():
    """Naive UTC, as stored."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


_one = hosts_db.one


def check_owner(ctx, inst):
    """A project sees only its own instances; others are 'not found'."""
    if not ctx.is_admin and inst['project_id'] != ctx.project_id:
        raise exception.InstanceNotFound(instance=inst['uuid'])
    return inst


def new_uuid():
    return str(uuidlib.uuid4())


def _host_guard(host):
    """The guard "placed on the reporting host", its host bound as
    ``host`` (none when ``host`` is None)."""
    return () if host is None else (I.c.host == bind('host'),)


class StateDB(accounting.AccountingMixin, power_db.PowerMixin,
              hosts_db.HostsMixin, domains.DomainsMixin,
              attributes.AttributesMixin, flavors_db.FlavorsMixin,
              aggregates.AggregatesMixin, moves.MovesMixin,
              networks_db.NetworksMixin, keypairs_db.KeyPairsMixin,
              groups_db.ServerGroupsMixin,
              evacuations.EvacuationsMixin, shelving.ShelvingMixin):
    """Conditional-update API over one :class:`~common.db.engine.Database`.

    ``clock`` returns the current naive-UTC datetime; tests inject their own.
    ``quota`` (:class:`common.db.quotas.Settings`) is what a conductor checks
    quotas with; without it nothing is limited (usage is still counted).
    """

    def __init__(self, database, *, clock=utcnow, quota=None):
        self.db = database
        self.clock = clock
        if quota is not None:
            self.quota = quota

    # --- reads --------------------------------------------------------------

    def get_instance(self, instance_uuid):
        return self.db.transaction(self._get, instance_uuid, readonly=True)

    def _get(self, conn, instance_uuid, lock=False):
        inst = (_GET_LOCKED if lock else _GET).one(conn, uuid=instance_uuid)
        if inst is None:
            raise exception.InstanceNotFound(instance=instance_uuid)
        return inst

    def list_instances(self, *, project_id=None, host=None,
                       include_deleted=False):
        query = sa.select(I).order_by(I.c.created_at, I.c.uuid)
        if project_id is not None:
            query = query.where(I.c.project_id == project_id)
        if host is not None:
            query = query.where(I.c.host == host)
        if not include_deleted:
            query = query.where(I.c.vm_state != vm.HARD_DELETED)
        return self.db.transaction(lambda conn: _dicts(conn.execute(query)),
                                   readonly=True)

    def get_instances(self, uuids):
        """{uuid: instance} for the given uuids, in one query."""
        uuids = list(uuids)
        if not uuids:
            return {}
        query = sa.select(I).where(I.c.uuid.in_(uuids))
        return self.db.transaction(
            lambda conn: {r.uuid: dict(r._mapping) for r in conn.execute(query)},
            readonly=True)

    def list_actions(self, instance_uuid):
        query = (sa.select(LOGT).where(LOGT.c.instance_uuid == instance_uuid)
                 .order_by(LOGT.c.started_at, LOGT.c.id))
        return self.db.transaction(
            lambda conn: [dict(r._mapping) for r in conn.execute(query)],
            readonly=True)

    def list_running_tasks(self, *, updated_before=None, host=None):
        """Instances with a task running (optionally idle since a time)."""
        query = sa.select(I).where(I.c.task_id.is_not(None))
        if updated_before is not None:
            query = query.where(I.c.task_updated_at < updated_before)
        if host is not None:
            query = query.where(I.c.host == host)
        return self.db.transaction(
            lambda conn: [dict(r._mapping) for r in conn.execute(query)],
            readonly=True)

    def list_soft_deleted(self, *, before):
        """Idle SOFT_DELETED instances soft-deleted before ``before``."""
        query = sa.select(I).where(I.c.vm_state == vm.SOFT_DELETED,
                                   I.c.task_id.is_(None),
                                   I.c.soft_deleted_at < before)
        return self.db.transaction(
            lambda conn: [dict(r._mapping) for r in conn.execute(query)],
            readonly=True)

    def get_action(self, task_id):
        return self.db.transaction(
            lambda conn: _one(conn, sa.select(LOGT).where(
                LOGT.c.task_id == task_id)), readonly=True)

    # --- create -------------------------------------------------------------

    def create_instance(self, ctx, values, *, task_id=None, networks=None,
                        default_network=None, server_group=None):
        """Insert a new instance, INITIALIZED with its build task claimed
        (at its first step, scheduling), and its ports on ``networks``
        (Nova's: None or ``auto``, ``none``, or ``[{"uuid", "fixed_ip"}]``;
        ``default_network``: ``[network] default_network``), in one
        transaction (:mod:`common.db.networks`). The answer's ``ports``:
        as a build task carries them; ``no_address``: the reason the build
        must be buried, when a network had no free address (the instance
        then holds no port). ``server_group``: the uuid of the group it
        joins (:func:`common.db.server_groups.join`)."""
        unknown = set(values) - CREATE_COLUMNS
        if unknown:
            raise exception.Invalid(reason='unknown instance fields %s; '
                                    'expected only %s' % (sorted(unknown),
                                                          sorted(CREATE_COLUMNS)))
        task_id = task_id or new_uuid()
        row = TABLE.row('build', vm.INITIALIZED)
        now = self.clock()
        record = dict(values, uuid=new_uuid(),
                      vm_state=vm.INITIALIZED, task_id=task_id,
                      task_state=row.task_state, task_action='build',
                      task_started_at=now, task_updated_at=now,
                      progress_step=states.step.SCHEDULING,
                      progress_percent=0,
                      power_state=states.power.NOSTATE, power_seq=0,
                      created_at=now, updated_at=now)
        record.setdefault('user_shutdown_policy', 'stop')
        record.setdefault('crash_policy', 'restart')
        for key, empty in (('metadata', {}), ('tags', []), ('locked', False),
                           ('launch_index', 0), ('config_drive', False)):
            record.setdefault(key, empty)

        def txn(conn):
            chosen = self._resolve_networks(conn, ctx, networks,
                                            default_network)
            row = dict(record, requested_networks=[
                {'network_id': net['id'], 'fixed_ip': fixed}
                for net, fixed in chosen])
            _insert_instance(row).run(conn, **row)
            self._accounted(conn, row, now, check=True, new=True)
            if server_group is not None:
                groups_db.join(conn, server_group, row['uuid'],
                               row['project_id'], self.quota, now)
            self._log_start(conn, ctx, row['uuid'], task_id, 'build',
                            vm.INITIALIZED, now)
            out = dict(row, ports=[], no_address=None)
            try:
                out['ports'] = self._allocate_ports(conn, row['uuid'], chosen,
                                                    now)
            except exception.NoFreeAddress as err:
                out['no_address'] = err.message
            return out
        return self.db.transaction(txn)

    # --- claim --------------------------------------------------------------

    def claim_task(self, ctx, instance_uuid, action, *, task_id=None,
                   power_seq=None, message=None, flavor=None):
        """Claim ``action`` on the instance; return the claimed instance.

        Raises :class:`~common.exception.ActionNotAllowed` with the full reason
        when the table denies it or a task runs, ``InstanceNotFound`` when
        there is no such instance. Reconcile passes ``power_seq``: the claim
        then also requires that no newer power report arrived since it
        decided, and returns None instead of raising when it lost the race.
        ``flavor``: a resize's new flavor (vcpus, memory_mb, disk_gb), held
        with the old one until the resize is confirmed or reverted.
        """
        spec = TABLE.action(action)
        if spec.kind != actions.KIND_TASK:
            raise exception.Invalid(reason='%s is not a task; it is done by '
                                    'its own call' % action)
        task_id = task_id or new_uuid()
        extra = None if flavor is None else quotas.of_flavor(flavor)
        return self.db.transaction(self._claim, ctx, instance_uuid, action,
                                   task_id, power_seq, message, extra)

    def _claim(self, conn, ctx, instance_uuid, action, task_id,
               power_seq=None, message=None, extra=None):
        now = self.clock()
        claim = _claim_statement(action, power_seq is not None)
        claimed = claim.one(conn, uuid=instance_uuid, task_id=task_id,
                            now=now, power_seq=power_seq)
        if claimed is None:
            if power_seq is not None:
                return None
            self._explain_denial(conn, instance_uuid, action,
                                 TABLE.allowed_from(action))
        if action in QUOTA_CHECKED:
            self._accounted(conn, claimed, now, check=True, extra=extra)
        self._log_start(conn, ctx, instance_uuid, task_id, action,
                        claimed['vm_state'], now, message)
        return claimed

    def _explain_denial(self, conn, instance_uuid, action, allowed):
        raise TABLE.denial(self._get(conn, instance_uuid), action, allowed)

    # --- during and at the end of a task --------------------------------------

    def update_progress(self, ctx, instance_uuid, *, step=None, percent=None,
                        host=None):
        """Record progress of the task ``ctx.task_id``; preempted if not its.

        ``host``, when given, must be the instance's host: an agent reports
        only on its own instances.
        """
        values = {'task_updated_at': self.clock()}
        if step is not None:
            values['progress_step'] = step
        if percent is not None:
            if not 0 <= percent <= 100:
                raise exception.Invalid(reason='progress percent %r is not '
                                        'within 0-100' % percent)
            values['progress_percent'] = int(percent)

        update = _update_task_row(values, host)

        def txn(conn):
            res = update.run(conn, uuid=instance_uuid, task_id=ctx.task_id,
                             host=host, **_set(values))
            if res.rowcount != 1:
                self._preempted(conn, instance_uuid, ctx.task_id, host)
        self.db.transaction(txn)

    def finish_task(self, ctx, instance_uuid, *, values=None, power=None,
                    host=None, settle=(), derive=None):
        """End ``ctx.task_id`` successfully: the table's vm_state, task cleared.

        ``power`` is an optional power report (see :meth:`store_power_report`)
        stored in the same update if it is newer than the one stored.
        ``settle`` lists allocation changes made in the same transaction
        (see :meth:`_settle`). ``derive(conn, inst)``, instead of ``values``
        and ``settle``, returns both from the task's row as this transaction
        read it. Returns ``(before, after)`` dicts; ``after`` is the row as
        written (it was locked from the read on).
        """
        extra = _finish_values(values or {})
        if derive is None:
            derive = lambda conn, inst: (extra, settle)     # noqa: E731
        else:
            derive = _checked(derive)

        def target(inst):
            row = TABLE.row(inst['task_action'], inst['vm_state'])
            return (TABLE.success_state(row, inst['vm_state'],
                                        inst['return_vm_state']),
                    states.RESULT_SUCCESS)
        return self._end_task(ctx, instance_uuid, target, derive, power, None,
                              host=host)

    def fail_task(self, ctx, instance_uuid, *, error, rolled_back,
                  power=None, host=None, settle=(), fault_code=None):
        """End ``ctx.task_id`` in failure: unchanged if rolled back, else
        ERROR. ``fault_code``: a 4xx when the failure is the user's mistake
        (kept in the action log; the API shows it as the fault's code)."""
        def target(inst):
            new = TABLE.failure_state(inst['task_action'], inst['vm_state'],
                                      rolled_back)
            result = (states.RESULT_ROLLED_BACK if new == inst['vm_state']
                      else states.RESULT_ERROR)
            return new, result
        return self._end_task(ctx, instance_uuid, target,
                              lambda conn, inst: ({}, settle), power, error,
                              host=host, fault_code=fault_code)

    def bury(self, ctx, instance_uuid, *, reason, use_pending):
        """No valid host for the build ``ctx.task_id``: PENDING or ERROR.

        Whatever the instance held is freed in the same transaction.
        """
        new = vm.PENDING if use_pending else vm.ERROR

        def free_all(conn, inst):
            self._free_ports(conn, instance_uuid)
            return {}, [{'free': {}}]
        return self._end_task(ctx, instance_uuid,
                              lambda inst: (new, states.RESULT_BURIED),
                              free_all, None, reason)

    def _end_task(self, ctx, instance_uuid, decide, derive, power, message,
                  host=None, fault_code=None):
        def txn(conn):
            inst = _task_row(host).one(conn, uuid=instance_uuid,
                                       task_id=ctx.task_id, host=host)
            if inst is None:
                self._preempted(conn, instance_uuid, ctx.task_id, host)
            new_state, result = decide(inst)
            extra, settle = derive(conn, inst)
            now = self.clock()
            values = dict(extra, **_CLEAR_TASK, vm_state=new_state,
                          updated_at=now)
            if new_state != inst['vm_state']:
                values['soft_deleted_at'] = (
                    now if new_state == vm.SOFT_DELETED else None)
            if power is not None and int(power['seq']) > inst['power_seq']:
                values.update(self._power_values(power, now))
            res = _update_task_row(values, None).run(
                conn, uuid=instance_uuid, task_id=ctx.task_id, **_set(values))
            if res.rowcount != 1:
                self._preempted(conn, instance_uuid, ctx.task_id)
            for op in settle:
                self._settle(conn, instance_uuid, op)
            after = dict(inst, **values)
            self._accounted(conn, after, now)
            self._log_end(conn, ctx.task_id, result, new_state, message, now,
                          fault_code)
            return inst, after
        return self.db.transaction(txn)

    def _settle(self, conn, instance_uuid, op):
        """One allocation change at the end of a task:
        ``{'free': {'purpose': P, 'host': H}}`` (both optional) or
        ``{'promote': P}`` (rows of purpose P become the instance's own) or
        ``{'end_moves': True}`` (a move ends without moving: see
        :meth:`common.db.domains.DomainsMixin._end_moves`) or ``{'unplace':
        True}`` (on no host: a failed unshelve). With ``'doom':
        True`` beside ``free``, the hosts freed other than the instance's
        own get doomed marks (the copy a cold move left there)."""
        if op.get('end_moves'):
            self._end_moves(conn, instance_uuid)
        if op.get('unplace'):       # a failed unshelve: on no host again
            conn.execute(sa.update(I).where(
                I.c.uuid == instance_uuid).values(host=None))
        if 'free' in op:
            freed = self._free_allocations(conn, instance_uuid, **op['free'])
            if op.get('doom'):
                here = conn.execute(sa.select(I.c.host).where(
                    I.c.uuid == instance_uuid)).scalar()
                self._doom(conn, instance_uuid,
                           sorted({a['host'] for a in freed} - {here}))
        if 'promote' in op:
            conn.execute(sa.update(A).where(
                A.c.instance_uuid == instance_uuid,
                A.c.purpose == op['promote']).values(purpose='instance'))

    def _task_locked(self, conn, ctx, instance_uuid):
        """The row of the running task ``ctx.task_id``, held; preempted
        (:class:`~common.exception.TaskPreempted`) when it is not."""
        inst = _task_row(None).one(conn, uuid=instance_uuid,
                                   task_id=ctx.task_id, host=None)
        if inst is None:
            self._preempted(conn, instance_uuid, ctx.task_id)
        return inst

    def _preempted(self, conn, instance_uuid, task_id, host=None):
        inst = _one(conn, sa.select(I.c.vm_state, I.c.task_id, I.c.host).where(
            I.c.uuid == instance_uuid))
        if inst is None:
            raise exception.InstanceNotFound(instance=instance_uuid)
        if host is not None and inst['host'] != host:
            raise exception.Forbidden(
                action='a report from host %s on instance %s, which is placed '
                       'on %s' % (host, instance_uuid, inst['host']))
        if inst['vm_state'] == vm.HARD_DELETED:
            reason = 'the instance was hard-deleted'
        elif inst['task_id']:
            reason = 'task %s now holds the instance' % inst['task_id']
        else:
            reason = 'the task was ended (reset, timed out or finished before)'
        raise exception.TaskPreempted(
            task_id=task_id, instance=instance_uuid, reason=reason,
            deleted=inst['vm_state'] == vm.HARD_DELETED)

    def set_policies(self, instance_uuid, *, user_shutdown=None, crash=None):
        """Change an instance's reconcile policies (not a state change)."""
        values = {}
        if user_shutdown is not None:
            values['user_shutdown_policy'] = user_shutdown
        if crash is not None:
            values['crash_policy'] = crash

        def txn(conn):
            if values:
                conn.execute(sa.update(I).where(I.c.uuid == instance_uuid)
                             .values(updated_at=self.clock(), **values))
            return self._get(conn, instance_uuid)
        return self.db.transaction(txn)

    def rename_instance(self, instance_uuid, *, name):
        """Change an instance's display name (not a state, not a task).

        One UPDATE of ``name`` (and ``updated_at``) ``WHERE vm_state !=
        hard_deleted``: no task's write touches ``name``, so a rename runs
        beside any task without undoing or being undone by its state
        changes. Returns ``(before, after)``; a deleted instance is not found.
        """
        def txn(conn):
            before = self._get(conn, instance_uuid)
            after = _one(conn, sa.update(I).where(
                I.c.uuid == instance_uuid, I.c.vm_state != vm.HARD_DELETED)
                .values(name=name, updated_at=self.clock()).returning(*I.c))
            if after is None:
                raise exception.InstanceNotFound(instance=instance_uuid)
            return before, after
        return self.db.transaction(txn)

    # --- preempting database-only actions -------------------------------------

    def hard_delete(self, ctx, instance_uuid, *, check=None, message=None):
        """Mark the instance HARD_DELETED at once and free what it holds.

        Always succeeds while the database answers: preempts any task, needs
        no agent. Deleting a hard-deleted instance again succeeds and changes
        nothing. Another project's instance is not found (unless ``ctx`` is
        an admin's). ``check(instance)``, if given, runs on the row read in
        the transaction, before any change, and may raise to refuse (the
        API's policy check: one read instead of two). ``message``: why, for
        the action log (reconcile's user_shutdown policy). Returns
        ``(before, after)``; ``after['doomed_hosts']``: the hosts other than
        its own where it held an allocation (the destination of a move the
        delete preempted), each to be told at once to destroy its copy
        (issue 19; their reports destroy it too, as of any hard-deleted
        instance).
        """
        def txn(conn):
            before = check_owner(ctx, self._get(conn, instance_uuid,
                                                lock=True))
            if check is not None:
                check(before)
            if before['vm_state'] == vm.HARD_DELETED:
                return before, dict(before, doomed_hosts=[])
            now = self.clock()
            values = dict(_CLEAR_TASK, vm_state=vm.HARD_DELETED,
                          hard_deleted_at=now, updated_at=now)
            _HARD_DELETE.run(conn, uuid=instance_uuid, now=now)
            self._preempt_log(conn, instance_uuid, vm.HARD_DELETED, now)
            freed = self._free_allocations(conn, instance_uuid)
            self._free_ports(conn, instance_uuid)
            groups_db.leave(conn, instance_uuid)
            after = dict(before, **values)
            self._accounted(conn, after, now)
            after['doomed_hosts'] = sorted({a['host'] for a in freed}
                                           - {before['host']})
            self._log_instant(conn, ctx, instance_uuid, 'delete',
                              before['vm_state'], vm.HARD_DELETED, now,
                              message)
            return before, after
        return self.db.transaction(txn)

    def reset_state(self, ctx, instance_uuid, target, *,
                    ratios=(1.0, 1.0, 1.0)):
        """Admin reset to ``target`` (ACTIVE or ERROR), clearing any task.

        A move it preempts ends there: the destination's allocation is
        freed and the destination doomed to destroy its copy (returned as
        ``after['doomed_hosts']``, to be told at once). To ACTIVE, the
        instance is counted on its host in the same transaction (under
        ``ratios``), or the reset is refused
        (:class:`~common.exception.HostFull`): issue 19."""
        allowed = TABLE.allowed_from('reset_state', target)
        if target not in TABLE.targets('reset_state'):
            raise exception.InvalidState(
                field='reset_state target', value=target,
                expected=', '.join(TABLE.targets('reset_state')))

        def txn(conn):
            now = self.clock()
            values = dict(_CLEAR_TASK, vm_state=target, updated_at=now)
            before = self._get(conn, instance_uuid, lock=True)
            res = conn.execute(sa.update(I).where(
                I.c.uuid == instance_uuid,
                I.c.vm_state.in_(sorted(allowed))).values(**values))
            if res.rowcount != 1:
                self._explain_denial(conn, instance_uuid, 'reset_state',
                                     allowed)
            doomed = self._end_moves(conn, instance_uuid)
            if target == vm.ACTIVE:
                self._count_on_host(conn, before, ratios)
            self._preempt_log(conn, instance_uuid, target, now)
            after = dict(before, **values, doomed_hosts=doomed)
            self._accounted(conn, after, now)
            self._log_instant(conn, ctx, instance_uuid, 'reset_state',
                              before['vm_state'], target, now)
            return before, after
        return self.db.transaction(txn)

    def reconcile_state(self, ctx, instance_uuid, *, vm_state, power_seq,
                        target, why):
        """Reconcile's instant decision: vm_state -> ``target``.

        One conditional UPDATE: only while no task runs, the vm_state is
        still ``vm_state`` and no newer power report arrived (``power_seq``),
        so a user's request and a reconcile never both win. Returns
        ``(before, after)``, or None when something moved first.
        """
        if vm_state not in TABLE.allowed_from('reconcile', target):
            raise exception.InvalidState(
                field='reconcile from %s to' % vm_state, value=target,
                expected=', '.join(TABLE.targets('reconcile')))

        def txn(conn):
            now = self.clock()
            before = _one(conn, sa.select(I).where(I.c.uuid == instance_uuid))
            res = conn.execute(sa.update(I).where(
                I.c.uuid == instance_uuid, I.c.task_id.is_(None),
                I.c.vm_state == vm_state, I.c.power_seq == power_seq,
            ).values(vm_state=target, updated_at=now))
            if res.rowcount != 1:
                return None
            after = dict(before, vm_state=target, updated_at=now)
            self._accounted(conn, after, now)
            self._log_instant(conn, ctx, instance_uuid, 'reconcile', vm_state,
                              target, now, why)
            return before, after
        return self.db.transaction(txn)

    def count_actions(self, instance_uuid, *, action, since, message_prefix=''):
        """How many ``action`` tasks began since ``since`` (crash budget)."""
        query = sa.select(sa.func.count()).select_from(LOGT).where(
            LOGT.c.instance_uuid == instance_uuid, LOGT.c.action == action,
            LOGT.c.started_at >= since)
        if message_prefix:      # LIKE never matches a NULL message
            query = query.where(LOGT.c.message.like(message_prefix + '%'))
        return self.db.transaction(lambda conn: conn.execute(query).scalar(),
                                   readonly=True)

    # --- power reports (bottom-up) --------------------------------------------

    @staticmethod
    def _power_values(power, now):
        return {'power_state': states.normalize_power_state(power['power_state']),
                'power_reason': power.get('reason'),
                'power_seq': int(power['seq']), 'power_reported_at': now}

    def store_power_report(self, instance_uuid, *, host, state, seq,
                           reason=None):
        """Store what ``host``'s agent saw; ignored if older than the last.

        Accepted only for an instance placed on ``host``. Returns the stored
        instance, or None when the report was ignored.
        """
        power = {'power_state': state, 'reason': reason,
                 'seq': states.normalize_power_seq(seq)}
        if reason is not None and reason not in states.POWER_REASONS:
            raise exception.InvalidState(field='power reason', value=reason,
                                         expected=', '.join(states.POWER_REASONS))
        values = self._power_values(power, self.clock())
        return self.db.transaction(lambda conn: _one(conn, sa.update(I).where(
            I.c.uuid == instance_uuid, I.c.host == host,
            I.c.power_seq < power['seq']).values(**values).returning(*I.c)))

    # --- the action log ---------------------------------------------------------

    @staticmethod
    def _log_start(conn, ctx, instance_uuid, task_id, action, vm_state, now,
                   message=None, **ended):
        row = {'task_id': task_id, 'instance_uuid': instance_uuid,
               'action': action, 'user_id': ctx.user_id,
               'project_id': ctx.project_id, 'request_id': ctx.request_id,
               'started_at': now, 'result': states.RESULT_RUNNING,
               'vm_state_before': vm_state, 'message': message,
               'finished_at': None, 'vm_state_after': None}
        row.update(ended)
        _LOG_INSERT.run(conn, **row)

    @staticmethod
    def _log_end(conn, task_id, result, vm_state, message, now,
                 fault_code=None):
        if fault_code is not None:
            _LOG_END_FAULT.run(conn, task_id=task_id, now=now, result=result,
                               vm_state=vm_state, message=message or '',
                               fault_code=fault_code)
        elif message is None:
            _LOG_END.run(conn, task_id=task_id, now=now, result=result,
                         vm_state=vm_state)
        else:
            _LOG_END_SAYING.run(conn, task_id=task_id, now=now, result=result,
                                vm_state=vm_state, message=message)

    def _log_instant(self, conn, ctx, instance_uuid, action, before, after,
                     now, message=None):
        # One row, started and ended at once.
        self._log_start(conn, ctx, instance_uuid, new_uuid(), action, before,
                        now, message, finished_at=now,
                        result=states.RESULT_SUCCESS, vm_state_after=after)

    @staticmethod
    def _preempt_log(conn, instance_uuid, vm_state, now):
        _PREEMPT_LOG.run(conn, uuid=instance_uuid, now=now, vm_state=vm_state)

"""The task gateway: the one place where a conductor changes an instance's state.

Every flow (build, actions, delete, the reaper, the agents' results) goes
through a :class:`TaskGateway` method, which makes the conditional UPDATE
through :class:`common.db.api.StateDB` and then sends the notifications for
what changed: ``instance.update`` (old and new vm_state/task_state) on every
change, ``instance.<action>.start/end/error`` around every task.
"""

import logging

from common import actions
from common import exception
from common import metrics
from common.db import api as db_api

TABLE = actions.TABLE

LOG = logging.getLogger(__name__)

_SHOWN = ('uuid', 'name', 'project_id', 'user_id', 'host', 'flavor_name',
          'vcpus', 'memory_mb', 'disk_gb', 'image_ref', 'vm_state',
          'return_vm_state', 'task_state', 'task_id', 'power_state',
          'numa_cells')


check_owner = db_api.check_owner


def hard_delete_local(statedb, ctx, instance_uuid, check=None):
    """The hard delete's UPDATE, for a caller with database access.
    Returns ``(before, after)``; the owner is checked in its transaction,
    and then ``check`` (see :meth:`common.db.api.StateDB.hard_delete`)."""
    before, after = statedb.hard_delete(ctx, instance_uuid, check=check)
    metrics.task_ended(before, after, 'preempted')
    return before, after


def payload(inst, **extra):
    data = {key: inst.get(key) for key in _SHOWN}
    data.update(extra)
    return data


class TaskGateway:
    """Claims, ends and preempts tasks, and tells the world."""

    def __init__(self, statedb, notifier):
        self.db = statedb
        self.notifier = notifier

    # --- notifications -------------------------------------------------------

    def _notify_update(self, ctx, before, after):
        if (before.get('vm_state'), before.get('task_state')) == (
                after['vm_state'], after['task_state']):
            return
        self.notifier.info(ctx, 'instance.update', 'InstanceUpdatePayload',
                           payload(after, old_vm_state=before.get('vm_state'),
                                   old_task_state=before.get('task_state')))

    def _notify_action(self, ctx, action, phase, inst, **extra):
        _trace(ctx, inst)
        event = 'instance.%s.%s' % (action, phase)
        send = self.notifier.error if phase == 'error' else self.notifier.info
        send(ctx, event, 'InstanceActionPayload', payload(inst, **extra))

    # --- claim ---------------------------------------------------------------

    def create(self, ctx, values, **created):
        """A new instance, INITIALIZED, its build task claimed, its ports
        allocated, its server group joined (``created``: networks,
        default_network, server_group, as
        :meth:`common.db.api.StateDB.create_instance` takes them)."""
        inst = self.db.create_instance(ctx, values, **created)
        task_ctx = ctx.for_task(inst['task_id'])
        _trace(task_ctx, inst)
        LOG.info('Task build claimed for new instance %s (flavor %s)',
                 inst['uuid'], inst['flavor_name'])
        self._notify_update(task_ctx, {}, inst)
        self._notify_action(task_ctx, 'build', 'start', inst)
        metrics.task_started('build')
        return inst, task_ctx

    def claim(self, ctx, instance_uuid, action, message=None, *,
              flavor=None, owner_checked=False):
        """Claim ``action``; returns the instance and the task's context.
        ``message`` goes to the action log (never a secret); ``flavor``: a
        resize's new flavor, checked against the quota; ``owner_checked``:
        the caller read the instance and checked its owner already (the
        owner of an instance never changes)."""
        if not owner_checked:
            check_owner(ctx, self.db.get_instance(instance_uuid))
        inst = self.db.claim_task(ctx, instance_uuid, action,
                                  message=message, flavor=flavor)
        task_ctx = ctx.for_task(inst['task_id'])
        self.notify_claimed(task_ctx, dict(inst, task_state=None), inst,
                            action)
        return inst, task_ctx

    def notify_claimed(self, task_ctx, before, inst, action):
        _trace(task_ctx, inst)
        LOG.info('Task %s claimed on instance %s (%s)', action, inst['uuid'],
                 inst['vm_state'])
        self._notify_update(task_ctx, before, inst)
        self._notify_action(task_ctx, action, 'start', inst)
        metrics.task_started(action)

    # --- during and at the end ---------------------------------------------------

    def progress(self, task_ctx, instance_uuid, *, host=None, step=None,
                 percent=None):
        self.db.update_progress(task_ctx, instance_uuid, step=step,
                                percent=percent, host=host)

    def finish(self, task_ctx, instance_uuid, *, derive, host=None,
               power=None):
        """End the task successfully; ``derive`` as
        :meth:`common.db.api.StateDB.finish_task` takes it. Returns
        ``(before, after)``."""
        before, after = self.db.finish_task(
            task_ctx, instance_uuid, power=power, host=host, derive=derive)
        _trace(task_ctx, after)
        LOG.info('Task %s on instance %s finished: %s -> %s',
                 before['task_action'], instance_uuid, before['vm_state'],
                 after['vm_state'])
        self._notify_update(task_ctx, before, after)
        self._notify_action(task_ctx, before['task_action'], 'end', after)
        metrics.task_ended(before, after, 'finished')
        return before, after

    def fail(self, task_ctx, instance_uuid, *, error, rolled_back, host=None,
             power=None, settle=(), fault_code=None):
        # The lines below, and a caller's (fail_quietly, the reaper), are
        # this task's, whatever the thread worked on before.
        _trace(task_ctx, {'uuid': instance_uuid})
        before, after = self.db.fail_task(
            task_ctx, instance_uuid, error=error, rolled_back=rolled_back,
            power=power, host=host, settle=settle, fault_code=fault_code)
        LOG.warning('Task %s (%s) on instance %s failed%s: %s',
                    task_ctx.task_id, before['task_action'], instance_uuid,
                    '' if rolled_back else ' without rollback', error)
        self._notify_update(task_ctx, before, after)
        self._notify_action(task_ctx, before['task_action'], 'error', after,
                            error=error, rolled_back=rolled_back)
        metrics.task_ended(before, after, 'failed')
        return after

    def bury(self, task_ctx, instance_uuid, *, reason, use_pending):
        before, after = self.db.bury(task_ctx, instance_uuid, reason=reason,
                                     use_pending=use_pending)
        LOG.warning('Instance %s buried as %s: %s', instance_uuid,
                    after['vm_state'], reason)
        self._notify_update(task_ctx, before, after)
        self._notify_action(task_ctx, before['task_action'], 'error', after,
                            error=reason)
        metrics.task_ended(before, after, 'failed')
        return after

    def fail_quietly(self, task_ctx, instance_uuid, *, error, rolled_back,
                     settle=()):
        """:meth:`fail`, for callers that race others to end the task (the
        reaper, a lost task): a task already ended is not an error."""
        try:
            return self.fail(task_ctx, instance_uuid, error=error,
                             rolled_back=rolled_back, settle=settle)
        except (exception.TaskPreempted, exception.InstanceNotFound) as err:
            LOG.info('Task %s already ended: %s', task_ctx.task_id, err)
            return None

    # --- preempting database-only actions --------------------------------------

    def hard_delete(self, ctx, instance_uuid):
        # the owner is checked in the delete's own transaction
        before, after = self.db.hard_delete(ctx, instance_uuid)
        self.notify_deleted(ctx, before, after)
        metrics.task_ended(before, after, 'preempted')
        return after

    def notify_reconciled(self, ctx, before, after):
        self._notify_update(ctx, before, after)

    def notify_renamed(self, ctx, before, after):
        """``instance.update`` with Nova's ``old_display_name``."""
        if before['name'] != after['name']:
            self.notifier.info(ctx, 'instance.update', 'InstanceUpdatePayload',
                               payload(after, old_display_name=before['name']))

    def notify_deleted(self, ctx, before, after):
        self._notify_update(ctx, before, after)
        self._notify_action(ctx, 'delete', 'end', after)

    def reset_state(self, ctx, instance_uuid, state, *,
                    ratios=(1.0, 1.0, 1.0)):
        if not ctx.is_admin:
            raise exception.Forbidden(action='reset_state (admin only)')
        before, after = self.db.reset_state(ctx, instance_uuid, state,
                                            ratios=ratios)
        self._notify_update(ctx, before, after)
        self._notify_action(ctx, 'reset_state', 'end', after)
        metrics.task_ended(before, after, 'preempted')
        return after


def _trace(ctx, inst):
    """Log lines that follow, in this thread and (the context travels
    with the task) on the agent, carry the request_id, the task_id and the
    instance's uuid (oslo.log's ``[instance: ...]``)."""
    ctx.resource_uuid = inst['uuid']
    ctx.update_store()


def timeout_rolls_back(action):
    """Whether a task that vanished (its agent lost it, or it timed out)
    ends as rolled back (vm_state unchanged, reconcile then looks at the
    domain) or, where the table says failure means ERROR, as ERROR."""
    return TABLE.action(action).on_failure == actions.ROLLBACK_OR_ERROR

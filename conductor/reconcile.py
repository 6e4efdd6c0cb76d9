"""Reconcile: apply the decision table to what the agents report.

Only for instances with no task running, and always through a conditional
UPDATE that re-checks ``task_id IS NULL``, the vm_state and the power_seq
the decision was made on (DESIGN.md section 5): a user's request and a
reconcile can never both win, and a stale report never acts. Every decision
is a task (an instant one for vm_state-only decisions) in the action log,
with the reason, and an ``instance.power_reconcile`` notification.
"""

import datetime
import logging

from common import context as tcontext
from common import exception
from common import metrics
from common import reconcile as rtable
from common import states
from conductor import gateway as gw

LOG = logging.getLogger(__name__)
CRASH_PREFIX = 'crash restart'

# A policy names what a per-instance choice turns into.
_USER_SHUTDOWN = {'stop': rtable.STOP, 'restart': 'restart',
                  'delete': rtable.DELETE}
_CRASH = {'restart': 'restart', 'stop': rtable.STOP, 'error': rtable.ERROR}


class _Moved(Exception):
    """The instance changed since reconcile decided: nothing to do."""


class Reconciler:
    def __init__(self, *, gateway, flows, conf):
        self.gateway = gateway
        self.db = gateway.db
        self.flows = flows
        self.conf = conf

    def consider(self, inst):
        """Decide for one instance as stored; True if its domain must be
        destroyed (the caller tells the agent)."""
        if inst['task_id'] is not None:
            return False            # a task runs: store only (bottom-up)
        if (inst['vm_state'] == states.vm.ERROR and inst['host']
                and inst['power_state'] != states.power.NOSTATE
                and self.db.count_running_error(inst['uuid'])):
            LOG.warning('Instance %s is ERROR and its domain is on host %s: '
                        'counted there again (whatever runs on a host is '
                        'counted there)', inst['uuid'], inst['host'])
        rule = rtable.TABLE.decide(inst['vm_state'], inst['power_state'],
                                   inst['power_reason'])
        decision, why = self._resolve(inst, rule)
        metrics.reconcile_decision(rule.decision, decision)
        if decision == rtable.DESTROY:
            return True
        if decision in (rtable.STOP, rtable.ERROR):
            self._set_state(inst, decision, why)
        elif decision == 'restart':
            self._run_task(inst, 'power_on', why)
        elif decision == rtable.POWER_OFF:
            self._run_task(inst, 'power_off', why)
        elif decision == rtable.DELETE:
            self._delete(inst, why)
        return False

    def _resolve(self, inst, rule):
        """Turn policy rows into a concrete decision, with the reason."""
        decision, why = rule.decision, rule.why
        if decision == rtable.USER_SHUTDOWN:
            decision = _USER_SHUTDOWN[inst['user_shutdown_policy']]
        elif decision == rtable.CRASH:
            decision = _CRASH[inst['crash_policy']]
            if decision == 'restart':
                decision, why = self._crash_budget(inst, why)
        return decision, why

    def _crash_budget(self, inst, why):
        window = self.conf.reconcile.crash_restart_window
        limit = self.conf.reconcile.crash_restart_limit
        since = self.db.clock() - datetime.timedelta(seconds=window)
        used = self.db.count_actions(inst['uuid'], action='power_on',
                                     since=since, message_prefix=CRASH_PREFIX)
        if used >= limit:
            return rtable.ERROR, ('%s %d times in %d s, over the restart '
                                  'budget of %d' % (why, used + 1, window,
                                                    limit))
        return 'restart', '%s: %s (%d of %d in %d s)' % (
            CRASH_PREFIX, why, used + 1, limit, window)

    def _notify(self, ctx, inst, decision, why):
        self.gateway.notifier.info(
            ctx, 'instance.power_reconcile', 'InstanceReconcilePayload',
            gw.payload(inst, decision=decision, reason=why,
                       power_reason=inst.get('power_reason')))

    def _set_state(self, inst, decision, why):
        target = states.vm.STOPPED if decision == rtable.STOP else states.vm.ERROR
        ctx = tcontext.get_admin_context()
        try:
            done = self.db.reconcile_state(
                ctx, inst['uuid'], vm_state=inst['vm_state'],
                power_seq=inst['power_seq'], target=target, why=why)
        except exception.InvalidState:
            LOG.error('Reconcile table and action table disagree on %s -> '
                      '%s for %s', inst['vm_state'], target, inst['uuid'])
            return
        if done is None:
            return          # a task or a newer report came first
        before, after = done
        LOG.info('Reconcile: instance %s %s -> %s: %s', inst['uuid'],
                 before['vm_state'], target, why)
        self.gateway.notify_reconciled(ctx, before, after)
        self._notify(ctx, after, decision, why)

    def _delete(self, inst, why):
        """user_shutdown policy ``delete``: the hard delete a user's
        DELETE makes (quota and billing freed in its transaction), taken
        only while the instance is as decided on (no task, same vm_state,
        no newer report), then the domain destroyed."""
        ctx = tcontext.get_admin_context()

        def unchanged(row):
            if (row['task_id'] is not None
                    or row['vm_state'] != inst['vm_state']
                    or row['power_seq'] != inst['power_seq']):
                raise _Moved()
        why = '%s; user_shutdown policy delete' % why
        try:
            before, after = self.db.hard_delete(ctx, inst['uuid'],
                                                check=unchanged, message=why)
        except _Moved:
            return          # a task or a newer report came first
        LOG.info('Reconcile: instance %s hard-deleted: %s', inst['uuid'], why)
        self.gateway.notify_deleted(ctx, before, after)
        self._notify(ctx, after, rtable.DELETE, why)
        metrics.task_ended(before, after, 'preempted')
        self.flows.request_destroy(ctx, after)

    def _run_task(self, inst, action, why):
        ctx = tcontext.get_admin_context()
        claimed = self.db.claim_task(ctx, inst['uuid'], action,
                                     power_seq=inst['power_seq'], message=why)
        if claimed is None:
            return
        task_ctx = ctx.for_task(claimed['task_id'])
        LOG.info('Reconcile: instance %s: %s (%s, task %s)', inst['uuid'],
                 why, action, claimed['task_id'])
        self.gateway.notify_claimed(task_ctx, inst, claimed, action)
        self._notify(task_ctx, claimed, action, why)
        self.flows.send(task_ctx, claimed['host'], claimed, action, {})

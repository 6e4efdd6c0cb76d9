"""The conductor's RPC endpoint: thin methods over the flows and results.

The target version must match :data:`conductor.rpcapi.VERSION` (a test
checks). Every method takes the caller's RequestContext first; for the
agents' methods it carries the task_id of the task reported on.
"""

import functools
import logging

from common import exception
from common import rpc
from conductor import accounts
from conductor import consoles
from conductor import evacuate
from conductor import gateway as gw
from conductor import results as results_mod
from conductor import rpcapi

LOG = logging.getLogger(__name__)
_expected = rpc.expected_exceptions(exception.TristateError)
_UNSAID = object()      # an argument an older caller does not send


def _agent_task_report(method):
    """An agent's word on a task: it must name the task (the context's
    task_id) and be about an instance on its own host. What fails either
    check is refused, and logged as a security event."""
    @functools.wraps(method)
    def guarded(self, ctx, host, instance_uuid, *args, **kwargs):
        if not ctx.task_id:
            LOG.warning('SECURITY: %s from host %s on instance %s refused: '
                        'its context names no task_id', method.__name__,
                        host, instance_uuid)
            raise exception.Forbidden(
                action='%s without a task_id in the context' % method.__name__)
        try:
            return method(self, ctx, host, instance_uuid, *args, **kwargs)
        except exception.Forbidden as err:
            LOG.warning('SECURITY: %s from host %s refused: %s',
                        method.__name__, host, err)
            raise
    return guarded


class ConductorManager:
    target = rpc.Target(version=rpcapi.VERSION)

    def __init__(self, *, flows, results, gateway):
        self.flows = flows
        self.results = results
        self.gateway = gateway
        self.db = gateway.db
        self.consoles = consoles.Consoles(db=self.db, compute=flows.compute,
                                          conf=flows.conf)
        self.evacuations = evacuate.Evacuations(flows)

    # --- API tier ----------------------------------------------------------------

    @_expected
    def create_instance(self, ctx, name, flavor, image_ref, policies,
                        reservation_id=None, attributes=None,
                        force_host=None, networks=None, admin_pass=None):
        return self.flows.create(ctx, name=name, flavor=flavor,
                                 image_ref=image_ref, policies=policies,
                                 reservation_id=reservation_id,
                                 attributes=attributes,
                                 force_host=force_host, networks=networks,
                                 admin_pass=admin_pass)

    @_expected
    def run_action(self, ctx, instance_uuid, action, params):
        if action in evacuate.ACTIONS:          # 1.15
            return self.evacuations.run(ctx, instance_uuid, action, params)
        return self.flows.run_action(ctx, instance_uuid, action, params)

    @_expected
    def delete_instance(self, ctx, instance_uuid):
        return self.flows.delete(ctx, instance_uuid)

    @_expected
    def instance_deleted(self, ctx, instance_uuid, old_vm_state=None,
                         old_task_state=None, host=_UNSAID, doomed_hosts=()):
        """A client deleted in the database itself; notify and clean up.
        ``host`` (1.5): where the instance was placed; with it, and no
        notification to build, the row is not read again.
        ``doomed_hosts`` (1.6): the destinations of a move the delete
        preempted, told to destroy their copy too."""
        self.consoles.forget(instance_uuid)
        if host is not _UNSAID and not getattr(self.gateway.notifier,
                                               'enabled', True):
            self.flows.destroy_everywhere(
                ctx, {'uuid': instance_uuid, 'host': host}, doomed_hosts)
            if host is None:      # maybe offloaded: its snapshot goes
                self._forget_snapshot(self.db.get_instance(instance_uuid))
            return
        inst = self.db.get_instance(instance_uuid)
        self._forget_snapshot(inst)
        self.gateway.notify_deleted(ctx, {'vm_state': old_vm_state,
                                          'task_state': old_task_state}, inst)
        self.flows.destroy_everywhere(ctx, inst, doomed_hosts)

    def _forget_snapshot(self, inst):
        """A deleted shelved instance's snapshot goes (the periodic
        sweep deletes it if this is lost)."""
        self.flows.shelving.forget_snapshot(inst.get('shelved_image_id'),
                                            inst['uuid'])

    @_expected
    def reset_state(self, ctx, instance_uuid, state):
        return self.flows.reset_state(ctx, instance_uuid, state)

    @_expected
    def update_policies(self, ctx, instance_uuid, policies):
        return self.flows.update_policies(ctx, instance_uuid, policies)

    @_expected
    def update_attributes(self, ctx, instance_uuid, changes):
        return self.flows.update_attributes(ctx, instance_uuid, changes)

    @_expected
    def get_diagnostics(self, ctx, instance_uuid):
        return self.flows.get_diagnostics(ctx, instance_uuid)

    @_expected
    def rename_instance(self, ctx, instance_uuid, name):
        return self.flows.rename(ctx, instance_uuid, name)

    @_expected
    def get_instance(self, ctx, instance_uuid):
        return gw.check_owner(ctx, self.db.get_instance(instance_uuid))

    @_expected
    def list_instances(self, ctx, all_projects=False):
        if all_projects and not ctx.is_admin:
            raise exception.Forbidden(action='listing all projects (admin only)')
        project = None if all_projects else ctx.project_id
        return self.db.list_instances(project_id=project)

    @_expected
    def list_hosts(self, ctx):
        if not ctx.is_admin:
            raise exception.Forbidden(action='listing hosts (admin only)')
        alive_since = self.flows.scheduler.alive_since()
        return [dict(h, up=bool(h['last_heartbeat'] and not h['forced_down']
                                and h['last_heartbeat'] >= alive_since))
                for h in self.db.list_hosts()]

    @_expected
    def list_actions(self, ctx, instance_uuid):
        gw.check_owner(ctx, self.db.get_instance(instance_uuid))
        return self.db.list_actions(instance_uuid)

    @_expected
    def get_quotas(self, ctx, project_id):
        return accounts.get_quotas(self.db, ctx, project_id)

    @_expected
    def update_quotas(self, ctx, project_id, values):
        return accounts.update_quotas(self.db, ctx, project_id, values)

    @_expected
    def tenant_usage(self, ctx, start, end, project_id=None):
        return accounts.tenant_usage(self.db, ctx, start=start, end=end,
                                     project_id=project_id)

    @_expected
    def tenant_usage_page(self, ctx, start, end, project_id=None,
                          marker=None, limit=None):
        return accounts.tenant_usage_page(
            self.db, ctx, start=start, end=end, project_id=project_id,
            marker=marker, limit=limit)

    @_expected
    def get_console_output(self, ctx, instance_uuid):
        return self.consoles.output(ctx, instance_uuid)

    @_expected
    def create_console(self, ctx, instance_uuid, console_type):
        return self.consoles.create_token(ctx, instance_uuid, console_type)

    @_expected
    def consume_console_token(self, ctx, token):
        return self.consoles.consume_token(ctx, token)

    @_expected
    def consoles_alive(self, ctx, instance_uuids):
        return self.consoles.alive(ctx, instance_uuids)

    # --- agents --------------------------------------------------------------------

    @_expected
    def heartbeat(self, ctx, host, capacity, started_at, lost_tasks,
                  service_version=None, power=None):
        # A malformed report is refused before the heartbeat is stored.
        carried = None if power is None else results_mod.carried_power(power)
        return self.results.heartbeat(ctx, host=host, capacity=capacity,
                                      started_at=started_at,
                                      lost_tasks=lost_tasks,
                                      version=service_version, power=carried)

    @_expected
    @_agent_task_report
    def task_progress(self, ctx, host, instance_uuid, step, percent):
        self.results.progress(ctx, host=host, instance_uuid=instance_uuid,
                              step=step, percent=percent)

    @_expected
    @_agent_task_report
    def migration_disk_sent(self, ctx, host, instance_uuid, disk):
        """1.16: :meth:`conductor.migrate.ColdMoves.disk_sent`."""
        return self.flows.cold.disk_sent(ctx, host=host,
                                         instance_uuid=instance_uuid,
                                         disk=disk)

    @_expected
    @_agent_task_report
    def migration_prepare_dest(self, ctx, host, instance_uuid, carried):
        """1.18: :meth:`conductor.flows.Flows.prepare_destination`."""
        return self.flows.prepare_destination(
            ctx, host=host, instance_uuid=instance_uuid, carried=carried)

    @_expected
    @_agent_task_report
    def task_finished(self, ctx, host, instance_uuid, power, values):
        self.results.finished(ctx, host=host, instance_uuid=instance_uuid,
                              power=power, values=values)

    @_expected
    @_agent_task_report
    def task_failed(self, ctx, host, instance_uuid, error, rolled_back, power,
                    fault_code=None):
        self.results.failed(ctx, host=host, instance_uuid=instance_uuid,
                            error=error, rolled_back=rolled_back, power=power,
                            fault_code=fault_code)

    @_expected
    def power_report(self, ctx, host, reports, full):
        return self.results.power_report(ctx, host=host, reports=reports,
                                         full=full)

"""Client side of the conductor's RPC API, for the API tier and the agents.

Wrap it, do not bypass it: every call the rest of the tree makes to a
conductor is a method here, with the version it needs.

Version history:

* 1.0 - Initial version: create_instance, run_action, delete_instance,
  instance_deleted, reset_state, get_instance, list_instances, list_hosts,
  list_actions, update_policies (API tier); heartbeat, task_progress, task_finished,
  task_failed, power_report (agents).
"""

from common import exception

VERSION = '1.0'


class ConductorAPI:
    """Calls the conductors on ``[conductor] topic``.

    ``statedb`` is given by callers that have database credentials (the API
    tier, ``tristate-all``): :meth:`delete_instance` then makes the hard
    delete's UPDATE itself and never waits for the bus (DESIGN.md section 4).
    Agents have no database access and pass nothing.
    """

    def __init__(self, bus, conf, *, statedb=None, timeout=None):
        self.statedb = statedb
        self.client = bus.client(conf.conductor.topic, VERSION,
                                 version_cap=conf.upgrade_levels.conductor,
                                 timeout=timeout)

    def _call(self, ctx, method, **kwargs):
        try:
            return self.client.prepare().call(ctx, method, **kwargs)
        except exception.TristateError as err:
            # oslo.messaging appends the server's traceback to str(err);
            # callers get the same error, with its message alone.
            raise exception.from_dict(err.to_dict()) from None

    # --- API tier --------------------------------------------------------------

    def create_instance(self, ctx, *, name, flavor, image_ref, policies=None):
        return self._call(ctx, 'create_instance', name=name, flavor=flavor,
                          image_ref=image_ref, policies=policies or {})

    def run_action(self, ctx, instance_uuid, action, params=None):
        return self._call(ctx, 'run_action', instance_uuid=instance_uuid,
                          action=action, params=params or {})

    def delete_instance(self, ctx, instance_uuid):
        """Hard delete. With database access: the UPDATE here, then a
        best-effort request for the host's cleanup that never fails the
        delete. Without: one call to a conductor."""
        if self.statedb is None:
            return self._call(ctx, 'delete_instance',
                              instance_uuid=instance_uuid)
        from conductor import gateway
        before, after = gateway.hard_delete_local(self.statedb, ctx,
                                                  instance_uuid)
        try:
            # retry=0: a cast retries forever by default, which would hold
            # the delete until the broker is back.
            self.client.prepare(retry=0).cast(
                ctx, 'instance_deleted', instance_uuid=instance_uuid,
                old_vm_state=before['vm_state'],
                old_task_state=before['task_state'])
        except Exception:        # bus down: the agent's report cleans up later
            gateway.LOG.warning('Could not request cleanup of deleted '
                                'instance %s; the next power report will',
                                instance_uuid, exc_info=True)
        return after

    def reset_state(self, ctx, instance_uuid, state):
        return self._call(ctx, 'reset_state', instance_uuid=instance_uuid,
                          state=state)

    def update_policies(self, ctx, instance_uuid, policies):
        """Set ``user_shutdown`` and/or ``crash`` of one instance."""
        return self._call(ctx, 'update_policies', instance_uuid=instance_uuid,
                          policies=policies)

    def get_instance(self, ctx, instance_uuid):
        return self._call(ctx, 'get_instance', instance_uuid=instance_uuid)

    def list_instances(self, ctx, *, all_projects=False):
        return self._call(ctx, 'list_instances', all_projects=all_projects)

    def list_hosts(self, ctx):
        return self._call(ctx, 'list_hosts')

    def list_actions(self, ctx, instance_uuid):
        return self._call(ctx, 'list_actions', instance_uuid=instance_uuid)

    # --- agents ----------------------------------------------------------------

    def heartbeat(self, ctx, *, host, capacity, started_at, lost_tasks=()):
        return self._call(ctx, 'heartbeat', host=host, capacity=capacity,
                          started_at=started_at, lost_tasks=list(lost_tasks))

    def task_progress(self, ctx, *, host, instance_uuid, step=None,
                      percent=None):
        return self._call(ctx, 'task_progress', host=host,
                          instance_uuid=instance_uuid, step=step,
                          percent=percent)

    def task_finished(self, ctx, *, host, instance_uuid, power=None,
                      values=None):
        return self._call(ctx, 'task_finished', host=host,
                          instance_uuid=instance_uuid, power=power,
                          values=values or {})

    def task_failed(self, ctx, *, host, instance_uuid, error, rolled_back,
                    power=None):
        return self._call(ctx, 'task_failed', host=host,
                          instance_uuid=instance_uuid, error=error,
                          rolled_back=rolled_back, power=power)

    def power_report(self, ctx, *, host, reports, full=False):
        return self._call(ctx, 'power_report', host=host, reports=reports,
                          full=full)

"""Client side of the compute agent's RPC API, used by the conductor.

Each agent listens on ``[compute] topic`` with ``server=<its host>``; every
message is a cast addressed to one host. The task's RequestContext, with its
task_id, rides along; the agent reports back through the conductor's API.

Version history:

* 1.0 - Initial version: run_task, destroy_domain.
"""

from common import metrics
from common import rpc

VERSION = '1.0'


class ComputeAPI:
    def __init__(self, bus, conf):
        self.client = bus.client(conf.compute.topic, VERSION,
                                 version_cap=conf.upgrade_levels.compute)

    def run_task(self, ctx, *, host, instance, action, params=None):
        """Run one task of the action table on ``host``; results come back
        as task_progress/task_finished/task_failed calls."""
        self._cast(ctx, host, 'run_task', instance=instance, action=action,
                   params=params or {})

    def destroy_domain(self, ctx, *, host, instance_uuid):
        """Destroy a domain whose instance is gone (best effort)."""
        self._cast(ctx, host, 'destroy_domain', instance_uuid=instance_uuid)

    def _cast(self, ctx, host, method, **kwargs):
        try:
            self.client.prepare(server=host).cast(ctx, method, **kwargs)
        except rpc.MessagingException as err:
            metrics.rpc_error(method, err)
            raise

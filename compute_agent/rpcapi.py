"""Client side of the compute agent's RPC API, used by the conductor.

Each agent listens on ``[compute] topic`` with ``server=<its host>``; every
message is addressed to one host. ``run_task`` is a call the agent answers
as soon as it has accepted the task (see :mod:`conductor.delivery`);
``destroy_domain`` is a cast. The task's RequestContext, with its
task_id, rides along; the agent reports back through the conductor's API.

Version history:

* 1.0 - Initial version: run_task, destroy_domain.
* 1.1 - run_task answers ``accepted`` or ``duplicate`` once the task is in
  the agent's journal, and runs a task received twice only once.
* 1.3 - get_console_output (the end of a guest's console log, bounded by
  ``max_bytes``) and get_console_endpoint (where its serial console's TCP
  listener is), both calls answered at once, no task (issue 24).
* 1.4 - get_diagnostics (a call): the driver's diagnostics of one domain
  (Nova's server diagnostics), None when the host has no such domain.
* 1.6 - prepare_live_migration (a call, on a live migration's
  destination before the task goes to the source): what the driver made
  ready there (:func:`compute_agent.tasks.prepare_incoming`).
* 1.7 - run_task's build and rebuild params may carry ``admin_pass``
  (issue 24: written into the config drive's meta_data.json, never kept);
  capped below 1.7 it is not sent (logged, without the password: the
  guest gets none).
* 1.8 - receive_migration (a call, on a cold migration's destination once
  the source's disk is in the image store): fetch it, check its SHA-256,
  build the domain on it (:mod:`compute_agent.coldmove`).
* 1.9 - run_task's live_migrate params may say ``prepare`` instead of
  carrying ``incoming``: the source asks for the destination's prepare in
  its task (conductor RPC 1.18), so the API request no longer waits for
  it (issue 25). Capped below 1.9 the conductor prepares before it sends
  the task, as before.
* 1.10, 1.11 - not used (numbers handed out to work done in parallel).
* 1.12 - run_task takes the actions ``shelve``, ``shelve_offload`` and
  ``unshelve`` (issue 22: Nova's shelving); an agent capped below 1.12 is
  not sent them (the conductor refuses the request first: :meth:`can_send`).
* 1.13 - run_task takes the action ``set_security_groups`` (issue 22: the
  guest's network links up in the ``default`` group, down in none); an
  agent capped below 1.13 is not sent it (the conductor refuses first).
"""

import logging

from common import exception
from common import metrics
from common import rpc

LOG = logging.getLogger(__name__)
VERSION = '1.13'
# How often a best-effort cast is retried with the broker unreachable before
# it fails (oslo.messaging's default, None, retries for ever).
BEST_EFFORT_RETRY = 1


# run_task's actions of 1.12.
SHELVING = frozenset({'shelve', 'shelve_offload', 'unshelve'})
# run_task's actions of 1.13, and the version each set needs.
SECURITY_GROUPS = frozenset({'set_security_groups'})


class ComputeAPI:
    def __init__(self, bus, conf):
        self.client = bus.client(conf.compute.topic, VERSION,
                                 version_cap=conf.upgrade_levels.compute)

    def can_send(self, version):
        """Whether calls of ``version`` pass ``[upgrade_levels]``."""
        return self.client.can_send_version(version)

    def run_task(self, ctx, *, host, instance, action, params=None,
                 timeout=None):
        """Run one task of the action table on ``host``; results come back
        as task_progress/task_finished/task_failed calls. Returns the
        agent's answer (``accepted``/``duplicate``), or None when capped at
        1.0 (a cast: nothing tells whether it arrived). Raises
        MessagingTimeout when no answer came within ``timeout`` seconds."""
        params = params or {}
        version = '1.1'
        for needed, actions in (('1.12', SHELVING),
                                ('1.13', SECURITY_GROUPS)):
            if action in actions:
                if not self.client.can_send_version(needed):
                    raise exception.ServiceUnavailable(
                        reason='%s needs compute agent RPC API %s and '
                               '[upgrade_levels] compute caps it at %s'
                               % (action, needed, self.client.version_cap))
                version = needed
        if 'admin_pass' in params:
            if self.client.can_send_version('1.7'):
                version = '1.7'
            else:
                LOG.warning('The %s task of instance %s goes without its '
                            'admin password: [upgrade_levels] compute caps '
                            'compute agent RPC below 1.7', action,
                            instance.get('uuid'))
                params = {k: v for k, v in params.items()
                          if k != 'admin_pass'}
        if params.get('prepare'):
            version = '1.9'
        kwargs = {'instance': instance, 'action': action, 'params': params}
        if not self.client.can_send_version('1.1'):
            return self._cast(ctx, host, 'run_task', **kwargs)
        try:
            return self.client.prepare(server=host, version=version,
                                       timeout=timeout).call(
                ctx, 'run_task', **kwargs)
        except rpc.MessagingException as err:
            metrics.rpc_error('run_task', err)
            raise

    def prepares_in_task(self):
        """1.9: whether a live migration's source may ask for its
        destination's prepare itself (``params['prepare']``)."""
        return self.client.can_send_version('1.9')

    def get_diagnostics(self, ctx, *, host, instance_uuid, timeout=None):
        """1.4: the diagnostics of ``instance_uuid``'s domain on
        ``host`` (see ComputeDriver.get_diagnostics), None when there is
        none, ``{'error': why}`` when the driver could not read them."""
        return self._call(ctx, host, 'get_diagnostics', '1.4', timeout,
                          needs='server diagnostics need',
                          instance_uuid=instance_uuid)

    def prepare_live_migration(self, ctx, *, host, instance, params,
                               timeout=None):
        """1.6: have ``host`` ready to receive ``instance`` (a task
        payload) by live migration; what the source's driver needs, {}
        when the destination's driver needs nothing. None when capped
        below 1.6 (a libvirt source then refuses the move)."""
        if not self.client.can_send_version('1.6'):
            return None
        return self._call(ctx, host, 'prepare_live_migration', '1.6',
                          timeout, instance=instance, params=params)

    def receive_migration(self, ctx, *, host, instance, params,
                          timeout=None):
        """1.8: have ``host`` build ``instance``'s domain on the disk a
        cold move's source put in the image store (``params``: image,
        image_id, sha256, size, flavor, start, ports); raises its failure."""
        return self._call(ctx, host, 'receive_migration', '1.8', timeout,
                          needs='a cold migration needs', instance=instance,
                          params=params)

    def destroy_domain_and_wait(self, ctx, *, host, instance_uuid,
                                timeout=None):
        """Destroy a domain and answer once it is gone (a cross-host
        revert: the destination's copy stops before the source's starts).
        The same method as :meth:`destroy_domain`, called instead of cast
        (every agent answers it: 1.0); raises what the agent raised, or
        MessagingTimeout."""
        return self._call(ctx, host, 'destroy_domain', '1.0', timeout,
                          instance_uuid=instance_uuid)

    def destroy_domain(self, ctx, *, host, instance_uuid):
        """Destroy a domain whose instance is gone (best effort: with the
        broker away it fails after one retry instead of waiting for it; the
        agent's next power report asks again)."""
        self._cast(ctx, host, 'destroy_domain', instance_uuid=instance_uuid,
                   retry=BEST_EFFORT_RETRY)

    def get_console_output(self, ctx, *, host, instance_uuid, max_bytes,
                           timeout=None):
        """1.3: the end of the guest's console log as text (at most
        ``max_bytes`` bytes of it), or None when it has none."""
        return self._console_call(ctx, host, 'get_console_output', timeout,
                                  instance_uuid=instance_uuid,
                                  max_bytes=max_bytes)

    def get_console_endpoint(self, ctx, *, host, instance_uuid,
                             timeout=None):
        """1.3: ``{'host', 'port'}`` of the guest's serial console TCP
        listener, or None."""
        return self._console_call(ctx, host, 'get_console_endpoint', timeout,
                                  instance_uuid=instance_uuid)

    def _console_call(self, ctx, host, method, timeout, **kwargs):
        return self._call(ctx, host, method, '1.3', timeout,
                          needs='consoles need', **kwargs)

    def _call(self, ctx, host, method, version, timeout, needs=None,
              **kwargs):
        """Call ``method`` of ``version`` on ``host``'s agent; with
        ``needs`` (what the call is for, and its verb), refused as ServiceUnavailable
        when ``[upgrade_levels]`` caps below ``version``."""
        if needs and not self.client.can_send_version(version):
            raise exception.ServiceUnavailable(
                reason='%s compute agent RPC API %s and [upgrade_levels] '
                       'compute caps it at %s'
                       % (needs, version, self.client.version_cap))
        try:
            return self.client.prepare(server=host, version=version,
                                       timeout=timeout).call(
                ctx, method, **kwargs)
        except rpc.MessagingException as err:
            metrics.rpc_error(method, err)
            raise

    def _cast(self, ctx, host, method, retry=None, **kwargs):
        try:
            # Both casts exist since 1.0: an agent capped there takes them.
            self.client.prepare(server=host, version='1.0',
                                retry=retry).cast(ctx, method, **kwargs)
        except rpc.MessagingException as err:
            metrics.rpc_error(method, err)
            raise

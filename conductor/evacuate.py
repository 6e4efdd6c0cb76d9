"""Evacuation of a dead host (issue 25; Nova's ``evacuate`` server action).

Allowed only when the instance's host is **forced down** (an admin's
statement that it is fenced: ``os-services`` ``forced_down``) **and** its
agent is silent (no heartbeat within ``[conductor] service_down_time``);
otherwise a 409 that says which of the two is missing. A live agent could
still run the guest: rebuilding it elsewhere would run it twice.

The flow: the table's claim (``evacuate``, or ``evacuate_stopped`` from
Nova's 2.95), a destination from the scheduler (the source excluded), the
move recorded with the
allocation (``migrations``, ``evacuation``), the instance placed there
(:meth:`common.db.evacuations.EvacuationsMixin.place_evacuated`) and a
build sent to its agent: the guest is spawned again **from its image**,
with the same ports (MAC and addresses). Whatever was on the source's
local disk is lost. A stopped guest (or any, with ``evacuate_stopped``) is
powered off once spawned.

A host the admin names is Nova's at each microversion: through the
scheduler's filters (from 2.29 without ``force``, and from 2.68 where
``force`` is gone), or with ``force`` (2.29-2.67; before 2.29 every named
host, as Nova's API passes it) without the scheduler: a disabled host is
then taken, as Nova takes it; its room is still counted (Nova claims it
in Placement first) and its agent must be up. A named host that cannot
take the server is refused at once (409, naming why: down, disabled
without force, or short of what the flavor needs), the task ended rolled
back, nothing changed; Nova answers 200 and fails later in its conductor.
With no host named, "no valid host" ends the task as before (the action
log says why; the request answered).

The source's copy is destroyed when its agent comes back, from the record
(:mod:`common.db.evacuations`, :meth:`conductor.results.Results.power_report`).
"""

import logging

from common import exception
from common import flavors
from common import states
from common.db import evacuations
from conductor import gateway as gw

LOG = logging.getLogger(__name__)
TABLE = gw.TABLE

ACTIONS = frozenset({'evacuate', 'evacuate_stopped'})
# Parameters: name -> (type, required).
PARAMS = {'host': (str, False), 'force': (bool, False)}


def validate_params(action, params):
    unknown = sorted(set(params) - set(PARAMS))
    if unknown:
        raise exception.Invalid(reason='%s takes %s; unexpected %s' % (
            action, ', '.join(sorted(PARAMS)), ', '.join(unknown)))
    for name, (kind, _required) in PARAMS.items():
        if name in params and type(params[name]) is not kind:
            raise exception.Invalid(reason='%s parameter %r must be %s, not '
                                    '%r' % (action, name, kind.__name__,
                                            params[name]))
    if params.get('force') and not params.get('host'):
        raise exception.Invalid(reason="Can't force to a non-provided "
                                       "destination")


class Evacuations:
    """Runs ``evacuate`` and ``evacuate_stopped`` for the conductor's
    ``run_action`` (RPC 1.15), with the flows' gateway, scheduler and
    delivery."""

    def __init__(self, flows):
        self.flows = flows
        self.db = flows.db
        self.gateway = flows.gateway
        self.scheduler = flows.scheduler

    def run(self, ctx, instance_uuid, action, params):
        if not ctx.is_admin:
            raise exception.Forbidden(action='%s (admin only)' % action)
        validate_params(action, params)
        inst = gw.check_owner(ctx, self.db.get_instance(instance_uuid))
        source = inst['host']
        if params.get('host') is not None and params['host'] == source:
            raise exception.Invalid(reason="The target host can't be the "
                                           "same one.")
        TABLE.refuse_if_denied(inst, action)    # the state first, as any
        self.refuse_unless_dead(inst)           # action; then the host's
        inst, task_ctx = self.gateway.claim(
            ctx, instance_uuid, action, owner_checked=True,
            message='evacuation from host %s' % source)
        with self.flows._unsent_fails(task_ctx, inst, action):
            if self._allocate(task_ctx, inst, params):
                inst = self.db.place_evacuated(task_ctx, instance_uuid)
                LOG.warning('Instance %s evacuated from host %s to host %s: '
                            'rebuilt from image %s, local disk data lost',
                            instance_uuid, source, inst['host'],
                            inst['image_ref'])
                self.flows.send(task_ctx, inst['host'], inst, 'build',
                                self._build_params(inst, action),
                                claimed=action)
        return self.flows._started(inst, task_ctx)

    def refuse_unless_dead(self, inst):
        """409 unless the instance's host is forced down and its agent
        silent (see the module's docstring)."""
        host_name = inst['host']
        if host_name is None:
            raise exception.Conflict(
                'Cannot evacuate instance %s: it is on no host'
                % inst['uuid'])
        try:
            host = self.db.get_host(host_name)
        except exception.HostNotFound:
            return      # no such host any more: nothing runs it
        missing = []
        if not host.get('forced_down'):
            missing.append('it is not forced down (an admin states that it is '
                           'fenced with os-services forced_down=true)')
        beat = host['last_heartbeat']
        if beat is not None and beat >= self.scheduler.alive_since():
            missing.append('its agent still sends heartbeats (last at %s, '
                           'within the service_down_time of %d s)'
                           % (beat.isoformat(), self.flows.conf.conductor
                              .service_down_time))
        if missing:
            raise exception.Conflict(
                'Cannot evacuate instance %s from host %s: %s. Evacuation '
                'is only for a host that is down and fenced.'
                % (inst['uuid'], host_name, '; and '.join(missing)))

    def _allocate(self, task_ctx, inst, params):
        """Room on the destination (allocation of purpose ``evacuation``,
        the move recorded with it); False, the task ended rolled back
        (nothing changed), when there is none; a named host that cannot
        take it: the task ended so, then a 409 naming why."""
        flavor = flavors.of_instance(inst)
        named, forced = params.get('host'), bool(params.get('force'))
        try:
            if forced:
                self._forced(task_ctx, inst, named, flavor)
            else:
                self.scheduler.select_and_allocate(
                    task_ctx, inst['uuid'], flavor,
                    purpose=evacuations.PURPOSE, only=named,
                    exclude=[inst['host']])
        except (exception.NoValidHost, exception.HostCapacityExceeded,
                exception.HostNotFound) as err:
            why = (self._why_not(named, flavor, forced=forced) if named
                   else None) or err.message
            self.gateway.fail_quietly(task_ctx, inst['uuid'], error=why,
                                      rolled_back=True)
            if named:
                raise exception.Conflict(
                    'Cannot evacuate instance %s to host %s: %s'
                    % (inst['uuid'], named, why)) from None
            return False
        return True

    def _forced(self, task_ctx, inst, host, flavor):
        """Nova's ``force``: the named host without the scheduler (its
        search, zones, leases, the weigher, the enabled filter), if its
        agent is up and it has room (whatever runs on a host is counted
        there, as Nova claims in Placement)."""
        if self._down(self.db.get_host(host)):
            raise exception.NoValidHost(reason='host %s is down' % host)
        self.db.allocate(task_ctx, inst['uuid'], host, vcpus=flavor.vcpus,
                         memory_mb=flavor.memory_mb, disk_gb=flavor.disk_gb,
                         ratios=self.scheduler.ratios,
                         purpose=evacuations.PURPOSE,
                         flavor_name=flavor.name, disabled_ok=True)

    def _down(self, host):
        beat = host['last_heartbeat']
        return bool(host.get('forced_down') or beat is None
                    or beat < self.scheduler.alive_since())

    def _why_not(self, name, flavor, *, forced):
        """Why the named host ``name`` cannot take ``flavor`` (None when
        nothing is seen wrong any more: a race, the error then says)."""
        try:
            host = self.db.get_host(name)
        except exception.HostNotFound:
            return 'no compute host %s exists' % name
        if self._down(host):
            return ('its agent is down%s' % (' (forced down)'
                                             if host.get('forced_down')
                                             else ''))
        if not host['enabled'] and not forced:
            return ('it is disabled (%s); name it with force (microversions '
                    '2.29 to 2.67) to use it anyway'
                    % (host.get('disabled_reason') or 'no reason given'))
        short = self._short(host, flavor)
        if short:
            return 'it has no room for flavor %s: %s' % (flavor.name,
                                                        '; '.join(short))
        return None

    def _short(self, host, flavor):
        """What ``host`` lacks for ``flavor`` under its allocation
        ratios, one phrase per resource."""
        default = dict(zip(('cpu', 'ram', 'disk'), self.scheduler.ratios,
                           strict=True))
        short = []
        for kind, cap, used, need, unit in (
                ('cpu', 'vcpus', 'used_vcpus', flavor.vcpus, 'vCPUs'),
                ('ram', 'memory_mb', 'used_memory_mb', flavor.memory_mb,
                 'MiB RAM'),
                ('disk', 'disk_gb', 'used_disk_gb', flavor.disk_gb,
                 'GiB disk')):
            ratio = host.get('own_%s_ratio' % kind) or default[kind]
            free = host[cap] * ratio - host[used]
            if need > free:
                short.append('%s %s needed, %g free' % (need, unit,
                                                        max(free, 0)))
        return short

    def _build_params(self, inst, action):
        """The build the destination runs: its image, its ports as they
        were (same MAC and addresses), and whether to power the guest off
        once spawned (a stopped guest, or Nova 2.95's target state)."""
        params = {'ports': self.db.ports_of(inst['uuid'])}
        if action == 'evacuate_stopped' or inst['vm_state'] == states.vm.STOPPED:
            params['power_off'] = True
        return params

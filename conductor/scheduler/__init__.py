"""The scheduler (DESIGN.md section 6): pick a host and allocate on it atomically.

Filters (host enabled, heartbeat within ``service_down_time``, room for the
flavor under the allocation ratios) and the weigher (spread by free RAM, or
pack) run as one SQL query on an index of the stored weigher, and the
allocation is a conditional UPDATE that fails when the host filled up
meanwhile; the next host is then tried, so concurrent conductors never
over-commit. Both run in one transaction
(:meth:`common.db.api.StateDB.find_and_allocate`). No host left:
:class:`~common.exception.NoValidHost` with the reason, and
``select_destinations.error``.

A build that asks for an availability zone is placed on that zone's
hosts only (the zone filter of :func:`common.db.aggregates.zone_filter`,
part of the same search; none when no zone is asked).

Leases (:func:`common.db.lease_hosts.placement`): a request that names no
reservation never lands on a host an active reservation holds; one that
names a reservation (``reservation_id``) lands only on its hosts, and is
recorded as the reservation's (its lease's on_end applies to it). A resize
stays on its host whatever holds it.

A member of a server group is placed by its group's policy, the group's row
locked in the same transaction (:mod:`common.db.server_groups` says why
that is atomic); a hard policy that leaves no host buries the build with
a reason naming the group. The same_host / different_host hints of the
create (:mod:`common.db.host_hints`) narrow every placement of the
instance the same way, in the same transaction (no lock needed: that
module says why); none left buries the build with a reason naming them.
"""

import datetime

from common import exception
from common.db import host_hints
from common.db import lease_hosts
from common.db import server_groups


# A resize's placement: no lease filter (a resize stays on its host
# whatever holds it), so no lease to explain either.
_NO_LEASES = object()


class Scheduler:
    def __init__(self, statedb, notifier, conf):
        self.db = statedb
        self.notifier = notifier
        self.conf = conf

    @property
    def ratios(self):
        sched = self.conf.scheduler
        return (sched.cpu_allocation_ratio, sched.ram_allocation_ratio,
                sched.disk_allocation_ratio)

    def alive_since(self):
        return self.db.clock() - datetime.timedelta(
            seconds=self.conf.conductor.service_down_time)

    def select_and_allocate(self, task_ctx, instance_uuid, flavor, *,
                            purpose='instance', only=None, exclude=(),
                            reservation_id=None, zone=None):
        """Allocate ``flavor`` for the task on the best host; return its name.

        ``only`` restricts the choice to one host (resize in place, a
        forced host), ``exclude`` removes hosts (a migration's source),
        ``reservation_id`` asks for the hosts of that reservation, ``zone``
        for the hosts of that availability zone.
        """
        request = {'instance_uuid': instance_uuid, 'flavor': flavor.name,
                   'only': only, 'exclude': list(exclude)}
        if reservation_id is not None:
            request['reservation_id'] = reservation_id
        if zone is not None:
            request['availability_zone'] = zone
        leases = purpose != 'resize'
        reserved = (lease_hosts.placement(reservation_id, task_ctx.project_id)
                    if leases else None)
        self.notifier.info(task_ctx, 'select_destinations.start',
                           'RequestSpecPayload', request)
        # Pick and allocate in one transaction: the first of the best
        # hosts whose conditional UPDATE still finds room (another
        # conductor, or a lease that started, may have taken it).
        host = self.db.find_and_allocate(
            task_ctx, instance_uuid, vcpus=flavor.vcpus,
            memory_mb=flavor.memory_mb, disk_gb=flavor.disk_gb,
            ratios=self.ratios, alive_since=self.alive_since(),
            pack=self.conf.scheduler.weigher == 'pack',
            limit=self.conf.scheduler.max_attempts, only=only,
            exclude=exclude, reserved=reserved, purpose=purpose,
            flavor_name=flavor.name,
            reservation_id=reservation_id if leases else None,
            zone=None if zone is None else (
                zone, zone == self.conf.default_availability_zone))
        if host is not None:
            self.notifier.info(task_ctx, 'select_destinations.end',
                               'RequestSpecPayload', dict(request, host=host))
            return host
        reason = self._why_none(task_ctx, instance_uuid, flavor, only,
                                exclude, zone, reservation_id if leases
                                else _NO_LEASES)
        self.notifier.error(task_ctx, 'select_destinations.error',
                            'RequestSpecPayload', dict(request, error=reason))
        raise exception.NoValidHost(reason=reason)

    def _why_none(self, task_ctx, instance_uuid, flavor, only, exclude,
                  zone, reservation_id):
        """The reason a placement found no host: the same_host /
        different_host hints alone when they left none, else the hosts'
        capacity, the zone, the leases, the group and the hints."""
        hinted = self.db.hint_placement(instance_uuid)
        if host_hints.leaves_none(hinted, only=only, exclude=exclude):
            return host_hints.explain(hinted)
        reason = self._explain(flavor, only)
        if zone is not None:
            reason += ' in availability zone %s' % zone
        if reservation_id is not _NO_LEASES:
            reason += self._explain_leases(task_ctx, reservation_id)
        reason += server_groups.explain(self.db.group_placement(instance_uuid))
        if hinted is not None:
            reason += '; ' + host_hints.explain(hinted)
        return reason

    def _explain(self, flavor, only):
        total, disabled, down = self.db.count_hosts(
            alive_since=self.alive_since())
        where = ('host %s' % only) if only else ('%d host(s)' % total)
        return ('%s: %d disabled, %d down, none of the rest has room for '
                'flavor %s (%d vCPUs, %d MiB RAM, %d GiB disk)'
                % (where, disabled, down, flavor.name, flavor.vcpus,
                   flavor.memory_mb, flavor.disk_gb))

    def _explain_leases(self, task_ctx, reservation_id):
        held = self.db.db.transaction(
            lease_hosts.explain_placement, reservation_id,
            task_ctx.project_id, readonly=True)
        return '; %s' % held if held else ''

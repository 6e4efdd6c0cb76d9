"""The lease flows: create, update, delete, and what a lease's end does to
the instances that used it.

Each operation moves the lease to its transitional status, does its work
and settles in the stable status its events give
(:class:`common.db.leases.LeaseDB`, which checks every step against the
tables of :mod:`common.leases`). Instances are handled through the normal
instance flows (:class:`conductor.flows.Flows`: hard delete, or a stop
task), with an admin context, so that the action log and the notifications
say what happened and why.
"""

import contextlib
import logging

from common import actions
from common import context as tcontext
from common import exception
from common import leases as rules
from conductor.leases import requests

LOG = logging.getLogger(__name__)

_PAYLOAD_LEASE = ('id', 'name', 'project_id', 'user_id', 'start_date',
                  'end_date', 'before_end_date', 'on_end', 'status',
                  'status_reason')
_PAYLOAD_RESERVATION = ('id', 'resource_type', 'min_hosts', 'max_hosts',
                        'hypervisor_properties', 'status', 'hosts')


def payload(lease):
    """The notification payload of a lease: plain values only."""
    data = {key: lease.get(key) for key in _PAYLOAD_LEASE}
    data['reservations'] = [{key: r.get(key) for key in _PAYLOAD_RESERVATION}
                            for r in lease.get('reservations', ())]
    data['events'] = [{key: e.get(key) for key in ('event_type', 'time',
                                                    'status')}
                      for e in lease.get('events', ())]
    return data


def check_owner(ctx, lease):
    """A project sees only its own leases; others are 'not found'."""
    if not ctx.is_admin and lease['project_id'] != ctx.project_id:
        raise exception.LeaseNotFound(lease=lease['id'])
    return lease


def _admin(ctx, what):
    if not ctx.is_admin:
        raise exception.Forbidden(action='%s (admin only)' % what)


class LeaseFlows:
    def __init__(self, *, db, flows, notifier, conf):
        self.db = db
        self.flows = flows
        self.notifier = notifier
        self.conf = conf

    def notify(self, ctx, what, lease):
        self.notifier.info(ctx, 'lease.%s' % what, 'LeasePayload',
                           payload(lease))

    # --- reads ---------------------------------------------------------------

    def get(self, ctx, lease_id):
        return check_owner(ctx, self.db.get_lease(lease_id))

    def list(self, ctx, *, all_projects=False):
        if all_projects and not ctx.is_admin:
            raise exception.Forbidden(action='listing every project\'s '
                                             'leases (admin only)')
        return self.db.list_leases(
            project_id=None if all_projects else ctx.project_id)

    # --- create and update ---------------------------------------------------

    def create(self, ctx, body):
        """CREATING with hosts picked (none: the reason, nothing stored),
        then PENDING."""
        spec = requests.parse_create(
            body, now=self.db.clock(),
            before_end_minutes=self.conf.leases.before_end)
        lease = self.db.create_lease(ctx, **spec)
        LOG.info('Lease %s (%s) created for project %s: hosts %s from %s to '
                 '%s', lease['id'], lease['name'], lease['project_id'],
                 [r['hosts'] for r in lease['reservations']],
                 lease['start_date'], lease['end_date'])
        self.notify(ctx, 'create', lease)
        return lease

    @contextlib.contextmanager
    def operation(self, lease_id, op_name):
        """To the operation's transitional status; settle however the work
        ends. A settle that finds the lease deleted meanwhile is not an
        error of the operation: delete wins."""
        self.db.begin(lease_id, op_name)
        settled = {}
        try:
            yield settled
        finally:
            try:
                settled['lease'] = self.db.settle(lease_id, op_name)
            except (exception.LeaseNotFound,
                    exception.LeaseActionNotAllowed) as err:
                LOG.info('Lease %s did not settle after %s: %s', lease_id,
                         op_name, err)

    def update(self, ctx, lease_id, body):
        """New dates (host availability checked again), name or on_end."""
        # A body that cannot be right is refused before the lease is
        # touched (the operation below changes its status and updated_at);
        # it is read again, as it is while UPDATING, inside.
        requests.parse_update(self.get(ctx, lease_id), body,
                              now=self.db.clock(),
                              before_end_minutes=self.conf.leases.before_end)
        with self.operation(lease_id, 'update') as settled:
            lease = self.db.get_lease(lease_id)
            values, recheck = requests.parse_update(
                lease, body, now=self.db.clock(),
                before_end_minutes=self.conf.leases.before_end)
            self.db.update_lease(lease_id, values, recheck=recheck)
        if 'lease' not in settled:
            raise exception.LeaseNotFound(lease=lease_id)
        return settled['lease']

    # --- the reservable pool (admin only) ---------------------------------------

    def list_hosts(self, ctx):
        _admin(ctx, 'listing the reservable hosts')
        return self.db.reservable_hosts()

    def set_host(self, ctx, host, reservable):
        """Put ``host`` into the reservable pool, or take it out."""
        _admin(ctx, '%s the reservable pool' % (
            'adding hosts to' if reservable else 'removing hosts from'))
        self.db.set_reservable(host, reservable)
        LOG.info('Host %s %s the reservable pool', host,
                 'added to' if reservable else 'removed from')

    # --- delete --------------------------------------------------------------

    def delete(self, ctx, lease_id):
        """From any status, even while an event runs: DELETING; an active
        reservation's instances get ``on_end`` first; then the rows go."""
        self.get(ctx, lease_id)
        _before, lease = self.db.begin(lease_id, 'delete')
        for res in lease['reservations']:
            if res['status'] == rules.reservation.ACTIVE:
                self.apply_on_end(lease, res)
        removed = self.db.remove(lease_id)
        LOG.info('Lease %s (%s) deleted', lease_id, removed['name'])
        self.notify(ctx, 'delete', removed)
        return removed

    # --- the end, for the end_lease event and for delete ---------------------

    def apply_on_end(self, lease, reservation, *, strict=False):
        """Delete (default) or stop the instances that used ``reservation``.

        A delete always works. A stop is a normal task: an instance that
        cannot stop now (another task runs, its host is down) is left as it
        is; with ``strict`` (the end_lease event) that raises
        LeaseInstancesNotStopped once the others are stopped, so the event
        is run again at the next pass (a stop already running counts as
        done), and after ``[leases] event_retries`` the lease is ERROR with
        the reasons. A lease deleted by hand only warns: delete wins.
        """
        ctx = tcontext.get_admin_context()
        insts = self.db.reservation_instances(reservation)
        refused = []
        for inst in insts:
            LOG.info('Lease %s ends: %s instance %s (on_end)', lease['id'],
                     lease['on_end'], inst['uuid'])
            if lease['on_end'] == rules.ON_END_DELETE:
                self.flows.delete(ctx, inst['uuid'])
                continue
            reason = self._stop(ctx, inst)
            if reason is not None:
                LOG.warning('Lease %s ends, but instance %s cannot be stopped '
                            'now: %s', lease['id'], inst['uuid'], reason)
                refused.append('%s (%s)' % (inst['uuid'], reason))
        if refused and strict:
            raise exception.LeaseInstancesNotStopped(
                lease=lease['id'], count=len(refused),
                reasons='; '.join(refused))
        return len(insts)

    def _stop(self, ctx, inst):
        """Ask for a stop; None when asked (or not needed), else why not."""
        if inst['vm_state'] not in actions.TABLE.allowed_from('stop'):
            return None     # already down, or a state stop does not apply to
        if inst['task_action'] in ('stop', 'power_off'):
            return None     # asked by an earlier run, or already on its way
        try:
            self.flows.run_action(ctx, inst['uuid'], 'stop', {})
        except exception.InstanceNotFound:
            return None
        except (exception.ActionNotAllowed,
                exception.ServiceUnavailable) as err:
            return err.message
        return None

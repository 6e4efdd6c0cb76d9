"""Nova's shelving, on the action table's three rows (issue 22).

* ``shelve`` (ACTIVE, STOPPED, PAUSED, SUSPENDED -> SHELVED): the agent
  powers the guest off and uploads a snapshot of its disk, the image
  ``<name>-shelved`` the conductor created queued (as for createImage:
  :mod:`conductor.images`). The instance stays on its host, holding its
  allocation; the snapshot's id and the time are stored on it.
* ``shelve_offload`` (SHELVED -> SHELVED_OFFLOADED): the agent destroys the
  domain and its disk; the finish frees every allocation and places the
  instance on no host (seed 000: an offloaded VM holds no host resources).
  It still counts against the project's instances, cores and RAM quota, as
  in Nova. ``[compute] shelved_offload_time`` starts it on its own: 0 at
  once after the shelve, N > 0 by the conductor's periodic sweep once the
  instance was shelved N seconds ago, -1 never. An offload is refused
  (409) when the instance's snapshot is gone (its owner may delete it):
  it would destroy the only copy of the disk.
* ``unshelve`` (SHELVED or SHELVED_OFFLOADED -> ACTIVE): a shelved guest is
  powered on where it is (built from the snapshot if its domain is gone);
  an offloaded one is scheduled (to the admin's ``host`` from 2.91, in the
  ``availability_zone`` asked from 2.77, which is stored as the instance's
  zone; null unpins it) and built from the snapshot. The snapshot is
  deleted once the unshelve succeeds. A schedule that finds no host leaves
  the instance offloaded (the task fails, rolled back).

A hard delete of a shelved or offloaded instance deletes its snapshot:
the conductor does it when told of the delete, and the periodic sweep
deletes any snapshot still held by a hard-deleted instance (a delete made
while the bus was down). Snapshots live in Tristate's own image service;
with an existing Glance (``[image] api_endpoint``) shelving is refused.
"""

import datetime
import logging

from common import context
from common import exception
from common import flavors
from common import states
from common.db import images as images_db
from conductor import imagedata
from conductor import images

LOG = logging.getLogger(__name__)

ACTIONS = ('shelve', 'shelve_offload', 'unshelve')


def snapshot_name(inst):
    """Nova's name of a shelve's snapshot."""
    return '%s-shelved' % inst['name']


class Shelving:
    def __init__(self, flows):
        self.flows = flows
        self.db = flows.db
        self.conf = flows.conf
        self.gateway = flows.gateway
        self.scheduler = flows.scheduler
        self._data = imagedata.DataRemover(self.conf)
        # instances the sweep could not offload, already logged (the next
        # passes say it at debug level, not every periodic_interval)
        self._refused = set()

    # --- before the claim ---------------------------------------------------

    def prepare(self, ctx, inst, action, params):
        """The task's parameters; refuses (changing nothing) what Nova
        refuses before it starts a task."""
        if not self.flows.compute.can_send('1.12'):
            raise exception.ServiceUnavailable(
                reason='shelving needs compute agent RPC API 1.12 and '
                       '[upgrade_levels] compute caps it below')
        if not images.own_service(self.conf):
            raise exception.Invalid(
                reason='shelving with images in an existing Glance ([image] '
                       'api_endpoint) is not supported yet')
        prepared = dict(params)
        if action == 'shelve':
            prepared['image_name'] = snapshot_name(inst)
        elif action == 'shelve_offload':
            self._check_snapshot(inst)
        elif action == 'unshelve':
            self._check_unshelve(ctx, inst, prepared)
        return prepared

    def _check_snapshot(self, inst):
        """An offload destroys the disk: refused (409) unless the
        instance's snapshot, the copy it is unshelved from, is still
        there (its owner may have deleted it)."""
        image_id = inst.get('shelved_image_id')
        if not image_id or self._own_snapshot(inst, image_id) is None:
            raise exception.Conflict(
                'Cannot offload instance %s: its shelve snapshot %s is gone, '
                'and the offload would destroy the only copy of its disk. '
                'Unshelve it (it is powered on where it is) or delete it.'
                % (inst['uuid'], image_id or '(none)'))

    def _check_unshelve(self, ctx, inst, params):
        """Nova's checks of an unshelve's zone and host."""
        zone_passed = 'availability_zone' in params
        host = params.get('host')
        if (zone_passed or host) and (
                inst['vm_state'] != states.vm.SHELVED_OFFLOADED):
            raise exception.Conflict(
                'Specifying an availability zone or a host when unshelving '
                'server "%s" with status "%s" is not supported. The server '
                'status must be SHELVED_OFFLOADED.'
                % (inst['uuid'], inst['vm_state']))
        zone_of, available = self._zones()
        zone = params.get('availability_zone')
        if zone and zone not in available:
            raise exception.Invalid(
                reason='The requested availability zone is not available')
        expected = zone if zone_passed else inst.get('availability_zone')
        if not host:
            return
        if not ctx.is_admin:
            raise exception.Forbidden(action='unshelve to a host (admin '
                                      'only)')
        if host not in zone_of:
            raise exception.Invalid(reason='Compute host %s could not be '
                                    'found.' % host)
        if expected is not None and zone_of[host] != expected:
            raise exception.Conflict('Host "%s" is not in the availability '
                                     'zone "%s".' % (host, expected))

    def _zones(self):
        """({host: zone} of every host, the zones of the enabled ones):
        a disabled host exists (an unshelve to it then finds no valid
        host, as in Nova), its zone is not available."""
        hosts = self.db.list_hosts()
        zones = self.db.host_zones([h['name'] for h in hosts])
        default = self.conf.default_availability_zone
        zone_of = {h['name']: zones.get(h['name'], default) for h in hosts}
        return zone_of, {zone_of[h['name']] for h in hosts if h['enabled']}

    # --- after the claim --------------------------------------------------------

    def start(self, task_ctx, inst, action, prepared):
        """Send the claimed task (an offloaded unshelve: scheduled first)."""
        if action == 'unshelve':
            if 'availability_zone' in prepared:
                inst = self.db.set_availability_zone(
                    task_ctx, inst['uuid'], prepared['availability_zone'])
            if not inst['shelved_image_id']:
                LOG.warning('Instance %s has no shelve snapshot: unshelved '
                            'from its image %s', inst['uuid'],
                            inst['image_ref'])
            params = {'image_ref': inst['shelved_image_id'] or
                      inst['image_ref'],
                      'ports': self.db.ports_of(inst['uuid'])}
            if inst['vm_state'] == states.vm.SHELVED_OFFLOADED:
                return self._place(task_ctx, inst, params,
                                   prepared.get('host'))
            prepared = params
        self.flows.send(task_ctx, inst['host'], inst, action, prepared)
        return inst

    def _place(self, task_ctx, inst, params, host):
        uuid = inst['uuid']
        try:
            self.gateway.progress(task_ctx, uuid, step=states.step.SCHEDULING)
            host = self.scheduler.select_and_allocate(
                task_ctx, uuid, flavors.of_instance(inst), only=host,
                zone=inst.get('availability_zone'))
        except exception.NoValidHost as err:
            # Nova leaves it offloaded: the unshelve failed, nothing held
            return self.gateway.fail_quietly(task_ctx, uuid,
                                             error=err.message,
                                             rolled_back=True)
        except exception.TaskPreempted:
            return self.db.get_instance(uuid)
        inst = dict(inst, host=host)
        self.flows.send(task_ctx, host, inst, 'unshelve', params)
        return inst

    # --- when a task ends -----------------------------------------------------------

    def success_values(self, inst, action, hints):
        """What a finished shelving task stores besides its vm_state."""
        if action == 'shelve':
            # the agent's word, checked once the finish is written
            # (finished: no read inside the finish's transaction)
            image_id = hints.get('shelved_image_id')
            return {'shelved_at': self.db.clock(),
                    'shelved_image_id': image_id if isinstance(
                        image_id, str) and len(image_id) <= 36 else None}
        if action == 'shelve_offload':
            return {'host': None}
        return {'shelved_at': None, 'shelved_image_id': None}

    def _own_snapshot(self, inst, image_id):
        """The snapshot the agent says it made, if it is this instance's
        (an agent's word is a hint: the image must carry its uuid)."""
        if not image_id:
            return None
        try:
            image = images_db.get(self.db, context.get_admin_context(),
                                  image_id)
        except exception.NotFound:
            return None
        if image.get('properties', {}).get('instance_uuid') != inst['uuid']:
            LOG.warning('Shelve of %s named image %s, which is not its '
                        'snapshot: not kept', inst['uuid'], image_id)
            return None
        return image_id

    def finished(self, ctx, before, after):
        """After a shelving task's finish: an offload at once
        (``shelved_offload_time`` 0), or the snapshot of an unshelve
        deleted. Never raised to the agent, whose task is recorded: the
        periodic sweep is the net of both."""
        try:
            self._after(before, after)
        except Exception:       # noqa: BLE001 - the sweep does it later
            LOG.exception('After %s of instance %s', before['task_action'],
                          after['uuid'])

    def _after(self, before, after):
        action = before['task_action']
        if action == 'shelve':
            image_id = after.get('shelved_image_id')
            if image_id and self._own_snapshot(after, image_id) is None:
                self.db.forget_shelved_image(after['uuid'], image_id)
            if self.conf.compute.shelved_offload_time == 0:
                self.offload(after['uuid'])
        elif action == 'unshelve':
            self.forget_snapshot(before.get('shelved_image_id'),
                                 after['uuid'])

    def offload(self, instance_uuid):
        """Claim and send the offload of a shelved instance, as the system
        does it (an admin's context); False when something else holds it."""
        ctx = context.get_admin_context()
        try:
            self.flows.run_action(ctx, instance_uuid, 'shelve_offload', {})
        except (exception.Conflict, exception.InstanceNotFound,
                exception.ServiceUnavailable) as err:
            known = instance_uuid in self._refused
            self._refused.add(instance_uuid)
            LOG.log(logging.DEBUG if known else logging.INFO,
                    'Instance %s not offloaded now: %s', instance_uuid, err)
            return False
        self._refused.discard(instance_uuid)
        return True

    # --- the periodic sweep and the hard delete ---------------------------------------

    def sweep(self, ctx, now):
        """Offload instances shelved ``shelved_offload_time`` seconds ago
        or more (unless it is -1); delete snapshots hard-deleted
        instances still hold. Returns how many of each."""
        wait = self.conf.compute.shelved_offload_time
        offloaded = 0
        if wait >= 0:       # 0: the offload at once, if it was lost
            due = self.db.list_shelved(
                before=now - datetime.timedelta(seconds=wait))
            offloaded = sum(1 for inst in due if self.offload(inst['uuid']))
            # forget those no longer due (unshelved, deleted, offloaded)
            self._refused &= {inst['uuid'] for inst in due}
        left = self.db.list_shelved(deleted=True)
        for inst in left:
            self.forget_snapshot(inst['shelved_image_id'], inst['uuid'])
        return {'offloaded': offloaded, 'snapshots_deleted': len(left)}

    def forget_snapshot(self, image_id, instance_uuid):
        """Delete a shelve's snapshot, record and data (logged, never
        raised), and forget it on the instance."""
        if not image_id:
            return
        admin = context.get_admin_context()
        try:
            before = images_db.delete(self.db, admin, image_id)
            self._data.remove(before)
        except exception.NotFound:
            pass
        except Exception:       # noqa: BLE001 - a leftover: swept again
            LOG.exception('Snapshot %s of instance %s not deleted', image_id,
                          instance_uuid)
            return
        LOG.info('Snapshot %s of instance %s deleted', image_id,
                 instance_uuid)
        self.db.forget_shelved_image(instance_uuid, image_id)


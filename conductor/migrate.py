"""Cold migration and cross-host resize: the conductor's part (issue 25).

A ``migrate`` (Nova's cold migration, admin only) and a ``resize`` that
cannot stay on its host move the guest's disk to another host; the
instance ends RESIZED there, running if it ran (stopped if it was), with
the source's domain and disk kept untouched until ``confirm_resize``
(the source goes) or ``revert_resize`` (the destination goes, the source
runs again as it was: its disk was never written, so it is byte-identical,
its size included). Allocations: the source keeps the instance's own, the
destination holds one of purpose ``resize`` (the same rows a resize in
place uses), so confirm and revert settle both as they always did.

Where a resize goes: Tristate keeps a resize on its host when the host has
room (no disk copy, no second host's capacity), and only then asks the
scheduler for another host (excluding the source). Nova's
``allow_resize_to_same_host = True`` lets the weigher pick either; its
default False always moves. There is no option here: staying is cheaper
and a resize that must move still can.

The disk transfer goes through the image service's store. Why: the agents
may not message each other (the recommended RabbitMQ permissions give each
agent its own queue only, and agents hold no credentials for one
another), and the pieces already exist: a snapshot's upload with a
one-image write grant, an image's fetch with a read grant, the store's
own checksum on upload. A new agent-to-agent stream would need listeners
on every host, certificates or tokens between agents, firewall openings
and its own retry story; the store path needs none of that, at the price
of writing the disk twice (to the store, then to the destination).

The steps (the conductor drives each; agents only talk to conductors):

1. claim (``MIGRATING`` or ``RESIZING``), allocate on the destination, and
   create a private ``queued`` image owned by no user's project
   (:data:`OWNER`) tagged with the instance (:data:`PROPERTY`); the task
   goes to the source with the image's write grant and ``dest``;
2. the source powers the guest off, writes its disk (flattened qcow2) to a
   scratch file, takes its SHA-256, uploads it, and calls conductor RPC
   1.16 ``migration_disk_sent`` with the digest and size;
3. the conductor (:meth:`ColdMoves.disk_sent`, the task's own host and
   task_id checked) calls the destination's agent RPC 1.8
   ``receive_migration`` with a read grant, the digest, the flavor and
   whether to start the guest; the destination fetches the image, refuses
   it unless the SHA-256 and size match what the source computed (end to
   end: whatever the store or the network did in between), builds the
   domain on it and starts it if the guest ran; the temporary image is
   deleted whatever the answer;
4. the source reports the task finished: the instance is placed on the
   destination, RESIZED. A failure at any step (a corrupt copy included)
   fails the task rolled back: the source's guest is powered on again if it
   ran, its disk untouched; the destination's allocation is freed and its
   copy doomed and destroyed.

A temporary image a dead source agent left (uploaded, never handed to the
destination) is deleted when the task is ended for it (the reaper, or the
agent's report of its lost tasks when it starts again), else by the
instance's next move, or by its delete.

A hard delete at any point frees both hosts' allocations and dooms the
other host's copy (:meth:`common.db.api.StateDB.hard_delete`); the source's
task is preempted at its next report and destroys its domain; a temporary
image left by the preempted task is deleted by the delete's flow.
"""

import logging
import time

from common import context
from common import exception
from common import flavors
from common import states
from common.db import images as images_db
from common.images import grants
from conductor import imagedata
from conductor import gateway as gw
from conductor import images

LOG = logging.getLogger(__name__)

# The temporary image's owner (no user's project: users never list it) and
# the property naming the instance it carries.
OWNER = 'tristate-migration'
PROPERTY = 'tristate_migration_of'


class RevertNotStarted(Exception):
    """A cross-host revert whose destination did not destroy its copy:
    the task ends rolled back, the instance still on the destination."""


class ColdMoves:
    def __init__(self, *, db, scheduler, compute, conf):
        self.db = db
        self.scheduler = scheduler
        self.compute = compute
        self.conf = conf
        self.images = images.ImageAccess(conf, db)
        self._data = imagedata.DataRemover(self.conf)

    # --- claim time ------------------------------------------------------------

    def can_move(self):
        """Whether a disk can leave its host: Tristate's own image
        service (its store holds the copy in transit)."""
        return bool(self.images.url()) and images.own_service(self.conf)

    def allocate(self, task_ctx, inst, action, params):
        """Allocate the destination of a ``migrate`` or ``resize``; the
        host's name. Raises NoValidHost."""
        if action == 'migrate':
            flavor = flavors.of_instance(inst)
            if not self.can_move():
                raise exception.NoValidHost(reason=self.no_transfer())
            return self.scheduler.select_and_allocate(
                task_ctx, inst['uuid'], flavor, purpose='resize',
                only=params.get('host'), exclude=[inst['host']])
        flavor = flavors.Flavor(**params['flavor'])
        try:
            return self.scheduler.select_and_allocate(
                task_ctx, inst['uuid'], flavor, purpose='resize',
                only=inst['host'])
        except exception.NoValidHost:
            if not self.can_move():
                raise
        return self.scheduler.select_and_allocate(
            task_ctx, inst['uuid'], flavor, purpose='resize',
            exclude=[inst['host']])

    def no_transfer(self):
        """Why a disk cannot leave its host here (a 400's message)."""
        if self.conf.image.api_endpoint:
            return ('cold migration with an existing Glance as the image '
                    'service ([image] api_endpoint) is not supported yet: '
                    'the disk goes through a private temporary image that '
                    'only Tristate\'s own image service lets a host write '
                    'and another read (one-image grants); the agents hold no '
                    'Glance credentials to create, upload and delete one')
        return ('cold migration without Tristate\'s own image service is '
                'not supported yet: the disk goes through it; set [image] '
                'service_url (the API\'s /image)')

    def prepare(self, task_ctx, inst, dest):
        """The task's parameters of a move to ``dest``: the temporary
        image and the source's write grant for it. An earlier attempt's
        temporary image still there (its source agent died after the
        upload, before step 3 could delete it) goes first: this task, now
        claimed, is the instance's only move."""
        self.forget_images(inst['uuid'])
        image = images_db.create(self.db, context.get_admin_context(), {
            'name': 'migration of %s' % inst['uuid'], 'owner': OWNER,
            'visibility': 'private', 'disk_format': 'qcow2',
            'container_format': 'bare', 'min_disk': 0, 'min_ram': 0,
            'properties': {PROPERTY: inst['uuid']}})
        return {'dest': dest, 'image_id': image['id'],
                'image': self._grant(image['id'], inst['host'], 'write')}

    def _grant(self, image_id, host, op):
        return {'url': self.images.url(), 'grant': grants.issue(
            self.images.key(), image_id=image_id, host=host, op=op,
            ttl=self.conf.image.grant_ttl, now=time.time())}

    # --- step 3: the destination ----------------------------------------------

    def disk_sent(self, ctx, *, host, instance_uuid, disk):
        """Conductor RPC 1.16, from the source of task ``ctx.task_id``:
        its disk is in the store (``disk``: ``image_id``, ``sha256``,
        ``size``, ``start``). The destination receives it; the answer is
        its own (a failure raised). The temporary image goes either way."""
        try:
            # preempted (deleted, reset, reaped) or not the source: refused
            self.db.update_progress(ctx, instance_uuid, host=host,
                                    step=states.step.RESIZE_MIGRATED)
            inst = self.db.get_instance(instance_uuid)
            dest = self._dest(instance_uuid)
            return self.compute.receive_migration(
                ctx, host=dest, instance=gw.payload(inst),
                params=self._receive_params(inst, dest, disk),
                timeout=self.conf.conductor.rpc_timeout)
        finally:
            self.forget_images(instance_uuid)

    def _dest(self, instance_uuid):
        return next(a for a in self.db.list_allocations(
            instance_uuid=instance_uuid) if a['purpose'] == 'resize')['host']

    def _receive_params(self, inst, dest, disk):
        alloc = next(a for a in self.db.list_allocations(
            instance_uuid=inst['uuid']) if a['purpose'] == 'resize')
        return {'image_id': disk['image_id'], 'sha256': disk['sha256'],
                'size': int(disk['size']), 'start': bool(disk['start']),
                'image': self._grant(disk['image_id'], dest, 'read'),
                'flavor': {'name': alloc['flavor_name'],
                           'vcpus': alloc['vcpus'],
                           'memory_mb': alloc['memory_mb'],
                           'disk_gb': alloc['disk_gb']},
                'ports': self.db.ports_of(inst['uuid']),
                # the guest's config drive and console log, from the source
                **{key: disk[key] for key in ('config_drive', 'console_log')
                   if disk.get(key)}}

    # --- confirm and revert ----------------------------------------------------

    def other_host(self, inst):
        """The source of the cold move the RESIZED ``inst`` waits on, when
        it is another host than the instance's; else None."""
        return next((a['host'] for a in self.db.list_allocations(
            instance_uuid=inst['uuid']) if a['purpose'] == 'instance'
            and a['host'] != inst['host']), None)

    def before_revert(self, task_ctx, inst, source):
        """A cross-host revert: the destination destroys its copy, and
        only once it answered that the domain is gone is the instance
        placed on the source again, whose agent runs the task (powers the
        kept guest on if it ran): the two copies never run together.
        A destination that does not destroy it (an error, no answer within
        ``[conductor] rpc_timeout``): the revert is refused
        (:class:`RevertNotStarted`); a destination whose agent is down or
        forced down was refused before the claim (flows'
        ``_check_host_up``)."""
        dest = inst['host']
        try:
            self.compute.destroy_domain_and_wait(
                task_ctx, host=dest, instance_uuid=inst['uuid'],
                timeout=self.conf.conductor.rpc_timeout)
        except Exception as err:     # noqa: BLE001 - any: not known gone
            why = (str(err).splitlines() or [type(err).__name__])[0]
            raise RevertNotStarted(
                'host %s did not destroy its copy of instance %s (%s); the '
                'source\'s is not started while that copy may run: revert '
                'again once the host answers' % (dest, inst['uuid'], why)
            ) from None
        self.db.place_for_task(task_ctx, inst['uuid'], source)

    # --- the temporary image -----------------------------------------------------

    def forget_images(self, instance_uuid):
        """Delete every temporary image of ``instance_uuid``'s moves (the
        one a step 3 is done with, or a failed or preempted task's),
        record and data. Logged, never raised."""
        if not images.own_service(self.conf):
            return
        admin = context.get_admin_context()
        try:
            found = images_db.list_images(
                self.db, admin, limit=images_db.MAX_LIMIT,
                filters={'properties': {PROPERTY: instance_uuid}})
            for image in found:
                self._data.remove(images_db.delete(self.db, admin,
                                                   image['id']))
        except Exception:       # noqa: BLE001 - a leftover, logged
            LOG.exception('Temporary images of instance %s not deleted',
                          instance_uuid)



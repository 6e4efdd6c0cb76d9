"""What a task needs to reach its image, and the snapshot's image record.

Agents hold no database credentials and no user token. A task that reads an
image (a build, a rebuild, a rescue) or writes one (a snapshot, a backup)
carries ``params['image'] = {'url': ..., 'grant': ...}``:

* ``url``: the Glance v2 API agents use: ``[image] api_endpoint`` (an
  existing Glance) or else ``[image] service_url`` (Tristate's own image
  service, served by the API tier under ``/image``);
* ``grant``: with Tristate's own service, a capability
  (:mod:`common.images.grants`) signed with a key only the conductor and the
  API tier read from the database: it lets the agent of ``host`` read that
  one image, or upload that one snapshot while it is queued, for
  ``[image] grant_ttl`` seconds. An existing Glance knows nothing of it: the
  agent authenticates there with its own ``[image]`` Keystone options.

Without either URL nothing is added, and a driver that needs image files
fails the task saying so (the fake driver needs none).

Snapshots and backups: with Tristate's own service the conductor creates the
queued image in the task's preparation (so its id is in the answer at once)
and, when the task fails, marks every queued or saving snapshot of that
instance ``killed`` (only one task runs per instance, so those are the
failed task's). A successful backup rotates: the instance's backups of that
type beyond ``rotation`` are deleted, oldest first.
"""

import logging
import time

from common import exception
from common.images import grants

LOG = logging.getLogger(__name__)

READS = ('build', 'rebuild', 'rescue')
WRITES = ('snapshot', 'backup')


def _own_service(conf):
    return not conf.image.api_endpoint


class ImageAccess:
    def __init__(self, conf, db):
        self.conf = conf
        self.db = db
        self._key = None

    def url(self):
        return self.conf.image.api_endpoint or self.conf.image.service_url

    def key(self):
        if self._key is None:
            self._key = self.db.image_service_key('image-grants')
        return self._key

    def task_params(self, host, payload, action, params):
        """``params`` with ``image`` added when the task needs one."""
        if action in READS:
            image_id = params.get('image_ref') or payload.get('image_ref')
            op = 'read'
        elif action in WRITES:
            image_id, op = params.get('image_id'), 'write'
        else:
            return params
        url = self.url()
        if not image_id or not url:
            return params
        grant = None
        if _own_service(self.conf):
            grant = grants.issue(self.key(), image_id=image_id, host=host,
                                 op=op, ttl=self.conf.image.grant_ttl,
                                 now=time.time())
        return dict(params, image={'url': url, 'grant': grant})

    # --- snapshots and backups ---------------------------------------------

    def prepare_snapshot(self, ctx, inst, action, params):
        """The queued image a snapshot or backup will upload; its id.
        An API tier in front of an existing Glance creates it there and
        passes its id; with Tristate's own service the conductor does."""
        if params.get('image_id'):
            return params['image_id']
        if not _own_service(self.conf):
            raise exception.Invalid(
                reason='image_id is required: images are served by the '
                       'Glance at [image] api_endpoint, where the API tier '
                       'creates the snapshot\'s image')
        properties = {'image_type': 'snapshot' if action == 'snapshot'
                      else 'backup',
                      'instance_uuid': inst['uuid'],
                      'base_image_ref': inst['image_ref'] or '',
                      'user_id': ctx.user_id or ''}
        if action == 'backup':
            properties['backup_type'] = params.get('backup_type') or 'daily'
        image = self.db.create_snapshot_image(
            owner=inst['project_id'], name=params['image_name'],
            min_disk=inst['disk_gb'], properties=properties)
        return image['id']

    def forget_snapshot(self, image_id):
        """A snapshot whose task was never claimed: its image goes."""
        if _own_service(self.conf):
            self.db.kill_snapshot_images(image_ids=[image_id])

    def snapshot_failed(self, instance_uuid):
        if _own_service(self.conf):
            killed = self.db.kill_snapshot_images(instance_uuid=instance_uuid)
            if killed:
                LOG.info('Snapshot images %s of instance %s killed: their '
                         'task failed', ', '.join(killed), instance_uuid)

    def backup_done(self, instance_uuid, backup_type, rotation):
        if not _own_service(self.conf) or rotation is None:
            return
        deleted = self.db.rotate_backups(instance_uuid, backup_type,
                                         int(rotation))
        if deleted:
            LOG.info('Backup rotation of instance %s (%s, keep %d): deleted '
                     'images %s', instance_uuid, backup_type, rotation,
                     ', '.join(deleted))

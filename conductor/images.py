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
queued image in the task's preparation (so its id is in the answer at once),
owned by the instance's project, and, when the task fails, marks every
queued or saving snapshot of that instance ``killed`` (only one task runs
per instance, so those are the failed task's). A backup's write grant
carries its ``rotation``: the image API, which holds the store, deletes the
instance's older backups of that type once the new one is active.
"""

import logging
import time

from common import context
from common import exception
from common.db import images as images_db
from common.images import grants

LOG = logging.getLogger(__name__)

READS = ('build', 'rebuild', 'rescue', 'unshelve')
# a shelve's snapshot is made as createImage's (conductor/shelve.py)
WRITES = ('snapshot', 'backup', 'shelve')
GRANT_KEY = 'image-grants'


def own_service(conf):
    """Whether images are Tristate's own (not an existing Glance's)."""
    return not conf.image.api_endpoint


# Keys of an image that are not properties (Glance's core attributes and
# Tristate's columns): a snapshot's metadata may not name them.
_NOT_PROPERTIES = frozenset(images_db.USER_COLUMNS) | {
    'id', 'owner', 'status', 'size', 'virtual_size', 'checksum',
    'os_hash_algo', 'os_hash_value', 'created_at', 'updated_at', 'tags',
    'location', 'locations', 'deleted', 'deleted_at', 'direct_url', 'self',
    'file', 'schema', 'stores'}


def _user_properties(metadata):
    """A createImage/createBackup ``metadata``, checked: string keys and
    values of at most 255 characters, none a core attribute."""
    metadata = metadata or {}
    for key, value in metadata.items():
        if (not isinstance(key, str) or not isinstance(value, str)
                or not 0 < len(key) <= 255 or len(value) > 255):
            raise exception.Invalid(
                reason='metadata of a snapshot: keys and values are strings '
                       'of at most 255 characters, got %r: %r'
                       % (key, value))
        if key in _NOT_PROPERTIES or key.startswith('os_glance'):
            raise exception.Invalid(
                reason='metadata of a snapshot: %r is an attribute of the '
                       'image, not a property' % key)
    return metadata


class ImageAccess:
    def __init__(self, conf, db):
        self.conf = conf
        self.db = db
        self._key = None

    def url(self):
        return self.conf.image.api_endpoint or self.conf.image.service_url

    def key(self):
        if self._key is None:
            self._key = images_db.service_key(self.db, GRANT_KEY)
        return self._key

    def task_params(self, host, payload, action, params):
        """``params`` with ``image`` added when the task needs one."""
        rotation = None
        if action in READS:
            image_id = params.get('image_ref') or payload.get('image_ref')
            op = 'read'
        elif action in WRITES:
            image_id, op = params.get('image_id'), 'write'
            rotation = params.get('rotation') if action == 'backup' else None
        else:
            return params
        url = self.url()
        if not image_id or not url:
            return params
        grant = None
        if own_service(self.conf):
            grant = grants.issue(self.key(), image_id=image_id, host=host,
                                 op=op, ttl=self.conf.image.grant_ttl,
                                 now=time.time(), rotation=rotation)
        return dict(params, image={'url': url, 'grant': grant})

    # --- snapshots and backups ---------------------------------------------

    def prepare_snapshot(self, ctx, inst, action, params):
        """The queued image a snapshot or backup will upload; its id.
        An API tier in front of an existing Glance creates it there and
        passes its id; with Tristate's own service the conductor does."""
        if params.get('image_id'):
            return params['image_id']
        if not own_service(self.conf):
            raise exception.Invalid(
                reason='image_id is required: images are served by the '
                       'Glance at [image] api_endpoint, where the API tier '
                       'creates the snapshot\'s image')
        properties = dict(_user_properties(params.get('metadata')),
                          image_type='snapshot' if action == 'shelve'
                          else action, instance_uuid=inst['uuid'],
                          base_image_ref=inst['image_ref'] or '',
                          user_id=ctx.user_id or '')
        if action == 'backup':
            properties['backup_type'] = params.get('backup_type') or 'daily'
        image = images_db.create(self.db, context.get_admin_context(), {
            'name': params['image_name'], 'owner': inst['project_id'],
            'visibility': 'private', 'disk_format': 'qcow2',
            'container_format': 'bare', 'min_disk': inst['disk_gb'],
            'min_ram': 0, 'properties': properties})
        return image['id']

    def forget_snapshot(self, image_id):
        """A snapshot whose task was never claimed: its image goes."""
        if own_service(self.conf):
            images_db.kill(self.db, image_id)

    def snapshot_failed(self, instance_uuid):
        """The failed task's image: ``killed`` (queued or saving ones of
        this instance: only one task runs per instance)."""
        if not own_service(self.conf):
            return
        pending = images_db.list_images(
            self.db, context.get_admin_context(), limit=images_db.MAX_LIMIT,
            filters={'status': 'in:queued,saving',
                     'properties': {'instance_uuid': instance_uuid}})
        killed = [image['id'] for image in pending
                  if images_db.kill(self.db, image['id'])]
        if killed:
            LOG.info('Snapshot images %s of instance %s killed: their task '
                     'failed', ', '.join(killed), instance_uuid)

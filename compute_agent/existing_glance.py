"""What an agent does in an existing Glance (``[image] api_endpoint``)
besides fetching and uploading: what Tristate's own image service does on
its side when the task carries a grant.

* A snapshot or backup that fails leaves no image behind (Nova deletes it
  too): the queued image the API tier created is deleted, unless it went
  active (an upload that Glance refused because the image already had its
  data must not delete that data).
* A backup's ``rotation``: once the new backup is active, the instance's
  older active backups of the same ``backup_type`` beyond ``rotation`` are
  deleted, oldest first (Nova's ``createBackup``). A protected backup is
  kept and not counted (its owner protected it). A failed listing or
  deletion is logged and does not fail the task: the backup was made.

The agent acts with its ``[image]`` credentials: with Keystone, they must
be allowed to list, upload to and delete the projects' snapshot images
(Glance's admin role, as the service user Nova uses).
"""

import logging

from common.images import client as image_client

LOG = logging.getLogger(__name__)

ERRORS = (image_client.ImageNotFound, image_client.ImageForbidden,
          image_client.ImageServiceError)


def existing(params):
    """Whether the task's image service is an existing Glance: the
    conductor gives agents no grant for one."""
    spec = params.get('image') or {}
    return bool(spec.get('url')) and not spec.get('grant')


def forget_snapshot(client, image_id):
    """Delete the image of a failed snapshot unless it is active."""
    try:
        if client.show(image_id)['status'] == 'active':
            return
        client.delete(image_id)
        LOG.info('Image %s of a failed snapshot deleted', image_id)
    except image_client.ImageNotFound:
        pass
    except ERRORS as err:
        LOG.warning('Image %s of a failed snapshot not deleted: %s',
                    image_id, err)


def rotate(client, image_id, rotation):
    """Delete the backups beyond ``rotation`` of backup ``image_id``'s
    instance and type (``image_id`` is the newest); their ids."""
    if rotation is None:
        return []
    try:
        image = client.show(image_id)
        if image.get('image_type') != 'backup' or not image.get(
                'instance_uuid'):
            return []
        older = _older_backups(client, image)
    except ERRORS as err:
        LOG.warning('Backup rotation after image %s not done: %s',
                    image_id, err)
        return []
    # newest first; Nova's rotation 0 keeps none, the new one included
    excess = [image] + older if rotation == 0 else older[rotation - 1:]
    deleted = []
    for old in reversed(excess):    # oldest first
        try:
            client.delete(old['id'])
            deleted.append(old['id'])
        except ERRORS as err:
            LOG.warning('Backup rotation: image %s not deleted: %s',
                        old['id'], err)
    if deleted:
        LOG.info('Backup rotation of instance %s (%s, keep %d): deleted %s',
                 image.get('instance_uuid'), image.get('backup_type'),
                 rotation, ', '.join(deleted))
    return deleted


def _older_backups(client, image):
    """The other active, unprotected backups of ``image``'s instance and
    type, newest first."""
    filters = {'image_type': 'backup', 'instance_uuid': image['instance_uuid'],
               'status': 'active', 'sort': 'created_at:desc'}
    if image.get('backup_type'):
        filters['backup_type'] = image['backup_type']
    return [b for b in client.list(**filters)
            if b['id'] != image['id'] and not b.get('protected')]

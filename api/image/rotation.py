"""Backup rotation, done where the store is: when an agent's upload of a
backup completes, the instance's older backups of that type beyond the
rotation its write grant carries are deleted, oldest first (Nova's
``createBackup``). A protected backup is kept and not counted against the
rotation's deletions (the owner protected it); a failed deletion is logged
and does not fail the upload, which has succeeded.
"""

import logging

from common import context as tcontext
from common.db import images as images_db

LOG = logging.getLogger(__name__)


def rotate(statedb, store, image, rotation):
    """Delete the backups beyond ``rotation`` of ``image``'s instance and
    backup type (``image`` itself, now active, is the newest); their ids."""
    props = image.get('properties') or {}
    if props.get('image_type') != 'backup' or not props.get('instance_uuid'):
        return []
    admin = tcontext.get_admin_context()
    same = {'image_type': 'backup', 'instance_uuid': props['instance_uuid'],
            'backup_type': props.get('backup_type') or ''}
    backups = images_db.list_images(
        statedb, admin, limit=images_db.MAX_LIMIT,
        filters={'status': 'active', 'properties': same, 'os_hidden': None},
        sort=[('created_at', 'desc')])
    deleted = []
    for old in [b for b in backups if not b['protected']][rotation:]:
        try:
            before = images_db.delete(statedb, admin, old['id'])
            location = images_db.stored_location(before)
            if location is not None:
                store.delete(location)
            deleted.append(old['id'])
        except Exception:      # noqa: BLE001 - the next backup tries again
            LOG.exception('Backup rotation: image %s not deleted', old['id'])
    if deleted:
        LOG.info('Backup rotation of instance %s (%s, keep %d): deleted %s',
                 props['instance_uuid'], same['backup_type'], rotation,
                 ', '.join(deleted))
    return deleted

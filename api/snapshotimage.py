"""The image a ``createImage`` or ``createBackup`` uploads to, when images
live in an existing Glance (``[image] api_endpoint``).

With Tristate's own image service the conductor creates the queued image
(:mod:`conductor.images`). An existing Glance is reached from the API tier
with the caller's own token, as Nova's API reaches it: the queued image is
created there (owned by the caller's project, private, qcow2, with Nova's
snapshot properties and the flavor's disk as ``min_disk``) and its id goes
to the conductor as the action's ``image_id``. When the conductor refuses
the action the image is deleted again. When the conductor cannot be
reached the task may still run, so the image stays (queued; the agent
deletes it if the snapshot then fails).
"""

import contextlib
import logging

from api import bootimage
from common import exception
from common import flavors
from common.images import client as image_client

LOG = logging.getLogger(__name__)

WRITES = ('snapshot', 'backup')


def fields(ctx, inst, action, params):
    """The Glance v2 create body of the image ``action`` makes (Nova's)."""
    body = {'name': params['image_name'], 'disk_format': 'qcow2',
            'container_format': 'bare', 'visibility': 'private',
            'min_disk': flavors.of_instance(inst).disk_gb,
            'image_type': action, 'instance_uuid': inst['uuid'],
            'base_image_ref': inst.get('image_ref') or '',
            'user_id': ctx.user_id or ''}
    if action == 'backup':
        body['backup_type'] = params.get('backup_type') or 'daily'
    return body


@contextlib.contextmanager
def queued(conf, ctx, inst, action, params):
    """``params`` for the conductor: with an existing Glance and a
    snapshot or backup, with the ``image_id`` of the queued image created
    there; the image is deleted if the block raises the conductor's
    refusal."""
    if action not in WRITES or not conf.image.api_endpoint or (
            params.get('image_id')):
        yield params
        return
    glance = bootimage.glance(conf, ctx)
    image = glance.create(**fields(ctx, inst, action, params))
    LOG.info('Snapshot image %s created in %s for instance %s',
             image['id'], conf.image.api_endpoint, inst['uuid'])
    try:
        yield dict(params, image_id=image['id'])
    except exception.TristateError:
        _delete(glance, image['id'])
        raise


def _delete(glance, image_id):
    try:
        glance.delete(image_id)
    except (image_client.ImageNotFound, image_client.ImageForbidden,
            image_client.ImageServiceError) as err:
        LOG.warning('Snapshot image %s of a refused action not deleted: %s',
                    image_id, err)

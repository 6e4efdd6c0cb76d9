"""Images for tests: a real record in the catalogue, its data in the real
store (glance_store's file store under the test's state_dir).

Every functional test plane has :data:`IMAGE`, a small public raw image
named ``cirros``: what a server create names unless a test uploads its own
(the API refuses a create whose image is not in the catalogue).
"""

from common import context
from common import exception
from common.db import images as images_db
from common.images import store as store_mod

IMAGE = '0c1e6f57-3d0a-4c6b-9a5e-5a9d1b8e2c10'
IMAGE_NAME = 'cirros'
# Every test plane's public images, by name: IMAGE and two more for tests
# that rebuild or rescue from another image.
IMAGES = {IMAGE_NAME: IMAGE,
          'debian-12': '7d3b2a90-1f4e-4e5c-8b6d-2c4f9e0a1b23',
          'rescue-img': 'a41c9e07-6b2d-4f8a-9c3e-0d5b7e1f2a34'}
# One MiB of a recognisable raw disk: content is stored and hashed for real.
DATA = b'TRISTATE-TEST-IMAGE\n'.ljust(1024 * 1024, b'\0')


def register_all(conf, statedb):
    for name, image_id in IMAGES.items():
        register_image(conf, statedb, image_id=image_id, name=name)


def register_image(conf, statedb, *, image_id=IMAGE, name=IMAGE_NAME,
                   data=DATA, visibility='public', owner=None,
                   disk_format='raw', **values):
    """An active image with ``data``, made as an upload makes it; an image
    already there with this id is returned as it is."""
    admin = context.get_admin_context()
    try:
        return images_db.get(statedb, admin, image_id)
    except exception.ImageNotFound:
        pass
    images_db.create(statedb, admin, dict(
        values, id=image_id, name=name, visibility=visibility,
        owner=owner or admin.project_id, disk_format=disk_format,
        container_format='bare'))
    token = images_db.begin_upload(statedb, image_id)['location']
    location, size, md5, sha512 = store_mod.ImageStore(conf).add(
        image_id, [data], size=len(data))
    return images_db.finish_upload(statedb, image_id, token,
                                   location=location, size=size,
                                   checksum=md5, os_hash_value=sha512,
                                   virtual_size=size)

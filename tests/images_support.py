"""Images for tests: a real record in the catalogue, its data in the real
store (glance_store's file store under the test's state_dir).

Every functional test plane has :data:`IMAGE`, a small public raw image
named ``cirros``: what a server create names unless a test uploads its own
(the API refuses a create whose image is not in the catalogue).
"""

from common.images import client
from common.images import register

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
                   data=DATA, **values):
    """An active image with ``data``; one already there with this id is
    returned as it is."""
    return register.register_image(conf, statedb, data, image_id=image_id,
                                   name=name, **values)


def upload_image(api_url, *, image_id=IMAGE, name=IMAGE_NAME, data=DATA,
                 token='admin:admin'):
    """:data:`IMAGE` made public through a running API's image service (as
    an admin of noauth), as a user uploads one: for planes of separate
    processes, whose database and store the test does not hold."""
    glance = client.GlanceClient(api_url + '/image', token=token)
    glance.create(id=image_id, name=name, visibility='public',
                  disk_format='raw', container_format='bare')
    glance.upload(image_id, iter([data]), size=len(data))
    return glance.show(image_id)

"""Registering an image from data at hand, without an HTTP round trip: the
record made queued, the data stored and hashed, the record made active, as
an upload through the image API does (the same calls, in the same order).

For the benchmarks' and tests' planes, which need an image to boot before
anyone uploads one; operators upload through the image API.
"""

from common import context
from common import exception
from common.db import images as images_db
from common.images import store as store_mod


def register_image(conf, statedb, data, *, image_id=None, name=None,
                   visibility='public', owner=None, disk_format='raw',
                   **values):
    """An active image holding ``data`` (bytes); an image already there
    with ``image_id`` is returned as it is."""
    admin = context.get_admin_context()
    if image_id is not None:
        try:
            return images_db.get(statedb, admin, image_id)
        except exception.ImageNotFound:
            pass
    image = images_db.create(statedb, admin, dict(
        values, id=image_id, name=name, visibility=visibility,
        owner=owner or admin.project_id, disk_format=disk_format,
        container_format='bare'))
    token = images_db.begin_upload(statedb, image['id'])['location']
    location, size, md5, sha512 = store_mod.ImageStore(conf).add(
        image['id'], [data], size=len(data))
    return images_db.finish_upload(statedb, image['id'], token,
                                   location=location, size=size,
                                   checksum=md5, os_hash_value=sha512,
                                   virtual_size=size)

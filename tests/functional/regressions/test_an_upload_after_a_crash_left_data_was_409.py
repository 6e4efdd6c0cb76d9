"""An upload that took over an image a crashed API process left ``saving``
answered 409 "data already exists", for ever.

glance_store's file store writes the data straight under the image's id and
refuses to write over a file there. An API process that died mid-upload
left its partial file; the image's row was taken over by the next upload
(it had not moved for twice ``[image] upload_idle_timeout``), which then got
``ImageDataExists`` from the store: the image could never get its data
(found by the image-store helper of session 10 while measuring the store).

Fixed: the upload that holds the image's upload token tells the store to
``replace`` (:meth:`common.images.store.ImageStore.add`): the file store
removes the leftover first; a store that cannot tell still answers 409.
"""

import datetime
import hashlib
import os

import requests
import sqlalchemy as sa

from api import service as api_service
from common import context
from common.db import images as images_db
from common.db import models
from tests.functional import api_support
from tests.functional.conftest import set_opts

DATA = b'after the crash\n' * 4096


def test_an_upload_takes_over_a_crashed_one_and_its_leftover(shared_plane):
    conf = api_support.configure(shared_plane.conf)
    set_opts(conf, 'image', upload_idle_timeout=5)
    statedb = shared_plane.statedb
    image = images_db.create(statedb, context.get_admin_context(), {
        'name': 'crashed', 'visibility': 'public', 'disk_format': 'raw',
        'container_format': 'bare'})
    # The dead upload: the row saving, untouched for a minute, and its
    # partial data where the file store writes this image.
    images_db.begin_upload(statedb, image['id'])
    table = models.Image.__table__
    long_ago = statedb.clock() - datetime.timedelta(seconds=60)
    statedb.db.transaction(lambda conn: conn.execute(
        sa.update(table).where(table.c.id == image['id']).values(
            updated_at=long_ago)))
    datadir = conf.glance_store.filesystem_store_datadir
    os.makedirs(datadir, exist_ok=True)
    with open(os.path.join(datadir, image['id']), 'wb') as f:
        f.write(b'half an upload')

    client = api_service.make_client(conf, shared_plane.bus, statedb)
    server = api_service.serve(conf, client, host='127.0.0.1', port=0)
    try:
        resp = requests.put(
            '%s/image/v2/images/%s/file' % (server.url, image['id']),
            data=DATA, timeout=30,
            headers={'Content-Type': 'application/octet-stream'})
        assert resp.status_code == 204, resp.text
        shown = requests.get('%s/image/v2/images/%s' % (server.url,
                                                        image['id']),
                             timeout=30).json()
        assert shown['status'] == 'active'
        assert shown['os_hash_value'] == hashlib.sha512(DATA).hexdigest()
        body = requests.get('%s/image/v2/images/%s/file' % (
            server.url, image['id']), timeout=30).content
        assert body == DATA
    finally:
        server.stop()

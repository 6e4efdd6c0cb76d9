"""An agent's image traffic against a real Glance (issue 21, "Or a real
Glance"): with ``[image] api_endpoint`` naming an existing Glance, agents
fetch images from it and upload snapshots to it through
:class:`common.images.client.GlanceClient`, the same Glance v2 calls they
make to Tristate's own image API.

The Glance is PyPI's, without Keystone (``[paste_deploy] flavor =``
empty: every request is Glance's unauthenticated context, an admin without
roles, who may not make public images), its ``file``
store in a temporary directory (:mod:`glance_support`). The image is put
there as an operator would, with plain Glance v2 calls, not through the
client under test.
"""

import hashlib
import io
import os
import threading

import pytest
import requests

from common.images import client as glance_client
from compute_agent import imagecache
from tests.functional.conftest import new_conf
from tests.integration import glance_support

glance = glance_support.fixture()
DATA_SIZE = 3 * 1024 * 1024 + 17      # several chunks, the last one short


@pytest.fixture(scope='module')
def image(glance):
    """An active raw image uploaded by an operator; (record, bytes)."""
    data = os.urandom(DATA_SIZE)
    resp = requests.post(glance.url + '/v2/images', json={
        'name': 'agent-fetch', 'disk_format': 'raw',
        'container_format': 'bare'}, timeout=30)
    assert resp.status_code == 201, resp.text
    image_id = resp.json()['id']
    resp = requests.put(glance.url + '/v2/images/%s/file' % image_id,
                        data=data, timeout=60,
                        headers={'Content-Type': 'application/octet-stream'})
    assert resp.status_code == 204, resp.text
    record = requests.get(glance.url + '/v2/images/' + image_id,
                          timeout=30).json()
    assert record['status'] == 'active'
    return record, data


def test_an_agent_downloads_an_image_by_id(glance, image):
    record, data = image
    client = glance_client.GlanceClient(glance.url, chunk_size=64 * 1024)
    shown = client.show(record['id'])
    assert (shown['status'], shown['size'], shown['os_hash_algo']) == (
        'active', len(data), 'sha512')
    chunks, headers = client.download(record['id'])
    sha512, md5, received = hashlib.sha512(), hashlib.md5(), 0
    for chunk in chunks:
        sha512.update(chunk)
        md5.update(chunk)
        received += len(chunk)
    assert received == len(data)
    # What the agent's cache verifies before it uses the file.
    assert sha512.hexdigest() == shown['os_hash_value'] == hashlib.sha512(
        data).hexdigest()
    assert md5.hexdigest() == headers['Content-MD5'] == shown['checksum']


def test_an_unknown_image_is_not_found(glance):
    client = glance_client.GlanceClient(glance.url)
    with pytest.raises(glance_client.ImageNotFound):
        client.show('00000000-0000-0000-0000-000000000000')
    with pytest.raises(glance_client.ImageNotFound):
        client.download('00000000-0000-0000-0000-000000000000')


def test_an_agent_uploads_a_snapshot_streamed(glance):
    """The snapshot path: create a queued image, stream its data (chunked,
    no size given), and it is active with the hashes of what was sent."""
    client = glance_client.GlanceClient(glance.url, chunk_size=64 * 1024)
    data = os.urandom(DATA_SIZE)
    created = client.create(name='agent-snapshot', disk_format='raw',
                            container_format='bare',
                            image_type='snapshot')
    assert created['status'] == 'queued'
    client.upload(created['id'], io.BytesIO(data))
    shown = client.show(created['id'])
    assert (shown['status'], shown['size'], shown['image_type']) == (
        'active', len(data), 'snapshot')
    assert shown['os_hash_value'] == hashlib.sha512(data).hexdigest()
    assert [image['id'] for image in client.list(name='agent-snapshot')] == [
        created['id']]
    client.delete(created['id'])
    with pytest.raises(glance_client.ImageNotFound):
        client.show(created['id'])


def test_the_image_cache_fills_from_glance(glance, image, tmp_path):
    """compute_agent.imagecache against a real Glance: concurrent fetches
    of one image download it once, into one file with the image's bytes."""
    record, data = image
    file_path = '/v2/images/%s/file' % record['id']
    downloads = glance.requests_seen('GET', file_path)
    conf = new_conf(tmp_path)
    cache = imagecache.ImageCache(conf)
    client = glance_client.GlanceClient(glance.url)
    results = []
    fetchers = [threading.Thread(target=lambda: results.append(
        cache.fetch(record['id'], client))) for _ in range(3)]
    for thread in fetchers:
        thread.start()
    for thread in fetchers:
        thread.join(60)
    assert len(results) == 3
    assert len({cached.path for cached in results}) == 1
    cached = results[0]
    assert (cached.disk_format, cached.size) == ('raw', len(data))
    with open(cached.path, 'rb') as cached_file:
        assert hashlib.sha512(cached_file.read()).hexdigest() == (
            record['os_hash_value'])
    assert glance.requests_seen('GET', file_path) == downloads + 1

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

The agent's tasks are run as its manager runs them (``tasks.HANDLERS``
with the manager's task view), over a driver that builds from image files
as libvirt's does, with ``params['image']`` as the conductor passes it for
an existing Glance: its URL, no grant. A snapshot that fails leaves no image there.
"""

import hashlib
import io
import os
import threading
import types
import uuid as uuidlib

import pytest
import requests

from common import metrics
from common.images import client as glance_client
from compute_agent import imagecache
from compute_agent import manager as agent_manager
from compute_agent import tasks
from compute_agent.virt.driver import VirtError
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


# --- the agent's own tasks -------------------------------------------------

class FileDriver:
    """A driver that builds disks from image files, as libvirt's does: it
    keeps what the agent hands it, and writes ``disk`` as a snapshot."""

    needs_image_files = True

    def __init__(self, disk=b''):
        self.disk = disk
        self.spawned = {}

    def spawn(self, uuid, *, name, flavor, image_ref, image=None):
        with open(image.path, 'rb') as base:
            self.spawned[uuid] = (image, hashlib.sha512(
                base.read()).hexdigest())

    def snapshot(self, uuid, *, image_name, image_id=None, target=None):
        with open(target, 'wb') as out:
            out.write(self.disk)


def _task_view(conf, driver):
    """What the agent's manager gives a task handler, over ``driver``."""
    agent = types.SimpleNamespace(
        driver=driver, host='h1', conf=conf,
        image_cache=imagecache.ImageCache(conf),
        image_session=lambda: None,
        conductor=types.SimpleNamespace(task_progress=lambda *a, **k: None))
    agent.timed_driver = lambda: metrics.TimedDriver(driver, agent.host)
    return agent_manager._TaskView(agent, None)


def _inst(image_ref):
    return {'uuid': str(uuidlib.uuid4()), 'name': 'vm', 'image_ref': image_ref,
            'flavor_name': 'tiny', 'vcpus': 1, 'memory_mb': 512,
            'disk_gb': 1}


def test_a_build_task_spawns_on_the_image_fetched_from_glance(
        glance, image, tmp_path):
    record, _data = image
    driver = FileDriver()
    view = _task_view(new_conf(tmp_path), driver)
    inst = _inst(record['id'])
    tasks.HANDLERS['build'](view, inst, {'image': {'url': glance.url,
                                                   'grant': None}})
    cached, sha512 = driver.spawned[inst['uuid']]
    assert sha512 == record['os_hash_value']
    assert os.path.dirname(cached.path) == str(tmp_path / 'image-cache')


def test_a_build_of_an_image_glance_lacks_is_the_users_mistake(glance,
                                                                tmp_path):
    view = _task_view(new_conf(tmp_path), FileDriver())
    with pytest.raises(imagecache.ImageUnusable) as caught:
        tasks.HANDLERS['build'](view, _inst(str(uuidlib.uuid4())), {
            'image': {'url': glance.url, 'grant': None}})
    assert caught.value.fault_code == 400


def test_a_snapshot_task_uploads_to_glance(glance, tmp_path):
    disk = os.urandom(DATA_SIZE)
    view = _task_view(new_conf(tmp_path), FileDriver(disk))
    client = glance_client.GlanceClient(glance.url)
    snapshot = client.create(name='snap', disk_format='raw',
                             container_format='bare', image_type='snapshot')
    params = {'image': {'url': glance.url, 'grant': None},
              'image_id': snapshot['id'], 'image_name': 'snap'}
    tasks.HANDLERS['snapshot'](view, _inst(None), params)
    shown = client.show(snapshot['id'])
    assert (shown['status'], shown['size'], shown['os_hash_value']) == (
        'active', len(disk), hashlib.sha512(disk).hexdigest())
    assert client.download(snapshot['id'])[1]['Content-MD5'] == (
        hashlib.md5(disk).hexdigest())
    # Its scratch copy is gone; a second upload Glance refuses (409)
    # fails the task with the reason.
    assert os.listdir(tmp_path / 'image-cache') == []
    with pytest.raises(VirtError, match=r'upload of snapshot image .*409'):
        tasks.HANDLERS['snapshot'](view, _inst(None), params)
    assert client.show(snapshot['id'])['status'] == 'active'   # kept


class BrokenDriver(FileDriver):
    def snapshot(self, uuid, *, image_name, image_id=None, target=None):
        raise VirtError('domain %s: disk unreadable' % uuid)


def test_a_failed_snapshot_leaves_no_image_in_glance(glance, tmp_path):
    """As Nova: the queued image the API tier created is deleted."""
    view = _task_view(new_conf(tmp_path), BrokenDriver())
    client = glance_client.GlanceClient(glance.url)
    snapshot = client.create(name='snap', disk_format='qcow2',
                             container_format='bare', image_type='snapshot')
    with pytest.raises(VirtError, match='disk unreadable'):
        tasks.HANDLERS['snapshot'](view, _inst(None), {
            'image': {'url': glance.url, 'grant': None},
            'image_id': snapshot['id'], 'image_name': 'snap'})
    with pytest.raises(glance_client.ImageNotFound):
        client.show(snapshot['id'])

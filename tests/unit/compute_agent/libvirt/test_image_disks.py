"""Disks built on the image cache: a qcow2 overlay on a raw or a qcow2
cached base (nothing copied), for build, rebuild and rescue, the cache
never removing a base a disk uses, and the agent's tasks fetching through
the cache (libvirt's test driver, real qemu-img, a Glance stand-in)."""

import json
import os
import subprocess
import time

import pytest

from tests.unit.compute_agent.libvirt import require_libvirt

libvirt = require_libvirt()

from common.images.client import GlanceClient  # noqa: E402
from compute_agent import imagecache  # noqa: E402
from compute_agent import tasks  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import TINY  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import new_uuid  # noqa: E402

GIB = 1024 ** 3


@pytest.fixture
def client(glance):
    return GlanceClient(glance.url)


def qemu_info(path):
    return json.loads(subprocess.run(
        ['qemu-img', 'info', '--output=json', str(path)], check=True,
        capture_output=True, text=True).stdout)


def qcow2_bytes(tmp_path, size):
    path = tmp_path / 'made.qcow2'
    subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', str(path),
                    str(size)], check=True)
    data = path.read_bytes()
    path.unlink()
    return data


def disk_of(tmp_path, uuid, name='disk'):
    return tmp_path / 'instances' / uuid / name


@pytest.mark.parametrize('fmt', ['raw', 'qcow2'])
def test_a_disk_is_an_overlay_on_the_cached_base(make_driver, conf, glance,
                                                 client, tmp_path, fmt):
    data = (b'raw disk' * 131072 if fmt == 'raw'
            else qcow2_bytes(tmp_path, '64M'))
    image_id = glance.add(data, disk_format=fmt)
    drv = make_driver()
    cache = imagecache.ImageCache(conf, in_use=drv.image_bases_in_use)
    cached = cache.fetch(image_id, client)
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref=image_id, image=cached)
    info = qemu_info(disk_of(tmp_path, uuid))
    assert info['format'] == 'qcow2'
    assert info['backing-filename'] == cached.path
    assert info['backing-filename-format'] == fmt      # named, not probed
    assert info['virtual-size'] == TINY.disk_gb * GIB
    # a cache hit copies nothing: the overlay is a few hundred KiB at most
    assert os.stat(disk_of(tmp_path, uuid)).st_blocks * 512 < 1024 * 1024
    assert drv.image_bases_in_use() == {cached.path}
    later = time.time() + 10 ** 7               # long unused (~4 months)
    cache.max_age, cache.clock = 1, lambda: later
    assert cache.clean() == []                  # but a disk is built on it
    drv.destroy(uuid)
    assert cache.clean() == []                  # its age counts from now
    cache.clock = lambda: later + 2
    assert cache.clean() == [image_id]


def test_a_base_larger_than_the_flavor_keeps_its_size(make_driver, conf,
                                                      glance, client,
                                                      tmp_path):
    image_id = glance.add(qcow2_bytes(tmp_path, '3G'), disk_format='qcow2')
    cached = imagecache.ImageCache(conf).fetch(image_id, client)
    assert cached.virtual_size == 3 * GIB
    drv = make_driver()
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref=image_id, image=cached)
    assert qemu_info(disk_of(tmp_path, uuid))['virtual-size'] == 3 * GIB


def test_rebuild_and_rescue_build_overlays_on_their_images(make_driver, conf,
                                                           glance, client,
                                                           tmp_path):
    cache = imagecache.ImageCache(conf)
    first, second, rescue = (cache.fetch(glance.add(b'%d' % i * 4096), client)
                             for i in range(3))
    drv = make_driver()
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref=first.image_id,
              image=first)
    drv.rebuild(uuid, image_ref=second.image_id, image=second)
    assert qemu_info(disk_of(tmp_path, uuid))['backing-filename'] == \
        second.path
    drv.rescue(uuid, image_ref=rescue.image_id, image=rescue)
    assert qemu_info(disk_of(tmp_path, uuid, 'disk.rescue'))[
        'backing-filename'] == rescue.path
    assert drv.image_bases_in_use() == {second.path, rescue.path}
    drv.unrescue(uuid)
    assert drv.image_bases_in_use() == {second.path}


# --- the agent's tasks ------------------------------------------------------------

class View:
    """What a task handler sees (manager._TaskView), without a bus."""

    def __init__(self, driver, conf, cache):
        self.driver, self.conf, self.image_cache = driver, conf, cache
        self.steps = []

    def image_client(self, params):
        spec = params.get('image') or {}
        if not spec.get('url'):
            return None
        return GlanceClient(spec['url'], grant=spec.get('grant'))

    def progress(self, inst, **kwargs):
        self.steps.append(kwargs)


def instance(image_ref):
    return {'uuid': new_uuid(), 'name': 'vm', 'image_ref': image_ref,
            'flavor_name': 'tiny', 'vcpus': 1, 'memory_mb': 512,
            'disk_gb': 1}


def test_builds_fetch_through_the_cache_with_the_tasks_grant(
        make_driver, conf, glance, tmp_path):
    image_id = glance.add(b'bootable' * 1000)
    glance.grant = 'g1.read.sig'
    view = View(make_driver(), conf, imagecache.ImageCache(conf))
    params = {'image': {'url': glance.url, 'grant': 'g1.read.sig'}}
    one, two = instance(image_id), instance(image_id)
    tasks.HANDLERS['build'](view, one, params)
    tasks.HANDLERS['build'](view, two, params)
    assert glance.count('GET', '/file') == 1          # the second: a hit
    base = view.image_cache.fetch(image_id, GlanceClient(
        glance.url, grant='g1.read.sig')).path
    assert view.driver.image_bases_in_use() == {base}


def test_a_build_of_a_missing_image_is_the_users_fault(make_driver, conf,
                                                       glance):
    view = View(make_driver(), conf, imagecache.ImageCache(conf))
    inst = instance('0' * 8 + '-0000-0000-0000-' + '0' * 12)
    with pytest.raises(imagecache.ImageUnusable, match='not found') as exc:
        tasks.HANDLERS['build'](view, inst, {'image': {'url': glance.url}})
    assert exc.value.fault_code == 400
    assert view.driver.get_domain(inst['uuid']) is None


def test_a_libvirt_snapshot_is_uploaded_flat_and_boots_again(
        make_driver, conf, glance, tmp_path):
    image_id = glance.add(b'original' * 1000)
    cache = imagecache.ImageCache(conf)
    view = View(make_driver(), conf, cache)
    inst = instance(image_id)
    params = {'image': {'url': glance.url}}
    tasks.HANDLERS['build'](view, inst, params)
    snap_id = GlanceClient(glance.url).create(disk_format='qcow2')['id']
    tasks.HANDLERS['snapshot'](view, inst, dict(
        params, image_name='snap', image_id=snap_id))
    snap = glance.images[snap_id]
    assert snap['meta']['status'] == 'active'
    assert snap['data'][:4] == b'QFI\xfb'
    assert not [n for n in os.listdir(cache.path) if '.part-' in n]
    copy = instance(snap_id)
    tasks.HANDLERS['build'](view, copy, params)       # boots from it
    assert view.driver.get_domain(copy['uuid']) is not None

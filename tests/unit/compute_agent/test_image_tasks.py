"""The agent's tasks and images on the fake driver: no fetch (it needs no
file), snapshots uploaded with the write grant, a failed upload failing
the task with the reason, and a user's mistake carried as a 400 fault."""

import os
import subprocess

import pytest

from common.images.client import GlanceClient
from compute_agent import imagecache
from compute_agent import manager as manager_mod
from common.images import formats
from compute_agent import tasks
from compute_agent.virt import driver as virt
from compute_agent.virt import fake

UUID = '11111111-2222-3333-4444-555555555555'


@pytest.fixture
def view(conf, tmp_path):
    drv = fake.FakeDriver(state_dir=str(tmp_path))
    drv.init_host('h1')
    yield _View(drv, conf, imagecache.ImageCache(conf))
    drv.cleanup_host()


class _View:
    def __init__(self, driver, conf, cache):
        self.driver, self.conf, self.image_cache = driver, conf, cache

    def image_client(self, params):
        spec = params.get('image') or {}
        return (GlanceClient(spec['url'], grant=spec.get('grant'))
                if spec.get('url') else None)

    def progress(self, inst, **kwargs):
        pass


def _inst(image_ref='img'):
    return {'uuid': UUID, 'name': 'vm', 'image_ref': image_ref,
            'flavor_name': 'tiny', 'vcpus': 1, 'memory_mb': 512,
            'disk_gb': 1}


def test_the_fake_driver_builds_without_fetching(view, glance):
    image_id = glance.add(b'data')
    tasks.HANDLERS['build'](view, _inst(image_id),
                            {'image': {'url': glance.url}})
    assert view.driver.get_domain(UUID) is not None
    assert glance.requests == []
    assert view.image_cache.images() == []


def test_a_snapshot_uploads_generated_qcow2_content_with_the_grant(view,
                                                                   glance):
    tasks.HANDLERS['build'](view, _inst(), {})
    snap_id = GlanceClient(glance.url).create(disk_format='qcow2')['id']
    glance.grant = 'g1.write.sig'
    tasks.HANDLERS['snapshot'](view, _inst(), {
        'image_name': 'snap', 'image_id': snap_id,
        'image': {'url': glance.url, 'grant': 'g1.write.sig'}})
    image = glance.images[snap_id]
    assert image['meta']['status'] == 'active'
    assert image['data'] == fake.snapshot_content(UUID, 'snap')
    assert glance.requests[-1][2]['Content-Length'] == str(len(image['data']))
    assert view.driver.domain_record(UUID)['snapshot_ids'] == {
        snap_id: 'snap'}
    assert not [n for n in os.listdir(view.image_cache.path)
                if '.part-' in n]


def test_a_failed_upload_fails_the_task_with_the_reason(view, glance):
    """Tristate's own image service (a grant): the image stays for the
    conductor to mark killed."""
    tasks.HANDLERS['build'](view, _inst(), {})
    snap_id = GlanceClient(glance.url).create(disk_format='raw')['id']
    glance.fail[('PUT', '/v2/images/%s/file' % snap_id)] = 413
    with pytest.raises(virt.VirtError, match='upload of snapshot image '
                       '%s failed.*413' % snap_id) as exc:
        tasks.HANDLERS['backup'](view, _inst(), {
            'image_name': 'b', 'image_id': snap_id, 'rotation': 1,
            'image': {'url': glance.url, 'grant': 'g1.write.sig'}})
    assert exc.value.rolled_back          # the domain is as it was
    assert glance.images[snap_id]['meta']['status'] == 'queued'
    assert glance.count('DELETE', snap_id) == 0
    assert not [n for n in os.listdir(view.image_cache.path)
                if '.part-' in n]


def test_with_an_existing_glance_a_failed_upload_deletes_the_image(
        view, glance):
    """No grant: an existing Glance, where the API tier created the
    image; the agent deletes it (as Nova) and the task fails."""
    tasks.HANDLERS['build'](view, _inst(), {})
    snap_id = GlanceClient(glance.url).create(disk_format='raw')['id']
    glance.fail[('PUT', '/v2/images/%s/file' % snap_id)] = 503
    with pytest.raises(virt.VirtError, match='upload of snapshot image '
                       '%s failed.*503' % snap_id):
        tasks.HANDLERS['snapshot'](view, _inst(), {
            'image_name': 's', 'image_id': snap_id,
            'image': {'url': glance.url, 'grant': None}})
    assert snap_id not in glance.images


def test_with_an_existing_glance_a_failed_snapshot_deletes_the_image(
        view, glance):
    """The driver fails before any upload: the queued image goes too."""
    snap_id = GlanceClient(glance.url).create(disk_format='raw')['id']
    with pytest.raises(virt.VirtError, match='does not exist'):
        tasks.HANDLERS['snapshot'](view, _inst(), {
            'image_name': 's', 'image_id': snap_id,
            'image': {'url': glance.url, 'grant': None}})
    assert snap_id not in glance.images


def test_an_active_image_is_never_deleted_for_a_failure(view, glance):
    """An upload refused because the image already has its data (a task
    run twice) fails the task but keeps the image."""
    tasks.HANDLERS['build'](view, _inst(), {})
    snap_id = glance.add(b'earlier upload')
    glance.fail[('PUT', '/v2/images/%s/file' % snap_id)] = 409
    with pytest.raises(virt.VirtError, match='409'):
        tasks.HANDLERS['snapshot'](view, _inst(), {
            'image_name': 's', 'image_id': snap_id,
            'image': {'url': glance.url, 'grant': None}})
    assert glance.images[snap_id]['meta']['status'] == 'active'


def test_a_snapshot_without_an_image_service_is_only_recorded(view):
    tasks.HANDLERS['build'](view, _inst(), {})
    tasks.HANDLERS['snapshot'](view, _inst(), {'image_name': 'snap',
                                               'image_id': 'x'})
    assert view.driver.domain_record(UUID)['snapshots'] == ['snap']


class _Conductor:
    """Records the failures it is sent; takes a fault_code or not (a
    conductor from before it did)."""

    def __init__(self, takes_code):
        self.failed = []
        if takes_code:
            self.task_failed = self._with_code

    def _with_code(self, ctx, *, host, instance_uuid, error, rolled_back,
                   power=None, fault_code=None):
        self.failed.append((error, fault_code))

    def task_failed(self, ctx, *, host, instance_uuid, error, rolled_back,
                    power=None):
        self.failed.append((error, None))


@pytest.mark.parametrize('takes_code, sent', [(True, 400), (False, None)])
def test_a_missing_image_is_a_400_fault_where_the_conductor_takes_one(
        conf, view, glance, takes_code, sent):
    from common import context
    conductor = _Conductor(takes_code)
    manager = manager_mod.AgentManager(
        host='h1', driver=view.driver, conductor=conductor, conf=conf,
        journal=None, image_cache=view.image_cache)
    ctx = context.RequestContext(task_id='t-1')

    def build_from_a_missing_image(agent, inst, params):
        agent.image_cache.fetch('0' * 8 + '-0000-0000-0000-' + '0' * 12,
                                agent.image_client(params))

    manager._run(ctx, _inst(), 'build', {'image': {'url': glance.url}},
                 build_from_a_missing_image)
    [(error, code)] = conductor.failed
    assert 'not found' in error and code == sent


def test_the_fake_snapshot_is_a_qcow2_that_qemu_img_and_the_api_accept(
        tmp_path):
    """The conductor creates snapshot images as qcow2 (as the libvirt
    driver writes them); the fake's content must be one, or the image API's
    format check refuses the upload."""
    path = tmp_path / 'snap.qcow2'
    path.write_bytes(fake.snapshot_content(UUID, 'snap'))
    assert formats.check_file(str(path), 'qcow2').virtual_size == (
        fake.SNAPSHOT_SIZE)
    checked = subprocess.run(['qemu-img', 'check', '-f', 'qcow2', str(path)],
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr

"""The agent's shelving tasks on the libvirt driver (libvirt's test driver,
real qcow2 files), with images through a Glance stub: shelve powers the
guest off and uploads its disk as the snapshot, offload removes the domain
and its files, unshelve of an offloaded guest fetches the snapshot and
builds from it (the guest sees the disk it had), and a snapshot that fails
starts the guest again (rolled back)."""

import pytest

from tests.unit.compute_agent.libvirt import require_libvirt

libvirt = require_libvirt()

from common.images.client import GlanceClient  # noqa: E402
from common.states import power  # noqa: E402
from compute_agent import imagecache  # noqa: E402
from compute_agent import tasks  # noqa: E402
from compute_agent.virt import driver as virt  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import new_uuid  # noqa: E402
from tests.unit.compute_agent.libvirt.test_driver import head  # noqa: E402


class _View:
    """What a task handler uses of the agent."""

    def __init__(self, driver, conf):
        self.driver, self.conf, self.host = driver, conf, 'h1'
        self.image_cache = imagecache.ImageCache(conf)

    def image_client(self, params):
        spec = params.get('image') or {}
        return (GlanceClient(spec['url'], grant=spec.get('grant'))
                if spec.get('url') else None)

    def progress(self, inst, **kwargs):
        pass


@pytest.fixture
def view(make_driver, conf):
    return _View(make_driver(), conf)


def _inst(uuid):
    return {'uuid': uuid, 'name': 'vm', 'image_ref': 'cirros',
            'flavor_name': 'tiny', 'vcpus': 1, 'memory_mb': 512,
            'disk_gb': 1}


def _power(view, uuid):
    info = view.driver.get_domain(uuid)
    return None if info is None else info.power_state


def test_shelve_offload_and_unshelve_from_the_snapshot(view, glance,
                                                       tmp_path):
    uuid = new_uuid()
    inst = _inst(uuid)
    tasks.HANDLERS['build'](view, inst, {})
    snap_id = GlanceClient(glance.url).create(disk_format='qcow2')['id']
    image = {'url': glance.url, 'grant': 'g1.write.sig'}
    glance.grant = 'g1.write.sig'

    tasks.HANDLERS['shelve'](view, inst, {'image_name': 'vm-shelved',
                                          'image_id': snap_id,
                                          'image': image})
    assert _power(view, uuid) == power.SHUTDOWN
    assert glance.images[snap_id]['meta']['status'] == 'active'
    assert tasks.result_values('shelve', {'image_id': snap_id}) == {
        'shelved_image_id': snap_id}

    tasks.HANDLERS['shelve_offload'](view, inst, {})
    assert view.driver.get_domain(uuid) is None
    assert not (tmp_path / 'instances' / uuid).exists()

    glance.grant = 'g1.read.sig'
    # built from the snapshot alone: its base image is gone by now
    inst = dict(inst, image_ref='deleted-base')
    tasks.HANDLERS['unshelve'](view, inst, {
        'image_ref': snap_id, 'ports': [],
        'image': {'url': glance.url, 'grant': 'g1.read.sig'}})
    assert _power(view, uuid) == power.RUNNING
    assert head(tmp_path / 'instances' / uuid / 'disk') == b'cirros'


def test_unshelve_of_a_shelved_guest_powers_it_on_in_place(view, glance):
    uuid = new_uuid()
    inst = _inst(uuid)
    tasks.HANDLERS['build'](view, inst, {})
    snap_id = GlanceClient(glance.url).create(disk_format='qcow2')['id']
    glance.grant = 'g1.write.sig'
    tasks.HANDLERS['shelve'](view, inst, {
        'image_name': 'vm-shelved', 'image_id': snap_id,
        'image': {'url': glance.url, 'grant': 'g1.write.sig'}})
    tasks.HANDLERS['unshelve'](view, inst, {'image_ref': snap_id})
    assert _power(view, uuid) == power.RUNNING


def test_a_failed_snapshot_starts_the_guest_again(view, glance):
    uuid = new_uuid()
    inst = _inst(uuid)
    tasks.HANDLERS['build'](view, inst, {})
    snap_id = GlanceClient(glance.url).create(disk_format='qcow2')['id']
    glance.fail[('PUT', '/v2/images/%s/file' % snap_id)] = 500
    with pytest.raises(virt.VirtError, match='upload of snapshot') as exc:
        tasks.HANDLERS['shelve'](view, inst, {
            'image_name': 'vm-shelved', 'image_id': snap_id,
            'image': {'url': glance.url, 'grant': 'g1.write.sig'}})
    assert exc.value.rolled_back
    assert _power(view, uuid) == power.RUNNING

"""Every operation of the libvirt driver, on libvirt's test driver."""

import json
import os
import shutil
import subprocess

import pytest

from tests.unit.compute_agent.libvirt import require_libvirt

libvirt = require_libvirt()

from common.states import power  # noqa: E402
from compute_agent.virt import driver as virt  # noqa: E402
from compute_agent.virt.libvirt import config  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import SMALL  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import TINY  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import new_uuid  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import node_domain  # noqa: E402

RUNNING = (power.RUNNING, None)


@pytest.fixture
def drv(make_driver):
    return make_driver()


@pytest.fixture
def uuid(drv):
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros')
    return uuid


def state(drv, uuid):
    info = drv.get_domain(uuid)
    return None if info is None else (info.power_state, info.reason)


def dom_of(drv, uuid):
    """The domain on the driver's own connection, to act behind its back."""
    return drv.connection.get().lookupByUUIDString(uuid)


def head(path, size=6):
    """The first bytes a guest reads from disk ``path`` (through its
    backing chain: qemu-img converts it to raw)."""
    raw = str(path) + '.raw-view'
    subprocess.run(['qemu-img', 'convert', '-O', 'raw', str(path), raw],
                   check=True)
    try:
        with open(raw, 'rb') as f:
            return f.read(size)
    finally:
        os.unlink(raw)


def qemu_info(path):
    return json.loads(subprocess.run(
        ['qemu-img', 'info', '--output=json', str(path)], check=True,
        capture_output=True, text=True).stdout)


def xml_of(drv, uuid):
    return dom_of(drv, uuid).XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)


# --- spawn, destroy, queries -------------------------------------------------------

def test_spawn_defines_and_starts_from_image_and_flavor(drv, uuid, tmp_path,
                                                        images):
    assert state(drv, uuid) == RUNNING
    name, flavor, image = config.instance_of(xml_of(drv, uuid))
    assert (name, flavor, image) == ('vm', TINY, 'cirros')
    disk = tmp_path / 'instances' / uuid / 'disk'
    assert config.disks_of(xml_of(drv, uuid)) == [(str(disk), 'qcow2')]
    assert head(disk) == b'cirros'
    info = qemu_info(disk)      # an overlay on the image, the flavor's size
    assert info['backing-filename'] == str(images / 'cirros')
    assert info['virtual-size'] == TINY.disk_gb * 1024 ** 3
    assert drv.image_bases_in_use() == {str(images / 'cirros')}
    assert dom_of(drv, uuid).name() == 'tristate-%s' % uuid


def test_spawn_of_a_missing_image_fails_clean(drv, tmp_path):
    uuid = new_uuid()
    with pytest.raises(virt.VirtError, match='image .nope. not found') as exc:
        drv.spawn(uuid, name='vm', flavor=TINY, image_ref='nope')
    assert exc.value.rolled_back
    assert drv.get_domain(uuid) is None
    assert not (tmp_path / 'instances' / uuid).exists()


def test_spawn_refuses_an_existing_domain_and_path_tricks(drv, uuid):
    with pytest.raises(virt.VirtError, match='already exists'):
        drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros')
    with pytest.raises(virt.VirtError, match='plain file name'):
        drv.spawn(new_uuid(), name='vm', flavor=TINY, image_ref='../etc')
    assert state(drv, uuid) == RUNNING


def test_destroy_undefines_removes_files_and_is_idempotent(drv, uuid,
                                                           tmp_path):
    drv.suspend(uuid)                       # a managed save image too
    drv.destroy(uuid)
    assert drv.get_domain(uuid) is None
    assert not (tmp_path / 'instances' / uuid).exists()
    drv.destroy(uuid)                       # already gone: fine
    drv.destroy(new_uuid())


def test_operations_on_a_missing_domain_raise_domain_not_found(drv):
    with pytest.raises(virt.DomainNotFound):
        drv.power_on(new_uuid())


def test_capacity_comes_from_the_host(drv):
    cap = drv.get_capacity()
    assert (cap.vcpus, cap.memory_mb) == (16, 16384)
    assert cap.disk_gb > 0


def test_list_domains_reports_every_domain_with_its_reason(make_driver,
                                                           make_node):
    crashed, blocked, pm = new_uuid(), new_uuid(), new_uuid()
    drv = make_driver(uri=make_node(node_domain(crashed, runstate=6),
                                    node_domain(blocked, runstate=2),
                                    node_domain(pm, runstate=7)))
    listed = {i.uuid: (i.power_state, i.reason) for i in drv.list_domains()}
    assert listed == {crashed: (power.CRASHED, 'crashed'),
                      blocked: (power.RUNNING, None),
                      pm: (power.SUSPENDED, 'guest')}


# --- power ------------------------------------------------------------------------

def test_power_off_then_on(drv, uuid):
    drv.power_off(uuid, timeout=5)
    assert state(drv, uuid) == (power.SHUTDOWN, None)    # asked: no reason
    assert dom_of(drv, uuid).state() == [libvirt.VIR_DOMAIN_SHUTOFF,
                                         libvirt.VIR_DOMAIN_SHUTOFF_SHUTDOWN]
    drv.power_off(uuid)                                  # already off: fine
    drv.power_on(uuid)
    assert state(drv, uuid) == RUNNING
    drv.power_on(uuid)                                   # already on: fine


def test_power_off_with_timeout_zero_destroys_at_once(drv, uuid):
    drv.power_off(uuid, timeout=0)
    assert state(drv, uuid) == (power.SHUTDOWN, None)
    assert dom_of(drv, uuid).state()[1] == libvirt.VIR_DOMAIN_SHUTOFF_DESTROYED


class _DeafDomain:
    """A running domain that ignores the ACPI shutdown."""

    def __init__(self):
        self.destroyed = False

    def isActive(self):
        return 0 if self.destroyed else 1

    def state(self):
        if self.destroyed:
            return [libvirt.VIR_DOMAIN_SHUTOFF, 2]
        return [libvirt.VIR_DOMAIN_RUNNING, 1]

    def shutdown(self):
        pass

    def destroy(self):
        self.destroyed = True

    def UUIDString(self):
        return 'deaf'


def test_a_shutdown_the_guest_ignores_ends_in_destroy_at_the_deadline(drv):
    drv.poll_interval = 0.01
    dom = _DeafDomain()
    drv._shut_down(dom, 0.1)
    assert dom.destroyed


def test_reboot_soft_and_hard(drv, uuid):
    drv.reboot(uuid)
    assert state(drv, uuid) == RUNNING
    drv.reboot(uuid, hard=True)
    assert state(drv, uuid) == RUNNING
    drv.power_off(uuid)
    drv.reboot(uuid, hard=True)                          # from stopped
    assert state(drv, uuid) == RUNNING


def test_pause_and_unpause(drv, uuid):
    drv.pause(uuid)
    assert state(drv, uuid) == (power.PAUSED, None)
    with pytest.raises(virt.VirtError, match='cannot pause .* PAUSED'):
        drv.pause(uuid)
    drv.unpause(uuid)
    assert state(drv, uuid) == RUNNING
    with pytest.raises(virt.VirtError, match='cannot unpause'):
        drv.unpause(uuid)


def test_suspend_is_a_managed_save_and_resume_restores(drv, uuid):
    drv.suspend(uuid)
    assert state(drv, uuid) == (power.SHUTDOWN, 'saved')
    assert dom_of(drv, uuid).hasManagedSaveImage(0)
    drv.resume(uuid)
    assert state(drv, uuid) == RUNNING
    with pytest.raises(virt.VirtError, match='not suspended'):
        drv.resume(uuid)


# --- detours ------------------------------------------------------------------------

def test_rescue_boots_the_rescue_image_and_unrescue_restores(drv, uuid,
                                                             tmp_path):
    before = xml_of(drv, uuid)
    drv.rescue(uuid, image_ref='rescue')
    assert state(drv, uuid) == RUNNING
    files = tmp_path / 'instances' / uuid
    assert [p for p, _ in config.disks_of(xml_of(drv, uuid))] == [
        str(files / 'disk.rescue'), str(files / 'disk')]
    with pytest.raises(virt.VirtError, match='already rescued'):
        drv.rescue(uuid, image_ref='rescue')
    drv.unrescue(uuid)
    assert state(drv, uuid) == RUNNING
    assert xml_of(drv, uuid) == before
    assert not (files / 'disk.rescue').exists()
    with pytest.raises(virt.VirtError, match='not rescued'):
        drv.unrescue(uuid)


def test_unrescue_of_a_stopped_instance_leaves_it_stopped(drv, uuid):
    drv.power_off(uuid)
    drv.rescue(uuid, image_ref='rescue')
    assert state(drv, uuid) == RUNNING
    drv.unrescue(uuid)
    assert state(drv, uuid)[0] == power.SHUTDOWN


def test_rescue_with_a_missing_image_changes_nothing(drv, uuid):
    before = xml_of(drv, uuid)
    with pytest.raises(virt.VirtError) as exc:
        drv.rescue(uuid, image_ref='nope')
    assert exc.value.rolled_back
    assert (state(drv, uuid), xml_of(drv, uuid)) == (RUNNING, before)


def test_rebuild_replaces_the_disk_and_keeps_power(drv, uuid, images,
                                                   tmp_path):
    (images / 'debian').write_bytes(b'debian' * 10)
    drv.rebuild(uuid, image_ref='debian')
    assert state(drv, uuid) == RUNNING
    assert config.instance_of(xml_of(drv, uuid))[2] == 'debian'
    disk = tmp_path / 'instances' / uuid / 'disk'
    assert head(disk) == b'debian'
    assert qemu_info(disk)['backing-filename'] == str(images / 'debian')
    drv.power_off(uuid)
    drv.rebuild(uuid, image_ref='cirros')
    assert state(drv, uuid)[0] == power.SHUTDOWN


def test_the_config_drive_is_attached_kept_and_replaced(drv, images,
                                                        tmp_path):
    uuid = new_uuid()
    first, second = tmp_path / 'first.iso', tmp_path / 'second.iso'
    for path in (first, second):
        path.write_bytes(b'iso')
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros',
              config_drive=str(first))
    assert config.config_drive_of(xml_of(drv, uuid)) == str(first)
    drv.resize(uuid, flavor=SMALL)      # a regenerated definition keeps it
    assert config.config_drive_of(xml_of(drv, uuid)) == str(first)
    drv.confirm_resize(uuid)
    drv.rebuild(uuid, image_ref='cirros', config_drive=str(second))
    assert config.config_drive_of(xml_of(drv, uuid)) == str(second)
    drv.rebuild(uuid, image_ref='cirros')
    assert config.config_drive_of(xml_of(drv, uuid)) is None


def test_resize_then_revert_restores_the_old_definition(drv, uuid):
    before = xml_of(drv, uuid)
    drv.resize(uuid, flavor=SMALL)
    assert state(drv, uuid) == RUNNING
    dom = dom_of(drv, uuid)
    assert (dom.maxMemory() // 1024, dom.maxVcpus()) == (1024, 2)
    assert config.instance_of(xml_of(drv, uuid))[1] == SMALL
    with pytest.raises(virt.VirtError, match='waits to be confirmed'):
        drv.resize(uuid, flavor=TINY)
    drv.revert_resize(uuid)
    assert state(drv, uuid) == RUNNING
    assert xml_of(drv, uuid) == before
    with pytest.raises(virt.VirtError, match='no resize to revert'):
        drv.revert_resize(uuid)


def test_resize_then_confirm_keeps_the_new_flavor(drv, uuid):
    drv.power_off(uuid)
    drv.resize(uuid, flavor=SMALL)
    assert state(drv, uuid)[0] == power.SHUTDOWN         # same power
    drv.confirm_resize(uuid)
    assert config.instance_of(xml_of(drv, uuid))[1] == SMALL
    with pytest.raises(virt.VirtError, match='no resize to confirm'):
        drv.confirm_resize(uuid)


def test_snapshot_writes_a_flat_qcow2_and_keeps_the_domain_running(
        drv, uuid, images, tmp_path):
    target = tmp_path / 'snap.qcow2'
    assert drv.snapshot(uuid, image_name='snap', target=str(target)) == 'qcow2'
    info = qemu_info(target)
    assert (info['format'], 'backing-filename' in info) == ('qcow2', False)
    assert head(target) == b'cirros'
    assert state(drv, uuid) == RUNNING
    drv.pause(uuid)
    drv.snapshot(uuid, image_name='snap2', target=str(tmp_path / 'snap2'))
    assert state(drv, uuid) == (power.PAUSED, None)      # paused as before
    shutil.copy(target, images / 'snap')     # as if uploaded and fetched
    new = new_uuid()
    drv.spawn(new, name='copy', flavor=TINY, image_ref='snap')
    assert state(drv, new) == RUNNING
    assert head(tmp_path / 'instances' / new / 'disk') == b'cirros'


def test_snapshot_without_a_target_is_not_supported(drv, uuid):
    with pytest.raises(virt.NotSupported, match='image service'):
        drv.snapshot(uuid, image_name='snap')
    assert state(drv, uuid) == RUNNING


def test_set_password_needs_a_running_domain(drv, uuid):
    drv.set_password(uuid, password='s3cret')
    drv.power_off(uuid)
    with pytest.raises(virt.VirtError, match='cannot set_password'):
        drv.set_password(uuid, password='s3cret')


def test_set_password_without_guest_agent_is_not_supported(drv, uuid,
                                                           monkeypatch):
    def no_agent(self, user, password, flags):
        err = libvirt.libvirtError('guest agent is not responding')
        err.err = (libvirt.VIR_ERR_AGENT_UNRESPONSIVE, 0, '', 2, '', '',
                   '', 0, 0)
        raise err
    monkeypatch.setattr(libvirt.virDomain, 'setUserPassword', no_agent)
    with pytest.raises(virt.NotSupported, match='guest agent') as exc:
        drv.set_password(uuid, password='s3cret')
    assert exc.value.rolled_back
    assert state(drv, uuid) == RUNNING


def _no_agent(monkeypatch):
    def no_agent(self, user, password, flags):
        err = libvirt.libvirtError('guest agent is not responding')
        err.err = (libvirt.VIR_ERR_AGENT_UNRESPONSIVE, 0, '', 2, '', '',
                   '', 0, 0)
        raise err
    monkeypatch.setattr(libvirt.virDomain, 'setUserPassword', no_agent)


def test_a_rescue_password_given_goes_through_the_guest_agent(
        drv, uuid, monkeypatch):
    taken = []
    monkeypatch.setattr(libvirt.virDomain, 'setUserPassword',
                        lambda self, user, pw, flags: taken.append((user, pw)))
    drv.rescue(uuid, image_ref='rescue', password='Resc-ue-1',
               password_required=True)
    assert taken == [('root', 'Resc-ue-1')]
    assert drv._files(uuid).load('rescue') is not None  # noqa: SLF001


def test_a_rescue_password_given_without_a_guest_agent_undoes_it(
        make_driver, monkeypatch):
    drv = make_driver(rescue_password_timeout=0)
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros')
    before = xml_of(drv, uuid)
    _no_agent(monkeypatch)
    with pytest.raises(virt.VirtError, match='no guest agent') as exc:
        drv.rescue(uuid, image_ref='rescue', password='Resc-ue-1',
                   password_required=True)
    assert exc.value.rolled_back and 'Resc-ue-1' not in str(exc.value)
    assert (state(drv, uuid), xml_of(drv, uuid)) == (RUNNING, before)
    assert drv._files(uuid).load('rescue') is None  # noqa: SLF001
    # a generated one is not waited for
    drv.rescue(uuid, image_ref='rescue', password='generated')
    assert drv._files(uuid).load('rescue') is not None  # noqa: SLF001


def test_migrate_out_without_a_prepared_destination_is_refused(drv, uuid):
    with pytest.raises(virt.VirtError, match='did not prepare') as exc:
        drv.migrate_out(uuid, dest='h2')
    assert exc.value.rolled_back
    assert state(drv, uuid) == RUNNING


def test_the_test_driver_cannot_migrate_and_the_guest_stays(drv, uuid,
                                                            make_driver,
                                                            tmp_path):
    """libvirt's test:/// driver has no migration (its domains live in the
    client library): the move fails rolled back, the domain untouched. The
    real one: tests/functional/test_live_migration_on_real_qemu.py."""
    dest = make_driver(host='h2')
    dest.instances_path = str(tmp_path / 'instances-h2')
    incoming = dest.prepare_incoming(uuid, flavor=TINY, image_ref='cirros')
    assert os.path.exists(incoming['disk'])
    assert qemu_info(incoming['disk'])['backing-filename'].endswith('cirros')
    assert incoming['uri'].startswith('qemu+tcp://')
    with pytest.raises(virt.VirtError, match='live migration') as exc:
        drv.migrate_out(uuid, dest='h2', incoming=incoming)
    assert exc.value.rolled_back
    assert state(drv, uuid) == RUNNING
    dest.abandon_incoming(uuid)
    assert not os.path.exists(os.path.dirname(incoming['disk']))

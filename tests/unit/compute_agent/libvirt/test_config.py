"""Domain XML per hypervisor type, the [libvirt] options, and the disks."""

import os
from xml.etree import ElementTree

import pytest
from oslo_config import cfg

from tests.unit.compute_agent.libvirt import require_libvirt

libvirt = require_libvirt()

from common import conf as tconf  # noqa: E402
from compute_agent.virt.libvirt import LibvirtDriver  # noqa: E402
from compute_agent.virt.libvirt import config  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import TINY  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import new_uuid  # noqa: E402


def xml(virt_type, **kwargs):
    args = dict(virt_type=virt_type, uuid=new_uuid(), name='vm',
                flavor=TINY, image_ref='cirros',
                disks=[('/i/disk', 'qcow2'), ('/i/two', 'raw')])
    args.update(kwargs)
    return config.domain_xml(**args)


@pytest.mark.parametrize('virt_type', config.VIRT_TYPES)
def test_metadata_and_disks_round_trip(virt_type):
    text = xml(virt_type, name='<a & "b">', image_ref="it's")
    assert config.instance_of(text) == ('<a & "b">', TINY, "it's")
    assert config.disks_of(text) == [('/i/disk', 'qcow2'), ('/i/two', 'raw')]


def test_each_type_has_its_devices_and_lifecycle():
    kvm, xen = xml('kvm'), xml('xen')
    assert "dev='vda' bus='virtio'" in kvm and "dev='vdb'" in kvm
    assert "dev='xvda' bus='xen'" in xen and "dev='xvdb'" in xen
    assert "machine='xenfv'" in xen
    assert config.lifecycle_actions(kvm)['on_crash'] == 'destroy'
    assert config.lifecycle_actions(xen)['on_crash'] == 'preserve'


def test_an_unknown_virt_type_is_refused(tmp_path):
    with pytest.raises(ValueError, match='virt_type'):
        LibvirtDriver(virt_type='lxc', instances_path=str(tmp_path))


def test_from_conf_reads_the_libvirt_group(tmp_path):
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    conf([], project='tristate', default_config_files=[])
    conf.set_override('state_dir', str(tmp_path))
    conf.set_override('virt_type', 'xen', group='libvirt')
    conf.set_override('event_debounce', 0, group='libvirt')
    conf.set_override('shutdown_timeout', 7, group='compute')
    drv = LibvirtDriver.from_conf(conf)
    assert (drv.uri, drv.virt_type, drv.event_debounce,
            drv.shutdown_timeout) == ('qemu:///system', 'xen', 0, 7)
    assert drv.images is None            # the agent passes each image
    assert drv.instances_path == os.path.join(str(tmp_path), 'instances')


@pytest.mark.parametrize('virt_type, debounce', [
    ('kvm', 0.05), ('qemu', 0.05), ('xen', 0.5)])
def test_the_event_debounce_defaults_by_hypervisor(tmp_path, virt_type,
                                                   debounce):
    """Xen (libxl) reports a guest's reboot as a stop and a start; QEMU
    does not (tests/functional/regressions/
    test_guest_reboot_is_not_a_stop.py)."""
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    conf([], project='tristate', default_config_files=[])
    conf.set_override('state_dir', str(tmp_path))
    conf.set_override('virt_type', virt_type, group='libvirt')
    assert LibvirtDriver.from_conf(conf).event_debounce == debounce


@pytest.mark.parametrize('virt_type', config.VIRT_TYPES)
def test_a_config_drive_is_a_read_only_cdrom_after_the_disks(virt_type):
    text = xml(virt_type, config_drive='/s/drive.iso')
    assert config.config_drive_of(text) == '/s/drive.iso'
    # not one of the disks resize, rescue and snapshot work on
    assert config.disks_of(text) == [('/i/disk', 'qcow2'), ('/i/two', 'raw')]
    root = ElementTree.fromstring(text)
    (cdrom,) = root.findall("devices/disk[@device='cdrom']")
    assert cdrom.find('readonly') is not None
    assert cdrom.find('target').attrib == {'dev': 'hdd', 'bus': 'ide'}
    assert config.config_drive_of(xml(virt_type)) is None

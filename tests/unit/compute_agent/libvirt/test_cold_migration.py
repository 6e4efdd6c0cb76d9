"""Cold migration on the libvirt driver (libvirt's test driver, real
qemu-img files): the destination's disk holds what the source's did, grown
to the new flavor; the source's disk file is never written, so a revert
starts it byte for byte as it was, its size included; destroying the
destination's copy removes its files."""

import hashlib
import json
import subprocess

from tests.unit.compute_agent.libvirt import require_libvirt

libvirt = require_libvirt()

from common.states import power  # noqa: E402
from compute_agent.virt.libvirt import LibvirtDriver  # noqa: E402
from compute_agent.virt.libvirt.disks import LocalImages  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import SMALL  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import TINY  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import new_uuid  # noqa: E402

GIB = 1024 ** 3


def driver(tmp_path, images, make_node, host):
    drv = LibvirtDriver(uri=make_node(), images=LocalImages(images),
                        instances_path=str(tmp_path / host),
                        event_debounce=0.05, shutdown_timeout=1)
    drv.init_host(host)
    return drv


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def virtual_size(path):
    return json.loads(subprocess.run(
        ['qemu-img', 'info', '--output=json', str(path)], check=True,
        capture_output=True, text=True).stdout)['virtual-size']


def test_a_cold_migration_copies_the_disk_and_leaves_the_source_as_it_was(
        tmp_path, images, make_node):
    source = driver(tmp_path, images, make_node, 'h1')
    dest = driver(tmp_path, images, make_node, 'h2')
    try:
        uuid = new_uuid()
        source.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros')
        source.power_off(uuid)
        src_disk = tmp_path / 'h1' / uuid / 'disk'
        before, size = digest(src_disk), virtual_size(src_disk)
        sent = tmp_path / 'sent.qcow2'

        source.export_disk(uuid, target=str(sent))
        dest.migrate_in(uuid, name='vm', flavor=SMALL, image_ref='cirros',
                        disk=str(sent), start=True)

        dst_disk = tmp_path / 'h2' / uuid / 'disk'
        assert dest.get_domain(uuid).power_state == power.RUNNING
        assert virtual_size(dst_disk) == SMALL.disk_gb * GIB
        subprocess.run(['qemu-img', 'compare', '-q', str(src_disk),
                        str(dst_disk)], check=True)    # the same content
        # revert: the destination's copy goes, the source runs as it was
        dest.destroy(uuid)
        assert not (tmp_path / 'h2' / uuid).exists()
        source.power_on(uuid)
        assert source.get_domain(uuid).power_state == power.RUNNING
        assert (digest(src_disk), virtual_size(src_disk)) == (before, size)
    finally:
        source.cleanup_host()
        dest.cleanup_host()


def test_the_destination_gets_the_config_drive_and_the_console_log(
        tmp_path, images, make_node):
    """Issue 25: a carried config drive is the destination's CD-ROM, and
    the end of the source's console log starts the destination's."""
    source = driver(tmp_path, images, make_node, 'h1')
    dest = driver(tmp_path, images, make_node, 'h2')
    try:
        uuid = new_uuid()
        source.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros')
        source.power_off(uuid)
        sent = tmp_path / 'sent.qcow2'
        source.export_disk(uuid, target=str(sent))
        drive = tmp_path / 'placed.iso'
        drive.write_bytes(b'an ISO')

        dest.migrate_in(uuid, name='vm', flavor=TINY, image_ref='cirros',
                        disk=str(sent), start=False,
                        config_drive=str(drive), console_log=b'BOOT-OK\n')

        xml = dest.connection.run(
            lambda conn: conn.lookupByUUIDString(uuid).XMLDesc(0))
        assert "device='cdrom'" in xml and str(drive) in xml
        assert dest.get_console_output(uuid, max_bytes=100) == b'BOOT-OK\n'
    finally:
        source.cleanup_host()
        dest.cleanup_host()

"""Guest NUMA cells (``hw:numa_nodes`` > 1, issue 22) in the domain XML:
made by spawn on libvirt's test driver for KVM, QEMU and Xen, kept by every
definition the driver regenerates (rescue and unrescue here), and read back
in MiB whatever unit libvirt writes them in."""

import pytest

from tests.unit.compute_agent.libvirt import require_libvirt

libvirt = require_libvirt()

from common import numa  # noqa: E402
from compute_agent.virt.libvirt import config  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import SMALL  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import new_uuid  # noqa: E402

CELLS = numa.cells_of({'hw:numa_nodes': '2'}, SMALL.vcpus, SMALL.memory_mb)


def xml_of(drv, uuid):
    return drv.connection.get().lookupByUUIDString(uuid).XMLDesc(
        libvirt.VIR_DOMAIN_XML_INACTIVE)


@pytest.mark.parametrize('virt_type', ['kvm', 'qemu', 'xen'])
def test_spawn_gives_the_guest_its_numa_cells(make_driver, virt_type):
    drv = make_driver(virt_type=virt_type)
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=SMALL, image_ref='cirros',
              numa_cells=CELLS)
    xml = xml_of(drv, uuid)
    assert CELLS == [{'id': 0, 'cpus': '0', 'memory_mb': 512},
                     {'id': 1, 'cpus': '1', 'memory_mb': 512}]
    assert config.numa_of(xml) == CELLS
    # libvirt stores them in KiB
    assert "<cell id='1' cpus='1' memory='524288' unit='KiB'" in xml


def test_a_guest_without_cells_has_no_numa_element(make_driver):
    drv = make_driver(virt_type='qemu')
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=SMALL, image_ref='cirros')
    assert config.numa_of(xml_of(drv, uuid)) is None
    assert '<numa>' not in xml_of(drv, uuid)


def test_regenerated_definitions_keep_the_cells(make_driver):
    drv = make_driver()
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=SMALL, image_ref='cirros',
              numa_cells=CELLS)
    drv.rescue(uuid, image_ref='rescue')
    assert config.numa_of(xml_of(drv, uuid)) == CELLS
    drv.unrescue(uuid)
    assert config.numa_of(xml_of(drv, uuid)) == CELLS


def test_manual_cells_in_the_template():
    cells = numa.cells_of({'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0',
                           'hw:numa_cpus.1': '1-3', 'hw:numa_mem.0': '256',
                           'hw:numa_mem.1': '768'}, 4, 1024)
    xml = config.domain_xml(virt_type='kvm', uuid=new_uuid(), name='vm',
                            flavor=SMALL, image_ref='i', disks=[],
                            numa_cells=cells)
    assert ("<cpu mode='host-model'>\n    <numa>\n"
            "      <cell id='0' cpus='0' memory='256' unit='MiB'/>\n"
            "      <cell id='1' cpus='1-3' memory='768' unit='MiB'/>\n"
            "    </numa>\n  </cpu>") in xml

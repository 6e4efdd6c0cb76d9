"""A guest whose ports are in no security group was built on Xen with its
links up.

A port in no group means all its traffic dropped, which Tristate makes
real with the card's ``<link state='down'/>`` (common/secgroups.py). libxl
has no link state (compute_agent/virt/libvirt/links.py): so removing the
group of a guest on Xen is refused, rolled back. But an offloaded guest
(SHELVED_OFFLOADED) has no host: its removeSecurityGroup changes its ports
alone, and its unshelve onto a Xen host built it with the link state libxl
does not honour: the guest passed all traffic while the API showed it in
no group. Found by the session-16 hostile-input review (the Xen check was
in the live change only, not in the build). Fixed: the libvirt driver's
spawn on Xen refuses a port in no group before anything is made (the
build, or unshelve, fails rolled back, saying why), as the live change
does; so does the arrival of a cold migration (a guest of a KVM host
moved to a Xen one).
"""

import subprocess
import uuid as uuidlib

import pytest

from common.flavors import Flavor

libvirt = pytest.importorskip('libvirt')

from compute_agent.virt.driver import VirtError  # noqa: E402
from tests.functional.regressions import libvirt_support  # noqa: E402

NET = {'id': 'id-net1', 'name': 'net1', 'bridge': 'br-guest',
       'libvirt_network': None, 'mtu': 1450, 'cidr': '10.20.0.0/24',
       'gateway': '10.20.0.1', 'dns': ['10.20.0.1'], 'ipv6_cidr': None,
       'ipv6_gateway': None}


def _port(groups):
    return {'id': 'port-1', 'mac': 'fa:16:3e:00:00:01', 'network': NET,
            'fixed_ips': [{'address': '10.20.0.11', 'version': 4}],
            'security_groups': groups}


@pytest.fixture
def xen(tmp_path):
    with libvirt_support.started_driver(tmp_path, 'xen-host',
                                        virt_type='xen') as drv:
        yield drv


def test_xen_refuses_to_build_a_guest_in_no_group(xen):
    uuid = str(uuidlib.uuid4())
    with pytest.raises(VirtError, match='no security group.*libxl') as exc:
        xen.spawn(uuid, name='vm', flavor=Flavor('tiny', 1, 64, 1),
                  image_ref='img', ports=[_port([])])
    assert exc.value.rolled_back
    assert xen.get_domain(uuid) is None          # nothing made
    # in the default group it builds (its link up, as libxl runs it)
    xen.spawn(uuid, name='vm', flavor=Flavor('tiny', 1, 64, 1),
              image_ref='img', ports=[_port(['default'])])
    assert xen.get_domain(uuid) is not None


def test_xen_refuses_a_cold_migration_of_a_guest_in_no_group(xen, tmp_path):
    uuid = str(uuidlib.uuid4())
    disk = tmp_path / 'disk.qcow2'
    subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', str(disk),
                    '1M'], check=True)
    with pytest.raises(VirtError, match='no security group.*libxl'):
        xen.migrate_in(uuid, name='vm', flavor=Flavor('tiny', 1, 64, 1),
                       image_ref='img', disk=str(disk), ports=[_port([])])
    assert xen.get_domain(uuid) is None

"""Ports in the domain XML: one ``<interface>`` per port, in order, with
its MAC on its network's bridge (or libvirt network) and MTU; virtio on
KVM/QEMU, libxl's default card on Xen; kept in the metadata through
rebuild, rescue and resize; bad port data refused before anything is made.
"""

import pytest

from tests.unit.compute_agent.libvirt import require_libvirt
from tests.unit.compute_agent.port_data import network
from tests.unit.compute_agent.port_data import port

libvirt = require_libvirt()

from compute_agent.net import ports as net_ports  # noqa: E402
from compute_agent.virt import driver as virt  # noqa: E402
from compute_agent.virt.libvirt import config  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import SMALL  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import TINY  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import new_uuid  # noqa: E402

TWO = [port(1), port(2, net=network('net2', bridge=None,
                                      libvirt_network='default', mtu=None))]


def xml(virt_type, ports):
    return config.domain_xml(virt_type=virt_type, uuid=new_uuid(), name='vm',
                             flavor=TINY, image_ref='cirros',
                             disks=[('/i/disk', 'qcow2')],
                             ports=net_ports.checked(ports))


@pytest.mark.parametrize('virt_type', ['kvm', 'qemu'])
def test_kvm_gets_a_virtio_card_per_port_in_order(virt_type):
    text = xml(virt_type, TWO)
    assert config.interfaces_of(text) == [
        ('bridge', 'br-guest', 'fa:16:3e:00:00:01', 'virtio', 1450),
        ('network', 'default', 'fa:16:3e:00:00:02', 'virtio', None)]
    assert config.ports_of(text) == net_ports.checked(TWO)


def test_xen_gets_libxl_default_cards_without_mtu():
    text = xml('xen', TWO)
    assert config.interfaces_of(text) == [
        ('bridge', 'br-guest', 'fa:16:3e:00:00:01', None, None),
        ('network', 'default', 'fa:16:3e:00:00:02', None, None)]
    assert config.ports_of(text)[0]['network']['mtu'] == 1450


@pytest.mark.parametrize('virt_type', config.VIRT_TYPES)
def test_no_ports_no_interface_and_no_ports_metadata(virt_type):
    text = xml(virt_type, [])
    assert config.interfaces_of(text) == []
    assert config.ports_of(text) == []
    assert 'ports' not in text


@pytest.mark.parametrize('bad, field', [
    (dict(port(1), mac='fa:16:3e:00:00'), r'ports\[0\]\.mac'),
    (dict(port(1), mac="fa:16:3e:00:00:01'/><x"), r'ports\[0\]\.mac'),
    (port(1, bridge="br'><evil"), r'ports\[0\]\.network\.bridge'),
    (port(1, bridge='a-name-far-too-long'), r'network\.bridge'),
    (port(1, bridge=None), r'bridge or a libvirt_network'),
    (port(1, mtu=40), r'network\.mtu'),
    (port(1, mtu='1500'), r'network\.mtu'),
    (port(1, address='10.20.0.300'), r'fixed_ips\[0\]\.address'),
    (port(1, gateway='gw'), r'network\.gateway'),
    (port(1, dns=['8.8.8.8', 'x']), r'network\.dns\[1\]'),
    (port(1, cidr='10.20.0.0/33'), r'network\.cidr'),
])
def test_bad_port_data_is_refused_naming_the_field(bad, field):
    with pytest.raises(virt.VirtError, match=field) as exc:
        net_ports.checked([bad])
    assert exc.value.rolled_back


# --- the driver, on libvirt's test driver ------------------------------------

@pytest.fixture
def drv(make_driver):
    return make_driver()


def xml_of(drv, uuid):
    return drv.connection.get().lookupByUUIDString(uuid).XMLDesc(
        libvirt.VIR_DOMAIN_XML_INACTIVE)


def test_spawn_with_ports_defines_the_interfaces(drv):
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros', ports=TWO)
    text = xml_of(drv, uuid)
    assert [nic[:3] for nic in config.interfaces_of(text)] == [
        ('bridge', 'br-guest', 'fa:16:3e:00:00:01'),
        ('network', 'default', 'fa:16:3e:00:00:02')]
    assert drv.domain_ports() == {uuid: net_ports.checked(TWO)}
    assert drv.domain_ports(uuid) == {uuid: net_ports.checked(TWO)}
    drv.destroy(uuid)
    assert drv.domain_ports() == {} == drv.domain_ports(uuid)


def test_spawn_with_bad_ports_makes_nothing(drv, tmp_path):
    uuid = new_uuid()
    with pytest.raises(virt.VirtError, match='mac') as exc:
        drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros',
                  ports=[dict(port(1), mac='nope')])
    assert exc.value.rolled_back
    assert drv.get_domain(uuid) is None
    assert not (tmp_path / 'instances' / uuid).exists()


def test_ports_survive_resize_rescue_and_a_rebuild_without_ports(drv):
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros', ports=TWO)
    want = config.interfaces_of(xml_of(drv, uuid))
    drv.resize(uuid, flavor=SMALL)
    assert config.interfaces_of(xml_of(drv, uuid)) == want
    drv.confirm_resize(uuid)
    drv.rescue(uuid, image_ref='rescue')
    assert config.interfaces_of(xml_of(drv, uuid)) == want
    drv.unrescue(uuid)
    drv.rebuild(uuid, image_ref='cirros')           # an older conductor
    assert config.interfaces_of(xml_of(drv, uuid)) == want
    assert drv.domain_ports(uuid) == {uuid: net_ports.checked(TWO)}


def test_a_rebuild_with_ports_replaces_them(drv):
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros', ports=TWO)
    drv.rebuild(uuid, image_ref='cirros', ports=[port(3)])
    assert [nic[2] for nic in config.interfaces_of(xml_of(drv, uuid))] == [
        'fa:16:3e:00:00:03']
    drv.rebuild(uuid, image_ref='cirros', ports=[])
    assert config.interfaces_of(xml_of(drv, uuid)) == []
    assert drv.domain_ports() == {}


# --- security groups: the link state (common/secgroups.py) ------------------------

def _in(ports, groups):
    return [dict(p, security_groups=list(groups)) for p in ports]


@pytest.mark.parametrize('virt_type', config.VIRT_TYPES)
def test_a_port_in_no_group_has_its_link_down(virt_type):
    text = xml(virt_type, [_in([port(1)], [])[0], port(2)])
    assert config.link_states_of(text) == {'fa:16:3e:00:00:01': 'down',
                                           'fa:16:3e:00:00:02': 'up'}
    assert config.ports_of(text)[0]['security_groups'] == []
    assert "<link state='down'/>" in text
    assert "<link" not in xml(virt_type, _in(TWO, ['default']))


def test_set_security_groups_changes_the_definition(drv):
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros', ports=TWO)
    drv.power_off(uuid)
    drv.set_security_groups(uuid, ports=_in(TWO, []))
    assert set(config.link_states_of(xml_of(drv, uuid)).values()) == {'down'}
    assert drv.domain_ports(uuid)[uuid][0]['security_groups'] == []
    # what regenerates the definition keeps it (a rebuild with no ports)
    drv.rebuild(uuid, image_ref='cirros')
    assert set(config.link_states_of(xml_of(drv, uuid)).values()) == {'down'}
    drv.set_security_groups(uuid, ports=_in(TWO, ['default']))
    assert set(config.link_states_of(xml_of(drv, uuid)).values()) == {'up'}


def test_a_live_change_that_fails_puts_the_definition_back(drv):
    # libvirt's test driver has no live device update: the failure path
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros', ports=TWO)
    before = xml_of(drv, uuid)
    with pytest.raises(virt.VirtError, match='links put back') as exc:
        drv.set_security_groups(uuid, ports=_in(TWO, []))
    assert exc.value.rolled_back
    assert xml_of(drv, uuid) == before


def test_cards_that_differ_from_the_task_change_nothing(drv):
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros', ports=TWO)
    before = xml_of(drv, uuid)
    with pytest.raises(virt.VirtError, match='not those of the task'):
        drv.set_security_groups(uuid, ports=_in([port(3)], []))
    assert xml_of(drv, uuid) == before


def test_xen_refuses_a_port_in_no_group(make_driver):
    drv = make_driver(virt_type='xen')
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros', ports=TWO)
    with pytest.raises(virt.VirtError, match='libxl') as exc:
        drv.set_security_groups(uuid, ports=_in(TWO, []))
    assert exc.value.rolled_back
    assert set(config.link_states_of(xml_of(drv, uuid)).values()) == {'up'}

"""The Xen flavour (seed 003): domain XML with preserve, and the cleanup of
preserved domains once, and only once, they have been reported.

libvirt's test driver does not honour ``preserve`` (a shutdown always
leaves the domain inactive), so preserved domains here come from a node
file: ``runstate`` 4 (SHUTDOWN) and 6 (CRASHED) are active. libxl itself
reports a preserved guest as active and SHUTOFF (reason SHUTDOWN or
CRASHED): that form is emulated by ``libxl.py`` beside this file and tested
in tests/functional/regressions/test_xen_preserved_as_libxl_reports.py.
"""

import pytest

from tests.unit.compute_agent.libvirt import require_libvirt

libvirt = require_libvirt()

from common.states import power  # noqa: E402
from compute_agent.virt.libvirt import config  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import TINY  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import new_uuid  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import node_domain  # noqa: E402


def xen_node(make_node, **runstates):
    """A node file with one preserved Xen domain per (uuid, runstate)."""
    return make_node(*(node_domain(uuid, runstate=state, virt_type='xen',
                                   preserve=True)
                       for uuid, state in runstates.items()))


def test_the_xen_flavour_preserves_on_poweroff_and_on_crash(make_driver):
    drv = make_driver(virt_type='xen')
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros')
    xml = drv.connection.get().lookupByUUIDString(uuid).XMLDesc(0)
    assert config.lifecycle_actions(xml) == {
        'on_poweroff': 'preserve', 'on_crash': 'preserve',
        'on_reboot': 'restart'}
    assert "<domain type='xen'" in xml
    assert "dev='xvda' bus='xen'" in xml
    assert drv.get_domain(uuid).power_state == power.RUNNING


def test_the_kvm_flavour_does_not_preserve():
    xml = config.domain_xml(virt_type='kvm', uuid=new_uuid(), name='vm',
                            flavor=TINY, image_ref='cirros',
                            disks=[('/d', 'raw')])
    assert not config.preserves(xml)
    assert "<cpu mode='host-model'/>" in xml
    tcg = config.domain_xml(virt_type='qemu', uuid=new_uuid(), name='vm',
                            flavor=TINY, image_ref='cirros',
                            disks=[('/d', 'raw')])
    assert "<domain type='qemu'" in tcg and '<cpu' not in tcg


def test_cleanup_destroys_only_preserved_domains_already_reported(
        make_driver, make_node):
    ids = {'off': new_uuid(), 'crashed': new_uuid(), 'unseen': new_uuid()}
    running = new_uuid()
    uri = make_node(
        node_domain(ids['off'], runstate=4, virt_type='xen', preserve=True),
        node_domain(ids['crashed'], runstate=6, virt_type='xen',
                    preserve=True),
        node_domain(ids['unseen'], runstate=6, virt_type='xen',
                    preserve=True),
        node_domain(running, runstate=1, virt_type='xen', preserve=True))
    drv = make_driver(uri=uri, virt_type='xen')
    conn = drv.connection.get()
    crashed = drv.get_domain(ids['crashed'])        # reported
    assert (crashed.power_state, crashed.reason) == (power.CRASHED, 'crashed')
    off = drv.get_domain(ids['off'])
    assert off.power_state == power.SHUTDOWN
    drv.get_domain(running)

    destroyed = drv.cleanup_preserved()

    assert sorted(destroyed) == sorted([ids['off'], ids['crashed']])
    assert not conn.lookupByUUIDString(ids['crashed']).isActive()
    assert conn.lookupByUUIDString(ids['unseen']).isActive()   # not reported
    assert conn.lookupByUUIDString(running).isActive()         # not down
    # Destroyed by the cleanup, still reported for why it stopped.
    after = drv.get_domain(ids['crashed'])
    assert (after.power_state, after.reason) == (power.SHUTDOWN, 'crashed')
    drv.get_domain(ids['unseen'])                             # reported now
    assert drv.cleanup_preserved() == [ids['unseen']]


def test_a_preserved_domain_reported_by_list_domains_is_cleaned(
        make_driver, make_node):
    uuid = new_uuid()
    drv = make_driver(uri=xen_node(make_node, **{uuid: 6}), virt_type='xen')
    assert drv.cleanup_preserved() == []
    drv.list_domains()
    assert drv.cleanup_preserved() == [uuid]


def test_a_preserved_domain_reported_by_an_event_is_cleaned(
        make_driver, make_node, recorder):
    uuid = new_uuid()
    drv = make_driver(uri=xen_node(make_node, **{uuid: 1}), virt_type='xen')
    drv.watch(recorder)
    dom = drv.connection.get().lookupByUUIDString(uuid)
    # The test driver cannot stop a domain and keep it active; a suspend
    # stands in to show that a delivered event counts as reported.
    dom.suspend()
    recorder.wait_for(uuid, power.PAUSED, 'host')
    assert drv._reported[uuid].power_state == power.PAUSED


def test_query_calls_never_clean_up(make_driver, make_node):
    uuid = new_uuid()
    drv = make_driver(uri=xen_node(make_node, **{uuid: 6}), virt_type='xen')
    for _ in range(2):
        drv.list_domains()
        drv.get_domain(uuid)
        drv.get_capacity()
    assert drv.connection.get().lookupByUUIDString(uuid).isActive()


@pytest.mark.parametrize('operation', ['spawn', 'power_on', 'resize'])
def test_allocating_operations_clean_up_first(make_driver, make_node,
                                              operation):
    preserved, mine = new_uuid(), new_uuid()
    drv = make_driver(uri=xen_node(make_node, **{preserved: 6}),
                      virt_type='xen')
    conn = drv.connection.get()
    if operation != 'spawn':       # not yet reported: the spawn keeps it
        drv.spawn(mine, name='vm', flavor=TINY, image_ref='cirros')
        drv.power_off(mine)
        assert conn.lookupByUUIDString(preserved).isActive()
    drv.list_domains()                                 # everything reported
    if operation == 'spawn':
        drv.spawn(mine, name='vm', flavor=TINY, image_ref='cirros')
    elif operation == 'power_on':
        drv.power_on(mine)
    else:
        drv.resize(mine, flavor=TINY)
    assert not conn.lookupByUUIDString(preserved).isActive()

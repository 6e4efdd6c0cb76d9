"""Why a domain is down: libvirt's state reasons mapped to Tristate's, for
changes made behind the driver's back, and none for the driver's own."""

import pytest

from tests.unit.compute_agent.libvirt import require_libvirt

libvirt = require_libvirt()

from common.states import power  # noqa: E402
from compute_agent.virt.libvirt import power as power_map  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import TINY  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import new_uuid  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import node_domain  # noqa: E402


@pytest.fixture
def drv(make_driver):
    return make_driver()


@pytest.fixture
def uuid(drv):
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros')
    return uuid


def behind_back(drv, uuid):
    return drv.connection.get().lookupByUUIDString(uuid)


def state(drv, uuid):
    info = drv.get_domain(uuid)
    return info.power_state, info.reason


def test_guest_shutdown_is_reason_guest(drv, uuid):
    behind_back(drv, uuid).shutdown()
    assert state(drv, uuid) == (power.SHUTDOWN, 'guest')


def test_destroy_from_outside_is_reason_host(drv, uuid):
    behind_back(drv, uuid).destroy()
    assert state(drv, uuid) == (power.SHUTDOWN, 'host')


def test_crash_dump_is_reason_crashed(drv, uuid, tmp_path):
    behind_back(drv, uuid).coreDumpWithFormat(
        str(tmp_path / 'core'), libvirt.VIR_DOMAIN_CORE_DUMP_FORMAT_RAW,
        libvirt.VIR_DUMP_CRASH)
    assert state(drv, uuid) == (power.SHUTDOWN, 'crashed')


def test_runstate_6_is_crashed(make_driver, make_node):
    uuid = new_uuid()
    drv = make_driver(uri=make_node(node_domain(uuid, runstate=6)))
    assert state(drv, uuid) == (power.CRASHED, 'crashed')


def test_a_managed_save_from_outside_is_saved_until_it_is_discarded(drv,
                                                                    uuid):
    dom = behind_back(drv, uuid)
    dom.managedSave(0)
    assert state(drv, uuid) == (power.SHUTDOWN, 'saved')
    dom.managedSaveRemove(0)
    assert state(drv, uuid) == (power.SHUTDOWN, 'host')


def test_a_pause_from_outside_is_reason_host(drv, uuid):
    behind_back(drv, uuid).suspend()
    assert state(drv, uuid) == (power.PAUSED, 'host')


def test_the_drivers_own_stop_has_no_reason_but_a_later_guest_one_has(
        drv, uuid, recorder):
    drv.watch(recorder)
    drv.power_off(uuid)
    assert state(drv, uuid) == (power.SHUTDOWN, None)
    recorder.wait_for(uuid, power.SHUTDOWN, None)
    mark = recorder.mark()
    behind_back(drv, uuid).create()              # started from outside
    recorder.wait_for(uuid, power.RUNNING, None, since=mark)
    behind_back(drv, uuid).shutdown()
    recorder.wait_for(uuid, power.SHUTDOWN, 'guest')
    assert state(drv, uuid) == (power.SHUTDOWN, 'guest')


def test_after_host_shutting_down_guest_shutdowns_are_reason_host(drv, uuid):
    drv.host_shutting_down()
    behind_back(drv, uuid).shutdown()
    assert state(drv, uuid) == (power.SHUTDOWN, 'host')


def test_a_shutdown_event_asked_by_the_host_makes_the_shutdown_host(
        drv, uuid, recorder):
    drv.watch(recorder)
    recorder.wait_for(uuid, power.RUNNING)       # the spawn's events are in
    dom = behind_back(drv, uuid)
    # QEMU's SHUTDOWN event says who asked (here: the host, e.g. virsh
    # shutdown or libvirt-guests); the test driver does not emit it.
    drv._on_lifecycle(None, dom, libvirt.VIR_DOMAIN_EVENT_SHUTDOWN,
                      libvirt.VIR_DOMAIN_EVENT_SHUTDOWN_HOST, None)
    dom.shutdown()
    assert state(drv, uuid) == (power.SHUTDOWN, 'host')
    recorder.wait_for(uuid, power.SHUTDOWN, 'host')
    mark = recorder.mark()
    dom.create()                             # a new run: the hint is gone
    recorder.wait_for(uuid, power.RUNNING, None, since=mark)
    dom.shutdown()
    assert state(drv, uuid) == (power.SHUTDOWN, 'guest')


@pytest.mark.parametrize('lv_state,expected', [
    (libvirt.VIR_DOMAIN_NOSTATE, power.NOSTATE),
    (libvirt.VIR_DOMAIN_RUNNING, power.RUNNING),
    (libvirt.VIR_DOMAIN_BLOCKED, power.RUNNING),
    (libvirt.VIR_DOMAIN_PAUSED, power.PAUSED),
    (libvirt.VIR_DOMAIN_SHUTDOWN, power.SHUTDOWN),
    (libvirt.VIR_DOMAIN_SHUTOFF, power.SHUTDOWN),
    (libvirt.VIR_DOMAIN_CRASHED, power.CRASHED),
    (libvirt.VIR_DOMAIN_PMSUSPENDED, power.SUSPENDED),
])
def test_power_state_mapping(lv_state, expected):
    assert power_map.power_of(lv_state) == expected


@pytest.mark.parametrize('code,expected', [
    (libvirt.VIR_DOMAIN_SHUTOFF_UNKNOWN, 'unknown'),
    (libvirt.VIR_DOMAIN_SHUTOFF_SHUTDOWN, 'guest'),
    (libvirt.VIR_DOMAIN_SHUTOFF_DESTROYED, 'host'),
    (libvirt.VIR_DOMAIN_SHUTOFF_CRASHED, 'crashed'),
    (libvirt.VIR_DOMAIN_SHUTOFF_MIGRATED, 'host'),
    (libvirt.VIR_DOMAIN_SHUTOFF_SAVED, 'saved'),
    (libvirt.VIR_DOMAIN_SHUTOFF_FAILED, 'unknown'),
    (libvirt.VIR_DOMAIN_SHUTOFF_FROM_SNAPSHOT, 'host'),
    (libvirt.VIR_DOMAIN_SHUTOFF_DAEMON, 'host'),
])
def test_shutoff_reason_mapping(code, expected):
    assert power_map.reason_of(libvirt.VIR_DOMAIN_SHUTOFF, code) == expected


def test_running_has_no_reason_and_every_reason_is_known():
    assert power_map.reason_of(libvirt.VIR_DOMAIN_RUNNING, 1) is None
    from common import states
    for table in power_map.REASONS.values():
        assert set(table.values()) <= set(states.POWER_REASONS) | {None}


def test_qemu_starting_a_domain_paused_is_no_reason():
    assert power_map.reason_of(libvirt.VIR_DOMAIN_PAUSED,
                               libvirt.VIR_DOMAIN_PAUSED_STARTING_UP) is None
    assert power_map.reason_of(libvirt.VIR_DOMAIN_PAUSED,
                               libvirt.VIR_DOMAIN_PAUSED_CRASHED) == 'crashed'


def test_a_shutdown_in_progress_takes_the_reason_of_its_event(make_driver,
                                                              make_node):
    # QEMU keeps the process a moment after the guest powered off: state
    # SHUTDOWN, reason code unknown; its SHUTDOWN event said who asked.
    uuid = new_uuid()
    drv = make_driver(uri=make_node(node_domain(uuid, runstate=4)))
    assert state(drv, uuid) == (power.SHUTDOWN, 'unknown')
    dom = behind_back(drv, uuid)
    drv._on_lifecycle(None, dom, libvirt.VIR_DOMAIN_EVENT_SHUTDOWN,
                      libvirt.VIR_DOMAIN_EVENT_SHUTDOWN_GUEST, None)
    assert state(drv, uuid) == (power.SHUTDOWN, 'guest')


def test_a_restarted_agent_remembers_the_stops_it_made(make_driver, make_node,
                                                       tmp_path):
    """After a restart, a domain the agent itself stopped is still not
    'stopped by its guest': the driver's expectations outlive the process
    (the new driver reads them from its instances directory)."""
    mine, theirs = new_uuid(), new_uuid()
    before = make_driver(host='h1')
    before.spawn(mine, name='mine', flavor=TINY, image_ref='cirros')
    before.power_off(mine, timeout=0)
    assert state(before, mine) == (power.SHUTDOWN, None)
    before.cleanup_host()

    # The same host after the restart: both domains shut off the way a
    # clean shutdown leaves them; only one was the agent's doing.
    after = make_driver(host='h1', uri=make_node(
        *(node_domain(uuid, runstate=libvirt.VIR_DOMAIN_SHUTOFF)
          for uuid in (mine, theirs))))
    theirs_state = state(after, theirs)
    assert theirs_state[0] == power.SHUTDOWN and theirs_state[1] is not None
    assert state(after, mine) == (power.SHUTDOWN, None)
    # Started again, the expectation is spent: it does not come back.
    after.power_on(mine)
    assert state(after, mine) == (power.RUNNING, None)
    restarted = make_driver(host='h1', uri=make_node(
        node_domain(mine, runstate=libvirt.VIR_DOMAIN_SHUTOFF)))
    assert state(restarted, mine)[1] == theirs_state[1]

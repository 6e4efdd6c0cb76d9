"""A cross-host revert could run the guest on both hosts at once.

Found in the review of the cold migration (issue 25, "revert ordering"):
``revert_resize`` of a server moved to another host cast a destroy to the
destination and sent the revert to the source at once; the source powered
its kept guest on while the destination's copy still ran (for as long as
the destination took to destroy it, or until its next report when the
cast was lost): two guests with one disk's data and one set of MAC
addresses. Fixed: the conductor calls the destination's destroy and waits
for its answer (the domain gone: on libvirt, destroyed and undefined)
before it places the instance on the source and sends the revert; a
destination that does not destroy its copy refuses the revert (the task
ends rolled back, the server still RESIZED on the destination, the source
untouched). Here the destination's destroy is held: the source must not
start until it is released.
"""

import threading

from common.states import power
from common.states import vm
from tests.functional.conftest import domain
from tests.functional.conftest import TIMEOUT
from tests.functional.conftest import wait_idle
from tests.functional.test_cold_migration import plane  # noqa: F401
from tests.functional.test_cold_migration import run
from tests.functional.test_cold_migration import served  # noqa: F401
from tests.functional.test_cold_migration import written


def _moved(plane, ctx, admin):  # noqa: F811
    inst, source, dest = written(plane, ctx)
    after = run(plane, admin, inst['uuid'], 'migrate')
    assert (after['vm_state'], after['host']) == (vm.RESIZED, dest)
    return inst['uuid'], source, dest


def test_the_source_starts_only_once_the_destination_copy_is_gone(
        plane, ctx, admin, monkeypatch):  # noqa: F811
    uuid, source, dest = _moved(plane, ctx, admin)
    events, entered, gate = [], threading.Event(), threading.Event()
    dest_driver = plane.agents[dest].manager.driver
    source_driver = plane.agents[source].manager.driver
    destroy, power_on = dest_driver.destroy, source_driver.power_on

    def held_destroy(got):
        if got == uuid:
            entered.set()
            gate.wait(TIMEOUT)
        destroy(got)
        events.append(('destroyed on', dest))

    def recorded_power_on(got, *args, **kwargs):
        events.append(('powered on', source))
        return power_on(got, *args, **kwargs)
    monkeypatch.setattr(dest_driver, 'destroy', held_destroy)
    monkeypatch.setattr(source_driver, 'power_on', recorded_power_on)

    revert = threading.Thread(target=plane.client.run_action,
                              args=(admin, uuid, 'revert_resize', {}))
    revert.start()
    try:
        assert entered.wait(TIMEOUT)
        # the destination's copy still exists: the source must wait
        revert.join(0.5)
        assert revert.is_alive() and events == []
        assert domain(plane, source, uuid)['power_state'] == power.SHUTDOWN
    finally:
        gate.set()
        revert.join(TIMEOUT)
    after = wait_idle(plane, uuid)

    assert (after['vm_state'], after['host']) == (vm.ACTIVE, source)
    # (the destination may be told again by its reports: destroyed twice)
    assert events[:2] == [('destroyed on', dest), ('powered on', source)]
    assert domain(plane, source, uuid)['power_state'] == power.RUNNING
    assert domain(plane, dest, uuid) is None


def test_a_destination_that_cannot_destroy_its_copy_refuses_the_revert(
        plane, ctx, admin, monkeypatch):  # noqa: F811
    uuid, source, dest = _moved(plane, ctx, admin)
    dest_driver = plane.agents[dest].manager.driver

    def fails(got):
        raise RuntimeError('libvirt says no')
    monkeypatch.setattr(dest_driver, 'destroy', fails)

    after = run(plane, admin, uuid, 'revert_resize')

    assert (after['vm_state'], after['host']) == (vm.RESIZED, dest)
    assert 'did not destroy its copy' in plane.statedb.list_actions(
        uuid)[-1]['message']
    assert domain(plane, source, uuid)['power_state'] == power.SHUTDOWN
    assert domain(plane, dest, uuid)['power_state'] == power.RUNNING
    monkeypatch.undo()
    after = run(plane, admin, uuid, 'revert_resize')
    assert (after['vm_state'], after['host']) == (vm.ACTIVE, source)

"""Issue 25: the conductor's side of a live migration on a driver that needs
its destination prepared (libvirt: compute_agent/virt/libvirt/migration.py),
on the fake plane. The destination's answer to agent RPC 1.6 reaches the
source's driver with a progress callback; a destination that cannot prepare
fails the task before anything moves; a migration that fails with the guest
still on its source has the destination remove what it prepared."""

from common.states import vm
from compute_agent.virt.driver import VirtError
from tests.functional.conftest import act
from tests.functional.conftest import active
from tests.functional.conftest import domain
from tests.functional.conftest import last_log
from tests.functional.conftest import wait_for

ANSWER = {'uri': 'qemu+tcp://dest/system', 'disk': '/d/disk'}


def _hosts(plane, inst):
    [dest] = [h for h in plane.host_names if h != inst['host']]
    return plane.agents[inst['host']], plane.agents[dest], dest


def _allocated_on(plane, uuid):
    return sorted(a['host'] for a in plane.statedb.list_allocations(
        instance_uuid=uuid))


def test_a_destination_that_cannot_prepare_fails_the_task_untouched(
        plane, ctx, admin):
    inst = active(plane, ctx)
    source, target, dest = _hosts(plane, inst)

    def refuse(ctx, instance, params):
        raise VirtError('image cirros not found')
    target.manager.prepare_live_migration = refuse

    after = act(plane, admin, inst['uuid'], 'live_migrate')

    assert (after['vm_state'], after['host']) == (vm.ACTIVE, inst['host'])
    assert 'could not prepare' in last_log(plane, inst['uuid'],
                                           'live_migrate')['message']
    assert domain(plane, inst['host'], inst['uuid']) is not None
    assert domain(plane, dest, inst['uuid']) is None
    assert _allocated_on(plane, inst['uuid']) == [inst['host']]


def test_the_answer_reaches_the_source_and_a_failure_abandons_it(
        plane, ctx, admin):
    inst = active(plane, ctx)
    source, target, dest = _hosts(plane, inst)
    asked, got, destroyed = [], [], []

    def prepare(ctx, instance, params):
        asked.append((instance['uuid'], params.get('image')))
        return ANSWER
    target.manager.prepare_live_migration = prepare
    target.manager.destroy_domain = (
        lambda ctx, instance_uuid: destroyed.append(instance_uuid))

    def migrate_out(uuid, *, dest, incoming=None, progress=None):
        got.append((dest, incoming))
        progress(40)
        raise VirtError('live migration timed out', rolled_back=True)
    source.driver.migrate_out = migrate_out

    after = act(plane, admin, inst['uuid'], 'live_migrate')

    assert [uuid for uuid, _ in asked] == [inst['uuid']]
    assert got == [(dest, ANSWER)]
    assert (after['vm_state'], after['host']) == (vm.ACTIVE, inst['host'])
    assert 'timed out' in last_log(plane, inst['uuid'],
                                   'live_migrate')['message']
    assert _allocated_on(plane, inst['uuid']) == [inst['host']]
    wait_for(lambda: destroyed == [inst['uuid']],
             what='the destination told to remove what it prepared',
             show=lambda: destroyed)

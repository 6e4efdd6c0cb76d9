"""Actions that move resources: resize with confirm or revert, and live
migration. Besides the vm_state, a user (and the scheduler) relies on the
accounting: a host's used_* is exactly what its instances hold, the flavor
the instance shows is the one its domain has, and nothing leaks.
"""

import pytest

from common import exception
from common import flavors
from common import states
from common.states import power
from common.states import vm
from tests.functional.conftest import act
from tests.functional.conftest import active
from tests.functional.conftest import allocated
from tests.functional.conftest import domain
from tests.functional.conftest import last_log
from tests.functional.conftest import resources
from tests.functional.conftest import summary
from tests.functional.conftest import used
from tests.functional.conftest import wait_instance

NOTHING = (0, 0, 0)


def _flavor(plane, name):
    return resources(flavors.configured(plane.conf, name))


def _sum(*usages):
    return tuple(map(sum, zip(*usages, strict=True)))


def _check_accounting(plane):
    for host in plane.host_names:
        assert used(plane, host) == allocated(plane, host), host


@pytest.mark.parametrize('start', [vm.ACTIVE, vm.STOPPED])
def test_resize_then_confirm_keeps_the_new_flavor(plane, ctx, start):
    inst = active(plane, ctx, flavor='tiny')
    host, uuid = inst['host'], inst['uuid']
    if start == vm.STOPPED:
        act(plane, ctx, uuid, 'stop')

    resized = act(plane, ctx, uuid, 'resize', flavor='small')
    assert (resized['vm_state'], resized['flavor_name'], resized['host']) == (
        vm.RESIZED, 'small', host), summary(resized)
    # Both flavors are held until the user decides.
    assert used(plane, host) == _sum(_flavor(plane, 'tiny'),
                                     _flavor(plane, 'small'))

    confirmed = act(plane, ctx, uuid, 'confirm_resize')

    assert (confirmed['vm_state'], confirmed['task_state']) == (start, None)
    assert (confirmed['flavor_name'], confirmed['vcpus'],
            confirmed['memory_mb'], confirmed['disk_gb']) == (
        'small', *_flavor(plane, 'small'))
    assert used(plane, host) == _flavor(plane, 'small')
    [alloc] = plane.statedb.list_allocations(instance_uuid=uuid)
    assert (alloc['purpose'], alloc['host'], alloc['flavor_name']) == (
        'instance', host, 'small')
    _check_accounting(plane)
    record = domain(plane, host, uuid)
    assert (record['flavor']['name'], record['previous_flavor']) == (
        'small', None)
    log = last_log(plane, uuid, 'confirm_resize')
    assert (log['result'], log['vm_state_before'], log['vm_state_after']) == (
        states.RESULT_SUCCESS, vm.RESIZED, start)


def test_resize_then_revert_gives_the_old_flavor_back(plane, ctx):
    inst = active(plane, ctx, flavor='tiny')
    host, uuid = inst['host'], inst['uuid']
    act(plane, ctx, uuid, 'resize', flavor='medium')

    reverted = act(plane, ctx, uuid, 'revert_resize')

    assert (reverted['vm_state'], reverted['task_id'],
            reverted['power_state']) == (vm.ACTIVE, None, power.RUNNING)
    assert (reverted['flavor_name'], reverted['vcpus'],
            reverted['memory_mb'], reverted['disk_gb']) == (
        'tiny', *_flavor(plane, 'tiny'))
    assert used(plane, host) == _flavor(plane, 'tiny')
    [alloc] = plane.statedb.list_allocations(instance_uuid=uuid)
    assert (alloc['purpose'], alloc['flavor_name']) == ('instance', 'tiny')
    _check_accounting(plane)
    record = domain(plane, host, uuid)
    assert (record['flavor']['name'], record['previous_flavor']) == (
        'tiny', None)
    assert last_log(plane, uuid)['result'] == states.RESULT_SUCCESS


def test_live_migration_moves_the_instance_and_its_usage(plane, ctx, admin):
    inst = active(plane, ctx, flavor='small')
    source, uuid = inst['host'], inst['uuid']
    [dest] = [h for h in plane.host_names if h != source]

    moved = act(plane, admin, uuid, 'live_migrate')

    assert (moved['vm_state'], moved['task_id'], moved['host']) == (
        vm.ACTIVE, None, dest), summary(moved)
    assert used(plane, source) == NOTHING
    assert used(plane, dest) == _flavor(plane, 'small')
    _check_accounting(plane)
    assert domain(plane, source, uuid) is None
    assert domain(plane, dest, uuid)['power_state'] == power.RUNNING
    # The power_state shown is the new host's word, once it has spoken.
    wait_instance(plane, uuid, lambda i: i['power_state'] == power.RUNNING,
                  what='the new host to report the domain running')
    log = last_log(plane, uuid, 'live_migrate')
    assert (log['result'], log['vm_state_before'], log['vm_state_after'],
            log['user_id']) == (states.RESULT_SUCCESS, vm.ACTIVE, vm.ACTIVE,
                                'alice')
    # and it keeps working where it is now
    stopped = act(plane, ctx, uuid, 'stop')
    assert (stopped['vm_state'], stopped['power_state']) == (
        vm.STOPPED, power.SHUTDOWN)


def test_live_migration_to_a_named_host(make_plane, ctx, admin):
    plane = make_plane(hosts=3)
    inst = active(plane, ctx)
    dest = sorted(h for h in plane.host_names if h != inst['host'])[-1]

    moved = act(plane, admin, inst['uuid'], 'live_migrate', host=dest)

    assert (moved['vm_state'], moved['host']) == (vm.ACTIVE, dest)
    assert domain(plane, dest, inst['uuid']) is not None
    _check_accounting(plane)


def test_live_migration_is_for_admins_only(plane, ctx):
    inst = active(plane, ctx)
    with pytest.raises(exception.Forbidden):
        plane.client.run_action(ctx, inst['uuid'], 'live_migrate')
    assert summary(plane.statedb.get_instance(inst['uuid'])) == summary(inst)

"""Every action of the table, end to end and successful: the RPC client asks
a conductor, the conductor claims the task and sends it to the instance's
agent, the fake hypervisor does it, the agent reports back.

What a user relies on after each: the vm_state the table promises, no task
left (task_state and task_id cleared), the power_state the hypervisor
reports, and an action log entry 'success' saying from where to where.
Resize, confirm/revert and live migration, which move resources between
hosts, are in test_resources.py.
"""

import re

import pytest

from common import actions
from common import states
from common.states import power
from common.states import vm
from tests.functional.conftest import act
from tests.functional.conftest import active
from tests.functional.conftest import domain
from tests.functional.conftest import last_log
from tests.functional.conftest import log_of
from tests.functional.conftest import summary
from tests.functional.conftest import tidy
from tests.functional.conftest import wait_instance

# (the actions that lead to the start state, the action, its parameters,
#  the vm_state after, the power_state after)
HAPPY_PATHS = {
    'stop': ((), 'stop', {}, vm.STOPPED, power.SHUTDOWN),
    'start': (('stop',), 'start', {}, vm.ACTIVE, power.RUNNING),
    'reboot': ((), 'reboot', {}, vm.ACTIVE, power.RUNNING),
    'reboot_hard': ((), 'reboot_hard', {}, vm.ACTIVE, power.RUNNING),
    'reboot_hard-from-stopped': (('stop',), 'reboot_hard', {}, vm.ACTIVE,
                                 power.RUNNING),
    'reboot_hard-from-paused': (('pause',), 'reboot_hard', {}, vm.ACTIVE,
                                power.RUNNING),
    'pause': ((), 'pause', {}, vm.PAUSED, power.PAUSED),
    'unpause': (('pause',), 'unpause', {}, vm.ACTIVE, power.RUNNING),
    'suspend': ((), 'suspend', {}, vm.SUSPENDED, power.SUSPENDED),
    'resume': (('suspend',), 'resume', {}, vm.ACTIVE, power.RUNNING),
    'rescue': ((), 'rescue', {}, vm.RESCUED, power.RUNNING),
    'unrescue': (('rescue',), 'unrescue', {}, vm.ACTIVE, power.RUNNING),
    'rescue-from-stopped': (('stop',), 'rescue', {'image_ref': 'rescue-img'},
                            vm.RESCUED, power.RUNNING),
    'stop-from-rescued': (('rescue',), 'stop', {}, vm.STOPPED,
                          power.SHUTDOWN),
    'snapshot': ((), 'snapshot', {'image_name': 'snap-1'}, vm.ACTIVE,
                 power.RUNNING),
    'snapshot-of-stopped': (('stop',), 'snapshot', {'image_name': 'snap-2'},
                            vm.STOPPED, power.SHUTDOWN),
    'backup': ((), 'backup', {'image_name': 'nightly', 'rotation': 2},
               vm.ACTIVE, power.RUNNING),
    'set_password': ((), 'set_password', {'password': 's3cret'}, vm.ACTIVE,
                     power.RUNNING),
    'soft_delete': ((), 'soft_delete', {}, vm.SOFT_DELETED, power.SHUTDOWN),
    'restore': (('soft_delete',), 'restore', {}, vm.ACTIVE, power.RUNNING),
    'rebuild': ((), 'rebuild', {'image_ref': 'debian-12'}, vm.ACTIVE,
                power.RUNNING),
    'rebuild-of-stopped': (('stop',), 'rebuild', {}, vm.STOPPED,
                           power.SHUTDOWN),
    'resize': ((), 'resize', {'flavor': 'small'}, vm.RESIZED, power.RUNNING),
}


@pytest.fixture
def plane(shared_plane):
    yield shared_plane
    tidy(shared_plane)


def _check_idle(inst):
    assert (inst['task_state'], inst['task_id'], inst['task_action'],
            inst['progress_step']) == (None, None, None, None), summary(inst)


def _check_power(plane, inst, expected):
    record = domain(plane, inst['host'], inst['uuid'])
    assert record is not None, 'the domain of %s is gone' % inst['uuid']
    assert inst['power_state'] == record['power_state'] == expected, (
        summary(inst), record)


def test_build_makes_an_active_running_instance(plane, ctx):
    inst = active(plane, ctx, flavor='tiny', name='web')

    _check_idle(inst)
    _check_power(plane, inst, power.RUNNING)
    assert inst['host'] in plane.host_names
    assert inst['launched_at'] is not None
    [entry] = log_of(plane, inst['uuid'])
    assert (entry['action'], entry['result'], entry['vm_state_before'],
            entry['vm_state_after'], entry['user_id']) == (
        'build', states.RESULT_SUCCESS, vm.INITIALIZED, vm.ACTIVE, 'alice')
    record = domain(plane, inst['host'], inst['uuid'])
    assert (record['name'], record['flavor']['name'],
            record['image_ref']) == ('web', 'tiny', 'cirros')


@pytest.mark.parametrize('case', sorted(HAPPY_PATHS))
def test_action_reaches_the_tables_state(plane, ctx, case):
    path, action, params, vm_after, power_after = HAPPY_PATHS[case]
    inst = active(plane, ctx)
    for step in path:
        inst = act(plane, ctx, inst['uuid'], step)
    before = inst['vm_state']
    # The expectations above are the table's; a row must exist for them.
    assert actions.TABLE.row(action, before) is not None

    inst = act(plane, ctx, inst['uuid'], action, **params)

    assert inst['vm_state'] == vm_after, summary(inst)
    _check_idle(inst)
    _check_power(plane, inst, power_after)
    log = log_of(plane, inst['uuid'])
    assert [e['action'] for e in log] == ['build', *path, action]
    assert all(e['result'] == states.RESULT_SUCCESS for e in log), log
    last = log[-1]
    assert (last['vm_state_before'], last['vm_state_after']) == (
        before, vm_after)
    assert last['finished_at'] is not None
    if action in ('snapshot', 'backup'):
        # the id the conductor decided for the image, and its name
        assert re.fullmatch(r'image [0-9a-f-]{36} \(%s\)' % params[
            'image_name'], last['message']), last['message']
    else:
        assert last['message'] is None


def test_unrescue_returns_a_stopped_instance_to_stopped(plane, ctx):
    """The user rescued a stopped instance: unrescue leaves it STOPPED, and
    the agent powers the guest off itself, so reconcile has nothing to do."""
    uuid = active(plane, ctx)['uuid']
    act(plane, ctx, uuid, 'stop')
    act(plane, ctx, uuid, 'rescue')

    plane.client.run_action(ctx, uuid, 'unrescue', {})
    inst = wait_instance(
        plane, uuid, lambda i: i['task_id'] is None
        and i['power_state'] == power.SHUTDOWN, what='stopped and powered off')

    assert inst['vm_state'] == vm.STOPPED
    unrescue = last_log(plane, uuid, 'unrescue')
    assert (unrescue['result'], unrescue['vm_state_before'],
            unrescue['vm_state_after']) == (
        states.RESULT_SUCCESS, vm.RESCUED, vm.STOPPED)
    # nothing after it: no reconcile power_off, no vm_state change
    assert [e['action'] for e in log_of(plane, uuid)[4:]] == []
    assert domain(plane, inst['host'], uuid)['power_state'] == (
        power.SHUTDOWN)


def test_the_hypervisor_did_what_was_asked(plane, ctx):
    """Parameters reach the driver: the snapshot is taken under its name, the
    rebuild uses the new image, the rescue boots the rescue image."""
    uuid = active(plane, ctx)['uuid']
    act(plane, ctx, uuid, 'snapshot', image_name='before-upgrade')
    act(plane, ctx, uuid, 'backup', image_name='weekly', rotation=1)
    inst = act(plane, ctx, uuid, 'rebuild', image_ref='debian-12')
    record = domain(plane, inst['host'], uuid)
    assert record['snapshots'] == ['before-upgrade', 'weekly']
    assert record['image_ref'] == 'debian-12'

    act(plane, ctx, uuid, 'rescue', image_ref='rescue-img')
    record = domain(plane, inst['host'], uuid)
    assert (record['rescued'], record['rescue_image_ref']) == (
        True, 'rescue-img')
    act(plane, ctx, uuid, 'unrescue')
    assert domain(plane, inst['host'], uuid)['rescued'] is False


def test_the_instance_shows_the_image_it_was_rebuilt_from(plane, ctx):
    uuid = active(plane, ctx)['uuid']
    inst = act(plane, ctx, uuid, 'rebuild', image_ref='debian-12')
    assert inst['image_ref'] == 'debian-12'


def test_soft_deleted_instance_keeps_its_resources_until_restored(
        plane, ctx):
    inst = active(plane, ctx)
    allocations = plane.statedb.list_allocations(
        instance_uuid=inst['uuid'])

    deleted = act(plane, ctx, inst['uuid'], 'soft_delete')
    assert deleted['soft_deleted_at'] is not None
    assert plane.statedb.list_allocations(
        instance_uuid=inst['uuid']) == allocations
    restored = act(plane, ctx, inst['uuid'], 'restore')

    assert (restored['vm_state'], restored['soft_deleted_at']) == (
        vm.ACTIVE, None)
    assert restored['host'] == inst['host']


def test_the_user_sees_the_same_through_the_rpc_api(plane, ctx):
    inst = active(plane, ctx)
    act(plane, ctx, inst['uuid'], 'stop')

    shown = plane.client.get_instance(ctx, inst['uuid'])
    listed = plane.client.list_instances(ctx)
    log = plane.client.list_actions(ctx, inst['uuid'])

    assert (shown['vm_state'], shown['task_state'], shown['power_state']) == (
        vm.STOPPED, None, power.SHUTDOWN)
    assert inst['uuid'] in [i['uuid'] for i in listed]
    assert [(e['action'], e['result']) for e in log] == [
        ('build', states.RESULT_SUCCESS), ('stop', states.RESULT_SUCCESS)]

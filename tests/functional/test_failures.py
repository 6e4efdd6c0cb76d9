"""Failure paths, end to end (DESIGN.md sections 1-3).

A driver call that fails and rolls back leaves the vm_state as it was; one
that cannot roll back sets ERROR; both say why in the action log. A failed
task frees what it took. A request the table denies, or with bad
parameters, fails at once with a clear error and changes nothing.
"""

import pytest

from common import actions
from common import context
from common import exception
from common import flavors
from common import states
from common.states import power
from common.states import task
from common.states import vm
from tests.functional.conftest import act
from tests.functional.conftest import active
from tests.functional.conftest import allocated
from tests.functional.conftest import build
from tests.functional.conftest import domain
from tests.functional.conftest import faults
from tests.functional.conftest import last_log
from tests.functional.conftest import log_of
from tests.functional.conftest import summary
from tests.functional.conftest import tidy
from tests.functional.conftest import used
from tests.functional.conftest import wait_hung
from tests.functional.conftest import wait_idle
from tests.functional.conftest import wait_task


@pytest.fixture
def plane(shared_plane):
    before = {inst['uuid'] for inst in shared_plane.statedb.list_instances()}
    yield shared_plane
    tidy(shared_plane, keep=before)


@pytest.fixture(scope='module')
def bystander(shared_plane):
    """An idle ACTIVE instance that requests refused must leave alone."""
    owner = context.RequestContext(user_id='alice', project_id='demo')
    return active(shared_plane, owner, flavor='tiny')


def _unchanged(plane, inst, log):
    """The instance and its action log as they were."""
    assert summary(plane.statedb.get_instance(inst['uuid'])) == summary(inst)
    assert log_of(plane, inst['uuid']) == log


def _usage(plane):
    return {host: used(plane, host) for host in plane.host_names}


# --- the driver fails --------------------------------------------------------

# (the action, its parameters, the driver operation that fails, the path
#  to the state it starts from)
ROLLBACKS = {
    'stop': ({}, 'power_off', ()),
    'start': ({}, 'power_on', ('stop',)),
    'reboot': ({}, 'reboot', ()),
    'pause': ({}, 'pause', ()),
    'resume': ({}, 'resume', ('suspend',)),
    'rescue': ({}, 'rescue', ()),
    'rebuild': ({'image_ref': 'debian-12'}, 'rebuild', ()),
    'snapshot': ({'image_name': 'snap'}, 'snapshot', ()),
}


@pytest.mark.parametrize('action', sorted(ROLLBACKS))
def test_failure_with_rollback_leaves_the_vm_state(plane, ctx, action):
    params, operation, path = ROLLBACKS[action]
    inst = active(plane, ctx)
    for step in path:
        inst = act(plane, ctx, inst['uuid'], step)
    faults(plane, inst['host']).set_fault(operation, 'fail', count=1)

    after = act(plane, ctx, inst['uuid'], action, **params)

    assert (after['vm_state'], after['task_state'], after['task_id'],
            after['power_state']) == (inst['vm_state'], None, None,
                                      inst['power_state']), summary(after)
    entry = last_log(plane, inst['uuid'])
    assert (entry['action'], entry['result'], entry['vm_state_before'],
            entry['vm_state_after']) == (
        action, states.RESULT_ROLLED_BACK, inst['vm_state'], inst['vm_state'])
    assert 'injected fault: %s of %s' % (operation, inst['uuid']) in (
        entry['message'])
    # The user can simply try again.
    again = act(plane, ctx, inst['uuid'], action, **params)
    assert last_log(plane, inst['uuid'])['result'] == states.RESULT_SUCCESS
    assert again['task_id'] is None


def test_failure_without_rollback_sets_error(plane, ctx):
    inst = active(plane, ctx)
    faults(plane, inst['host']).set_fault('power_off', 'fail_no_rollback',
                                          count=1)

    after = act(plane, ctx, inst['uuid'], 'stop')

    assert (after['vm_state'], after['task_state'], after['task_id']) == (
        vm.ERROR, None, None), summary(after)
    # what the half-done operation left, as the hypervisor says
    assert after['power_state'] == power.CRASHED
    entry = last_log(plane, inst['uuid'])
    assert (entry['action'], entry['result'], entry['vm_state_after']) == (
        'stop', states.RESULT_ERROR, vm.ERROR)
    assert 'failed half-way' in entry['message']
    # ERROR allows only delete and reset_state (seed 000).
    with pytest.raises(exception.ActionNotAllowed):
        plane.client.run_action(ctx, inst['uuid'], 'reboot_hard')
    assert plane.client.delete_instance(ctx, inst['uuid'])['vm_state'] == (
        vm.HARD_DELETED)


def test_failed_build_sets_error_and_frees_the_host(plane, ctx):
    before = _usage(plane)
    for host in plane.host_names:
        faults(plane, host).set_fault('spawn', 'fail', count=1)

    inst = build(plane, ctx, flavor='small')

    assert (inst['vm_state'], inst['task_state'], inst['task_id']) == (
        vm.ERROR, None, None), summary(inst)
    entry = last_log(plane, inst['uuid'])
    assert (entry['action'], entry['result'], entry['vm_state_before'],
            entry['vm_state_after']) == ('build', states.RESULT_ERROR,
                                         vm.INITIALIZED, vm.ERROR)
    assert 'injected fault: spawn' in entry['message']
    assert plane.statedb.list_allocations(instance_uuid=inst['uuid']) == []
    assert _usage(plane) == before
    for host in plane.host_names:
        assert used(plane, host) == allocated(plane, host)
        assert domain(plane, host, inst['uuid']) is None


def test_failed_resize_frees_the_new_flavor(plane, ctx):
    inst = active(plane, ctx, flavor='tiny')
    host = inst['host']
    before = used(plane, host)
    faults(plane, host).set_fault('resize', 'fail', count=1)

    after = act(plane, ctx, inst['uuid'], 'resize', flavor='large')

    assert (after['vm_state'], after['flavor_name'], after['task_id']) == (
        vm.ACTIVE, 'tiny', None), summary(after)
    assert last_log(plane, inst['uuid'])['result'] == (
        states.RESULT_ROLLED_BACK)
    [alloc] = plane.statedb.list_allocations(instance_uuid=inst['uuid'])
    assert (alloc['purpose'], alloc['flavor_name']) == ('instance', 'tiny')
    assert used(plane, host) == before
    assert used(plane, host) == allocated(plane, host)
    assert domain(plane, host, inst['uuid'])['flavor']['name'] == 'tiny'


def test_failed_live_migration_stays_and_frees_the_destination(
        plane, ctx, admin):
    inst = active(plane, ctx, flavor='small')
    source = inst['host']
    before = _usage(plane)
    faults(plane, source).set_fault('migrate_out', 'fail', count=1)

    after = act(plane, admin, inst['uuid'], 'live_migrate')

    assert (after['vm_state'], after['host'], after['task_id']) == (
        vm.ACTIVE, source, None), summary(after)
    assert last_log(plane, inst['uuid'])['result'] == (
        states.RESULT_ROLLED_BACK)
    assert _usage(plane) == before
    assert [a['purpose'] for a in plane.statedb.list_allocations(
        instance_uuid=inst['uuid'])] == ['instance']
    assert domain(plane, source, inst['uuid']) is not None


# --- the table says no -------------------------------------------------------

# The stable states a user can put an instance in: the way there.
REACHED_BY = {
    vm.ACTIVE: (),
    vm.STOPPED: (('stop', {}),),
    vm.PAUSED: (('pause', {}),),
    vm.SUSPENDED: (('suspend', {}),),
    vm.RESCUED: (('rescue', {}),),
    vm.SOFT_DELETED: (('soft_delete', {}),),
    vm.RESIZED: (('resize', {'flavor': 'small'}),),
}
# Valid parameters, so that only the table can say no.
PARAMS = {'resize': {'flavor': 'medium'}, 'snapshot': {'image_name': 'i'},
          'backup': {'image_name': 'i'}, 'set_password': {'password': 'p'},
          'set_security_groups': {'security_groups': []}}
USER_ACTIONS = sorted(name for name, spec in actions.TABLE.actions.items()
                      if spec.kind == actions.KIND_TASK and not spec.system)


@pytest.mark.parametrize('vm_state', sorted(REACHED_BY))
def test_the_table_denies_with_the_reason_and_changes_nothing(
        plane, ctx, admin, vm_state):
    inst = active(plane, ctx)
    for step, params in REACHED_BY[vm_state]:
        inst = act(plane, ctx, inst['uuid'], step, **params)
    assert inst['vm_state'] == vm_state, summary(inst)
    log = log_of(plane, inst['uuid'])
    denied = [a for a in USER_ACTIONS
              if vm_state not in actions.TABLE.allowed_from(a)]
    assert denied

    for action in denied:
        who = admin if actions.TABLE.action(action).admin_only else ctx
        with pytest.raises(exception.ActionNotAllowed) as caught:
            plane.client.run_action(who, inst['uuid'], action,
                                    PARAMS.get(action))
        err = caught.value
        allowed = sorted(actions.TABLE.allowed_from(action))
        assert err.kwargs['allowed'] == allowed
        message = str(err)
        assert message == (
            'Cannot %s instance %s: its vm_state is %s; %s needs vm_state '
            'in %s.' % (action, inst['uuid'], vm_state, action,
                        ', '.join(allowed)))

    _unchanged(plane, inst, log)


def test_an_action_while_a_task_runs_is_denied(plane, ctx):
    inst = active(plane, ctx)
    faults(plane, inst['host']).set_fault('power_off', 'hang', count=1)
    plane.client.run_action(ctx, inst['uuid'], 'stop')
    running = wait_task(plane, inst['uuid'], task.STOPPING)
    # The claim is made before the agent calls its driver: cleared before
    # the call, the fault would never be met and the stop would succeed.
    wait_hung(plane, inst['host'], 'power_off')
    log = log_of(plane, inst['uuid'])

    with pytest.raises(exception.ActionNotAllowed) as caught:
        plane.client.run_action(ctx, inst['uuid'], 'reboot')

    assert 'task %s (task_id %s) is running' % (
        task.STOPPING, running['task_id']) in str(caught.value)
    _unchanged(plane, running, log)
    # Released, the hung stop fails cleanly and the instance is usable.
    faults(plane, inst['host']).clear_faults()
    after = wait_idle(plane, inst['uuid'])
    assert after['vm_state'] == vm.ACTIVE
    assert act(plane, ctx, inst['uuid'], 'reboot')['vm_state'] == vm.ACTIVE


# --- bad requests ------------------------------------------------------------

def test_create_with_an_unknown_flavor_creates_nothing(plane, ctx):
    def every_uuid():
        return {i['uuid'] for i in plane.statedb.list_instances(
            include_deleted=True)}
    before = every_uuid()
    with pytest.raises(exception.Invalid) as caught:
        plane.client.create_instance(ctx, name='vm', flavor='enormous',
                                     image_ref='cirros')
    assert "unknown flavor 'enormous'" in str(caught.value)
    for name in flavors.parse(plane.conf.conductor.flavors):
        assert name in str(caught.value)
    assert every_uuid() == before


@pytest.mark.parametrize(('action', 'params', 'says'), [
    pytest.param('resize', {}, "resize needs parameter 'flavor'",
                 id='resize-without-flavor'),
    pytest.param('resize', {'flavor': 'enormous'},
                 "unknown flavor 'enormous'", id='resize-unknown-flavor'),
    pytest.param('resize', {'flavor': 'tiny'}, 'already has flavor tiny',
                 id='resize-same-flavor'),
    pytest.param('resize', {'flavor': 2},
                 "resize parameter 'flavor' must be str", id='resize-bad-type'),
    pytest.param('stop', {'force': True},
                 'stop takes no parameters; unexpected force',
                 id='stop-unknown-parameter'),
    pytest.param('snapshot', {}, "snapshot needs parameter 'image_name'",
                 id='snapshot-without-name'),
    pytest.param('power_off', {},
                 'power_off cannot be requested: reconcile starts it',
                 id='system-task'),
    pytest.param('delete', {},
                 'delete cannot be requested: it has its own call',
                 id='delete-as-a-task'),
])
def test_bad_parameters_are_refused_and_change_nothing(plane, bystander, ctx,
                                                       action, params, says):
    log = log_of(plane, bystander['uuid'])
    usage = used(plane, bystander['host'])

    with pytest.raises(exception.Invalid) as caught:
        plane.client.run_action(ctx, bystander['uuid'], action, params)

    assert says in str(caught.value)
    _unchanged(plane, bystander, log)
    assert used(plane, bystander['host']) == usage


def test_unknown_action_is_refused(plane, bystander, ctx):
    log = log_of(plane, bystander['uuid'])
    with pytest.raises(exception.ActionNotFound) as caught:
        plane.client.run_action(ctx, bystander['uuid'], 'fly')
    assert 'stop' in str(caught.value)
    _unchanged(plane, bystander, log)


def test_resize_beyond_the_hosts_room_is_refused_cleanly(plane, ctx):
    inst = active(plane, ctx, flavor='tiny')
    host = inst['host']
    room = plane.statedb.get_host(host)
    huge = 'huge:%d:%d:%d' % (1, room['memory_mb'] + 1, 1)
    plane.conf.set_override('flavors', plane.conf.conductor.flavors + [huge],
                            group='conductor')
    try:
        after = act(plane, ctx, inst['uuid'], 'resize', flavor='huge')
    finally:
        plane.conf.clear_override('flavors', group='conductor')

    assert (after['vm_state'], after['flavor_name']) == (vm.ACTIVE, 'tiny')
    entry = last_log(plane, inst['uuid'])
    assert (entry['action'], entry['result']) == (
        'resize', states.RESULT_ROLLED_BACK)
    assert entry['message'].startswith(
        'No valid host was found: host %s: ' % host)
    [alloc] = plane.statedb.list_allocations(instance_uuid=inst['uuid'])
    assert (alloc['purpose'], alloc['flavor_name']) == ('instance', 'tiny')
    assert used(plane, host) == allocated(plane, host)

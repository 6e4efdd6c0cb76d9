"""The task gateway's database half, against the action table, on every backend.

Every claim, end and preemption of a task is checked against
:data:`common.actions.TABLE`: allowed exactly where it says, denied elsewhere
with the reason and nothing changed.
"""

import pytest

from common import actions
from common import exception
from common.actions import TABLE
from common.states import VM_STATES
from common.states import vm

TASK_ACTIONS = sorted(name for name, spec in TABLE.actions.items()
                      if spec.kind == actions.KIND_TASK)
TASK_TRIPLES = [t for t in TABLE if TABLE.action(t[1]).kind == actions.KIND_TASK]
# (where the detour starts, the detour, the way back) for every RETURN row.
DETOURS = [(start, saver.action, back.action)
           for saver in TABLE.rows if TABLE.action(saver.action).saves_return
           for back in TABLE.rows
           if back.target == actions.RETURN and saver.target in back.sources
           for start in sorted(saver.sources)]


def _assert_denied(err, uuid, vm_state, allowed):
    message = str(err)
    assert uuid in message
    assert 'vm_state is %s' % vm_state in message
    for state in allowed:
        assert state in message
    assert err.kwargs['allowed'] == sorted(allowed)


# --- claim ---------------------------------------------------------------------

@pytest.mark.parametrize('vm_state', VM_STATES)
@pytest.mark.parametrize('action', TASK_ACTIONS)
def test_claim_follows_the_table(statedb, ctx, instances, action, vm_state):
    uuid = instances.in_state(vm_state)
    allowed = TABLE.allowed_from(action)
    if vm_state not in allowed:
        before = instances.snapshot(uuid)
        with pytest.raises(exception.ActionNotAllowed) as err:
            statedb.claim_task(ctx, uuid, action)
        _assert_denied(err.value, uuid, vm_state, allowed)
        assert instances.snapshot(uuid) == before
        return
    claimed = statedb.claim_task(ctx, uuid, action)
    stored = statedb.get_instance(uuid)
    assert stored == claimed
    assert stored['task_state'] == TABLE.row(action, vm_state).task_state
    assert stored['task_id'] and stored['task_action'] == action
    assert stored['vm_state'] == vm_state
    log = statedb.get_action(stored['task_id'])
    assert (log['action'], log['result'], log['vm_state_before']) == (
        action, 'running', vm_state)
    assert (log['user_id'], log['project_id']) == ('alice', 'demo')


def test_create_claims_the_build(statedb, instances):
    uuid, task = instances.create()
    inst = statedb.get_instance(uuid)
    assert (inst['vm_state'], inst['task_state'], inst['task_id']) == (
        vm.INITIALIZED, 'building', task.task_id)
    assert statedb.get_action(task.task_id)['result'] == 'running'


def test_claim_of_unknown_instance(statedb, ctx, instances):
    with pytest.raises(exception.InstanceNotFound):
        statedb.claim_task(ctx, 'no-such-uuid', 'stop')


@pytest.mark.parametrize('action', sorted(
    name for name, spec in TABLE.actions.items()
    if spec.kind == actions.KIND_DB))
def test_database_actions_are_not_claimed_as_tasks(statedb, ctx, instances,
                                                   action):
    uuid = instances.active()
    with pytest.raises(exception.Invalid):
        statedb.claim_task(ctx, uuid, action)


@pytest.fixture(params=['build on initialized', 'stop on active'])
def busy(request, instances):
    """An instance with a task running: (uuid, task context, task_state)."""
    if request.param == 'build on initialized':
        uuid, task = instances.create()
        return uuid, task, 'building'
    uuid = instances.active()
    return uuid, instances.start(uuid, 'stop'), 'stopping'


@pytest.mark.parametrize('action', TASK_ACTIONS)
def test_no_task_starts_while_one_runs(statedb, ctx, instances, busy, action):
    uuid, task, task_state = busy
    before = instances.snapshot(uuid)
    with pytest.raises(exception.ActionNotAllowed) as err:
        statedb.claim_task(ctx, uuid, action)
    message = str(err.value)
    assert uuid in message and task_state in message and task.task_id in message
    assert instances.snapshot(uuid) == before


def test_delete_preempts_a_running_task(statedb, ctx, instances, busy):
    uuid, task, _ = busy
    statedb.hard_delete(ctx, uuid)
    inst = statedb.get_instance(uuid)
    assert (inst['vm_state'], inst['task_state'], inst['task_id']) == (
        vm.HARD_DELETED, None, None)
    entry = statedb.get_action(task.task_id)
    assert (entry['result'], entry['vm_state_after']) == (
        'preempted', vm.HARD_DELETED)
    assert entry['finished_at'] is not None


@pytest.mark.parametrize('target', [vm.ACTIVE, vm.ERROR])
def test_reset_preempts_a_running_task(statedb, ctx, instances, busy, target):
    uuid, task, _ = busy
    statedb.reset_state(ctx, uuid, target)
    inst = statedb.get_instance(uuid)
    assert (inst['vm_state'], inst['task_state'], inst['task_id']) == (
        target, None, None)
    entry = statedb.get_action(task.task_id)
    assert (entry['result'], entry['vm_state_after']) == ('preempted', target)
    log = statedb.list_actions(uuid)[-1]
    assert (log['action'], log['vm_state_after']) == ('reset_state', target)
    with pytest.raises(exception.TaskPreempted):
        statedb.finish_task(task, uuid)


# --- finish, fail, bury -----------------------------------------------------------

@pytest.mark.parametrize('source,action,target', TASK_TRIPLES)
def test_finish_lands_where_the_table_says(statedb, instances, source, action,
                                          target):
    uuid = instances.in_state(source)
    task = instances.start(uuid, action)
    before, after = statedb.finish_task(task, uuid)
    # in_state() reaches every detour (rescue, resize) from ACTIVE.
    expected = {actions.UNCHANGED: source, actions.RETURN: vm.ACTIVE}.get(
        target, target)
    stored = statedb.get_instance(uuid)
    assert stored == after
    assert (stored['vm_state'], stored['task_state'], stored['task_id']) == (
        expected, None, None)
    log = statedb.get_action(task.task_id)
    assert (log['result'], log['vm_state_before'], log['vm_state_after']) == (
        'success', source, expected)


@pytest.mark.parametrize('start,detour,back', DETOURS)
def test_return_goes_back_where_the_detour_began(instances, start, detour,
                                                 back):
    uuid = instances.in_state(start)
    instances.run(uuid, detour)
    assert instances.run(uuid, back)['vm_state'] == start


def test_detours_cover_stopped(instances):
    assert (vm.STOPPED, 'rescue', 'unrescue') in DETOURS
    assert (vm.ACTIVE, 'resize', 'revert_resize') in DETOURS


def test_finish_stores_values_and_a_newer_power_report(statedb, instances):
    uuid = instances.active()
    task = instances.start(uuid, 'resize')
    statedb.finish_task(task, uuid, values={'flavor_name': 'm1.large',
                                            'vcpus': 4},
                        power={'power_state': 'SHUTOFF', 'seq': 7})
    inst = statedb.get_instance(uuid)
    assert (inst['flavor_name'], inst['vcpus']) == ('m1.large', 4)
    assert (inst['power_state'], inst['power_seq']) == (4, 7)


def test_finish_may_not_set_the_states(statedb, instances):
    uuid = instances.active()
    task = instances.start(uuid, 'stop')
    before = instances.snapshot(uuid)
    with pytest.raises(exception.Invalid):
        statedb.finish_task(task, uuid, values={'vm_state': vm.ACTIVE})
    assert instances.snapshot(uuid) == before


def test_derived_values_may_not_set_the_states_either(statedb, instances):
    """What a finish derives from its row is held to the same columns as
    the values a caller passes: the task still runs, nothing changed."""
    uuid = instances.active()
    task = instances.start(uuid, 'stop')
    before = instances.snapshot(uuid)
    with pytest.raises(exception.Invalid, match='vm_state'):
        statedb.finish_task(task, uuid, derive=lambda conn, inst: (
            {'vm_state': vm.ACTIVE}, []))
    assert instances.snapshot(uuid) == before


def _failing(instances, action):
    """An instance running ``action`` from its first allowed state."""
    if action == 'build':
        uuid, task = instances.create()
        return uuid, task, vm.INITIALIZED
    source = sorted(TABLE.allowed_from(action), key=VM_STATES.index)[0]
    uuid = instances.in_state(source)
    return uuid, instances.start(uuid, action), source


@pytest.mark.parametrize('action', TASK_ACTIONS)
@pytest.mark.parametrize('rolled_back', [True, False])
def test_fail_task(statedb, instances, action, rolled_back):
    uuid, task, source = _failing(instances, action)
    statedb.fail_task(task, uuid, error='it broke', rolled_back=rolled_back)
    if rolled_back and action != 'build':
        expected, result = source, 'rolled_back'
    else:
        expected, result = vm.ERROR, 'error'
    inst = statedb.get_instance(uuid)
    assert (inst['vm_state'], inst['task_state'], inst['task_id']) == (
        expected, None, None)
    log = statedb.get_action(task.task_id)
    assert (log['result'], log['message']) == (result, 'it broke')


@pytest.mark.parametrize('use_pending,expected', [(True, vm.PENDING),
                                                  (False, vm.ERROR)])
def test_bury(statedb, instances, use_pending, expected):
    uuid, task = instances.create()
    statedb.bury(task, uuid, reason='no valid host', use_pending=use_pending)
    inst = statedb.get_instance(uuid)
    assert (inst['vm_state'], inst['task_id']) == (expected, None)
    log = statedb.get_action(task.task_id)
    assert (log['result'], log['message']) == ('buried', 'no valid host')


# --- progress and preemption -------------------------------------------------------

def test_progress_moves_the_reaper_clock(statedb, clock, instances):
    uuid, task = instances.create()
    now = clock.advance(30)
    statedb.update_progress(task, uuid, step='networking', percent=40)
    inst = statedb.get_instance(uuid)
    assert (inst['progress_step'], inst['progress_percent']) == (
        'networking', 40)
    assert inst['task_updated_at'] == now
    with pytest.raises(exception.Invalid):
        statedb.update_progress(task, uuid, percent=101)


def test_progress_with_a_stale_task_id_changes_nothing(statedb, instances):
    uuid = instances.active()
    old = instances.start(uuid, 'reboot')
    statedb.finish_task(old, uuid)
    instances.start(uuid, 'stop')
    before = instances.snapshot(uuid)
    with pytest.raises(exception.TaskPreempted) as err:
        statedb.update_progress(old, uuid, percent=50)
    assert old.task_id in str(err.value)
    assert instances.snapshot(uuid) == before


ENDS = {
    'update_progress': lambda db, task, uuid: db.update_progress(
        task, uuid, step='spawning', percent=90),
    'finish_task': lambda db, task, uuid: db.finish_task(task, uuid),
    'fail_task': lambda db, task, uuid: db.fail_task(
        task, uuid, error='x', rolled_back=False),
    'bury': lambda db, task, uuid: db.bury(task, uuid, reason='x',
                                           use_pending=True),
    'free_allocations': lambda db, task, uuid: db.free_allocations(task, uuid),
}


@pytest.mark.parametrize('end', sorted(ENDS))
def test_hard_delete_preempts_the_task(statedb, ctx, instances, end):
    uuid, task = instances.create()
    statedb.allocate(task, uuid, instances.host, **instances.flavor)
    statedb.hard_delete(ctx, uuid)
    before = instances.snapshot(uuid)
    with pytest.raises(exception.TaskPreempted) as err:
        ENDS[end](statedb, task, uuid)
    assert 'hard-deleted' in str(err.value)
    assert instances.snapshot(uuid) == before
    log = {row['action']: row for row in statedb.list_actions(uuid)}
    assert log['build']['result'] == 'preempted'
    assert (log['delete']['result'], log['delete']['vm_state_after']) == (
        'success', vm.HARD_DELETED)


AGENT_CALLS = {
    'update_progress': lambda db, task, uuid, host: db.update_progress(
        task, uuid, percent=10, host=host),
    'finish_task': lambda db, task, uuid, host: db.finish_task(
        task, uuid, host=host),
    'fail_task': lambda db, task, uuid, host: db.fail_task(
        task, uuid, error='x', rolled_back=True, host=host),
}


@pytest.mark.parametrize('call', sorted(AGENT_CALLS))
def test_an_agent_reports_only_on_its_own_instances(statedb, instances, call):
    uuid = instances.active()
    task = instances.start(uuid, 'stop')
    before = instances.snapshot(uuid)
    with pytest.raises(exception.Forbidden) as err:
        AGENT_CALLS[call](statedb, task, uuid, 'node2')
    assert 'node2' in str(err.value) and uuid in str(err.value)
    assert instances.snapshot(uuid) == before
    AGENT_CALLS[call](statedb, task, uuid, instances.host)


# --- hard delete and reset ------------------------------------------------------------

@pytest.mark.parametrize('vm_state', VM_STATES)
def test_hard_delete_from_every_state(statedb, ctx, clock, instances,
                                      vm_state):
    uuid = instances.in_state(vm_state)
    now = clock.advance(60)
    statedb.hard_delete(ctx, uuid)
    inst = statedb.get_instance(uuid)
    assert (inst['vm_state'], inst['task_id']) == (vm.HARD_DELETED, None)
    if vm_state != vm.HARD_DELETED:
        assert inst['hard_deleted_at'] == now
    assert uuid not in [i['uuid'] for i in statedb.list_instances()]


def test_hard_delete_frees_allocations_once(statedb, ctx, instances):
    uuid = instances.active()
    host = statedb.get_host(instances.host)
    assert host['used_vcpus'] == instances.flavor['vcpus']
    statedb.hard_delete(ctx, uuid)
    host = statedb.get_host(instances.host)
    assert (host['used_vcpus'], host['used_memory_mb'], host['used_disk_gb']) \
        == (0, 0, 0)
    assert statedb.list_allocations(instance_uuid=uuid) == []
    before = instances.snapshot(uuid), statedb.get_host(instances.host)
    statedb.hard_delete(ctx, uuid)
    assert (instances.snapshot(uuid), statedb.get_host(instances.host)) \
        == before


@pytest.mark.parametrize('vm_state', VM_STATES)
@pytest.mark.parametrize('target', [vm.ACTIVE, vm.ERROR])
def test_reset_state_follows_the_table(statedb, ctx, instances, vm_state,
                                       target):
    uuid = instances.in_state(vm_state)
    allowed = TABLE.allowed_from('reset_state', target)
    if vm_state in allowed:
        statedb.reset_state(ctx, uuid, target)
        assert statedb.get_instance(uuid)['vm_state'] == target
        return
    # never resurrected; PENDING only to ERROR; an offloaded server has
    # no domain to be ACTIVE with (unshelve builds it)
    assert vm_state in (vm.HARD_DELETED, vm.PENDING, vm.SHELVED_OFFLOADED)
    before = instances.snapshot(uuid)
    with pytest.raises(exception.ActionNotAllowed) as err:
        statedb.reset_state(ctx, uuid, target)
    _assert_denied(err.value, uuid, vm_state, allowed)
    assert instances.snapshot(uuid) == before


@pytest.mark.parametrize('target', [vm.STOPPED, vm.HARD_DELETED, 'bogus'])
def test_reset_state_to_a_bad_target(statedb, ctx, instances, target):
    uuid = instances.active()
    before = instances.snapshot(uuid)
    with pytest.raises(exception.InvalidState) as err:
        statedb.reset_state(ctx, uuid, target)
    assert target in str(err.value) and 'error' in str(err.value)
    assert instances.snapshot(uuid) == before

"""Hard delete always succeeds at once (DESIGN.md section 4), and soft
delete is a task, undone by restore until the reclaim interval passes.

Hard delete: one UPDATE by the client itself (it has database access), the
resources free in the same transaction, whatever the agent or the running
task is doing. The host's cleanup follows: an agent that was down destroys
the leftover domain when it comes back; a task that was hung learns it was
preempted when it reports, and destroys what it made.
"""

import logging
import time

import pytest

from common import states
from common.states import power
from common.states import task
from common.states import vm
from tests.functional.conftest import act
from tests.functional.conftest import active
from tests.functional.conftest import domain
from tests.functional.conftest import faults
from tests.functional.conftest import last_log
from tests.functional.conftest import log_of
from tests.functional.conftest import set_opts
from tests.functional.conftest import summary
from tests.functional.conftest import used
from tests.functional.conftest import wait_domain
from tests.functional.conftest import wait_heartbeat
from tests.functional.conftest import wait_instance
from tests.functional.conftest import wait_log
from tests.functional.conftest import wait_task

NOTHING = (0, 0, 0)
AT_ONCE = 2.0       # seconds; nothing is waited on but one UPDATE


def _delete(plane, ctx, uuid):
    started = time.monotonic()
    after = plane.client.delete_instance(ctx, uuid)
    assert time.monotonic() - started < AT_ONCE
    return after


def _check_deleted(plane, inst, after):
    assert (after['vm_state'], after['task_state'], after['task_id']) == (
        vm.HARD_DELETED, None, None), summary(after)
    stored = plane.statedb.get_instance(inst['uuid'])
    assert (stored['vm_state'], stored['task_id']) == (vm.HARD_DELETED, None)
    assert stored['hard_deleted_at'] is not None
    assert plane.statedb.list_allocations(instance_uuid=inst['uuid']) == []
    assert used(plane, inst['host']) == NOTHING
    assert inst['uuid'] not in [
        i['uuid'] for i in plane.statedb.list_instances()]


def test_delete_with_the_agent_down_returns_at_once(plane, ctx):
    inst = active(plane, ctx, flavor='small')
    host = inst['host']
    plane.stop_agent(host)

    after = _delete(plane, ctx, inst['uuid'])

    _check_deleted(plane, inst, after)
    entry = last_log(plane, inst['uuid'])
    assert (entry['action'], entry['result'], entry['vm_state_before'],
            entry['vm_state_after']) == ('delete', states.RESULT_SUCCESS,
                                         vm.ACTIVE, vm.HARD_DELETED)
    # Nobody was there to destroy the domain ...
    assert domain(plane, host, inst['uuid']) is not None
    # ... deleting again is fine and changes nothing ...
    again = _delete(plane, ctx, inst['uuid'])
    assert again['vm_state'] == vm.HARD_DELETED
    assert len(log_of(plane, inst['uuid'], 'delete')) == 1
    # ... and the agent destroys it when it comes back.
    plane.start_agent(host)
    wait_domain(plane, host, inst['uuid'], lambda record: record is None,
                what='the leftover domain to be destroyed')
    assert plane.statedb.get_instance(inst['uuid'])['vm_state'] == (
        vm.HARD_DELETED)


# (the action that hangs, the driver operation it hangs in, the task_state)
HUNG = {
    'stop': ('power_off', task.STOPPING),
    'reboot': ('reboot', task.REBOOTING),
}


@pytest.mark.parametrize('action', sorted(HUNG))
def test_delete_preempts_a_hung_task(plane, ctx, caplog, action):
    operation, task_state = HUNG[action]
    # Before the task starts: a delete that comes before the agent's first
    # progress report stops the task there, and logs it at once.
    caplog.set_level(logging.INFO, logger='compute_agent.manager')
    inst = active(plane, ctx, flavor='small')
    host = inst['host']
    faults(plane, host).set_fault(operation, 'hang')
    plane.client.run_action(ctx, inst['uuid'], action)
    running = wait_task(plane, inst['uuid'], task_state)

    after = _delete(plane, ctx, inst['uuid'])

    _check_deleted(plane, inst, after)
    entry = last_log(plane, inst['uuid'], action)
    assert (entry['task_id'], entry['result']) == (
        running['task_id'], states.RESULT_PREEMPTED)
    assert entry['finished_at'] is not None
    # Released, the task reports, is told it was preempted and cleans up.
    faults(plane, host).clear_faults()
    wait_log(caplog, running['task_id'], 'preempted')
    wait_domain(plane, host, inst['uuid'], lambda record: record is None,
                what='the preempted task to destroy the domain')
    final = plane.statedb.get_instance(inst['uuid'])
    assert (final['vm_state'], final['task_state'], final['task_id']) == (
        vm.HARD_DELETED, None, None)
    # The late report changed nothing in the log.
    assert last_log(plane, inst['uuid'], action)['result'] == (
        states.RESULT_PREEMPTED)
    assert _delete(plane, ctx, inst['uuid'])['vm_state'] == vm.HARD_DELETED


def test_delete_during_a_build_frees_the_host(plane, ctx, caplog):
    for host in plane.host_names:
        faults(plane, host).set_fault('spawn', 'hang')
    inst = plane.client.create_instance(ctx, name='vm', flavor='small',
                                        image_ref='cirros')
    building = wait_instance(
        plane, inst['uuid'], lambda i: i['host'] is not None
        and i['progress_step'] == states.step.SPAWNING, what='spawning')

    after = _delete(plane, ctx, inst['uuid'])

    _check_deleted(plane, building, after)
    assert last_log(plane, inst['uuid'], 'build')['result'] == (
        states.RESULT_PREEMPTED)
    # Released, the spawn gives up, is told the build was preempted, and
    # no domain is left behind.
    caplog.set_level(logging.INFO, logger='compute_agent.manager')
    for host in plane.host_names:
        faults(plane, host).clear_faults()
    wait_log(caplog, building['task_id'], 'preempted')
    assert domain(plane, building['host'], inst['uuid']) is None


# --- soft delete and reclaim -------------------------------------------------

RECLAIM = 3600


def test_soft_deleted_instance_is_reclaimed_after_the_interval(
        conf, make_plane, clock, ctx):
    set_opts(conf, 'conductor', reclaim_instance_interval=RECLAIM)
    plane = make_plane(clock=clock)
    kept = active(plane, ctx, name='kept')
    gone = active(plane, ctx, name='gone')
    for inst in (kept, gone):
        act(plane, ctx, inst['uuid'], 'soft_delete')

    clock.advance(RECLAIM - 1)
    assert plane.conductor.periodic.run_once()['reclaimed'] == 0
    wait_heartbeat(plane, kept['host'], since=clock.now)
    restored = act(plane, ctx, kept['uuid'], 'restore')
    assert (restored['vm_state'], restored['power_state']) == (
        vm.ACTIVE, power.RUNNING)

    clock.advance(2)
    assert plane.conductor.periodic.run_once()['reclaimed'] == 1

    reclaimed = plane.statedb.get_instance(gone['uuid'])
    assert (reclaimed['vm_state'], reclaimed['task_id']) == (
        vm.HARD_DELETED, None)
    assert plane.statedb.list_allocations(instance_uuid=gone['uuid']) == []
    assert last_log(plane, gone['uuid'])['action'] == 'delete'
    wait_domain(plane, gone['host'], gone['uuid'], lambda r: r is None,
                what='the reclaimed domain to be destroyed')
    # the restored one is never reclaimed
    clock.advance(RECLAIM * 2)
    assert plane.conductor.periodic.run_once()['reclaimed'] == 0
    assert plane.statedb.get_instance(kept['uuid'])['vm_state'] == vm.ACTIVE


def test_without_reclaim_interval_soft_deleted_instances_stay(
        make_plane, clock, ctx):
    plane = make_plane(hosts=1, clock=clock)
    inst = active(plane, ctx)
    act(plane, ctx, inst['uuid'], 'soft_delete')

    clock.advance(10 ** 7)

    assert plane.conductor.periodic.run_once()['reclaimed'] == 0
    assert plane.statedb.get_instance(inst['uuid'])['vm_state'] == (
        vm.SOFT_DELETED)

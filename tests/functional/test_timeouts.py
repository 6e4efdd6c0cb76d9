"""Tasks never stay in a task_state forever (DESIGN.md section 3, step 6).

A task whose agent went silent is failed by the conductor's reaper once it
made no progress for its action's timeout: rolled back (vm_state unchanged)
where the table allows it, ERROR otherwise. An agent that restarts reports
the tasks it lost, which are failed at once, long before any timeout.

The database's clock is a fake one here: time passes only when a test says.
"""

import os

from common import states
from common.states import power
from common.states import task
from common.states import vm
from compute_agent import journal
from tests.functional.conftest import act
from tests.functional.conftest import active
from tests.functional.conftest import faults
from tests.functional.conftest import last_log
from tests.functional.conftest import set_opts
from tests.functional.conftest import summary
from tests.functional.conftest import used
from tests.functional.conftest import wait_heartbeat
from tests.functional.conftest import wait_idle
from tests.functional.conftest import wait_hung
from tests.functional.conftest import wait_instance
from tests.functional.conftest import wait_task

STOP_TIMEOUT = 600      # the action table's timeout of stop
BUILD_TIMEOUT = 1800    # and of build


def _reap(plane):
    return plane.conductor.periodic.run_once()['reaped']


def test_a_hung_stop_times_out_and_rolls_back(make_plane, clock, ctx):
    plane = make_plane(clock=clock)
    inst = active(plane, ctx)
    faults(plane, inst['host']).set_fault('power_off', 'hang', count=1)
    plane.client.run_action(ctx, inst['uuid'], 'stop')
    running = wait_task(plane, inst['uuid'], task.STOPPING)
    # the agent's progress, made before the driver call, is in: time may pass
    wait_hung(plane, inst['host'], 'power_off')

    clock.advance(STOP_TIMEOUT - 1)
    assert _reap(plane) == 0
    assert plane.statedb.get_instance(inst['uuid'])['task_id'] == (
        running['task_id'])

    clock.advance(2)
    assert _reap(plane) == 1

    after = plane.statedb.get_instance(inst['uuid'])
    assert (after['vm_state'], after['task_state'], after['task_id']) == (
        vm.ACTIVE, None, None), summary(after)
    entry = last_log(plane, inst['uuid'])
    assert (entry['action'], entry['result'], entry['vm_state_after']) == (
        'stop', states.RESULT_ROLLED_BACK, vm.ACTIVE)
    assert 'no progress for %d s' % (STOP_TIMEOUT + 1) in entry['message']
    # The hung call, released later, changes nothing; the user goes on.
    faults(plane, inst['host']).clear_faults()
    wait_heartbeat(plane, inst['host'], since=clock.now)
    stopped = act(plane, ctx, inst['uuid'], 'stop')
    assert (stopped['vm_state'], stopped['power_state']) == (
        vm.STOPPED, power.SHUTDOWN)
    assert last_log(plane, inst['uuid'], 'stop')['result'] == (
        states.RESULT_SUCCESS)


def test_a_hung_build_times_out_in_error_and_frees_the_host(
        make_plane, clock, ctx):
    plane = make_plane(hosts=1, clock=clock)
    faults(plane, 'host1').set_fault('spawn', 'hang')
    inst = plane.client.create_instance(ctx, name='vm', flavor='small',
                                        image_ref='cirros')
    wait_instance(plane, inst['uuid'],
                  lambda i: i['progress_step'] == states.step.SPAWNING,
                  what='spawning')
    assert used(plane, 'host1') != (0, 0, 0)

    clock.advance(BUILD_TIMEOUT + 1)
    assert _reap(plane) == 1

    after = plane.statedb.get_instance(inst['uuid'])
    assert (after['vm_state'], after['task_state'], after['task_id']) == (
        vm.ERROR, None, None), summary(after)
    entry = last_log(plane, inst['uuid'])
    assert (entry['action'], entry['result']) == ('build',
                                                  states.RESULT_ERROR)
    assert 'no progress' in entry['message']
    assert used(plane, 'host1') == (0, 0, 0)
    assert plane.statedb.list_allocations(instance_uuid=inst['uuid']) == []


def test_the_timeout_of_an_action_is_configurable(conf, make_plane, clock,
                                                  ctx):
    set_opts(conf, 'conductor', task_timeouts={'stop': '30'})
    plane = make_plane(hosts=1, clock=clock)
    inst = active(plane, ctx)
    faults(plane, 'host1').set_fault('power_off', 'hang', count=1)
    plane.client.run_action(ctx, inst['uuid'], 'stop')
    wait_task(plane, inst['uuid'], task.STOPPING)
    wait_hung(plane, 'host1', 'power_off')

    clock.advance(29)
    assert _reap(plane) == 0
    clock.advance(2)
    assert _reap(plane) == 1
    assert 'timeout of stop: 30 s' in last_log(plane, inst['uuid'])['message']


# --- agents that restart -----------------------------------------------------

def test_an_agent_that_restarts_fails_the_tasks_it_lost(plane, ctx):
    """The agent died while running a stop: the conductor had claimed the
    task and the agent had noted it in its journal, nothing more. Its next
    run reports the task lost; it is failed at once (the periodic reaper
    does not even run here)."""
    inst = active(plane, ctx)
    host = inst['host']
    plane.stop_agent(host)
    claimed = plane.statedb.claim_task(ctx, inst['uuid'], 'stop')
    journal.TaskJournal(os.path.join(
        plane.conf.state_dir, 'agent', '%s-tasks.json' % host)).add(
        claimed['task_id'], inst['uuid'], 'stop')

    plane.start_agent(host)

    after = wait_idle(plane, inst['uuid'])
    assert (after['vm_state'], after['task_state']) == (vm.ACTIVE, None)
    entry = last_log(plane, inst['uuid'])
    assert (entry['task_id'], entry['result']) == (
        claimed['task_id'], states.RESULT_ROLLED_BACK)
    assert 'restarted and lost the task' in entry['message']
    assert plane.statedb.list_running_tasks() == []
    # and the instance is usable again
    assert act(plane, ctx, inst['uuid'], 'stop')['vm_state'] == vm.STOPPED

"""Fault injection: messages delivered twice, replayed late, out of order.

The whole plane in one process; this test plays a bus that duplicates and
delays messages, sending copies of what agents and conductors sent before,
through the same RPC APIs they use. Nothing moves backwards and nothing is
applied twice: a result for a task that already ended is refused and
changes nothing; a task delivered again to its agent runs once; a power
report older than (or equal to) the last one stored is ignored and decides
nothing. Each test ends with the invariants of ``tristate-manage check``.
"""

import pytest

from common import exception
from common import states
from common.db import checks
from common.states import power
from common.states import task
from common.states import vm
from compute_agent import manager as agent_manager
from compute_agent import rpcapi as compute_rpcapi
from conductor import gateway as gw
from conductor import rpcapi as conductor_rpcapi
from tests.functional.conftest import act
from tests.functional.conftest import active
from tests.functional.conftest import faults
from tests.functional.conftest import log_of
from tests.functional.conftest import wait_agent_done
from tests.functional.conftest import wait_idle
from tests.functional.conftest import wait_instance
from tests.functional.conftest import wait_task
from tests.functional.conftest import without_report_marks


@pytest.fixture
def agent_bus(plane):
    """The conductor's RPC API as an agent holds it (no database)."""
    return conductor_rpcapi.ConductorAPI(plane.bus, plane.conf, timeout=5)


def _state(plane, uuid):
    """Everything a replayed message could change."""
    inst = without_report_marks(plane.statedb.get_instance(uuid))
    return inst, log_of(plane, uuid), plane.statedb.list_allocations(
        instance_uuid=uuid)


def _clean(plane):
    found, _seen = checks.find_violations(
        plane.statedb.db, checks.Limits(ratios=(4.0, 1.0, 1.0)))
    assert [str(v) for v in found] == []


def _power(plane, uuid, seq):
    inst = plane.statedb.get_instance(uuid)
    return {'uuid': uuid, 'power_state': inst['power_state'],
            'reason': inst['power_reason'], 'seq': seq}


def _replay_results(agent_bus, old_ctx, inst):
    """A late finish, a late failure and a late progress of ``old_ctx``'s
    task, as the agent of ``inst``'s host sent them: each refused."""
    host, uuid = inst['host'], inst['uuid']
    late = {'uuid': uuid, 'power_state': power.RUNNING, 'reason': None,
            'seq': 1}
    with pytest.raises(exception.TaskPreempted):
        agent_bus.task_finished(old_ctx, host=host, instance_uuid=uuid,
                                power=late)
    with pytest.raises(exception.TaskPreempted):
        agent_bus.task_failed(old_ctx, host=host, instance_uuid=uuid,
                              error='late', rolled_back=False, power=late)
    with pytest.raises(exception.TaskPreempted):
        agent_bus.task_progress(old_ctx, host=host, instance_uuid=uuid,
                                step=states.step.SPAWNING, percent=50)


def test_results_of_ended_tasks_change_nothing(plane, ctx, agent_bus):
    inst = active(plane, ctx)
    build_ctx = ctx.for_task(inst_build_task(plane, inst['uuid']))
    stopped = act(plane, ctx, inst['uuid'], 'stop')
    stop_ctx = ctx.for_task(log_of(plane, inst['uuid'], 'stop')[-1]['task_id'])
    assert stopped['vm_state'] == vm.STOPPED

    # Idle: the build's and the stop's results again, late.
    before = _state(plane, inst['uuid'])
    _replay_results(agent_bus, build_ctx, stopped)
    _replay_results(agent_bus, stop_ctx, stopped)
    assert _state(plane, inst['uuid']) == before

    # A newer task runs: the old results must not end it.
    faults(plane, inst['host']).set_fault('power_on', 'hang')
    plane.client.run_action(ctx, inst['uuid'], 'start')
    # Once the agent's first progress is in (it then hangs in the driver),
    # nothing else moves the row but the replayed results.
    running = wait_instance(
        plane, inst['uuid'], lambda i: i['task_state'] == task.STARTING
        and i['task_updated_at'] != i['task_started_at'],
        what='the agent to start the start task')
    before = _state(plane, inst['uuid'])
    _replay_results(agent_bus, stop_ctx, running)
    assert _state(plane, inst['uuid']) == before
    # A hang cleared makes a call that waited give up (the start rolls
    # back); a call not made yet succeeds.
    faults(plane, inst['host']).clear_faults()
    if wait_idle(plane, inst['uuid'])['vm_state'] == vm.STOPPED:
        act(plane, ctx, inst['uuid'], 'start')
    started = plane.statedb.get_instance(inst['uuid'])
    assert (started['vm_state'], started['power_state']) == (vm.ACTIVE,
                                                             power.RUNNING)
    log = [(e['action'], e['result']) for e in log_of(plane, inst['uuid'])]
    assert log[:2] == [('build', states.RESULT_SUCCESS),
                       ('stop', states.RESULT_SUCCESS)]
    assert log[2:] in ([('start', states.RESULT_SUCCESS)],
                       [('start', states.RESULT_ROLLED_BACK),
                        ('start', states.RESULT_SUCCESS)])
    _clean(plane)


def inst_build_task(plane, uuid):
    return log_of(plane, uuid, 'build')[-1]['task_id']


def test_a_task_delivered_again_runs_once(plane, ctx):
    inst = active(plane, ctx)
    compute = compute_rpcapi.ComputeAPI(plane.bus, plane.conf)
    faults(plane, inst['host']).set_fault('reboot', 'hang')
    plane.client.run_action(ctx, inst['uuid'], 'reboot')
    running = wait_task(plane, inst['uuid'], task.REBOOTING)
    task_ctx = ctx.for_task(running['task_id'])

    def again():
        return compute.run_task(task_ctx, host=inst['host'],
                                instance=gw.payload(running), action='reboot',
                                timeout=5)
    # While it runs, and after it ended: the agent knows it, runs it once.
    assert again() == agent_manager.DUPLICATE
    faults(plane, inst['host']).clear_faults()
    wait_idle(plane, inst['uuid'])
    wait_agent_done(plane, inst['host'])
    domain_before = faults(plane, inst['host']).read()['domains'][inst['uuid']]
    assert again() == agent_manager.DUPLICATE
    wait_agent_done(plane, inst['host'])
    assert faults(plane, inst['host']).read()['domains'][inst['uuid']] == (
        domain_before)
    # Once: rolled back if the call waited on the hang, else done.
    log = [(e['action'], e['result']) for e in log_of(plane, inst['uuid'])]
    assert log[0] == ('build', states.RESULT_SUCCESS)
    assert log[1:] in ([('reboot', states.RESULT_ROLLED_BACK)],
                       [('reboot', states.RESULT_SUCCESS)])
    _clean(plane)


def test_stale_and_repeated_power_reports_decide_nothing(plane, ctx,
                                                         agent_bus):
    inst = active(plane, ctx)
    running_report = _power(plane, inst['uuid'],
                            plane.statedb.get_instance(inst['uuid'])['power_seq'])
    # The guest shuts itself down: reconciled to STOPPED (its policy).
    faults(plane, inst['host']).set_power(inst['uuid'], power.SHUTDOWN,
                                          states.REASON_GUEST, by='test')
    stopped = wait_instance(plane, inst['uuid'],
                            lambda i: i['vm_state'] == vm.STOPPED,
                            what='the guest shutdown reconciled')
    stopped_report = _power(plane, inst['uuid'], stopped['power_seq'])
    before = _state(plane, inst['uuid'])

    # The old RUNNING report, late; the latest one, again; both in one
    # batch, the newer first (out of order).
    for reports in ([running_report], [stopped_report],
                    [stopped_report, running_report]):
        answer = agent_bus.power_report(ctx.elevated(), host=inst['host'],
                                        reports=reports)
        assert answer['destroy'] == [] and answer['orphans']['uuids'] == []
    assert _state(plane, inst['uuid']) == before
    # No power_off was decided on a stale RUNNING: the guest stays off.
    wait_agent_done(plane, inst['host'])
    assert faults(plane, inst['host']).read()['domains'][inst['uuid']][
        'power_state'] == power.SHUTDOWN
    _clean(plane)

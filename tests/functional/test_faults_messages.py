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


@pytest.mark.parametrize('seq', [2 ** 63, 2 ** 64 + 5, -1, 'many', None])
@pytest.mark.parametrize('changed', [False, True])
def test_a_power_report_seq_beyond_the_column_is_ignored(make_plane, ctx,
                                                         seq, changed):
    """power_seq is a BIGINT: a report numbered beyond it (or not a
    number) is logged and ignored like any bad report, whether it says
    what is stored or something new; the good report beside it in the
    same message is stored, and nothing fails."""
    plane = make_plane(hosts=1)
    agent_bus = conductor_rpcapi.ConductorAPI(plane.bus, plane.conf,
                                              timeout=5)
    inst = active(plane, ctx)
    other = active(plane, ctx)
    before = _state(plane, inst['uuid'])
    bad = dict(_power(plane, inst['uuid'], seq))
    if changed:
        bad.update(power_state=power.SHUTDOWN, reason=states.REASON_GUEST)
    stored = plane.statedb.get_instance(other['uuid'])
    good = _power(plane, other['uuid'], stored['power_seq'] + 1)
    answer = agent_bus.power_report(ctx.elevated(), host=inst['host'],
                                    reports=[bad, good])
    assert answer['destroy'] == [] and answer['orphans']['uuids'] == []
    assert _state(plane, inst['uuid']) == before
    assert plane.statedb.get_instance(other['uuid'])['power_seq'] == (
        stored['power_seq'] + 1)
    _clean(plane)


@pytest.mark.parametrize('full', [2 ** 63, -4, '12'])
def test_a_full_power_report_numbered_beyond_the_column_is_refused(
        plane, ctx, agent_bus, full):
    inst = active(plane, ctx)
    before = _state(plane, inst['uuid'])
    with pytest.raises(exception.Invalid) as err:
        agent_bus.power_report(ctx.elevated(), host=inst['host'],
                               reports=[], full=full)
    assert 'power report full %r' % (full,) in err.value.message
    assert 'a whole number from 1 to 2**63 - 1' in err.value.message
    assert _state(plane, inst['uuid']) == before
    _clean(plane)


def test_an_unchanged_event_report_keeps_a_late_older_one_out(make_plane,
                                                              ctx):
    """An event's report that says what is stored still moves power_seq to
    its own seq: a report numbered before it, arriving after it, then
    changes nothing (the contract: a late report never undoes a newer
    one). Until this was fixed, only the reports of full reads moved it."""
    plane = make_plane(hosts=1)
    agent_bus = conductor_rpcapi.ConductorAPI(plane.bus, plane.conf,
                                              timeout=5)
    inst = active(plane, ctx)
    seq = plane.statedb.get_instance(inst['uuid'])['power_seq']
    newer = _power(plane, inst['uuid'], seq + 2)        # still running
    agent_bus.power_report(ctx.elevated(), host=inst['host'], reports=[newer])
    assert plane.statedb.get_instance(inst['uuid'])['power_seq'] == seq + 2
    before = _state(plane, inst['uuid'])

    late = dict(newer, seq=seq + 1, power_state=power.SHUTDOWN,
                reason=states.REASON_GUEST)
    agent_bus.power_report(ctx.elevated(), host=inst['host'], reports=[late])
    assert _state(plane, inst['uuid']) == before
    assert before[0]['vm_state'] == vm.ACTIVE
    assert before[0]['power_state'] == power.RUNNING
    _clean(plane)

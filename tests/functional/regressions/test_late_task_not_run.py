"""A task that reached its agent after it had ended was run anyway.

The conductor sends a task until its agent accepts it (conductor/delivery.py),
so copies of it can wait in the agent's queue; the reaper may end a task no
agent accepted in time; an agent that restarted has forgotten which tasks it
ran. A copy delivered then was run: a stop that had been failed powered the
guest off behind the user's back, and reconcile made the instance STOPPED.
Found by the fault-injection suite (a finish for an old task_id must change
nothing). Fixed: the agent asks the conductor whether the task still holds
the instance (a progress report, guarded by the task_id) before it makes any
driver call; a task that no longer does is dropped.
"""

from common import states
from common.states import power
from common.states import vm
from compute_agent import rpcapi as compute_rpcapi
from conductor import gateway as gw
from tests.functional.conftest import active
from tests.functional.conftest import domain
from tests.functional.conftest import log_of
from tests.functional.conftest import wait_agent_done
from tests.functional.conftest import without_report_marks


def test_a_task_ended_before_its_agent_got_it_is_not_run(plane, ctx, caplog):
    inst = active(plane, ctx)
    # A stop claimed, then ended by the reaper before any agent took it.
    claimed = plane.statedb.claim_task(ctx, inst['uuid'], 'stop')
    task_ctx = ctx.for_task(claimed['task_id'])
    plane.statedb.fail_task(task_ctx, inst['uuid'], error='timed out',
                            rolled_back=True)
    before = (without_report_marks(plane.statedb.get_instance(inst['uuid'])),
              log_of(plane, inst['uuid']))

    compute = compute_rpcapi.ComputeAPI(plane.bus, plane.conf)
    compute.run_task(task_ctx, host=inst['host'],
                     instance=gw.payload(claimed), action='stop', timeout=5)
    wait_agent_done(plane, inst['host'])

    assert domain(plane, inst['host'], inst['uuid'])['power_state'] == (
        power.RUNNING)
    after = plane.statedb.get_instance(inst['uuid'])
    assert (after['vm_state'], after['power_state']) == (vm.ACTIVE,
                                                         power.RUNNING)
    assert (without_report_marks(after), log_of(plane, inst['uuid'])) == before
    assert [e['result'] for e in log_of(plane, inst['uuid'])] == [
        states.RESULT_SUCCESS, states.RESULT_ROLLED_BACK]

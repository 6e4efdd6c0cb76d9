"""A successful live migration sometimes ended in ERROR.

While the migration ran, the source host's agent saw the domain leave and
reported it gone (NOSTATE); that report was stored, as every report is.
The task finished without a power report (the domain is no longer on the
agent's host), and reconcile, run right after every task, read "ACTIVE but
its domain vanished" and set ERROR. Fixed: no reconcile right after a
migration; the new host's next report decides.

The source's report is sent here by hand while the migration runs (made
slow by a latency), where the race put it about one time in twenty.
"""

from common import context
from common.states import power
from common.states import task
from common.states import vm
from compute_agent import reporter
from tests.functional.conftest import active
from tests.functional.conftest import log_of
from tests.functional.conftest import set_opts
from tests.functional.conftest import summary
from tests.functional.conftest import wait_agent_done
from tests.functional.conftest import wait_idle
from tests.functional.conftest import wait_instance
from tests.functional.conftest import wait_task


def test_the_old_hosts_vanished_report_does_not_error_the_instance(
        conf, make_plane, ctx, admin):
    set_opts(conf, 'fake_driver', latency={'migrate_out': 1.0})
    # No periodic full report from the source to undo the one sent below.
    set_opts(conf, 'compute', power_sync_interval=600)
    plane = make_plane()
    inst = active(plane, ctx)
    source = inst['host']
    plane.client.run_action(admin, inst['uuid'], 'live_migrate')
    wait_task(plane, inst['uuid'], task.MIGRATING)
    plane.client.power_report(
        context.get_admin_context(), host=source, reports=[{
            'uuid': inst['uuid'], 'power_state': power.NOSTATE,
            'reason': None, 'seq': reporter.next_seq()}])
    assert plane.statedb.get_instance(inst['uuid'])['power_state'] == (
        power.NOSTATE)

    wait_idle(plane, inst['uuid'])
    wait_agent_done(plane, source)      # its result and what followed

    after = plane.statedb.get_instance(inst['uuid'])
    assert (after['vm_state'], after['task_id']) == (vm.ACTIVE, None), (
        summary(after), [(e['action'], e['message'])
                         for e in log_of(plane, inst['uuid'])])
    assert after['host'] != source
    assert [e['action'] for e in log_of(plane, inst['uuid'])] == [
        'build', 'live_migrate']
    # the new host's next full report tells the truth
    plane.agents[after['host']].reporter.full_report()
    wait_instance(plane, inst['uuid'],
                  lambda i: i['power_state'] == power.RUNNING,
                  what='the new host to report the domain running')
    assert plane.statedb.get_instance(inst['uuid'])['vm_state'] == vm.ACTIVE

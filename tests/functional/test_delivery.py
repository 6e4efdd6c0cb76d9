"""A task gets to its agent even when the first message does not: the
conductor sends it again until the agent accepts it, and the agent runs a
task it receives several times only once (conductor/delivery.py).

The agent's RPC server is stopped while tasks are sent (as when its
listener has not reconnected to a restarted broker yet), then started
again: it then finds the first message and every copy sent since.
"""

import logging
import time

import pytest

from common.states import power
from common.states import vm
from tests.functional.conftest import domain
from tests.functional.conftest import faults
from tests.functional.conftest import log_of
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_agent_done
from tests.functional.conftest import wait_for
from tests.functional.conftest import wait_idle
from tests.functional.conftest import wait_log

HOST = 'host1'


@pytest.fixture
def deaf_plane(conf, make_plane, caplog):
    """A one-host plane whose agent does not listen (yet); the conductor
    waits 0.2 s for an acceptance before sending a task again."""
    caplog.set_level(logging.INFO)
    set_opts(conf, 'conductor', task_delivery_timeout=0.2)
    plane = make_plane(hosts=1)
    server = plane.agents[HOST].server
    server.stop()
    server.wait()
    return plane


def test_task_sent_until_accepted_runs_once(deaf_plane, ctx, caplog):
    plane = deaf_plane
    inst = plane.client.create_instance(ctx, name='vm', flavor='tiny',
                                        image_ref='cirros')
    task_id = inst['task_id']
    wait_log(caplog, 'did not accept task', task_id)
    # Still building: no agent has the task; the conductor keeps sending.
    assert plane.statedb.get_instance(inst['uuid'])['task_id'] == task_id
    wait_for(lambda: plane.conf.conductor.task_delivery_timeout * 3
             < _waited(caplog, task_id), what='three timeouts to pass')

    plane.agents[HOST].server.start()
    done = wait_idle(plane, inst['uuid'])
    assert (done['vm_state'], done['power_state']) == (vm.ACTIVE,
                                                       power.RUNNING)
    wait_log(caplog, 'accepted by host', HOST, task_id)
    # The copies queued meanwhile reached the agent and were not run.
    wait_log(caplog, 'received again', task_id)
    builds = log_of(plane, inst['uuid'], 'build')
    assert [b['result'] for b in builds] == ['success']
    assert domain(plane, HOST, inst['uuid'])['power_state'] == power.RUNNING
    wait_agent_done(plane, HOST)


def _waited(caplog, task_id):
    """Seconds since the first 'did not accept' line of ``task_id``."""
    first = [r.created for r in caplog.records
             if 'did not accept task' in r.getMessage()
             and task_id in r.getMessage()]
    return time.time() - first[0] if first else 0.0


def test_resending_stops_when_the_task_ends(deaf_plane, ctx, caplog):
    """Deleted before any agent accepted its build: no more sends, and the
    copies that arrive later destroy what they would have built."""
    plane = deaf_plane
    inst = plane.client.create_instance(ctx, name='vm', flavor='tiny',
                                        image_ref='cirros')
    wait_log(caplog, 'did not accept task', inst['task_id'])
    deleted = plane.client.delete_instance(ctx, inst['uuid'])
    assert deleted['vm_state'] == vm.HARD_DELETED
    wait_log(caplog, 'ended before its agent accepted it', inst['task_id'])

    plane.agents[HOST].server.start()
    wait_agent_done(plane, HOST)
    wait_for(lambda: domain(plane, HOST, inst['uuid']) is None,
             what='no domain for the deleted instance')
    assert plane.statedb.get_host(HOST)['used_vcpus'] == 0


def test_an_agent_runs_at_most_max_concurrent_tasks(conf, make_plane, ctx,
                                                    caplog):
    """Beyond ``[compute] max_concurrent_tasks`` a task is accepted and
    waits for a running one to end."""
    caplog.set_level(logging.INFO)
    set_opts(conf, 'compute', max_concurrent_tasks=1)
    plane = make_plane(hosts=1)
    first, second = (plane.client.create_instance(
        ctx, name=n, flavor='tiny', image_ref='cirros') for n in 'ab')
    for inst in (first, second):
        assert wait_idle(plane, inst['uuid'])['vm_state'] == vm.ACTIVE
    faults(plane, HOST).set_fault('power_off', 'hang')
    plane.client.run_action(ctx, first['uuid'], 'stop', {})
    wait_for(plane.agents[HOST].manager.running_tasks,
             what='the stop to run')
    rebooting = plane.client.run_action(ctx, second['uuid'], 'reboot', {})
    wait_log(caplog, 'waits', rebooting['started_task_id'])
    # The reboot is accepted but has not started: no progress yet.
    now = plane.statedb.get_instance(second['uuid'])
    assert now['task_id'] == rebooting['started_task_id']
    assert now['task_updated_at'] == now['task_started_at']

    faults(plane, HOST).clear_faults()        # the stop gives up
    assert wait_idle(plane, second['uuid'])['vm_state'] == vm.ACTIVE
    assert [e['result'] for e in log_of(plane, second['uuid'], 'reboot')] == [
        'success']
    wait_agent_done(plane, HOST)

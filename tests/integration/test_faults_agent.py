"""Fault injection: compute agents SIGKILLed in the middle of their tasks.

Every kind of task is caught running (its driver call hangs on the fake
hypervisor) when both agents are killed; an instance is hard-deleted while
they are dead; then they are started again. Each agent's journal names the
tasks its previous run lost, and the conductor fails them at once (long
before any timeout): rolled back where the action table allows it, ERROR
for a build. The deleted instances' domains, left on the hosts, are
destroyed. Nothing stays in a task_state, the invariants of
``tristate-manage check`` hold, and the agents run tasks again.
"""

import pytest

from common import states
from common.states import power
from common.states import vm
from compute_agent.virt import fake

from .conftest import HOSTS
from .conftest import size

pytestmark = pytest.mark.rabbitmq

# action: (the fake hypervisor's operation that hangs, its parameters,
#          vm_state once the lost task is failed, result in the action log)
LOST = {
    'stop': ('power_off', {}, vm.ACTIVE, states.RESULT_ROLLED_BACK),
    'reboot': ('reboot', {}, vm.ACTIVE, states.RESULT_ROLLED_BACK),
    'resize': ('resize', {'flavor': 'small'}, vm.ACTIVE,
               states.RESULT_ROLLED_BACK),
    'pause': ('pause', {}, vm.ACTIVE, states.RESULT_ROLLED_BACK),
    'snapshot': ('snapshot', {'image_name': 'snap'}, vm.ACTIVE,
                 states.RESULT_ROLLED_BACK),
}
PER_ACTION = size(1, 5)     # instances caught in each kind of task
# Seconds for the lost tasks to be failed after the restart: far below the
# shortest timeout of the action table (300 s), so not the reaper's doing.
LOST_DEADLINE = 90


def _build_all(plane, names):
    made = [plane.api.create_instance(plane.ctx, name=name, flavor='tiny',
                                      image_ref='cirros') for name in names]
    built = [plane.wait_idle(inst['uuid'], 120) for inst in made]
    for inst in built:
        assert inst['vm_state'] == vm.ACTIVE, inst
    return built


def _in_journal(plane, uuid):
    inst = plane.instance(uuid)
    return inst['host'] is not None and inst['task_id'] in plane.agent_tasks(
        inst['host'])


def _hang(plane, operations):
    for host in HOSTS:
        store = fake.HostStore(str(plane.state_dir), host)
        for operation in operations:
            store.set_fault(operation, 'hang')


def _start_tasks(plane, targets):
    """Start each target's action; return {uuid: (action, task_id)}."""
    running = {}
    for action, insts in targets.items():
        for inst in insts:
            plane.api.run_action(plane.ctx, inst['uuid'], action,
                                 LOST[action][1])
            running[inst['uuid']] = (action, plane.last_task(inst['uuid'],
                                                             action))
    for _n in range(PER_ACTION):
        new = plane.api.create_instance(plane.ctx, name='lost-build',
                                        flavor='tiny', image_ref='cirros')
        running[new['uuid']] = ('build', plane.last_task(new['uuid'], 'build'))
    return running


def _assert_failed_as_lost(plane, uuid, action, task_id):
    inst = plane.wait_idle(uuid, LOST_DEADLINE)
    entry = next(e for e in plane.statedb.list_actions(uuid)
                 if e['task_id'] == task_id)
    if action == 'build':
        expected = (vm.ERROR, states.RESULT_ERROR)
        assert plane.statedb.list_allocations(instance_uuid=uuid) == []
    else:
        expected = LOST[action][2:]
        # The hung call changed nothing: the guest runs as before.
        assert inst['power_state'] == power.RUNNING, inst
        assert plane.domain(inst)['power_state'] == power.RUNNING
    assert (inst['vm_state'], entry['result']) == expected, (inst, entry)
    assert 'restarted and lost the task' in entry['message'], entry


def _kill_delete_restart(plane, doomed, running):
    for host in HOSTS:
        plane.kill(host)
    for inst in doomed:
        plane.api.delete_instance(plane.ctx, inst['uuid'])
    for host in HOSTS:
        fake.HostStore(str(plane.state_dir), host).clear_faults()
    # Nothing but the agents' restart can end these tasks now.
    for uuid, (_action, task_id) in running.items():
        assert plane.instance(uuid)['task_id'] == task_id
    for host in HOSTS:
        plane.restart(host)


def test_agents_killed_mid_task_fail_their_tasks_on_restart(make_plane):
    plane = make_plane()
    names = ['%s-%d' % (action, n) for action in LOST
             for n in range(PER_ACTION)]
    built = _build_all(plane, names + ['doomed-1', 'doomed-2'])
    targets = {action: built[i * PER_ACTION:(i + 1) * PER_ACTION]
               for i, action in enumerate(LOST)}
    doomed = built[-2:]
    assert {inst['host'] for inst in doomed} == set(HOSTS)

    _hang(plane, ['spawn'] + [spec[0] for spec in LOST.values()])
    running = _start_tasks(plane, targets)
    plane.wait_for(lambda: all(_in_journal(plane, uuid) for uuid in running),
                   60, 'every task to be accepted by its agent')

    _kill_delete_restart(plane, doomed, running)

    for uuid, (action, task_id) in running.items():
        _assert_failed_as_lost(plane, uuid, action, task_id)
    for inst in doomed:
        plane.wait_destroyed(inst, 60)
    assert plane.violations() == []

    # The agents run tasks again, on the instances whose tasks were lost.
    for inst in targets['reboot'] + targets['resize']:
        done = plane.act(inst['uuid'], 'stop', timeout=60)
        assert (done['vm_state'], done['power_state']) == (
            vm.STOPPED, power.SHUTDOWN), done
    assert plane.violations() == []
    plane.check_alive()

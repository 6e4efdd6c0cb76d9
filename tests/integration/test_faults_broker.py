"""Fault injection: the broker SIGKILLed in the middle of builds and actions.

Builds, stops and reboots run on both agents when the RabbitMQ node is
killed; while it is dead, instances are hard-deleted (each delete returns
at once, the bus not needed); it is started again. Every task ends, done or
failed with a reason in the action log; no instance is lost; the deleted
instances' domains are destroyed; the daemons reconnect by themselves and
the invariants of ``tristate-manage check`` hold.
"""

import time

import pytest

from common import states
from common.states import power
from common.states import vm

from .conftest import HOSTS
from .conftest import size

pytestmark = pytest.mark.rabbitmq

BUILDS = size(6, 100)       # new builds running when the broker dies
ACTIONS = size(4, 20)       # stops and reboots, on instances built before
DELETES = size(2, 10)       # hard deletes while the broker is dead
DOWN = size(2, 10)          # seconds the broker stays dead
DELETE_DEADLINE = 5         # seconds a hard delete may take meanwhile
END_DEADLINE = size(120, 600)


def _create(plane, name):
    return plane.api.create_instance(plane.ctx, name=name, flavor='tiny',
                                     image_ref='cirros')


def _ended(plane, uuid, task_id, done_state):
    """The task ``task_id`` ended: done (``done_state``) or failed with a
    reason; returns the instance."""
    inst = plane.wait_idle(uuid, END_DEADLINE)
    entry = next(e for e in plane.statedb.list_actions(uuid)
                 if e['task_id'] == task_id)
    assert entry['result'] != states.RESULT_RUNNING, entry
    assert entry['finished_at'] is not None, entry
    if entry['result'] == states.RESULT_SUCCESS:
        assert inst['vm_state'] == done_state, (inst, entry)
    else:
        assert entry['message'], entry
    return inst


def _assert_matches_hypervisor(plane, inst):
    """An instance that should run has its domain, running."""
    if inst['vm_state'] not in (vm.ACTIVE, vm.STOPPED):
        return
    domain = plane.domain(inst)
    assert domain is not None, inst
    want = power.RUNNING if inst['vm_state'] == vm.ACTIVE else power.SHUTDOWN
    assert (inst['power_state'], domain['power_state']) == (want, want), (
        inst, domain)


def _start_load(plane, ready):
    """:data:`BUILDS` new builds, then stops and reboots on ``ready`` (last,
    so that they are still in their driver call when the broker dies);
    returns the builds and the actions, each [(uuid, task_id, vm_state on
    success)]."""
    builds, acts = [], []
    for n in range(BUILDS):
        new = _create(plane, 'load-%d' % n)
        builds.append((new['uuid'], plane.last_task(new['uuid'], 'build'),
                       vm.ACTIVE))
    for n, inst in enumerate(ready):
        action, done = (('stop', vm.STOPPED) if n % 2 == 0
                        else ('reboot', vm.ACTIVE))
        plane.api.run_action(plane.ctx, inst['uuid'], action)
        acts.append((inst['uuid'], plane.last_task(inst['uuid'], action),
                     done))
    return builds, acts


def _delete_all(plane, doomed):
    took = []
    for inst in doomed:
        started = time.monotonic()
        deleted = plane.api.delete_instance(plane.ctx, inst['uuid'])
        took.append(time.monotonic() - started)
        assert (deleted['vm_state'], deleted['task_id']) == (vm.HARD_DELETED,
                                                             None)
    return took


def test_broker_killed_under_load_loses_nothing(make_plane, broker):
    broker.require_ctl()
    # Room for every instance (130 at full size) under the default ratio.
    plane = make_plane(fake_driver={'vcpus': 64, 'latency': {
        'spawn': 2, 'power_off': 2, 'reboot': 2}})
    before = [_create(plane, 'pre-%d' % n) for n in range(ACTIONS + DELETES)]
    before = [plane.wait_idle(inst['uuid'], 120) for inst in before]
    assert all(inst['vm_state'] == vm.ACTIVE for inst in before)
    ready, doomed = before[:ACTIONS], before[ACTIONS:]

    builds, acts = _start_load(plane, ready)
    tasks = builds + acts
    plane.wait_for(lambda: any(plane.instance(uuid)['progress_step']
                               == states.step.SPAWNING
                               for uuid, _t, _d in builds), 60,
                   'a build to be spawning')
    broker.kill()
    # Actions were running when it died, not only builds.
    assert any(plane.instance(uuid)['task_id'] == task_id
               for uuid, task_id, _d in acts), acts
    took = _delete_all(plane, doomed)
    assert max(took) < DELETE_DEADLINE, took
    time.sleep(DOWN)    # the outage itself, not a wait for a condition
    broker.start()

    for uuid, task_id, done in tasks:
        inst = _ended(plane, uuid, task_id, done)
        _assert_matches_hypervisor(plane, inst)
    for inst in doomed:
        plane.wait_destroyed(inst, 90)
    everything = plane.statedb.list_instances(include_deleted=True)
    assert len(everything) == len(before) + BUILDS
    assert plane.violations() == []

    # Reconnected: both agents take tasks again.
    live = [plane.instance(uuid) for uuid, _t, _d in tasks]
    plane.still_works(live, HOSTS)

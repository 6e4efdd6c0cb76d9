"""Races the conditional UPDATEs must win on every backend.

Threads wait on a barrier so that they hit the database together; there are
no sleeps. Each test runs a race and checks the only acceptable outcome.
"""

import datetime
import threading

from common import exception
from common.states import vm

THREADS = 20


def _race(count, work):
    """Run ``work(i)`` in ``count`` threads released at once.

    Returns a list of ('ok', result) or ('err', exception), by thread index.
    """
    barrier = threading.Barrier(count)
    outcomes = [None] * count

    def run(i):
        barrier.wait()
        try:
            outcomes[i] = ('ok', work(i))
        except Exception as err:  # noqa: BLE001 - collected and checked
            outcomes[i] = ('err', err)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive(), 'a racing thread hung'
    return outcomes


def _errors(outcomes):
    return [value for kind, value in outcomes if kind == 'err']


def test_one_claim_wins(statedb, ctx, instances):
    uuid = instances.active()
    outcomes = _race(THREADS, lambda i: statedb.claim_task(ctx, uuid, 'reboot'))
    wins = [value for kind, value in outcomes if kind == 'ok']
    assert len(wins) == 1
    errors = _errors(outcomes)
    assert len(errors) == THREADS - 1
    assert all(isinstance(e, exception.ActionNotAllowed) for e in errors), errors
    inst = statedb.get_instance(uuid)
    assert (inst['task_id'], inst['task_state']) == (wins[0]['task_id'],
                                                     'rebooting')
    running = [a for a in statedb.list_actions(uuid) if a['result'] == 'running']
    assert len(running) == 1


def test_allocations_never_overcommit(statedb, instances):
    flavor = instances.flavor
    statedb.host_heartbeat('small', vcpus=5 * flavor['vcpus'],
                           memory_mb=5 * flavor['memory_mb'],
                           disk_gb=5 * flavor['disk_gb'])
    building = [instances.create('vm%d' % i) for i in range(THREADS)]

    def allocate(i):
        uuid, task = building[i]
        statedb.allocate(task, uuid, 'small', **flavor)

    outcomes = _race(THREADS, allocate)
    errors = _errors(outcomes)
    assert len(errors) == THREADS - 5
    assert all(isinstance(e, exception.HostCapacityExceeded)
               for e in errors), errors
    host = statedb.get_host('small')
    assert (host['used_vcpus'], host['used_memory_mb'], host['used_disk_gb']) \
        == (5 * flavor['vcpus'], 5 * flavor['memory_mb'], 5 * flavor['disk_gb'])
    assert len(statedb.list_allocations(host='small')) == 5


def _delete_races_finish(statedb, ctx, instances):
    uuid = instances.active()
    task = instances.start(uuid, 'stop')
    calls = (lambda: statedb.hard_delete(ctx, uuid),
             lambda: statedb.finish_task(task, uuid))
    return uuid, _race(2, lambda i: calls[i]())


def test_hard_delete_beats_a_finish(statedb, ctx, instances):
    for _ in range(5):
        uuid, outcomes = _delete_races_finish(statedb, ctx, instances)
        errors = _errors(outcomes)
        assert all(isinstance(e, exception.TaskPreempted) for e in errors), \
            errors
        inst = statedb.get_instance(uuid)
        assert (inst['vm_state'], inst['task_id']) == (vm.HARD_DELETED, None)
        assert statedb.list_allocations(instance_uuid=uuid) == []


def test_concurrent_deletes_free_once(statedb, ctx, instances):
    uuid = instances.active()
    outcomes = _race(THREADS, lambda i: statedb.hard_delete(ctx, uuid))
    assert _errors(outcomes) == []
    host = statedb.get_host(instances.host)
    assert (host['used_vcpus'], host['used_memory_mb'], host['used_disk_gb']) \
        == (0, 0, 0)
    deletes = [a for a in statedb.list_actions(uuid) if a['action'] == 'delete']
    assert len(deletes) == 1


def test_newest_power_report_stands(statedb, instances):
    uuid = instances.active()
    # Thread i sends seq THREADS - i: the newest report is sent first.
    _race(THREADS, lambda i: statedb.store_power_report(
        uuid, host=instances.host, seq=THREADS - i,
        state='RUNNING' if i == 0 else 'SHUTDOWN'))
    inst = statedb.get_instance(uuid)
    assert (inst['power_seq'], inst['power_state']) == (THREADS, 1)


def test_anti_affinity_members_placed_at_once_never_share_a_host(statedb,
                                                                instances):
    """Twenty members of one anti-affinity group scheduled at once onto
    four roomy hosts (besides the fixture's): the group's row lock
    (common/db/server_groups.py) lets four land, one a host; the rest
    find no host."""
    hosts = ['h%d' % n for n in range(4)]
    for name in hosts:
        statedb.host_heartbeat(name, vcpus=1000, memory_mb=10 ** 6,
                               disk_gb=10 ** 4)
    statedb.set_quotas('demo', {'server_group_members': -1})
    group = statedb.create_server_group(
        name='spread', policy='anti-affinity', project_id='demo',
        user_id='alice')['uuid']
    building = []
    for i in range(THREADS):
        inst = statedb.create_instance(instances.ctx, dict(
            instances.flavor, name='vm%d' % i, project_id='demo',
            user_id='alice', flavor_name='m1.small', image_ref='cirros'),
            server_group=group)
        building.append((inst['uuid'],
                         instances.ctx.for_task(inst['task_id'])))

    def place(i):
        uuid, task = building[i]
        return statedb.find_and_allocate(
            task, uuid, ratios=(1.0, 1.0, 1.0),
            alive_since=statedb.clock() - datetime.timedelta(days=1),
            only=None, exclude=[instances.host], **instances.flavor)

    outcomes = _race(THREADS, place)
    assert _errors(outcomes) == []
    placed = [value for _kind, value in outcomes if value is not None]
    assert sorted(placed) == hosts
    assert len(statedb.get_server_group(group)['members']) == THREADS

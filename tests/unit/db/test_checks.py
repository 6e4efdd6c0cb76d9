"""``tristate-manage check``'s invariants (common/db/checks.py), on every
backend: a plane made through the gateway is clean; each violation, made
by hand in the database the way a bug or a crash would leave it, is
reported naming the instance or host and what is wrong."""

import datetime

import pytest
import sqlalchemy as sa

from common.db import checks
from common.db import models
from common.states import VM_STATES
from common.states import vm

I = models.Instance.__table__          # noqa: E741
H = models.Host.__table__
LOGT = models.InstanceAction.__table__


def _violations(statedb, clock, **limits):
    found, _seen = checks.find_violations(
        statedb.db, checks.Limits(now=clock(), **limits))
    return [str(v) for v in found]


def _update(statedb, table, where, **values):
    statedb.db.transaction(lambda conn: conn.execute(
        sa.update(table).where(where).values(**values)))


def _only(found, *words):
    assert len(found) == 1, found
    for word in words:
        assert word in found[0], found
    return found[0]


def test_a_plane_made_through_the_gateway_is_clean(statedb, clock,
                                                   instances):
    # INITIALIZED idle is made by hand (no flow leaves it): not here.
    for vm_state in VM_STATES:
        if vm_state != vm.INITIALIZED:
            instances.in_state(vm_state)
    stopping = instances.active()
    instances.start(stopping, 'stop')
    resized = instances.in_state(vm.RESIZED)
    assert statedb.get_instance(resized)['vm_state'] == vm.RESIZED
    instances.create('building')
    found, seen = checks.find_violations(statedb.db,
                                         checks.Limits(now=clock()))
    assert found == []
    assert seen['instances'] == len(VM_STATES) + 2
    assert seen['running tasks'] == 2


def test_every_vm_state_is_reachable():
    assert checks.REACHABLE == frozenset(VM_STATES)


# --- tasks -------------------------------------------------------------------

def test_a_task_older_than_its_timeout(statedb, clock, instances):
    uuid = instances.active()
    task = instances.start(uuid, 'stop')
    clock.advance(600)
    assert _violations(statedb, clock) == []
    clock.advance(1)
    _only(_violations(statedb, clock), 'instance %s' % uuid, task.task_id,
          'no progress for 601 s', 'timeout of 600 s')
    # The reaper's overrides and its period are the check's too.
    assert _violations(statedb, clock, task_timeouts={'stop': '700'}) == []
    _only(_violations(statedb, clock, task_timeouts={'stop': '60'}),
          'timeout of 60 s')
    assert _violations(statedb, clock, grace=10) == []


def test_task_fields_set_apart(statedb, clock, instances):
    uuid = instances.active()
    instances.start(uuid, 'stop')
    _update(statedb, I, I.c.uuid == uuid, task_state=None)
    _only(_violations(statedb, clock), uuid, 'not set together')


def test_a_task_state_the_table_does_not_give(statedb, clock, instances):
    uuid = instances.active()
    instances.start(uuid, 'stop')
    _update(statedb, I, I.c.uuid == uuid, task_state='rebooting')
    _only(_violations(statedb, clock), uuid, 'task_state rebooting of stop',
          'vm_state active', 'gives stopping')


# --- the action log --------------------------------------------------------------

def test_a_log_entry_left_running(statedb, clock, instances):
    uuid = instances.active()
    task = instances.start(uuid, 'stop')
    _update(statedb, I, I.c.uuid == uuid, task_id=None, task_state=None,
            task_action=None)
    _only(_violations(statedb, clock), 'instance %s' % uuid, task.task_id,
          'still running', 'does not hold')


def test_a_running_task_not_logged(statedb, clock, instances):
    uuid = instances.active()
    task = instances.start(uuid, 'stop')
    _update(statedb, LOGT, LOGT.c.task_id == task.task_id, result='success',
            finished_at=clock(), vm_state_after=vm.STOPPED)
    _only(_violations(statedb, clock), uuid, task.task_id,
          'not in the action log')


def test_an_ended_task_without_its_result(statedb, clock, instances):
    uuid = instances.active()
    entry = statedb.list_actions(uuid)[-1]
    _update(statedb, LOGT, LOGT.c.id == entry['id'], finished_at=None)
    _only(_violations(statedb, clock), uuid, entry['task_id'],
          'without a proper end')
    _update(statedb, LOGT, LOGT.c.id == entry['id'], finished_at=clock(),
            result='bogus')
    _only(_violations(statedb, clock), "result 'bogus'")


# --- hosts and allocations ----------------------------------------------------------

def test_usage_that_is_not_the_sum_of_allocations(statedb, clock, instances):
    instances.active()
    _update(statedb, H, H.c.name == instances.host,
            used_memory_mb=H.c.used_memory_mb + 1,
            free_memory_mb=H.c.free_memory_mb - 1)
    _only(_violations(statedb, clock), 'host %s' % instances.host,
          'used_memory_mb is %d' % (instances.flavor['memory_mb'] + 1),
          'sum to %d' % instances.flavor['memory_mb'])


def test_a_stored_weigher_that_is_not_the_free_ram(statedb, clock,
                                                   instances):
    instances.active()
    _update(statedb, H, H.c.name == instances.host,
            free_memory_mb=H.c.free_memory_mb + 1)
    _only(_violations(statedb, clock), 'host %s' % instances.host,
          'free_memory_mb is', 'ram_ratio 1 - used_memory_mb %d'
          % instances.flavor['memory_mb'])


def test_a_host_over_capacity(statedb, clock, instances):
    instances.active()
    instances.active()
    statedb.host_heartbeat(instances.host, vcpus=1, memory_mb=10 ** 9,
                           disk_gb=10 ** 7)
    _only(_violations(statedb, clock), 'host %s' % instances.host,
          'used_vcpus 4 is over its capacity 1 x 1')
    assert _violations(statedb, clock, ratios=(4.0, 1.0, 1.0)) == []


def test_a_hosts_own_ratio_is_its_capacity(statedb, clock, instances):
    instances.active()
    instances.active()
    statedb.host_heartbeat(instances.host, vcpus=1, memory_mb=10 ** 9,
                           disk_gb=10 ** 7,
                           own_ratios={'own_cpu_ratio': 4.0})
    assert _violations(statedb, clock) == []


def test_an_anti_affinity_group_with_two_members_on_a_host(statedb, clock,
                                                          instances):
    group = statedb.create_server_group(
        name='g', policy='anti-affinity', project_id='demo',
        user_id='alice')['uuid']
    for n in range(2):
        inst = statedb.create_instance(instances.ctx, dict(
            instances.flavor, name='vm%d' % n, project_id='demo',
            user_id='alice', flavor_name='m1.small', image_ref='cirros'),
            server_group=group)
        # placed by hand, past the scheduler's policy
        statedb.allocate(instances.ctx.for_task(inst['task_id']),
                         inst['uuid'], instances.host, **instances.flavor)
    _only(_violations(statedb, clock), 'server group %s' % group,
          'at most 1 a host, has 2 members on %s' % instances.host)


def test_a_hard_deleted_instance_holding_resources(statedb, clock, instances):
    uuid = instances.active()
    _update(statedb, I, I.c.uuid == uuid, vm_state=vm.HARD_DELETED)
    _only(_violations(statedb, clock), uuid, 'hard-deleted but holds',
          'instance allocation')


def test_an_offloaded_instance_holding_resources_or_a_host(statedb, clock,
                                                           instances):
    # seed 000: a shelved-offloaded VM holds no host resources
    holding = instances.in_state(vm.SHELVED)
    _update(statedb, I, I.c.uuid == holding, vm_state=vm.SHELVED_OFFLOADED,
            shelved_image_id='6f2b8a2e-2f0e-4c52-9c5c-000000000001')
    _only(_violations(statedb, clock), holding, 'shelved_offloaded but holds',
          'instance allocation')
    statedb.db.transaction(lambda conn: statedb._free_allocations(conn,
                                                                  holding))
    _only(_violations(statedb, clock), holding,
          'shelved_offloaded but is placed on host %s' % instances.host)


def test_an_offloaded_instance_with_no_snapshot(statedb, clock, instances):
    # offloaded, its disk destroyed: the snapshot is all that is left
    uuid = instances.in_state(vm.SHELVED)
    statedb.db.transaction(lambda conn: statedb._free_allocations(conn, uuid))
    _update(statedb, I, I.c.uuid == uuid, vm_state=vm.SHELVED_OFFLOADED,
            host=None)
    _only(_violations(statedb, clock), uuid, 'no snapshot to unshelve from')
    _update(statedb, I, I.c.uuid == uuid,
            shelved_image_id='6f2b8a2e-2f0e-4c52-9c5c-000000000001')
    assert _violations(statedb, clock) == []


def test_an_idle_instance_holding_another_hosts_resources(statedb, clock,
                                                          instances):
    uuid = instances.active()
    _update(statedb, I, I.c.uuid == uuid, host='elsewhere')
    _only(_violations(statedb, clock), uuid, 'runs on host elsewhere',
          'on %s' % instances.host)


def test_a_resize_allocation_left_after_the_resize(statedb, clock, instances):
    uuid = instances.active()
    task = instances.start(uuid, 'resize')
    statedb.allocate(task, uuid, instances.host, vcpus=4, memory_mb=4096,
                     disk_gb=40, purpose='resize', flavor_name='m1.large')
    statedb.finish_task(task, uuid)
    assert _violations(statedb, clock) == []
    allocs = models.Allocation.__table__
    # As if a revert had ended without giving the new flavor back.
    _update(statedb, I, I.c.uuid == uuid, vm_state=vm.ACTIVE)
    _only(_violations(statedb, clock), uuid, 'is active with no task',
          'resize allocation')
    _update(statedb, allocs, allocs.c.purpose == 'resize',
            purpose='migration')
    _only(_violations(statedb, clock), uuid, 'migration allocation')


def test_a_vm_state_the_table_cannot_reach(statedb, clock, instances):
    uuid = instances.active()
    _update(statedb, I, I.c.uuid == uuid, vm_state='shutoff')
    _only(_violations(statedb, clock), uuid, "vm_state 'shutoff'")


# --- power ---------------------------------------------------------------------

@pytest.mark.parametrize('values,words', [
    ({'power_state': 2}, ('power_state 2',)),
    ({'power_reason': 'bogus'}, ("reason 'bogus'",)),
    ({'power_seq': 7}, ('seq 7', 'not stored together')),
])
def test_a_power_state_from_nowhere(statedb, clock, instances, values, words):
    uuid = instances.active()
    _update(statedb, I, I.c.uuid == uuid, **values)
    _only(_violations(statedb, clock), uuid, *words)


def test_a_power_report_from_the_future(statedb, clock, instances):
    uuid = instances.active()
    statedb.store_power_report(uuid, host=instances.host, state='RUNNING',
                               seq=3)
    assert _violations(statedb, clock) == []
    earlier = checks.Limits(now=clock() - datetime.timedelta(seconds=5))
    found, _ = checks.find_violations(statedb.db, earlier)
    _only([str(v) for v in found], uuid, 'later than now')


def test_a_report_stored_while_the_check_starts_is_not_from_the_future(
        statedb, clock, instances, monkeypatch):
    """``tristate-manage check`` on a live plane: the clock is read once the
    snapshot is, so a report committed after the command started but
    before its snapshot is not "later than now"."""
    uuid = instances.active()
    read = checks.read_snapshot

    def read_after_a_report(database):
        clock.advance(0.5)
        statedb.store_power_report(uuid, host=instances.host,
                                   state='RUNNING', seq=3)
        return read(database)

    monkeypatch.setattr(checks, 'read_snapshot', read_after_a_report)
    found, _ = checks.find_violations(statedb.db, checks.Limits(),
                                      clock=clock)
    assert found == []
    assert statedb.get_instance(uuid)['power_seq'] == 3


def test_every_violation_is_reported_at_once(statedb, clock, instances):
    first, second = instances.active(), instances.active()
    _update(statedb, I, I.c.uuid == first, vm_state='shutoff')
    _update(statedb, I, I.c.uuid == second, power_state=99)
    found = _violations(statedb, clock)
    assert len(found) == 2
    assert {first, second} == {line.split()[1].rstrip(':') for line in found}


# --- domains (issue 19) ----------------------------------------------------------

S = models.StrayDomain.__table__
A = models.Allocation.__table__


def _stray(statedb, clock, host, uuid, power_state=1, seq=5):
    statedb.db.transaction(lambda conn: conn.execute(sa.insert(S).values(
        host=host, instance_uuid=uuid, power_state=power_state,
        power_seq=seq, reported_at=clock(), doomed=False,
        created_at=clock())))


def test_a_running_domain_without_an_allocation(statedb, clock, instances):
    uuid = instances.active()
    statedb.store_power_report(uuid, host=instances.host, state='RUNNING',
                               seq=3)
    assert _violations(statedb, clock) == []
    # as a failed build left it: the allocation freed, the domain running
    statedb.db.transaction(lambda conn: conn.execute(
        sa.delete(A).where(A.c.instance_uuid == uuid)))
    _update(statedb, H, H.c.name == instances.host, used_vcpus=0,
            used_memory_mb=0, used_disk_gb=0,
            free_memory_mb=H.c.memory_mb * H.c.ram_ratio)
    _only(_violations(statedb, clock), 'instance %s' % uuid,
          'domain is reported RUNNING on host %s' % instances.host,
          'holds no allocation there')


def test_a_hard_deleted_instances_domain_reported_since(statedb, clock,
                                                        instances):
    uuid = instances.active()
    statedb.store_power_report(uuid, host=instances.host, state='RUNNING',
                               seq=3)
    clock.advance(1)
    statedb.hard_delete(instances.ctx, uuid)
    assert _violations(statedb, clock) == []     # reported before the delete
    clock.advance(1)
    statedb.store_power_report(uuid, host=instances.host, state='RUNNING',
                               seq=4)
    _only(_violations(statedb, clock), 'instance %s' % uuid,
          'hard-deleted but host %s reported its domain RUNNING'
          % instances.host, 'after the delete')
    statedb.store_power_report(uuid, host=instances.host, state='NOSTATE',
                               seq=5)
    assert _violations(statedb, clock) == []
    # the copy on a move's destination, which its row cannot hold
    _stray(statedb, clock, 'node9', uuid)
    _only(_violations(statedb, clock), 'instance %s' % uuid,
          'hard-deleted but host node9 reported its domain RUNNING')


def test_a_domain_reported_on_another_host_than_its_instances(
        statedb, clock, instances):
    uuid = instances.active()
    _stray(statedb, clock, 'node9', uuid, power_state=3)
    _only(_violations(statedb, clock), 'instance %s' % uuid,
          'placed on host %s but host node9 reported its domain PAUSED'
          % instances.host)
    # a doomed mark not reported yet, a domain gone, an orphan: nothing
    statedb.db.transaction(lambda conn: conn.execute(sa.update(S).values(
        power_state=None, power_seq=0, reported_at=None, doomed=True)))
    _stray(statedb, clock, 'node8', uuid, power_state=0)
    _stray(statedb, clock, 'node9', 'no-such-instance')
    assert _violations(statedb, clock) == []

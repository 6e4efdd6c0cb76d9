"""Domains the instances table cannot place (common/db/domains.py, issue
19), on every backend: strays recorded and forgotten, doomed marks, an
ERROR instance's allocation regained, and a reset to active counted or
refused."""

import pytest
import sqlalchemy as sa

from common import exception
from common.db import models
from common.states import power
from common.states import vm
from tests.conftest import HOST

A = models.Allocation.__table__
H = models.Host.__table__


def _strays(statedb):
    return {(s['host'], s['instance_uuid']): (s['power_state'], s['doomed'])
            for s in statedb.list_strays()}


def test_strays_are_recorded_and_forgotten_by_a_full_read(statedb):
    statedb.record_strays('node2', [('a', power.RUNNING, 10),
                                    ('b', power.PAUSED, 10)])
    statedb.record_strays('node2', [('a', power.SHUTDOWN, 12)])
    statedb.record_strays('node2', [('a', power.RUNNING, 11)])   # older
    assert _strays(statedb) == {('node2', 'a'): (power.SHUTDOWN, False),
                                ('node2', 'b'): (power.PAUSED, False)}
    statedb.record_strays('node2', [('b', power.NOSTATE, 13)])    # gone
    assert set(_strays(statedb)) == {('node2', 'a')}
    # a read of every domain at 20 that lists "a" no more
    statedb.record_strays('node2', [], read_seq=20)
    assert _strays(statedb) == {}


def test_a_doomed_mark_waits_for_its_domain(statedb, instances):
    uuid = instances.active()
    statedb.db.transaction(lambda conn: statedb._doom(conn, uuid, ['node2']))
    statedb.record_strays('node2', [], read_seq=5)    # not there yet: kept
    assert _strays(statedb) == {('node2', uuid): (None, True)}
    assert statedb.doomed_on('node2', [uuid, 'other']) == [uuid]
    assert statedb.doomed_on(HOST, [uuid]) == []      # placed there
    statedb.record_strays('node2', [(uuid, power.RUNNING, 6)])
    assert _strays(statedb) == {('node2', uuid): (power.RUNNING, True)}
    statedb.record_strays('node2', [], read_seq=7)    # destroyed: forgotten
    assert _strays(statedb) == {}


def test_a_doomed_host_that_holds_a_new_move_keeps_its_copy(statedb,
                                                            instances):
    uuid = instances.active()
    statedb.host_heartbeat('node2', vcpus=8, memory_mb=8192, disk_gb=80)
    statedb.db.transaction(lambda conn: statedb._doom(conn, uuid, ['node2']))
    task = instances.start(uuid, 'live_migrate')
    statedb.allocate(task, uuid, 'node2', vcpus=1, memory_mb=512, disk_gb=1,
                     purpose='migration')
    assert statedb.doomed_on('node2', [uuid]) == []


def test_an_error_instance_with_a_domain_regains_its_allocation(
        statedb, instances):
    uuid, task = instances.create()
    statedb.allocate(task, uuid, HOST, vcpus=1, memory_mb=512, disk_gb=1)
    statedb.fail_task(task, uuid, error='lost', rolled_back=False,
                      settle=[{'free': {}}])
    assert statedb.list_allocations(instance_uuid=uuid) == []
    assert statedb.count_running_error(uuid) is False    # no domain seen
    statedb.store_power_report(uuid, host=HOST, state=power.RUNNING, seq=3)
    assert statedb.count_running_error(uuid) is True
    assert statedb.count_running_error(uuid) is False    # once
    [alloc] = statedb.list_allocations(instance_uuid=uuid)
    assert (alloc['host'], alloc['purpose']) == (HOST, 'instance')
    host = statedb.get_host(HOST)
    assert host['used_vcpus'] == alloc['vcpus']


def test_a_reset_to_active_counts_the_instance_or_is_refused(statedb,
                                                            instances):
    uuid, task = instances.create()
    statedb.allocate(task, uuid, HOST, vcpus=1, memory_mb=512, disk_gb=1)
    statedb.fail_task(task, uuid, error='lost', rolled_back=False,
                      settle=[{'free': {}}])
    inst = statedb.get_instance(uuid)
    statedb.db.transaction(lambda conn: conn.execute(sa.update(H).values(
        used_memory_mb=H.c.memory_mb)))             # the host is full
    with pytest.raises(exception.HostFull) as err:
        statedb.reset_state(instances.ctx, uuid, vm.ACTIVE)
    assert err.value.code == 409
    assert 'its host %s' % HOST in str(err.value)
    assert statedb.get_instance(uuid)['vm_state'] == vm.ERROR
    statedb.db.transaction(lambda conn: conn.execute(sa.update(H).values(
        used_memory_mb=0)))
    _before, after = statedb.reset_state(instances.ctx, uuid, vm.ACTIVE)
    assert (after['vm_state'], after['doomed_hosts']) == (vm.ACTIVE, [])
    [alloc] = statedb.list_allocations(instance_uuid=uuid)
    assert (alloc['host'], alloc['memory_mb']) == (HOST, inst['memory_mb'])


def test_a_hard_delete_names_the_destination_of_the_move_it_preempts(
        statedb, instances):
    uuid = instances.active()
    idle = instances.active()
    statedb.host_heartbeat('node2', vcpus=8, memory_mb=8192, disk_gb=80)
    task = instances.start(uuid, 'live_migrate')
    statedb.allocate(task, uuid, 'node2', vcpus=1, memory_mb=512, disk_gb=1,
                     purpose='migration')

    _before, after = statedb.hard_delete(instances.ctx, uuid)

    assert (after['vm_state'], after['doomed_hosts']) == (vm.HARD_DELETED,
                                                          ['node2'])
    assert statedb.list_allocations(instance_uuid=uuid) == []
    assert statedb.get_host('node2')['used_vcpus'] == 0
    # its own host is told anyway; nothing else held, nothing else named
    assert statedb.hard_delete(instances.ctx, idle)[1]['doomed_hosts'] == []
    # deleted again: nothing left to name
    assert statedb.hard_delete(instances.ctx, uuid)[1]['doomed_hosts'] == []

"""Power reports (bottom-up) and allocations on hosts, on every backend."""

import datetime

import pytest

from common import exception
from common.db import hosts as hosts_db
from common.db import models
from common.db import power as power_db
from common.db import services
from common.states import power
from common.states import vm

I = models.Instance.__table__       # noqa: E741 (as in common/db/api.py)


def _report(statedb, instances, uuid, **kw):
    kw.setdefault('host', instances.host)
    return statedb.store_power_report(uuid, **kw)


# --- power reports ------------------------------------------------------------------

def test_report_is_stored(statedb, clock, instances):
    uuid = instances.active()
    now = clock.advance(5)
    stored = _report(statedb, instances, uuid, state='SHUTDOWN', seq=1,
                     reason='guest')
    inst = statedb.get_instance(uuid)
    assert stored == inst
    assert (inst['power_state'], inst['power_reason'], inst['power_seq'],
            inst['power_reported_at']) == (power.SHUTDOWN, 'guest', 1, now)
    assert inst['vm_state'] == vm.ACTIVE


def test_report_only_from_the_instances_host(statedb, instances):
    uuid = instances.active()
    statedb.host_heartbeat('node2', vcpus=8, memory_mb=8192, disk_gb=100)
    before = instances.snapshot(uuid)
    assert _report(statedb, instances, uuid, host='node2', state='SHUTDOWN',
                   seq=1) is None
    assert instances.snapshot(uuid) == before


def test_older_report_is_ignored(statedb, instances):
    uuid = instances.active()
    _report(statedb, instances, uuid, state=power.SHUTDOWN, seq=2)
    assert _report(statedb, instances, uuid, state=power.RUNNING, seq=1) is None
    assert _report(statedb, instances, uuid, state=power.RUNNING, seq=2) is None
    inst = statedb.get_instance(uuid)
    assert (inst['power_state'], inst['power_seq']) == (power.SHUTDOWN, 2)


@pytest.mark.parametrize('reported,stored', [
    ('SHUTOFF', power.SHUTDOWN), (5, power.SHUTDOWN),
    ('BLOCKED', power.RUNNING), ('FAILED', power.NOSTATE),
    ('paused', power.PAUSED)])
def test_obsolete_names_are_normalised(statedb, instances, reported, stored):
    uuid = instances.active()
    _report(statedb, instances, uuid, state=reported, seq=1)
    assert statedb.get_instance(uuid)['power_state'] == stored


def test_bad_reason_is_rejected(statedb, instances):
    uuid = instances.active()
    before = instances.snapshot(uuid)
    with pytest.raises(exception.InvalidState) as err:
        _report(statedb, instances, uuid, state='SHUTDOWN', seq=1,
                reason='bored')
    assert 'bored' in str(err.value) and 'guest' in str(err.value)
    assert instances.snapshot(uuid) == before


def test_report_is_stored_while_a_task_runs(statedb, instances):
    uuid = instances.active()
    task = instances.start(uuid, 'stop')
    _report(statedb, instances, uuid, state='SHUTDOWN', seq=1)
    inst = statedb.get_instance(uuid)
    assert inst['power_state'] == power.SHUTDOWN
    assert (inst['task_id'], inst['task_state']) == (task.task_id, 'stopping')


def test_finish_ignores_an_older_power_report(statedb, instances):
    uuid = instances.active()
    _report(statedb, instances, uuid, state='RUNNING', seq=5)
    task = instances.start(uuid, 'reboot')
    statedb.finish_task(task, uuid, power={'power_state': 'SHUTDOWN',
                                           'seq': 4})
    inst = statedb.get_instance(uuid)
    assert (inst['power_state'], inst['power_seq']) == (power.RUNNING, 5)


def test_power_view_and_confirm_bind_uuids_in_padded_chunks(
        statedb, ctx, instances, monkeypatch):
    """Lists of uuids are bound one per slot, in chunks padded to a few
    sizes (common.db.power); here 2 and 4, so 7 uuids take a full chunk
    and a padded one, and the view's extra uuids a chunk of their own."""
    monkeypatch.setattr(power_db, 'IN_SIZES', (2, 4))
    on_host = [instances.active() for _ in range(7)]
    away, deleted = instances.active(), instances.active()
    for uuid in on_host + [away, deleted]:
        _report(statedb, instances, uuid, state=power.RUNNING, seq=1)
    statedb.db.transaction(lambda conn: conn.execute(
        I.update().where(I.c.uuid == away).values(host='node2')))
    statedb.hard_delete(ctx, deleted)
    unknown = '00000000-0000-0000-0000-000000000000'

    view = statedb.power_view(host=instances.host, uuids={
        *on_host, away, deleted, unknown, None})
    assert set(view) == {*on_host, away, deleted}
    assert all(tuple(row) == power_db.POWER_KEYS for row in view.values())
    assert (view[away]['host'], view[deleted]['vm_state']) == (
        'node2', vm.HARD_DELETED)
    assert view[on_host[0]]['power_seq'] == 1

    confirmed = [(uuid, 30, power.RUNNING, None) for uuid in on_host[:6]]
    confirmed += [(on_host[6], 30, power.SHUTDOWN, None),  # not what is stored
                  (away, 30, power.RUNNING, None)]         # not on the host
    assert statedb.confirm_power(instances.host, confirmed, read_seq=20) == 6
    assert [statedb.get_instance(u)['power_seq'] for u in on_host] == [
        20] * 6 + [1]
    assert statedb.get_instance(away)['power_seq'] == 1


# --- allocations ------------------------------------------------------------

def _used(statedb, host):
    row = statedb.get_host(host)
    return row['used_vcpus'], row['used_memory_mb'], row['used_disk_gb']


def _building(instances, count):
    return [instances.create('vm%d' % i) for i in range(count)]


def test_allocate_places_the_instance(statedb, instances):
    uuid, task = instances.create()
    statedb.allocate(task, uuid, instances.host, **instances.flavor)
    assert statedb.get_instance(uuid)['host'] == instances.host
    [alloc] = statedb.list_allocations(instance_uuid=uuid)
    assert (alloc['host'], alloc['vcpus']) == (instances.host, 2)
    assert _used(statedb, instances.host) == (2, 2048, 20)


@pytest.mark.parametrize('tight', ['vcpus', 'memory_mb', 'disk_gb'])
def test_allocate_refuses_over_capacity(statedb, instances, tight):
    # Room for two instances in the ``tight`` resource, plenty of the others.
    capacity = {name: 100 * size for name, size in instances.flavor.items()}
    capacity[tight] = 2 * instances.flavor[tight]
    statedb.host_heartbeat('small', **capacity)
    (a, ta), (b, tb), (c, tc) = _building(instances, 3)
    statedb.allocate(ta, a, 'small', **instances.flavor)
    statedb.allocate(tb, b, 'small', **instances.flavor)
    with pytest.raises(exception.HostCapacityExceeded) as err:
        statedb.allocate(tc, c, 'small', **instances.flavor)
    assert 'small' in str(err.value)
    assert _used(statedb, 'small') == (4, 4096, 40)
    assert statedb.get_instance(c)['host'] is None
    assert statedb.list_allocations(instance_uuid=c) == []


def test_ratios_allow_overcommit(statedb, instances):
    statedb.host_heartbeat('small', vcpus=4, memory_mb=4096, disk_gb=40)
    built = _building(instances, 5)
    for uuid, task in built[:4]:
        statedb.allocate(task, uuid, 'small', ratios=(2.0, 2.0, 2.0),
                         **instances.flavor)
    assert _used(statedb, 'small') == (8, 8192, 80)
    uuid, task = built[4]
    with pytest.raises(exception.HostCapacityExceeded):
        statedb.allocate(task, uuid, 'small', ratios=(2.0, 2.0, 2.0),
                         **instances.flavor)


def test_disabled_host_takes_nothing(statedb, instances):
    statedb.set_host_enabled(instances.host, False, reason='maintenance')
    uuid, task = instances.create()
    with pytest.raises(exception.HostCapacityExceeded):
        statedb.allocate(task, uuid, instances.host, **instances.flavor)
    assert _used(statedb, instances.host) == (0, 0, 0)


def test_allocate_for_a_preempted_task_rolls_back(statedb, ctx, instances):
    uuid, task = instances.create()
    statedb.hard_delete(ctx, uuid)
    with pytest.raises(exception.TaskPreempted):
        statedb.allocate(task, uuid, instances.host, **instances.flavor)
    assert _used(statedb, instances.host) == (0, 0, 0)
    assert statedb.list_allocations(host=instances.host) == []


def test_free_allocations_of_a_rolled_back_build(statedb, instances):
    uuid, task = instances.create()
    statedb.allocate(task, uuid, instances.host, **instances.flavor)
    statedb.free_allocations(task, uuid)
    assert _used(statedb, instances.host) == (0, 0, 0)
    assert statedb.list_allocations(instance_uuid=uuid) == []


def test_heartbeat_updates_capacity_and_keeps_usage(statedb, clock, instances):
    instances.active()
    now = clock.advance(10)
    statedb.host_heartbeat(instances.host, vcpus=64, memory_mb=1024,
                           disk_gb=10)
    host = statedb.get_host(instances.host)
    assert (host['vcpus'], host['last_heartbeat']) == (64, now)
    assert host['used_vcpus'] == instances.flavor['vcpus']
    with pytest.raises(exception.HostNotFound):
        statedb.get_host('nowhere')


def test_an_agents_heartbeat_writes_its_host_and_service_rows(statedb, clock):
    started = datetime.datetime(2026, 1, 1, 11, 0, 0)
    beat = dict(binary=services.AGENT, vcpus=4, memory_mb=4096, disk_gb=40)
    statedb.agent_heartbeat('n1', agent_started_at=started, ram_ratio=1.5,
                            version='1.0', **beat)
    host = statedb.get_host('n1')
    assert (host['vcpus'], host['agent_started_at'], host['ram_ratio'],
            host['free_memory_mb'], host['last_heartbeat']) == (
        4, started, 1.5, 4096 * 1.5, clock.now)
    now = clock.advance(10)
    # a later beat: new capacity; what it does not say is kept
    statedb.agent_heartbeat('n1', agent_started_at=None, ram_ratio=None,
                            version='1.1', **dict(beat, memory_mb=8192))
    host = statedb.get_host('n1')
    assert (host['memory_mb'], host['agent_started_at'], host['ram_ratio'],
            host['free_memory_mb'], host['last_heartbeat']) == (
        8192, started, 1.5, 8192 * 1.5, now)
    [row] = [s for s in statedb.list_services() if s['host'] == 'n1']
    assert (row['binary'], row['version'], row['started_at'],
            row['last_seen']) == (services.AGENT, '1.1', started, now)


def test_a_heartbeat_keeps_back_what_the_agent_reserves(statedb):
    """What instances may use is the capacity without the reserved
    resources (issue 25); the host's own ratios are stored, its RAM ratio
    stamps the weigher, and a later beat without them reserves nothing."""
    beat = hosts_db.kept_back(
        {'vcpus': 8, 'memory_mb': 4096, 'disk_gb': 40, 'reserved_vcpus': 2,
         'reserved_memory_mb': 1024, 'reserved_disk_gb': 5,
         'ram_ratio': 1.5}, 1.0)
    statedb.agent_heartbeat('n1', agent_started_at=None, version='1.0',
                            binary=services.AGENT, **beat)
    host = statedb.get_host('n1')
    assert {k: host[k] for k in (
        'vcpus', 'memory_mb', 'disk_gb', 'reserved_vcpus',
        'reserved_memory_mb', 'reserved_disk_gb', 'own_cpu_ratio',
        'own_ram_ratio', 'ram_ratio', 'free_memory_mb')} == {
        'vcpus': 6, 'memory_mb': 3072, 'disk_gb': 35, 'reserved_vcpus': 2,
        'reserved_memory_mb': 1024, 'reserved_disk_gb': 5,
        'own_cpu_ratio': None, 'own_ram_ratio': 1.5, 'ram_ratio': 1.5,
        'free_memory_mb': 3072 * 1.5}
    statedb.agent_heartbeat(
        'n1', agent_started_at=None, version='1.0', binary=services.AGENT,
        **hosts_db.kept_back({'vcpus': 8, 'memory_mb': 4096,
                              'disk_gb': 40}, 1.0))
    host = statedb.get_host('n1')
    assert (host['memory_mb'], host['reserved_memory_mb'],
            host['own_ram_ratio'], host['ram_ratio']) == (4096, 0, None, 1.0)


@pytest.mark.parametrize('key,value', [
    ('reserved_memory_mb', -1), ('reserved_vcpus', 1.5),
    ('reserved_disk_gb', '2'), ('cpu_ratio', -0.5), ('disk_ratio', True)])
def test_a_heartbeats_bad_reserve_or_ratio_is_named(key, value):
    with pytest.raises(exception.Invalid, match=key):
        hosts_db.kept_back({'vcpus': 8, 'memory_mb': 4096, 'disk_gb': 40,
                            key: value}, 1.0)

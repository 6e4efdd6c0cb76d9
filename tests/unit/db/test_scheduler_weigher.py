"""The scheduler's stored weigher (``hosts.free_memory_mb``, migration 0004),
on every backend: it stays ``memory_mb x ram_ratio - used_memory_mb``
through every change of usage or capacity (``tristate-manage check`` says
so), and :meth:`StateDB.find_hosts` answers the same whether it walks the
index or computes the weigher for every host."""

import datetime

import pytest

from common import exception
from common.db import checks
from common.db import lease_hosts

TINY = {'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1}
LONG_AGO = datetime.datetime(2000, 1, 1)


def _free(statedb, host):
    return statedb.get_host(host)['free_memory_mb']


def _clean(statedb, clock, ratios=(1.0, 1.0, 1.0)):
    found, _seen = checks.find_violations(
        statedb.db, checks.Limits(now=clock(), ratios=ratios))
    assert [str(v) for v in found] == []


def _find(statedb, ram_ratio=1.0, **kw):
    kw.setdefault('alive_since', LONG_AGO)
    return [h['name'] for h in statedb.find_hosts(
        ratios=(4.0, ram_ratio, 1.0), **TINY, **kw)]


def test_free_ram_follows_every_change_of_usage(statedb, clock, ctx,
                                                instances):
    host, flavor = instances.host, instances.flavor
    total = statedb.get_host(host)['memory_mb']
    assert _free(statedb, host) == total
    kept = instances.active()
    assert _free(statedb, host) == total - flavor['memory_mb']
    # a build rolled back
    uuid, task = instances.create()
    statedb.allocate(task, uuid, host, **flavor)
    statedb.free_allocations(task, uuid)
    assert _free(statedb, host) == total - flavor['memory_mb']
    # a resize holds its new flavor too, until it is given back
    resized = instances.active()
    task = instances.start(resized, 'resize')
    statedb.allocate(task, resized, host, purpose='resize', **flavor)
    assert _free(statedb, host) == total - 3 * flavor['memory_mb']
    statedb.free_allocations(task, resized, purpose='resize')
    statedb.finish_task(task, resized)
    # hard deletes free what they held
    statedb.hard_delete(ctx, resized)
    statedb.hard_delete(ctx, kept)
    assert _free(statedb, host) == total
    # a burial holds nothing
    uuid, task = instances.create()
    statedb.bury(task, uuid, reason='no valid host', use_pending=True)
    assert _free(statedb, host) == total
    _clean(statedb, clock)


def test_free_ram_follows_capacity_and_the_ratio(statedb, clock, instances):
    host, flavor = instances.host, instances.flavor
    instances.active()
    statedb.host_heartbeat(host, vcpus=64, memory_mb=10000, disk_gb=1000)
    assert _free(statedb, host) == 10000 - flavor['memory_mb']
    statedb.host_heartbeat(host, vcpus=64, memory_mb=10000, disk_gb=1000,
                           ram_ratio=1.5)
    assert statedb.get_host(host)['ram_ratio'] == 1.5
    assert _free(statedb, host) == 15000 - flavor['memory_mb']
    # a heartbeat that names no ratio keeps the host's
    statedb.host_heartbeat(host, vcpus=64, memory_mb=8000, disk_gb=1000)
    assert _free(statedb, host) == 12000 - flavor['memory_mb']
    statedb.host_heartbeat('new', vcpus=8, memory_mb=3000, disk_gb=100,
                           ram_ratio=1.1)
    assert _free(statedb, 'new') == 3000 * 1.1
    _clean(statedb, clock, ratios=(1.0, 1.5, 1.0))


def _fleet(statedb, instances, ram_ratio):
    """Hosts of different sizes and usage: the ratio changes their order."""
    sizes = {'a': 4000, 'b': 6000, 'c': 3000, 'd': 5000, 'e': 4000}
    for name, memory in sizes.items():
        statedb.host_heartbeat(name, vcpus=64, memory_mb=memory,
                               disk_gb=1000, ram_ratio=ram_ratio)
    for name, count in {'a': 1, 'b': 3, 'd': 2}.items():
        for _ in range(count):
            uuid, task = instances.create()
            statedb.allocate(task, uuid, name, **TINY)
    statedb.set_host_enabled(instances.host, False)


def _expected(statedb, ram_ratio, pack=False):
    hosts = [h for h in statedb.list_hosts() if h['enabled']]
    sign = 1 if pack else -1
    hosts.sort(key=lambda h: (
        sign * (h['memory_mb'] * ram_ratio - h['used_memory_mb']), h['name']))
    return [h['name'] for h in hosts]


@pytest.mark.parametrize('pack', [False, True])
def test_the_index_and_the_computed_weigher_agree(statedb, instances, pack):
    _fleet(statedb, instances, ram_ratio=1.5)
    expected = _expected(statedb, 1.5, pack)
    assert expected != _expected(statedb, 1.0, pack)
    # every host stamped with the asked ratio: the index
    assert _find(statedb, 1.5, pack=pack) == expected
    # one host stamped with another: computed for every host, same answer
    statedb.host_heartbeat('c', vcpus=64, memory_mb=3000, disk_gb=1000,
                           ram_ratio=1.0)
    assert _find(statedb, 1.5, pack=pack) == expected
    assert _find(statedb, 1.0, pack=pack) == _expected(statedb, 1.0, pack)


def test_find_hosts_filters_as_before(statedb, instances):
    _fleet(statedb, instances, ram_ratio=1.0)
    # free: b 4464, e 4000, d 3976, a 3488, c 3000
    assert _find(statedb) == ['b', 'e', 'd', 'a', 'c']
    assert _find(statedb, limit=2) == ['b', 'e']
    assert _find(statedb, pack=True, limit=2) == ['c', 'a']
    # room for 4000 MiB: only b and e
    big = dict(TINY, memory_mb=4000)
    assert [h['name'] for h in statedb.find_hosts(
        ratios=(4.0, 1.0, 1.0), alive_since=LONG_AGO, **big)] == ['b', 'e']
    assert _find(statedb, exclude=['b']) == ['e', 'd', 'a', 'c']
    statedb.set_host_enabled('d', False)
    assert _find(statedb) == ['b', 'e', 'a', 'c']
    assert _find(statedb, alive_since=datetime.datetime(3000, 1, 1)) == []


def test_only_finds_its_host_beyond_the_best_few(statedb, instances):
    """A resize stays on its host even when many emptier hosts exist."""
    _fleet(statedb, instances, ram_ratio=1.0)
    assert 'c' not in _find(statedb, limit=2)
    assert _find(statedb, limit=2, only='c') == ['c']
    assert _find(statedb, only=instances.host) == []    # disabled


def test_the_lease_filter_applies(statedb, instances):
    _fleet(statedb, instances, ram_ratio=1.0)
    assert _find(statedb, reserved=lease_hosts.H.c.name != 'b') == [
        'e', 'd', 'a', 'c']


def _place(statedb, instances, **kw):
    uuid, task = instances.create()
    kw.setdefault('alive_since', LONG_AGO)
    kw.setdefault('ratios', (4.0, 1.0, 1.0))
    return uuid, statedb.find_and_allocate(task, uuid, **TINY, **kw)


def test_find_and_allocate_takes_the_best_host(statedb, clock, instances):
    _fleet(statedb, instances, ram_ratio=1.0)
    uuid, host = _place(statedb, instances)
    assert host == 'b'
    assert statedb.get_instance(uuid)['host'] == 'b'
    assert [a['host'] for a in statedb.list_allocations(
        instance_uuid=uuid)] == ['b']
    assert _place(statedb, instances, pack=True)[1] == 'c'
    _clean(statedb, clock)


def test_find_and_allocate_without_room_takes_nothing(statedb, ctx,
                                                      instances):
    _fleet(statedb, instances, ram_ratio=1.0)
    before = statedb.list_hosts()
    uuid, host = _place(statedb, instances, only='nowhere')
    assert host is None
    assert statedb.list_allocations(instance_uuid=uuid) == []
    # a task preempted meanwhile: nothing taken either
    uuid, task = instances.create()
    statedb.hard_delete(ctx, uuid)
    with pytest.raises(exception.TaskPreempted):
        statedb.find_and_allocate(task, uuid, ratios=(4.0, 1.0, 1.0),
                                  alive_since=LONG_AGO, **TINY)
    assert statedb.list_hosts() == before

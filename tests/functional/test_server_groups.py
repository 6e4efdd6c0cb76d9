"""Server groups in the scheduler (issue 25): each policy places its
members as Nova's does, concurrent builds of one anti-affinity group never
share a host, a hard policy with no host left buries the build with a
reason naming the group, and a deleted member frees its place at once."""

import collections
import concurrent.futures

import pytest

from common import exception
from common.states import vm
from tests.functional.conftest import set_opts
from tests.functional.conftest import summary
from tests.functional.conftest import wait_idle

TINY_MB = 512           # [conductor] flavors: tiny is 1 vCPU, 512 MiB, 1 GiB


def _group(plane, ctx, policy, most=None):
    # buried builds stay members (as Nova): no limit on members here
    plane.statedb.set_quotas(ctx.project_id, {'server_group_members': -1})
    return plane.statedb.create_server_group(
        name='g-' + policy, policy=policy, project_id=ctx.project_id,
        user_id=ctx.user_id, max_server_per_host=most)['uuid']


def _build(plane, ctx, group, count, *, workers=None):
    def create(i):
        return plane.client.create_instance(
            ctx, name='vm-%d' % i, flavor='tiny', image_ref='cirros',
            attributes={'server_group': group})['uuid']
    with concurrent.futures.ThreadPoolExecutor(workers or count) as pool:
        uuids = list(pool.map(create, range(count)))
    return [wait_idle(plane, uuid, timeout=60) for uuid in uuids]


def _placed(insts):
    return collections.Counter(i['host'] for i in insts
                               if i['vm_state'] == vm.ACTIVE)


def _reason(plane, inst):
    return plane.statedb.list_actions(inst['uuid'])[-1]['message']


def test_affinity_keeps_members_together_and_buries_when_full(conf,
                                                             make_plane, ctx):
    """Every member on the first one's host, though the other host has
    more room (the weigher alone would alternate); the host full, the
    next is buried with a reason naming the group."""
    set_opts(conf, 'fake_driver', memory_mb=TINY_MB * 2)
    plane = make_plane(hosts=2)
    group = _group(plane, ctx, 'affinity')
    insts = _build(plane, ctx, group, 3, workers=1)
    assert sorted(_placed(insts).values()) == [2]
    buried = [i for i in insts if i['vm_state'] == vm.ERROR]
    assert len(buried) == 1 and buried[0]['host'] is None, summary(buried[0])
    reason = _reason(plane, buried[0])
    assert group in reason and 'affinity' in reason, reason


def test_anti_affinity_builds_at_once_never_share_a_host(make_plane, ctx):
    """Fifty builds at once, one group, three hosts: three land, one a
    host, the rest are buried naming the group; a member's delete frees
    its host for the next build of the group."""
    plane = make_plane(hosts=3)
    group = _group(plane, ctx, 'anti-affinity')
    insts = _build(plane, ctx, group, 50, workers=25)
    placed = _placed(insts)
    assert placed == dict.fromkeys(plane.host_names, 1)
    buried = [i for i in insts if i['vm_state'] != vm.ACTIVE]
    assert {i['vm_state'] for i in buried} == {vm.ERROR}
    assert group in _reason(plane, buried[0])
    # only the placed members hold an allocation
    assert len(plane.statedb.list_allocations()) == 3

    gone = next(i for i in insts if i['vm_state'] == vm.ACTIVE)
    plane.client.delete_instance(ctx, gone['uuid'])
    again = _build(plane, ctx, group, 1)[0]
    assert again['vm_state'] == vm.ACTIVE and again['host'] == gone['host']


def test_max_server_per_host_allows_that_many_a_host(make_plane, ctx):
    plane = make_plane(hosts=2)
    group = _group(plane, ctx, 'anti-affinity', most=2)
    insts = _build(plane, ctx, group, 6, workers=6)
    assert _placed(insts) == dict.fromkeys(plane.host_names, 2)
    assert sum(i['vm_state'] == vm.ERROR for i in insts) == 2


def test_soft_anti_affinity_spreads_then_shares(plane, ctx):
    group = _group(plane, ctx, 'soft-anti-affinity')
    insts = _build(plane, ctx, group, 4, workers=1)
    assert _placed(insts) == dict.fromkeys(plane.host_names, 2)


def test_soft_affinity_packs_then_goes_elsewhere(conf, make_plane, ctx):
    """Members together while their host has room (against the spread
    weigher), then elsewhere rather than buried."""
    set_opts(conf, 'fake_driver', memory_mb=TINY_MB * 2)
    plane = make_plane(hosts=2)
    group = _group(plane, ctx, 'soft-affinity')
    insts = _build(plane, ctx, group, 3, workers=1)
    assert sorted(_placed(insts).values()) == [1, 2]


def test_members_quota_refuses_the_create(make_plane, ctx):
    plane = make_plane(hosts=2)
    group = _group(plane, ctx, 'soft-affinity')
    plane.statedb.set_quotas(ctx.project_id, {'server_group_members': 1})
    _build(plane, ctx, group, 1)
    with pytest.raises(exception.QuotaExceeded,
                       match='too many servers in group'):
        _build(plane, ctx, group, 1)
    assert plane.statedb.get_server_group(group)['members'] == [
        i['uuid'] for i in plane.statedb.list_instances()]


def test_reserved_memory_is_never_given_to_instances(conf, make_plane, ctx):
    """The agent keeps [compute] reserved_host_memory_mb for its host: a
    host of two flavors' memory that reserves half a flavor takes one."""
    set_opts(conf, 'fake_driver', memory_mb=TINY_MB * 2)
    set_opts(conf, 'compute', reserved_host_memory_mb=TINY_MB // 2)
    plane = make_plane(hosts=1)
    host = plane.statedb.get_host(plane.host_names[0])
    assert (host['memory_mb'], host['reserved_memory_mb']) == (
        TINY_MB * 3 // 2, TINY_MB // 2)
    insts = [wait_idle(plane, plane.client.create_instance(
        ctx, name='vm%d' % n, flavor='tiny', image_ref='cirros')['uuid'])
        for n in range(2)]
    assert [i['vm_state'] for i in insts] == [vm.ACTIVE, vm.ERROR]


def test_a_hosts_own_ram_ratio_overrides_the_schedulers(conf, make_plane,
                                                        ctx):
    set_opts(conf, 'fake_driver', memory_mb=TINY_MB)
    set_opts(conf, 'compute', ram_allocation_ratio=3.0)
    plane = make_plane(hosts=1)
    insts = [wait_idle(plane, plane.client.create_instance(
        ctx, name='vm%d' % n, flavor='tiny', image_ref='cirros')['uuid'])
        for n in range(4)]
    assert [i['vm_state'] for i in insts] == [vm.ACTIVE] * 3 + [vm.ERROR]

"""Availability zones in the scheduler (issue 25): a build that asks for
a zone lands on that zone's hosts only, however many builds race, and is
buried when the zone is full even while other zones have room; a build
that asks for the default zone lands only on hosts no aggregate puts in
another zone."""

import collections
import concurrent.futures

from common.states import vm
from tests.functional.conftest import set_opts
from tests.functional.conftest import summary
from tests.functional.conftest import wait_idle

TINY_MB = 512           # [conductor] flavors: tiny is 1 vCPU, 512 MiB, 1 GiB
PER_HOST = 3
BUILDS = 24


def _zone(plane, name, hosts):
    made = plane.statedb.create_aggregate('agg-' + name, name)
    for host in hosts:
        plane.statedb.aggregate_add_host(made['id'], host)


def _build_all(plane, ctx, zones):
    def create(i):
        return plane.client.create_instance(
            ctx, name='vm-%d' % i, flavor='tiny', image_ref='cirros',
            attributes={'availability_zone': zones[i % len(zones)]})['uuid']

    with concurrent.futures.ThreadPoolExecutor(BUILDS) as pool:
        uuids = list(pool.map(create, range(BUILDS)))
    return [wait_idle(plane, uuid, timeout=60) for uuid in uuids]


def test_concurrent_builds_in_a_zone_never_land_outside_it(conf, make_plane,
                                                           ctx):
    set_opts(conf, 'fake_driver', memory_mb=TINY_MB * PER_HOST)
    plane = make_plane(hosts=3)
    east = plane.host_names[:2]
    _zone(plane, 'east', east)
    insts = _build_all(plane, ctx, ['east', 'nova'])
    placed = collections.defaultdict(collections.Counter)
    for inst in insts:
        if inst['vm_state'] == vm.ACTIVE:
            placed[inst['availability_zone']][inst['host']] += 1
        else:
            assert inst['vm_state'] == vm.ERROR, summary(inst)
            assert inst['host'] is None, summary(inst)
    # every zone filled to its room exactly, and nothing crossed over
    assert placed['east'] == {host: PER_HOST for host in east}
    assert placed['nova'] == {plane.host_names[2]: PER_HOST}
    buried = plane.statedb.list_actions(
        next(i['uuid'] for i in insts if i['vm_state'] == vm.ERROR))[-1]
    assert 'in availability zone' in buried['message'], buried


def test_a_zone_with_no_host_buries_every_build(conf, make_plane, ctx):
    plane = make_plane(hosts=2)
    _zone(plane, 'empty', [])
    insts = _build_all(plane, ctx, ['empty'])
    assert {i['vm_state'] for i in insts} == {vm.ERROR}
    assert plane.statedb.list_allocations() == []


def test_zoned_builds_on_each_database(plane_on_each_database, ctx):
    """The same on SQLite and PostgreSQL (the zone filter is one EXISTS in
    the scheduler's statement; its conditional allocation unchanged)."""
    plane = plane_on_each_database
    first, second = plane.host_names
    _zone(plane, 'east', [first])
    insts = _build_all(plane, ctx, ['east', 'nova'])
    placed = {(i['availability_zone'], i['host']) for i in insts}
    assert {i['vm_state'] for i in insts} == {vm.ACTIVE}
    assert placed == {('east', first), ('nova', second)}

"""Host aggregates and availability zones in the database
(common/db/aggregates.py), on every backend: Nova's rules (one zone per
host, never an empty zone, no zone change under running instances, no
delete of an aggregate with hosts) and the scheduler's zone filter."""

import datetime

import pytest

from common import exception

TINY = {'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1}
LONG_AGO = datetime.datetime(2000, 1, 1)


@pytest.fixture
def hosts(statedb):
    for name in ('a', 'b', 'c'):
        statedb.host_heartbeat(name, vcpus=8, memory_mb=8192, disk_gb=100)
    return ['a', 'b', 'c']


def _find(statedb, zone):
    return sorted(h['name'] for h in statedb.find_hosts(
        ratios=(1.0, 1.0, 1.0), alive_since=LONG_AGO, zone=zone, **TINY))


def test_zone_filter_picks_the_zones_hosts(statedb, hosts):
    east = statedb.create_aggregate('east', 'east')
    statedb.aggregate_add_host(east['id'], 'a')
    # an aggregate without a zone puts its hosts in none
    plain = statedb.create_aggregate('ssd')
    statedb.aggregate_add_host(plain['id'], 'b')
    assert _find(statedb, ('east', False)) == ['a']
    assert _find(statedb, ('nova', True)) == ['b', 'c']
    assert _find(statedb, ('west', False)) == []
    assert _find(statedb, None) == ['a', 'b', 'c']
    assert statedb.host_zones() == {'a': 'east'}


def test_a_host_is_in_one_zone(statedb, hosts):
    east = statedb.create_aggregate('east', 'east')
    west = statedb.create_aggregate('west', 'west')
    also_east = statedb.create_aggregate('east-2', 'east')
    statedb.aggregate_add_host(east['id'], 'a')
    with pytest.raises(exception.Conflict, match='already in availability'):
        statedb.aggregate_add_host(west['id'], 'a')
    statedb.aggregate_add_host(also_east['id'], 'a')
    with pytest.raises(exception.Invalid, match='already in availability'):
        statedb.set_aggregate_metadata(also_east['id'],
                                       {'availability_zone': 'west'})
    with pytest.raises(exception.Invalid, match='empty named'):
        statedb.update_aggregate(east['id'], {'availability_zone': None})
    with pytest.raises(exception.Conflict, match='already exists'):
        statedb.create_aggregate('west')
    with pytest.raises(exception.Conflict, match='already has host'):
        statedb.aggregate_add_host(east['id'], 'a')
    with pytest.raises(exception.HostNotFound):
        statedb.aggregate_add_host(east['id'], 'nowhere')
    with pytest.raises(exception.NotFound):
        statedb.aggregate_remove_host(west['id'], 'a')


def test_no_zone_change_under_running_instances(statedb, instances):
    instances.active()          # on instances.host
    host = instances.host
    zone = statedb.create_aggregate('z', 'z')
    with pytest.raises(exception.Conflict, match='would change'):
        statedb.aggregate_add_host(zone['id'], host)
    plain = statedb.create_aggregate('plain')
    statedb.aggregate_add_host(plain['id'], host)
    with pytest.raises(exception.Invalid, match='contain instances'):
        statedb.set_aggregate_metadata(plain['id'],
                                       {'availability_zone': 'z'})
    # other metadata is free
    found = statedb.set_aggregate_metadata(plain['id'], {'k': 'v'})
    assert found['metadata'] == {'k': 'v'}
    assert statedb.set_aggregate_metadata(
        plain['id'], {'k': None})['metadata'] == {}


def test_delete_needs_an_empty_aggregate(statedb, hosts):
    made = statedb.create_aggregate('x', 'x')
    statedb.aggregate_add_host(made['id'], 'a')
    with pytest.raises(exception.Invalid, match='not empty'):
        statedb.delete_aggregate(made['id'])
    statedb.aggregate_remove_host(made['id'], 'a')
    statedb.delete_aggregate(made['id'])
    assert statedb.list_aggregates() == []
    with pytest.raises(exception.NotFound):
        statedb.get_aggregate(made['id'])


def test_a_deleted_host_leaves_its_aggregates(statedb, hosts):
    made = statedb.create_aggregate('x', 'x')
    statedb.aggregate_add_host(made['id'], 'c')
    statedb.delete_host('c')
    assert statedb.get_aggregate(made['id'])['hosts'] == []

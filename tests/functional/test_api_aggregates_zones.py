"""Host aggregates, availability zones and the migrations list through
the REST API (issue 25), answered as Nova answers them: bodies checked
against Tempest's response schemas at the microversions that change them,
Nova's status codes for every refusal, and builds that ask for a zone
placed in it (POST /servers ``availability_zone``)."""

import pytest
from tempest.lib.api_schema.response.compute.v2_1 import (
    availability_zone as zone_schemas)
from tempest.lib.services.compute import aggregates_client
from tempest.lib.services.compute import migrations_client

from tests.functional import api_support
from tests.functional import catalogue_support as support

ADMIN = api_support.ADMIN_TOKEN


@pytest.fixture
def admin_api(app):
    return api_support.Api(app, ADMIN)


def _schema(client, name, version):
    return support.tempest_schema(client, name, version)


def _aggregate(api, name, zone=None, version='2.1'):
    body = {'name': name}
    if zone is not None:
        body['availability_zone'] = zone
    resp = api.post('/os-aggregates', {'aggregate': body}, version=version)
    assert resp.status_code == 200, resp.get_json()
    return resp.get_json()['aggregate']


def _act(api, ident, body, version='2.1'):
    return api.post('/os-aggregates/%s/action' % ident, body, version=version)


@pytest.mark.parametrize('version', ['2.1', '2.41', '2.100'])
def test_aggregate_bodies_match_tempest_schemas(admin_api, version):
    client = aggregates_client.AggregatesClient
    resp = admin_api.post('/os-aggregates', {'aggregate': {
        'name': 'a-' + version, 'availability_zone': 'zone-x'}},
        version=version)
    support.check(_schema(client, 'create_aggregate', version), resp)
    made = resp.get_json()['aggregate']
    assert ('uuid' in made) == (version != '2.1')
    ident = made['id']
    path = '/os-aggregates/%d' % ident
    resp = admin_api.get(path, version=version)
    support.check(_schema(client, 'get_aggregate', version), resp)
    assert resp.get_json()['aggregate']['availability_zone'] == 'zone-x'
    support.check(_schema(client, 'list_aggregates', version),
                  admin_api.get('/os-aggregates', version=version))
    resp = admin_api.put(path, {'aggregate': {'name': 'b-' + version}},
                         version=version)
    support.check(_schema(client, 'update_aggregate', version), resp)
    for body, name in (({'add_host': {'host': 'host1'}},
                        'aggregate_add_remove_host'),
                       ({'set_metadata': {'metadata': {'k': 'v'}}},
                        'aggregate_set_metadata'),
                       ({'remove_host': {'host': 'host1'}},
                        'aggregate_add_remove_host')):
        support.check(_schema(client, name, version),
                      _act(admin_api, ident, body, version))
    support.check(_schema(client, 'delete_aggregate', version),
                  admin_api.delete(path, version=version))
    assert admin_api.get(path, version=version).status_code == 404


def test_aggregate_refusals_are_novas(admin_api):
    made = _aggregate(admin_api, 'agg-1', 'zone-a')
    ident = made['id']
    # a taken name, an empty or too long one, a zone with ':'
    for body, code in (({'name': 'agg-1'}, 409), ({'name': ''}, 400),
                       ({'name': 'x' * 256}, 400),
                       ({'name': 'z', 'availability_zone': 'a:b'}, 400)):
        resp = admin_api.post('/os-aggregates', {'aggregate': body})
        assert resp.status_code == code, (body, resp.get_json())
    assert admin_api.get('/os-aggregates/x').status_code == 400
    assert admin_api.get('/os-aggregates/9999').status_code == 404
    assert admin_api.delete('/os-aggregates/9999').status_code == 404
    resp = _act(admin_api, ident, {'add_host': {'host': 'no-such-host'}})
    assert resp.status_code == 404, resp.get_json()
    assert _act(admin_api, ident, {'add_host': {'host': 'host1'}}
                ).status_code == 200
    resp = _act(admin_api, ident, {'add_host': {'host': 'host1'}})
    assert resp.status_code == 409, resp.get_json()
    # a host in two zones: refused; in two aggregates of one zone: fine
    other = _aggregate(admin_api, 'agg-2', 'zone-b')
    resp = _act(admin_api, other['id'], {'add_host': {'host': 'host1'}})
    assert resp.status_code == 409
    assert 'already in availability zone' in api_support.message(resp)
    same = _aggregate(admin_api, 'agg-3', 'zone-a')
    assert _act(admin_api, same['id'], {'add_host': {'host': 'host1'}}
                ).status_code == 200
    resp = _act(admin_api, same['id'], {'set_metadata': {'metadata': {
        'availability_zone': 'zone-c'}}})
    assert resp.status_code == 400, resp.get_json()
    # Nova answers a delete of an aggregate with hosts 400
    resp = admin_api.delete('/os-aggregates/%d' % ident)
    assert resp.status_code == 400
    assert 'not empty' in api_support.message(resp)
    resp = _act(admin_api, ident, {'remove_host': {'host': 'host2'}})
    assert resp.status_code == 404, resp.get_json()
    assert admin_api.get('/os-aggregates/%d' % ident).get_json()[
        'aggregate']['hosts'] == ['host1']
    # admins only
    member = admin_api.as_(api_support.new_project())
    assert member.get('/os-aggregates').status_code == 403
    assert member.post('/os-aggregates', {'aggregate': {
        'name': 'mine'}}).status_code == 403
    # image pre-caching (2.81) is refused as not supported
    resp = admin_api.post('/os-aggregates/%d/images' % ident, {
        'cache': [{'id': api_support.IMAGE}]}, version='2.81')
    assert resp.status_code == 400
    assert 'Not supported' in api_support.message(resp)


def test_zones_listed_as_nova_lists_them(admin_api):
    member = admin_api.as_(api_support.new_project())
    resp = member.get('/os-availability-zone')
    support.check(zone_schemas.list_availability_zone_list, resp)
    assert [z['zoneName'] for z in resp.get_json()[
        'availabilityZoneInfo']] == ['nova']
    assert member.get('/os-availability-zone/detail').status_code == 403
    made = _aggregate(admin_api, 'east', 'east')
    _act(admin_api, made['id'], {'add_host': {'host': 'host1'}})
    listed = member.get('/os-availability-zone').get_json()
    assert [z['zoneName'] for z in listed['availabilityZoneInfo']] == [
        'east', 'nova']
    resp = admin_api.get('/os-availability-zone/detail')
    support.check(zone_schemas.list_availability_zone_list_detail, resp)
    zones = {z['zoneName']: z for z in resp.get_json()[
        'availabilityZoneInfo']}
    assert set(zones['east']['hosts']) == {'host1'}
    assert set(zones['nova']['hosts']) == {'host2'}
    assert set(zones['internal']['hosts'][next(iter(zones['internal'][
        'hosts']))]) == {'nova-conductor'}
    assert zones['east']['hosts']['host1']['nova-compute']['available']
    # the services show their zones too
    services = admin_api.get('/os-services').get_json()['services']
    assert {s['host']: s['zone'] for s in services
            if s['binary'] == 'nova-compute'} == {'host1': 'east',
                                                  'host2': 'nova'}


def test_builds_land_in_the_zone_they_ask_for(admin_api):
    made = _aggregate(admin_api, 'west', 'west')
    _act(admin_api, made['id'], {'add_host': {'host': 'host2'}})
    member = admin_api.as_(api_support.new_project(), '2.96')

    def build(zone):
        resp = member.post('/servers', {'server': {
            'name': 'vm', 'flavorRef': 'tiny', 'imageRef': api_support.IMAGE,
            'availability_zone': zone}})
        assert resp.status_code == 202, resp.get_json()
        return member.settled(resp.get_json()['server']['id'])

    for zone, host in (('west', 'host2'), ('nova', 'host1')):
        for _ in range(3):
            server = build(zone)
            assert server['status'] == 'ACTIVE'
            assert server['OS-EXT-AZ:availability_zone'] == zone
            assert server['pinned_availability_zone'] == zone
            assert member.host(server['id']) == host
    resp = member.post('/servers', {'server': {
        'name': 'vm', 'flavorRef': 'tiny', 'imageRef': api_support.IMAGE,
        'availability_zone': 'atlantis'}})
    assert resp.status_code == 400
    assert api_support.message(resp) == ('The requested availability zone '
                                         'is not available')
    # a forced host is for admins (zone:host), as in Nova
    resp = member.post('/servers', {'server': {
        'name': 'vm', 'flavorRef': 'tiny', 'imageRef': api_support.IMAGE,
        'availability_zone': 'nova:host1'}})
    assert resp.status_code == 403
    resp = admin_api.post('/servers', {'server': {
        'name': 'vm', 'flavorRef': 'tiny', 'imageRef': api_support.IMAGE,
        'availability_zone': 'west:host2'}})
    assert resp.status_code == 202, resp.get_json()
    server_id = resp.get_json()['server']['id']
    assert admin_api.settled(server_id)['OS-EXT-SRV-ATTR:host'] == 'host2'
    # a zone with a host in it and running servers cannot change
    resp = admin_api.put('/os-aggregates/%d' % made['id'], {
        'aggregate': {'availability_zone': 'elsewhere'}})
    assert resp.status_code == 400
    resp = _act(admin_api, made['id'], {'remove_host': {'host': 'host2'}})
    assert resp.status_code == 409


@pytest.mark.parametrize('version', ['2.1', '2.23', '2.59', '2.80'])
def test_migrations_listed_from_resizes_and_live_migrations(admin_api,
                                                             version):
    member = admin_api.as_(api_support.new_project())
    resized = member.active('resized')
    member.act(resized['id'], {'resize': {'flavorRef': 'small'}})
    moved = member.active('moved')
    source = member.host(moved['id'])
    dest = 'host2' if source == 'host1' else 'host1'
    admin_api.act(moved['id'], {'os-migrateLive': {
        'host': dest, 'block_migration': 'auto'}})
    client = migrations_client.MigrationsClient
    resp = admin_api.get('/os-migrations', version=version)
    support.check(_schema(client, 'list_migrations', version), resp)
    found = {m['instance_uuid']: m for m in resp.get_json()['migrations']}
    assert found[resized['id']]['status'] == 'finished'
    assert found[moved['id']]['status'] == 'completed'
    assert (found[moved['id']]['source_compute'],
            found[moved['id']]['dest_compute']) == (source, dest)
    assert found[resized['id']]['old_instance_type_id'] != found[
        resized['id']]['new_instance_type_id']
    if version >= '2.23':
        assert found[moved['id']]['migration_type'] == 'live-migration'
    member.act(resized['id'], {'confirmResize': None})
    resp = admin_api.get('/os-migrations?instance_uuid=%s' % resized['id'],
                         version=version)
    (only,) = resp.get_json()['migrations']
    assert only['status'] == 'confirmed'
    assert member.get('/os-migrations').status_code == 403
    if version >= '2.59':
        first = admin_api.get('/os-migrations?limit=1', version=version)
        page = first.get_json()
        assert len(page['migrations']) == 1
        marker = page['migrations'][0]['uuid']
        rest = admin_api.get('/os-migrations?marker=%s' % marker,
                             version=version).get_json()['migrations']
        assert marker not in [m['uuid'] for m in rest]
        assert admin_api.get('/os-migrations?marker=nope',
                             version=version).status_code == 400
        assert admin_api.get('/os-migrations?bogus=1',
                             version=version).status_code == 400
    if version >= '2.23':
        resp = admin_api.get('/servers/%s/migrations' % moved['id'],
                             version=version)
        assert resp.status_code == 200
        assert resp.get_json() == {'migrations': []}   # none in progress

"""Flavors in the database, through python-novaclient over real HTTP:
create (any id, or a generated one), description (2.55), delete, extra
specs, private flavors and their access lists; a server keeps running on a
deleted flavor; bad requests answered as Nova (400 naming the field, 403,
404, 409); the bodies checked against Tempest's schemas."""

import uuid as uuidlib

import pytest
from novaclient import exceptions as nova_exc
from tempest.lib.services.compute import flavors_client

from tests.functional import api_support
from tests.functional import catalogue_support as support
from tests.functional.api_support import Api
from tests.functional.api_support import message

# the catalogue tests' shared fixtures
admin_api = support.admin_api
api = support.api
member_token = support.member_token
plane = support.plane
url = support.url


def _name():
    return 'flv-%s' % uuidlib.uuid4().hex[:8]


def test_admin_creates_describes_and_deletes_a_flavor(url, member_token):
    admin = support.nova(url, api_support.ADMIN_TOKEN, '2.55')
    name = _name()
    made = admin.flavors.create(name, 1024, 2, 10, flavorid='auto',
                                description='two cores')
    assert uuidlib.UUID(made.id) and made.name == name
    member = support.nova(url, member_token, '2.55')
    shown = member.flavors.get(made.id)
    assert (shown.ram, shown.vcpus, shown.disk, shown.description) == (
        1024, 2, 10, 'two cores')
    assert made.id in [f.id for f in member.flavors.list()]
    admin.flavors.update(made.id, 'still two cores')
    assert member.flavors.get(made.id).description == 'still two cores'
    admin.flavors.delete(made.id)
    with pytest.raises(nova_exc.NotFound):
        member.flavors.get(made.id)


def test_a_server_runs_on_a_new_flavor_and_outlives_it(api, admin_api):
    flavor_id = 'id-%s' % uuidlib.uuid4().hex[:8]
    resp = admin_api.post('/flavors', {'flavor': {
        'name': _name(), 'id': flavor_id, 'ram': 256, 'vcpus': 1,
        'disk': 1}})
    assert resp.status_code == 200, resp.get_json()
    server = api.active(flavor=flavor_id)
    # before 2.47 a server links its flavor by the flavor's id
    assert api.server(server['id'], version='2.46')['flavor']['id'] == (
        flavor_id)
    assert admin_api.delete('/flavors/%s' % flavor_id).status_code == 202
    after = api.server(server['id'], version='2.46')
    assert (after['status'], after['flavor']['id']) == ('ACTIVE', flavor_id)
    embedded = api.server(server['id'], version='2.47')['flavor']
    assert (embedded['vcpus'], embedded['ram'], embedded['disk']) == (
        1, 256, 1)
    resp = api.post('/servers', {'server': {
        'name': 'gone', 'flavorRef': flavor_id, 'imageRef': api_support.IMAGE}})
    assert resp.status_code == 400, resp.get_json()
    assert flavor_id in message(resp)
    api.delete('/servers/%s' % server['id'])


def test_extra_specs(url, member_token):
    admin = support.nova(url, api_support.ADMIN_TOKEN, '2.61')
    flavor = admin.flavors.create(_name(), 512, 1, 1)
    flavor.set_keys({'hw:cpu_policy': 'shared', 'hw:numa_nodes': 1})
    member = support.nova(url, member_token, '2.61')
    assert member.flavors.get(flavor.id).get_keys() == {
        'hw:cpu_policy': 'shared', 'hw:numa_nodes': '1'}
    flavor.unset_keys(['hw:cpu_policy'])
    assert member.flavors.get(flavor.id).get_keys() == {
        'hw:numa_nodes': '1'}
    # what Nova acts on and Tristate does not is refused, naming the key,
    # and not stored
    for refused in ({'hw:cpu_policy': 'dedicated'}, {'quota:cpu_shares': 7},
                    {'hw:numa_nodes': '0'}, {'hw:numa_nodes': 'two'},
                    {'hw:numa_cpus.0': '0-x'}, {'hw:numa_mem.1': '0'},
                    {'resources1:VCPU': '1'}, {'group_policy': 'none'}):
        with pytest.raises(nova_exc.BadRequest,
                           match='extra_specs.%s' % next(iter(refused))):
            flavor.set_keys(refused)
    assert member.flavors.get(flavor.id).get_keys() == {
        'hw:numa_nodes': '1'}
    with pytest.raises(nova_exc.Forbidden):
        member.flavors.get(flavor.id).set_keys({'a': 'b'})
    admin.flavors.delete(flavor.id)


def test_extra_spec_requests_nova_refuses(admin_api, app):
    flavor_id = admin_api.post('/flavors', {'flavor': {
        'name': _name(), 'ram': 64, 'vcpus': 1, 'disk': 0}}).get_json()[
            'flavor']['id']
    path = '/flavors/%s/os-extra_specs' % flavor_id
    bad = admin_api.post(path, {'extra_specs': {'bad/key': 'x'}})
    assert bad.status_code == 400 and 'extra_specs' in message(bad)
    mismatch = admin_api.put(path + '/hw:numa_nodes', {'hw:cpu_policy': 's'})
    assert mismatch.status_code == 400
    assert 'Request body and URI mismatch' in message(mismatch)
    assert admin_api.get(path + '/nope').status_code == 404
    assert admin_api.delete(path + '/nope').status_code == 404
    one = path + '/hw:numa_nodes'
    assert admin_api.put(one, {'hw:numa_nodes': '1'}).get_json() == {
        'hw:numa_nodes': '1'}
    assert admin_api.get(one).get_json() == {'hw:numa_nodes': '1'}
    assert admin_api.delete(one).status_code == 200
    assert admin_api.get('/flavors/nope/os-extra_specs').status_code == 404


def test_private_flavors_and_their_access_lists(url, app, member_token):
    admin = support.nova(url, api_support.ADMIN_TOKEN, '2.7')
    private = admin.flavors.create(_name(), 128, 1, 1, is_public=False)
    project = member_token.split(':')[1]
    member = Api(app, token=member_token)
    listed = [f['id'] for f in member.get('/flavors').get_json()['flavors']]
    assert private.id not in listed
    refused = member.post('/servers', {'server': {
        'name': 'p', 'flavorRef': private.id, 'imageRef': api_support.IMAGE}})
    assert refused.status_code == 400, refused.get_json()
    admin.flavor_access.add_tenant_access(private, project)
    assert [a.tenant_id for a in admin.flavor_access.list(
        flavor=private)] == [project]
    listed = [f['id'] for f in member.get('/flavors').get_json()['flavors']]
    assert private.id in listed
    with pytest.raises(nova_exc.Conflict):
        admin.flavor_access.add_tenant_access(private, project)
    # members may neither read nor change access lists
    path = '/flavors/%s' % private.id
    assert member.get(path + '/os-flavor-access').status_code == 403
    assert member.post(path + '/action', {'addTenantAccess': {
        'tenant': 'x'}}).status_code == 403
    admin.flavor_access.remove_tenant_access(private, project)
    with pytest.raises(nova_exc.NotFound):
        admin.flavor_access.remove_tenant_access(private, project)
    assert admin.flavor_access.list(flavor=private) == []
    public = admin.flavors.create(_name(), 128, 1, 1)
    with pytest.raises(nova_exc.NotFound):
        admin.flavor_access.list(flavor=public)
    with pytest.raises(nova_exc.Conflict):
        admin.flavor_access.add_tenant_access(public, project)
    admin_api = Api(app, token=api_support.ADMIN_TOKEN)
    everything = admin_api.get('/flavors?is_public=none').get_json()
    assert private.id in [f['id'] for f in everything['flavors']]
    for flavor in (private, public):
        admin.flavors.delete(flavor.id)


@pytest.mark.parametrize('body, field', [
    ({'name': 'x', 'ram': 0, 'vcpus': 1, 'disk': 1}, 'flavor.ram'),
    ({'name': 'x', 'ram': 64, 'vcpus': 'two', 'disk': 1}, 'flavor.vcpus'),
    ({'ram': 64, 'vcpus': 1, 'disk': 1}, 'flavor.name'),
    ({'name': 'x', 'ram': 64, 'vcpus': 1, 'disk': -1}, 'flavor.disk'),
    ({'name': 'x', 'ram': 64, 'vcpus': 1, 'disk': 1, 'id': ' a'},
     'flavor.id'),
    ({'name': 'x', 'ram': 64, 'vcpus': 1, 'disk': 1, 'gpus': 1},
     'flavor.gpus'),
    ({'name': 'x', 'ram': 64, 'vcpus': 1, 'disk': 1,
      'description': 'before 2.55'}, 'flavor.description'),
])
def test_bad_creates_are_400_naming_the_field(admin_api, body, field):
    before = admin_api.get('/flavors?is_public=none').get_json()
    # at 2.1: a description is refused before 2.55
    resp = admin_api.post('/flavors', {'flavor': body}, version='2.1')
    assert resp.status_code == 400, resp.get_json()
    assert field in message(resp)
    assert admin_api.get('/flavors?is_public=none').get_json() == before


def test_flavor_writes_need_an_admin_and_a_free_id_and_name(admin_api, api):
    body = {'name': _name(), 'id': _name(), 'ram': 64, 'vcpus': 1, 'disk': 0}
    assert api.post('/flavors', {'flavor': body}).status_code == 403
    assert admin_api.post('/flavors', {'flavor': body}).status_code == 200
    assert api.delete('/flavors/%s' % body['id']).status_code == 403
    same_id = admin_api.post('/flavors', {'flavor': dict(body, name=_name())})
    assert same_id.status_code == 409
    assert 'Flavor with ID %s already exists' % body['id'] in message(same_id)
    same_name = admin_api.post('/flavors', {'flavor': dict(body, id=_name())})
    assert same_name.status_code == 409
    update = {'flavor': {'description': 'd'}}
    assert admin_api.put('/flavors/%s' % body['id'], update,
                         version='2.54').status_code == 404
    assert api.put('/flavors/%s' % body['id'], update,
                   version='2.55').status_code == 403
    assert admin_api.delete('/flavors/%s' % body['id']).status_code == 202
    assert admin_api.delete('/flavors/%s' % body['id']).status_code == 404


def test_list_query_is_checked(api):
    assert api.get('/flavors?minRam=lots').status_code == 400
    assert api.get('/flavors?sort_key=colour').status_code == 400
    assert api.get('/flavors?marker=nope').status_code == 400
    assert api.get('/flavors?colour=red', version='2.74').status_code == 200
    assert api.get('/flavors?colour=red', version='2.75').status_code == 400
    small = api.get('/flavors/detail?minRam=4096').get_json()['flavors']
    assert small and all(f['ram'] >= 4096 for f in small)
    page = api.get('/flavors?limit=1').get_json()
    assert len(page['flavors']) == 1 and 'flavors_links' in page


@pytest.mark.parametrize('version', ['2.61', '2.75'])
def test_bodies_match_tempest_schemas(admin_api, version):
    # The flavor bodies' keys per microversion are api/views.py's (the
    # summary list's description from 2.55 among them); these are the
    # versions where the detailed body has all its keys.
    def schema(name):
        return support.tempest_schema(flavors_client.FlavorsClient, name,
                                      version)
    made = admin_api.post('/flavors', {'flavor': {
        'name': _name(), 'ram': 64, 'vcpus': 1, 'disk': 0}},
        version=version)
    support.check(schema('create_update_get_flavor_details'), made)
    flavor_id = made.get_json()['flavor']['id']
    support.check(schema('list_flavors_details'),
                  admin_api.get('/flavors/detail', version=version))
    path = '/flavors/%s/os-extra_specs' % flavor_id
    from tempest.lib.api_schema.response.compute.v2_1 import (
        flavors_extra_specs as specs)
    support.check(specs.set_get_flavor_extra_specs, admin_api.post(
        path, {'extra_specs': {'hw:cpu_policy': 'shared'}}, version=version))
    support.check(specs.set_get_flavor_extra_specs_key,
                  admin_api.get(path + '/hw:cpu_policy', version=version))
    support.check(specs.unset_flavor_extra_specs,
                  admin_api.delete(path + '/hw:cpu_policy', version=version))
    support.check(schema('delete_flavor'),
                  admin_api.delete('/flavors/%s' % flavor_id,
                                   version=version))

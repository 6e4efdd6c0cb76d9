"""Tempest's response schemas as the oracle of Tristate's bodies (issue 22).

Tempest validates every body it gets with jsonschema against the schema of
the request's microversion (``tempest.lib.api_schema.response.compute``),
strictly: a key Nova does not send at that version fails it. Here each
route Tristate serves is asked at 2.1, at every version where a schema it
uses changes, and at Nova's latest; the schema is chosen as Tempest's own
clients choose it (their ``schema_versions_info``) and checked as Tempest's
rest client checks it (``RestClient.validate_response``: status code,
body, Tempest's format checkers). Tristate's own microversion (2.101)
shows Nova's latest body plus ``tristate:*`` keys, and only there.
"""

import pytest
from tempest.lib.api_schema.response.compute.v2_1 import images
from tempest.lib.api_schema.response.compute.v2_1 import servers as servers21
from tempest.lib.api_schema.response.compute.v2_1 import tenant_usages
from tempest.lib.api_schema.response.compute.v2_1 import versions
from tempest.lib.common import api_version_request
from tempest.lib.common import rest_client
from tempest.lib.services.compute import flavors_client
from tempest.lib.services.compute import hypervisor_client
from tempest.lib.services.compute import quotas_client
from tempest.lib.services.compute import servers_client

from api import microversion
from tests.functional import api_support
from tests.functional.api_support import Api
from tests.images_support import IMAGE

NOVA_LATEST = '2.100'
TRISTATE = str(microversion.TRISTATE)


class _Response(dict):
    """What ``validate_response`` reads of a response: status, headers."""

    def __init__(self, resp):
        super().__init__((k.lower(), v) for k, v in resp.headers.items())
        self.status = resp.status_code


def schema_of(client, name, version):
    """The schema ``client`` (a Tempest client class) validates ``name``
    with at ``version``, chosen from its schema_versions_info as
    Tempest's base compute client chooses it."""
    wanted = api_version_request.APIVersionRequest(version)
    for item in client.schema_versions_info:
        low = api_version_request.APIVersionRequest(item['min'])
        high = api_version_request.APIVersionRequest(item['max'])
        if (low.is_null() or wanted >= low) and (
                high.is_null() or wanted <= high):
            return getattr(item['schema'], name)
    raise AssertionError('no schema of %s for %s' % (name, version))


def check(schema, resp):
    """Tempest's own check of a response; the body on success."""
    body = resp.get_json() if resp.data else None
    rest_client.RestClient.validate_response(schema, _Response(resp), body)
    return body


def _tristate_keys(value):
    if isinstance(value, dict):
        found = {k for k in value if k.startswith('tristate:')}
        for inner in value.values():
            found |= _tristate_keys(inner)
        return found
    if isinstance(value, list):
        return set().union(*map(_tristate_keys, value)) if value else set()
    return set()


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture(scope='module')
def member(app):
    return Api(app, token=api_support.new_project())


@pytest.fixture(scope='module')
def admin(app):
    return Api(app)       # no token: the default user, admin


@pytest.fixture(scope='module')
def server(member):
    return member.active(name='schema vm_1')


# --- servers ---------------------------------------------------------------

SERVER_VERSIONS = ['2.1', '2.3', '2.9', '2.16', '2.19', '2.26', '2.47',
                   '2.54', '2.57', '2.63', '2.71', '2.73', '2.75', '2.90',
                   '2.96', '2.98', NOVA_LATEST]
S = servers_client.ServersClient


@pytest.mark.parametrize('version', ['2.1', '2.71', NOVA_LATEST])
def test_create_answers_what_nova_create_schema_allows(member, version):
    resp = member.post('/servers', {'server': {
        'name': 'created', 'flavorRef': 'tiny', 'imageRef': IMAGE}},
        version=version)
    # Tempest checks every create with the one schema (v2_1's), the one
    # with a password when enable_instance_password is on (the default,
    # Nova's and Tristate's): Nova makes one up, and so does Tristate
    created = check(servers21.create_server_with_admin_pass, resp)['server']
    assert isinstance(created['adminPass'], str) and created['adminPass']
    member.settled(created['id'])
    assert member.delete('/servers/%s' % created['id']).status_code == 204


@pytest.mark.parametrize('version', SERVER_VERSIONS)
@pytest.mark.parametrize('who', ['member', 'admin'])
def test_show_list_and_detail(request, server, version, who):
    api = request.getfixturevalue(who)
    path = '/servers/%s' % server['id']
    check(schema_of(S, 'get_server', version), api.get(path, version=version))
    query = {'all_tenants': '1'} if who == 'admin' else {}
    check(schema_of(S, 'list_servers', version),
          api.get('/servers', version=version, query_string=query))
    detail = check(schema_of(S, 'list_servers_detail', version),
                   api.get('/servers/detail', version=version,
                           query_string=query))
    assert server['id'] in [s['id'] for s in detail['servers']]


@pytest.mark.parametrize('version', SERVER_VERSIONS)
@pytest.mark.parametrize('who', ['member', 'admin'])
def test_update(request, server, version, who):
    api = request.getfixturevalue(who)
    resp = api.put('/servers/%s' % server['id'],
                   {'server': {'name': 'schema vm_1'}}, version=version)
    check(schema_of(S, 'update_server', version), resp)


@pytest.mark.parametrize('version', ['2.1', '2.54', '2.57', '2.71', '2.75',
                                     NOVA_LATEST])
def test_rebuild(member, version):
    # its own server: a rebuild is a task, the others' server stays idle
    mine = member.active(name='rebuilt')
    resp = member.post('/servers/%s/action' % mine['id'],
                       {'rebuild': {'imageRef': IMAGE}}, version=version)
    # enable_instance_password on (the default): Tempest's schema with one
    body = check(schema_of(S, 'rebuild_server_with_admin_pass', version),
                 resp)
    assert body['server']['adminPass']
    member.settled(mine['id'])
    member.delete('/servers/%s' % mine['id'])


@pytest.mark.parametrize('version', ['2.1', '2.51', '2.58', '2.62', '2.84',
                                     NOVA_LATEST])
@pytest.mark.parametrize('who', ['member', 'admin'])
def test_instance_actions(request, server, version, who):
    api = request.getfixturevalue(who)
    path = '/servers/%s/os-instance-actions' % server['id']
    actions = check(schema_of(S, 'list_instance_actions', version),
                    api.get(path, version=version))['instanceActions']
    check(schema_of(S, 'show_instance_action', version),
          api.get('%s/%s' % (path, actions[0]['request_id']),
                  version=version))


@pytest.mark.parametrize('path', ['/servers/%s',
                                  '/servers/detail?all_tenants=1',
                                  '/servers/%s/os-instance-actions',
                                  '/flavors/detail', '/os-hypervisors/detail',
                                  '/os-quota-sets/%s/detail'])
def test_tristate_keys_only_from_its_own_microversion(admin, server, path):
    path = path.replace('%s', server['id'], 1) if 'servers/%s' in path else (
        path.replace('%s', server['tenant_id']))
    nova = admin.get(path, version=NOVA_LATEST).get_json()
    ours = admin.get(path, version=TRISTATE).get_json()
    assert not _tristate_keys(nova)
    if 'servers' in path or 'hypervisors' in path:
        assert _tristate_keys(ours)


def test_tristate_version_is_nova_latest_plus_its_keys(admin, server):
    nova = admin.server(server['id'], version=NOVA_LATEST)
    ours = admin.server(server['id'], version=TRISTATE)
    assert {k: v for k, v in ours.items()
            if not k.startswith('tristate:') and k != 'metadata'} == {
        k: v for k, v in nova.items() if k != 'metadata'}
    assert ours['metadata'] == dict(nova['metadata'], **{
        'tristate:user_shutdown': 'stop', 'tristate:crash': 'restart'})


def test_admin_only_attributes(member, admin, server):
    mine = member.server(server['id'], version=NOVA_LATEST)
    assert not [k for k in mine if k.startswith('OS-EXT-SRV-ATTR:')
                and k != 'OS-EXT-SRV-ATTR:hostname']     # everyone's at 2.90
    assert 'host_status' not in mine
    theirs = admin.server(server['id'], version=NOVA_LATEST)
    assert theirs['OS-EXT-SRV-ATTR:host']
    assert theirs['host_status'] == 'UP'
    assert theirs['OS-EXT-SRV-ATTR:hostname'] == 'schema-vm-1'


# --- flavors, quotas, hypervisors, usage, versions ---------------------------

@pytest.mark.parametrize('version', ['2.1', '2.55', '2.61', '2.75',
                                     NOVA_LATEST])
def test_flavors(member, version):
    F = flavors_client.FlavorsClient
    listed = check(schema_of(F, 'list_flavors', version),
                   member.get('/flavors', version=version))['flavors']
    check(schema_of(F, 'list_flavors_details', version),
          member.get('/flavors/detail', version=version))
    shown = check(schema_of(F, 'create_update_get_flavor_details', version),
                  member.get('/flavors/%s' % listed[0]['id'],
                             version=version))['flavor']
    assert ('extra_specs' in shown) == (version >= '2.61' or
                                        version == NOVA_LATEST)


@pytest.mark.parametrize('version', ['2.1', '2.35', '2.36', '2.56', '2.57',
                                     NOVA_LATEST])
def test_quota_sets(member, admin, server, version):
    Q = quotas_client.QuotasClient
    project = server['tenant_id']
    base = '/os-quota-sets/%s' % project
    shown = check(schema_of(Q, 'get_quota_set', version),
                  member.get(base, version=version))['quota_set']
    assert 'disk' not in shown
    check(schema_of(Q, 'get_quota_set', version),
          member.get(base + '/defaults', version=version))
    check(schema_of(Q, 'get_quota_set_details', version),
          member.get(base + '/detail', version=version))
    check(schema_of(Q, 'update_quota_set', version),
          admin.put(base, {'quota_set': {'instances': shown['instances']}},
                    version=version))


def test_quota_sets_show_tristate_resources_from_2_101(member, admin,
                                                       server):
    path = '/os-quota-sets/%s' % server['tenant_id']
    shown = member.get(path, version=TRISTATE).get_json()['quota_set']
    assert {'disk', 'lease_hosts', 'lease_hours'} <= set(shown)
    refused = admin.put(path, {'quota_set': {'disk': 10}},
                        version=NOVA_LATEST)
    assert refused.status_code == 400
    assert "'disk'" in refused.get_json()['badRequest']['message']
    assert member.get(path, version=TRISTATE).get_json()['quota_set'][
        'disk'] == shown['disk']
    done = admin.put(path, {'quota_set': {'disk': shown['disk']}},
                     version=TRISTATE)
    assert done.get_json()['quota_set']['disk'] == shown['disk']


@pytest.mark.parametrize('version', ['2.1', '2.28', '2.33', '2.53', '2.87'])
def test_hypervisors(admin, version):
    H = hypervisor_client.HypervisorClient
    check(schema_of(H, 'list_search_hypervisors', version),
          admin.get('/os-hypervisors', version=version))
    check(schema_of(H, 'list_hypervisors_detail', version),
          admin.get('/os-hypervisors/detail', version=version))


def test_hypervisors_drop_usage_from_2_88_as_nova(admin):
    # Tempest has no 2.88 schema (its 2.53 one requires the usage keys)
    (host, *_) = admin.get('/os-hypervisors/detail',
                           version='2.88').get_json()['hypervisors']
    assert not {'vcpus', 'memory_mb_used', 'running_vms',
                'disk_available_least'} & set(host)
    assert {'id', 'hypervisor_hostname', 'state', 'status', 'service',
            'uptime', 'host_ip'} <= set(host)
    assert len(host['id']) == 36        # a UUID from 2.53


@pytest.mark.parametrize('version', ['2.1', NOVA_LATEST])
def test_usage(admin, member, server, version):
    check(tenant_usages.list_tenant_usage,
          admin.get('/os-simple-tenant-usage', version=version,
                    query_string={'detailed': '1'}))
    check(tenant_usages.get_tenant_usage,
          member.get('/os-simple-tenant-usage/%s' % server['tenant_id'],
                     version=version))


def test_versions(member):
    check(versions.list_versions, member.get('/'))
    check(versions.get_one_version, member.get('/v2.1/'))


@pytest.mark.parametrize('version', ['2.1', '2.35'])
def test_images_proxy(member, version):
    listed = check(images.list_images,
                   member.get('/images', version=version))['images']
    check(images.list_images_details,
          member.get('/images/detail', version=version))
    check(images.get_image,
          member.get('/images/%s' % listed[0]['id'], version=version))

"""``os-hypervisors`` and ``os-services`` through python-novaclient over
real HTTP, on a two-host plane: hypervisors by Nova's ids (numbers, then
uuids from 2.53), statistics, search, servers, uptime; services listed as
Nova's binaries, disabled with a reason, enabled, forced down (legacy
action URLs, and by uuid from 2.53), and the scheduler honouring both; the
audit log, ``/extensions`` and ``GET /``; negative cases as Nova answers
them; bodies checked against Tempest's schemas."""

import uuid as uuidlib

import pytest
from novaclient import exceptions as nova_exc
from tempest.lib.api_schema.response.compute.v2_1 import extensions
from tempest.lib.api_schema.response.compute.v2_1 import (
    instance_usage_audit_logs as audit_logs)
from tempest.lib.api_schema.response.compute.v2_1 import versions
from tempest.lib.services.compute import hypervisor_client
from tempest.lib.services.compute import services_client

from tests.functional import api_support
from tests.functional import catalogue_support as support
from tests.functional.api_support import Api
from tests.functional.api_support import message

# the catalogue tests' shared fixtures
admin_api = support.admin_api
api = support.api
plane = support.plane
url = support.url


def _admin(url, version='2.1'):
    return support.nova(url, api_support.ADMIN_TOKEN, version)


# --- hypervisors --------------------------------------------------------------------

def test_hypervisors_by_number_then_by_uuid(url, plane):
    old = _admin(url).hypervisors.list()
    assert sorted(h.hypervisor_hostname for h in old) == plane.host_names
    assert all(isinstance(h.id, int) for h in old)
    one = _admin(url).hypervisors.get(old[0].id)
    assert (one.hypervisor_hostname, one.service['id']) == (
        old[0].hypervisor_hostname, old[0].id)
    new = _admin(url, '2.53').hypervisors.list()
    assert all(uuidlib.UUID(h.id) for h in new)
    again = _admin(url, '2.53').hypervisors.get(new[0].id)
    assert again.hypervisor_hostname == new[0].hypervisor_hostname


def test_hypervisor_statistics_search_and_uptime(url, plane):
    admin = _admin(url)
    stats = admin.hypervisor_stats.statistics()
    assert stats.count == 2
    assert stats.vcpus == sum(h.vcpus for h in admin.hypervisors.list(
        detailed=True))
    found = admin.hypervisors.search('host1')
    assert [h.hypervisor_hostname for h in found] == ['host1']
    uptime = admin.hypervisors.uptime(found[0].id)
    assert 'up' in uptime.uptime
    with pytest.raises(nova_exc.NotFound):
        admin.hypervisors.search('no-such-host')


def test_servers_by_pattern_from_2_53(url, api):
    server = api.active()
    host = api.host(server['id'])
    found = _admin(url, '2.53').hypervisors.search(host, servers=True)
    assert server['id'] in [s['uuid'] for s in found[0].servers]
    api.delete('/servers/%s' % server['id'])


@pytest.mark.parametrize('path, version, code', [
    ('/os-hypervisors/999999', '2.1', 404),
    ('/os-hypervisors/host1', '2.1', 404),
    ('/os-hypervisors/0b6b2bd1-6a43-4c55-a5a8-4f4c0a1e8d21', '2.53', 404),
    ('/os-hypervisors/1', '2.53', 400),
    ('/os-hypervisors/statistics', '2.88', 404),
    ('/os-hypervisors/1/uptime', '2.88', 404),
    ('/os-hypervisors/host/search', '2.53', 404),
    ('/os-hypervisors/detail?with_servers=maybe', '2.53', 400),
    ('/os-hypervisors?limit=1&hypervisor_hostname_pattern=h', '2.53', 400),
])
def test_hypervisor_requests_nova_refuses(admin_api, path, version, code):
    resp = admin_api.get(path, version=version)
    assert resp.status_code == code, resp.get_json()


def test_hypervisors_are_admin_only(api):
    for path in ('/os-hypervisors', '/os-hypervisors/1',
                 '/os-hypervisors/statistics', '/os-hypervisors/h/search'):
        # statistics and search are gone at 2.88 and 2.53: asked at 2.1
        assert api.get(path, version='2.1').status_code == 403, path


def test_hypervisor_paging_from_2_33(admin_api):
    page = admin_api.get('/os-hypervisors?limit=1', version='2.33').get_json()
    assert len(page['hypervisors']) == 1
    marker = page['hypervisors'][0]['id']
    rest = admin_api.get('/os-hypervisors?marker=%s' % marker,
                         version='2.33').get_json()['hypervisors']
    assert [h['id'] for h in rest] != [marker] and len(rest) == 1


@pytest.mark.parametrize('version', ['2.1', '2.33', '2.53'])
def test_hypervisor_lists_match_tempest_schemas(admin_api, version):
    def schema(name):
        return support.tempest_schema(hypervisor_client.HypervisorClient,
                                      name, version)
    support.check(schema('list_search_hypervisors'),
                  admin_api.get('/os-hypervisors', version=version))
    if version < '2.53':
        support.check(schema('list_search_hypervisors'),
                      admin_api.get('/os-hypervisors/host/search',
                                    version=version))
        support.check(schema('get_hypervisors_servers'),
                      admin_api.get('/os-hypervisors/host/servers',
                                    version=version))


# --- services -----------------------------------------------------------------------

def _computes(client):
    return {s.host: s for s in client.services.list(binary='nova-compute')}


def test_services_list_as_nova(url, plane):
    listed = _admin(url).services.list()
    binaries = {(s.binary, s.zone) for s in listed}
    assert binaries == {('nova-compute', 'nova'),
                        ('nova-conductor', 'internal')}
    computes = _computes(_admin(url, '2.11'))
    assert sorted(computes) == plane.host_names
    assert all((s.status, s.state, s.forced_down) == ('enabled', 'up', False)
               for s in computes.values())
    on_host1 = _admin(url).services.list(host='host1')
    assert [(s.binary, s.host) for s in on_host1] == [('nova-compute',
                                                       'host1')]


def test_a_disabled_host_takes_no_build(url, api):
    admin = _admin(url)
    admin.services.disable_log_reason('host1', 'nova-compute', 'maintenance')
    try:
        shown = _computes(admin)['host1']
        assert (shown.status, shown.disabled_reason) == ('disabled',
                                                         'maintenance')
        servers = [api.active(name='d%d' % i) for i in range(3)]
        assert {api.host(s['id']) for s in servers} == {'host2'}
    finally:
        admin.services.enable('host1', 'nova-compute')
    assert _computes(admin)['host1'].status == 'enabled'
    for server in servers:
        api.delete('/servers/%s' % server['id'])


def test_a_forced_down_host_is_down_and_takes_no_build(url, api, admin_api):
    admin = _admin(url, '2.53')
    host1 = _computes(admin)['host1']
    admin.services.force_down(host1.id, True)
    try:
        assert _computes(admin)['host1'].state == 'down'
        hypervisors = {h.hypervisor_hostname: h
                       for h in admin.hypervisors.list()}
        assert hypervisors['host1'].state == 'down'
        servers = [api.active(name='f%d' % i) for i in range(3)]
        assert {api.host(s['id']) for s in servers} == {'host2'}
    finally:
        admin.services.force_down(host1.id, False)
    assert _computes(admin)['host1'].state == 'up'
    # the legacy action URL does the same before 2.53
    legacy = _admin(url, '2.11')
    legacy.services.force_down('host1', 'nova-compute', True)
    assert _computes(legacy)['host1'].forced_down is True
    legacy.services.force_down('host1', 'nova-compute', False)
    for server in servers:
        api.delete('/servers/%s' % server['id'])


def test_disable_and_enable_by_uuid(url):
    admin = _admin(url, '2.53')
    host2 = _computes(admin)['host2']
    done = admin.services.disable_log_reason(host2.id, 'disk swap')
    assert (done.status, done.disabled_reason, done.id) == (
        'disabled', 'disk swap', host2.id)
    assert admin.services.enable(host2.id).status == 'enabled'


@pytest.mark.parametrize('path, body, version, code, words', [
    ('disable', {'host': 'host1', 'binary': 'nova-conductor'}, '2.1', 400,
     'Only nova-compute'),
    ('disable', {'host': 'nowhere', 'binary': 'nova-compute'}, '2.1', 404,
     'nowhere'),
    ('disable-log-reason', {'host': 'host1', 'binary': 'nova-compute'},
     '2.1', 400, 'Missing disabled reason'),
    ('force-down', {'host': 'host1', 'binary': 'nova-compute',
                    'forced_down': True}, '2.10', 400, 'forced_down'),
    ('force-down', {'host': 'host1', 'binary': 'nova-compute'}, '2.10', 404,
     'Unknown action'),
    ('force-down', {'host': 'host1', 'binary': 'nova-compute'}, '2.11', 400,
     'Missing forced_down'),
    ('disable', {'host': 'host1'}, '2.1', 400, 'binary'),
    ('disable', {'host': 'host1', 'binary': 'nova-compute', 'x': 1}, '2.1',
     400, 'x'),
    ('not-a-uuid', {'status': 'disabled'}, '2.53', 400, 'Invalid uuid'),
    ('5d9e3c2a-1f4b-4e8a-9c7d-2b6a8f0e4c13', {'status': 'disabled'}, '2.53',
     404, 'not be'),
])
def test_service_updates_nova_refuses(admin_api, path, body, version, code,
                                      words):
    resp = admin_api.put('/os-services/%s' % path, body, version=version)
    assert resp.status_code == code, resp.get_json()
    assert words in message(resp)


def test_service_updates_by_uuid_checked(url, admin_api):
    services = _admin(url, '2.53').services.list()
    by_binary = {s.binary: s for s in services}
    compute = by_binary['nova-compute'].id
    for body, words in (({}, 'No updates were requested'),
                        ({'status': 'enabled', 'disabled_reason': 'x'},
                         "Specifying 'disabled_reason'"),
                        ({'status': 'off'}, 'status')):
        resp = admin_api.put('/os-services/%s' % compute, body,
                             version='2.53')
        assert resp.status_code == 400 and words in message(resp)
    conductor = by_binary['nova-conductor'].id
    resp = admin_api.put('/os-services/%s' % conductor,
                         {'status': 'disabled'}, version='2.53')
    assert resp.status_code == 400 and 'Only nova-compute' in message(resp)


def test_services_are_admin_only(api):
    assert api.get('/os-services').status_code == 403
    assert api.put('/os-services/disable', {
        'host': 'host1', 'binary': 'nova-compute'},
        version='2.1').status_code == 403
    assert api.get('/os-instance_usage_audit_log').status_code == 403


def test_a_host_with_servers_cannot_be_deleted(url, api, admin_api):
    server = api.active()
    host = api.host(server['id'])
    service = _computes(_admin(url, '2.53'))[host]
    resp = admin_api.delete('/os-services/%s' % service.id, version='2.53')
    assert resp.status_code == 409 and host in message(resp)
    assert admin_api.delete('/os-services/nope',
                            version='2.53').status_code == 400
    api.delete('/servers/%s' % server['id'])


@pytest.mark.parametrize('version', ['2.1', '2.11', '2.53'])
def test_service_bodies_match_tempest_schemas(admin_api, version):
    def schema(name):
        return support.tempest_schema(services_client.ServicesClient, name,
                                      version)
    support.check(schema('list_services'),
                  admin_api.get('/os-services', version=version))
    if version < '2.53':
        body = {'host': 'host2', 'binary': 'nova-compute'}
        support.check(schema('enable_disable_service'), admin_api.put(
            '/os-services/disable', body, version=version))
        support.check(schema('enable_disable_service'), admin_api.put(
            '/os-services/enable', body, version=version))
        return
    host2 = [s for s in admin_api.get('/os-services?host=host2',
                                      version=version).get_json()['services']]
    support.check(schema('update_service'), admin_api.put(
        '/os-services/%s' % host2[0]['id'], {'status': 'enabled'},
        version=version))


# --- the audit log, extensions, versions -------------------------------------------

def test_audit_log_extensions_and_versions(admin_api, api, app):
    logs = admin_api.get('/os-instance_usage_audit_log')
    support.check(audit_logs.list_instance_usage_audit_log, logs)
    body = logs.get_json()['instance_usage_audit_logs']
    assert (body['num_hosts'], body['num_hosts_not_run']) == (2, 2)
    one = admin_api.get('/os-instance_usage_audit_log/2026-11-01 10:00:00')
    support.check(audit_logs.get_instance_usage_audit_log, one)
    assert one.get_json()['instance_usage_audit_log'][
        'period_beginning'] == '2026-10-01 00:00:00'
    bad = admin_api.get('/os-instance_usage_audit_log/yesterday')
    assert bad.status_code == 400 and 'yesterday' in message(bad)
    support.check(extensions.list_extensions, api.get('/extensions'))
    shown = api.get('/extensions/os-services').get_json()['extension']
    assert shown['name'] == 'Services'
    # Nova's whole frozen list (Tempest looks up 'Hosts' and os-consoles);
    # what Tristate does not serve says so
    listed = api.get('/extensions').get_json()['extensions']
    assert len(listed) == 99 and 'Hosts' in {e['name'] for e in listed}
    cells = api.get('/extensions/os-cells').get_json()['extension']
    assert cells['description'].startswith('Not served by Tristate')
    assert api.get('/extensions/os-nothing').status_code == 404
    anonymous = Api(app)
    listed = anonymous.get('/')
    support.check(versions.list_versions, listed)
    # every listed version's document is where its self link says, and
    # links back to itself (Tempest's test_get_version_details)
    for version in listed.get_json()['versions']:
        (link,) = [x for x in version['links'] if x['rel'] == 'self']
        doc = anonymous.http.get(link['href'])
        support.check(versions.get_one_version, doc)
        assert link in doc.get_json()['version']['links']


def test_hypervisor_detail_keys_per_microversion(admin_api):
    def shown(version):
        listed = admin_api.get('/os-hypervisors/detail',
                               version=version).get_json()['hypervisors']
        return {h['hypervisor_hostname']: h for h in listed}['host1']
    assert isinstance(shown('2.1')['cpu_info'], str)
    assert isinstance(shown('2.28')['cpu_info'], dict)
    assert shown('2.87')['vcpus'] > 0
    latest = shown('2.88')
    assert 'vcpus' not in latest and 'cpu_info' not in latest
    assert 'up' in latest['uptime']
    assert 'tristate:capacity' not in latest
    own = shown('2.101')
    assert 'vcpus' not in own and own['tristate:capacity']['vcpus'] > 0

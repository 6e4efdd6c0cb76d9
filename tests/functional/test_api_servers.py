"""The REST API in-process against an embedded plane: versions, servers,
metadata, the action log, flavors, hosts, and its 400/404 answers."""

import time

import pytest

from api import microversion
from common.states import power
from common.states import vm
from compute_agent.virt import fake
from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.functional.conftest import wait_for
from tests.images_support import IMAGE


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture
def api(app):
    return Api(app, token=api_support.new_project())


@pytest.fixture
def admin_api(app):
    return Api(app)       # no token: the default user, admin


# --- versions ----------------------------------------------------------------

def test_version_discovery_needs_no_token(shared_plane):
    app = api_support.make_app(shared_plane, noauth_default_user='')
    http = Api(app)
    root = http.get('/')
    assert root.status_code == 200
    # as Nova lists them: the legacy v2.0, deprecated, and v2.1
    (legacy, doc) = root.get_json()['versions']
    assert (legacy['id'], legacy['status'], legacy['version']) == (
        'v2.0', 'DEPRECATED', '')
    assert (doc['id'], doc['min_version'], doc['version']) == (
        'v2.1', str(microversion.MIN), str(microversion.MAX))
    assert doc['links'] == [{'rel': 'self',
                             'href': 'http://localhost/v2.1/'}]
    for path in ('/v2.1', '/v2.1/'):
        resp = http.get(path)
        assert resp.status_code == 200
        assert resp.get_json()['version']['version'] == str(microversion.MAX)
    unauthenticated = http.get('/servers')
    assert unauthenticated.status_code == 401
    assert 'X-Auth-Token' in message(unauthenticated)
    # the defaults are back for the other tests
    api_support.configure(shared_plane.conf)


# --- servers -----------------------------------------------------------------

def test_create_show_list_delete(api):
    resp = api.post('/servers', {'server': {
        'name': 'web1', 'flavorRef': 'small', 'imageRef': IMAGE}})
    assert resp.status_code == 202
    created = resp.get_json()['server']
    assert resp.headers['Location'].endswith('/v2.1/servers/%s' % created['id'])
    # Nova's create answer: the id, links, disk config, the security groups
    # and the password it made up ([api] enable_instance_password, on by
    # default), nothing else
    assert set(created) == {'id', 'links', 'OS-DCF:diskConfig', 'adminPass',
                            'security_groups'}
    assert resp.headers['Tristate-Task-Id']
    server = api.settled(created['id'])
    assert server['status'] == 'ACTIVE'
    assert server['OS-EXT-STS:vm_state'] == vm.ACTIVE
    assert server['OS-EXT-STS:task_state'] is None
    assert server['OS-EXT-STS:power_state'] == power.RUNNING
    # where it runs is for admins only, as in Nova
    assert 'OS-EXT-SRV-ATTR:host' not in server
    assert 'host_status' not in server
    assert api.host(server['id']) in ('host1', 'host2')
    assert server['tristate:task_id'] is None
    assert server['tristate:progress'] is None
    assert server['tristate:oper_state'] == 'running'
    assert server['tristate:ec2_state'] == 'running'
    assert server['flavor']['original_name'] == 'small'
    assert server['image']['id'] == IMAGE
    # the policy keys are Tristate's own: shown from 2.101 only
    assert api.server(server['id'], version='2.100')['metadata'] == {}
    assert api.server(server['id'], version='2.101')['metadata'] == {
        'tristate:user_shutdown': 'stop', 'tristate:crash': 'restart'}
    listed = api.get('/servers').get_json()['servers']
    assert [(s['id'], s['name']) for s in listed] == [(server['id'], 'web1')]
    assert set(listed[0]) == {'id', 'name', 'links'}
    detail = api.get('/servers/detail').get_json()['servers']
    assert [s['status'] for s in detail] == ['ACTIVE']

    assert api.delete('/servers/%s' % server['id']).status_code == 204
    assert api.get('/servers/%s' % server['id']).status_code == 404
    assert api.ids() == []
    again = api.delete('/servers/%s' % server['id'])
    assert again.status_code == 404
    assert server['id'] in message(again)


def test_list_is_newest_first_with_filters_and_pages(api):
    first = api.active('a1')
    second = api.active('a2')
    assert api.ids('/servers/detail') == [second['id'], first['id']]
    assert api.ids('/servers', query_string={'name': '^a1$'}) == [first['id']]
    api.act(first['id'], {'os-stop': None})
    assert api.ids('/servers/detail', query_string={'status': 'SHUTOFF'}) == [
        first['id']]
    page = api.get('/servers', query_string={'limit': 1}).get_json()
    assert [s['id'] for s in page['servers']] == [second['id']]
    (link,) = page['servers_links']
    assert 'marker=%s' % second['id'] in link['href']
    rest = api.get('/servers', query_string={'limit': 1,
                                             'marker': second['id']})
    assert [s['id'] for s in rest.get_json()['servers']] == [first['id']]
    assert 'servers_links' not in rest.get_json()


def test_the_next_link_is_under_the_link_prefix(shared_plane):
    """Behind a proxy, ``[api] link_prefix`` is the clients' address of the
    API: the next page's link uses it, as the servers' own links do."""
    app = api_support.make_app(shared_plane,
                               link_prefix='https://cloud.example:8774')
    try:
        api = Api(app, token=api_support.new_project())
        for name in ('p1', 'p2'):
            api.create(name)
        for path in ('/servers', '/servers/detail'):
            (link,) = api.get(path + '?limit=1').get_json()['servers_links']
            assert link['href'].startswith(
                'https://cloud.example:8774/v2.1%s?' % path), link
    finally:
        shared_plane.conf.clear_override('link_prefix', group='api')


def test_create_sets_the_policies_from_metadata(api):
    server = api.as_(api.token, '2.101').active(metadata={
        'tristate:user_shutdown': 'restart', 'tristate:crash': 'error'})
    assert server['metadata'] == {'tristate:user_shutdown': 'restart',
                                  'tristate:crash': 'error'}


@pytest.mark.parametrize('server, field', [
    ({'name': 'x', 'imageRef': IMAGE}, 'server.flavorRef'),
    ({'name': 'x', 'flavorRef': 'tiny'}, 'server.imageRef'),
    ({'flavorRef': 'tiny', 'imageRef': IMAGE}, 'server.name'),
    ({'name': '', 'flavorRef': 'tiny', 'imageRef': IMAGE}, 'server.name'),
    ({'name': 'x', 'flavorRef': 'tiny', 'imageRef': IMAGE,
      'block_device_mapping_v2': [{'uuid': IMAGE, 'source_type': 'volume',
                                   'destination_type': 'volume',
                                   'boot_index': 0}]},
     'server.block_device_mapping_v2.0.destination_type'),
    ({'name': 'x', 'flavorRef': 'tiny', 'imageRef': IMAGE,
      'metadata': {'tristate:crash': 'explode'}}, 'server.metadata.tristate:crash'),
    ({'name': 'x', 'flavorRef': 'tiny', 'imageRef': IMAGE,
      'metadata': {'owner': 'v' * 256}}, 'server.metadata.owner'),
    ({'name': 'x', 'flavorRef': 'tiny', 'imageRef': IMAGE,
      'min_count': 3, 'max_count': 2}, 'server.min_count'),
])
def test_malformed_create_names_the_field_and_creates_nothing(api, server,
                                                               field):
    resp = api.post('/servers', {'server': server})
    assert resp.status_code == 400
    assert 'field/attribute %s.' % field in message(resp)
    assert api.ids() == []


def test_invalid_policy_value_names_the_allowed_ones(api):
    resp = api.post('/servers', {'server': {
        'name': 'x', 'flavorRef': 'tiny', 'imageRef': IMAGE,
        'metadata': {'tristate:user_shutdown': 'reboot'}}})
    assert resp.status_code == 400
    assert "['stop', 'restart', 'delete']" in message(resp)


def test_bad_bodies_and_unknown_flavor_are_400(api):
    not_json = api.post('/servers', data='{nope', headers={
        'Content-Type': 'application/json'})
    assert not_json.status_code == 400
    assert 'not JSON' in message(not_json)
    assert api.post('/servers').status_code == 400
    unknown = api.post('/servers', {'server': {
        'name': 'x', 'flavorRef': 'enormous', 'imageRef': IMAGE}})
    assert unknown.status_code == 400
    assert 'enormous' in message(unknown) and 'tiny' in message(unknown)
    assert api.ids() == []


def test_flavor_and_image_hrefs_are_accepted(api):
    resp = api.post('/servers', {'server': {
        'name': 'x', 'flavorRef': 'http://h/v2.1/flavors/tiny',
        'imageRef': 'http://h/images/' + IMAGE}})
    assert resp.status_code == 202
    server = api.settled(resp.get_json()['server']['id'], version='2.46')
    assert (server['flavor']['id'], server['image']['id']) == ('tiny', IMAGE)


@pytest.mark.parametrize('method, path, body', [
    ('GET', '/servers/%s', None),
    ('DELETE', '/servers/%s', None),
    ('POST', '/servers/%s/action', {'os-stop': None}),
    ('GET', '/servers/%s/os-instance-actions', None),
    ('GET', '/servers/%s/metadata', None),
    ('PUT', '/servers/%s/metadata/tristate:crash',
     {'meta': {'tristate:crash': 'stop'}}),
])
def test_unknown_ids_are_404(api, method, path, body):
    resp = api.request(method, path % 'no-such-server', json=body)
    assert resp.status_code == 404
    assert 'no-such-server' in message(resp)
    assert 'itemNotFound' in resp.get_json()


def test_unknown_paths_and_methods_are_json_faults(api):
    missing = api.get('/nothing-here')
    assert missing.status_code == 404
    assert 'itemNotFound' in missing.get_json()
    wrong = api.request('PATCH', '/servers')
    assert wrong.status_code == 405
    assert 'badMethod' in wrong.get_json()


def test_request_ids_are_returned(api):
    resp = api.get('/servers')
    request_id = resp.headers['X-OpenStack-Request-ID']
    assert request_id.startswith('req-')
    assert resp.headers['X-Compute-Request-ID'] == request_id


# --- metadata: the reconcile policies ----------------------------------------

def test_metadata_show_and_change(api, shared_plane):
    api = api.as_(api.token, '2.101')     # the policy keys: Tristate's own
    server = api.active()
    path = '/servers/%s/metadata' % server['id']
    assert api.get(path).get_json()['metadata'] == server['metadata']
    item = api.get(path + '/tristate:crash').get_json()
    assert item == {'meta': {'tristate:crash': 'restart'}}
    assert api.get(path + '/other').status_code == 404

    resp = api.put(path + '/tristate:crash',
                   {'meta': {'tristate:crash': 'stop'}})
    assert resp.status_code == 200
    assert resp.get_json() == {'meta': {'tristate:crash': 'stop'}}
    row = shared_plane.statedb.get_instance(server['id'])
    assert row['crash_policy'] == 'stop'

    resp = api.post(path, {'metadata': {'tristate:user_shutdown': 'restart'}})
    assert resp.status_code == 200
    assert resp.get_json()['metadata'] == {
        'tristate:user_shutdown': 'restart', 'tristate:crash': 'stop'}


@pytest.mark.parametrize('key, body, expected', [
    ('tristate:crash', {'meta': {'tristate:crash': 'explode'}},
     "['restart', 'stop', 'error']"),
    ('tristate:user_shutdown', {'meta': {'tristate:user_shutdown': 'x'}},
     "['stop', 'restart', 'delete']"),
    ('owner', {'meta': {'owner': 'v' * 256}}, 'field/attribute meta.owner.'),
    ('owner', {'meta': {'owner': 'a', 'other': 'b'}},
     'field/attribute meta.'),
    ('tristate:crash', {'meta': {'tristate:user_shutdown': 'stop'}},
     'Request body and URI mismatch'),
])
def test_bad_metadata_is_400_and_changes_nothing(api, key, body, expected):
    server = api.active()
    resp = api.put('/servers/%s/metadata/%s' % (server['id'], key), body)
    assert resp.status_code == 400
    assert expected in message(resp)
    assert api.server(server['id'])['metadata'] == server['metadata']


# --- the action log ----------------------------------------------------------

def test_instance_actions_come_from_the_action_log(api):
    server = api.active()
    api.act(server['id'], {'os-stop': None})
    path = '/servers/%s/os-instance-actions' % server['id']
    entries = api.get(path).get_json()['instanceActions']
    # Nova's action names; Tristate's own from its microversion
    assert [(e['action'], e['tristate:action'], e['tristate:result'])
            for e in entries] == [('stop', 'stop', 'success'),
                                  ('create', 'build', 'success')]
    stop = entries[0]
    assert (stop['tristate:vm_state_before'],
            stop['tristate:vm_state_after']) == (vm.ACTIVE, vm.STOPPED)
    assert stop['instance_uuid'] == server['id']
    assert stop['request_id'].startswith('req-')
    one = api.get('%s/%s' % (path, stop['request_id'])).get_json()
    assert one['instanceAction']['tristate:task_id'] == stop['tristate:task_id']
    by_task = api.get('%s/%s' % (path, stop['tristate:task_id']))
    assert by_task.status_code == 200
    assert api.get(path + '/req-nope').status_code == 404


# --- flavors and hosts -------------------------------------------------------

def test_flavors_come_from_the_config(api):
    # seeded into the database, id = name; Nova's default order: by id
    listed = api.get('/flavors').get_json()['flavors']
    configured = [f['id'] for f in listed
                  if f['id'] in ('tiny', 'small', 'medium', 'large')]
    assert configured == ['large', 'medium', 'small', 'tiny']
    by_ram = api.get('/flavors?sort_key=memory_mb').get_json()['flavors']
    names = [f['name'] for f in by_ram
             if f['name'] in ('tiny', 'small', 'medium', 'large')]
    assert names == ['tiny', 'small', 'medium', 'large']
    detail = {f['name']: f for f in
              api.get('/flavors/detail').get_json()['flavors']}
    assert (detail['small']['vcpus'], detail['small']['ram'],
            detail['small']['disk']) == (1, 2048, 20)
    assert api.get('/flavors/medium').get_json()['flavor']['ram'] == 4096
    assert api.get('/flavors/huge').status_code == 404


def test_hypervisors_show_capacity_usage_and_oper_states(admin_api, api,
                                                         shared_plane):
    server = api.active(flavor='small')
    # Nova's usage keys are gone from 2.88: asked at 2.87
    hosts = {h['hypervisor_hostname']: h for h in admin_api.get(
        '/os-hypervisors/detail', version='2.87').get_json()['hypervisors']}
    assert set(hosts) == {'host1', 'host2'}
    mine = hosts[api.host(server['id'])]
    row = shared_plane.statedb.get_host(mine['hypervisor_hostname'])
    assert mine['state'] == 'up' and mine['status'] == 'enabled'
    assert (mine['vcpus'], mine['memory_mb'], mine['local_gb']) == (
        row['vcpus'], row['memory_mb'], row['disk_gb'])
    assert (mine['vcpus_used'], mine['memory_mb_used']) == (
        row['used_vcpus'], row['used_memory_mb'])
    assert mine['memory_mb_used'] >= 2048
    ours = {h['hypervisor_hostname']: h for h in admin_api.get(
        '/os-hypervisors/detail').get_json()['hypervisors']}
    assert ours[mine['hypervisor_hostname']]['tristate:oper_states'][
        'running'] >= 1
    assert ours[mine['hypervisor_hostname']]['tristate:capacity'][
        'memory_mb_used'] == row['used_memory_mb']
    summary = admin_api.get('/os-hypervisors').get_json()['hypervisors']
    assert {h['state'] for h in summary} == {'up'}


def test_a_host_whose_agent_stopped_is_down(make_plane, clock):
    plane = make_plane(hosts=2, clock=clock)
    api = Api(api_support.make_app(plane))
    server = api.active()
    host = api.host(server['id'])
    plane.stop_agent(host)
    clock.advance(plane.conf.conductor.service_down_time + 1)

    def states():
        hosts = api.get('/os-hypervisors/detail').get_json()['hypervisors']
        return {h['hypervisor_hostname']: h['state'] for h in hosts}
    other = 'host2' if host == 'host1' else 'host1'
    wait_for(lambda: states() == {host: 'down', other: 'up'},
             what='%s down and %s up' % (host, other), show=states)
    shown = api.server(server['id'])
    assert shown['tristate:oper_state'] == 'ERROR_nodedown'
    assert shown['host_status'] == 'DOWN'


def test_delete_needs_no_conductor(make_plane):
    plane = make_plane(hosts=1)
    api = Api(api_support.make_app(plane))
    server = api.active()
    plane.conductor.stop()
    started = time.monotonic()
    assert api.delete('/servers/%s' % server['id']).status_code == 204
    assert time.monotonic() - started < 2.0
    row = plane.statedb.get_instance(server['id'])
    assert (row['vm_state'], row['task_id']) == (vm.HARD_DELETED, None)


def test_delete_preempts_a_running_task(api, shared_plane):
    server = api.active()
    store = fake.HostStore(shared_plane.conf.state_dir,
                           api.host(server['id']))
    store.set_fault('power_off', 'hang')
    try:
        api.action(server['id'], {'os-stop': None})
        assert api.server(server['id'])['OS-EXT-STS:task_state'] == 'stopping'
        assert api.delete('/servers/%s' % server['id']).status_code == 204
        assert api.get('/servers/%s' % server['id']).status_code == 404
    finally:
        store.clear_faults()

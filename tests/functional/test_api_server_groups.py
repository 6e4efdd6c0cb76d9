"""``os-server-groups`` as Nova answers it (issue 25), through the API over
the shared plane: create, list, show and delete at the microversions where
the bodies change (2.1 ``policies``, 2.13 owners, 2.15 soft policies, 2.64
``policy`` and ``rules``), each body checked with Tempest's own response
schemas; bad bodies named; another project's group not found; an admin's
``all_projects``; the ``server_groups`` quota; the ``group`` scheduler hint
of a create (other hints still refused) and the members it makes."""

import uuid as uuidlib

import pytest
from tempest.lib.services.compute import server_groups_client

from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.functional.test_api_response_schemas import check
from tests.functional.test_api_response_schemas import schema_of

CLIENT = server_groups_client.ServerGroupsClient


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture
def user(app):
    return Api(app, token=api_support.new_project())


def _create(api, body, version, status=200):
    resp = api.post('/os-server-groups', {'server_group': body},
                    version=version)
    assert resp.status_code == status, resp.get_json()
    if status != 200:
        return message(resp)
    return check(schema_of(CLIENT, 'create_show_server_group', version),
                 resp)['server_group']


@pytest.mark.parametrize('version,body,shown', [
    ('2.1', {'policies': ['anti-affinity']},
     {'policies': ['anti-affinity'], 'metadata': {}}),
    ('2.15', {'policies': ['soft-affinity']},
     {'policies': ['soft-affinity'], 'metadata': {}}),
    ('2.64', {'policy': 'anti-affinity',
              'rules': {'max_server_per_host': 3}},
     {'policy': 'anti-affinity', 'rules': {'max_server_per_host': 3}}),
    ('2.64', {'policy': 'affinity'}, {'policy': 'affinity', 'rules': {}}),
])
def test_create_show_list_delete(user, version, body, shown):
    made = _create(user, dict(body, name='web'), version)
    assert {k: made[k] for k in shown} == shown
    assert made['name'] == 'web' and made['members'] == []
    assert ('project_id' in made) == (version != '2.1')
    path = '/os-server-groups/%s' % made['id']
    resp = user.get(path, version=version)
    assert check(schema_of(CLIENT, 'create_show_server_group', version),
                 resp)['server_group'] == made
    resp = user.get('/os-server-groups', version=version)
    assert check(schema_of(CLIENT, 'list_server_groups', version),
                 resp)['server_groups'] == [made]
    resp = user.delete(path, version=version)
    check(schema_of(CLIENT, 'delete_server_group', version), resp)
    assert user.get(path).status_code == 404


@pytest.mark.parametrize('version,body,field', [
    ('2.1', {'name': 'g', 'policies': ['soft-affinity']}, 'policies'),
    ('2.1', {'name': 'g', 'policies': ['affinity', 'anti-affinity']},
     'policies'),
    ('2.1', {'name': 'g', 'policy': 'affinity'}, 'policy'),
    ('2.64', {'name': 'g', 'policies': ['affinity']}, 'policies'),
    ('2.64', {'name': 'g', 'policy': 'anti-affinity',
              'rules': {'max_server_per_host': 0}}, 'max_server_per_host'),
    ('2.64', {'name': 'g', 'policy': 'anti-affinity',
              'rules': {'other': 1}}, 'other'),
    ('2.64', {'name': ' g', 'policy': 'affinity'}, 'name'),
])
def test_bad_bodies_are_named(user, version, body, field):
    assert field in _create(user, body, version, 400)
    assert user.get('/os-server-groups').get_json()['server_groups'] == []


def test_rules_only_for_anti_affinity(user):
    said = _create(user, {'name': 'g', 'policy': 'affinity',
                          'rules': {'max_server_per_host': 2}}, '2.64', 400)
    assert 'Only anti-affinity policy supports rules' in said


def test_another_projects_group_is_not_found_but_admin_lists_all(app, user):
    made = _create(user, {'name': 'mine', 'policy': 'affinity'}, '2.64')
    other = Api(app, token=api_support.new_project())
    assert other.get('/os-server-groups/%s' % made['id']).status_code == 404
    assert other.delete('/os-server-groups/%s' % made['id']
                        ).status_code == 404
    assert other.get('/os-server-groups?all_projects=True').get_json()[
        'server_groups'] == []
    admin = Api(app, token=api_support.ADMIN_TOKEN)
    listed = admin.get('/os-server-groups?all_projects=True').get_json()
    assert made['id'] in {g['id'] for g in listed['server_groups']}
    assert made['id'] not in {g['id'] for g in admin.get(
        '/os-server-groups').get_json()['server_groups']}


def test_unknown_query_refused_from_2_75(user):
    assert user.get('/os-server-groups?foo=1', version='2.74'
                    ).status_code == 200
    resp = user.get('/os-server-groups?foo=1', version='2.75')
    assert resp.status_code == 400 and 'foo' in message(resp)


def test_limit_and_offset(user):
    made = [_create(user, {'name': 'g%d' % n, 'policy': 'affinity'},
                    '2.64')['id'] for n in range(3)]
    listed = user.get('/os-server-groups?limit=1&offset=1').get_json()
    assert [g['id'] for g in listed['server_groups']] == made[1:2]


def test_server_groups_quota(app, user, shared_plane):
    project = user.token.split(':')[1]
    shared_plane.statedb.set_quotas(project, {'server_groups': 1})
    _create(user, {'name': 'one', 'policy': 'affinity'}, '2.64')
    said = _create(user, {'name': 'two', 'policy': 'affinity'}, '2.64', 403)
    assert 'too many server groups' in said
    quota = user.get('/os-quota-sets/%s/detail' % project).get_json()
    assert quota['quota_set']['server_groups'] == {
        'limit': 1, 'in_use': 1, 'reserved': 0}
    limits = user.get('/limits').get_json()['limits']['absolute']
    assert (limits['maxServerGroups'], limits['totalServerGroupsUsed']) == (
        1, 1)


def _boot(api, hints, status=202):
    resp = api.post('/servers', {
        'server': {'name': 'vm', 'flavorRef': 'tiny',
                   'imageRef': api_support.IMAGE},
        'os:scheduler_hints': hints})
    assert resp.status_code == status, resp.get_json()
    return resp


def test_group_hint_makes_a_member_and_delete_removes_it(user):
    made = _create(user, {'name': 'g', 'policy': 'anti-affinity'}, '2.64')
    server = _boot(user, {'group': made['id']}).get_json()['server']
    path = '/os-server-groups/%s' % made['id']
    assert user.get(path).get_json()['server_group']['members'] == [
        server['id']]
    shown = user.server(server['id'], version='2.71')
    assert shown['server_groups'] == [made['id']]
    assert user.delete('/servers/%s' % server['id']).status_code == 204
    assert user.get(path).get_json()['server_group']['members'] == []


def test_group_hint_of_an_unknown_or_foreign_group_is_refused(app, user):
    said = message(_boot(user, {'group': str(uuidlib.uuid4())}, 400))
    assert 'os:scheduler_hints.group' in said
    assert 'os:scheduler_hints.group' in message(
        _boot(user, {'group': 'not-a-uuid'}, 400))
    foreign = _create(Api(app, token=api_support.new_project()),
                      {'name': 'g', 'policy': 'affinity'}, '2.64')
    assert 'not found' in message(_boot(user, {'group': foreign['id']}, 400))
    assert 'same_host' in message(_boot(user, {'same_host': 'x'}, 400))

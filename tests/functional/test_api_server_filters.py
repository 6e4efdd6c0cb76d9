"""``GET /servers`` filters as Nova 34 answers them: each one Tristate can
honour filters; one it cannot is a 400 saying so, never ignored; a member
uses only the filters Nova allows everyone (Nova drops the others)."""

import pytest

from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message

PAST = '2000-01-01T00:00:00Z'
FUTURE = '2999-01-01T00:00:00Z'


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture(scope='module')
def two(app):
    """A project with a tiny server, stopped, and a small one, active."""
    api = Api(app, token=api_support.new_project())
    tiny = api.active('t1', flavor='tiny')
    tiny = api.act(tiny['id'], {'os-stop': None})
    small = api.active('s1', flavor='small')
    return api, tiny, small


def _ids(api, path='/servers', **query):
    return set(api.ids(path, query_string=query))


def test_flavor_and_image(two):
    api, tiny, small = two
    for path in ('/servers', '/servers/detail'):
        assert _ids(api, path, flavor='small') == {small['id']}
        assert _ids(api, path, flavor='tiny') == {tiny['id']}
        assert _ids(api, path, flavor='nosuch') == set()
        assert _ids(api, path, image=api_support.IMAGE) == {
            tiny['id'], small['id']}
        assert _ids(api, path, image='other') == set()


def test_vm_state_for_members_from_2_83_and_admins_always(app, two):
    api, tiny, small = two
    project = api.token.split(':')[1]
    member = api.as_(api.token, '2.83')
    assert _ids(member, vm_state='stopped') == {tiny['id']}
    assert _ids(member, vm_state=['stopped', 'active']) == {
        tiny['id'], small['id']}
    # Below 2.83 Nova drops a member's vm_state filter
    below = api.as_(api.token, '2.82')
    assert _ids(below, vm_state='stopped') == {tiny['id'], small['id']}
    admin = Api(app, token=api_support.ADMIN_TOKEN)
    assert _ids(admin, vm_state='active', all_tenants=1,
                project_id=project) == {small['id']}


def test_changes_since_and_before(two):
    api, tiny, small = two
    at = api.as_(api.token, '2.66')
    both = {tiny['id'], small['id']}
    assert _ids(at, **{'changes-since': PAST}) == both
    assert _ids(at, **{'changes-since': FUTURE}) == set()
    assert _ids(at, **{'changes-before': PAST}) == set()
    assert _ids(at, **{'changes-before': FUTURE}) == both
    # updated only grows: a server changed at or after its own `updated`
    since = at.server(small['id'])['updated']
    assert small['id'] in _ids(at, **{'changes-since': since})
    assert _ids(at, **{'changes-since': '2999-01-01T00:00:00+02:00'}) == set()


@pytest.mark.parametrize('name', ['changes-since', 'changes-before'])
def test_a_malformed_time_is_400_naming_it(two, name):
    api = two[0].as_(two[0].token, '2.66')
    resp = api.get('/servers', query_string={name: 'yesterday'})
    assert resp.status_code == 400
    assert name in message(resp) and 'yesterday' in message(resp)


def test_changes_since_after_changes_before_is_400(two):
    api = two[0].as_(two[0].token, '2.66')
    resp = api.get('/servers', query_string={'changes-since': FUTURE,
                                             'changes-before': PAST})
    assert resp.status_code == 400
    assert 'changes-since' in message(resp)


def test_deleted_servers_are_listed_for_admins_as_in_nova(app):
    """``deleted=true`` and ``vm_state=deleted`` list the deleted servers
    (admins only); ``changes-since`` lists them beside the others, so a
    client syncing a cache learns of deletes."""
    api = Api(app, token=api_support.new_project())
    project = api.token.split(':')[1]
    kept, gone = api.active('kept'), api.active('gone')
    assert api.delete('/servers/%s' % gone['id']).status_code == 204
    admin = Api(app, token=api_support.ADMIN_TOKEN)
    for query in ({'deleted': 'true'}, {'vm_state': 'deleted'}):
        found = admin.get('/servers/detail', query_string=dict(
            query, all_tenants=1, project_id=project)).get_json()['servers']
        assert [s['id'] for s in found] == [gone['id']], query
        assert found[0]['status'] == 'DELETED'
    assert _ids(admin, deleted='false', all_tenants=1,
                project_id=project) == {kept['id']}
    assert _ids(api, **{'changes-since': PAST}) == {kept['id'], gone['id']}
    assert _ids(api) == {kept['id']}
    member = api.as_(api.token, '2.83')
    resp = member.get('/servers', query_string={'vm_state': 'deleted'})
    assert resp.status_code == 403
    resp = admin.get('/servers', query_string={'deleted': 'maybe'})
    assert resp.status_code == 400 and 'deleted' in message(resp)


@pytest.mark.parametrize('name,value', [
    ('config_drive', 'True'),
    ('power_state', '1'), ('availability_zone', 'nova')])
def test_a_filter_tristate_cannot_honour_is_400(app, two, name, value):
    for api in (two[0].as_(two[0].token, '2.90'),
                Api(app, token=api_support.ADMIN_TOKEN)):
        resp = api.get('/servers/detail', query_string={name: value})
        assert resp.status_code == 400, (name, resp.get_json())
        assert name in message(resp) and 'not supported' in message(resp)


def test_ip_filters_match_no_server_without_addresses(two):
    """Servers on no network have no address to match (the filters
    themselves: tests/functional/test_networks.py)."""
    resp = two[0].as_(two[0].token, '2.5').get(
        '/servers', query_string={'ip6': '::1'})
    assert resp.status_code == 200 and resp.get_json()['servers'] == []
    resp = two[0].get('/servers', query_string={'ip': '(unclosed'})
    assert resp.status_code == 400 and 'ip' in message(resp)


def test_sort_key_and_dir(two):
    api, tiny, small = two
    names = lambda **q: [s['name'] for s in api.get(  # noqa: E731
        '/servers/detail', query_string=q).get_json()['servers']]
    assert names(sort_key='display_name', sort_dir='asc') == ['s1', 't1']
    assert names(sort_key='display_name', sort_dir='desc') == ['t1', 's1']
    assert names(sort_key='display_name') == ['t1', 's1']   # desc default
    assert names() == ['s1', 't1']                          # newest first
    assert names(sort_key=['vm_state', 'display_name'],
                 sort_dir=['asc', 'asc']) == ['s1', 't1']   # active first
    for query, field in (({'sort_key': 'nosuch'}, 'sort_key'),
                         ({'sort_key': 'uuid', 'sort_dir': 'up'}, 'sort_dir')):
        resp = api.get('/servers', query_string=query)
        assert resp.status_code == 400 and field in message(resp)
    resp = api.get('/servers', query_string={'sort_key': 'host'})
    assert resp.status_code == 403


def test_tags_filters(app):
    api = Api(app, token=api_support.new_project(), version='2.26')
    a, b = api.active('a'), api.active('b')
    assert api.put('/servers/%s/tags' % a['id'],
                   {'tags': ['red', 'big']}).status_code == 200
    assert api.put('/servers/%s/tags/red' % b['id']).status_code == 201
    assert _ids(api, tags='red,big') == {a['id']}
    assert _ids(api, tags='red') == {a['id'], b['id']}
    assert _ids(api, **{'tags-any': 'big,small'}) == {a['id']}
    assert _ids(api, **{'not-tags': 'red,big'}) == {b['id']}
    assert _ids(api, **{'not-tags-any': 'big'}) == {b['id']}
    assert _ids(api, **{'not-tags-any': 'red'}) == set()


def test_locked_and_reservation_id(app):
    api = Api(app, token=api_support.new_project(), version='2.73')
    a, b = api.active('a'), api.active('b')
    api.action(a['id'], {'lock': None})
    assert _ids(api, locked='true') == {a['id']}
    assert _ids(api, locked='false') == {b['id']}
    resp = api.get('/servers', query_string={'locked': 'perhaps'})
    assert resp.status_code == 400 and 'locked' in message(resp)
    resp = api.post('/servers', {'server': {
        'name': 'many', 'flavorRef': 'tiny', 'imageRef': api_support.IMAGE,
        'min_count': 2, 'max_count': 2, 'return_reservation_id': True}})
    assert resp.status_code == 202, resp.get_json()
    rid = resp.get_json()['reservation_id']
    assert rid.startswith('r-')
    made = api.get('/servers', query_string={
        'reservation_id': rid, 'sort_key': 'display_name',
        'sort_dir': 'asc'}).get_json()['servers']
    assert [s['name'] for s in made] == ['many-1', 'many-2']


def test_a_member_s_admin_only_filters_are_dropped_as_in_nova(app, two):
    api, tiny, small = two
    admin = Api(app, token=api_support.ADMIN_TOKEN)
    host = admin.host(small['id'])
    assert _ids(api, host='nosuch') == {tiny['id'], small['id']}
    assert small['id'] in _ids(admin, host=host, all_tenants=1)
    assert _ids(admin, host='nosuch', all_tenants=1) == set()


def test_unknown_parameters_are_400_from_2_75(two):
    api = two[0]
    assert api.get('/servers', query_string={'foo': '1'},
                   version='2.74').status_code == 200
    resp = api.get('/servers', query_string={'foo': '1'}, version='2.75')
    assert resp.status_code == 400
    assert 'foo' in message(resp)


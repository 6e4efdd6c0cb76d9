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


def test_deleted_servers_are_refused_not_ignored(app, two):
    admin = Api(app, token=api_support.ADMIN_TOKEN)
    for query in ({'deleted': 'true'}, {'vm_state': 'deleted'}):
        resp = admin.get('/servers/detail', query_string=query)
        assert resp.status_code == 400, query
        assert 'deleted' in message(resp)
        assert 'not supported' in message(resp)
    assert admin.get('/servers', query_string={
        'deleted': 'false'}).status_code == 200
    member = two[0].as_(two[0].token, '2.83')
    resp = member.get('/servers', query_string={'vm_state': 'deleted'})
    assert resp.status_code == 403


@pytest.mark.parametrize('name,value', [
    ('ip', '10.0.0.1'), ('reservation_id', 'r-1'), ('sort_key', 'name'),
    ('locked', 'true'), ('tags', 'a')])
def test_a_filter_tristate_cannot_honour_is_400(app, two, name, value):
    for api in (two[0].as_(two[0].token, '2.90'),
                Api(app, token=api_support.ADMIN_TOKEN)):
        resp = api.get('/servers/detail', query_string={name: value})
        assert resp.status_code == 400, (name, resp.get_json())
        assert name in message(resp) and 'not supported' in message(resp)


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

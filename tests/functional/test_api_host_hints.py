"""The ``same_host`` / ``different_host`` scheduler hints of ``POST
/servers`` (issue 22) through the API over a shared two-host plane: the
forms Nova's schema takes (one uuid, a list; either hints key), a bad one
a 400 naming the field that creates nothing, the hints shown from 2.100
as Nova keeps them (lists of uuids), and the server placed by them.
Placement itself is tested in tests/functional/test_host_hints.py."""

import uuid as uuidlib

import pytest

from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.functional.test_api_response_schemas import check
from tests.functional.test_api_response_schemas import schema_of
from tempest.lib.services.compute import servers_client


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture
def user(app):
    return Api(app, token=api_support.new_project())


def _boot(api, hints, key='os:scheduler_hints', status=202):
    resp = api.post('/servers', {
        'server': {'name': 'vm', 'flavorRef': 'tiny',
                   'imageRef': api_support.IMAGE}, key: hints})
    assert resp.status_code == status, resp.get_json()
    return resp


@pytest.mark.parametrize('hints, field', [
    ({'same_host': 'not-a-uuid'}, 'same_host'),
    ({'same_host': [str(uuidlib.uuid4()), 'x']}, 'same_host'),
    ({'same_host': {'a': 1}}, 'same_host'),
    ({'different_host': 42}, 'different_host'),
    ({'different_host': [None]}, 'different_host'),
    ({'different_host': 'x' * 37}, 'different_host'),
], ids=['same-text', 'same-list-item', 'same-object', 'different-number',
        'different-null', 'different-long'])
def test_bad_hints_are_named_and_create_nothing(user, hints, field):
    said = message(_boot(user, hints, status=400))
    assert 'os:scheduler_hints.%s' % field in said, said
    if not isinstance(hints[field], (str, list)):
        assert 'expected a server uuid or a list of server uuids' in said
    said = message(_boot(user, hints, key='OS-SCH-HNT:scheduler_hints',
                         status=400))
    assert 'OS-SCH-HNT:scheduler_hints.%s' % field in said, said
    assert user.ids() == []


def test_hints_place_and_show_from_2_100(user):
    first = user.active()
    host = user.host(first['id'])
    # one uuid, in capitals: kept in its canonical form, as a list
    beside = _boot(user, {'same_host': first['id'].upper()}).get_json()
    beside = user.settled(beside['server']['id'])
    assert user.host(beside['id']) == host
    apart = _boot(user, {'different_host': [first['id'], first['id']]},
                  key='OS-SCH-HNT:scheduler_hints').get_json()
    apart = user.settled(apart['server']['id'])
    assert user.host(apart['id']) != host
    resp = user.get('/servers/%s' % apart['id'], version='2.100')
    shown = check(schema_of(servers_client.ServersClient, 'get_server',
                            '2.100'), resp)['server']
    assert shown['scheduler_hints'] == {'different_host': [first['id']]}
    assert user.server(beside['id'], version='2.100')['scheduler_hints'] == {
        'same_host': [first['id']]}
    assert user.server(first['id'], version='2.100')[
        'scheduler_hints'] == {}
    assert 'scheduler_hints' not in user.server(beside['id'],
                                                version='2.99')
    listed = user.get('/servers/detail', version='2.100').get_json()
    assert {s['id']: s['scheduler_hints'] for s in listed['servers']}[
        beside['id']] == {'same_host': [first['id']]}


def test_a_hint_no_host_satisfies_is_an_error_saying_so(user):
    ghost = str(uuidlib.uuid4())
    made = _boot(user, {'same_host': [ghost]}).get_json()
    server = user.settled(made['server']['id'])
    assert server['status'] == 'ERROR'
    assert 'no host satisfies same_host %s' % ghost in server['fault'][
        'message']

"""``GET /servers/{id}/os-instance-actions/{request_id}``: the action with
its events, one per task of the action log, shown at Nova's microversions
(events for everyone from 2.51, hostId from 2.62, details from 2.84; the
traceback, and events before 2.51, for admins only)."""

import pytest

from compute_agent.virt import fake
from tests.functional import api_support
from tests.functional.api_support import NO_HEADER
from tests.functional.api_support import Api


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture
def api(app):
    return Api(app, token=api_support.new_project())


@pytest.fixture
def admin(app):
    return Api(app, token=api_support.ADMIN_TOKEN)


def _actions(api, server_id):
    return api.get('/servers/%s/os-instance-actions'
                   % server_id).get_json()['instanceActions']


def _action(api, server_id, request_id, version=None):
    resp = api.get('/servers/%s/os-instance-actions/%s' % (server_id,
                                                           request_id),
                   version=version)
    assert resp.status_code == 200, resp.get_json()
    return resp.get_json()['instanceAction']


def _stopped(api):
    server = api.active()
    api.act(server['id'], {'os-stop': None})
    return server, _actions(api, server['id'])[0]


def test_an_admin_sees_one_event_per_task_with_its_times(api, admin):
    server, stop = _stopped(api)
    action = _action(admin, server['id'], stop['request_id'], 'latest')
    assert {k: action[k] for k in ('action', 'request_id', 'start_time')} == {
        k: stop[k] for k in ('action', 'request_id', 'start_time')}
    (event,) = action['events']
    assert event == {
        'event': 'tristate_stop', 'start_time': stop['start_time'],
        'finish_time': stop['tristate:finish_time'], 'result': 'Success',
        'traceback': None, 'hostId': '', 'host': '', 'details': None,
        'tristate:task_id': stop['tristate:task_id'],
        'tristate:result': 'success'}


@pytest.mark.parametrize('version, keys', [
    (NO_HEADER, None),
    ('2.50', None),
    ('2.51', {'event', 'start_time', 'finish_time', 'result'}),
    ('2.62', {'event', 'start_time', 'finish_time', 'result', 'hostId'}),
    ('2.84', {'event', 'start_time', 'finish_time', 'result', 'hostId',
              'details'}),
])
def test_the_owner_sees_events_from_2_51_without_traceback(api, version,
                                                           keys):
    server, stop = _stopped(api)
    action = _action(api, server['id'], stop['request_id'], version)
    if keys is None:
        assert 'events' not in action
        return
    (event,) = action['events']
    assert set(event) - {'tristate:task_id', 'tristate:result'} == keys


@pytest.mark.parametrize('version, keys', [
    (NO_HEADER, {'event', 'start_time', 'finish_time', 'result',
                 'traceback'}),
    ('2.62', {'event', 'start_time', 'finish_time', 'result', 'traceback',
              'hostId', 'host'}),
])
def test_an_admin_sees_events_at_every_version(api, admin, version, keys):
    server, stop = _stopped(api)
    (event,) = _action(admin, server['id'], stop['request_id'],
                       version)['events']
    assert set(event) - {'tristate:task_id', 'tristate:result'} == keys


def test_a_failed_task_shows_its_message(api, admin, shared_plane):
    server = api.active()
    store = fake.HostStore(shared_plane.conf.state_dir,
                           api.host(server['id']))
    store.set_fault('power_off', 'fail', count=1)
    try:
        api.act(server['id'], {'os-stop': None})
    finally:
        store.clear_faults()
    stop = _actions(api, server['id'])[0]
    assert stop['tristate:result'] == 'rolled_back'
    (event,) = _action(admin, server['id'], stop['request_id'],
                       '2.84')['events']
    assert event['result'] == 'Error'
    assert 'injected fault' in event['traceback']
    assert event['details'] == event['traceback'] == stop['message']
    (mine,) = _action(api, server['id'], stop['request_id'],
                      '2.84')['events']
    assert 'traceback' not in mine
    assert mine['details'] == stop['message']


def test_a_running_task_has_no_result_yet(api, shared_plane):
    server = api.active()
    store = fake.HostStore(shared_plane.conf.state_dir,
                           api.host(server['id']))
    store.set_fault('power_off', 'hang')
    try:
        resp = api.action(server['id'], {'os-stop': None})
        task_id = resp.headers['Tristate-Task-Id']
        (event,) = _action(api, server['id'], task_id, 'latest')['events']
        assert (event['result'], event['finish_time']) == (None, None)
        assert event['tristate:result'] == 'running'
    finally:
        store.clear_faults()
    api.settled(server['id'])


def test_by_task_id_the_one_task(api):
    server, stop = _stopped(api)
    action = _action(api, server['id'], stop['tristate:task_id'], 'latest')
    assert [e['tristate:task_id'] for e in action['events']] == [
        stop['tristate:task_id']]


def test_unknown_actions_and_other_projects_are_404(api, app):
    server, stop = _stopped(api)
    path = '/servers/%s/os-instance-actions/' % server['id']
    assert api.get(path + 'req-nope').status_code == 404
    other = Api(app, token=api_support.new_project())
    assert other.get(path + stop['request_id']).status_code == 404

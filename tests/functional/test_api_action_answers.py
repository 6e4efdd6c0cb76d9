"""What an accepted action answers, as Nova: rescue's ``adminPass`` (which
reaches the driver and nothing else), and the image id of ``createImage``
and ``createBackup`` (a body from 2.45, a ``Location`` header before)."""

import hashlib
import logging

import pytest

from api import service as api_service
from api import wsgi
from compute_agent.virt import fake
from tests.functional import api_support
from tests.functional.api_support import NO_HEADER
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.functional.conftest import set_opts
from tests.images_support import IMAGES


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture
def api(app):
    return Api(app, token=api_support.new_project())


def _record(plane, server):
    host = plane.statedb.get_instance(server['id'])['host']
    return fake.HostStore(plane.conf.state_dir, host).read()['domains'][server['id']]


def _digest(password):
    return hashlib.sha256(password.encode()).hexdigest()


def _log(api, server_id):
    return api.get('/servers/%s/os-instance-actions'
                   % server_id).get_json()['instanceActions']


# --- rescue ----------------------------------------------------------------------

def test_rescue_answers_a_generated_password_that_reaches_the_driver(
        api, shared_plane, caplog):
    caplog.set_level(logging.DEBUG)
    server = api.active()
    resp = api.action(server['id'], {'rescue': None}, expect=(200,))
    password = resp.get_json()['adminPass']
    assert len(password) == 12 and password.isalnum()
    after = api.settled(server['id'])
    assert after['status'] == 'RESCUE'
    assert _record(shared_plane, after)['rescue_password_sha256'] == (
        _digest(password))
    # never logged, never in the action log
    assert password not in caplog.text
    assert password not in repr(_log(api, server['id']))
    detail = api.get('/servers/%s/os-instance-actions/%s' % (
        server['id'], resp.headers['Tristate-Task-Id']), version='latest')
    assert password not in detail.get_data(as_text=True)
    api.act(server['id'], {'unrescue': None})
    assert _record(shared_plane, after)['rescue_password_sha256'] is None


def test_rescue_uses_the_password_given(api, shared_plane, caplog):
    caplog.set_level(logging.DEBUG)
    server = api.active()
    body = {'rescue': {'adminPass': 'Given-pw-42',
                       'rescue_image_ref': IMAGES['rescue-img']}}
    resp = api.action(server['id'], body, expect=(200,))
    assert resp.get_json() == {'adminPass': 'Given-pw-42'}
    record = _record(shared_plane, api.settled(server['id']))
    assert record['rescue_password_sha256'] == _digest('Given-pw-42')
    assert record['rescue_image_ref'] == IMAGES['rescue-img']
    assert 'Given-pw-42' not in caplog.text


def test_rescue_without_showing_the_password(shared_plane):
    conf = shared_plane.conf
    app = api_support.make_app(shared_plane)
    set_opts(conf, 'api', enable_instance_password=False)
    try:
        api = Api(app, token=api_support.new_project())
        server = api.active()
        resp = api.action(server['id'], {'rescue': None}, expect=(200,))
        assert resp.get_json() == {}
        record = _record(shared_plane, api.settled(server['id']))
        assert record['rescued'] and record['rescue_password_sha256']
    finally:
        conf.clear_override('enable_instance_password', group='api')


def test_a_conductor_capped_below_1_3_rescues_without_a_password(
        shared_plane):
    conf = shared_plane.conf
    set_opts(conf, 'upgrade_levels', conductor='1.1')
    try:
        app = wsgi.create_app(conf, api_service.make_client(
            conf, shared_plane.bus, shared_plane.statedb))
        api = Api(app, token=api_support.new_project())
        server = api.active()
        resp = api.action(server['id'], {'rescue': None}, expect=(200,))
        assert resp.get_json() == {}
        record = _record(shared_plane, api.settled(server['id']))
        assert record['rescued'] and record['rescue_password_sha256'] is None
    finally:
        conf.clear_override('conductor', group='upgrade_levels')


@pytest.mark.parametrize('body, field', [
    ({'rescue': {'adminPass': 7}}, 'rescue.adminPass'),
    ({'rescue': {'adminPass': None}}, 'rescue.adminPass'),
    ({'rescue': {'password': 'x'}}, 'rescue.password'),
    ({'rescue': {'rescue_image_ref': ''}}, 'rescue.rescue_image_ref'),
])
def test_a_bad_rescue_is_400_and_changes_nothing(api, body, field):
    server = api.active()
    resp = api.post('/servers/%s/action' % server['id'], body)
    assert resp.status_code == 400, resp.get_json()
    assert 'field/attribute %s.' % field in message(resp)
    after = api.server(server['id'])
    assert (after['status'], after['updated']) == ('ACTIVE',
                                                   server['updated'])
    assert len(_log(api, server['id'])) == 1


# --- createImage and createBackup -------------------------------------------------

IMAGE_ACTIONS = [
    {'createImage': {'name': 'snap', 'metadata': {'k': 'v'}}},
    {'createBackup': {'name': 'bk', 'backup_type': 'daily', 'rotation': 2}},
]


@pytest.mark.parametrize('body', IMAGE_ACTIONS, ids=lambda b: next(iter(b)))
def test_from_2_45_the_image_id_is_in_the_body(api, shared_plane, body):
    server = api.active()
    resp = api.post('/servers/%s/action' % server['id'], body,
                    version='2.45')
    assert resp.status_code == 202, resp.get_json()
    assert 'Location' not in resp.headers
    image_id = resp.get_json()['image_id']
    after = api.settled(server['id'])
    name = next(iter(body.values()))['name']
    # the driver made the image under that id; the action log says so
    assert _record(shared_plane, after)['snapshot_ids'][image_id] == name
    entry = _log(api, server['id'])[0]
    assert entry['tristate:result'] == 'success'
    assert entry['message'] == 'image %s (%s)' % (image_id, name)


@pytest.mark.parametrize('version', [NO_HEADER, '2.44'])
@pytest.mark.parametrize('body', IMAGE_ACTIONS, ids=lambda b: next(iter(b)))
def test_before_2_45_the_image_url_is_the_location(api, shared_plane, body,
                                                    version):
    server = api.active()
    resp = api.post('/servers/%s/action' % server['id'], body,
                    version=version)
    assert resp.status_code == 202
    assert not resp.get_data()
    location = resp.headers['Location']
    assert location.startswith('http://localhost/v2.1/images/')
    image_id = location.rsplit('/', 1)[1]
    after = api.settled(server['id'])
    assert image_id in _record(shared_plane, after)['snapshot_ids']


def test_a_backup_keeping_none_has_no_location(api):
    server = api.active()
    resp = api.post('/servers/%s/action' % server['id'], {'createBackup': {
        'name': 'bk', 'backup_type': 'daily', 'rotation': 0}})
    assert resp.status_code == 202
    assert 'Location' not in resp.headers
    api.settled(server['id'])


def test_each_image_gets_its_own_id(api):
    server = api.active()
    ids = []
    for _ in range(2):
        resp = api.post('/servers/%s/action' % server['id'],
                        {'createImage': {'name': 'same'}}, version='2.45')
        ids.append(resp.get_json()['image_id'])
        api.settled(server['id'])
    assert len(set(ids)) == 2


@pytest.mark.parametrize('body, field', [
    ({'createImage': {}}, 'createImage.name'),
    ({'createImage': {'name': ''}}, 'createImage.name'),
    ({'createImage': {'name': 'x', 'metadata': []}}, 'createImage.metadata'),
    ({'createBackup': {'name': 'b', 'backup_type': 'daily',
                       'rotation': -1}}, 'createBackup.rotation'),
    ({'createBackup': {'name': 'b', 'rotation': 1}},
     'createBackup.backup_type'),
])
def test_a_bad_image_request_is_400_and_changes_nothing(api, body, field):
    server = api.active()
    resp = api.post('/servers/%s/action' % server['id'], body,
                    version='2.45')
    assert resp.status_code == 400, resp.get_json()
    assert 'field/attribute %s.' % field in message(resp)
    assert len(_log(api, server['id'])) == 1
    assert api.server(server['id'])['updated'] == server['updated']

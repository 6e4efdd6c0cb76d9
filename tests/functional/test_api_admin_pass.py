"""``adminPass`` on create and rebuild (issue 24), through the API over the
shared plane: answered as Nova answers it (the request's, else a generated
one; none with ``[api] enable_instance_password`` false), delivered as
``admin_pass`` in the config drive's meta_data.json (a password given
makes the server's config drive; with ``config_drive: false`` it is a 400
that changes nothing; conductors capped below RPC 1.17 take none: a 503
for one given, none generated), and never stored in the database, the action log or
the logs."""

import json
import logging

import pytest

from api import service as api_service
from api import wsgi
from tests.functional import api_support
from tests.functional.api_support import IMAGE
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.functional.conftest import domain
from tests.functional.conftest import set_opts
from tests.unit.compute_agent.test_configdrive import read

SECRET = 'Tr1state-adm1n-pw'


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture
def user(app):
    return Api(app, token=api_support.new_project())


def _create(api, **fields):
    body = dict({'name': 'pw', 'flavorRef': 'tiny', 'imageRef': IMAGE},
                **fields)
    return api.post('/servers', {'server': body})


def _meta(shared_plane, uuid):
    host = shared_plane.statedb.get_instance(uuid)['host']
    path = domain(shared_plane, host, uuid)['config_drive']
    if path is None:
        return None
    return json.loads(read(path)[0]['openstack/latest/meta_data.json'])


def _nowhere_stored(shared_plane, uuid, password):
    row = shared_plane.statedb.get_instance(uuid)
    assert password not in json.dumps(row, default=str)
    actions = shared_plane.statedb.list_actions(uuid)
    assert password not in json.dumps(actions, default=str)


def test_a_given_password_is_answered_delivered_and_never_kept(
        shared_plane, user, caplog):
    caplog.set_level(logging.DEBUG)
    resp = _create(user, adminPass=SECRET)
    assert resp.status_code == 202, resp.get_json()
    created = resp.get_json()['server']
    assert created['adminPass'] == SECRET
    uuid = created['id']
    shown = user.settled(uuid)
    assert (shown['status'], shown['config_drive']) == ('ACTIVE', 'True')
    assert _meta(shared_plane, uuid)['admin_pass'] == SECRET
    _nowhere_stored(shared_plane, uuid, SECRET)
    assert SECRET not in caplog.text


def test_a_given_password_without_a_config_drive_is_refused(user):
    before = len(user.get('/servers').get_json()['servers'])
    resp = _create(user, adminPass=SECRET, config_drive=False)
    assert resp.status_code == 400
    assert 'server.adminPass' in message(resp)
    assert 'config drive' in message(resp)
    assert SECRET not in message(resp)
    assert len(user.get('/servers').get_json()['servers']) == before


def test_a_generated_password_goes_in_a_config_drive_the_server_has(
        shared_plane, user):
    resp = _create(user, config_drive=True)
    password = resp.get_json()['server']['adminPass']
    assert len(password) == shared_plane.conf.api.password_length
    uuid = resp.get_json()['server']['id']
    assert user.settled(uuid)['status'] == 'ACTIVE'
    assert _meta(shared_plane, uuid)['admin_pass'] == password
    _nowhere_stored(shared_plane, uuid, password)
    # without a drive it is answered, as Nova's, and makes none
    uuid = _create(user).get_json()['server']['id']
    assert user.settled(uuid)['config_drive'] == ''
    assert _meta(shared_plane, uuid) is None


def test_a_rebuild_delivers_a_given_password_in_a_new_config_drive(
        shared_plane, user):
    uuid = _create(user).get_json()['server']['id']
    assert user.settled(uuid)['status'] == 'ACTIVE'
    resp = user.post('/servers/%s/action' % uuid, {'rebuild': {
        'imageRef': IMAGE, 'adminPass': SECRET}})
    assert resp.status_code == 202, resp.get_json()
    assert resp.get_json()['server']['adminPass'] == SECRET
    shown = user.settled(uuid)
    assert (shown['status'], shown['config_drive']) == ('ACTIVE', 'True')
    assert _meta(shared_plane, uuid)['admin_pass'] == SECRET
    _nowhere_stored(shared_plane, uuid, SECRET)
    # the next rebuild generates another, written in the drive it keeps
    resp = user.post('/servers/%s/action' % uuid,
                     {'rebuild': {'imageRef': IMAGE}})
    again = resp.get_json()['server']['adminPass']
    assert again != SECRET
    assert user.settled(uuid)['status'] == 'ACTIVE'
    assert _meta(shared_plane, uuid)['admin_pass'] == again


def test_no_answer_carries_one_when_instance_passwords_are_off(
        shared_plane, user):
    set_opts(shared_plane.conf, 'api', enable_instance_password=False)
    try:
        resp = _create(user, config_drive=True)
        assert 'adminPass' not in resp.get_json()['server']
        uuid = resp.get_json()['server']['id']
        assert user.settled(uuid)['status'] == 'ACTIVE'
        assert 'admin_pass' not in _meta(shared_plane, uuid)
        # one the user gives still reaches the guest
        resp = user.post('/servers/%s/action' % uuid, {'rebuild': {
            'imageRef': IMAGE, 'adminPass': SECRET}})
        assert 'adminPass' not in resp.get_json()['server']
        assert user.settled(uuid)['status'] == 'ACTIVE'
        assert _meta(shared_plane, uuid)['admin_pass'] == SECRET
    finally:
        shared_plane.conf.clear_override('enable_instance_password',
                                         group='api')


def test_conductors_capped_below_1_17_take_no_password(shared_plane):
    conf = shared_plane.conf
    set_opts(conf, 'upgrade_levels', conductor='1.13')
    try:
        app = wsgi.create_app(conf, api_service.make_client(
            conf, shared_plane.bus, shared_plane.statedb))
        api = Api(app, token=api_support.new_project())
        resp = _create(api, adminPass=SECRET)
        assert resp.status_code == 503, resp.get_json()
        assert 'adminPass' in message(resp) and SECRET not in message(resp)
        resp = _create(api, config_drive=True)
        assert resp.status_code == 202, resp.get_json()
        assert 'adminPass' not in resp.get_json()['server']
    finally:
        conf.clear_override('conductor', group='upgrade_levels')

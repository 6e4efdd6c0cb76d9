"""``key_name``, ``user_data`` and ``config_drive`` on ``POST /servers``
(issue 24), through the API over the shared plane: stored on the server
and shown as Nova shows them; a key pair of another user, bad base64, user
data over 64 KiB and a config_drive that is no boolean are 400s naming the
field, and change nothing. The agent writes the config drive the fake
driver attaches, again on rebuild, and removes it with the server."""

import base64
import json
import os

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from compute_agent import configdrive
from tests.functional import api_support
from tests.functional.api_support import IMAGE
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.functional.conftest import domain
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_for
from tests.unit.compute_agent.test_configdrive import read


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture
def user(app):
    return Api(app, token=api_support.new_project())


def public_key():
    return ed25519.Ed25519PrivateKey.generate().public_key().public_bytes(
        serialization.Encoding.OpenSSH,
        serialization.PublicFormat.OpenSSH).decode()


def _create(api, **fields):
    body = dict({'name': 'guest', 'flavorRef': 'tiny', 'imageRef': IMAGE},
                **fields)
    return api.post('/servers', {'server': body})


def test_key_user_data_and_config_drive_are_stored_and_shown(app, user):
    key = public_key()
    assert user.post('/os-keypairs', {'keypair': {
        'name': 'mykey', 'public_key': key}}).status_code == 201
    data = base64.b64encode(b'#!/bin/sh\necho hi\n').decode()
    resp = _create(user, key_name='mykey', user_data=data,
                   config_drive=True)
    assert resp.status_code == 202, resp.get_json()
    uuid = resp.get_json()['server']['id']
    shown = user.server(uuid, version='2.1')
    assert (shown['key_name'], shown['config_drive']) == ('mykey', 'True')
    admin = Api(app, token=api_support.ADMIN_TOKEN)
    assert admin.server(uuid, version='2.3')[
        'OS-EXT-SRV-ATTR:user_data'] == data
    # the server keeps its key when the key pair goes
    assert user.delete('/os-keypairs/mykey').status_code == 204
    assert user.server(uuid)['key_name'] == 'mykey'
    assert user.get('/servers/detail?key_name=mykey',
                    version='2.83').get_json()['servers'][0]['id'] == uuid
    row = app.extensions['tristate'].client.statedb.get_instance(uuid)
    assert row['key_data'] == key


def test_a_server_without_them_shows_none(user):
    resp = _create(user, config_drive=False)
    shown = user.server(resp.get_json()['server']['id'])
    assert (shown['key_name'], shown['config_drive']) == (None, '')


def test_force_config_drive_gives_every_server_one(shared_plane, user):
    set_opts(shared_plane.conf, 'compute', force_config_drive=True)
    try:
        resp = _create(user)
    finally:
        set_opts(shared_plane.conf, 'compute', force_config_drive=False)
    assert user.server(resp.get_json()['server']['id'])[
        'config_drive'] == 'True'


@pytest.mark.parametrize('fields,field,why', [
    ({'key_name': 'nobody-has-it'}, 'key_name', 'Invalid key_name'),
    ({'user_data': 'not base64!'}, 'user_data', 'not valid base64'),
    ({'user_data': base64.b64encode(b'x' * 65537).decode()}, 'user_data',
     'the limit is 65536 bytes'),
    ({'config_drive': 'maybe'}, 'config_drive', 'must be a boolean'),
])
def test_bad_guest_access_is_a_400_naming_the_field(user, fields, field,
                                                    why):
    before = user.ids()
    resp = _create(user, **fields)
    assert resp.status_code == 400, resp.get_json()
    assert 'server.%s' % field in message(resp) and why in message(resp)
    assert user.ids() == before


def test_64_kib_of_user_data_is_accepted(user):
    data = base64.b64encode(b'x' * 65536).decode()
    assert _create(user, user_data=data).status_code == 202


def test_another_user_s_key_pair_cannot_be_named(app, user):
    assert user.post('/os-keypairs', {'keypair': {
        'name': 'theirs', 'public_key': public_key()}}).status_code == 201
    other = Api(app, token=api_support.new_project())
    resp = _create(other, key_name='theirs')
    assert resp.status_code == 400 and 'server.key_name' in message(resp)


def test_the_agent_writes_the_drive_rebuilds_it_and_removes_it(
        shared_plane, user):
    data = base64.b64encode(b'first boot').decode()
    resp = _create(user, user_data=data, config_drive='true',
                   metadata={'role': 'db'})
    uuid = resp.get_json()['server']['id']
    assert user.settled(uuid)['status'] == 'ACTIVE'
    host = shared_plane.statedb.get_instance(uuid)['host']
    path = domain(shared_plane, host, uuid)['config_drive']
    assert path == configdrive.path(shared_plane.conf, host, uuid)
    files, _ = read(path)
    first = json.loads(files['openstack/latest/meta_data.json'])
    assert (first['uuid'], first['meta']) == (uuid, {'role': 'db'})
    assert files['openstack/latest/user_data'] == b'first boot'
    # a rebuild writes it again (a new random seed) and attaches it again
    user.act(uuid, {'rebuild': {'imageRef': IMAGE}})
    again = json.loads(read(path)[0]['openstack/latest/meta_data.json'])
    assert again['random_seed'] != first['random_seed']
    assert domain(shared_plane, host, uuid)['config_drive'] == path
    assert user.delete('/servers/%s' % uuid).status_code == 204
    wait_for(lambda: not os.path.exists(path),
             what='the config drive removed with its server')


def test_a_server_without_a_drive_gets_none_written(shared_plane, user):
    uuid = _create(user).get_json()['server']['id']
    assert user.settled(uuid)['status'] == 'ACTIVE'
    host = shared_plane.statedb.get_instance(uuid)['host']
    assert domain(shared_plane, host, uuid)['config_drive'] is None
    assert not os.path.exists(configdrive.path(shared_plane.conf, host,
                                               uuid))


def test_a_server_with_a_drive_is_live_migrated_with_it(shared_plane, app,
                                                       user):
    """Issue 25: its config drive goes with it, the very same files."""
    uuid = _create(user, config_drive=True).get_json()['server']['id']
    assert user.settled(uuid)['status'] == 'ACTIVE'
    before = _drive(shared_plane, uuid)
    source = shared_plane.statedb.get_instance(uuid)['host']
    admin = Api(app, token=api_support.ADMIN_TOKEN)
    resp = admin.post('/servers/%s/action' % uuid, {'os-migrateLive': {
        'host': None, 'block_migration': 'auto'}})
    assert resp.status_code == 202, resp.get_json()
    assert user.settled(uuid)['status'] == 'ACTIVE'
    assert shared_plane.statedb.get_instance(uuid)['host'] != source
    assert _drive(shared_plane, uuid) == before


def _drive(shared_plane, uuid):
    host = shared_plane.statedb.get_instance(uuid)['host']
    files, _ = read(domain(shared_plane, host, uuid)['config_drive'])
    return files


def test_a_rebuild_takes_a_new_key_and_user_data_as_nova(shared_plane,
                                                        user):
    first, second = public_key(), public_key()
    for name, key in (('first', first), ('second', second)):
        assert user.post('/os-keypairs', {'keypair': {
            'name': name, 'public_key': key}}).status_code == 201
    resp = _create(user, key_name='first', config_drive=True,
                   user_data=base64.b64encode(b'one').decode())
    uuid = resp.get_json()['server']['id']
    assert user.settled(uuid)['status'] == 'ACTIVE'
    resp = user.post('/servers/%s/action' % uuid, {'rebuild': {
        'imageRef': IMAGE, 'key_name': 'second',
        'user_data': base64.b64encode(b'two').decode()}}, version='2.57')
    assert resp.status_code == 202, resp.get_json()
    answer = resp.get_json()['server']
    assert (answer['key_name'], base64.b64decode(answer['user_data'])) == (
        'second', b'two')
    assert user.settled(uuid)['key_name'] == 'second'
    files = _drive(shared_plane, uuid)
    meta = json.loads(files['openstack/latest/meta_data.json'])
    assert meta['public_keys'] == {'second': second}
    assert files['openstack/latest/user_data'] == b'two'
    # null removes them
    resp = user.post('/servers/%s/action' % uuid, {'rebuild': {
        'imageRef': IMAGE, 'key_name': None, 'user_data': None}},
        version='2.57')
    assert resp.status_code == 202, resp.get_json()
    assert user.settled(uuid)['key_name'] is None
    files = _drive(shared_plane, uuid)
    assert json.loads(files['openstack/latest/meta_data.json'])[
        'public_keys'] == {}
    assert 'openstack/latest/user_data' not in files


@pytest.mark.parametrize('field,value,version,why', [
    ('key_name', 'nobody-has-it', '2.54', 'Invalid key_name'),
    ('user_data', 'not base64!', '2.57', 'not valid base64'),
    ('key_name', 'mykey', '2.53', 'needs microversion 2.54'),
    ('user_data', 'aGk=', '2.56', 'needs microversion 2.57'),
])
def test_a_rebuild_refuses_a_bad_key_or_user_data(
        user, field, value, version, why):
    uuid = _create(user).get_json()['server']['id']
    assert user.settled(uuid)['status'] == 'ACTIVE'
    resp = user.post('/servers/%s/action' % uuid, {'rebuild': {
        'imageRef': IMAGE, field: value}}, version=version)
    assert resp.status_code == 400
    assert 'rebuild.%s' % field in message(resp) and why in message(resp)
    assert user.server(uuid)['OS-EXT-STS:task_state'] is None

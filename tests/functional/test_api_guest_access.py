"""``key_name``, ``user_data`` and ``config_drive`` on ``POST /servers``
(issue 24), through the API over the shared plane: stored on the server
and shown as Nova shows them; a key pair of another user, bad base64, user
data over 64 KiB and a config_drive that is no boolean are 400s naming the
field, and change nothing."""

import base64

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from tests.functional import api_support
from tests.functional.api_support import IMAGE
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.functional.conftest import set_opts


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

"""A rebuild that named a key pair (``key_name``, 2.54) answered without
``adminPass`` and delivered none: the rebuild's guest parameters were
made first with the password (and the config drive it needs), then
replaced whole by the key pair's. Nova answers every rebuild with the
password while ``[api] enable_instance_password`` is on, and Tempest's
rebuild schema requires it: ``ServerShowV254Test.test_rebuild_server``
failed on it in the full Tempest run of the fourteenth session.

Fixed: the key pair's parameters are added to the password's
(api/routes/server_actions.py, ``_rebuild_guest``)."""

import json

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from tests.functional import api_support
from tests.functional.api_support import IMAGE
from tests.functional.api_support import Api
from tests.functional.conftest import domain
from tests.unit.compute_agent.test_configdrive import read

SECRET = 'Rebu1lt-with-a-key'


def test_a_rebuild_with_a_key_answers_and_delivers_the_password(
        shared_plane):
    user = Api(api_support.make_app(shared_plane),
               token=api_support.new_project())
    key = ed25519.Ed25519PrivateKey.generate().public_key().public_bytes(
        serialization.Encoding.OpenSSH,
        serialization.PublicFormat.OpenSSH).decode()
    assert user.post('/os-keypairs', {'keypair': {
        'name': 'rebuilt', 'public_key': key}}).status_code == 201
    uuid = user.post('/servers', {'server': {
        'name': 'pw', 'flavorRef': 'tiny', 'imageRef': IMAGE}}).get_json()[
            'server']['id']
    assert user.settled(uuid)['status'] == 'ACTIVE'
    resp = user.post('/servers/%s/action' % uuid, {'rebuild': {
        'imageRef': IMAGE, 'key_name': 'rebuilt', 'adminPass': SECRET}},
        version='2.54')
    assert resp.status_code == 202, resp.get_json()
    answer = resp.get_json()['server']
    assert (answer['adminPass'], answer['key_name']) == (SECRET, 'rebuilt')
    assert user.settled(uuid)['status'] == 'ACTIVE'
    host = shared_plane.statedb.get_instance(uuid)['host']
    meta = json.loads(read(domain(shared_plane, host, uuid)[
        'config_drive'])[0]['openstack/latest/meta_data.json'])
    assert meta['admin_pass'] == SECRET
    assert meta['public_keys'] == {'rebuilt': key}

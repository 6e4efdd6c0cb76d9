"""``os-keypairs`` as Nova answers it (issue 24), through the API over the
shared plane: generated and imported key pairs at every microversion
where the bodies change (2.1, 2.2 type, 2.10 user_id, 2.35 paging, 2.92
import only), each body checked with Tempest's own response schemas and
check; keys that do not parse, names Nova refuses, another user's key
pair, the per-user quota."""

import hashlib
import base64
import uuid as uuidlib

import jsonschema
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from tempest.lib.services.compute import keypairs_client

from common import keypairs as crypto
from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.functional.test_api_response_schemas import check
from tests.functional.test_api_response_schemas import schema_of

CLIENT = keypairs_client.KeyPairsClient


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture
def user(app):
    return Api(app, token=api_support.new_project())


def _name():
    return 'kp-%s' % uuidlib.uuid4().hex[:8]


def _ed25519():
    key = ed25519.Ed25519PrivateKey.generate()
    line = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH,
        serialization.PublicFormat.OpenSSH).decode()
    blob = base64.b64decode(line.split()[1])
    digest = hashlib.md5(blob).hexdigest()
    return line + ' me@laptop', ':'.join(
        digest[i:i + 2] for i in range(0, 32, 2))


def _create(api, body, version, status):
    resp = api.post('/os-keypairs', {'keypair': body}, version=version)
    assert resp.status_code == status, resp.get_json()
    return check(schema_of(CLIENT, 'create_keypair', version), resp)[
        'keypair']


@pytest.mark.parametrize('version,created,deleted', [
    ('2.1', 200, 202), ('2.2', 201, 204), ('2.91', 201, 204)])
def test_a_generated_key_pair_is_answered_once_with_its_private_key(
        user, version, created, deleted):
    name = _name()
    made = _create(user, {'name': name}, version, created)
    assert made['private_key'].startswith('-----BEGIN RSA PRIVATE KEY')
    key = serialization.load_pem_private_key(made['private_key'].encode(),
                                             None)
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH,
        serialization.PublicFormat.OpenSSH).decode()
    assert made['public_key'].split()[:2] == public.split()
    assert made['fingerprint'] == crypto.ssh_fingerprint(public)
    assert ('type' in made) == (version != '2.1')
    shown = check(schema_of(CLIENT, 'get_keypair', version), user.get(
        '/os-keypairs/%s' % name, version=version))['keypair']
    assert 'private_key' not in shown
    assert (shown['public_key'], shown['fingerprint'], shown['deleted']) == (
        made['public_key'], made['fingerprint'], False)
    listed = check(schema_of(CLIENT, 'list_keypairs', version), user.get(
        '/os-keypairs', version=version))['keypairs']
    assert [k['keypair']['name'] for k in listed] == [name]
    resp = user.delete('/os-keypairs/%s' % name, version=version)
    check(schema_of(CLIENT, 'delete_keypair', version), resp)
    assert resp.status_code == deleted
    assert user.get('/os-keypairs/%s' % name).status_code == 404


def test_an_imported_key_keeps_its_text_and_gets_nova_s_fingerprint(user):
    line, fingerprint = _ed25519()
    made = _create(user, {'name': 'mine', 'public_key': line + '\n'},
                   '2.92', 201)
    assert 'private_key' not in made
    assert (made['public_key'], made['fingerprint'], made['type']) == (
        line, fingerprint, 'ssh')
    shown = user.get('/os-keypairs/mine', version='2.92').get_json()
    assert shown['keypair']['user_id'] == user.token.split(':')[0]


def test_from_2_92_a_key_pair_must_be_imported(user):
    resp = user.post('/os-keypairs', {'keypair': {'name': _name()}},
                     version='2.92')
    assert resp.status_code == 400
    assert 'public_key' in message(resp)
    # and a name may hold @ and . from 2.92 only
    line, _ = _ed25519()
    body = {'keypair': {'name': 'me@host.example', 'public_key': line}}
    assert user.post('/os-keypairs', body, version='2.91').status_code == 400
    assert user.post('/os-keypairs', body, version='2.92').status_code == 201


def test_an_x509_certificate_is_imported_or_generated_from_2_2(user):
    made = _create(user, {'name': _name(), 'type': 'x509'}, '2.2', 201)
    cert = x509.load_pem_x509_certificate(made['public_key'].encode())
    assert made['fingerprint'] == cert.fingerprint(hashes.SHA1()).hex(':')
    imported = _create(user, {'name': _name(), 'type': 'x509',
                              'public_key': made['public_key']}, '2.2', 201)
    assert imported['fingerprint'] == made['fingerprint']
    resp = user.post('/os-keypairs', {'keypair': {
        'name': _name(), 'type': 'x509'}}, version='2.1')
    assert resp.status_code == 400 and 'type' in message(resp)


@pytest.mark.parametrize('key_type,public_key,expected', [
    ('ssh', 'ssh-rsa not-base64!', 'not an OpenSSH public key'),
    ('ssh', 'hello', 'not an OpenSSH public key'),
    ('x509', 'ssh-rsa AAAA', 'not a PEM X.509 certificate'),
])
def test_a_key_that_does_not_parse_is_a_400_naming_public_key(
        user, key_type, public_key, expected):
    name = _name()
    resp = user.post('/os-keypairs', {'keypair': {
        'name': name, 'type': key_type, 'public_key': public_key}},
        version='2.2')
    assert resp.status_code == 400
    assert 'keypair.public_key' in message(resp)
    assert expected in message(resp)
    assert user.get('/os-keypairs/%s' % name).status_code == 404


@pytest.mark.parametrize('name', ['', ' lead', 'trail ', 'a/b', 'x' * 256])
def test_a_name_nova_refuses_is_a_400_naming_the_field(user, name):
    line, _ = _ed25519()
    resp = user.post('/os-keypairs', {'keypair': {
        'name': name, 'public_key': line}})
    assert resp.status_code == 400
    assert 'keypair.name' in message(resp)


def test_a_name_taken_is_a_409(user):
    line, _ = _ed25519()
    body = {'keypair': {'name': 'twice', 'public_key': line}}
    assert user.post('/os-keypairs', body).status_code == 201
    resp = user.post('/os-keypairs', body)
    assert resp.status_code == 409
    assert "Key pair 'twice' already exists" in message(resp)


def test_another_user_s_key_pair_is_not_visible(app, user):
    line, _ = _ed25519()
    user.post('/os-keypairs', {'keypair': {'name': 'private',
                                           'public_key': line}})
    other = Api(app, token=api_support.new_project())
    assert other.get('/os-keypairs').get_json()['keypairs'] == []
    assert other.get('/os-keypairs/private').status_code == 404
    assert other.delete('/os-keypairs/private').status_code == 404
    # naming the user is an admin's right (2.10)
    owner = user.token.split(':')[0]
    resp = other.get('/os-keypairs?user_id=%s' % owner, version='2.10')
    assert resp.status_code == 403
    admin = Api(app, token=api_support.ADMIN_TOKEN)
    seen = admin.get('/os-keypairs/private?user_id=%s' % owner,
                     version='2.10').get_json()['keypair']
    assert seen['user_id'] == owner
    # below 2.10 user_id is no parameter: the admin's own key pairs
    assert admin.get('/os-keypairs/private?user_id=%s' % owner,
                     version='2.9').status_code == 404


def test_an_admin_creates_a_key_pair_for_a_user_from_2_10(app, user):
    owner = user.token.split(':')[0]
    admin = Api(app, token=api_support.ADMIN_TOKEN)
    line, _ = _ed25519()
    made = _create(admin, {'name': 'given', 'public_key': line,
                           'user_id': owner}, '2.10', 201)
    assert made['user_id'] == owner
    assert [k['keypair']['name'] for k in user.get(
        '/os-keypairs').get_json()['keypairs']] == ['given']
    resp = user.post('/os-keypairs', {'keypair': {
        'name': 'x', 'public_key': line, 'user_id': 'someone-else'}},
        version='2.10')
    assert resp.status_code == 403


def test_the_list_pages_by_name_from_2_35(user):
    line, _ = _ed25519()
    for name in ('c', 'a', 'b'):
        user.post('/os-keypairs', {'keypair': {'name': name,
                                               'public_key': line}})
    body = user.get('/os-keypairs?limit=2', version='2.35').get_json()
    assert [k['keypair']['name'] for k in body['keypairs']] == ['a', 'b']
    (link,) = body['keypairs_links']
    assert link['rel'] == 'next' and 'marker=b' in link['href']
    schema = schema_of(CLIENT, 'list_keypairs', '2.35')['response_body']
    schema = dict(schema, properties=dict(
        schema['properties'], keypairs_links={'type': 'array'}))
    jsonschema.validate(body, schema)
    rest = user.get('/os-keypairs?limit=2&marker=b',
                    version='2.35').get_json()
    assert [k['keypair']['name'] for k in rest['keypairs']] == ['c']
    assert 'keypairs_links' not in rest
    # before 2.35 no paging: every key pair
    old = user.get('/os-keypairs?limit=1', version='2.34').get_json()
    assert len(old['keypairs']) == 3 and 'keypairs_links' not in old
    resp = user.get('/os-keypairs?marker=zz', version='2.35')
    assert resp.status_code == 400 and 'zz' in message(resp)
    resp = user.get('/os-keypairs?sort=name', version='2.75')
    assert resp.status_code == 400 and 'sort' in message(resp)


def test_a_user_holds_at_most_key_pairs_of_the_quota(app, user):
    admin = Api(app, token=api_support.ADMIN_TOKEN)
    project = user.token.split(':')[1]
    quota_path = '/os-quota-sets/%s' % project
    assert admin.put(quota_path, {'quota_set': {
        'key_pairs': 2}}).status_code == 200
    try:
        line, _ = _ed25519()
        for name in ('one', 'two'):
            assert user.post('/os-keypairs', {'keypair': {
                'name': name, 'public_key': line}}).status_code == 201
        resp = user.post('/os-keypairs', {'keypair': {
            'name': 'three', 'public_key': line}})
        assert resp.status_code == 403
        assert 'too many key pairs' in message(resp)
        assert user.get(quota_path).get_json()['quota_set']['key_pairs'] == 2
        limits = user.get('/limits').get_json()['limits']['absolute']
        assert limits['maxTotalKeypairs'] == 2
        # the project's value wins over the default quota class's ...
        assert admin.put('/os-quota-class-sets/default', {
            'quota_class_set': {'key_pairs': 5}}).status_code == 200
        assert user.post('/os-keypairs', {'keypair': {
            'name': 'three', 'public_key': line}}).status_code == 403
        # ... which is the project's once its own is gone
        assert admin.delete(quota_path).status_code == 202
        assert user.post('/os-keypairs', {'keypair': {
            'name': 'three', 'public_key': line}}).status_code == 201
        assert user.get(quota_path).get_json()['quota_set'][
            'key_pairs'] == 5
    finally:
        admin.put('/os-quota-class-sets/default', {
            'quota_class_set': {'key_pairs': 100}})

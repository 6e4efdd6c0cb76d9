"""Key pairs and the config drive through the real ``openstack`` command
(issue 24), on the shared plane's API over HTTP with fake hypervisors:
``keypair create`` (generated, and imported with ``--public-key``),
``list``, ``show``, ``delete``; ``server create --key-name --user-data
FILE --config-drive True``, whose config drive the agent wrote is read
back from the ISO file by file; the drive goes with the server."""

import json
import os
import subprocess
import uuid as uuidlib

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from api import service as api_service
from common import keypairs as crypto
from compute_agent import configdrive
from tests.functional import api_support
from tests.functional.conftest import domain
from tests.functional.conftest import wait_for
from tests.functional.test_openstackclient import OPENSTACK
from tests.images_support import IMAGE
from tests.unit.compute_agent.test_configdrive import read

SUFFIX = uuidlib.uuid4().hex[:8]
USER = 'user-%s' % SUFFIX
PROJECT = 'keys-%s' % SUFFIX
CLOUD = """\
  {name}:
    auth_type: admin_token
    auth: {{endpoint: "{url}/v2.1", token: "{token}"}}
    region_name: RegionOne
    identity_api_version: 3
    identity_endpoint_override: {url}/identity/v3
    compute_endpoint_override: {url}/v2.1
    image_endpoint_override: {url}/image
"""
USER_DATA = b'#!/bin/sh\necho "guest access" > /run/marker\n'


@pytest.fixture(scope='module')
def url(shared_plane):
    conf = api_support.configure(shared_plane.conf)
    client = api_service.make_client(conf, shared_plane.bus,
                                     shared_plane.statedb)
    server = api_service.serve(conf, client, host='127.0.0.1', port=0)
    yield server.url
    server.stop()


@pytest.fixture(scope='module')
def home(tmp_path_factory, url):
    home = tmp_path_factory.mktemp('osc-keys')
    tokens = {'member': '%s:%s' % (USER, PROJECT),
              'other': 'other-%s:other-%s' % (SUFFIX, SUFFIX)}
    (home / 'clouds.yaml').write_text('clouds:\n' + ''.join(
        CLOUD.format(name=name, url=url, token=token)
        for name, token in tokens.items()))
    (home / 'user-data.sh').write_bytes(USER_DATA)
    return home


def osc(home, *args, cloud='member', ok=True, parse=True):
    env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    env.update(OS_CLIENT_CONFIG_FILE=str(home / 'clouds.yaml'),
               HOME=str(home))
    argv = [OPENSTACK, '--os-cloud', cloud, *args]
    if parse:
        argv += ['-f', 'json']
    done = subprocess.run(argv, env=env, cwd=home, capture_output=True,
                          text=True, timeout=120, check=False)
    if not ok:
        assert done.returncode != 0, (args, done.stdout)
        return done.stderr
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    if not parse:
        return done.stdout
    lines = done.stdout.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line[:1] in '{[')
    return json.loads(''.join(lines[start:]))


@pytest.fixture(scope='module')
def generated(home):
    """``keypair create --private-key FILE``: the private key on disk."""
    return osc(home, 'keypair', 'create', '--private-key',
               str(home / 'gen.pem'), 'gen')


@pytest.fixture(scope='module')
def imported(home):
    """``keypair create --public-key FILE`` of a key made here."""
    line = ed25519.Ed25519PrivateKey.generate().public_key().public_bytes(
        serialization.Encoding.OpenSSH,
        serialization.PublicFormat.OpenSSH).decode()
    (home / 'mine.pub').write_text(line + ' me@laptop\n')
    return osc(home, 'keypair', 'create', '--public-key',
               str(home / 'mine.pub'), 'mine'), line


def test_keypair_create_generates_a_key(home, generated):
    # openstackclient makes the key and imports its public half
    key = serialization.load_ssh_private_key(
        (home / 'gen.pem').read_bytes(), None)
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH,
        serialization.PublicFormat.OpenSSH).decode()
    assert generated['name'] == 'gen'
    assert generated['fingerprint'] == crypto.ssh_fingerprint(public)
    shown = osc(home, 'keypair', 'show', 'gen')
    assert shown['fingerprint'] == generated['fingerprint']
    assert shown['user_id'] == USER


def test_keypair_create_imports_a_public_key(home, imported):
    made, line = imported
    assert made['fingerprint'] == crypto.ssh_fingerprint(line)
    assert osc(home, 'keypair', 'show', '--public-key', 'mine',
               parse=False).strip() == line + ' me@laptop'


def test_keypair_list_shows_the_user_s_own_only(home, generated, imported):
    names = {k['Name'] for k in osc(home, 'keypair', 'list')}
    assert names == {'gen', 'mine'}
    assert osc(home, 'keypair', 'list', cloud='other') == []
    assert 'gen' in osc(home, 'keypair', 'show', 'gen', cloud='other',
                        ok=False)


def test_a_key_that_does_not_parse_is_refused(home):
    (home / 'bad.pub').write_text('ssh-rsa this-is-no-key\n')
    err = osc(home, 'keypair', 'create', '--public-key',
              str(home / 'bad.pub'), 'bad', ok=False)
    assert 'keypair.public_key is not an OpenSSH public key' in err


def test_server_create_with_key_user_data_and_config_drive(
        shared_plane, home, imported):
    _, line = imported
    server = osc(home, 'server', 'create', '--image', IMAGE, '--flavor',
                 'tiny', '--key-name', 'mine', '--user-data',
                 str(home / 'user-data.sh'), '--config-drive', 'True',
                 '--property', 'role=web', '--wait', 'keyed vm')
    assert server['status'] == 'ACTIVE'
    assert server['key_name'] == 'mine'
    assert server['config_drive'] == 'True'
    host = shared_plane.statedb.get_instance(server['id'])['host']
    path = domain(shared_plane, host, server['id'])['config_drive']
    assert path == configdrive.path(shared_plane.conf, host, server['id'])
    files, label = read(path)
    assert label == 'config-2'
    meta = json.loads(files['openstack/latest/meta_data.json'])
    assert (meta['uuid'], meta['name'], meta['hostname'], meta['meta'],
            meta['project_id']) == (server['id'], 'keyed vm', 'keyed-vm',
                                    {'role': 'web'}, PROJECT)
    assert meta['public_keys'] == {'mine': line + ' me@laptop'}
    assert files['openstack/latest/user_data'] == USER_DATA
    assert files['ec2/latest/user-data'] == USER_DATA
    assert json.loads(files['ec2/latest/meta-data.json'])['public-keys'] == {
        '0': {'openssh-key': line + ' me@laptop'}}
    assert json.loads(files['openstack/latest/network_data.json']) == {
        'links': [], 'networks': [], 'services': []}
    # the drive goes with the server
    osc(home, 'server', 'delete', '--wait', server['id'], parse=False)
    wait_for(lambda: not os.path.exists(path),
             what='the config drive removed with its server')


def test_server_create_refuses_an_unknown_key_name(home):
    err = osc(home, 'server', 'create', '--image', IMAGE, '--flavor', 'tiny',
              '--key-name', 'nobody', 'no-key', ok=False)
    assert 'server.key_name' in err or 'nobody' in err


def test_keypair_delete(home, generated):
    osc(home, 'keypair', 'delete', 'gen', parse=False)
    assert 'gen' not in {k['Name'] for k in osc(home, 'keypair', 'list')}


def test_user_data_over_64_kib_is_refused(home):
    (home / 'big').write_bytes(b'x' * 65537)
    err = osc(home, 'server', 'create', '--image', IMAGE, '--flavor', 'tiny',
              '--user-data', str(home / 'big'), 'too-big', ok=False)
    assert 'server.user_data' in err and '65536 bytes' in err

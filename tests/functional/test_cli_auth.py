"""How the ``tristate`` command line finds who it is and where the APIs
are, as openstackclient does: a ``clouds.yaml`` cloud (``--os-cloud``),
``OS_*`` variables, keystoneauth's ``password`` and
``v3applicationcredential`` plugins with the endpoints from a Keystone
catalog (a stand-in Keystone, :mod:`tests.functional.fake_keystone`, whose
tokens noauth reads as ``USER:PROJECT``), endpoint overrides, and the
messages when something is missing. Against ``tristate-all`` as a separate
process, without ``TRISTATE_ENDPOINT`` for the tests that must not use it.
"""

import json
import subprocess
import sys

import pytest

from tests.functional.fake_keystone import FakeKeystone
from tests.functional.test_cli import COMMAND_TIMEOUT
from tests.functional.test_cli import AllInOne
from tests.functional.test_cli import _disk


@pytest.fixture(scope='module')
def tristate(tmp_path_factory):
    plane = AllInOne(tmp_path_factory.mktemp('tristate-all-auth'))
    try:
        plane.start()
        plane.json('--os-token', 'admin:admin', 'image', 'create', 'pub',
                   '--public', '--file', _disk(plane.state_dir / 'pub.raw'))
        plane.json('--os-token', 'kuser:kproj', 'server', 'create', 'k1',
                   '--flavor', 'tiny', '--image', 'pub', '--wait')
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def keystone(tristate):
    fake = FakeKeystone().start()
    fake.register('compute', tristate.endpoint + '/v2.1')
    fake.register('image', tristate.endpoint + '/image')
    yield fake
    fake.stop()


def run(tristate, tmp_path, *args, env=None, ok=True):
    """``tristate ARGS`` with only ``env`` (no TRISTATE_*/OS_* of ours)."""
    full = {k: v for k, v in tristate.env.items()
            if not k.startswith(('TRISTATE_', 'OS_'))}
    full.update(HOME=str(tmp_path), **(env or {}))
    done = subprocess.run([sys.executable, '-m', 'api.cli', *args],
                          env=full, capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT, check=False)
    if ok:
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


def names(done):
    return [s['Name'] for s in json.loads(done.stdout)]


def test_a_clouds_yaml_cloud_with_admin_token(tristate, tmp_path):
    (tmp_path / 'clouds.yaml').write_text(
        'clouds:\n  plane:\n    auth_type: admin_token\n'
        '    auth: {endpoint: "%s/v2.1", token: "kuser:kproj"}\n'
        % tristate.endpoint)
    env = {'OS_CLIENT_CONFIG_FILE': str(tmp_path / 'clouds.yaml')}
    listed = run(tristate, tmp_path, '--os-cloud', 'plane', 'server', 'list',
                 '-f', 'json', env=env)
    assert names(listed) == ['k1']
    # OS_CLOUD does the same; the image API is /image of that endpoint
    env['OS_CLOUD'] = 'plane'
    images = run(tristate, tmp_path, 'image', 'list', '-f', 'json', env=env)
    assert [i['Name'] for i in json.loads(images.stdout)] == ['pub']
    quota = run(tristate, tmp_path, 'quota', 'show', '-f', 'json', env=env)
    assert json.loads(quota.stdout)['project'] == 'kproj'
    unknown = run(tristate, tmp_path, '--os-cloud', 'nowhere', 'server',
                  'list', env=env, ok=False)
    assert unknown.returncode == 1 and 'nowhere' in unknown.stderr


def test_os_variables(tristate, tmp_path):
    env = {'OS_AUTH_TYPE': 'admin_token',
           'OS_ENDPOINT': tristate.endpoint, 'OS_TOKEN': 'kuser:kproj'}
    assert names(run(tristate, tmp_path, 'server', 'list', '-f', 'json',
                     env=env)) == ['k1']
    # another project sees none of them
    other = dict(env, OS_TOKEN='someone:elsewhere')
    assert names(run(tristate, tmp_path, 'server', 'list', '-f', 'json',
                     env=other)) == []


def test_todays_options_still_work(tristate, tmp_path):
    env = {'TRISTATE_ENDPOINT': tristate.endpoint,
           'TRISTATE_TOKEN': 'kuser:kproj'}
    assert names(run(tristate, tmp_path, 'server', 'list', '-f', 'json',
                     env=env)) == ['k1']
    assert names(run(tristate, tmp_path, '--os-endpoint', tristate.endpoint,
                     '--os-token', 'kuser:kproj', 'server', 'list', '-f',
                     'json')) == ['k1']


def test_keystone_password_and_the_catalog(tristate, tmp_path, keystone):
    creds = ('--os-auth-type', 'password', '--os-auth-url', keystone.url,
             '--os-username', 'kuser', '--os-password', 'secret',
             '--os-project-name', 'kproj', '--os-user-domain-id', 'default',
             '--os-project-domain-id', 'default')
    assert names(run(tristate, tmp_path, *creds, 'server', 'list', '-f',
                     'json')) == ['k1']
    assert keystone.auth_methods[-1] == 'password'
    images = run(tristate, tmp_path, *creds, 'image', 'list', '-f', 'json')
    assert [i['Name'] for i in json.loads(images.stdout)] == ['pub']
    # the project is the token's scope
    quota = run(tristate, tmp_path, *creds, 'quota', 'show', '-f', 'json')
    assert json.loads(quota.stdout)['project'] == 'kproj'
    # the same from OS_* variables, as openstackclient reads them
    env = {'OS_AUTH_URL': keystone.url, 'OS_USERNAME': 'kuser',
           'OS_PASSWORD': 'secret', 'OS_PROJECT_NAME': 'kproj',
           'OS_USER_DOMAIN_ID': 'default', 'OS_PROJECT_DOMAIN_ID': 'default'}
    assert names(run(tristate, tmp_path, 'server', 'list', '-f', 'json',
                     env=env)) == ['k1']


def test_keystone_application_credential(tristate, tmp_path, keystone):
    env = {'OS_AUTH_TYPE': 'v3applicationcredential',
           'OS_AUTH_URL': keystone.url,
           'OS_APPLICATION_CREDENTIAL_ID': 'cred-id',
           'OS_APPLICATION_CREDENTIAL_SECRET': 'cred-secret'}
    assert names(run(tristate, tmp_path, 'server', 'list', '-f', 'json',
                     env=env)) == ['k1']
    assert keystone.auth_methods[-1] == 'application_credential'


def test_a_catalog_without_the_service_says_what_to_do(tristate, tmp_path):
    fake = FakeKeystone().start()
    try:
        fake.register('compute', tristate.endpoint + '/v2.1')
        env = {'OS_AUTH_URL': fake.url, 'OS_USERNAME': 'kuser',
               'OS_PASSWORD': 'secret', 'OS_PROJECT_NAME': 'kproj',
               'OS_USER_DOMAIN_ID': 'default',
               'OS_PROJECT_DOMAIN_ID': 'default'}
        done = run(tristate, tmp_path, 'image', 'list', env=env, ok=False)
        assert done.returncode == 1
        assert 'The catalog has no image endpoint' in done.stderr
        assert 'tristate-manage catalog' in done.stderr
        # an override is enough
        done = run(tristate, tmp_path, '--os-image-endpoint-override',
                   tristate.endpoint + '/image', 'image', 'list', env=env)
        assert 'pub' in done.stdout
    finally:
        fake.stop()


def test_an_unreachable_keystone(tristate, tmp_path):
    env = {'OS_AUTH_URL': 'http://127.0.0.1:9/v3', 'OS_USERNAME': 'u',
           'OS_PASSWORD': 'p', 'OS_PROJECT_NAME': 'p',
           'OS_USER_DOMAIN_ID': 'default', 'OS_PROJECT_DOMAIN_ID': 'default'}
    done = run(tristate, tmp_path, 'server', 'list', env=env, ok=False)
    assert done.returncode == 1
    assert 'Cannot authenticate with password' in done.stderr


def test_a_catalog_registered_by_tristate_manage(tristate, tmp_path):
    fake = FakeKeystone().start()
    env = {'OS_AUTH_URL': fake.url, 'OS_USERNAME': 'kuser',
           'OS_PASSWORD': 'secret', 'OS_PROJECT_NAME': 'kproj',
           'OS_USER_DOMAIN_ID': 'default', 'OS_PROJECT_DOMAIN_ID': 'default'}
    try:
        full = {k: v for k, v in tristate.env.items()
                if not k.startswith(('TRISTATE_', 'OS_'))}
        full.update(HOME=str(tmp_path), **env)
        registered = subprocess.run(
            [sys.executable, '-c', 'import sys; from common.cmd.manage '
             'import main; sys.exit(main())', 'catalog', '--public-url',
             tristate.endpoint, '--register'], env=full, capture_output=True,
            text=True, timeout=COMMAND_TIMEOUT, check=False)
        assert registered.returncode == 0, registered.stdout
        assert names(run(tristate, tmp_path, 'server', 'list', '-f', 'json',
                         env=env)) == ['k1']
        assert 'pub' in run(tristate, tmp_path, 'image', 'list',
                            env=env).stdout
    finally:
        fake.stop()

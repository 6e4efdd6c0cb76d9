"""``tristate-manage catalog``: the ``openstack`` commands that register
Tristate's compute, image and reservation APIs in a Keystone catalog, and the same
made by the command itself (``--register``) as the admin of ``OS_*``
variables, against the stand-in Keystone of
:mod:`tests.functional.fake_keystone` (run twice, it changes nothing)."""

import os
import shlex
import subprocess
import sys
import tempfile

import pytest

from tests.functional.fake_keystone import FakeKeystone

ADMIN_ENV = {'OS_USERNAME': 'admin', 'OS_PASSWORD': 'secret',
             'OS_PROJECT_NAME': 'admin', 'OS_USER_DOMAIN_ID': 'default',
             'OS_PROJECT_DOMAIN_ID': 'default'}


def manage(*args, env=None):
    full = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    full.update(HOME=tempfile.mkdtemp(prefix='manage-home-'), **(env or {}))
    return subprocess.run(
        [sys.executable, '-c', 'import sys; from common.cmd.manage import '
         'main; sys.exit(main())', 'catalog', *args], env=full,
        capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def keystone():
    fake = FakeKeystone(user='admin', project='admin').start()
    yield fake
    fake.stop()


def test_it_prints_the_commands():
    done = manage('--public-url', 'https://api.example.net:8774/',
                  '--internal-url', 'http://10.0.0.5:8774',
                  '--region', 'North')
    assert done.returncode == 0, done.stderr
    lines = [shlex.split(line) for line in done.stdout.splitlines()
             if not line.startswith('#')]
    assert lines == [
        ['openstack', 'service', 'create', '--name', 'tristate',
         '--description', 'Tristate compute API (Nova-compatible)',
         'compute'],
        ['openstack', 'endpoint', 'create', '--region', 'North', 'compute',
         'public', 'https://api.example.net:8774/v2.1'],
        ['openstack', 'endpoint', 'create', '--region', 'North', 'compute',
         'internal', 'http://10.0.0.5:8774/v2.1'],
        ['openstack', 'service', 'create', '--name', 'tristate-image',
         '--description', 'Tristate image API (Glance v2)', 'image'],
        ['openstack', 'endpoint', 'create', '--region', 'North', 'image',
         'public', 'https://api.example.net:8774/image'],
        ['openstack', 'endpoint', 'create', '--region', 'North', 'image',
         'internal', 'http://10.0.0.5:8774/image'],
        ['openstack', 'service', 'create', '--name', 'tristate-reservation',
         '--description', 'Tristate reservation API (Blazar v1)',
         'reservation'],
        ['openstack', 'endpoint', 'create', '--region', 'North',
         'reservation', 'public',
         'https://api.example.net:8774/reservation/v1'],
        ['openstack', 'endpoint', 'create', '--region', 'North',
         'reservation', 'internal', 'http://10.0.0.5:8774/reservation/v1']]
    without = manage('--public-url', 'http://api:8774', '--no-image')
    assert 'image' not in without.stdout.replace('Tristate', '')


def test_it_registers_once(keystone):
    env = dict(ADMIN_ENV, OS_AUTH_URL=keystone.url)
    done = manage('--public-url', 'http://api:8774', '--register', env=env)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.count('created') == 6
    catalog = {s['type']: [(e['interface'], e['url'], e['region_id'])
                           for e in s['endpoints']]
               for s in keystone.catalog()}
    assert catalog == {
        'compute': [('public', 'http://api:8774/v2.1', 'RegionOne')],
        'image': [('public', 'http://api:8774/image', 'RegionOne')],
        'reservation': [('public', 'http://api:8774/reservation/v1',
                         'RegionOne')]}
    again = manage('--public-url', 'http://api:8774', '--register', env=env)
    assert again.returncode == 0 and 'created' not in again.stdout
    assert len(keystone.endpoints) == 3


def test_without_credentials_it_says_what_to_set():
    done = manage('--public-url', 'http://api:8774', '--register')
    assert done.returncode == 1
    assert 'Cannot authenticate to Keystone' in done.stdout
    assert 'OS_AUTH_URL' in done.stdout

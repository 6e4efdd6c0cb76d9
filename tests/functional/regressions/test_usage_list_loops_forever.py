"""``nova usage-list`` and ``nova usage`` never ended.

From microversion 2.40 Nova pages usage reports over instances (``marker``
and ``limit``, ``tenant_usages_links``), and novaclient asks for the next
page with the last server it got as the marker until a page comes back
empty. Tristate ignored ``marker``: every request answered the same first
page, so the client looped forever (issue 22: 660 identical requests in
4 s).

Fixed: ``os-simple-tenant-usage`` and ``/{project}`` page over instances
from 2.40 (in the order of their first usage interval, at most ``limit``
or ``[api] max_limit`` per page, a ``next`` link while any are left, 400
for an unknown marker), and order the projects of a page so that the last
one holds the page's last instance: the marker novaclient takes.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys

from novaclient.v2 import shell as nova_shell
import pytest

from tests.functional import api_support
from tests.functional import client_support
from tests.images_support import IMAGE

OPENSTACK = str(pathlib.Path(sys.executable).with_name('openstack'))
CALLS = 20      # far more pages than the servers below make


@pytest.fixture(scope='module')
def url(shared_plane):
    with client_support.serving(shared_plane, max_limit=2) as url:
        yield url


@pytest.fixture(scope='module')
def project(url):
    """A project with five servers (three pages of two)."""
    token = api_support.new_project()
    nova = client_support.nova(url, token)
    nova.servers.create('u', IMAGE, 'tiny', min_count=5, max_count=5)
    return token


def _counting(manager, name):
    """Count the calls of ``manager.<name>``; fail past CALLS (a loop)."""
    calls = []
    real = getattr(manager, name)

    def counted(*args, **kwargs):
        calls.append(kwargs.get('marker'))
        assert len(calls) <= CALLS, 'still paging after %d requests' % CALLS
        return real(*args, **kwargs)
    setattr(manager, name, counted)
    return calls


def test_nova_usage_list_ends(url, project, capsys):
    admin = client_support.nova(url, api_support.ADMIN_TOKEN, '2.40')
    calls = _counting(admin.usage, 'list')
    nova_shell.do_usage_list(admin, argparse.Namespace(start=None, end=None))
    assert len(calls) <= 6, calls
    assert len(set(calls)) == len(calls)            # never the same page
    out = capsys.readouterr().out
    line = next(li for li in out.splitlines() if project.split(':')[1] in li)
    assert '| 5 ' in line.replace('  ', ' ')        # its five servers


def test_nova_usage_ends(url, project, capsys):
    user = client_support.nova(url, project, '2.40')
    calls = _counting(user.usage, 'get')
    nova_shell.do_usage(user, argparse.Namespace(
        start=None, end=None, tenant=project.split(':')[1]))
    assert calls == [None] + calls[1:] and 3 <= len(calls) <= 4, calls
    assert 'Servers' in capsys.readouterr().out


def test_an_unknown_marker_is_400(url, project):
    user = client_support.nova(url, project, '2.40')
    resp, body = user.client.get('/os-simple-tenant-usage/%s?marker=nosuch'
                                 % project.split(':')[1], raise_exc=False)
    assert resp.status_code == 400, body
    assert 'marker' in body['badRequest']['message']


def test_openstack_usage_list_ends(url, project, tmp_path):
    (tmp_path / 'clouds.yaml').write_text(
        'clouds:\n  admin:\n    auth_type: admin_token\n    auth:\n'
        '      endpoint: %(url)s/v2.1\n      token: "%(token)s"\n'
        '    compute_endpoint_override: %(url)s/v2.1\n'
        '    identity_api_version: 3\n'
        '    identity_endpoint_override: %(url)s/v2.1\n'
        % {'url': url, 'token': api_support.ADMIN_TOKEN})
    env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    env.update(OS_CLIENT_CONFIG_FILE=str(tmp_path / 'clouds.yaml'),
               HOME=str(tmp_path))
    done = subprocess.run(
        [OPENSTACK, '--os-cloud', 'admin', '--os-compute-api-version',
         '2.40', 'usage', 'list', '-f', 'json'], env=env, cwd=tmp_path,
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    rows = [r for r in json.loads(done.stdout)
            if r['Project'] == project.split(':')[1]]
    assert sum(_count(r['Servers']) for r in rows) == 5, rows


def _count(servers):
    """openstackclient's Servers column: a number, or the list of them."""
    return len(servers) if isinstance(servers, list) else int(servers)

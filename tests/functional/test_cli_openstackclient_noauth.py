"""openstackclient against a plane without Keystone, configured as the
operator guide says (``docs/operator-guide.md``, "openstackclient without
Keystone"): keystoneauth's ``admin_token`` with noauth's ``USER:PROJECT``
token, the compute and image endpoints, and ``identity_endpoint_override``
at the API's ``/identity/v3`` (:mod:`api.routes.noauth_identity`), so the
commands that look a project up first work with project IDs: ``quota
show|set --compute PROJECT``, ``usage show --project``, ``usage list``,
``server list --project``. The real ``openstack`` command, as a
subprocess, on the shared plane's API served over HTTP.
"""

import json
import uuid as uuidlib

import pytest

from tests.functional import api_support
from tests.functional import client_support
from tests.functional import osc_support
from tests.images_support import IMAGE

SUFFIX = uuidlib.uuid4().hex[:8]
PROJECT = 'noks-%s' % SUFFIX
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


@pytest.fixture(scope='module')
def url(shared_plane):
    with client_support.serving(shared_plane) as url:
        yield url


@pytest.fixture(scope='module')
def home(tmp_path_factory, url):
    tokens = {'admin': api_support.ADMIN_TOKEN,
              'member': 'user-%s:%s' % (SUFFIX, PROJECT)}
    return osc_support.write_clouds(tmp_path_factory.mktemp('osc-noauth'),
                                    CLOUD, url, tokens)


def osc(home, *args, cloud='admin', ok=True):
    done = osc_support.run(home, args, cloud)
    if ok:
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


def parsed(done):
    lines = done.stdout.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line[:1] in '{[')
    return json.loads(''.join(lines[start:]))


@pytest.fixture(scope='module')
def server(home):
    made = parsed(osc(home, 'server', 'create', '--image', IMAGE,
                      '--flavor', 'tiny', '--wait', '-f', 'json',
                      'noks-vm', cloud='member'))
    assert made['status'] == 'ACTIVE'
    return made


def quota(home, project):
    """``openstack quota show --compute PROJECT``: {resource: limit}."""
    rows = parsed(osc(home, 'quota', 'show', '--compute', project, '-f',
                      'json'))
    return {row['Resource']: row['Limit'] for row in rows}


def test_quota_show_and_set_by_project_id(home, server):
    assert quota(home, PROJECT)['instances'] == -1
    osc(home, 'quota', 'set', '--instances', '7', PROJECT)
    assert quota(home, PROJECT)['instances'] == 7
    osc(home, 'quota', 'set', '--instances', '-1', PROJECT)


def test_usage_by_project(home, server):
    shown = parsed(osc(home, 'usage', 'show', '--project', PROJECT, '-f',
                       'json'))
    assert (shown['Project'], len(shown['Servers'])) == (PROJECT, 1)
    listed = {u['Project']: u for u in parsed(osc(home, 'usage', 'list',
                                                  '-f', 'json'))}
    assert [u['instance_id'] for u in listed[PROJECT]['Servers']] == [
        server['id']]


def test_server_list_by_project(home, server):
    listed = parsed(osc(home, 'server', 'list', '--project', PROJECT, '-f',
                        'json'))
    assert [s['ID'] for s in listed] == [server['id']]


def test_a_project_by_id_exists_other_identity_calls_say_why_not(home):
    shown = parsed(osc(home, 'project', 'show', PROJECT, '-f', 'json'))
    assert (shown['id'], shown['name']) == (PROJECT, PROJECT)
    done = osc(home, 'region', 'list', ok=False)
    assert done.returncode == 1
    assert 'auth_strategy = noauth' in done.stderr

"""``tristate-all`` behind a real Keystone (issue 22): tokens Keystone
issued are checked by keystonemiddleware, the roles Keystone gives decide
what a user may do, and a client that knows only Keystone's URL finds the
compute API and the image API (Glance v2) in the catalog
(:mod:`tests.integration.keystone_support`, which Tempest's harness uses
too).
"""

import tempfile

import openstack
import pytest
import requests

from tests.integration import keystone_support

keystone = keystone_support.fixture()


@pytest.fixture(scope='module')
def plane(keystone):
    with tempfile.TemporaryDirectory(prefix='tristate-ks-plane-') as workdir:
        plane = keystone_support.TristateAll(workdir, keystone, hosts=1)
        try:
            yield plane.start()
        finally:
            plane.stop()


def _connect(keystone, user):
    env = keystone.openrc(user)
    return openstack.connect(
        auth_url=env['OS_AUTH_URL'], username=env['OS_USERNAME'],
        password=env['OS_PASSWORD'], project_name=env['OS_PROJECT_NAME'],
        user_domain_name=env['OS_USER_DOMAIN_NAME'],
        project_domain_name=env['OS_PROJECT_DOMAIN_NAME'],
        region_name=env['OS_REGION_NAME'])


def test_a_member_finds_compute_and_image_in_the_catalog(keystone, plane):
    conn = _connect(keystone, keystone_support.MEMBER)
    assert conn.compute.get_endpoint() == plane.url + '/v2.1'
    flavors = {flavor.name for flavor in conn.compute.flavors()}
    assert {'tiny', 'small'} <= flavors
    image = conn.image.create_image(
        name='ks-plane', disk_format='raw', container_format='bare',
        data=b'x' * 4096)
    assert conn.image.get_image(image.id).status == 'active'
    assert image.owner == keystone.ids['project:' + keystone_support.MEMBER]


def test_tokens_are_checked_and_roles_decide(keystone, plane):
    hypervisors = plane.url + '/v2.1/os-hypervisors'
    assert requests.get(hypervisors, timeout=30).status_code == 401
    assert requests.get(hypervisors, timeout=30, headers={
        'X-Auth-Token': 'not-a-token'}).status_code == 401
    member = keystone.token(keystone_support.MEMBER)
    assert requests.get(hypervisors, timeout=30, headers={
        'X-Auth-Token': member}).status_code == 403
    admin = keystone.token(keystone_support.ADMIN)
    answer = requests.get(hypervisors, timeout=30,
                          headers={'X-Auth-Token': admin})
    assert answer.status_code == 200
    assert len(answer.json()['hypervisors']) == 1

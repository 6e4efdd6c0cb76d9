"""Addresses as the ecosystem's clients show them (issue 23): the real
``openstack`` command line (``server create --nic net-id=`` and
``--network``, which look the network up in ``os-networks`` when there is
no Neutron, ``server show``, ``server list --long``), python-novaclient,
and openstacksdk's ``create_server(wait=True)`` (what Ansible's
``openstack.cloud.server`` runs), which deletes a server that reaches
ACTIVE without an address: with a network it keeps it.
"""

import uuid as uuidlib

import pytest

from tests.functional import api_support
from tests.functional import client_support
from tests.functional import fake_keystone
from tests.functional import test_openstackclient as osc_support
from tests.functional.conftest import wait_for
from tests.images_support import IMAGE


@pytest.fixture(scope='module')
def url(shared_plane):
    with client_support.serving(shared_plane) as url:
        yield url


@pytest.fixture(scope='module')
def net(shared_plane):
    return shared_plane.statedb.create_network(
        {'name': 'guests', 'cidr': '10.40.0.0/24', 'bridge': 'br-guests',
         'ipv6_cidr': 'fd00:40::/64'}, network_id=str(uuidlib.uuid4()))


def _v4(addresses):
    return [a['addr'] for a in addresses['guests'] if a['version'] == 4][0]


def test_novaclient_shows_addresses(url, net):
    nova = client_support.nova(url, api_support.new_project(), '2.37')
    server = nova.servers.create('nc', IMAGE, 'tiny',
                                 nics=[{'net-id': net['id']}])
    wait_for(lambda: nova.servers.get(server.id).status == 'ACTIVE',
             what='novaclient server ACTIVE')
    server = nova.servers.get(server.id)
    addr = _v4(server.addresses)
    assert addr.startswith('10.40.0.')
    assert server.networks['guests'][0] == addr
    assert nova.servers.ips(server)['guests'][0]['addr'] == addr
    assert [s.id for s in nova.servers.list(
        search_opts={'ip': addr.replace('.', r'\.') + '$'})] == [server.id]
    nova.servers.delete(server)


def test_openstacksdk_create_server_wait_keeps_the_server(url, net):
    conn = client_support.sdk(url, api_support.new_project())
    server = conn.create_server('sdk-net', image={'id': IMAGE},
                                flavor='tiny', wait=True, timeout=120)
    assert server.status == 'ACTIVE'
    kept = conn.compute.get_server(server.id)      # not deleted
    assert _v4(kept.addresses).startswith('10.40.0.')
    assert _v4(server['addresses']) == _v4(kept.addresses)
    conn.delete_server(server.id)


CLOUD = """\
clouds:
  tristate:
    auth_type: password
    auth:
      auth_url: {auth_url}
      username: {user}
      password: secret
      project_name: {project}
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    identity_api_version: 3
"""


@pytest.fixture(scope='module')
def osc_home(tmp_path_factory, url):
    """A cloud whose (stand-in) Keystone catalog has a compute endpoint
    and no network one: openstackclient then finds networks in
    ``os-networks``, as with nova-network."""
    suffix = uuidlib.uuid4().hex[:8]
    keystone = fake_keystone.FakeKeystone(user='u-' + suffix,
                                          project='p-' + suffix)
    keystone.register('compute', url + '/v2.1')
    keystone.register('image', url + '/image')
    keystone.register('identity', keystone.url)
    keystone.start()
    home = tmp_path_factory.mktemp('osc-networks')
    (home / 'clouds.yaml').write_text(CLOUD.format(
        auth_url=keystone.url, user=keystone.user, project=keystone.project))
    yield home
    keystone.stop()


def test_openstackclient_nic_network_show_and_list(osc_home, net):
    osc = osc_support.osc
    by_id = osc(osc_home, 'server', 'create', '--image', IMAGE, '--flavor',
                'tiny', '--nic', 'net-id=%s' % net['id'], '--wait', 'by-id')
    by_name = osc(osc_home, '--os-compute-api-version', '2.37', 'server',
                  'create', '--image', IMAGE, '--flavor', 'tiny',
                  '--network', 'guests', '--wait', 'by-name')
    for made in (by_id, by_name):
        shown = osc(osc_home, 'server', 'show', made['id'])
        assert '10.40.0.' in str(shown['addresses'])
    listed = {s['ID']: s for s in osc(osc_home, 'server', 'list', '--long')}
    assert '10.40.0.' in str(listed[by_id['id']]['Networks'])
    assert '10.40.0.' in str(listed[by_name['id']]['Networks'])

"""``GET /servers/{id}/diagnostics`` through novaclient (admin): the
fake hypervisor's reading of the domain, through the conductor and the
agent (compute agent RPC 1.4), in Nova's body of each microversion
(Tempest's response schemas as the oracle); Nova's 409 for a server on no
host; 403 for a member, as Nova's default policy."""

from novaclient import exceptions as nova_exc
import pytest
from tempest.lib.api_schema.response.compute.v2_1 import servers as v2_1
from tempest.lib.api_schema.response.compute.v2_48 import servers as v2_48

from tests.functional import api_support
from tests.functional import catalogue_support as support
from tests.functional import client_support
from tests.functional import test_server_features_clients as features
from tests.images_support import IMAGE


@pytest.fixture(scope='module')
def url(shared_plane):
    with client_support.serving(shared_plane) as url:
        yield url


class _Resp:
    """novaclient's answer as catalogue_support.check reads one."""

    def __init__(self, resp, body):
        self.status_code, self._body = resp.status_code, body

    def get_json(self):
        return self._body

    def get_data(self):
        return bool(self._body)


def test_diagnostics_at_2_1_and_2_48(url):
    admin = client_support.nova(url, api_support.ADMIN_TOKEN, '2.48')
    server = features._boot(admin, 'measured', flavor='small')
    resp, body = admin.servers.diagnostics(server)
    support.check(v2_48.show_server_diagnostics, _Resp(resp, body))
    assert (body['state'], body['driver'], body['hypervisor']) == (
        'running', 'libvirt', 'fake')
    flavor = admin.flavors.get('small')
    assert body['num_cpus'] == flavor.vcpus
    assert body['memory_details']['maximum'] == flavor.ram
    assert body['uptime'] is not None and body['uptime'] >= 0
    old = client_support.nova(url, api_support.ADMIN_TOKEN, '2.1')
    resp, body = old.servers.diagnostics(server)
    support.check(v2_1.show_server_diagnostics, _Resp(resp, body))
    assert body['memory'] == flavor.ram * 1024
    assert 'cpu0_time' in body and 'vda_read' in body
    admin.servers.stop(server)
    features.wait_for(lambda: admin.servers.get(server.id).status
                      == 'SHUTOFF', what='stopped')
    assert admin.servers.diagnostics(server)[1]['state'] == 'shutdown'


def test_a_nic_per_port_with_its_mac(shared_plane, url):
    """Each port of the server is a NIC in the diagnostics, with its MAC
    (before: the fake hypervisor showed none)."""
    app = api_support.make_app(shared_plane)
    admin_api = api_support.Api(app, token=api_support.ADMIN_TOKEN)
    resp = admin_api.post('/os-networks', {'network': {
        'name': 'diagnosed', 'cidr': '10.77.0.0/24', 'bridge': 'br-diag'}})
    assert resp.status_code == 201, resp.get_json()
    net = resp.get_json()['network']
    admin = client_support.nova(url, api_support.ADMIN_TOKEN, '2.48')
    server = features._boot(admin, 'wired', nics=[{'net-id': net['id']},
                                                  {'net-id': net['id']}])
    macs = sorted(a['OS-EXT-IPS-MAC:mac_addr'] for a in admin.servers.get(
        server.id).addresses['diagnosed'])
    _resp, body = admin.servers.diagnostics(server)
    assert body['num_nics'] == 2
    assert sorted(n['mac_address'] for n in body['nic_details']) == macs
    _resp, old = client_support.nova(
        url, api_support.ADMIN_TOKEN, '2.1').servers.diagnostics(server)
    assert sum(key.endswith('_rx') for key in old) == 2


def test_a_member_may_not_and_a_server_on_no_host_is_409(url):
    token = api_support.new_project()
    member = client_support.nova(url, token, '2.48')
    server = features._boot(member, 'mine')
    with pytest.raises(nova_exc.Forbidden):
        member.servers.diagnostics(server)
    admin = client_support.nova(url, api_support.ADMIN_TOKEN, '2.48')
    huge = admin.flavors.create('diag-huge', 10 ** 7, 1, 1)
    stuck = member.servers.create('nowhere', IMAGE, huge.id, nics='none')
    features.wait_for(lambda: member.servers.get(stuck.id).status
                      in ('ERROR', 'PENDING'), what='no host found')
    with pytest.raises(nova_exc.Conflict, match='not ready'):
        admin.servers.diagnostics(stuck.id)
    member.servers.delete(stuck)
    admin.flavors.delete(huge)

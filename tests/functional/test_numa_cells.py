"""Guest NUMA cells (issue 22: ``hw:numa_nodes`` > 1), through the REST API
on the fake hypervisor: a flavor's ``hw:numa_*`` extra specs are checked as
Nova checks them (their form when set, their fit to the flavor when a
server is created), and a server built with them gets the cells in its
domain, as the libvirt template writes them (tests/unit/compute_agent/
libvirt/test_numa.py). A resize or cold migration of such a server is
refused until the cold move carries the cells."""

import uuid as uuidlib

import pytest

from compute_agent.virt import fake
from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture(scope='module')
def admin(app):
    return Api(app, token=api_support.ADMIN_TOKEN)


def _flavor(admin, vcpus, ram, specs):
    flavor_id = 'numa-%s' % uuidlib.uuid4().hex[:8]
    resp = admin.post('/flavors', {'flavor': {
        'name': flavor_id, 'id': flavor_id, 'ram': ram, 'vcpus': vcpus,
        'disk': 1}})
    assert resp.status_code == 200, resp.get_json()
    resp = admin.post('/flavors/%s/os-extra_specs' % flavor_id,
                      {'extra_specs': specs})
    assert resp.status_code == 200, resp.get_json()
    return flavor_id


def _domain(plane, admin, server_id):
    host = admin.host(server_id)
    return fake.HostStore(plane.conf.state_dir, host).domain(server_id)


def test_two_nodes_split_cpus_and_memory_evenly(shared_plane, admin):
    flavor = _flavor(admin, 4, 1024, {'hw:numa_nodes': '2'})
    server = admin.active(flavor=flavor)
    assert _domain(shared_plane, admin, server['id'])['numa_cells'] == [
        {'id': 0, 'cpus': '0-1', 'memory_mb': 512},
        {'id': 1, 'cpus': '2-3', 'memory_mb': 512}]
    admin.delete('/servers/%s' % server['id'])


def test_explicit_cells_are_given_as_asked(shared_plane, admin):
    flavor = _flavor(admin, 3, 768, {
        'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0', 'hw:numa_cpus.1': '1,2',
        'hw:numa_mem.0': '256', 'hw:numa_mem.1': '512'})
    server = admin.active(flavor=flavor)
    assert _domain(shared_plane, admin, server['id'])['numa_cells'] == [
        {'id': 0, 'cpus': '0', 'memory_mb': 256},
        {'id': 1, 'cpus': '1-2', 'memory_mb': 512}]
    # its cold moves are refused (not yet carried), nothing started
    other = _flavor(admin, 4, 1024, {})
    for body in ({'resize': {'flavorRef': other}}, {'migrate': None}):
        resp = admin.post('/servers/%s/action' % server['id'], body)
        assert resp.status_code == 400, resp.get_json()
        assert 'NUMA' in message(resp)
    assert admin.server(server['id'])['OS-EXT-STS:task_state'] is None
    admin.delete('/servers/%s' % server['id'])


def test_one_node_is_what_every_guest_has(shared_plane, admin):
    flavor = _flavor(admin, 2, 512, {'hw:numa_nodes': '1'})
    server = admin.active(flavor=flavor)
    assert _domain(shared_plane, admin, server['id'])['numa_cells'] == []
    admin.delete('/servers/%s' % server['id'])


@pytest.mark.parametrize('vcpus,ram,specs,expected', [
    (3, 1024, {'hw:numa_nodes': '2'}, 'cannot be evenly distributed'),
    (4, 1000, {'hw:numa_nodes': '3'}, 'cannot be evenly distributed'),
    (2, 512, {'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0'},
     'must be provided for all NUMA nodes'),
    (2, 512, {'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0',
              'hw:numa_cpus.1': '0,1', 'hw:numa_mem.0': '256',
              'hw:numa_mem.1': '256'}, 'CPU number 0 is assigned to two'),
    (2, 512, {'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0',
              'hw:numa_cpus.1': '5', 'hw:numa_mem.0': '256',
              'hw:numa_mem.1': '256'}, 'CPU number 5 is larger than max 1'),
    (3, 512, {'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0',
              'hw:numa_cpus.1': '1', 'hw:numa_mem.0': '256',
              'hw:numa_mem.1': '256'}, 'is not assigned to any node'),
    (2, 512, {'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0',
              'hw:numa_cpus.1': '1', 'hw:numa_mem.0': '256',
              'hw:numa_mem.1': '128'}, '384 MB of memory assigned, but '
                                       'expected 512 MB'),
], ids=['cpus-not-divisible', 'memory-not-divisible', 'incomplete',
        'duplicate-cpu', 'cpu-out-of-range', 'cpu-unassigned',
        'memory-short'])
def test_a_topology_that_does_not_fit_the_flavor_is_400(admin, vcpus, ram,
                                                        specs, expected):
    flavor = _flavor(admin, vcpus, ram, specs)
    before = admin.ids()
    resp = admin.post('/servers', {'server': {
        'name': 'numa', 'flavorRef': flavor, 'imageRef': api_support.IMAGE}})
    assert resp.status_code == 400, resp.get_json()
    assert expected in message(resp)
    assert admin.ids() == before


def test_topology_shows_the_cells_and_invents_no_pinning(app, admin):
    """GET /servers/{id}/topology (2.78): the owner sees each cell's vCPUs
    and memory; an admin also ``cpu_pinning``, empty (Tristate pins
    nothing), and no ``host_node`` (no cell is bound to one)."""
    flavor = _flavor(admin, 4, 1024, {'hw:numa_nodes': '2'})
    user = Api(app, token=api_support.new_project())
    server = user.active(flavor=flavor)
    path = '/servers/%s/topology' % server['id']
    cells = [{'vcpu_set': [0, 1], 'memory_mb': 512, 'siblings': []},
             {'vcpu_set': [2, 3], 'memory_mb': 512, 'siblings': []}]
    resp = user.get(path, version='2.78')
    assert resp.status_code == 200, resp.get_json()
    assert resp.get_json() == {'nodes': cells, 'pagesize_kb': None}
    assert admin.get(path, version='2.78').get_json() == {
        'nodes': [dict(c, cpu_pinning={}) for c in cells],
        'pagesize_kb': None}
    assert user.get(path, version='2.77').status_code == 404
    other = Api(app, token=api_support.new_project())
    assert other.get(path, version='2.78').status_code == 404
    plain = user.active()
    assert user.get('/servers/%s/topology' % plain['id'],
                    version='2.78').get_json() == {'nodes': [],
                                                   'pagesize_kb': None}
    for made in (server, plain):
        user.delete('/servers/%s' % made['id'])

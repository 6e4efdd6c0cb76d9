"""A server create with a huge ``hw:numa_cpus.N`` range built a set of
every CPU it named.

``hw:numa_cpus.0=0-4294967295`` has the form Nova's validator takes, so an
admin may set it; the create of a server with the flavor then built the
Python set of four billion CPU numbers (tens of GB) before finding that
CPU 2 is beyond a 2-vCPU flavor, and ``hw:numa_nodes=1`` on a flavor of
2**31-1 vCPUs built the set of all of them. The conductor stalled and
then died of memory. Found by the session-15 hostile-input review (huge
numbers in NUMA extra specs). Fixed: common/numa.py reads CPU lists as
ranges, never as sets of CPUs; the same 400 (Nova's message) comes at
once, and an exclusion that brings the range back in bounds still works.
"""


import pytest

from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message


@pytest.fixture(scope='module')
def admin(shared_plane):
    return Api(api_support.make_app(shared_plane),
               token=api_support.ADMIN_TOKEN)



def _flavor(admin, vcpus, specs):
    return api_support.new_flavor(admin, vcpus=vcpus, specs=specs)


def _create(admin, flavor):
    return api_support.answered_within(10, lambda: admin.post('/servers', {'server': {
        'name': 'numa', 'flavorRef': flavor,
        'imageRef': api_support.IMAGE}}))


HALVES = {'hw:numa_nodes': '2', 'hw:numa_cpus.1': '1',
          'hw:numa_mem.0': '256', 'hw:numa_mem.1': '256'}


def test_a_huge_range_is_refused_at_once(admin):
    flavor = _flavor(admin, 2, dict(HALVES, **{
        'hw:numa_cpus.0': '0-4294967295'}))
    before = admin.ids()
    resp = _create(admin, flavor)
    assert resp.status_code == 400, resp.get_json()
    assert 'CPU number 2 is larger than max 1' in message(resp)
    assert admin.ids() == before


def test_a_huge_range_brought_back_by_an_exclusion_is_taken(admin):
    flavor = _flavor(admin, 2, dict(HALVES, **{
        'hw:numa_cpus.0': '0-4294967295,^1-4294967295'}))
    resp = _create(admin, flavor)
    assert resp.status_code == 202, resp.get_json()
    server = admin.settled(resp.get_json()['server']['id'])
    assert server['status'] == 'ACTIVE'


def test_one_node_on_a_flavor_of_every_vcpu_is_no_stall(admin):
    flavor = _flavor(admin, 2 ** 31 - 1, {'hw:numa_nodes': '1'})
    resp = _create(admin, flavor)
    # no host has the vCPUs (or the quota refuses them): never a 5xx
    assert resp.status_code < 500, resp.get_json()

"""``hw:numa_nodes`` above 128 was taken, and a server of it failed late.

The extra spec was checked as "a whole number of at least 1" only, so
``hw:numa_nodes=100000`` was stored; a server of a flavor whose vCPUs and
RAM the count divides was then accepted and given that many cells, which
QEMU refuses (at most 128 NUMA nodes, as Nova's ``NUMA_NODES_MAX``): the
build failed on its host instead of a 400. Tristate reads at most 128
``hw:numa_cpus.N``/``hw:numa_mem.N`` anyway. Found by the session-15
hostile-input review (huge numbers in NUMA extra specs). Fixed:
common/numa.py refuses a node count above 128 when the spec is set (400
naming the key) and when a server is created with a flavor that already
holds one.
"""


import pytest

from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message


@pytest.fixture(scope='module')
def admin(shared_plane):
    return Api(api_support.make_app(shared_plane),
               token=api_support.ADMIN_TOKEN)


def _flavor(admin, vcpus=2, ram=512):
    return api_support.new_flavor(admin, vcpus=vcpus, ram=ram)


@pytest.mark.parametrize('value', ['129', '100000', '9' * 200])
def test_more_than_128_nodes_is_a_400_naming_the_key(admin, value):
    key = 'hw:numa_nodes'
    path = '/flavors/%s/os-extra_specs' % _flavor(admin)
    resp = admin.post(path, {'extra_specs': {key: value}})
    assert resp.status_code == 400, resp.get_data()[:300]
    assert 'field/attribute extra_specs.%s' % key in message(resp)
    assert 'at most 128' in message(resp)
    resp = admin.put('%s/%s' % (path, key), {key: value})
    assert resp.status_code == 400, resp.get_data()[:300]
    assert 'at most 128' in message(resp)
    assert admin.get(path).get_json() == {'extra_specs': {}}


def test_128_nodes_are_taken(admin):
    path = '/flavors/%s/os-extra_specs' % _flavor(admin)
    resp = admin.post(path, {'extra_specs': {'hw:numa_nodes': '128'}})
    assert resp.status_code == 200, resp.get_json()


def test_a_flavor_that_holds_more_is_refused_at_create(admin, shared_plane):
    flavor = _flavor(admin, vcpus=256, ram=256)
    # stored before the check existed: written as the old API took it
    shared_plane.statedb.set_extra_specs(flavor, {'hw:numa_nodes': '256'})
    before = admin.ids()
    resp = admin.post('/servers', {'server': {
        'name': 'numa', 'flavorRef': flavor, 'imageRef': api_support.IMAGE}})
    assert resp.status_code == 400, resp.get_json()
    assert 'at most 128' in message(resp)
    assert admin.ids() == before

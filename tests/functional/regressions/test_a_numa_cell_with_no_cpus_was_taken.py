"""A NUMA cell left with no CPU by its exclusions was taken at create.

``hw:numa_cpus.1=0,^0`` has the form of a CPU list, and the cells covered
every vCPU without it, so the create was accepted and the guest was given
a cell with ``cpus=''``, which libvirt refuses when it defines the domain:
the server went to ERROR on its host instead of a 400. Found by the
session-15 hostile-input review (malformed ranges, cells that do not
cover the vCPUs). Fixed: common/numa.py refuses a cell with no CPU,
naming it, before anything is created.
"""


import pytest

from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message


@pytest.fixture(scope='module')
def admin(shared_plane):
    return Api(api_support.make_app(shared_plane),
               token=api_support.ADMIN_TOKEN)


def test_a_cell_with_no_cpu_is_400(admin):
    flavor = api_support.new_flavor(admin, specs={
        'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-1', 'hw:numa_cpus.1': '0,^0',
        'hw:numa_mem.0': '256', 'hw:numa_mem.1': '256'})
    before = admin.ids()
    resp = admin.post('/servers', {'server': {
        'name': 'numa', 'flavorRef': flavor, 'imageRef': api_support.IMAGE}})
    assert resp.status_code == 400, resp.get_json()
    assert 'NUMA node 1 has no CPU' in message(resp)
    assert admin.ids() == before

"""A NUMA cell key whose node number had a leading zero was stored and
never read.

``hw:numa_cpus.01`` or ``hw:numa_mem.00`` passed the check of session 16
(a node number from 0 to 127) and was stored with the flavor, but a
server's cells are read from ``hw:numa_cpus.0``, ``hw:numa_cpus.1``, ...
(Nova's reading): the key was never read. A flavor of two nodes whose
mapping was written ``.00``/``.01`` (vCPU 1 on node 0, vCPU 0 on node 1)
built a guest split evenly in order instead, and told no one; one with
``.0`` and ``.00`` both set kept two values for one node. Found by the
session-16 hostile-input review (the session-16 test took
``hw:numa_cpus.00`` as node 0). Fixed: common/numa.py takes a node
number only as written without a leading zero (``0``, ``1``, ... ``127``),
any other is a 400 naming the key, and nothing is stored.
"""


import pytest

from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message


@pytest.fixture(scope='module')
def admin(shared_plane):
    return Api(api_support.make_app(shared_plane),
               token=api_support.ADMIN_TOKEN)


@pytest.fixture
def flavor(admin):
    return api_support.new_flavor(admin, prefix='numa0')


def _specs(admin, flavor):
    return admin.get('/flavors/%s/os-extra_specs' % flavor).get_json()[
        'extra_specs']


@pytest.mark.parametrize('key, value', [
    ('hw:numa_cpus.00', '0'), ('hw:numa_cpus.01', '1'),
    ('hw:numa_mem.007', '256')])
def test_a_node_number_with_a_leading_zero_is_400(admin, flavor, key, value):
    resp = admin.post('/flavors/%s/os-extra_specs' % flavor,
                      {'extra_specs': {key: value}})
    assert resp.status_code == 400, resp.get_json()
    said = message(resp)
    assert key in said and 'without a leading zero' in said, said
    assert _specs(admin, flavor) == {}
    # one key at a time (PUT .../os-extra_specs/{key}) is refused the same
    resp = admin.put('/flavors/%s/os-extra_specs/%s' % (flavor, key),
                     {key: value})
    assert resp.status_code == 400, resp.get_json()
    assert _specs(admin, flavor) == {}


def test_a_mapping_written_with_leading_zeros_changes_nothing(admin, flavor):
    """The whole mapping in one request: refused, none of it stored (it
    was taken and the guest split 0 | 1, not 1 | 0 as it said)."""
    resp = admin.post('/flavors/%s/os-extra_specs' % flavor, {
        'extra_specs': {'hw:numa_nodes': '2',
                        'hw:numa_cpus.00': '1', 'hw:numa_cpus.01': '0',
                        'hw:numa_mem.00': '256', 'hw:numa_mem.01': '256'}})
    assert resp.status_code == 400, resp.get_json()
    assert _specs(admin, flavor) == {}

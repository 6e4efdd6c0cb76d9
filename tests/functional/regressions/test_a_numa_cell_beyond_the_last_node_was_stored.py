"""A NUMA cell key beyond the last node a guest can have was stored.

``hw:numa_cpus.128`` (or ``hw:numa_mem.500``) passed the value check and
was stored with the flavor, but no guest has more than 128 NUMA nodes
(``hw:numa_nodes`` is refused above that): nothing ever read the key, so
the flavor said something Tristate would never do. Found by the
session-15 hostile-input review. Fixed: common/numa.py refuses the key
with a 400 naming it and the node numbers it takes, and nothing is stored.
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
    return api_support.new_flavor(admin)


@pytest.mark.parametrize('key, value', [
    ('hw:numa_cpus.128', '0'), ('hw:numa_mem.128', '256'),
    ('hw:numa_cpus.99999999999999999999', '0'), ('hw:numa_mem.0128', '1')])
def test_a_cell_beyond_the_last_node_is_400(admin, flavor, key, value):
    resp = admin.post('/flavors/%s/os-extra_specs' % flavor,
                      {'extra_specs': {key: value}})
    assert resp.status_code == 400, resp.get_json()
    assert key in message(resp) and 'from 0 to 127' in message(resp)
    specs = admin.get('/flavors/%s/os-extra_specs' % flavor).get_json()
    assert specs['extra_specs'] == {}


@pytest.mark.parametrize('key', ['hw:numa_cpus.127', 'hw:numa_cpus.0',
                                 'hw:numa_cpus.10'])
def test_the_last_node_and_the_first_are_taken(admin, flavor, key):
    resp = admin.post('/flavors/%s/os-extra_specs' % flavor,
                      {'extra_specs': {key: '0'}})
    assert resp.status_code == 200, resp.get_json()

"""A 70-character ``hw:numa_cpus.N`` value held an API thread for hours.

The extra spec's value was checked with Nova's own pattern for a CPU map,
``\\^?\\d+((-\\d+)?(,\\^?\\d+(-\\d+)?)?)*``, in Python's ``re``: each ``-N``
after a ``,N`` can be read two ways, so a value such as ``0,1-2,1-2,...``
ending in a character the pattern refuses backtracks exponentially (16
pieces took 13 s, 18 took 3 minutes, 20 would take hours), holding the
interpreter lock. Found by the session-15 hostile-input review (malformed
CPU ranges in NUMA extra specs). Fixed: common/numa.py matches the pattern
with RE2, in linear time; the answer is the same 400 naming the key.
"""


import pytest

from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message


@pytest.fixture(scope='module')
def admin(shared_plane):
    return Api(api_support.make_app(shared_plane),
               token=api_support.ADMIN_TOKEN)



@pytest.mark.parametrize('how', ['post', 'put'])
def test_a_malformed_cpu_list_is_refused_at_once(admin, how):
    flavor = api_support.new_flavor(admin)
    key = 'hw:numa_cpus.0'
    bad = '0' + ',1-2' * 24 + 'x'
    path = '/flavors/%s/os-extra_specs' % flavor
    resp = api_support.answered_within(5, lambda: admin.post(
        path, {'extra_specs': {key: bad}}) if how == 'post' else admin.put(
        '%s/%s' % (path, key), {key: bad}))
    assert resp.status_code == 400, resp.get_json()
    assert 'field/attribute extra_specs.%s' % key in message(resp)
    assert admin.get(path).get_json() == {'extra_specs': {}}

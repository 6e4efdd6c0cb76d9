"""Flavor extra specs in namespaces no Nova service acts on were refused.

Nova stores any extra spec whose namespace it does not know (``foo:bar``,
or a key with no namespace) and, from 2.86, validates only the namespaces
its scheduler and drivers act on (``hw:``, ``quota:``, ``resources:``,
...). Tristate refused every key but ``hw:cpu_policy=shared`` and
``hw:numa_nodes=1``, so a client tagging its flavors for its own use got a
400, and Tempest's ``test_flavor_update_with_custom_namespace`` failed.
Found by the full Tempest run (issue 22).

Fixed: ``api.routes.flavors`` refuses only keys in the namespaces Nova
acts on that Tristate does not honour, and stores the others, at every
microversion.
"""

import pytest

from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.mark.parametrize('version', ['2.1', '2.86'])
def test_a_custom_namespace_and_unscoped_keys_are_stored(app, version):
    admin = Api(app, token=api_support.ADMIN_TOKEN)
    flavor_id = admin.post('/flavors', {'flavor': {
        'name': 'custom-ns-%s' % version, 'ram': 64, 'vcpus': 1,
        'disk': 0}}).get_json()['flavor']['id']
    path = '/flavors/%s/os-extra_specs' % flavor_id
    specs = {'hw:cpu_policy': 'shared', 'foo:bar': 'baz', 'key1': 'value1'}
    made = admin.post(path, {'extra_specs': specs}, version=version)
    assert made.status_code == 200, made.get_json()
    assert admin.get(path).get_json() == {'extra_specs': specs}
    # a key of a namespace Nova acts on, which Tristate does not honour,
    # is still refused, naming it, and changes nothing
    bad = admin.post(path, {'extra_specs': {'hw:mem_page_size': 'large',
                                            'foo:other': 'x'}},
                     version=version)
    assert bad.status_code == 400
    assert 'extra_specs.hw:mem_page_size' in message(bad)
    assert admin.get(path).get_json() == {'extra_specs': specs}
    admin.delete('/flavors/%s' % flavor_id)

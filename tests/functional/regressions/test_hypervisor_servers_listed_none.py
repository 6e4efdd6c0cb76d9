"""A hypervisor's servers were listed as none while the host ran some.

``nova hypervisor-servers HOST`` (python-novaclient at 2.53 and later:
``GET /os-hypervisors?hypervisor_hostname_pattern=HOST&with_servers=true``)
showed every host, and no server on any: the API ignored both query
parameters and answered the plain list, whose hypervisors have no
``servers``; before 2.53 (``GET /os-hypervisors/HOST/servers``) the route
did not exist. Found by driving novaclient's hypervisor commands against
the API (issue 22). Fixed: both forms as Nova answers them, the pattern
matching the hosts whose name contains it, each with the servers placed
there (api/routes/catalog.py).
"""

import pytest

from tests.functional import api_support
from tests.functional import catalogue_support as support


@pytest.fixture(scope='module')
def url(shared_plane):
    server = support.serve(shared_plane)
    yield server.url
    server.stop()


@pytest.mark.parametrize('version', ['2.1', '2.53'])
def test_the_servers_of_a_host_are_listed(shared_plane, url, version):
    api = api_support.Api(api_support.make_app(shared_plane),
                          token=api_support.new_project())
    server = api.active()
    host = api.host(server['id'])
    admin = support.nova(url, api_support.ADMIN_TOKEN, version)
    found = admin.hypervisors.search(host, servers=True)
    assert [h.hypervisor_hostname for h in found] == [host]
    assert server['id'] in [s['uuid'] for s in found[0].servers]
    api.delete('/servers/%s' % server['id'])

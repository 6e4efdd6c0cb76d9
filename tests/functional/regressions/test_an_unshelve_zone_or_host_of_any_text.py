"""An unshelve's zone or host of any text reached the conductor, and its
answer did not name the field.

From 2.91 Nova's unshelve takes ``availability_zone`` and ``host`` as any
strings, and Tristate's schema did the same: a zone of 100,000 characters
or one holding an escape sequence went to the conductor, whose 400 ("The
requested availability zone is not available", "Compute host ... could
not be found", the text echoed back) named no field, against the rule that
bad input is a 4xx naming the field. Found by the session-15 hostile-input
review (unshelve bodies at each microversion). Fixed: api/actions.py takes
both as one line of at most 255 characters, as every zone and host name
is; the 400 names ``unshelve.availability_zone`` or ``unshelve.host`` and
the server stays offloaded.
"""

import pytest

from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_for


@pytest.fixture(scope='module')
def offloaded(shared_plane):
    set_opts(shared_plane.conf, 'compute', shelved_offload_time=0)
    api = Api(api_support.make_app(shared_plane),
              token=api_support.ADMIN_TOKEN)
    server = api.active(name='shelved')
    api.action(server['id'], {'shelve': None})

    def there():
        found = api.settled(server['id'])
        return found['status'] == 'SHELVED_OFFLOADED'
    wait_for(there, what='the server to be offloaded')
    return api, server['id']


@pytest.mark.parametrize('field,value', [
    ('availability_zone', 'z' * 100000), ('availability_zone', 'a\x1b[2Kb'),
    ('host', 'h' * 100000), ('host', 'host1\nx'),
], ids=['zone-long', 'zone-escape', 'host-long', 'host-newline'])
def test_a_bad_zone_or_host_is_a_400_naming_it(offloaded, field, value):
    api, server_id = offloaded
    resp = api.post('/servers/%s/action' % server_id,
                    {'unshelve': {field: value}}, version='2.91')
    assert resp.status_code == 400, resp.get_json()
    assert 'field/attribute unshelve.%s' % field in message(resp)
    server = api.server(server_id)
    assert server['status'] == 'SHELVED_OFFLOADED'
    assert server['OS-EXT-STS:task_state'] is None

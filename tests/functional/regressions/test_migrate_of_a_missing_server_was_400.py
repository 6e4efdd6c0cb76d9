"""``POST /servers/{id}/action`` with Nova's ``migrate`` key answered 400
"The action body must have exactly one key, one of ..." even for a server
that does not exist, where Nova answers 404; and for a server that does,
the message read as if the client had sent a malformed body, not an action
Tristate does not do yet.

Found by Tempest (``ServersAdminNegativeTestJSON.
test_migrate_non_existent_server``, session 12). Fixed: every action key of
Nova's that Tristate does not carry out (api/actions.py ``UNBUILT``) looks
the server up first (Nova's 404) and then answers a 400 saying the action
is not supported yet; a key Nova does not have either gets Nova's "There is
no such action".
"""

import pytest

from tests.functional import api_support
from tests.functional.api_support import message


@pytest.fixture(scope='module')
def admin(shared_plane):
    return api_support.Api(api_support.make_app(shared_plane),
                           token=api_support.ADMIN_TOKEN)


def test_migrate_of_a_missing_server_is_404(admin):
    resp = admin.post('/servers/%s/action'
                      % '6f2b8a2e-2f0e-4c52-9c5c-000000000001',
                      {'migrate': None})
    assert resp.status_code == 404, resp.get_json()


def test_migrate_of_a_server_says_it_is_not_supported_yet(admin):
    # issue 25 carries cold migrations out through Tristate's own image
    # service; this plane has none ([image] service_url unset)
    server = admin.active()
    resp = admin.post('/servers/%s/action' % server['id'], {'migrate': None})
    assert resp.status_code == 400
    assert 'not supported yet' in message(resp)

"""``GET /servers?limit=0`` answered a full page (``[api] max_limit``
servers), where Nova answers none. Found by Tempest
(``ListServerFiltersTestJSON.test_list_servers_filter_by_zero_limit``,
session 12). Fixed: a limit of 0 is a page of none (api/routes/servers.py).
"""

import pytest

from tests.functional import api_support
from tests.functional.api_support import Api


@pytest.fixture(scope='module')
def api(shared_plane):
    return Api(api_support.make_app(shared_plane),
               token=api_support.new_project())


def test_a_zero_limit_lists_none_as_nova(api):
    api.active('z1')
    for path in ('/servers', '/servers/detail'):
        resp = api.get(path, query_string={'limit': '0'})
        assert resp.get_json() == {'servers': []}
        assert len(api.get(path).get_json()['servers']) == 1

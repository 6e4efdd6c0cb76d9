"""``GET /servers?flavor=X`` compared X with the server's flavor name,
where Nova compares the flavor's id: a flavor made with ``POST /flavors``
whose id is not its name was found by its name and not by its id. (Seeded
flavors have their name as id, which hid it.) Found reading the list
filters against Nova's (issue 22's leftovers, session 12). Fixed: the
filter maps the row's flavor name to its id (api/routes/servers.py).
"""

import pytest

from tests.functional import api_support
from tests.functional.api_support import Api


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


def test_flavor_filters_by_the_flavor_id_as_nova(app):
    admin = Api(app, token=api_support.ADMIN_TOKEN)
    resp = admin.post('/flavors', {'flavor': {
        'name': 'named-f1', 'id': 'id-f1', 'ram': 64, 'vcpus': 1,
        'disk': 1}})
    assert resp.status_code == 200, resp.get_json()
    api = Api(app, token=api_support.new_project())
    server = api.active('f1', flavor='id-f1')
    assert set(api.ids(query_string={'flavor': 'id-f1'})) == {server['id']}
    assert api.ids(query_string={'flavor': 'named-f1'}) == []

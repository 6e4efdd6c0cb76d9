"""A noauth token holding a NUL answered 500 on PostgreSQL.

With ``[api] auth_strategy = noauth`` (tristate-all's default), the token
``USER:PROJECT`` is taken as it is: ``X-Auth-Token: a\\x00b:a\\x00b`` made a
project id PostgreSQL refuses in a query (``GET /servers`` and ``POST
/servers`` answered 500), and an ESC in it reached every log line of the
request. Found by the hostile fuzz tests (issue 20, item 8: every text on
SQLite and PostgreSQL). Fixed: api/auth.py answers 401 for a noauth token
holding a control character.
"""

import pytest

from tests.functional import api_support
from tests.images_support import IMAGE


@pytest.fixture(scope='module')
def app(plane_on_each_database):
    return api_support.make_app(plane_on_each_database)


@pytest.mark.parametrize('token', ['a\x00b:a\x00b', 'a\x1b[2Kb', 'u:p\x7f'])
def test_a_token_with_a_control_character_is_401(app, token):
    api = api_support.Api(app, token=token)
    assert api.get('/servers').status_code == 401
    created = api.post('/servers', json={'server': {
        'name': 'n', 'flavorRef': 'tiny', 'imageRef': IMAGE}})
    assert created.status_code == 401
    admin = api.as_(api_support.ADMIN_TOKEN)
    listed = admin.get('/servers?all_tenants=1').get_json()['servers']
    assert [s for s in listed if s['name'] == 'n'] == []

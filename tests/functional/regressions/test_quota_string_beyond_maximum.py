"""An admin's quota written as a string beyond the maximum answered 500.

``PUT /os-quota-sets/{project}`` with ``{"instances": "99999999999999999999"}``
passed the schema (its maximum, 2**31 - 1, held for integers only; a string
needed only digits) and reached SQLite, which raised ``OverflowError``.
Found by trying the API as an attacker would (issue 20, item 6). Fixed: the
schemas' minimum and maximum apply to an integer written as a string too
(api/schemas.py).
"""

import pytest

from tests.functional import api_support
from tests.functional.api_support import message


@pytest.fixture(scope='module')
def admin(shared_plane):
    return api_support.Api(api_support.make_app(shared_plane),
                           token=api_support.ADMIN_TOKEN)


@pytest.mark.parametrize('value, word', [
    ('99999999999999999999', 'maximum'), ('2147483648', 'maximum'),
    ('-2', 'minimum'), ('-99999999999999999999', 'minimum')])
def test_a_string_quota_beyond_the_bounds_is_400(admin, value, word):
    project = api_support.new_project().split(':')[1]
    before = admin.get('/os-quota-sets/%s' % project).get_json()
    resp = admin.put('/os-quota-sets/%s' % project,
                     json={'quota_set': {'instances': value}})
    assert resp.status_code == 400, resp.get_json()
    assert 'field/attribute quota_set.instances' in message(resp)
    assert word in message(resp)
    assert admin.get('/os-quota-sets/%s' % project).get_json() == before


def test_a_string_quota_within_the_bounds_is_taken(admin):
    project = api_support.new_project().split(':')[1]
    resp = admin.put('/os-quota-sets/%s' % project,
                     json={'quota_set': {'instances': '2147483647'}})
    assert resp.status_code == 200, resp.get_json()
    assert resp.get_json()['quota_set']['instances'] == 2147483647

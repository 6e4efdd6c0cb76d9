"""Integers written with 5,000 digits answered 500.

Python refuses to convert a string of more than 4,300 digits to an int
(``ValueError: Exceeds the limit (4300 digits)``): a backup ``rotation``, a
microversion header (``OpenStack-API-Version: compute 2.999...``,
``X-OpenStack-Nova-API-Version: 2.111...``) or an admin's quota written so
reached ``int()`` and answered 500. Found by trying the API as an attacker
would (issue 20, item 5). Fixed: the JSON decoder (api/jsonbody.py) refuses
a number of more than 100 digits naming its field; a number written as a
string is held to its schema's minimum and maximum without converting it,
and is at most 20 characters long (a zero-padded 1 of 5,001 digits is
small, but Python does not convert it either) (api/schemas.py); a version
number has at most 9 digits (api/microversion.py).
"""

import pytest

from tests.functional import api_support
from tests.functional.api_support import message

HUGE = '9' * 5000


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture(scope='module')
def api(app):
    return api_support.Api(app, token=api_support.new_project())


def _raw(api, method, path, text):
    return api.request(method, path, data=text,
                       headers={'Content-Type': 'application/json'})


@pytest.mark.parametrize('rotation', [HUGE, '"%s"' % HUGE,
                                      '"%s1"' % ('0' * 5000)])
def test_a_huge_backup_rotation_is_400(api, rotation):
    server = api.active(name='backed')
    resp = _raw(api, 'POST', '/servers/%s/action' % server['id'],
                '{"createBackup": {"name": "b", "backup_type": "daily", '
                '"rotation": %s}}' % rotation)
    assert resp.status_code == 400, resp.get_data()[:300]
    assert 'field/attribute createBackup.rotation' in message(resp)
    assert api.server(server['id'])['OS-EXT-STS:task_state'] is None


@pytest.mark.parametrize('header, value', [
    ('OpenStack-API-Version', 'compute 2.' + HUGE),
    ('OpenStack-API-Version', 'compute %s.1' % HUGE),
    ('X-OpenStack-Nova-API-Version', '2.' + '1' * 5000),
])
def test_a_huge_microversion_is_400_naming_the_header(api, header, value):
    resp = api.get('/servers', headers={header: value})
    assert resp.status_code == 400, resp.get_data()[:300]
    assert 'header %s' % header in message(resp)


@pytest.mark.parametrize('value', [HUGE, '"%s"' % HUGE, '-' + HUGE,
                                   '"-%s1"' % ('0' * 5000)])
def test_a_huge_quota_is_400(app, api, value):
    admin = api.as_(api_support.ADMIN_TOKEN)
    project = api.token.split(':')[1]
    before = admin.get('/os-quota-sets/%s' % project).get_json()
    resp = _raw(admin, 'PUT', '/os-quota-sets/%s' % project,
                '{"quota_set": {"instances": %s}}' % value)
    assert resp.status_code == 400, resp.get_data()[:300]
    assert 'field/attribute quota_set.instances' in message(resp)
    assert admin.get('/os-quota-sets/%s' % project).get_json() == before

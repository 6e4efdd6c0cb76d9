"""``GET /os-simple-tenant-usage/`` (one project's usage, its id empty)
answered every project's usage (``tenant_usages``), where Nova answers 404:
the API tier's routes ignore a trailing slash, so the request reached the
list. Found by Tempest (``TenantUsagesNegativeTestJSON.
test_get_usage_tenant_with_empty_tenant_id``, session 12). Fixed: the list
route answers Nova's 404 when the path ends with the slash.
"""

import pytest

from tests.functional import api_support


@pytest.fixture(scope='module')
def admin(shared_plane):
    return api_support.Api(api_support.make_app(shared_plane),
                           token=api_support.ADMIN_TOKEN)


def test_an_empty_project_id_is_404(admin):
    query = '?start=2026-01-01T00:00:00&end=2026-01-02T00:00:00'
    assert admin.get('/os-simple-tenant-usage/' + query).status_code == 404
    listed = admin.get('/os-simple-tenant-usage' + query)
    assert listed.status_code == 200
    assert 'tenant_usages' in listed.get_json()

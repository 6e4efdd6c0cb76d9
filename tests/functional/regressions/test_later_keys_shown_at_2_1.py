"""Bodies at 2.1 carried keys of later microversions and Tristate's own.

At microversion 2.1 (what a client that names none gets) a server carried
``locked`` (Nova adds it at 2.9), ``host_status`` (2.16), ``description``
(2.19), ``tags`` (2.26) and six ``tristate:*`` keys; a flavor carried
``description`` and ``extra_specs`` (2.55, 2.61); a quota set carried
Tristate's ``disk`` and lease quotas; a hypervisor ``tristate:*`` keys.
Tempest validates bodies strictly (``additionalProperties: false``), as
careful clients do, so every such answer failed it. Found by running
Tempest 47 against the embedded plane (issue 22). Fixed: api/views.py adds
each key at the microversion Nova adds it, and Tristate's own only from
its own microversion, 2.101 (tests/functional/test_api_response_schemas.py
checks every route with Tempest's schemas).
"""

import pytest

from tests.functional import api_support


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


def _ours(body):
    return sorted(k for k in body if k.startswith('tristate:'))


def test_a_server_at_2_1_has_no_later_key(app):
    member = api_support.Api(app, token=api_support.new_project())
    server = member.active()
    admin = api_support.Api(app, token=api_support.ADMIN_TOKEN)
    for api in (member, admin):
        body = api.server(server['id'], version='2.1')
        assert not {'locked', 'host_status', 'description', 'tags'} & set(
            body)
        assert _ours(body) == []
        assert body['metadata'] == {}
    assert admin.server(server['id'], version='2.16')['host_status'] == 'UP'
    assert member.server(server['id'], version='2.9')['locked'] is False
    assert _ours(member.server(server['id'], version='2.101'))


def test_flavors_quotas_and_hypervisors_at_2_1(app):
    member = api_support.Api(app, token=api_support.new_project())
    admin = api_support.Api(app, token=api_support.ADMIN_TOKEN)
    (flavor, *_) = member.get('/flavors/detail',
                              version='2.1').get_json()['flavors']
    assert not {'description', 'extra_specs'} & set(flavor)
    project = member.token.split(':')[1]
    quota = member.get('/os-quota-sets/%s' % project,
                       version='2.1').get_json()['quota_set']
    assert not {'disk', 'lease_hosts', 'lease_hours'} & set(quota)
    (host, *_) = admin.get('/os-hypervisors/detail',
                           version='2.1').get_json()['hypervisors']
    assert _ours(host) == []

"""Rebuild and update answers carried Nova's extended addresses too early.

Nova's ``PUT /servers/{id}`` and ``rebuild`` answers list a server's
``addresses`` with only ``version`` and ``addr`` below 2.75; the
``OS-EXT-IPS:type`` and ``OS-EXT-IPS-MAC:mac_addr`` keys appear there
only from 2.75, when those answers show everything ``GET`` shows.
Tristate added them at every microversion, so Tempest's
``test_rebuild_server_in_stop_state`` refused the rebuild's body
(additional properties). Found by the Tempest run of issue 22 once the
plane had a network.

Fixed: ``api.views._addresses`` extends them only in show and list, and
in update and rebuild from 2.75.
"""

import pytest

from tests.functional import api_support
from tests.functional import test_api_response_schemas as schemas
from tests.images_support import IMAGE


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture(scope='module')
def net(app):
    admin = api_support.Api(app, token=api_support.ADMIN_TOKEN)
    resp = admin.post('/os-networks', {'network': {
        'name': 'rebuilt-net', 'cidr': '10.21.0.0/24',
        'bridge': 'br-rebuilt'}})
    assert resp.status_code == 201, resp.get_json()
    yield resp.get_json()['network']
    # other modules of the shared plane count its networks
    gone = admin.delete('/os-networks/%s' % resp.get_json()['network']['id'])
    assert gone.status_code in (202, 204), gone.get_json()


@pytest.mark.parametrize('version', ['2.1', '2.74', '2.75'])
def test_update_and_rebuild_answers_are_novas(app, net, version):
    api = api_support.Api(app, token=api_support.new_project())
    made = api.post('/servers', {'server': {
        'name': 'vm', 'flavorRef': 'tiny', 'imageRef': IMAGE,
        'networks': [{'uuid': net['id']}]}})
    assert made.status_code == 202, made.get_json()
    server = api.settled(made.get_json()['server']['id'])
    assert server['status'] == 'ACTIVE', server
    path = '/servers/%s' % server['id']
    updated = api.put(path, {'server': {'name': 'renamed'}}, version=version)
    schemas.check(schemas.schema_of(schemas.S, 'update_server', version),
                  updated)
    rebuilt = api.post(path + '/action', {'rebuild': {'imageRef': IMAGE}},
                       version=version)
    # enable_instance_password on (the default): Tempest's schema with one
    schemas.check(schemas.schema_of(schemas.S,
                                    'rebuild_server_with_admin_pass',
                                    version), rebuilt)
    (entry,) = rebuilt.get_json()['server']['addresses']['rebuilt-net']
    assert ('OS-EXT-IPS:type' in entry) == (version == '2.75')
    api.settled(server['id'])
    api.delete(path)

"""Nova's ``accessIPv4``/``accessIPv6`` through novaclient and
openstacksdk: set on create, update and rebuild, stored on the server and
shown back in its views; an address that is not one is a 400 naming the
field, and changes nothing. Tristate does not act on them (nor does Nova):
they are data the user keeps on the server."""

from novaclient import exceptions as nova_exc
import openstack.exceptions
import pytest

from tests.functional import api_support
from tests.functional import client_support
from tests.functional import test_server_features_clients as features
from tests.images_support import IMAGE


@pytest.fixture(scope='module')
def url(shared_plane):
    with client_support.serving(shared_plane) as url:
        yield url


def test_access_addresses_are_kept_and_shown(url):
    token = api_support.new_project()
    nova = client_support.nova(url, token, '2.1')
    server = features._boot(nova, 'reachable', access_ip_v4='192.0.2.10',
                            access_ip_v6='2001:DB8::0:10')
    # as Nova shows them: the address written the usual way
    assert (server.accessIPv4, server.accessIPv6) == ('192.0.2.10',
                                                      '2001:db8::10')
    listed = {s.id: s for s in nova.servers.list()}
    assert listed[server.id].accessIPv6 == '2001:db8::10'

    sdk = client_support.sdk(url, token, '2.1')
    updated = sdk.compute.update_server(server.id, access_ipv6='::babe:202:202')
    assert updated.access_ipv6 == '::babe:202:202'
    assert updated.access_ipv4 == '192.0.2.10'       # untouched
    rebuilt = sdk.compute.rebuild_server(server.id, IMAGE,
                                         access_ipv4='198.51.100.7')
    assert rebuilt.access_ipv4 == '198.51.100.7'
    features._active(nova, server)
    shown = nova.servers.get(server.id)
    assert (shown.accessIPv4, shown.accessIPv6) == ('198.51.100.7',
                                                    '::babe:202:202')


def test_an_address_that_is_not_one_is_refused(url):
    token = api_support.new_project()
    nova = client_support.nova(url, token, '2.1')
    with pytest.raises(nova_exc.BadRequest, match='accessIPv4'):
        nova.servers.create('bad', IMAGE, 'tiny', access_ip_v4='1.1.1.1.1')
    assert nova.servers.list() == []
    server = features._boot(nova, 'ok', access_ip_v4='192.0.2.1')
    sdk = client_support.sdk(url, token, '2.1')
    with pytest.raises(openstack.exceptions.BadRequestException,
                       match='accessIPv6'):
        sdk.compute.update_server(server.id, access_ipv6='192.0.2.1')
    with pytest.raises(openstack.exceptions.BadRequestException,
                       match='accessIPv4'):
        sdk.compute.rebuild_server(server.id, IMAGE, access_ipv4='::1')
    assert nova.servers.get(server.id).accessIPv4 == '192.0.2.1'

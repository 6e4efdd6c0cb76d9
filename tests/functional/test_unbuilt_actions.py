"""Nova's server actions Tristate does not carry out yet (crash dumps,
network info injection, ...), through novaclient:
a server that does not exist is Nova's 404; one that does gets a 400 that
says the action is not supported yet, and nothing changes. An action key
Nova does not have either is Nova's 400 "There is no such action"."""

from novaclient import exceptions as nova_exc
import pytest

from api import actions
from tests.functional import api_support
from tests.functional import client_support
from tests.functional import test_server_features_clients as features

MISSING = '6f2b8a2e-2f0e-4c52-9c5c-000000000000'


@pytest.fixture(scope='module')
def url(shared_plane):
    with client_support.serving(shared_plane) as url:
        yield url


@pytest.fixture(scope='module')
def admin(url):
    return client_support.nova(url, api_support.ADMIN_TOKEN, '2.1')


@pytest.fixture(scope='module')
def server(admin):
    return features._boot(admin, 'unmoved')


def test_migrate_of_a_missing_server_is_404(admin):
    with pytest.raises(nova_exc.NotFound):
        admin.servers.migrate(MISSING)


def test_unbuilt_actions_change_nothing(admin, server):
    # cold migration is built, but this plane has no image service of its
    # own to carry the disk: a 400 that says so, nothing started
    with pytest.raises(nova_exc.BadRequest, match=r'\[image\] service_url'):
        admin.servers.migrate(server)
    with pytest.raises(nova_exc.BadRequest, match='not supported yet'):
        admin.client.post('/servers/%s/action' % server.id,
                          json={'injectNetworkInfo': None})
    shown = admin.servers.get(server.id)
    assert shown.status == 'ACTIVE'
    assert [a.action for a in admin.instance_action.list(server)] == [
        'create']


@pytest.mark.parametrize('key', sorted(actions.UNBUILT))
def test_every_unbuilt_action_answers_as_nova(url, server, key):
    unbuilt = actions.UNBUILT[key]
    path = '/servers/%s/action'
    nova = client_support.nova(url, api_support.ADMIN_TOKEN,
                               '2.%d' % unbuilt.since[1])
    with pytest.raises(nova_exc.NotFound):
        nova.client.post(path % MISSING, json={key: None})
    with pytest.raises(nova_exc.ClientException) as err:
        nova.client.post(path % server.id, json={key: None})
    assert err.value.code == unbuilt.status
    if unbuilt.until:      # gone at later microversions, as in Nova
        later = client_support.nova(url, api_support.ADMIN_TOKEN,
                                    '2.%d' % (unbuilt.until[1] + 1))
        with pytest.raises(nova_exc.NotFound):
            later.client.post(path % server.id, json={key: None})


def test_a_key_nova_does_not_have_is_400(admin, server):
    with pytest.raises(nova_exc.BadRequest,
                       match='There is no such action: explode'):
        admin.client.post('/servers/%s/action' % server.id,
                          json={'explode': None})

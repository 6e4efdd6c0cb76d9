"""``os-migrateLive`` to a host that does not exist was not Nova's 400
"Compute host ... could not be found." (the claim went to the conductor,
whose scheduler answered that no host would do). Found by Tempest
(``LiveMigrationNegativeTest.test_invalid_host_for_migration``, session
12). Fixed: the API checks the named host against the compute hosts before
anything is claimed; the server stays ACTIVE with no task.
"""

from novaclient import exceptions as nova_exc
import pytest

from tests.functional import api_support
from tests.functional import client_support
from tests.functional import test_server_features_clients as features


@pytest.fixture(scope='module')
def url(shared_plane):
    with client_support.serving(shared_plane) as url:
        yield url


def test_an_unknown_host_is_400_and_the_server_stays(url):
    admin = client_support.nova(url, api_support.ADMIN_TOKEN, '2.25')
    server = features._boot(admin, 'stay')
    with pytest.raises(nova_exc.BadRequest,
                       match='Compute host nosuch-host could not be found'):
        admin.servers.live_migrate(server, 'nosuch-host', 'auto')
    shown = admin.servers.get(server.id)
    assert shown.status == 'ACTIVE'
    assert [a.action for a in admin.instance_action.list(server)] == [
        'create']

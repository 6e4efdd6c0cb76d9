"""The action log showed Tristate's action names to Nova's clients.

``GET /servers/{id}/os-instance-actions`` answered each entry's ``action``
with the name of Tristate's action table (``build``, ``snapshot``,
``live_migrate``, ``set_password``, ...) at every microversion, where Nova
records ``create``, ``createImage``, ``live-migration``,
``changePassword``: a script that looks for its ``createImage`` in
``openstack server event list`` never found it. Found by the walk of every
action through the three clients (tests/functional/test_client_walk.py).

Fixed: ``action`` is Nova's name at every microversion
(``api.views.NOVA_ACTION_NAMES``); Tristate's own is ``tristate:action``,
from its microversion only.
"""

import pytest

from tests.functional import api_support
from tests.functional.api_support import NO_HEADER
from tests.functional.api_support import Api


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.mark.parametrize('version', [NO_HEADER, '2.58', '2.101'])
def test_the_action_log_names_actions_as_nova(app, version):
    api = Api(app, token=api_support.new_project(), version=version)
    server = api.active()
    api.act(server['id'], {'reboot': {'type': 'HARD'}})
    api.act(server['id'], {'createImage': {'name': 'snap'}})
    log = api.get('/servers/%s/os-instance-actions'
                  % server['id']).get_json()['instanceActions']
    assert [e['action'] for e in log] == ['createImage', 'reboot', 'create']
    assert [e.get('tristate:action') for e in log] == (
        ['snapshot', 'reboot_hard', 'build'] if version == '2.101'
        else [None] * 3)

"""User metadata and tags changed in any state, even while a task ran.

Nova changes a server's metadata only when its vm_state is active,
paused, suspended or stopped and no task runs (``409`` otherwise), and its
tags only in those four states. Tristate changed both in any state: a
rescued or resized server's metadata, or a server's while it was being
rebuilt, which a client then saw change under a task that did not make
the change. Found comparing the attribute routes with Nova's
``compute.api.update_instance_metadata`` and ``server_tags``.

Fixed: the conductor refuses the change with a ``409`` naming the state
(``conductor.flows._refuse_attribute_state``), in the transaction that
reads the row.
"""

import pytest

from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message
from compute_agent.virt import fake
from tests.functional.conftest import wait_hung


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture
def api(app):
    return Api(app, token=api_support.new_project())


def test_metadata_and_tags_of_a_rescued_server_are_refused(api):
    server = api.active()
    api.act(server['id'], {'rescue': None})
    meta = api.put('/servers/%s/metadata' % server['id'],
                   {'metadata': {'a': 'b'}})
    assert meta.status_code == 409, meta.get_json()
    assert 'rescued' in message(meta)
    tags = api.put('/servers/%s/tags' % server['id'], {'tags': ['x']})
    assert tags.status_code == 409
    assert 'a' not in api.server(server['id'])['metadata']
    api.act(server['id'], {'unrescue': None})
    assert api.put('/servers/%s/metadata' % server['id'],
                   {'metadata': {'a': 'b'}}).status_code == 200


def test_metadata_while_a_task_runs_is_refused_tags_are_not(
        api, shared_plane):
    server = api.active()
    host = api.host(server['id'])
    store = fake.HostStore(shared_plane.conf.state_dir, host)
    store.set_fault('power_off', 'hang', count=1)
    try:
        api.action(server['id'], {'os-stop': None})
        wait_hung(shared_plane, host, 'power_off')
        meta = api.post('/servers/%s/metadata' % server['id'],
                        {'metadata': {'a': 'b'}})
        assert meta.status_code == 409
        assert 'stopping' in message(meta)
        assert api.put('/servers/%s/tags/t1' % server['id'],
                       None).status_code == 201
    finally:
        store.clear_faults()
    after = api.settled(server['id'])
    assert 'a' not in after['metadata'] and after['tags'] == ['t1']

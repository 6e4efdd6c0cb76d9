"""``POST /servers/{id}/action``: every action key through the API against an
embedded plane, and the 409 and 400 answers that change nothing."""

import pytest

from api import actions as api_actions
from common import actions as table
from common.states import vm
from compute_agent.virt import fake
from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.images_support import IMAGES


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture
def api(app):
    return Api(app, token=api_support.new_project())


@pytest.fixture
def admin(app):
    return Api(app, token=api_support.ADMIN_TOKEN)


def _snapshot(api, server_id):
    """What a rejected request must leave unchanged."""
    server = api.server(server_id)
    log = api.get('/servers/%s/os-instance-actions'
                  % server_id).get_json()['instanceActions']
    keys = ('status', 'OS-EXT-STS:vm_state', 'OS-EXT-STS:task_state',
            'tristate:task_id', 'OS-EXT-STS:power_state', 'flavor',
            'metadata', 'updated')
    return dict({k: server[k] for k in keys},
                host=api.host(server_id)), len(log)


# (actions run first, the action, status after, vm_state after, as admin)
WALK = [
    ((), {'reboot': {'type': 'SOFT'}}, 'ACTIVE', vm.ACTIVE, False),
    ((), {'reboot': {'type': 'HARD'}}, 'ACTIVE', vm.ACTIVE, False),
    ((), {'os-stop': None}, 'SHUTOFF', vm.STOPPED, False),
    (({'os-stop': None},), {'os-start': None}, 'ACTIVE', vm.ACTIVE, False),
    ((), {'pause': None}, 'PAUSED', vm.PAUSED, False),
    (({'pause': None},), {'unpause': None}, 'ACTIVE', vm.ACTIVE, False),
    ((), {'suspend': None}, 'SUSPENDED', vm.SUSPENDED, False),
    (({'suspend': None},), {'resume': None}, 'ACTIVE', vm.ACTIVE, False),
    ((), {'rescue': None}, 'RESCUE', vm.RESCUED, False),
    ((), {'rescue': {'rescue_image_ref': IMAGES['rescue-img']}}, 'RESCUE',
     vm.RESCUED, False),
    (({'os-stop': None}, {'rescue': None}), {'unrescue': None}, 'SHUTOFF',
     vm.STOPPED, False),
    ((), {'rebuild': {'imageRef': IMAGES['debian-12']}},
     'ACTIVE', vm.ACTIVE, False),
    ((), {'resize': {'flavorRef': 'small'}}, 'VERIFY_RESIZE', vm.RESIZED,
     False),
    (({'resize': {'flavorRef': 'small'}},), {'confirmResize': None},
     'ACTIVE', vm.ACTIVE, False),
    (({'resize': {'flavorRef': 'small'}},), {'revertResize': None},
     'ACTIVE', vm.ACTIVE, False),
    ((), {'createImage': {'name': 'snap1'}}, 'ACTIVE', vm.ACTIVE, False),
    ((), {'createBackup': {'name': 'bk', 'backup_type': 'daily',
                           'rotation': 2}}, 'ACTIVE', vm.ACTIVE, False),
    ((), {'changePassword': {'adminPass': 's3cret'}}, 'ACTIVE', vm.ACTIVE,
     False),
    ((), {'os-migrateLive': {'host': None, 'block_migration': 'auto'}},
     'ACTIVE', vm.ACTIVE, True),
    ((), {'tristate:softDelete': None}, 'SOFT_DELETED', vm.SOFT_DELETED,
     False),
    (({'tristate:softDelete': None},), {'restore': None}, 'ACTIVE',
     vm.ACTIVE, False),
    ((), {'os-resetState': {'state': 'error'}}, 'ERROR', vm.ERROR, True),
    (({'os-stop': None},), {'os-resetState': {'state': 'active'}}, 'ACTIVE',
     vm.ACTIVE, True),
]


def _walk_id(case):
    before, action, *_ = case
    return '+'.join([next(iter(b)) for b in before] + [next(iter(action))])


@pytest.mark.parametrize('case', WALK, ids=_walk_id)
def test_every_action(api, admin, case):
    before, action, status, vm_state, as_admin = case
    server = api.active()
    for body in before:
        api.act(server['id'], body)
    actor = admin if as_admin else api
    resp = actor.action(server['id'], action)
    after = api.settled(server['id'])
    assert (after['status'], after['OS-EXT-STS:vm_state']) == (
        status, vm_state), after
    key = next(iter(action))
    spec = api_actions.ACTIONS[key]
    if spec.kind == api_actions.TASK:
        assert resp.headers['Tristate-Task-Id']
        log = api.get('/servers/%s/os-instance-actions'
                      % server['id']).get_json()['instanceActions']
        name = spec.resolve(action[key])[0]
        mine = [e for e in log if e['tristate:action'] == name]
        assert mine[0]['tristate:result'] == 'success', mine[0]


def test_every_action_of_the_table_has_an_api_key():
    reachable = {spec.action for spec in api_actions.ACTIONS.values()}
    reachable |= {'reboot_hard', 'build'}     # reboot HARD; POST /servers
    reachable |= {'evacuate_stopped'}       # evacuate from 2.95
    # not tasks: the lock is an attribute, the console log a read, a
    # console URL a token (api/routes/consoles.py)
    reachable -= {'lock', 'unlock', 'get_console_output',
                  'get_serial_console', 'get_vnc_console'}
    asked_for = {a.name for a in table.ACTIONS.values() if not a.system}
    assert reachable == asked_for


def test_resize_changes_the_flavor(api):
    server = api.active(flavor='tiny')
    api.act(server['id'], {'resize': {'flavorRef': 'small'}})
    after = api.act(server['id'], {'confirmResize': None})
    assert after['flavor']['original_name'] == 'small'


def test_live_migration_moves_the_server(api, admin):
    server = api.active()
    host = api.host(server['id'])
    admin.action(server['id'], {'os-migrateLive': {'host': None,
                                                   'block_migration': 'auto'}})
    after = api.settled(server['id'])
    assert api.host(after['id']) != host


def test_force_delete_hard_deletes(api):
    server = api.active()
    assert api.action(server['id'], {'forceDelete': None}).status_code == 202
    assert api.get('/servers/%s' % server['id']).status_code == 404


# --- 409: the table denies ---------------------------------------------------

def test_a_denied_action_is_409_with_the_full_reason(api):
    server = api.active()
    before = _snapshot(api, server['id'])
    resp = api.post('/servers/%s/action' % server['id'], {'unpause': None})
    assert resp.status_code == 409
    text = message(resp)
    assert server['id'] in text
    assert 'vm_state is active' in text
    assert 'unpause needs vm_state in paused' in text
    assert 'conflictingRequest' in resp.get_json()
    assert _snapshot(api, server['id']) == before


def test_an_action_while_a_task_runs_is_409_naming_the_task(api, shared_plane):
    server = api.active()
    store = fake.HostStore(shared_plane.conf.state_dir,
                           api.host(server['id']))
    store.set_fault('power_off', 'hang')
    try:
        api.action(server['id'], {'os-stop': None})
        running = api.server(server['id'])
        assert running['OS-EXT-STS:task_state'] == 'stopping'
        before = _snapshot(api, server['id'])
        resp = api.post('/servers/%s/action' % server['id'], {'pause': None})
        assert resp.status_code == 409
        text = message(resp)
        assert 'task stopping (task_id %s) is running' % (
            running['tristate:task_id']) in text
        assert 'needs no task running' in text
        assert _snapshot(api, server['id']) == before
    finally:
        store.clear_faults()
    api.settled(server['id'])


def test_error_allows_only_delete_and_reset(api, admin):
    server = api.active()
    admin.act(server['id'], {'os-resetState': {'state': 'error'}})
    resp = api.post('/servers/%s/action' % server['id'], {'os-start': None})
    assert resp.status_code == 409
    assert 'vm_state is error' in message(resp)
    assert api.delete('/servers/%s' % server['id']).status_code == 204


# --- 400: malformed bodies ---------------------------------------------------

@pytest.fixture(scope='module')
def victim(app):
    """One server every malformed request is aimed at: none may change it."""
    return Api(app, token=api_support.ADMIN_TOKEN).active()


@pytest.mark.parametrize('body, expected', [
    ({'explode': None}, 'There is no such action: explode'),
    ({'os-stop': None, 'os-start': None}, 'exactly one key'),
    ({}, 'exactly one key'),
    ([], "[] is not of type 'object'"),
    ({'reboot': {}}, 'field/attribute reboot.type'),
    ({'reboot': {'type': 'WARM'}}, "'WARM' is not one of"),
    ({'resize': {}}, 'field/attribute resize.flavorRef'),
    ({'resize': {'flavorRef': 'enormous'}}, "unknown flavor 'enormous'"),
    ({'resize': {'flavorRef': 'tiny'}}, 'already has flavor tiny'),
    ({'os-stop': {'force': True}}, 'field/attribute os-stop.force'),
    ({'createBackup': {'name': 'b', 'backup_type': 'daily'}},
     'field/attribute createBackup.rotation'),
    ({'changePassword': {'adminPass': 7}},
     'field/attribute changePassword.adminPass'),
    ({'rebuild': {}}, 'field/attribute rebuild.imageRef'),
    ({'os-resetState': {'state': 'paused'}}, "'paused' is not one of"),
])
def test_a_malformed_action_is_400_and_changes_nothing(admin, victim, body,
                                                        expected):
    server = victim
    before = _snapshot(admin, server['id'])
    resp = admin.post('/servers/%s/action' % server['id'], body)
    assert resp.status_code == 400, resp.get_json()
    assert expected in message(resp)
    assert _snapshot(admin, server['id']) == before

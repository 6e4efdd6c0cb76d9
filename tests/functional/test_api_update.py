"""``PUT /servers/{id}``: rename, answered with the server; bad input is a
400 naming the field and changes nothing; a conductor client capped below
RPC 1.3 refuses it with the reason."""

import pytest

from api import service as api_service
from api import wsgi
from common import exception
from compute_agent.virt import fake
from conductor import rpcapi
from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_hung


@pytest.fixture(scope='module')
def app(shared_plane):
    return api_support.make_app(shared_plane)


@pytest.fixture
def api(app):
    return Api(app, token=api_support.new_project())


def _rename(api, server_id, body):
    return api.put('/servers/%s' % server_id, body)


def test_rename_answers_with_the_server(api):
    server = api.active(name='before')
    resp = _rename(api, server['id'], {'server': {'name': 'after'}})
    assert resp.status_code == 200, resp.get_json()
    body = resp.get_json()['server']
    assert (body['id'], body['name'], body['status']) == (
        server['id'], 'after', 'ACTIVE')
    assert api.server(server['id'])['name'] == 'after'
    # no task: the action log has no entry for it
    log = api.get('/servers/%s/os-instance-actions'
                  % server['id']).get_json()['instanceActions']
    assert [e['action'] for e in log] == ['create']


def test_rename_with_nothing_to_change_answers_the_server(api):
    server = api.active(name='same')
    for body in ({'server': {}}, {'server': {'name': 'same'}}):
        resp = _rename(api, server['id'], body)
        assert resp.status_code == 200, resp.get_json()
        assert resp.get_json()['server']['name'] == 'same'
    # an access address that is not one: refused, nothing changes
    resp = _rename(api, server['id'], {'server': {'name': 'other',
                                                  'accessIPv4': '10.0.0'}})
    assert resp.status_code == 400
    assert 'server.accessIPv4' in resp.get_json()['badRequest']['message']
    assert api.server(server['id'])['name'] == 'same'
    # one that is: stored with the name, shown back
    resp = _rename(api, server['id'], {'server': {'name': 'other',
                                                  'accessIPv4': '10.0.0.1'}})
    assert resp.status_code == 200, resp.get_json()
    assert api.server(server['id'])['accessIPv4'] == '10.0.0.1'
    assert api.server(server['id'])['name'] == 'other'


def test_rename_while_a_task_runs_keeps_the_task(api, shared_plane):
    server = api.active(name='busy')
    store = fake.HostStore(shared_plane.conf.state_dir,
                           api.host(server['id']))
    store.set_fault('power_off', 'hang', count=1)
    try:
        api.action(server['id'], {'os-stop': None})
        # Cleared before the agent's driver call, the stop would succeed.
        wait_hung(shared_plane, api.host(server['id']), 'power_off')
        running = api.server(server['id'])
        assert running['OS-EXT-STS:task_state'] == 'stopping'
        resp = _rename(api, server['id'], {'server': {'name': 'renamed'}})
        assert resp.status_code == 200, resp.get_json()
        body = resp.get_json()['server']
        assert body['OS-EXT-STS:task_state'] == 'stopping'
        assert body['tristate:task_id'] == running['tristate:task_id']
    finally:
        store.clear_faults()
    # the hung stop ends (rolled back) by its own write; the name stays
    after = api.settled(server['id'])
    assert (after['name'], after['status']) == ('renamed', 'ACTIVE')


@pytest.mark.parametrize('body, field', [
    ({'server': {'name': ''}}, 'server.name'),
    ({'server': {'name': ' padded '}}, 'server.name'),
    ({'server': {'name': 'x' * 256}}, 'server.name'),
    ({'server': {'name': 7}}, 'server.name'),
    ({'server': {'description': 'Tristate stores none'}},
     'server.description'),
    ({'server': {'name': 'ok', 'flavorRef': 'small'}}, 'server.flavorRef'),
    ({'name': 'flat'}, 'server'),
    ({}, 'server'),
    ([], 'body'),
])
def test_bad_renames_are_400_naming_the_field(api, body, field):
    server = api.active(name='keep')
    before = api.server(server['id'])
    # at 2.1 (a description is refused before 2.19, as Nova)
    resp = api.put('/servers/%s' % server['id'], body, version='2.1')
    assert resp.status_code == 400, resp.get_json()
    assert 'field/attribute %s.' % field in message(resp)
    after = api.server(server['id'])
    assert (after['name'], after['updated']) == (before['name'],
                                                 before['updated'])


def test_rename_of_no_such_or_another_projects_server_is_404(api, app):
    server = api.active(name='mine')
    other = Api(app, token=api_support.new_project())
    body = {'server': {'name': 'stolen'}}
    assert _rename(other, server['id'], body).status_code == 404
    assert _rename(api, 'no-such-id', body).status_code == 404
    assert api.server(server['id'])['name'] == 'mine'
    assert api.delete('/servers/%s' % server['id']).status_code == 204
    assert _rename(api, server['id'], body).status_code == 404


def test_a_client_capped_below_1_3_refuses_rename(shared_plane, ctx):
    conf = shared_plane.conf
    inst = shared_plane.client.create_instance(ctx, name='old', flavor='tiny',
                                               image_ref='cirros')
    set_opts(conf, 'upgrade_levels', conductor='1.1')
    try:
        capped = rpcapi.ConductorAPI(shared_plane.bus, conf)
        with pytest.raises(exception.ServiceUnavailable) as err:
            capped.rename_instance(ctx, inst['uuid'], name='new')
        assert 'not supported until the conductors are upgraded' in (
            err.value.message)
        assert 'needs conductor RPC API 1.3' in err.value.message
        app = wsgi.create_app(conf, api_service.make_client(
            conf, shared_plane.bus, shared_plane.statedb))
        resp = Api(app).put('/servers/%s' % inst['uuid'],
                            {'server': {'name': 'new'}})
        assert resp.status_code == 503
        assert 'not supported until the conductors are upgraded' in (
            message(resp))
    finally:
        conf.clear_override('conductor', group='upgrade_levels')
    assert shared_plane.statedb.get_instance(inst['uuid'])['name'] == 'old'

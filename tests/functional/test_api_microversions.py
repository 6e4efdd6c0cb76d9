"""Microversions: negotiation like Nova's (406 out of range, the legacy
header too), and PENDING (seed 004) shown only from the microversion that
introduced it: older requests see ERROR."""

import pytest

from api import microversion
from common.states import vm
from tests.functional import api_support
from tests.functional.api_support import NO_HEADER
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.functional.conftest import set_opts
from tests.images_support import IMAGE

HUGE = 'huge:1:100000000:1'      # 100 TB of RAM: no fake host has room


@pytest.fixture(scope='module')
def app(shared_plane):
    conf = shared_plane.conf
    conf.set_override('use_pending_state', True)
    set_opts(conf, 'conductor',
             flavors=list(conf.conductor.flavors) + [HUGE])
    return api_support.make_app(shared_plane)


@pytest.fixture
def api(app):
    return Api(app, token=api_support.new_project())


@pytest.fixture
def admin(app):
    return Api(app, token=api_support.ADMIN_TOKEN)


# --- negotiation -------------------------------------------------------------

@pytest.mark.parametrize('headers, expected', [
    ({'X-Test': 'no version header'}, '2.1'),
    ({'OpenStack-API-Version': 'compute 2.53'}, '2.53'),
    ({'OpenStack-API-Version': 'volume 3.10, compute 2.60'}, '2.60'),
    ({'OpenStack-API-Version': 'volume 3.10'}, '2.1'),
    ({'X-OpenStack-Nova-API-Version': '2.20'}, '2.20'),
    ({'OpenStack-API-Version': 'compute latest'}, str(microversion.MAX)),
    ({'OpenStack-API-Version': 'compute 2.30',
      'X-OpenStack-Nova-API-Version': '2.10'}, '2.30'),
])
def test_the_version_asked_for_is_echoed(api, headers, expected):
    resp = api.get('/servers', headers=headers, version=NO_HEADER)
    assert resp.status_code == 200
    assert resp.headers['OpenStack-API-Version'] == 'compute %s' % expected
    assert resp.headers['X-OpenStack-Nova-API-Version'] == expected
    assert 'OpenStack-API-Version' in resp.headers['Vary']


@pytest.mark.parametrize('headers', [
    {'OpenStack-API-Version': 'compute 2.102'},
    {'OpenStack-API-Version': 'compute 3.0'},
    {'OpenStack-API-Version': 'compute 2.0'},
    {'X-OpenStack-Nova-API-Version': '1.1'},
])
def test_a_version_out_of_range_is_406(api, headers):
    resp = api.get('/servers', headers=headers)
    assert resp.status_code == 406
    assert 'Minimum is 2.1 and maximum is %s' % microversion.MAX in (
        message(resp))


@pytest.mark.parametrize('value', ['compute two', 'compute 2', 'compute 2.x'])
def test_a_malformed_version_is_400(api, value):
    resp = api.get('/servers', headers={'OpenStack-API-Version': value})
    assert resp.status_code == 400
    assert 'invalid format' in message(resp)


def test_the_flavor_is_embedded_from_2_47(api):
    server = api.active(flavor='small')
    assert api.server(server['id'], version='2.46')['flavor']['id'] == 'small'
    embedded = api.server(server['id'], version='2.47')['flavor']
    assert (embedded['original_name'], embedded['ram']) == ('small', 2048)


# --- PENDING -----------------------------------------------------------------

@pytest.fixture
def buried(api):
    """A server no host had room for: PENDING (use_pending_state is on)."""
    created = api.create(flavor='huge')
    server = api.settled(created['id'], version='latest')
    assert server['OS-EXT-STS:vm_state'] == vm.PENDING, server
    return server


@pytest.mark.parametrize('version, status, vm_state', [
    (NO_HEADER, 'ERROR', vm.ERROR),
    ('2.1', 'ERROR', vm.ERROR),
    ('2.100', 'ERROR', vm.ERROR),
    (str(microversion.PENDING), 'PENDING', vm.PENDING),
    ('latest', 'PENDING', vm.PENDING),
])
def test_pending_is_error_below_its_microversion(api, buried, version,
                                                  status, vm_state):
    shown = api.server(buried['id'], version=version)
    assert (shown['status'], shown['OS-EXT-STS:vm_state']) == (status,
                                                                vm_state)
    assert 'No valid host' in shown['fault']['message']
    listed = api.get('/servers/detail', version=version).get_json()
    assert [(s['status'], s['OS-EXT-STS:vm_state'])
            for s in listed['servers']] == [(status, vm_state)]
    log = api.get('/servers/%s/os-instance-actions' % buried['id'],
                  version=version).get_json()['instanceActions']
    # the action log's states are Tristate's keys: from 2.101 only
    assert log[0].get('tristate:vm_state_after') == (
        vm_state if vm_state == vm.PENDING else None)
    by_status = api.ids('/servers/detail', version=version,
                        query_string={'status': status})
    assert by_status == [buried['id']]


def test_a_pending_server_is_rebuilt_or_reset_to_error(api, admin, buried):
    api.action(buried['id'], {'rebuild': {'imageRef': IMAGE}})
    again = api.settled(buried['id'], version='latest')
    assert again['OS-EXT-STS:vm_state'] == vm.PENDING    # still no room
    log = api.get('/servers/%s/os-instance-actions'
                  % buried['id']).get_json()['instanceActions']
    assert log[0]['action'] == 'rebuild'
    assert log[0]['tristate:result'] == 'buried'

    denied = admin.post('/servers/%s/action' % buried['id'],
                        {'os-resetState': {'state': 'active'}})
    assert denied.status_code == 409
    assert 'vm_state is pending' in message(denied)
    forbidden = api.post('/servers/%s/action' % buried['id'],
                         {'os-resetState': {'state': 'error'}})
    assert forbidden.status_code == 403
    admin.action(buried['id'], {'os-resetState': {'state': 'error'}})
    after = api.server(buried['id'], version='latest')
    assert (after['status'], after['OS-EXT-STS:vm_state']) == ('ERROR',
                                                               vm.ERROR)

"""The reservation API (Blazar v1 under ``/reservation``) in-process, what
python-blazarclient does not show: version discovery and headers, Blazar's
error shape, the refusals of what Tristate cannot honour (and that they
change nothing), one lease seen through both faces, the pool's 404 and 409;
and ``/v2.1/os-hosts`` answering as Nova's hosts API (gone at 2.43)."""

import datetime

import pytest

from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.conftest import reservable

HOUR = datetime.timedelta(hours=1)
ADMIN = {'X-Auth-Token': api_support.ADMIN_TOKEN}


@pytest.fixture
def plane(make_plane, clock):
    plane = make_plane(hosts=2, clock=clock)
    reservable(plane, 'host1')
    return plane


@pytest.fixture
def http(app):
    return app.test_client()


@pytest.fixture
def member():
    return {'X-Auth-Token': api_support.new_project()}


def _body(clock, **reservation):
    start = clock() + HOUR
    res = {'resource_type': 'physical:host', 'min': 1, 'max': 1,
           'hypervisor_properties': '', 'resource_properties': ''}
    res.update(reservation)
    return {'name': 'night', 'start_date': start.strftime('%Y-%m-%d %H:%M'),
            'end_date': (start + HOUR).strftime('%Y-%m-%d %H:%M'),
            'reservations': [res], 'events': [], 'before_end_date': None}


def _leases(http, headers):
    resp = http.get('/reservation/v1/leases', headers=headers)
    assert resp.status_code == 200, resp.get_json()
    return resp.get_json()['leases']


def test_version_discovery_needs_no_token(plane):
    http = api_support.make_app(plane, noauth_default_user='').test_client()
    assert http.get('/reservation/v1/leases').status_code == 401
    resp = http.get('/reservation/')
    assert resp.status_code == 300
    (version,) = resp.get_json()['versions']
    assert (version['id'], version['status'], version['min_version'],
            version['max_version']) == ('v1.0', 'CURRENT', '1.0', '1.0')
    assert version['links'][0]['href'].endswith('/reservation/v1')


def test_microversion_header(http, member):
    resp = http.get('/reservation/v1/leases', headers=dict(
        member, **{'OpenStack-API-Version': 'reservation 1.0'}))
    assert resp.status_code == 200
    assert resp.headers['OpenStack-API-Version'] == 'reservation 1.0'
    assert 'OpenStack-API-Version' in resp.headers['Vary']
    resp = http.get('/reservation/v1/leases', headers=dict(
        member, **{'OpenStack-API-Version': 'reservation 1.1'}))
    assert resp.status_code == 406
    assert resp.get_json()['error_name'] == 'NOT_ACCEPTABLE'


def test_errors_have_blazar_shape(http, member):
    resp = http.get('/reservation/v1/leases/nope', headers=member)
    assert resp.status_code == 404
    body = resp.get_json()
    assert set(body) == {'error_code', 'error_message', 'error_name'}
    assert body['error_code'] == body['error_name'] == 404
    assert 'nope' in body['error_message']
    resp = http.get('/reservation/v1/nothing', headers=member)
    assert resp.status_code == 404 and resp.get_json()['error_code'] == 404


@pytest.mark.parametrize('field, reservation, expected', [
    ('reservations.0.resource_type',
     {'resource_type': 'virtual:instance'}, 'virtual:instance'),
    ('reservations.0.resource_properties',
     {'resource_properties': '["==", "$gpu", "1"]'}, 'extra capabilities'),
    ('reservations.0.before_end', {'before_end': 'snapshot'},
     'before_end action'),
])
def test_what_tristate_cannot_honour_is_refused(http, member, clock, field,
                                                reservation, expected):
    resp = http.post('/reservation/v1/leases', headers=member,
                     json=_body(clock, **reservation))
    assert resp.status_code == 400, resp.get_json()
    message = resp.get_json()['error_message']
    assert field in message and expected in message
    assert 'not supported' in message
    assert _leases(http, member) == []


@pytest.mark.parametrize('reservations', [5, 'x', {'min': 1}, [5], None])
def test_a_body_of_the_wrong_shape_is_400(http, member, clock, reservations):
    body = dict(_body(clock), reservations=reservations)
    resp = http.post('/reservation/v1/leases', headers=member, json=body)
    assert resp.status_code == 400, resp.get_json()
    assert 'reservations' in resp.get_json()['error_message']


def test_own_events_and_reservation_changes_are_refused(http, member, clock):
    body = dict(_body(clock), events=[{'event_type': 'notification',
                                       'event_date': '2030-01-01 10:00'}])
    resp = http.post('/reservation/v1/leases', headers=member, json=body)
    assert resp.status_code == 400
    assert 'events' in resp.get_json()['error_message']
    assert 'not supported' in resp.get_json()['error_message']

    resp = http.post('/reservation/v1/leases', headers=member,
                     json=_body(clock))
    assert resp.status_code == 201, resp.get_json()
    lease = resp.get_json()['lease']
    resp = http.put('/reservation/v1/leases/%s' % lease['id'],
                    headers=member, json={'reservations': [
                        {'id': lease['reservations'][0]['id'], 'max': 2}]})
    assert resp.status_code == 400
    assert 'not supported' in resp.get_json()['error_message']
    resp = http.get('/reservation/v1/leases/%s' % lease['id'],
                    headers=member)
    assert resp.get_json()['lease'] == lease


def test_one_lease_two_faces(app, http, member, clock):
    resp = http.post('/reservation/v1/leases', headers=member, json=dict(
        _body(clock), **{'tristate:on_end': 'stop'}))
    assert resp.status_code == 201, resp.get_json()
    lease = resp.get_json()['lease']
    assert (lease['status'], lease['trust_id'], lease['degraded'],
            lease['tristate:on_end']) == ('PENDING', None, False, 'stop')
    assert 'on_end' not in lease and 'before_end_date' not in lease
    (res,) = lease['reservations']
    assert (res['min'], res['max'], res['tristate:hosts']) == (
        1, 1, ['host1'])
    mine = Api(app, token=member['X-Auth-Token'])
    same = mine.get('/leases/%s' % lease['id']).get_json()['lease']
    assert (same['id'], same['on_end'], same['start_date']) == (
        lease['id'], 'stop', lease['start_date'])
    # another project does not see it
    other = {'X-Auth-Token': api_support.new_project()}
    assert _leases(http, other) == []
    assert http.get('/reservation/v1/leases/%s' % lease['id'],
                    headers=other).status_code == 404
    # an admin sees every project's, as in Blazar
    assert lease['id'] in [x['id'] for x in _leases(http, ADMIN)]


def test_pool_not_found_conflict_and_admin_only(http, member, clock):
    assert http.get('/reservation/v1/os-hosts',
                    headers=member).status_code == 403
    resp = http.get('/reservation/v1/os-hosts/host2', headers=ADMIN)
    assert resp.status_code == 404
    resp = http.post('/reservation/v1/os-hosts', headers=ADMIN,
                     json={'name': 'host1'})
    assert resp.status_code == 409
    resp = http.post('/reservation/v1/os-hosts', headers=ADMIN,
                     json={'name': 'host2', 'gpu': 'yes'})
    assert resp.status_code == 400
    assert 'not supported' in resp.get_json()['error_message']
    resp = http.post('/reservation/v1/os-hosts', headers=ADMIN,
                     json={'name': 'no-such-host'})
    assert resp.status_code == 404
    assert http.post('/reservation/v1/leases', headers=member,
                     json=_body(clock)).status_code == 201
    resp = http.delete('/reservation/v1/os-hosts/host1', headers=ADMIN)
    assert resp.status_code == 409
    assert resp.get_json()['error_code'] == 409
    assert [h['id'] for h in http.get(
        '/reservation/v1/os-hosts', headers=ADMIN).get_json()['hosts']] == [
        'host1']
    resp = http.get('/reservation/v1/os-hosts/properties', headers=ADMIN)
    assert resp.status_code == 400
    assert 'not supported' in resp.get_json()['error_message']


def test_nova_os_hosts(app):
    # Nova's os-hosts is gone from 2.43: asked without a version (2.1)
    admin = Api(app, token=api_support.ADMIN_TOKEN,
                version=api_support.NO_HEADER)
    hosts = admin.get('/os-hosts').get_json()['hosts']
    assert hosts == [{'host_name': name, 'service': 'compute', 'zone': 'nova'}
                     for name in ('host1', 'host2')]
    assert admin.get('/os-hosts?zone=internal').get_json() == {'hosts': []}
    shown = admin.get('/os-hosts/host1').get_json()['host']
    assert [r['resource']['project'] for r in shown] == [
        '(total)', '(used_now)', '(used_max)']
    assert admin.get('/os-hosts/nope').status_code == 404
    resp = admin.put('/os-hosts/host1', {'status': 'disable'})
    assert resp.status_code == 400
    assert 'not supported' in resp.get_json()['badRequest']['message']
    # Nova's checks first, as Tempest's negative tests expect them
    for body in ({}, {'status': 'off'}, {'status': 'enable', 'x': 1}):
        assert admin.put('/os-hosts/host1', body).status_code == 400
    assert admin.put('/os-hosts/nope', {'status': 'enable'}).status_code == (
        404)
    assert admin.get('/os-hosts/host1/reboot').status_code == 400
    assert admin.get('/os-hosts/nope/startup').status_code == 404
    member = Api(app, token=api_support.new_project(),
                 version=api_support.NO_HEADER)
    assert member.get('/os-hosts').status_code == 403
    assert member.get('/os-hosts?zone=internal').status_code == 403
    assert member.get('/os-hosts/host1').status_code == 403
    resp = admin.get('/os-hosts', version='2.43')
    assert resp.status_code == 404
    assert 'itemNotFound' in resp.get_json()
    # the reservable pool is no longer here
    assert admin.post('/os-hosts', {'name': 'host2'}).status_code == 405

"""``/v2.1/leases`` in-process against a plane with the fake clock:
Blazar-like bodies, 201/200/204, 400 naming the field, 404 for another
project's lease, 409 for a change the lease's status forbids and for
hosts that are not free, and the ``reservation_id`` scheduler hint of
``POST /servers``."""

import datetime

import pytest
import sqlalchemy as sa

from common.db import models
from common.leases import lease as ls
from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.functional.conftest import reservable
from tests.functional.conftest import wait_heartbeat
from tests.images_support import IMAGE

HOUR = datetime.timedelta(hours=1)


@pytest.fixture
def plane(make_plane, clock):
    plane = make_plane(hosts=2, clock=clock)
    reservable(plane)
    return plane


@pytest.fixture
def api(app):
    return Api(app, token=api_support.new_project())


def _dates(clock, start_in=HOUR, hours=1):
    start = clock() + start_in
    return {'start_date': start.strftime('%Y-%m-%d %H:%M'),
            'end_date': (start + hours * HOUR).strftime('%Y-%m-%d %H:%M')}


def _create_body(clock, count=1, **extra):
    return dict(_dates(clock), name='night', reservations=[{
        'resource_type': 'physical:host', 'min': count, 'max': count,
        'hypervisor_properties': '', 'resource_properties': ''}],
        events=[], **extra)


def _create(api, clock, **extra):
    resp = api.post('/leases', _create_body(clock, **extra))
    assert resp.status_code == 201, resp.get_json()
    return resp


def test_create_show_list_update_delete(api, clock):
    resp = _create(api, clock)
    lease = resp.get_json()['lease']
    assert resp.headers['Location'].endswith('/v2.1/leases/%s' % lease['id'])
    assert (lease['name'], lease['status'], lease['on_end']) == (
        'night', ls.PENDING, 'delete')
    assert lease['start_date'] == (clock() + HOUR).strftime(
        '%Y-%m-%dT%H:%M:%S.%f')
    assert lease['before_end_date'] == lease['start_date']  # 60 min default
    (res,) = lease['reservations']
    assert (res['resource_type'], res['min'], res['max'], res['status'],
            res['lease_id']) == ('physical:host', 1, 1, 'pending',
                                 lease['id'])
    assert len(res['tristate:hosts']) == 1
    assert [(e['event_type'], e['status']) for e in lease['events']] == [
        ('start_lease', 'UNDONE'), ('before_end_lease', 'UNDONE'),
        ('end_lease', 'UNDONE')]

    assert api.get('/leases/%s' % lease['id']).get_json()['lease'] == lease
    assert [x['id'] for x in api.get('/leases').get_json()['leases']] == [
        lease['id']]

    resp = api.put('/leases/%s' % lease['id'],
                   {'name': 'longer night', 'prolong_for': '2h'})
    assert resp.status_code == 200, resp.get_json()
    updated = resp.get_json()['lease']
    assert (updated['name'], updated['status']) == ('longer night',
                                                    ls.PENDING)
    assert updated['end_date'] == (clock() + 4 * HOUR).strftime(
        '%Y-%m-%dT%H:%M:%S.%f')

    assert api.delete('/leases/%s' % lease['id']).status_code == 204
    gone = api.get('/leases/%s' % lease['id'])
    assert gone.status_code == 404
    assert message(gone) == 'Lease %s could not be found.' % lease['id']


@pytest.mark.parametrize('change,field', [
    ({'name': ''}, 'name'),
    ({'start_date': None}, 'start_date'),
    ({'reservations': []}, 'reservations'),
    ({'reservations': [{'resource_type': 'physical:host', 'min': 'one',
                        'max': 1}]}, 'reservations.0.min'),
    ({'reservations': [{'resource_type': 'virtual:instance', 'min': 1,
                        'max': 1}]}, 'reservations.0.resource_type'),
    ({'reservations': [{'resource_type': 'physical:host', 'min': 1}]},
     'reservations.0.max'),
    ({'on_end': 'shelve'}, 'on_end'),
    ({'colour': 'red'}, 'colour'),
    # checked by the conductor, with the same shape of message
    ({'end_date': 'tomorrow'}, 'end_date'),
    ({'start_date': '2020-01-01 00:00'}, 'start_date'),
    ({'reservations': [{'resource_type': 'physical:host', 'min': 2,
                        'max': 1}]}, 'reservations.0.max'),
    ({'reservations': [{'resource_type': 'physical:host', 'min': 1,
                        'max': 1, 'hypervisor_properties': '[">", 1]'}]},
     'reservations.0.hypervisor_properties'),
])
def test_a_bad_body_is_a_400_naming_the_field(api, clock, change, field):
    body = dict(_create_body(clock), **change)
    resp = api.post('/leases', body)
    assert resp.status_code == 400, resp.get_json()
    assert message(resp).startswith(
        'Invalid input for field/attribute %s. ' % field), message(resp)
    assert api.get('/leases').get_json()['leases'] == []


def test_bad_updates(api, clock):
    lease = _create(api, clock).get_json()['lease']
    for body, field in (({}, 'body'), ({'prolong_for': 'a while'},
                                       'prolong_for'),
                        ({'status': 'ACTIVE'}, 'status')):
        resp = api.put('/leases/%s' % lease['id'], body)
        assert resp.status_code == 400, resp.get_json()
        assert 'field/attribute %s.' % field in message(resp)


def test_hosts_that_are_not_free_are_a_409(api, clock):
    _create(api, clock, count=2)
    resp = api.post('/leases', _create_body(clock))
    assert resp.status_code == 409
    assert message(resp).startswith('Not enough hosts for lease ')
    assert '2 held by other leases then' in message(resp)


def test_an_update_while_starting_is_a_409_with_the_reason(api, plane,
                                                           clock):
    lease = _create(api, clock).get_json()['lease']
    table = models.Lease.__table__
    plane.statedb.db.transaction(lambda conn: conn.execute(
        sa.update(table).where(table.c.id == lease['id'])
        .values(status=ls.STARTING)))
    resp = api.put('/leases/%s' % lease['id'], {'name': 'x'})
    assert resp.status_code == 409
    assert message(resp) == (
        'Cannot update lease %s: its status is STARTING and update needs '
        'PENDING, ACTIVE, TERMINATED or ERROR (STARTING cannot go to '
        'UPDATING).' % lease['id'])
    # delete always wins
    assert api.delete('/leases/%s' % lease['id']).status_code == 204


def test_a_start_date_after_the_start_is_a_409(api, plane, clock):
    lease = _create(api, clock, start_date='now').get_json()['lease']
    plane.conductor.leases.periodic.run_once()
    resp = api.put('/leases/%s' % lease['id'],
                   {'start_date': _dates(clock)['start_date']})
    assert resp.status_code == 409
    assert 'start_date cannot change once the lease has started' in (
        message(resp))


def test_other_projects_see_no_lease(api, app, clock):
    lease = _create(api, clock).get_json()['lease']
    other = Api(app, token=api_support.new_project())
    for method in (other.get, other.delete):
        resp = method('/leases/%s' % lease['id'])
        assert resp.status_code == 404
    assert other.put('/leases/%s' % lease['id'],
                     {'name': 'mine'}).status_code == 404
    assert other.get('/leases').get_json()['leases'] == []
    assert other.get('/leases?all_projects=1').status_code == 403
    admin = Api(app)
    everyone = admin.get('/leases?all_projects=1').get_json()['leases']
    assert [x['id'] for x in everyone] == [lease['id']]
    assert admin.get('/leases').get_json()['leases'] == []     # admin's own


def test_servers_with_the_reservation_hint(api, plane, clock):
    lease = _create(api, clock, start_date='now').get_json()['lease']
    plane.conductor.leases.periodic.run_once()
    res = lease['reservations'][0]
    for key in ('reservation_id', 'reservation'):
        resp = api.post('/servers', {
            'server': {'name': 'job', 'flavorRef': 'tiny',
                       'imageRef': IMAGE},
            'os:scheduler_hints': {key: res['id']}})
        assert resp.status_code == 202, resp.get_json()
        server = api.settled(resp.get_json()['server']['id'])
        assert server['status'] == 'ACTIVE'
        assert api.host(server['id']) == res['tristate:hosts'][0]
    resp = api.post('/servers', {
        'server': {'name': 'job', 'flavorRef': 'tiny', 'imageRef': IMAGE},
        'os:scheduler_hints': {'reservation_id': 42}})
    assert resp.status_code == 400
    assert 'os:scheduler_hints.reservation_id' in message(resp)


def test_the_lease_job_runs_on_the_fake_clock(api, plane, clock):
    lease = _create(api, clock).get_json()['lease']
    clock.advance(HOUR.total_seconds())
    for host in plane.host_names:
        wait_heartbeat(plane, host, since=clock())
    assert plane.conductor.leases.periodic.run_once() == {'done': 1}
    assert api.get('/leases/%s' % lease['id']).get_json()['lease'][
        'status'] == ls.ACTIVE

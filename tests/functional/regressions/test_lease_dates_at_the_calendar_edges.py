"""Lease dates at the edge of the calendar answered 500 (OverflowError).

``start_date "0001-01-01T00:00:00+14:00"`` is in year 0 in UTC and
``end_date "9999-12-31T23:59:59-14:00"`` in year 10000; ``prolong_for
"99999999999999d"`` is beyond what a ``timedelta`` holds, and ``"3000000d"``
or ``reduce_by "99999999d"`` take a lease's end beyond year 9999 or before
year 1; an ``end_date`` of ``0001-01-01T00:00:00`` underflowed when the
default ``before_end_date`` was computed: each raised ``OverflowError`` in
the conductor, and the API answered 500 with the conductor's traceback.
Found by trying the API as an attacker would (issue 20, item 7; the last
by the hostile fuzz tests). Fixed: conductor/leases/requests.py answers each
with a 400 naming the field; the API refuses a duration of more than 12
digits.
"""

import pytest

from tests.functional import api_support
from tests.functional.conftest import reservable
from tests.functional.api_support import message

RESERVATION = {'resource_type': 'physical:host', 'min': 1, 'max': 1}


@pytest.fixture(scope='module')
def api(shared_plane):
    reservable(shared_plane)
    return api_support.Api(api_support.make_app(shared_plane),
                           token=api_support.new_project())


def _create(api, start='now', end='2999-01-01 00:00'):
    return api.post('/leases', json={
        'name': 'edge', 'start_date': start, 'end_date': end,
        'reservations': [dict(RESERVATION)]})


@pytest.mark.parametrize('field, start, end', [
    ('start_date', '0001-01-01T00:00:00+14:00', '2999-01-01 00:00'),
    ('end_date', 'now', '9999-12-31T23:59:59-14:00'),
    ('end_date', '2998-01-01 00:00', '0001-01-01T00:00:00'),
])
def test_a_date_outside_the_calendar_in_utc_is_400(api, field, start, end):
    resp = _create(api, start, end)
    assert resp.status_code == 400, resp.get_json()
    assert 'field/attribute %s' % field in message(resp)
    assert api.get('/leases').get_json()['leases'] == []


@pytest.fixture
def lease(api):
    resp = _create(api, end='9999-12-30T00:00:00')
    assert resp.status_code == 201, resp.get_json()
    yield resp.get_json()['lease']
    api.delete('/leases/%s' % resp.get_json()['lease']['id'])


@pytest.mark.parametrize('field, value', [
    ('prolong_for', '99999999999999d'), ('prolong_for', '999999999999d'),
    ('prolong_for', '3000000d'), ('prolong_for', '2d'),
    ('reduce_by', '99999999d'), ('reduce_by', '9999999d'),
])
def test_a_change_beyond_the_calendar_is_400(api, lease, field, value):
    resp = api.put('/leases/%s' % lease['id'], json={field: value})
    assert resp.status_code == 400, resp.get_json()
    assert 'field/attribute %s' % field in message(resp)
    after = api.get('/leases/%s' % lease['id']).get_json()['lease']
    assert after['end_date'] == lease['end_date']

"""A refused lease update still changed the lease's ``updated_at``.

``PUT /leases/{id}`` with a body whose meaning the conductor refuses (an
end in the past, a duration beyond the calendar) answered 400, but only
after the update had begun: the lease went to UPDATING and back, and its
``updated_at`` moved. Found by the hostile fuzz tests
(tests/functional/test_api_fuzz_hostile.py: a refused request must change
nothing). Fixed: conductor/leases/flows.py checks the body against the
lease as it is before the operation begins, and again inside it.
"""

import pytest

from tests.functional import api_support
from tests.functional.conftest import reservable


@pytest.fixture(scope='module')
def api(shared_plane):
    reservable(shared_plane)
    return api_support.Api(api_support.make_app(shared_plane),
                           token=api_support.new_project())


@pytest.mark.parametrize('body', [
    {'end_date': '2001-01-01 00:00'}, {'reduce_by': '999999d'},
    {'start_date': '2001-01-01 00:00'}, {'before_end_date': '2001-01-01'}])
def test_a_refused_update_leaves_the_lease_as_it_was(api, body):
    created = api.post('/leases', json={
        'name': 'kept', 'start_date': '2998-01-01 00:00',
        'end_date': '2998-02-01 00:00',
        'reservations': [{'resource_type': 'physical:host', 'min': 1,
                          'max': 1}]})
    assert created.status_code == 201, created.get_json()
    lease_id = created.get_json()['lease']['id']
    before = api.get('/leases/%s' % lease_id).get_json()
    resp = api.put('/leases/%s' % lease_id, json=body)
    assert resp.status_code == 400, resp.get_json()
    assert api.get('/leases/%s' % lease_id).get_json() == before
    api.delete('/leases/%s' % lease_id)

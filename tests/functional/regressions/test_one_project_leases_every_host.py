"""One project could starve every other with a lease.

With the default policy any member could lease every host (min 3, max
10000, until 2099): every other project's builds then ended ERROR "No valid
host ... held by active leases", and the 409 a second project got named
every host and the other leases' end dates (host names are admin-only
elsewhere). Found by an adversarial session on the embedded plane (issue
19, item 5). Fixed as Blazar does it: only hosts an admin put into the
reservable pool (``POST /os-hosts``, now Blazar's
``/reservation/v1/os-hosts``; ``tristate lease host add``) can be
leased; a project's leases are limited by its quota (``lease_hosts`` held
at once, ``lease_hours`` per lease, in ``os-quota-sets``); and a refusal
counts the hosts other leases hold without naming them or their leases.
"""

import datetime

import pytest

from common.states import vm
from tests.functional import api_support
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.functional.conftest import wait_idle
from tests.images_support import IMAGE

POOL = '/reservation/v1/os-hosts'

HOUR = datetime.timedelta(hours=1)


@pytest.fixture
def plane(make_plane, clock):
    return make_plane(hosts=2, clock=clock)


@pytest.fixture
def admin(app):
    return Api(app, token=api_support.ADMIN_TOKEN)


def _lease(api, clock, *, low=1, high=1, hours=1):
    start = clock()
    return api.post('/leases', {
        'name': 'all-of-it', 'start_date': 'now',
        'end_date': (start + hours * HOUR).strftime('%Y-%m-%d %H:%M'),
        'reservations': [{'resource_type': 'physical:host', 'min': low,
                          'max': high, 'hypervisor_properties': ''}]})


def _start_leases(plane):
    plane.conductor.leases.periodic.run_once()


def test_only_the_reservable_pool_can_be_leased(app, admin, plane, clock):
    greedy = Api(app, token=api_support.new_project())
    other = Api(app, token=api_support.new_project())

    refused = _lease(greedy, clock, low=1, high=10000, hours=24 * 365 * 70)
    assert refused.status_code == 409, refused.get_json()
    assert '0 enabled host(s) of the reservable pool match' in message(
        refused)

    assert greedy.post(POOL, {'name': 'host1'}).status_code == 403
    added = admin.post(POOL, {'name': 'host1'})
    assert added.status_code == 201, added.get_json()
    assert [h['id'] for h in admin.get(POOL).get_json()['hosts']] == [
        'host1']

    taken = _lease(greedy, clock, low=1, high=10000, hours=24 * 365 * 70)
    assert taken.status_code == 201, taken.get_json()
    lease = taken.get_json()['lease']
    assert lease['reservations'][0]['tristate:hosts'] == ['host1']
    _start_leases(plane)

    # Another project: its lease is refused without a word on whose hosts
    # or leases; its build still finds the host outside the pool.
    second = _lease(other, clock)
    assert second.status_code == 409
    assert '1 held by other leases then' in message(second)
    for secret in ('host1', lease['id'], lease['end_date'][:10]):
        assert secret not in message(second)
    created = other.post('/servers', {'server': {
        'name': 'mine', 'flavorRef': 'tiny', 'imageRef': IMAGE}})
    inst = wait_idle(plane, created.get_json()['server']['id'])
    assert (inst['vm_state'], inst['host']) == (vm.ACTIVE, 'host2')

    # Out of the pool only once no lease holds it.
    assert admin.delete(POOL + '/host1').status_code == 409
    assert greedy.delete('/leases/%s' % lease['id']).status_code == 204
    assert admin.delete(POOL + '/host1').status_code == 204
    assert admin.get(POOL).get_json()['hosts'] == []


def test_a_full_pool_refusal_for_a_build_names_no_host(app, admin, plane,
                                                       clock):
    for name in ('host1', 'host2'):
        assert admin.post(POOL, {'name': name}).status_code == 201
    greedy = Api(app, token=api_support.new_project())
    assert _lease(greedy, clock, low=2, high=2).status_code == 201
    _start_leases(plane)

    other = Api(app, token=api_support.new_project())
    created = other.post('/servers', {'server': {
        'name': 'starved', 'flavorRef': 'tiny', 'imageRef': IMAGE}})
    server_id = created.get_json()['server']['id']
    assert wait_idle(plane, server_id)['vm_state'] == vm.ERROR
    fault = other.get('/servers/%s' % server_id).get_json()['server']
    text = str(fault.get('fault'))
    assert '2 host(s) held by active leases' in text
    assert 'host1' not in text and 'host2' not in text


def test_a_projects_leases_are_limited_by_its_quota(app, admin, plane,
                                                    clock):
    for name in ('host1', 'host2'):
        assert admin.post(POOL, {'name': name}).status_code == 201
    token = api_support.new_project()
    project = token.split(':')[1]
    api = Api(app, token=token)
    put = admin.put('/os-quota-sets/%s' % project, {'quota_set': {
        'lease_hosts': 1, 'lease_hours': 24}})
    assert put.status_code == 200, put.get_json()
    assert (put.get_json()['quota_set']['lease_hosts'],
            put.get_json()['quota_set']['lease_hours']) == (1, 24)

    too_long = _lease(api, clock, hours=25)
    assert too_long.status_code == 403
    assert 'lease_hours' in message(too_long)
    too_many = _lease(api, clock, low=2, high=2)
    assert too_many.status_code == 403
    assert 'lease_hosts' in message(too_many)

    # min 1, max 2: it gets what the quota leaves, one host
    capped = _lease(api, clock, low=1, high=2)
    assert capped.status_code == 201, capped.get_json()
    assert len(capped.get_json()['lease']['reservations'][0][
        'tristate:hosts']) == 1
    detail = api.get('/os-quota-sets/%s/detail' % project).get_json()
    assert detail['quota_set']['lease_hosts'] == {
        'limit': 1, 'in_use': 1, 'reserved': 0}
    assert _lease(api, clock).status_code == 403     # the quota is used

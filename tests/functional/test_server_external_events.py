"""``os-server-external-events`` as Nova answers each event (Tempest's
response schema as the oracle: no client sends them but services):
``network-changed`` completes for a server on a host (Tristate keeps no
network cache to refresh); the events that ask for work Tristate does not
do (Neutron ports, Cinder volumes, Ironic power, Cyborg) fail with 422;
404 for a server that does not exist, 400 for a missing tag, 422 for a
server on no host; 207 when any failed; members may not send them."""

import pytest
from tempest.lib.api_schema.response.compute.v2_1 import (
    server_external_events as schema)

from tests.functional import api_support
from tests.functional import catalogue_support as support
from tests.functional.api_support import Api

MISSING = '6f2b8a2e-2f0e-4c52-9c5c-00000000000e'


@pytest.fixture(scope='module')
def admin(shared_plane):
    return Api(api_support.make_app(shared_plane),
               token=api_support.ADMIN_TOKEN)


@pytest.fixture(scope='module')
def server(admin):
    return admin.active('evented')


def _send(admin, *events, version='2.1'):
    return admin.post('/os-server-external-events', {'events': list(events)},
                      version=version)


def test_network_changed_completes(admin, server):
    resp = _send(admin, {'name': 'network-changed',
                         'server_uuid': server['id']})
    support.check(schema.create, resp)
    assert resp.get_json()['events'] == [{
        'name': 'network-changed', 'server_uuid': server['id'],
        'status': 'completed', 'code': 200}]


@pytest.mark.parametrize('name, version', [
    ('network-vif-plugged', '2.1'), ('network-vif-deleted', '2.1'),
    ('volume-extended', '2.51'), ('power-update', '2.76'),
    ('accelerator-request-bound', '2.82'), ('volume-reimaged', '2.93')])
def test_work_tristate_does_not_do_fails(admin, server, name, version):
    resp = _send(admin, {'name': name, 'server_uuid': server['id'],
                         'tag': 'x'}, version=version)
    assert resp.status_code == 207
    (event,) = resp.get_json()['events']
    assert (event['status'], event['code']) == ('failed', 422)


def test_per_event_codes_as_nova(admin, server):
    resp = _send(admin,
                 {'name': 'network-changed', 'server_uuid': MISSING},
                 {'name': 'power-update', 'server_uuid': server['id']},
                 {'name': 'network-changed', 'server_uuid': server['id']},
                 version='2.76')
    assert resp.status_code == 207
    assert [e['code'] for e in resp.get_json()['events']] == [404, 400, 200]
    # an event name of a later microversion is a 400 before it
    assert _send(admin, {'name': 'power-update', 'server_uuid': server['id'],
                         'tag': 'POWER_ON'}).status_code == 400


def test_a_member_may_not(admin, server):
    member = admin.as_(token=api_support.new_project())
    resp = member.post('/os-server-external-events', {'events': [
        {'name': 'network-changed', 'server_uuid': server['id']}]})
    assert resp.status_code == 403

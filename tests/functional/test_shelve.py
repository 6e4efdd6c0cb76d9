"""Nova's shelving through the REST API on the fake hypervisor (issue 22):
shelve (a snapshot ``<name>-shelved``, the guest powered off), offload (at
once, by the periodic sweep after ``[compute] shelved_offload_time``
seconds on the injected clock, never with -1, or by an admin's
shelveOffload: the domain gone, every allocation freed, on no host, still
counted in the project's quota), unshelve (powered on in place, or
scheduled, to the admin's host from 2.91 or the zone asked from 2.77, and
built from the snapshot, which is then deleted), each request validated
and refused as Nova refuses it, and a hard delete of a shelved or
offloaded server that deletes its snapshot. ``tristate-manage check``
finds nothing wrong after each."""

from novaclient import exceptions as nova_exc
import pytest

from common import context
from common.db import checks
from common.db import images as images_db
from common.states import power
from common.states import vm
from tests.functional import api_support
from tests.functional import client_support
from tests.functional.api_support import Api
from tests.functional.api_support import message
from tests.functional.conftest import domain
from tests.functional.conftest import outside
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_for
from tests.functional.conftest import wait_heartbeat


def _plane(conf, make_plane, offload_time=0, **kwargs):
    set_opts(conf, 'compute', shelved_offload_time=offload_time)
    plane = make_plane(**kwargs)
    api = Api(api_support.make_app(plane), token=api_support.ADMIN_TOKEN)
    return plane, api


def _snapshot(plane, image_id):
    """The snapshot image's row, or None once it is deleted."""
    try:
        return images_db.get(plane.statedb, context.get_admin_context(),
                             image_id)
    except Exception:       # noqa: BLE001 - ImageNotFound: deleted
        return None


def _clean(plane):
    # now=None: the clock read after the snapshot, so a report the agents
    # commit meanwhile is not "in the future"
    found, _ = checks.find_violations(plane.statedb.db, checks.Limits())
    assert found == []


def _shelved(api, server_id, status):
    """Shelve; the server once it shows ``status`` with no task (an
    offload at once is a second task, claimed when the shelve ends)."""
    api.action(server_id, {'shelve': None})

    def there():
        server = api.settled(server_id)
        return server if server['status'] == status else None
    return wait_for(there, what='server %s to be %s' % (server_id, status),
                    show=lambda: api.server(server_id)['status'])


def _used(api):
    absolute = api.get('/limits').get_json()['limits']['absolute']
    return (absolute['totalInstancesUsed'], absolute['totalCoresUsed'],
            absolute['totalRAMUsed'])


def test_shelve_offloads_at_once_and_unshelve_builds_from_the_snapshot(
        conf, make_plane):
    plane, api = _plane(conf, make_plane)
    server = api.active(name='web')
    host = api.host(server['id'])
    used = _used(api)
    shelved = _shelved(api, server['id'], 'SHELVED_OFFLOADED')
    inst = plane.statedb.get_instance(server['id'])
    assert (shelved['OS-EXT-STS:vm_state'], shelved['OS-EXT-STS:task_state'],
            shelved['OS-EXT-SRV-ATTR:host'],
            shelved['OS-EXT-STS:power_state']) == (
        'shelved_offloaded', None, None, power.NOSTATE)
    # the snapshot, Nova's name; the domain gone, nothing held on a host,
    # the quota still counted
    image = _snapshot(plane, inst['shelved_image_id'])
    assert image['name'] == 'web-shelved'
    assert image['properties']['image_type'] == 'snapshot'
    assert domain(plane, host, server['id']) is None
    assert plane.statedb.list_allocations(instance_uuid=server['id']) == []
    assert _used(api) == used
    actions = [a['action'] for a in api.get(
        '/servers/%s/os-instance-actions' % server['id'], version='2.1')
        .get_json()['instanceActions']]
    assert actions[:2] == ['shelveOffload', 'shelve']
    _clean(plane)

    api.action(server['id'], {'unshelve': None})
    back = api.settled(server['id'])
    assert (back['status'], back['OS-EXT-STS:power_state']) == (
        'ACTIVE', power.RUNNING)
    new_host = api.host(server['id'])
    built = domain(plane, new_host, server['id'])
    assert built['image_ref'] == image['id']        # from the snapshot
    after = plane.statedb.get_instance(server['id'])
    assert (after['image_ref'], after['shelved_image_id'],
            after['shelved_at']) == (api_support.IMAGE, None, None)
    assert _snapshot(plane, image['id']) is None     # deleted
    assert [a['host'] for a in plane.statedb.list_allocations(
        instance_uuid=server['id'])] == [new_host]
    _clean(plane)


def test_without_offload_a_shelved_server_keeps_its_place(conf, make_plane):
    plane, api = _plane(conf, make_plane, offload_time=-1)
    server = api.active()
    host = api.host(server['id'])
    shelved = _shelved(api, server['id'], 'SHELVED')
    assert (shelved['OS-EXT-STS:vm_state'], shelved['OS-EXT-SRV-ATTR:host'],
            shelved['OS-EXT-STS:power_state']) == (
        'shelved', host, power.SHUTDOWN)
    assert [a['host'] for a in plane.statedb.list_allocations(
        instance_uuid=server['id'])] == [host]
    image_id = plane.statedb.get_instance(server['id'])['shelved_image_id']
    assert plane.conductor.periodic.run_once()['shelved'] == {
        'offloaded': 0, 'snapshots_deleted': 0}
    # an unshelve of a shelved (not offloaded) server takes no zone or host
    for body in ({'availability_zone': 'nova'}, {'host': host}):
        resp = api.post('/servers/%s/action' % server['id'],
                        {'unshelve': body}, version='2.91')
        assert resp.status_code == 409, resp.get_json()
        assert 'must be SHELVED_OFFLOADED' in message(resp)
    api.action(server['id'], {'unshelve': None})
    back = api.settled(server['id'])
    assert (back['status'], api.host(server['id'])) == ('ACTIVE', host)
    assert domain(plane, host, server['id'])['power_state'] == power.RUNNING
    assert _snapshot(plane, image_id) is None
    _clean(plane)


def test_shelve_offload_is_for_admins_and_frees_the_host(conf, make_plane):
    plane, api = _plane(conf, make_plane, offload_time=-1)
    member = api.as_(api_support.new_project())
    server = member.active()
    host = api.host(server['id'])
    member.action(server['id'], {'shelve': None})
    assert member.settled(server['id'])['status'] == 'SHELVED'
    resp = member.post('/servers/%s/action' % server['id'],
                       {'shelveOffload': None})
    assert resp.status_code == 403, resp.get_json()
    api.action(server['id'], {'shelveOffload': None})
    assert api.settled(server['id'])['status'] == 'SHELVED_OFFLOADED'
    assert domain(plane, host, server['id']) is None
    assert plane.statedb.list_allocations(instance_uuid=server['id']) == []
    # the member unshelves it (anywhere: a host is for admins)
    resp = member.post('/servers/%s/action' % server['id'],
                       {'unshelve': {'host': host}}, version='2.91')
    assert resp.status_code == 403, resp.get_json()
    member.action(server['id'], {'unshelve': None})
    assert member.settled(server['id'])['status'] == 'ACTIVE'
    _clean(plane)


def test_the_periodic_sweep_offloads_after_the_configured_time(
        conf, make_plane, clock):
    plane, api = _plane(conf, make_plane, offload_time=600, clock=clock)
    server = api.active()
    _shelved(api, server['id'], 'SHELVED')
    clock.advance(599)
    assert plane.conductor.periodic.run_once()['shelved']['offloaded'] == 0
    clock.advance(2)
    for host in plane.host_names:       # alive on the advanced clock
        wait_heartbeat(plane, host, since=clock.now)
    assert plane.conductor.periodic.run_once()['shelved']['offloaded'] == 1
    assert api.settled(server['id'])['status'] == 'SHELVED_OFFLOADED'
    _clean(plane)


def _status(nova, server_id, status):
    """Until novaclient shows ``status`` with no task running."""
    def there():
        found = nova.servers.get(server_id)
        return (found.status == status and getattr(
            found, 'OS-EXT-STS:task_state') is None)
    wait_for(there, what='server %s to be %s' % (server_id, status))
    return nova.servers.get(server_id)


def test_unshelve_to_a_host_and_a_zone_through_novaclient(conf, make_plane):
    plane, api = _plane(conf, make_plane)
    with client_support.serving(plane) as url:
        nova = client_support.nova(url, api_support.ADMIN_TOKEN, '2.91')
        server = nova.servers.create('web', api_support.IMAGE, 'tiny',
                                     nics='none')
        first = getattr(_status(nova, server.id, 'ACTIVE'),
                        'OS-EXT-SRV-ATTR:host')
        other = next(h for h in plane.host_names if h != first)
        for target in (first, other):
            nova.servers.shelve(server)
            _status(nova, server.id, 'SHELVED_OFFLOADED')
            nova.servers.unshelve(server, host=target)
            shown = _status(nova, server.id, 'ACTIVE')
            assert getattr(shown, 'OS-EXT-SRV-ATTR:host') == target
        nova.servers.shelve(server)
        _status(nova, server.id, 'SHELVED_OFFLOADED')
        with pytest.raises(nova_exc.BadRequest, match='Compute host nowhere '
                                                      'could not be found'):
            nova.servers.unshelve(server, host='nowhere')
        with pytest.raises(nova_exc.BadRequest, match='availability zone is '
                                                      'not available'):
            nova.servers.unshelve(server, availability_zone='mars')
        # the other host in a zone of its own: not in the zone asked
        made = plane.statedb.create_aggregate('east', zone='east')
        plane.statedb.aggregate_add_host(made['id'], other)
        with pytest.raises(nova_exc.Conflict, match='Host "%s" is not in '
                           'the availability zone "nova"' % other):
            nova.servers.unshelve(server, availability_zone='nova',
                                  host=other)
        # a zone that exists pins the server there; null unpins it
        nova.servers.unshelve(server, availability_zone='east')
        shown = _status(nova, server.id, 'ACTIVE')
        assert getattr(shown, 'OS-EXT-SRV-ATTR:host') == other
        assert plane.statedb.get_instance(server.id)[
            'availability_zone'] == 'east'
        nova.servers.shelve(server)
        _status(nova, server.id, 'SHELVED_OFFLOADED')
        nova.servers.unshelve(server, availability_zone=None)
        _status(nova, server.id, 'ACTIVE')
        assert plane.statedb.get_instance(server.id)[
            'availability_zone'] is None
    # what novaclient cannot send, Nova's schemas refuse
    nova_shelved = _shelved(api, server.id, 'SHELVED_OFFLOADED')
    assert nova_shelved['OS-EXT-SRV-ATTR:host'] is None
    for version, body, words in [
            ('2.77', {}, 'availability_zone'),
            ('2.77', {'host': first}, 'host'),
            ('2.91', {'color': 'red'}, 'color')]:
        resp = api.post('/servers/%s/action' % server.id,
                        {'unshelve': body}, version=version)
        assert resp.status_code == 400, (body, resp.get_json())
        assert words in message(resp), (body, message(resp))
    # before 2.77 the body is not looked at
    resp = api.post('/servers/%s/action' % server.id,
                    {'unshelve': {'host': 'ignored'}}, version='2.76')
    assert resp.status_code == 202, resp.get_json()
    assert api.settled(server.id)['status'] == 'ACTIVE'
    _clean(plane)


def test_requests_the_table_denies_are_409_and_change_nothing(
        conf, make_plane):
    plane, api = _plane(conf, make_plane, offload_time=-1)
    server = api.active()
    for key in ('unshelve', 'shelveOffload'):
        resp = api.post('/servers/%s/action' % server['id'], {key: None})
        assert resp.status_code == 409, resp.get_json()
    _shelved(api, server['id'], 'SHELVED')
    for key in ('shelve', 'os-start', 'reboot'):
        body = {key: {'type': 'SOFT'} if key == 'reboot' else None}
        resp = api.post('/servers/%s/action' % server['id'], body)
        assert resp.status_code == 409, (key, resp.get_json())
    assert api.server(server['id'])['status'] == 'SHELVED'
    missing = api.post('/servers/6f2b8a2e-2f0e-4c52-9c5c-000000000000/action',
                       {'shelve': None})
    assert missing.status_code == 404


def test_a_paused_server_shelves(conf, make_plane):
    plane, api = _plane(conf, make_plane)
    server = api.active()
    api.act(server['id'], {'pause': None})
    _shelved(api, server['id'], 'SHELVED_OFFLOADED')


def test_unshelve_with_no_room_leaves_it_offloaded(conf, make_plane):
    plane, api = _plane(conf, make_plane)
    server = api.active()
    _shelved(api, server['id'], 'SHELVED_OFFLOADED')
    for host in plane.host_names:
        plane.statedb.set_host_enabled(host, False, reason='test')
    api.action(server['id'], {'unshelve': None})
    after = api.settled(server['id'])
    assert after['status'] == 'SHELVED_OFFLOADED'
    inst = plane.statedb.get_instance(server['id'])
    assert (inst['host'], inst['shelved_image_id'] is not None) == (None, True)
    assert plane.statedb.list_allocations(instance_uuid=server['id']) == []
    entry = plane.statedb.list_actions(server['id'])[-1]
    assert (entry['action'], entry['result']) == ('unshelve', 'rolled_back')
    _clean(plane)


@pytest.mark.parametrize('offload_time', [0, -1], ids=['offloaded',
                                                       'shelved'])
def test_hard_delete_deletes_the_snapshot(conf, make_plane, offload_time):
    plane, api = _plane(conf, make_plane, offload_time=offload_time)
    server = api.active()
    host = api.host(server['id'])
    _shelved(api, server['id'], 'SHELVED_OFFLOADED' if offload_time == 0
             else 'SHELVED')
    image_id = plane.statedb.get_instance(server['id'])['shelved_image_id']
    assert api.delete('/servers/%s' % server['id']).status_code == 204
    assert plane.statedb.get_instance(server['id'])['vm_state'] == (
        vm.HARD_DELETED)

    def gone():
        # told at once when it was on no host; else the sweep's net
        plane.conductor.periodic.run_once()
        return _snapshot(plane, image_id) is None
    wait_for(gone, what='the snapshot to be deleted')
    assert plane.statedb.get_instance(server['id'])['shelved_image_id'] is None
    # a shelved guest is still defined on its host: the delete removes it
    # (a report between the delete and that is the "reported since the
    # delete" that check flags until the next report)
    wait_for(lambda: domain(plane, host, server['id']) is None,
             what='the guest to be removed from %s' % host)
    wait_for(lambda: not checks.find_violations(
        plane.statedb.db, checks.Limits())[0],
        what='check to be clean once the host has reported',
        show=lambda: checks.find_violations(plane.statedb.db,
                                            checks.Limits())[0])


def test_reconcile_powers_off_a_shelved_guest_started_behind_its_back(
        conf, make_plane):
    plane, api = _plane(conf, make_plane, offload_time=-1)
    server = api.active()
    host = api.host(server['id'])
    _shelved(api, server['id'], 'SHELVED')
    outside(plane, 'start', server['id'])
    wait_for(lambda: domain(plane, host, server['id'])['power_state']
             == power.SHUTDOWN, what='the shelved guest powered off again')
    shown = api.settled(server['id'])
    assert (shown['status'], shown['OS-EXT-STS:power_state']) == (
        'SHELVED', power.SHUTDOWN)
    _clean(plane)

"""Evacuation of a dead host (issue 25), as the operator guide's "When a
host dies" tells it: force the host down, wait until its agent is silent,
evacuate each instance (rebuilt on another host from its image, same
ports and addresses, recorded as an ``evacuation``), and when the host
comes back its agent destroys exactly the domains recorded as evacuated
away from it, and nothing else, whatever ``orphan_action`` says.
"""

import logging
import uuid as uuidlib

import pytest

from common import exception
from common.states import power
from common.states import vm
from compute_agent.virt import fake
from tests.functional import api_support
from tests.functional.conftest import active
from tests.functional.conftest import domain
from tests.functional.conftest import faults
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_domain
from tests.functional.conftest import wait_for
from tests.functional.conftest import wait_heartbeat
from tests.functional.conftest import wait_idle
from tests.functional.conftest import wait_log

NET = {'name': 'guests', 'cidr': '10.30.0.0/24', 'bridge': 'br-guests'}


def _on(plane, admin, host, **kwargs):
    """An ACTIVE instance built on ``host`` (an admin's forced host)."""
    return active(plane, admin, force_host=host, **kwargs)


def _host_dies(plane, clock, conf, host, *, forced_down=True):
    """The operator guide's first two steps: the agent of ``host`` goes
    silent for longer than service_down_time, and an admin forces the
    host down. The other hosts beat again at the new time."""
    plane.stop_agent(host)
    if forced_down:
        plane.statedb.set_host_forced_down(host, True)
    clock.advance(conf.conductor.service_down_time + 1)
    for other in plane.agents:
        wait_heartbeat(plane, other, since=clock.now)


def _evacuate(plane, admin, uuid, **params):
    plane.client.run_action(admin, uuid, 'evacuate', params)
    return wait_idle(plane, uuid)


def _orphan(plane, host, uuid):
    """A domain of ``uuid`` on ``host`` that its agent did not make."""
    driver = fake.FakeDriver(state_dir=plane.conf.state_dir)
    driver.init_host(host)
    driver.spawn(uuid, name='stray', image_ref='cirros', flavor={
        'name': 'tiny', 'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1})


def wait_for_row(plane, uuid, predicate):
    wait_for(lambda: predicate(plane.statedb.get_instance(uuid)),
             what='instance %s' % uuid,
             show=lambda: plane.statedb.get_instance(uuid))
    return plane.statedb.get_instance(uuid)


def _evacuations(plane, source):
    return plane.statedb.list_evacuations(source_host=source)


def _status(plane, uuid):
    [found] = [m for m in plane.statedb.list_migrations(instance_uuid=uuid)
               if m['migration_type'] == 'evacuation']
    return found['status']


def test_refused_unless_forced_down_and_silent(conf, make_plane, clock, ctx):
    plane = make_plane(hosts=2, clock=clock)
    admin = ctx.elevated()
    uuid = _on(plane, admin, 'host1')['uuid']

    def refused():
        with pytest.raises(exception.Conflict) as caught:
            plane.client.run_action(admin, uuid, 'evacuate', {})
        return str(caught.value)

    # alive and not forced down: both said
    why = refused()
    assert 'not forced down' in why and 'still sends heartbeats' in why
    # forced down, but its agent still beats: it could still run the guest
    plane.statedb.set_host_forced_down('host1', True)
    why = refused()
    assert 'not forced down' not in why and 'still sends heartbeats' in why
    # silent, but not forced down: nobody said it is fenced
    plane.statedb.set_host_forced_down('host1', False)
    _host_dies(plane, clock, conf, 'host1', forced_down=False)
    why = refused()
    assert 'not forced down' in why and 'heartbeats' not in why
    # not an admin: refused before anything is looked at
    with pytest.raises(exception.Forbidden):
        plane.client.run_action(ctx, uuid, 'evacuate', {})
    inst = plane.statedb.get_instance(uuid)
    assert (inst['host'], inst['vm_state'], inst['task_state']) == (
        'host1', vm.ACTIVE, None)
    assert _evacuations(plane, 'host1') == []

    plane.statedb.set_host_forced_down('host1', True)
    after = _evacuate(plane, admin, uuid)
    assert (after['host'], after['vm_state']) == ('host2', vm.ACTIVE)


def test_evacuated_instance_runs_elsewhere_with_its_ports(
        conf, make_plane, clock, ctx):
    plane = make_plane(hosts=2, clock=clock)
    admin = ctx.elevated()
    net = plane.statedb.create_network(NET, network_id=str(uuidlib.uuid4()))
    inst = _on(plane, admin, 'host1', networks=[{'uuid': net['id']}])
    stopped = _on(plane, admin, 'host1', name='stopped')
    plane.client.run_action(admin, stopped['uuid'], 'stop', {})
    assert wait_idle(plane, stopped['uuid'])['vm_state'] == vm.STOPPED
    ports = plane.statedb.ports_of(inst['uuid'])
    assert ports and ports[0]['mac']
    _host_dies(plane, clock, conf, 'host1')

    after = _evacuate(plane, admin, inst['uuid'])
    assert (after['host'], after['vm_state']) == ('host2', vm.ACTIVE)
    wait_for(lambda: plane.statedb.get_instance(inst['uuid'])['power_state']
             == power.RUNNING, what='the new domain reported running')
    rebuilt = domain(plane, 'host2', inst['uuid'])
    assert rebuilt['power_state'] == power.RUNNING
    assert rebuilt['ports'] == ports
    assert plane.statedb.ports_of(inst['uuid']) == ports
    # counted on its new host only
    assert {a['host'] for a in plane.statedb.list_allocations(
        instance_uuid=inst['uuid'])} == {'host2'}
    [record] = [m for m in _evacuations(plane, 'host1')
                if m['instance_uuid'] == inst['uuid']]
    assert (record['source_host'], record['dest_host']) == ('host1', 'host2')
    assert _status(plane, inst['uuid']) == 'done'

    # a stopped instance stays stopped on its new host
    after = _evacuate(plane, admin, stopped['uuid'])
    assert (after['host'], after['vm_state']) == ('host2', vm.STOPPED)
    assert domain(plane, 'host2', stopped['uuid'])['power_state'] == (
        power.SHUTDOWN)


def test_no_valid_host_changes_nothing(conf, make_plane, clock, ctx):
    plane = make_plane(hosts=2, clock=clock)
    admin = ctx.elevated()
    uuid = _on(plane, admin, 'host1')['uuid']
    plane.statedb.set_host_enabled('host2', False, 'maintenance')
    _host_dies(plane, clock, conf, 'host1')

    after = _evacuate(plane, admin, uuid)

    assert (after['host'], after['vm_state']) == ('host1', vm.ACTIVE)
    assert 'No valid host' in plane.statedb.list_actions(uuid)[-1]['message']
    assert {a['host'] for a in plane.statedb.list_allocations(
        instance_uuid=uuid)} == {'host1'}
    # forced (Nova's 2.29 force): the disabled host taken, as Nova does
    after = _evacuate(plane, admin, uuid, host='host2', force=True)
    assert (after['host'], after['vm_state']) == ('host2', vm.ACTIVE)


def test_a_failed_rebuild_leaves_the_server_in_error_on_its_new_host(
        conf, make_plane, clock, ctx):
    plane = make_plane(hosts=2, clock=clock)
    admin = ctx.elevated()
    uuid = _on(plane, admin, 'host1')['uuid']
    _host_dies(plane, clock, conf, 'host1')
    faults(plane, 'host2').set_fault('spawn', 'fail', count=1)

    plane.client.run_action(admin, uuid, 'evacuate', {})

    after = wait_for_row(plane, uuid, lambda i: i['vm_state'] == vm.ERROR
                         and i['task_id'] is None)
    assert after['host'] == 'host2'
    assert _status(plane, uuid) == 'failed'
    # as the guide says: reset it, then rebuild it there
    plane.client.reset_state(admin, uuid, vm.ACTIVE)
    plane.client.run_action(admin, uuid, 'rebuild', {})
    after = wait_idle(plane, uuid)
    assert (after['host'], after['vm_state']) == ('host2', vm.ACTIVE)
    assert domain(plane, 'host2', uuid)['power_state'] == power.RUNNING


def test_returning_host_destroys_only_what_was_evacuated(
        conf, make_plane, clock, ctx, caplog):
    caplog.set_level(logging.WARNING, logger='conductor.results')
    set_opts(conf, 'reconcile', orphan_action='destroy', orphan_grace=0)
    plane = make_plane(hosts=2, clock=clock)
    admin = ctx.elevated()
    gone = _on(plane, admin, 'host1', name='evacuated')['uuid']
    kept = _on(plane, admin, 'host1', name='not-evacuated')['uuid']
    elsewhere = _on(plane, admin, 'host2', name='lives-on-host2')['uuid']
    _host_dies(plane, clock, conf, 'host1')
    assert _evacuate(plane, admin, gone)['host'] == 'host2'
    # while host1 was away: a copy of an instance that lives on host2 (no
    # evacuation of it is recorded) and a domain of no instance
    _orphan(plane, 'host1', elsewhere)
    orphan = str(uuidlib.uuid4())
    _orphan(plane, 'host1', orphan)
    # the agent comes back and is restarted before it could destroy anything
    faults(plane, 'host1').set_fault('destroy', 'fail')
    plane.start_agent('host1')
    wait_log(caplog, 'host1', gone, 'evacuated away')
    plane.stop_agent('host1')
    assert domain(plane, 'host1', gone) is not None
    assert _status(plane, gone) == 'done'
    faults(plane, 'host1').clear_faults()

    plane.start_agent('host1')

    wait_domain(plane, 'host1', gone, lambda rec: rec is None,
                what='the evacuated domain destroyed')
    wait_for(lambda: _status(plane, gone) == 'completed',
             what='the evacuation completed')
    # the orphan goes by its policy (destroy here), as it always did
    wait_domain(plane, 'host1', orphan, lambda rec: rec is None,
                what='the orphan destroyed by orphan_action')
    # never what was not evacuated from host1, whatever orphan_action says
    assert domain(plane, 'host1', kept)['power_state'] == power.RUNNING
    assert domain(plane, 'host1', elsewhere)['power_state'] == power.RUNNING
    assert domain(plane, 'host2', gone)['power_state'] == power.RUNNING
    assert domain(plane, 'host2', elsewhere)['power_state'] == power.RUNNING
    assert plane.statedb.get_instance(kept)['host'] == 'host1'
    assert plane.statedb.list_evacuations(source_host='host1',
                                          pending=True) == []


# --- the REST API ---------------------------------------------------------------

@pytest.fixture
def dead_plane(conf, make_plane, clock, ctx):
    """host1 dead and forced down, three instances of ``ctx`` on it."""
    plane = make_plane(hosts=2, clock=clock)
    plane.servers = [_on(plane, ctx.elevated(), 'host1')['uuid']
                     for _ in range(3)]
    _host_dies(plane, clock, conf, 'host1')
    plane.app = api_support.make_app(plane)
    return plane


BAD = [
    ('2.1', {'host': 'host2'}, 400, "'onSharedStorage' is a required"),
    ('2.1', {'onSharedStorage': True}, 400, 'share no storage'),
    ('2.1', {'onSharedStorage': False, 'adminPass': 'x'}, 400, 'adminPass'),
    ('2.14', {'onSharedStorage': False}, 400, 'onSharedStorage'),
    ('2.29', {'force': True}, 400, "Can't force"),
    ('2.68', {'host': 'host2', 'force': True}, 400, 'force'),
    ('2.95', {'host': 'nowhere'}, 404, 'Compute host nowhere not found'),
    ('2.95', {'host': 'host1'}, 400, "can't be the same"),
]


def test_bad_requests_name_the_field_and_change_nothing(dead_plane):
    server = dead_plane.servers[0]
    for version, body, status, says in BAD:
        api = api_support.Api(dead_plane.app, token=api_support.ADMIN_TOKEN,
                              version=version)
        resp = api.post('/servers/%s/action' % server, {'evacuate': body})
        assert resp.status_code == status, (version, body, resp.get_json())
        assert says in str(resp.get_json()), (version, body)
    inst = dead_plane.statedb.get_instance(server)
    assert (inst['host'], inst['task_state']) == ('host1', None)
    member = api_support.Api(dead_plane.app, token='alice:demo')
    resp = member.post('/servers/%s/action' % server, {'evacuate': {}})
    assert resp.status_code == 403, resp.get_json()


GOOD = [
    # Nova's answers: {} before 2.14 (no password: none is set), then none
    ('2.1', {'onSharedStorage': 'False'}, {}, vm.ACTIVE),
    ('2.29', {'host': 'host2', 'force': False}, None, vm.ACTIVE),
    # from 2.95 the evacuated server is left stopped
    ('2.95', {}, None, vm.STOPPED),
]


def test_evacuate_through_the_api(dead_plane):
    for server, (version, body, answer, vm_state) in zip(
            dead_plane.servers, GOOD, strict=True):
        api = api_support.Api(dead_plane.app, token=api_support.ADMIN_TOKEN,
                              version=version)
        resp = api.post('/servers/%s/action' % server, {'evacuate': body})
        assert resp.status_code == 200, resp.get_json()
        assert resp.get_json(silent=True) == answer
        assert api.settled(server)['OS-EXT-SRV-ATTR:host'] == 'host2'
        assert dead_plane.statedb.get_instance(server)['vm_state'] == vm_state
        [shown] = [m for m in api.get('/os-migrations', version='2.59')
                   .get_json()['migrations'] if m['instance_uuid'] == server]
        assert (shown['migration_type'], shown['source_compute'],
                shown['dest_compute'], shown['status']) == (
            'evacuation', 'host1', 'host2', 'done')
        actions = api.get('/servers/%s/os-instance-actions' % server,
                          version='2.1').get_json()['instanceActions']
        assert [a['action'] for a in actions][0] == 'evacuate'

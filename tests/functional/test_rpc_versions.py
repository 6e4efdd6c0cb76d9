"""The RPC APIs' versions: client and server agree, and a client capped at
an older version (``[upgrade_levels]``, for rolling upgrades) still works."""

import queue
import threading

import pytest

from common import exception
from common.states import vm
from compute_agent import manager as agent_manager
from compute_agent import rpcapi as agent_rpcapi
from conductor import manager as conductor_manager
from conductor import rpcapi as conductor_rpcapi
from tests.functional.conftest import active
from tests.functional.conftest import set_opts
from tests.functional.conftest import TIMEOUT
from tests.functional.conftest import wait_agent_done
from tests.functional.conftest import wait_for
from tests.functional.conftest import wait_idle


def test_client_and_server_versions_agree():
    assert conductor_rpcapi.VERSION == (
        conductor_manager.ConductorManager.target.version)
    assert agent_rpcapi.VERSION == agent_manager.AgentManager.target.version


def test_clients_capped_at_1_0_still_work(conf, make_plane, ctx):
    set_opts(conf, 'upgrade_levels', conductor='1.0', compute='1.0')
    plane = make_plane(hosts=1)
    capped = conductor_rpcapi.ConductorAPI(plane.bus, conf)

    inst = capped.create_instance(ctx, name='vm', flavor='tiny',
                                  image_ref='cirros')
    assert wait_idle(plane, inst['uuid'])['vm_state'] == vm.ACTIVE
    capped.run_action(ctx, inst['uuid'], 'stop')
    assert wait_idle(plane, inst['uuid'])['vm_state'] == vm.STOPPED
    assert capped.get_instance(ctx, inst['uuid'])['vm_state'] == vm.STOPPED
    # without database access, delete is one call to a conductor
    assert capped.delete_instance(ctx, inst['uuid'])['vm_state'] == (
        vm.HARD_DELETED)


def test_a_client_capped_at_1_1_sends_no_1_2_arguments(conf, make_plane,
                                                       ctx):
    set_opts(conf, 'upgrade_levels', conductor='1.1')
    plane = make_plane(hosts=1)
    capped = conductor_rpcapi.ConductorAPI(plane.bus, conf)
    capacity = {'vcpus': 4, 'memory_mb': 4096, 'disk_gb': 40}
    # an agent of the previous release: its heartbeat carries no version
    capped.heartbeat(ctx, host='old-agent', capacity=capacity,
                     started_at=None, version='9.9')
    found = {s['host']: s for s in plane.statedb.list_services()}
    assert found['old-agent']['version'] is None
    for call in (lambda: capped.get_quotas(ctx, ctx.project_id),
                 lambda: capped.tenant_usage(ctx, start='2026-01-01T00:00:00',
                                             end='2026-01-02T00:00:00')):
        with pytest.raises(exception.ServiceUnavailable) as err:
            call()
        assert '1.2' in err.value.message
    # uncapped, the version arrives
    conf.clear_override('conductor', group='upgrade_levels')
    uncapped = conductor_rpcapi.ConductorAPI(plane.bus, conf)
    uncapped.heartbeat(ctx, host='new-agent', capacity=capacity,
                           started_at=None, version='9.9')
    found = {s['host']: s for s in plane.statedb.list_services()}
    assert found['new-agent']['version'] == '9.9'


@pytest.mark.parametrize('cap, names_dest', [(None, True), ('1.5', False)])
def test_a_local_delete_names_a_preempted_moves_destination_from_1_6(
        conf, make_plane, ctx, admin, monkeypatch, cap, names_dest):
    """The API tier's cleanup cast names the destination of the live
    migration its delete preempted (1.6); capped at 1.5 it names the
    instance's host alone, and the delete succeeds all the same. Only the
    API tier's client is capped: capped agents could not prepare the move
    (1.18), which would then end before the delete could preempt it."""
    plane = make_plane()
    client = plane.client
    if cap:
        set_opts(conf, 'upgrade_levels', conductor=cap)
        client = conductor_rpcapi.ConductorAPI(plane.bus, conf,
                                               statedb=plane.statedb)
    inst = active(plane, ctx)
    uuid, source = inst['uuid'], inst['host']
    [dest] = [h for h in plane.host_names if h != source]
    gate = threading.Event()
    agent_client = plane.agents[source].manager.conductor
    finished = agent_client.task_finished

    def held(*args, **kwargs):      # the move's result waits for the delete
        gate.wait(TIMEOUT)
        return finished(*args, **kwargs)
    monkeypatch.setattr(agent_client, 'task_finished', held, raising=False)
    manager = plane.conductor.manager
    deleted = manager.instance_deleted
    said = queue.Queue()

    def recorded(ctx, instance_uuid, **kwargs):
        said.put(kwargs)
        return deleted(ctx, instance_uuid, **kwargs)
    monkeypatch.setattr(manager, 'instance_deleted', recorded)
    plane.client.run_action(admin, uuid, 'live_migrate')
    wait_for(lambda: [a for a in plane.statedb.list_allocations(
        instance_uuid=uuid) if a['host'] == dest],
        what='the migration to hold the destination')

    after = client.delete_instance(ctx, uuid)

    assert after['vm_state'] == vm.HARD_DELETED
    kwargs = said.get(timeout=TIMEOUT)
    assert kwargs['host'] == source
    assert kwargs.get('doomed_hosts') == ([dest] if names_dest else None)
    gate.set()
    wait_agent_done(plane, source)


def test_a_client_capped_at_1_7_creates_one_server_and_refuses_the_rest(
        conf, make_plane, ctx):
    """Below 1.8 a single create loses only its reservation id; what only
    1.8 carries (metadata, tags, several servers, attribute changes) is a
    503 naming the version, never sent without it."""
    set_opts(conf, 'upgrade_levels', conductor='1.7')
    plane = make_plane(hosts=1)
    capped = conductor_rpcapi.ConductorAPI(plane.bus, conf)
    inst = capped.create_instance(
        ctx, name='vm', flavor='tiny', image_ref='cirros',
        attributes={'boot_reservation_id': 'r-12345678', 'launch_index': 0})
    assert wait_idle(plane, inst['uuid'])['vm_state'] == vm.ACTIVE
    for call in (
            lambda: capped.create_instance(
                ctx, name='vm', flavor='tiny', image_ref='cirros',
                attributes={'metadata': {'a': 'b'}}),
            lambda: capped.create_instance(
                ctx, name='vm-2', flavor='tiny', image_ref='cirros',
                attributes={'launch_index': 1}),
            lambda: capped.update_attributes(ctx, inst['uuid'],
                                             {'description': 'd'}),
            lambda: capped.tenant_usage_page(
                ctx, start='2026-01-01T00:00:00',
                end='2026-01-02T00:00:00', limit=1)):
        with pytest.raises(exception.ServiceUnavailable) as err:
            call()
        assert '1.8' in err.value.message


def test_a_client_capped_at_1_8_refuses_named_networks(conf, make_plane, ctx):
    """Below 1.9 a create with networks "auto" (or none named) is sent as
    before; one naming networks is a 503 naming the version."""
    set_opts(conf, 'upgrade_levels', conductor='1.8')
    plane = make_plane(hosts=1)
    capped = conductor_rpcapi.ConductorAPI(plane.bus, conf)
    inst = capped.create_instance(ctx, name='vm', flavor='tiny',
                                  image_ref='cirros', networks='auto')
    assert wait_idle(plane, inst['uuid'])['vm_state'] == vm.ACTIVE
    with pytest.raises(exception.ServiceUnavailable, match='1.9'):
        capped.create_instance(ctx, name='vm2', flavor='tiny',
                               image_ref='cirros', networks='none')


def test_a_client_capped_below_1_20_never_sends_a_hostname_or_disk_config(
        conf, make_plane, ctx):
    """A hostname or a disk config (1.20) given to a client capped below
    it is a 503 naming the version, never sent to a conductor that would
    refuse the keys; uncapped, both are stored."""
    set_opts(conf, 'upgrade_levels', conductor='1.17')
    plane = make_plane(hosts=1)
    capped = conductor_rpcapi.ConductorAPI(plane.bus, conf)
    inst = capped.create_instance(ctx, name='vm', flavor='tiny',
                                  image_ref='cirros',
                                  attributes={'description': 'd'})
    for call in (
            lambda: capped.create_instance(
                ctx, name='vm-2', flavor='tiny', image_ref='cirros',
                attributes={'hostname': 'web-01'}),
            lambda: capped.update_attributes(ctx, inst['uuid'],
                                             {'auto_disk_config': True})):
        with pytest.raises(exception.ServiceUnavailable, match='1.20'):
            call()
    set_opts(conf, 'upgrade_levels', conductor=None)
    uncapped = conductor_rpcapi.ConductorAPI(plane.bus, conf)
    after = uncapped.update_attributes(ctx, inst['uuid'], {
        'hostname': 'web-01', 'auto_disk_config': True})
    assert (after['hostname'], after['auto_disk_config']) == ('web-01', True)


def test_security_groups_need_conductor_1_22_and_agent_1_13(
        conf, make_plane, ctx):
    """Nova's add/removeSecurityGroup (the ``set_security_groups`` task): a
    client capped below conductor RPC 1.22 refuses it (503 naming the
    version); a conductor whose agents are capped below 1.13 refuses it
    before the claim, the ports left in their group."""
    set_opts(conf, 'upgrade_levels', conductor='1.21', compute='1.12')
    plane = make_plane(hosts=1)
    plane.statedb.create_network(
        {'name': 'n', 'cidr': '10.9.0.0/24', 'bridge': 'br-n'},
        network_id='8d3c1f8e-6b1a-4f0e-9d7a-0a1b2c3d4e5f')
    capped = conductor_rpcapi.ConductorAPI(plane.bus, conf)
    inst = capped.create_instance(ctx, name='vm', flavor='tiny',
                                  image_ref='cirros')
    uuid = wait_idle(plane, inst['uuid'])['uuid']
    remove = {'security_groups': []}
    with pytest.raises(exception.ServiceUnavailable, match='1.22'):
        capped.run_action(ctx, uuid, 'set_security_groups', remove)
    set_opts(conf, 'upgrade_levels', conductor=None)
    uncapped = conductor_rpcapi.ConductorAPI(plane.bus, conf)
    with pytest.raises(exception.ServiceUnavailable, match='1.13'):
        uncapped.run_action(ctx, uuid, 'set_security_groups', remove)
    assert plane.statedb.get_instance(uuid)['task_id'] is None
    assert plane.statedb.security_groups_of([uuid]) == {uuid: ['default']}

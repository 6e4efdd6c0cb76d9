"""Scheduling and burial (DESIGN.md section 6).

The scheduler places an instance on a live, enabled host with room, and
allocates atomically: however many builds race, no host is over-committed.
No valid host buries the instance: ERROR, or PENDING with
``use_pending_state``, from which a rebuild schedules again once there is
room. A host whose heartbeats stopped gets no new instance, and its
instances take no new task (delete still works).
"""

import collections
import concurrent.futures

import pytest

from common import exception
from common import states
from common.states import vm
from tests.functional.conftest import act
from tests.functional.conftest import active
from tests.functional.conftest import allocated
from tests.functional.conftest import build
from tests.functional.conftest import set_opts
from tests.functional.conftest import summary
from tests.functional.conftest import used
from tests.functional.conftest import wait_heartbeat
from tests.functional.conftest import wait_idle
from tests.functional.conftest import without_report_marks

TINY_MB = 512           # [conductor] flavors: tiny is 1 vCPU, 512 MiB, 1 GiB


def _small_hosts(conf, tiny_per_host):
    """Fake hosts with RAM for ``tiny_per_host`` tiny instances each."""
    set_opts(conf, 'fake_driver', memory_mb=TINY_MB * tiny_per_host)


def _check_not_overcommitted(plane):
    ratios = plane.conf.scheduler
    for row in plane.statedb.list_hosts():
        host = row['name']
        assert row['used_vcpus'] <= row['vcpus'] * ratios.cpu_allocation_ratio
        assert row['used_memory_mb'] <= (
            row['memory_mb'] * ratios.ram_allocation_ratio), row
        assert row['used_disk_gb'] <= (
            row['disk_gb'] * ratios.disk_allocation_ratio), row
        assert used(plane, host) == allocated(plane, host), host


def _check_buried(plane, inst, vm_state):
    assert (inst['vm_state'], inst['task_state'], inst['task_id'],
            inst['host']) == (vm_state, None, None, None), summary(inst)
    entry = plane.statedb.list_actions(inst['uuid'])[-1]
    assert (entry['result'], entry['vm_state_after']) == (
        states.RESULT_BURIED, vm_state)
    assert entry['message'].startswith('No valid host was found: ')
    assert 'none of the rest has room for flavor' in entry['message']
    assert plane.statedb.list_allocations(instance_uuid=inst['uuid']) == []


# --- no valid host -----------------------------------------------------------

def test_no_valid_host_sets_error_by_default(conf, make_plane, ctx):
    _small_hosts(conf, 1)
    plane = make_plane(hosts=1)

    inst = build(plane, ctx, flavor='small')

    _check_buried(plane, inst, vm.ERROR)
    assert 'flavor small (1 vCPUs, 2048 MiB RAM, 20 GiB disk)' in (
        plane.statedb.list_actions(inst['uuid'])[-1]['message'])
    assert used(plane, 'host1') == (0, 0, 0)


def test_pending_instance_is_built_once_there_is_room(conf, make_plane,
                                                      ctx):
    conf.set_override('use_pending_state', True)
    _small_hosts(conf, 1)
    plane = make_plane(hosts=1)

    inst = build(plane, ctx, flavor='small')
    _check_buried(plane, inst, vm.PENDING)
    # Still no room: buried again, no harm done.
    again = act(plane, ctx, inst['uuid'], 'rebuild')
    _check_buried(plane, again, vm.PENDING)

    set_opts(conf, 'fake_driver', memory_mb=65536)
    plane.start_agent('host2')
    wait_heartbeat(plane, 'host2')
    built = act(plane, ctx, inst['uuid'], 'rebuild')

    assert (built['vm_state'], built['task_id'], built['host']) == (
        vm.ACTIVE, None, 'host2'), summary(built)
    assert [(e['action'], e['result'], e['vm_state_before'],
             e['vm_state_after']) for e in
            plane.statedb.list_actions(inst['uuid'])] == [
        ('build', states.RESULT_BURIED, vm.INITIALIZED, vm.PENDING),
        ('rebuild', states.RESULT_BURIED, vm.PENDING, vm.PENDING),
        ('rebuild', states.RESULT_SUCCESS, vm.PENDING, vm.ACTIVE)]
    assert used(plane, 'host2') == (1, 2048, 20)


def test_pending_instance_can_be_reset_to_error_or_deleted(
        conf, make_plane, ctx, admin):
    conf.set_override('use_pending_state', True)
    _small_hosts(conf, 0)
    plane = make_plane(hosts=1)
    first = build(plane, ctx)
    second = build(plane, ctx)
    assert first['vm_state'] == second['vm_state'] == vm.PENDING

    with pytest.raises(exception.Forbidden):
        plane.client.reset_state(ctx, first['uuid'], vm.ERROR)
    with pytest.raises(exception.ActionNotAllowed):
        plane.client.reset_state(admin, first['uuid'], vm.ACTIVE)
    reset = plane.client.reset_state(admin, first['uuid'], vm.ERROR)
    deleted = plane.client.delete_instance(ctx, second['uuid'])

    assert (reset['vm_state'], reset['task_id']) == (vm.ERROR, None)
    assert plane.statedb.get_instance(first['uuid'])['vm_state'] == vm.ERROR
    assert deleted['vm_state'] == vm.HARD_DELETED
    assert plane.statedb.get_instance(second['uuid'])['vm_state'] == (
        vm.HARD_DELETED)


# --- concurrency -------------------------------------------------------------

BUILDS = 50
PER_HOST = 3


def test_concurrent_builds_never_overcommit_a_host(conf, make_plane, ctx):
    _small_hosts(conf, PER_HOST)
    plane = make_plane(hosts=3)
    capacity = PER_HOST * len(plane.host_names)

    def create(i):
        return plane.client.create_instance(
            ctx, name='vm-%d' % i, flavor='tiny', image_ref='cirros')['uuid']

    with concurrent.futures.ThreadPoolExecutor(BUILDS) as pool:
        uuids = list(pool.map(create, range(BUILDS)))
    insts = [wait_idle(plane, uuid, timeout=30) for uuid in uuids]

    _check_not_overcommitted(plane)
    by_state = collections.Counter(i['vm_state'] for i in insts)
    assert by_state == {vm.ACTIVE: capacity, vm.ERROR: BUILDS - capacity}
    per_host = collections.Counter(i['host'] for i in insts
                                   if i['vm_state'] == vm.ACTIVE)
    assert per_host == {host: PER_HOST for host in plane.host_names}
    for inst in insts:
        result = plane.statedb.list_actions(inst['uuid'])[-1]['result']
        assert result == (states.RESULT_SUCCESS if inst['vm_state'] == vm.ACTIVE
                          else states.RESULT_BURIED), summary(inst)


# --- weighing ----------------------------------------------------------------

@pytest.mark.parametrize(('weigher', 'counts'), [('spread', {1}),
                                                 ('pack', {2, 0})],
                         ids=['spread', 'pack'])
def test_weigher_spreads_or_packs(conf, make_plane, ctx, weigher, counts):
    set_opts(conf, 'scheduler', weigher=weigher)
    plane = make_plane(hosts=2)

    hosts = [active(plane, ctx)['host'] for _ in range(2)]

    assert {hosts.count(h) for h in plane.host_names} == counts


# --- hosts that stop sending heartbeats --------------------------------------

def test_a_silent_host_is_skipped_and_its_instances_take_no_task(
        conf, make_plane, clock, ctx, admin):
    plane = make_plane(hosts=2, clock=clock)
    inst = active(plane, ctx)
    down = inst['host']
    [up] = [h for h in plane.host_names if h != down]
    plane.stop_agent(down)

    clock.advance(conf.conductor.service_down_time + 1)
    wait_heartbeat(plane, up, since=clock.now)

    shown = {h['name']: h['up'] for h in plane.client.list_hosts(admin)}
    assert shown == {down: False, up: True}
    assert {active(plane, ctx)['host'] for _ in range(3)} == {up}
    before = without_report_marks(plane.statedb.get_instance(inst['uuid']))
    with pytest.raises(exception.ServiceUnavailable) as caught:
        plane.client.run_action(ctx, inst['uuid'], 'stop')
    assert down in str(caught.value) and inst['uuid'] in str(caught.value)
    assert without_report_marks(
        plane.statedb.get_instance(inst['uuid'])) == before
    deleted = plane.client.delete_instance(ctx, inst['uuid'])
    assert deleted['vm_state'] == vm.HARD_DELETED
    assert used(plane, down) == (0, 0, 0)


def test_no_live_host_buries_with_the_reason(conf, make_plane, clock, ctx):
    plane = make_plane(hosts=1, clock=clock)
    plane.stop_agent('host1')
    clock.advance(conf.conductor.service_down_time + 1)

    inst = build(plane, ctx)

    _check_buried(plane, inst, vm.ERROR)
    assert '1 host(s): 0 disabled, 1 down' in (
        plane.statedb.list_actions(inst['uuid'])[-1]['message'])

"""Cold migration and cross-host resize on the fake driver (issue 25): the
disk goes through the API tier's own image service, the instance ends
RESIZED on the destination with the source kept, allocations on both;
confirm frees the source, revert restores it byte for byte; a delete in
the middle leaves nothing on either host."""

import threading

import pytest

from api import service as api_service
from common import flavors
from common.db import images as images_db
from common import context
from common.states import power
from common.states import vm
from compute_agent.virt import fake
from conductor import migrate
from tests.functional import api_support
from tests.functional import osc_support
from tests.functional.conftest import allocated
from tests.functional.conftest import active
from tests.functional.conftest import domain
from tests.functional.conftest import set_opts
from tests.functional.conftest import TIMEOUT
from tests.functional.conftest import wait_domain
from tests.functional.conftest import wait_for
from tests.functional.conftest import wait_idle

DATA = b'what the guest wrote before it moved\n'


@pytest.fixture(scope='module')
def served(shared_plane):
    """The module's plane and its API's URL (the agents' image service)."""
    conf = api_support.configure(shared_plane.conf)
    client = api_service.make_client(conf, shared_plane.bus,
                                     shared_plane.statedb)
    server = api_service.serve(conf, client, host='127.0.0.1', port=0)
    set_opts(conf, 'image', service_url=server.url + '/image')
    yield shared_plane, server.url
    server.stop()


@pytest.fixture(scope='module')
def plane(served):
    return served[0]


def driver(plane, host):
    found = fake.FakeDriver(state_dir=plane.conf.state_dir)
    found.init_host(host)
    return found


def disk(plane, host, uuid):
    return driver(plane, host).disk_content(uuid)


def written(plane, ctx, **kwargs):
    """An ACTIVE instance whose guest wrote :data:`DATA` to its disk; its
    row, its source, the other host."""
    inst = active(plane, ctx, **kwargs)
    source = inst['host']
    [dest] = [h for h in plane.host_names if h != source]
    driver(plane, source).write_disk(inst['uuid'], DATA)
    return inst, source, dest


def hosts_held(plane, uuid):
    return set((a['host'], a['purpose'])
                  for a in plane.statedb.list_allocations(instance_uuid=uuid))


def run(plane, ctx, uuid, action, **params):
    plane.client.run_action(ctx, uuid, action, params)
    return wait_idle(plane, uuid)


def migration_of(plane, uuid):
    [row] = plane.statedb.list_migrations(instance_uuid=uuid)
    return row


def no_temporary_image(plane):
    return not [i for i in images_db.list_images(
        plane.statedb, context.get_admin_context(),
        limit=images_db.MAX_LIMIT) if migrate.PROPERTY in i['properties']
        and i['status'] != 'deleted']


def test_migrate_then_revert_restores_the_source_byte_for_byte(
        plane, ctx, admin):
    inst, source, dest = written(plane, ctx)
    uuid = inst['uuid']
    before_disk = disk(plane, source, uuid)
    before = domain(plane, source, uuid)

    after = run(plane, admin, uuid, 'migrate')

    assert (after['vm_state'], after['host']) == (vm.RESIZED, dest)
    assert hosts_held(plane, uuid) == {(dest, 'resize'), (source, 'instance')}
    assert domain(plane, dest, uuid)['power_state'] == power.RUNNING
    assert disk(plane, dest, uuid) == before_disk
    assert domain(plane, source, uuid)['power_state'] == power.SHUTDOWN
    row = migration_of(plane, uuid)
    assert (row['migration_type'], row['status'], row['source_host'],
            row['dest_host']) == ('migration', 'finished', source, dest)
    assert no_temporary_image(plane)

    after = run(plane, admin, uuid, 'revert_resize')

    assert (after['vm_state'], after['host']) == (vm.ACTIVE, source)
    assert hosts_held(plane, uuid) == {(source, 'instance')}
    assert disk(plane, source, uuid) == before_disk
    now = domain(plane, source, uuid)
    assert now['power_state'] == power.RUNNING
    assert now['flavor'] == before['flavor']
    wait_domain(plane, dest, uuid, lambda rec: rec is None,
                what='the destination to destroy its copy')
    assert disk(plane, dest, uuid) is None
    assert migration_of(plane, uuid)['status'] == 'reverted'


def test_resize_to_another_host_then_confirm_frees_the_source(
        plane, ctx, admin):
    inst, source, dest = written(plane, ctx)
    uuid = inst['uuid']
    # the source has no room for the bigger flavor: the resize moves
    big = flavors.get(plane.conf, plane.statedb, 'small', admin)
    host = plane.statedb.get_host(source)
    plane.statedb.set_host_enabled(source, False, 'full for the test')
    try:
        after = run(plane, ctx, uuid, 'resize', flavor='small')
    finally:
        plane.statedb.set_host_enabled(source, True)
    assert host is not None
    assert (after['vm_state'], after['host'], after['flavor_name']) == (
        vm.RESIZED, dest, 'small')
    assert domain(plane, dest, uuid)['flavor']['disk_gb'] == big.disk_gb
    assert migration_of(plane, uuid)['migration_type'] == 'resize'

    after = run(plane, ctx, uuid, 'confirm_resize')

    assert (after['vm_state'], after['host']) == (vm.ACTIVE, dest)
    assert hosts_held(plane, uuid) == {(dest, 'instance')}
    assert allocated(plane, dest)[2] >= big.disk_gb
    wait_domain(plane, source, uuid, lambda rec: rec is None,
                what='the source to destroy its copy')
    assert disk(plane, source, uuid) is None
    assert disk(plane, dest, uuid)[-fake._CLUSTER:].startswith(DATA)


def test_a_stopped_guest_stays_stopped_on_the_destination(plane, ctx, admin):
    inst, source, dest = written(plane, ctx)
    uuid = inst['uuid']
    run(plane, ctx, uuid, 'stop')
    after = run(plane, admin, uuid, 'migrate', host=dest)
    assert (after['vm_state'], after['host']) == (vm.RESIZED, dest)
    assert domain(plane, dest, uuid)['power_state'] == power.SHUTDOWN
    after = run(plane, admin, uuid, 'confirm_resize')
    assert after['vm_state'] == vm.STOPPED


def test_a_corrupt_copy_fails_the_move_with_the_source_untouched(
        plane, ctx, admin, monkeypatch):
    inst, source, dest = written(plane, ctx)
    uuid = inst['uuid']
    before_disk = disk(plane, source, uuid)
    manager = plane.agents[source].manager
    real = manager.conductor.migration_disk_sent

    def corrupt(*args, disk, **kwargs):
        return real(*args, disk=dict(disk, sha256='0' * 64), **kwargs)
    monkeypatch.setattr(manager.conductor, 'migration_disk_sent', corrupt,
                        raising=False)

    after = run(plane, admin, uuid, 'migrate')

    assert (after['vm_state'], after['host']) == (vm.ACTIVE, source)
    assert hosts_held(plane, uuid) == {(source, 'instance')}
    assert disk(plane, source, uuid) == before_disk
    assert domain(plane, source, uuid)['power_state'] == power.RUNNING
    assert domain(plane, dest, uuid) is None
    assert migration_of(plane, uuid)['status'] == 'error'
    assert no_temporary_image(plane)


def test_a_delete_during_a_cold_migration_leaves_nothing_anywhere(
        plane, ctx, admin, monkeypatch):
    inst, source, dest = written(plane, ctx)
    uuid = inst['uuid']
    manager = plane.agents[source].manager
    real = manager.conductor.migration_disk_sent
    gate, arrived = threading.Event(), threading.Event()

    def held(*args, **kwargs):
        answer = real(*args, **kwargs)      # the destination has its copy
        arrived.set()
        gate.wait(TIMEOUT)
        return answer
    monkeypatch.setattr(manager.conductor, 'migration_disk_sent', held,
                        raising=False)
    plane.client.run_action(admin, uuid, 'migrate', {})
    assert arrived.wait(TIMEOUT)
    assert domain(plane, dest, uuid) is not None

    plane.client.delete_instance(ctx, uuid)
    gate.set()

    for host in (source, dest):
        wait_domain(plane, host, uuid, lambda rec: rec is None,
                    what='the copy to be destroyed')
        assert disk(plane, host, uuid) is None
    wait_for(lambda: hosts_held(plane, uuid) == set(),
             what='every allocation freed')
    assert no_temporary_image(plane)




def test_openstackclient_server_migrate_then_confirm(
        served, ctx, tmp_path):
    plane, url = served
    osc_support.write_clouds(tmp_path, osc_support.CLOUD, url,
                             {'admin': api_support.ADMIN_TOKEN})

    def osc(*args):
        done = osc_support.run(tmp_path, ['--os-compute-api-version', '2.56',
                                          *args], 'admin')
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout
    # one round (each command costs seconds); revert is the RPC tests'
    inst, source, dest = written(plane, ctx)
    uuid = inst['uuid']
    osc('server', 'migrate', '--host', dest, '--wait', uuid)
    row = wait_idle(plane, uuid)
    assert (row['vm_state'], row['host']) == (vm.RESIZED, dest)
    osc('server', 'migrate', 'confirm', uuid)
    row = wait_idle(plane, uuid)
    assert (row['vm_state'], row['host']) == (vm.ACTIVE, dest)
    wait_domain(plane, source, uuid, lambda rec: rec is None,
                what='the source copy destroyed')

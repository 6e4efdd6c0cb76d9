"""A real client no one here wrote: openstacksdk, with ``auth_type: none``
and an endpoint override, over real HTTP against the embedded API (cheroot
on 127.0.0.1, a free port)."""

import time

import openstack
import pytest
from openstack import exceptions as sdk_exceptions

from api import service as api_service
from tests.functional import api_support
from tests.functional.conftest import TIMEOUT
from tests.functional.conftest import set_opts
from tests.functional.conftest import wait_for
from tests.images_support import IMAGE


@pytest.fixture(scope='module')
def endpoint(shared_plane):
    conf = api_support.configure(shared_plane.conf)
    conf.set_override('use_pending_state', True)
    set_opts(conf, 'conductor', flavors=list(conf.conductor.flavors)
             + ['huge:1:100000000:1'])
    client = api_service.make_client(conf, shared_plane.bus,
                                     shared_plane.statedb)
    server = api_service.serve(conf, client, host='127.0.0.1', port=0)
    yield server.url + '/v2.1'
    server.stop()


@pytest.fixture(scope='module')
def conn(endpoint):
    conn = openstack.connect(load_yaml_config=False, load_envvars=False,
                             auth_type='none', region_name='RegionOne',
                             compute_endpoint_override=endpoint)
    yield conn
    conn.close()


def _wait_status(conn, server_id, status):
    last = {}

    def reached():
        last['server'] = conn.compute.get_server(server_id)
        return (last['server'].status == status
                and last['server'].task_state is None)
    wait_for(reached, what='server %s to be %s' % (server_id, status),
             show=lambda: last.get('server') and last['server'].status)
    return last['server']


def test_servers_through_openstacksdk(conn):
    created = conn.compute.create_server(name='sdk1', flavor_id='tiny',
                                         image_id=IMAGE)
    server = conn.compute.wait_for_server(created, status='ACTIVE',
                                          wait=TIMEOUT, interval=0.1)
    assert server.name == 'sdk1'
    assert server.vm_state == 'active'
    assert server.power_state == 1
    assert server.compute_host in ('host1', 'host2')
    assert server.flavor.original_name == 'tiny'      # 2.47+: embedded
    assert server.id in [s.id for s in conn.compute.servers()]
    assert server.id in [s.id for s in conn.compute.servers(details=False)]

    conn.compute.stop_server(server)
    assert _wait_status(conn, server.id, 'SHUTOFF').vm_state == 'stopped'
    conn.compute.start_server(server)
    assert _wait_status(conn, server.id, 'ACTIVE').vm_state == 'active'

    with pytest.raises(sdk_exceptions.ConflictException) as denied:
        conn.compute.unpause_server(server)
    assert 'unpause needs vm_state in paused' in str(denied.value)

    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, wait=TIMEOUT, interval=0.1)
    with pytest.raises(sdk_exceptions.NotFoundException):
        conn.compute.get_server(server.id)


def test_flavors_and_hosts_through_openstacksdk(conn):
    flavors = {f.name: f for f in conn.compute.flavors()}
    assert {'tiny', 'small', 'medium', 'large'} <= set(flavors)
    small = conn.compute.find_flavor('small')
    assert (small.vcpus, small.ram, small.disk) == (1, 2048, 20)
    hosts = {h.name: h for h in conn.compute.hypervisors(details=True)}
    assert set(hosts) == {'host1', 'host2'}
    assert {h.state for h in hosts.values()} == {'up'}


def test_openstacksdk_sees_pending_as_error(conn):
    """openstacksdk asks for at most 2.100; PENDING came in 2.101."""
    created = conn.compute.create_server(name='big', flavor_id='huge',
                                         image_id=IMAGE)
    deadline = time.monotonic() + TIMEOUT
    server = conn.compute.get_server(created.id)
    while server.task_state is not None and time.monotonic() < deadline:
        time.sleep(0.05)
        server = conn.compute.get_server(created.id)
    assert (server.status, server.vm_state) == ('ERROR', 'error')
    conn.compute.delete_server(server)


def test_rename_rescue_image_and_action_events_through_openstacksdk(conn):
    created = conn.compute.create_server(name='sdk2', flavor_id='tiny',
                                         image_id=IMAGE)
    server = conn.compute.wait_for_server(created, status='ACTIVE',
                                          wait=TIMEOUT, interval=0.1)
    renamed = conn.compute.update_server(server, name='sdk2-renamed')
    assert conn.compute.get_server(server.id).name == 'sdk2-renamed'
    assert renamed.name == 'sdk2-renamed'

    # Server.create_image: the image id, from the body at 2.45 and up
    # (the proxy's create_server_image then asks Glance, which is not here)
    image_id = server.create_image(conn.compute, 'sdk-snap')
    assert len(image_id) == 36
    _wait_status(conn, server.id, 'ACTIVE')

    conn.compute.rescue_server(server, admin_pass='sdk-Pass-1')
    assert _wait_status(conn, server.id, 'RESCUE').vm_state == 'rescued'
    actions = list(conn.compute.server_actions(server))
    assert [a.action for a in actions[:2]] == ['rescue', 'createImage']
    assert 'image %s (sdk-snap)' % image_id == actions[1].message
    rescue = conn.compute.get_server_action(actions[0].request_id, server)
    assert [(e.event, e.result) for e in rescue.events] == [
        ('tristate_rescue', 'Success')]
    conn.compute.delete_server(server)


def test_quota_sets_and_usage_through_openstacksdk(conn):
    project = 'sdk-quota-project'
    conn.compute.update_quota_set(project, instances=7, cores=9)
    got = conn.compute.get_quota_set(project)
    assert (got.instances, got.cores) == (7, 9)
    assert conn.compute.get_quota_set_defaults(project).cores != got.cores
    detail = conn.compute.get_quota_set(project, usage=True)
    assert detail.usage['instances'] == 0


def test_server_list_filters_through_openstacksdk(conn):
    """openstacksdk's filters are honoured, or refused: never ignored."""
    created = conn.compute.create_server(name='sdkf', flavor_id='small',
                                         image_id=IMAGE)
    server = conn.compute.wait_for_server(created, status='ACTIVE',
                                          wait=TIMEOUT, interval=0.1)
    try:
        def ids(**query):
            return {s.id for s in conn.compute.servers(**query)}
        assert server.id in ids(flavor='small', image=IMAGE)
        assert server.id not in ids(flavor='tiny')
        assert server.id not in ids(image='other')
        assert server.id in ids(vm_state='active',
                                changes_since='2000-01-01T00:00:00Z')
        assert ids(changes_since='2999-01-01T00:00:00Z') == set()
        assert server.id not in ids(changes_before='2000-01-01T00:00:00Z')
        assert server.id in ids(compute_host=server.compute_host)
        assert server.id not in ids(deleted_only=True)
        # a server on no network has no address to match
        assert server.id not in ids(ipv4_address='10.0.0.1')
        with pytest.raises(sdk_exceptions.BadRequestException) as bad:
            list(conn.compute.servers(power_state='1'))
        assert 'not supported' in str(bad.value)
    finally:
        conn.compute.delete_server(server)

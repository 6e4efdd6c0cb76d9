"""A lost connection is re-opened: the next operation works, event
callbacks are registered again, and what changed meanwhile is reported."""

import os
import threading

import pytest

from tests.unit.compute_agent.libvirt import require_libvirt

libvirt = require_libvirt()

from common.states import power  # noqa: E402
from compute_agent.virt import driver as virt  # noqa: E402
from compute_agent.virt.libvirt import connection  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import TINY  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import WAIT  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import new_uuid  # noqa: E402


def spawn(drv):
    uuid = new_uuid()
    drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros')
    return uuid


def test_after_close_an_operation_works_and_events_flow(make_driver,
                                                        recorder):
    drv = make_driver()
    drv.watch(recorder)
    before = spawn(drv)
    recorder.wait_for(before, power.RUNNING)
    drv.connection.get().close()          # as if libvirtd went away
    # A node file's domains are per connection: the new one starts from the
    # file again, so the domain made before is gone, and said so.
    assert drv.list_domains() == []
    assert drv.connection.opened == 2
    recorder.wait_for(before, power.NOSTATE)
    after = spawn(drv)
    recorder.wait_for(after, power.RUNNING)
    drv.connection.get().lookupByUUIDString(after).shutdown()
    recorder.wait_for(after, power.SHUTDOWN, 'guest')


def test_domains_that_outlive_the_connection_stay_usable(make_driver,
                                                         recorder):
    # test:///default lives as long as one connection to it is open (here
    # the test's), like domains outlive a libvirtd restart.
    keeper = libvirt.open('test:///default')
    try:
        drv = make_driver(uri='test:///default', test_node_per_host=False)
        drv.watch(recorder)
        uuid = spawn(drv)
        recorder.wait_for(uuid, power.RUNNING)
        drv.connection.get().close()
        drv.power_off(uuid)
        assert drv.get_domain(uuid).power_state == power.SHUTDOWN
        recorder.wait_for(uuid, power.SHUTDOWN, None)
        drv.destroy(uuid)
    finally:
        keeper.close()


def test_a_close_reported_by_libvirt_reopens_in_the_background(make_driver):
    drv = make_driver()
    conn = drv.connection.get()
    reopened = threading.Event()
    drv.connection.on_open.append(lambda _conn: reopened.set())
    # What libvirt calls when a remote connection drops (the test driver
    # never does): the connection is re-opened without waiting for a call.
    drv.connection._on_close(conn, libvirt.VIR_CONNECT_CLOSE_REASON_EOF, conn)
    assert reopened.wait(WAIT)
    assert drv.connection.get() is not conn


def test_a_connection_that_cannot_open_fails_after_its_timeout(tmp_path):
    conn = connection.Connection('test://%s/missing.xml' % tmp_path,
                                 interval_min=0.01, interval_max=0.02,
                                 timeout=0.1)
    with pytest.raises(virt.VirtError, match='cannot connect to libvirt'):
        conn.get()


def test_a_closed_connection_stays_closed(make_driver):
    drv = make_driver()
    drv.connection.close()
    with pytest.raises(virt.VirtError, match='is closed'):
        drv.list_domains()


def test_test_default_gets_a_node_file_per_host(make_driver, tmp_path):
    one = make_driver(uri='test:///default', host='h1')
    two = make_driver(uri='test:///default', host='h2')
    assert one.connection.uri.endswith('/test-nodes/h1.xml')
    assert two.connection.uri.endswith('/test-nodes/h2.xml')
    uuid = spawn(one)
    assert one.get_domain(uuid) is not None
    assert two.get_domain(uuid) is None


def test_a_spawn_that_loses_the_connection_fails_saying_so(make_driver,
                                                           monkeypatch):
    # A spawn is not run again on a new connection (it may have half
    # happened): it fails, naming the lost connection, and leaves no files;
    # the next spawn runs on a new connection.
    from compute_agent.virt.libvirt import disks
    drv = make_driver()
    make_disk = disks.create_disk

    def lose_connection(*args):
        drv.connection.get().close()       # as if libvirtd died meanwhile
        return make_disk(*args)
    monkeypatch.setattr(disks, 'create_disk', lose_connection)
    uuid = new_uuid()
    with pytest.raises(virt.VirtError, match='connection .* was lost during '
                       'the operation'):
        drv.spawn(uuid, name='vm', flavor=TINY, image_ref='cirros')
    assert not os.path.exists(os.path.join(drv.instances_path, uuid))
    monkeypatch.setattr(disks, 'create_disk', make_disk)
    after = spawn(drv)
    assert drv.get_domain(after).power_state == power.RUNNING
    assert drv.connection.opened == 2

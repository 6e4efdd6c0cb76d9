"""The sweep of leftover config drives and console logs (issue 24,
:mod:`compute_agent.leftovers`): files of instances with no domain on the
host and no task running, untouched for the grace period, go; those of a
domain (running or stopped), of a running task, or written recently stay;
the agent sweeps at its start. And a stopped domain keeps its serial port:
a new guest never gets it."""

import os
import socket
import time

from tests.unit.compute_agent.libvirt import require_libvirt

libvirt = require_libvirt()

from oslo_config import cfg  # noqa: E402

from common import conf as tconf  # noqa: E402
from compute_agent import configdrive  # noqa: E402
from compute_agent import leftovers  # noqa: E402
from compute_agent import reporter as reporter_mod  # noqa: E402
from compute_agent.virt import consolelog  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import TINY  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import new_uuid  # noqa: E402



def _later():
    """A moment past the grace of files made now (computed when asked:
    a module-level time goes stale when the test runs long after the
    module was imported, as on a parallel run's worker)."""
    return time.time() + leftovers.GRACE + 60


def _conf(tmp_path):
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    conf([], project='tristate', default_config_files=[])
    conf.set_override('state_dir', str(tmp_path / 'state'))
    return conf


def _leave(conf, drv, uuid):
    """A config drive and a console log (and its backup) of ``uuid``."""
    configdrive.build_iso({'openstack/latest/meta_data.json': b'{}'},
                          configdrive.path(conf, 'h1', uuid))
    log = drv._files(uuid).console_log  # noqa: SLF001
    os.makedirs(os.path.dirname(log), exist_ok=True)
    for name in (log, log + '.0'):
        with open(name, 'w') as f:
            f.write('BOOT-OK\n')
    return configdrive.path(conf, 'h1', uuid), log


def test_only_what_no_domain_or_task_owns_is_swept(tmp_path, make_driver):
    conf, drv = _conf(tmp_path), make_driver()
    running, stopped, busy, gone = (new_uuid() for _ in range(4))
    for uuid in (running, stopped):
        drv.spawn(uuid, name='a', flavor=TINY, image_ref='cirros')
    drv.power_off(stopped)
    files = {u: _leave(conf, drv, u) for u in (running, stopped, busy, gone)}

    # recent files stay whatever owns them
    assert leftovers.sweep(conf=conf, host='h1', driver=drv,
                           busy=lambda: {busy}) == set()
    assert leftovers.sweep(conf=conf, host='h1', driver=drv,
                           busy=lambda: {busy}, now=_later()) == {gone}
    for uuid, paths in files.items():
        assert all(os.path.exists(p) for p in paths) == (uuid != gone)
    assert not os.path.exists(files[gone][1] + '.0')
    assert not os.path.exists(drv._files(gone).path)  # noqa: SLF001
    # the task ended and left no domain: its files go at the next sweep
    assert leftovers.sweep(conf=conf, host='h1', driver=drv,
                           busy=set, now=_later()) == {busy}


def test_a_log_written_recently_is_kept_though_its_backup_is_old(
        tmp_path, make_driver):
    conf, drv = _conf(tmp_path), make_driver()
    uuid = new_uuid()
    _, log = _leave(conf, drv, uuid)
    os.utime(log + '.0', (0, 0))
    assert not consolelog.stale(log, time.time() - 60)
    os.utime(log, (0, 0))
    assert consolelog.stale(log, time.time() - 60)


def test_the_agent_sweeps_at_its_start(tmp_path, make_driver):
    conf, drv = _conf(tmp_path), make_driver()
    uuid = new_uuid()
    iso, log = _leave(conf, drv, uuid)
    old = time.time() - leftovers.GRACE - 60
    for name in (iso, log, log + '.0'):
        os.utime(name, (old, old))

    class Conductor:
        def carries_power(self):
            return True

        def heartbeat(self, *args, **kwargs):
            return {}

    rep = reporter_mod.Reporter(host='h1', driver=drv, conductor=Conductor(),
                                conf=conf, journal=None,
                                delivered=reporter_mod.Delivered())
    rep._beats = lambda: None  # noqa: SLF001 (no heartbeats here)
    rep.start()
    try:
        deadline = time.monotonic() + 10
        while os.path.exists(iso) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        rep.stop()
    assert not os.path.exists(iso) and not os.path.exists(log)


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def test_a_stopped_domain_keeps_its_serial_port(make_driver):
    first = _free_port()
    drv = make_driver(console=consolelog.Settings(
        enabled=True, listen_address='127.0.0.1', first_port=first,
        last_port=first + 1))
    one, two = new_uuid(), new_uuid()
    drv.spawn(one, name='a', flavor=TINY, image_ref='cirros')
    drv.power_off(one)            # nothing listens on its port now
    drv.spawn(two, name='b', flavor=TINY, image_ref='cirros')
    assert drv.console_endpoint(one)['port'] == first
    assert drv.console_endpoint(two)['port'] == first + 1

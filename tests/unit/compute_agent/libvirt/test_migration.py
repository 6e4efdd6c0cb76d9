"""The live migration logic of the libvirt driver (compute_agent/virt/
libvirt/migration.py) on a mocked domain: libvirt's test driver cannot
migrate, and the real run (two private libvirtds, a counting guest) is
tests/functional/test_live_migration_on_real_qemu.py. Here: the flags and
parameters handed to ``migrateToURI3``, the destination's paths in the XML,
progress from ``jobStats``, the abort at the timeout (the guest stays),
post-copy only when permitted, and a preempted task aborting the job."""

import os
import threading

import pytest

from tests.unit.compute_agent.libvirt import require_libvirt

libvirt = require_libvirt()

from compute_agent.virt import driver as virt  # noqa: E402
from compute_agent.virt.libvirt import migration  # noqa: E402
from tests.unit.compute_agent.libvirt.conftest import new_uuid  # noqa: E402

XML = """<domain type='qemu'>
  <uuid>{uuid}</uuid>
  <metadata><tristate:instance xmlns:tristate='urn:tristate:instance:1'>
    <tristate:name>vm</tristate:name></tristate:instance></metadata>
  <devices>
    <disk type='file' device='disk'>
      <source file='{disk}'/><target dev='vda' bus='virtio'/>
    </disk>
    <disk type='file' device='cdrom'>
      <source file='/x/disk.config'/><target dev='hda' bus='ide'/>
      <readonly/>
    </disk>
    <serial type='tcp'>
      <source mode='bind' host='0.0.0.0' service='10000'/>
      <protocol type='raw'/><log file='{log}' append='on'/>
    </serial>
  </devices>
</domain>"""
INCOMING = {'uri': 'qemu+tcp://h2/system', 'inbound_addr': '10.0.0.2',
            'disk': '/dest/i/disk', 'console_log': '/dest/i/console.log',
            'serial_tcp': ['0.0.0.0', 10005]}


class FakeDomain:
    """A running domain whose migration job advances one step per
    ``jobStats`` read (``stats``: what each read answers, the last kept)
    and ends when ``finish`` is set, or fails when aborted."""

    def __init__(self, uuid, xml, stats=(), *, finish_after=None):
        self.uuid = uuid
        self.xml = xml
        self.stats = list(stats)
        self.calls = []
        self.active = True
        self.finish = threading.Event()
        self.aborted = threading.Event()
        self.finish_after = finish_after
        self.reads = 0

    def UUIDString(self):
        return self.uuid

    def isActive(self):
        return self.active

    def state(self):
        return libvirt.VIR_DOMAIN_RUNNING, 1

    def XMLDesc(self, flags=0):
        return self.xml

    def migrateToURI3(self, uri, params, flags):
        self.calls.append(('migrateToURI3', uri, params, flags))
        while not self.finish.wait(0.005):
            if self.aborted.is_set():
                raise libvirt.libvirtError('operation aborted: migration '
                                           'out job: canceled by client')
        self.active = False

    def jobStats(self, flags=0):
        self.reads += 1
        if self.finish_after is not None and self.reads >= self.finish_after:
            self.finish.set()
        if len(self.stats) > 1:
            return self.stats.pop(0)
        return self.stats[0] if self.stats else {}

    def abortJob(self):
        self.calls.append(('abortJob',))
        self.aborted.set()

    def migrateStartPostCopy(self, flags=0):
        self.calls.append(('migrateStartPostCopy',))
        self.finish.set()


class Clock:
    """Advances ``step`` seconds at each read."""

    def __init__(self, step):
        self.now = 0.0
        self.step = step

    def __call__(self):
        self.now += self.step
        return self.now


@pytest.fixture
def source(make_driver):
    drv = make_driver()
    drv.migration = migration.Settings(timeout=0, poll=0.001)
    return drv


def _domain(drv, stats=(), **kwargs):
    uuid = new_uuid()
    files = drv._files(uuid)
    files.create()
    dom = FakeDomain(uuid, XML.format(uuid=uuid, disk=files.disk,
                                      log=files.console_log), stats, **kwargs)
    drv._lookup = lambda conn, wanted: dom if wanted == uuid else None
    return dom


def test_flags_and_parameters_for_non_shared_storage(source):
    dom = _domain(source, finish_after=1)
    source.migrate_out(dom.uuid, dest='h2', incoming=INCOMING)
    [(_, uri, params, flags)] = [c for c in dom.calls
                                 if c[0] == 'migrateToURI3']
    assert uri == 'qemu+tcp://h2/system'
    assert flags == (libvirt.VIR_MIGRATE_LIVE | libvirt.VIR_MIGRATE_PEER2PEER
                     | libvirt.VIR_MIGRATE_PERSIST_DEST
                     | libvirt.VIR_MIGRATE_UNDEFINE_SOURCE
                     | libvirt.VIR_MIGRATE_NON_SHARED_INC)
    assert not flags & libvirt.VIR_MIGRATE_POSTCOPY     # off by default
    assert params[libvirt.VIR_MIGRATE_PARAM_MIGRATE_DISKS] == ['vda']
    assert params[libvirt.VIR_MIGRATE_PARAM_URI] == 'tcp://10.0.0.2'
    for key in (libvirt.VIR_MIGRATE_PARAM_DEST_XML,
                libvirt.VIR_MIGRATE_PARAM_PERSIST_XML):
        xml = params[key]
        assert "file='/dest/i/disk'" in xml.replace('"', "'")
        assert "file='/dest/i/console.log'" in xml.replace('"', "'")
        assert "service='10005'" in xml.replace('"', "'")
        assert "'/x/disk.config'" in xml.replace('"', "'")  # not a copy
        assert 'urn:tristate:instance:1' in xml
    # the guest left: its files here go
    assert not os.path.exists(source._files(dom.uuid).path)


def test_a_carried_config_drive_is_the_destinations_cdrom(source):
    """Issue 25: the config drive's ISO, placed on the destination by its
    agent, is what the CD-ROM of the migrated definition points to; it is
    still not one of the disks libvirt copies."""
    dom = _domain(source, finish_after=1)
    incoming = dict(INCOMING, config_drive='/dest/drives/it.iso')
    source.migrate_out(dom.uuid, dest='h2', incoming=incoming)
    [(_, _uri, params, _flags)] = [c for c in dom.calls
                                   if c[0] == 'migrateToURI3']
    assert params[libvirt.VIR_MIGRATE_PARAM_MIGRATE_DISKS] == ['vda']
    for key in (libvirt.VIR_MIGRATE_PARAM_DEST_XML,
                libvirt.VIR_MIGRATE_PARAM_PERSIST_XML):
        xml = params[key].replace('"', "'")
        assert "file='/dest/drives/it.iso'" in xml
        assert '/x/disk.config' not in xml


def test_post_copy_flag_only_when_permitted(source):
    source.migration = migration.Settings(timeout=0, poll=0.001,
                                          permit_post_copy=True)
    dom = _domain(source, finish_after=1)
    source.migrate_out(dom.uuid, dest='h2', incoming=INCOMING)
    assert dom.calls[0][3] & libvirt.VIR_MIGRATE_POSTCOPY


def test_progress_follows_job_stats_and_never_goes_back(source):
    stats = [{}, {'data_total': 1000, 'data_processed': 100},
             {'data_total': 1000, 'data_processed': 500},
             {'data_total': 2000, 'data_processed': 600},   # dirtied: 30 %
             {'data_total': 1000, 'data_processed': 1000}]
    dom = _domain(source, stats, finish_after=6)
    seen = []
    source.migrate_out(dom.uuid, dest='h2', incoming=INCOMING,
                       progress=seen.append)
    assert seen == [10, 50, 99]


def test_timeout_aborts_the_job_and_the_guest_stays(source):
    source.migration = migration.Settings(timeout=5, poll=0.001)
    source.clock = Clock(1.0)
    dom = _domain(source, [{'data_total': 10, 'data_processed': 1}])
    with pytest.raises(virt.VirtError, match='live_migration_timeout') as exc:
        source.migrate_out(dom.uuid, dest='h2', incoming=INCOMING)
    assert ('abortJob',) in dom.calls
    assert ('migrateStartPostCopy',) not in dom.calls
    assert exc.value.rolled_back            # still active here
    assert os.path.isdir(source._files(dom.uuid).path)    # files kept


def test_timeout_with_post_copy_permitted_switches_instead(source):
    source.migration = migration.Settings(timeout=5, poll=0.001,
                                          permit_post_copy=True)
    source.clock = Clock(1.0)
    dom = _domain(source, [{'data_total': 10, 'data_processed': 1}])
    source.migrate_out(dom.uuid, dest='h2', incoming=INCOMING)
    assert ('migrateStartPostCopy',) in dom.calls
    assert ('abortJob',) not in dom.calls


def test_a_stopped_task_aborts_the_job(source):
    """A delete preempts the task: its progress report raises, the job is
    aborted, nothing runs on the destination."""
    dom = _domain(source, [{'data_total': 10, 'data_processed': 5}])

    def preempted(percent):
        raise RuntimeError('task preempted by delete')
    with pytest.raises(RuntimeError, match='preempted'):
        source.migrate_out(dom.uuid, dest='h2', incoming=INCOMING,
                           progress=preempted)
    assert ('abortJob',) in dom.calls


def test_a_failed_migration_is_rolled_back_when_the_guest_is_here(source):
    dom = _domain(source)

    def refuse(uri, params, flags):
        raise libvirt.libvirtError('Requested operation is not valid: '
                                   'domain with the same uuid exists')
    dom.migrateToURI3 = refuse
    with pytest.raises(virt.VirtError, match='same uuid') as exc:
        source.migrate_out(dom.uuid, dest='h2', incoming=INCOMING)
    assert exc.value.rolled_back


def test_incoming_uri_from_the_options():
    settings = migration.Settings(scheme='tls', inbound_addr='10.1.1.1')
    assert settings.incoming_uri() == 'qemu+tls://10.1.1.1/system'
    settings = migration.Settings(inbound_addr='10.1.1.1',
                                  uri='qemu+ssh://mig@%s/system')
    assert settings.incoming_uri() == 'qemu+ssh://mig@10.1.1.1/system'


def test_percent_done():
    assert migration.percent_done({}) is None
    assert migration.percent_done({'data_total': 4,
                                   'data_processed': 1}) == 25
    assert migration.percent_done({'data_total': 4,
                                   'data_processed': 9}) == 100

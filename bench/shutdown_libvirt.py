"""The guest-shutdown scenario on libvirt's test driver, with events.

Target: median < debounce + 100 ms (``[libvirt] event_debounce``, by
default 0.05 s with virt_type kvm, as here, and 0.5 s with xen). One
agent on :class:`LibvirtDriver` with ``test://NODE.xml``
(no daemon; domains private to this process); ``dom.shutdown()`` on the
driver's own connection is the guest powering off; the clock stops when
the row says STOPPED with no task.

``--qemu``: the same on a real hypervisor, the libvirtd that
``TRISTATE_TEST_LIBVIRT_URI`` names (e.g. qemu:///system), with QEMU (TCG);
target: median < 100 ms. Each instance is redefined to boot a Debian
kernel and a busybox initramfs (:mod:`bench.qemu_guest`) whose init powers
the guest off when the bench writes a line to its second serial port; the
clock starts at that write. When libvirt's SHUTDOWN and STOPPED lifecycle
events reached the bench's own connection is given too: where the time
goes. Needs root (the guest's pty) and ``apt-get download``; a handful of
instances (``--instances 7``): each boots a kernel.
"""

import os
import shutil
import tempfile
import threading
import time

from bench import core
from bench import plane as plane_mod

NAME = 'shutdown_libvirt'
TINY = ['--instances', '2']
HOST = 'lv1'
NODE = """<node>
  <cpu><mhz>2000</mhz><model>x86_64</model><active>64</active><max>64</max>
  <nodes>1</nodes><sockets>1</sockets><cores>32</cores><threads>2</threads></cpu>
  <memory>268435456</memory>
</node>
"""


def add_arguments(parser):
    parser.add_argument('--instances', type=int, default=50)
    parser.add_argument('--debounce', type=float, default=None,
                        help='[libvirt] event_debounce in seconds (default: '
                             'the option\'s default)')
    parser.add_argument('--qemu', action='store_true',
                        help='on the real libvirtd that '
                             'TRISTATE_TEST_LIBVIRT_URI names')


def _start_agent(plane, debounce, uri=None):
    from compute_agent.virt.libvirt import LibvirtDriver
    from compute_agent.virt.libvirt.disks import LocalImages
    images = os.path.join(plane.tmp, 'images')
    os.makedirs(images)
    with open(os.path.join(images, plane_mod.IMAGE), 'wb') as f:
        f.write(b'cirros' * 100)
    node = os.path.join(plane.tmp, 'node.xml')
    with open(node, 'w') as f:
        f.write(NODE)
    drv = LibvirtDriver(uri=uri or 'test://%s' % node,
                        virt_type='qemu' if uri else 'kvm',
                        images=LocalImages(images),
                        instances_path=os.path.join(plane.tmp, 'instances'),
                        event_debounce=debounce, shutdown_timeout=2)
    drv.init_host(HOST)
    plane.embedded.start_agent(HOST, driver=drv)
    core.wait_for(lambda: any(h['name'] == HOST and h['last_heartbeat']
                              for h in plane.statedb.list_hosts()),
                  timeout=30, what='a heartbeat of %s' % HOST)
    return drv


def run(args):
    import libvirt
    libvirt.registerErrorHandler(lambda *a: None, None)
    if args.qemu:
        return _run_qemu(args)
    times = []
    with plane_mod.Plane(hosts=0, api=False) as plane:
        debounce = (plane.conf.libvirt.event_debounce if args.debounce is None
                    else args.debounce)
        drv = _start_agent(plane, debounce)
        debounce = drv.event_debounce       # the default, when unset
        uuids = plane.build_direct(args.instances)
        conn = drv.connection.get()
        for uuid in uuids:
            dom = conn.lookupByUUIDString(uuid)
            started = time.monotonic()
            dom.shutdown()
            plane.wait_vm_state(uuid, 'stopped', timeout=30)
            times.append(time.monotonic() - started)
    size = '%d guest shutdowns, event_debounce %.2f s' % (len(times), debounce)
    return [
        core.Figure(NAME, 'guest shutdown -> STOPPED, median',
                    core.median(times) * 1e3, 'ms', '<',
                    (debounce + 0.1) * 1e3, size=size),
        core.Figure(NAME, 'guest shutdown -> STOPPED, p99',
                    core.percentile(times, 99) * 1e3, 'ms', size=size),
    ]


class _Events:
    """When libvirt's SHUTDOWN and STOPPED events of one domain arrived."""

    def __init__(self, conn):
        import libvirt
        self.names = {libvirt.VIR_DOMAIN_EVENT_SHUTDOWN: 'shutdown',
                      libvirt.VIR_DOMAIN_EVENT_STOPPED: 'stopped'}
        self.uuid, self.seen = None, {}
        self.lock = threading.Lock()
        self.conn = conn
        self.id = conn.domainEventRegisterAny(
            None, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE, self._event, None)

    @classmethod
    def open(cls, uri):
        """On a connection of its own: libvirt takes one lifecycle
        callback per connection, the driver's."""
        import libvirt
        return cls(libvirt.open(uri))

    def _event(self, _conn, dom, event, _detail, _opaque):
        now = time.monotonic()
        with self.lock:
            name = self.names.get(event)
            if dom.UUIDString() == self.uuid and name:
                self.seen.setdefault(name, now)

    def watch(self, uuid):
        with self.lock:
            self.uuid, self.seen = uuid, {}

    def close(self):
        self.conn.domainEventDeregisterAny(self.id)
        self.conn.close()


def _boot_guest(plane, drv, uuid, kernel, initrd):
    """Redefine the instance to boot the guest, and boot it by a hard
    reboot (the plane's own task); the guest's trigger, once it is up."""
    from bench import qemu_guest
    conn = drv.connection.get()
    dom = conn.lookupByUUIDString(uuid)
    conn.defineXML(qemu_guest.DOMAIN % {
        'name': dom.name(), 'uuid': uuid, 'kernel': kernel,
        'initrd': initrd})
    plane.client.run_action(plane.ctx, uuid, 'reboot_hard', {})
    core.wait_for(lambda: plane.statedb.get_instance(uuid)['task_id'] is None,
                  timeout=60, what='the hard reboot of %s' % uuid)
    trigger = qemu_guest.Trigger(conn.lookupByUUIDString(uuid))
    trigger.wait_ready(timeout=120)
    return trigger


def _measure_qemu(plane, drv, uuid, guest, events):
    trigger = _boot_guest(plane, drv, uuid, *guest)
    try:
        events.watch(uuid)
        started = time.monotonic()
        trigger.power_off()
        plane.wait_vm_state(uuid, 'stopped', timeout=60)
        took = time.monotonic() - started
        core.wait_for(lambda: 'stopped' in events.seen, timeout=30,
                      what="libvirt's STOPPED event of %s" % uuid,
                      interval=0.01)
    finally:
        trigger.close()
    with events.lock:
        seen = {name: at - started for name, at in events.seen.items()}
    return took, seen


def _run_qemu(args):
    from bench import qemu_guest
    uri = os.environ.get('TRISTATE_TEST_LIBVIRT_URI')
    if not uri:
        raise SystemExit('--qemu needs TRISTATE_TEST_LIBVIRT_URI (a libvirtd '
                         'with QEMU, e.g. qemu:///system)')
    times, shutdown_at, stopped_at = [], [], []
    guest_dir = tempfile.mkdtemp(prefix='tristate-bench-guest-')
    os.chmod(guest_dir, 0o755)
    with plane_mod.Plane(hosts=0, api=False) as plane:
        os.chmod(plane.tmp, 0o755)          # QEMU's user reads the disks
        guest = qemu_guest.build(guest_dir)
        drv = _start_agent(plane, args.debounce, uri=uri)
        events = _Events.open(uri)
        uuids = []
        try:
            uuids = plane.build_direct(args.instances)
            for uuid in uuids:
                took, seen = _measure_qemu(plane, drv, uuid, guest, events)
                times.append(took)
                shutdown_at.append(seen.get('shutdown', float('nan')))
                stopped_at.append(seen.get('stopped', float('nan')))
        finally:
            events.close()
            for uuid in uuids:
                drv.destroy(uuid)
            drv.cleanup_host()
    shutil.rmtree(guest_dir, ignore_errors=True)
    size = ('%d guest power-offs on %s (QEMU, TCG), event_debounce %.2f s'
            % (len(times), uri, drv.event_debounce))
    return [
        core.Figure(NAME, 'QEMU guest power-off -> STOPPED, median',
                    core.median(times) * 1e3, 'ms', '<', 100, size=size),
        core.Figure(NAME, 'QEMU guest power-off -> STOPPED, max',
                    max(times) * 1e3, 'ms', size=size),
        core.Figure(NAME, 'QEMU power-off -> libvirt SHUTDOWN event, median',
                    core.median(shutdown_at) * 1e3, 'ms', size=size),
        core.Figure(NAME, 'QEMU power-off -> libvirt STOPPED event, median',
                    core.median(stopped_at) * 1e3, 'ms', size=size),
    ]

"""A guest that reboots itself is not a stop, and QEMU says so at once.

The agent gathered a domain's lifecycle events for ``[libvirt]
event_debounce`` (0.5 s) before reading it again, so that the stop/start
pair of a reboot made inside the guest is not taken for a shutdown: every
guest shutdown then reached vm_state half a second late (benchmark
``shutdown_libvirt``: 504 ms). Real QEMU does not report such a reboot as
a stop at all: with ``on_reboot`` ``restart`` it resets the guest in place
and libvirt emits its REBOOT event, and no lifecycle event (checked here on
QEMU 7.2 under libvirt 9.0: two REBOOT events per reboot, then SHUTDOWN
and STOPPED at the final power-off). Found by the real-hypervisor review
(issue 19, item 10). Fixed: the debounce defaults by hypervisor, 0.05 s on
KVM/QEMU and 0.5 s on Xen, whose libxl reports a reboot as a stop and a
start. (On this QEMU under TCG the domain still reads RUNNING for ~1.8 s
after the guest's SHUTDOWN event, until the QEMU process has exited: the
report, and vm_state, follow the STOPPED event then.)

The test boots a real guest on QEMU (TCG): a Debian cloud kernel with a
busybox initramfs whose init reboots once (it knows the second boot by a
pstore/ramoops record its first reboot leaves in reserved RAM, which a
reset keeps) and then powers off. Its instance stays ACTIVE through the
reboot, and is STOPPED, reason ``guest``, after the power-off. Needs
``TRISTATE_TEST_LIBVIRT_URI`` (a running libvirtd with QEMU, e.g.
qemu:///system, or a private one's ``qemu+unix:///session?socket=...``)
and apt to fetch the kernel; skipped with the reason otherwise.
"""

import os
import threading

import pytest

from common import context
from common import states
from common.states import power
from common.states import vm
from tests.functional import conftest as functional
from tests.functional import qemu_support

libvirt = pytest.importorskip('libvirt')

from compute_agent.virt.libvirt import LibvirtDriver  # noqa: E402
from compute_agent.virt.libvirt.disks import LocalImages  # noqa: E402
from conductor import embedded  # noqa: E402

HOST = 'qemu1'
TIMEOUT = 120.0         # TCG boots the kernel twice in ~15 s; a loaded
                        # machine takes longer
RAMOOPS = 0x7000000     # reserved with memmap=, kept by a reset
INIT = """#!/bin/busybox sh
B=/bin/busybox
$B mkdir -p /dev /proc /sys /pstore
$B mount -t devtmpfs none /dev
$B mount -t sysfs none /sys
$B insmod /reed_solomon.ko
$B insmod /ramoops.ko mem_address=%#x mem_size=0x100000 record_size=0x10000 \\
    max_reason=5 ecc=0
$B mount -t pstore none /pstore
if [ -z "$($B ls /pstore)" ]; then
  echo tristate-guest: first boot, rebooting
  $B reboot -f
else
  echo tristate-guest: second boot, powering off
  $B rm -f /pstore/*
  $B poweroff -f
fi
""" % RAMOOPS
GUEST = """<domain type='qemu'>
  <name>%(name)s</name><uuid>%(uuid)s</uuid>
  <memory unit='MiB'>128</memory><vcpu>1</vcpu>
  <os><type arch='x86_64'>hvm</type><kernel>%(kernel)s</kernel>
    <initrd>%(initrd)s</initrd>
    <cmdline>console=ttyS0 quiet panic=-1 memmap=1M$%(ramoops)#x</cmdline></os>
  <features><acpi/></features>
  <on_poweroff>destroy</on_poweroff><on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices><serial type='pty'/><console type='pty'/></devices>
</domain>
"""


@pytest.fixture
def real_dir():
    """A directory QEMU (running as another user) can use: a libvirtd in
    session mode (a private one) does not hand the instance's files to
    QEMU's user as the system one does, so they are made with umask 0."""
    with qemu_support.qemu_dir(umask=0) as path:
        yield path


def _wait(plane, uuid, predicate, what):
    def check():
        inst = plane.statedb.get_instance(uuid)
        return inst if predicate(inst) else None
    return functional.wait_for(
        check, timeout=TIMEOUT, what=what,
        show=lambda: functional.summary(plane.statedb.get_instance(uuid)))


def test_a_guest_reboot_keeps_it_active_its_power_off_stops_it(
        conf, real_dir):
    uri = qemu_support.uri_or_skip('no real hypervisor to boot a guest on')
    kernel, initrd = qemu_support.busybox_guest(
        real_dir, INIT, modules=('fs/pstore/ramoops.ko',
                                 'lib/reed_solomon/reed_solomon.ko'))
    images = qemu_support.blank_images(real_dir)
    drv = LibvirtDriver(uri=uri, virt_type='qemu', images=LocalImages(images),
                        instances_path=os.path.join(real_dir, 'instances'),
                        event_debounce=conf.libvirt.event_debounce,
                        shutdown_timeout=1)
    assert drv.event_debounce < 0.1     # QEMU's default
    drv.init_host(HOST)
    ctx = context.RequestContext(user_id='alice', project_id='demo')
    plane = embedded.Embedded(conf, hosts=0, url=embedded.MEMORY_URL,
                              periodic_jobs=False).start()
    reboots = threading.Event()
    uuid = None
    try:
        plane.start_agent(HOST, driver=drv)
        functional.wait_heartbeat(plane, HOST)
        uuid = plane.client.create_instance(
            ctx, name='rebooter', flavor='tiny', image_ref='blank')['uuid']
        built = _wait(plane, uuid, lambda i: i['task_id'] is None, 'build')
        assert built['vm_state'] == vm.ACTIVE, functional.summary(built)
        # The instance's next boot is the guest's kernel: its definition
        # changes, and a hard reboot (the plane's own task) boots it.
        conn = drv.connection.get()
        dom = conn.lookupByUUIDString(uuid)
        conn.defineXML(GUEST % {'name': dom.name(), 'uuid': uuid,
                                'kernel': kernel, 'initrd': initrd,
                                'ramoops': RAMOOPS})
        conn.domainEventRegisterAny(
            dom, libvirt.VIR_DOMAIN_EVENT_ID_REBOOT,
            lambda *args: reboots.set(), None)
        plane.client.run_action(ctx, uuid, 'reboot_hard', {})
        _wait(plane, uuid, lambda i: i['task_id'] is None, 'the hard reboot')

        assert reboots.wait(TIMEOUT), 'the guest did not reboot itself'
        rebooted = plane.statedb.get_instance(uuid)
        assert (rebooted['vm_state'], rebooted['power_state']) == (
            vm.ACTIVE, power.RUNNING), functional.summary(rebooted)

        stopped = _wait(plane, uuid, lambda i: i['vm_state'] == vm.STOPPED,
                        'the power-off reconciled')
        assert (stopped['power_state'], stopped['power_reason']) == (
            power.SHUTDOWN, states.REASON_GUEST), functional.summary(stopped)
        # one decision only: the power-off's, none for the reboot
        decisions = [e['action'] for e in plane.statedb.list_actions(uuid)]
        assert decisions == ['build', 'reboot_hard', 'reconcile'], decisions
    finally:
        if uuid is not None:
            drv.destroy(uuid)
        plane.stop()
        drv.cleanup_host()

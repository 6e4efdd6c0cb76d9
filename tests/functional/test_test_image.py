"""The test image (``tools/build-test-image.sh``, issue 21) boots on real
QEMU from its disk, raw or qcow2, in the domain definition Tristate's
libvirt driver writes (virtio disk, serial console, ACPI), prints BOOT-OK
on the serial console, powers off cleanly when libvirt presses the ACPI
power button, and reboots or powers off on a line typed on the console.

Needs ``TRISTATE_TEST_LIBVIRT_URI`` (a libvirtd with QEMU, e.g.
qemu:///system) and apt to fetch the packages the image is made of;
skipped with the reason otherwise. Each test defines one domain and
removes it, and its files, whatever happens.
"""

import contextlib
import time
import uuid as uuidlib

import pytest

from common.flavors import Flavor
from tests.functional import qemu_support

libvirt = pytest.importorskip('libvirt')

from compute_agent.virt.libvirt import config  # noqa: E402

TIMEOUT = 120.0         # TCG boots it in ~15 s; a loaded machine is slower
STOP_TIMEOUT = 60.0     # from the request to a stopped domain
FLAVOR = Flavor('test-image', vcpus=1, memory_mb=128, disk_gb=1)


@pytest.fixture
def uri():
    return qemu_support.uri_or_skip('no real hypervisor to boot the test '
                                    'image on')


@contextlib.contextmanager
def booted(uri, fmt):
    """(domain, its serial console): the test image in ``fmt`` booting in
    a fresh persistent domain; destroyed and undefined afterwards."""
    libvirt.registerErrorHandler(lambda *args: None, None)
    with qemu_support.qemu_dir() as directory:
        disk = qemu_support.build_test_image(directory, fmt)
        uuid = str(uuidlib.uuid4())
        conn = libvirt.open(uri)
        dom = console = None
        try:
            dom = conn.defineXML(config.domain_xml(
                virt_type='qemu', uuid=uuid, name='test-image',
                flavor=FLAVOR, image_ref='test-image', disks=[(disk, fmt)]))
            dom.create()
            console = qemu_support.SerialConsole(dom)
            yield dom, console
        finally:
            if console is not None:
                console.close()
            if dom is not None:
                with contextlib.suppress(libvirt.libvirtError):
                    dom.destroy()
                dom.undefine()
            conn.close()


def _wait_stopped(dom, console):
    deadline = time.monotonic() + STOP_TIMEOUT
    while dom.isActive():
        console.poll()
        assert time.monotonic() < deadline, (
            'the domain still runs %.0f s after the request; its console '
            'shows:\n%s' % (STOP_TIMEOUT, console.text))
        time.sleep(0.2)
    console.poll()
    state, reason = dom.state()
    assert (state, reason) == (libvirt.VIR_DOMAIN_SHUTOFF,
                               libvirt.VIR_DOMAIN_SHUTOFF_SHUTDOWN), (
        state, reason, console.text)


@pytest.mark.parametrize('fmt', ['raw', 'qcow2'])
def test_it_boots_and_powers_off_on_the_acpi_button(uri, fmt):
    with booted(uri, fmt) as (dom, console):
        console.wait_for('BOOT-OK', TIMEOUT)
        assert 'cannot load module' not in console.text, console.text
        dom.shutdownFlags(libvirt.VIR_DOMAIN_SHUTDOWN_ACPI_POWER_BTN)
        # A guest with nothing listening to the button ignores it: the
        # domain stops only through the init's acpid (``/init poweroff``).
        # (Its last console line may be lost as QEMU exits: not checked.)
        _wait_stopped(dom, console)


def test_it_reboots_and_powers_off_on_console_requests(uri):
    with booted(uri, 'raw') as (dom, console):
        console.wait_for('BOOT-OK', TIMEOUT)
        console.type_line('reboot')
        console.wait_for('BOOT-OK', TIMEOUT, count=2)
        assert dom.isActive()
        console.type_line('poweroff')
        _wait_stopped(dom, console)

"""Issue 24 on real QEMU (TCG): the guest's serial output reaches its
console log (libvirt's ``<log>``, written by virtlogd) and comes back
through ``os-getConsoleOutput``, also after the guest stopped; the log is
removed with the instance.

One host, an agent on a private libvirtd (:mod:`tests.functional.
qemu_plane`), the test image (it prints ``BOOT-OK`` on its serial line).
Skipped, with the reason, where libvirtd, QEMU or the image's packages
are missing (a failure with ``CI=true``). Every wait is bounded.
"""

import os

from tests.functional import qemu_plane
from tests.functional import qemu_support
from tests.functional import test_images_on_real_qemu as images_test

BOOT_TIMEOUT = images_test.BOOT_TIMEOUT


def _output(qemu, server_id, length=None):
    return qemu.compute('POST', '/servers/%s/action' % server_id,
                        {'os-getConsoleOutput': {'length': length}},
                        expect=(200,))['output']


def test_the_console_log_holds_the_guests_serial_output():
    qemu_plane.require_tools()
    with qemu_support.qemu_dir() as directory, \
            qemu_plane.qemu_plane(('hosta',)) as qemu:
        image_id = qemu.upload(images_test._test_image(directory),  # noqa: SLF001
                               'test-image', 'qcow2')
        server = qemu.boot('logged', image_id, 'hosta')
        qemu_plane._bounded(  # noqa: SLF001
            lambda: 'BOOT-OK' in _output(qemu, server['id']),
            'BOOT-OK in the console output', timeout=BOOT_TIMEOUT,
            show=lambda: _output(qemu, server['id'])[-2000:])
        assert 'BOOT-OK' in _output(qemu, server['id'], length=5)
        path = qemu.drivers['hosta']._files(server['id']).console_log  # noqa: SLF001
        assert os.path.exists(path)

        qemu.compute('POST', '/servers/%s/action' % server['id'],
                     {'os-stop': None})
        assert qemu.settled(server['id'])['status'] == 'SHUTOFF'
        assert 'BOOT-OK' in _output(qemu, server['id'])

        qemu.delete_server(server['id'])
        qemu_plane._bounded(lambda: not os.path.exists(path),  # noqa: SLF001
                            'the console log to be removed')

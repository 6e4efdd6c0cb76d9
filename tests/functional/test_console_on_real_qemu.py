"""Issue 24 on real QEMU (TCG): the guest's serial output reaches its
console log (libvirt's ``<log>``, written by virtlogd) and comes back
through ``os-getConsoleOutput``, also after the guest stopped; the log is
removed with the instance.

One host, an agent on a private libvirtd (:mod:`tests.functional.
qemu_plane`), the test image (it prints ``BOOT-OK`` on its serial line).
Skipped, with the reason, where libvirtd, QEMU or the image's packages
are missing (a failure with ``CI=true``). Every wait is bounded.

Run by ``tox -e guest`` (``TRISTATE_GUEST_FULL=1``) only: the default
suite's real-QEMU guest test, :mod:`tests.functional.
test_guest_access_on_real_qemu`, reads the console log and types on the
serial console through the proxy too, in one boot instead of two.
"""

import os

import pytest

from tests.functional import qemu_plane
from tests.functional import qemu_support
from tests.functional import test_images_on_real_qemu as images_test

BOOT_TIMEOUT = images_test.BOOT_TIMEOUT
FULL = os.environ.get('TRISTATE_GUEST_FULL') == '1'
full_only = pytest.mark.skipif(
    not FULL, reason='tox -e guest runs it (TRISTATE_GUEST_FULL=1); the '
    'default suite covers it with test_guest_access_on_real_qemu')


def _output(qemu, server_id, length=None):
    return qemu.compute('POST', '/servers/%s/action' % server_id,
                        {'os-getConsoleOutput': {'length': length}},
                        expect=(200,))['output']


@full_only
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


def _free_ports(count):
    import socket
    first = 20000 + os.getpid() % 20000
    for start in range(first, first + 2000, count):
        ok = True
        for port in range(start, start + count):
            with socket.socket() as sock:
                try:
                    sock.bind(('127.0.0.1', port))
                except OSError:
                    ok = False
                    break
        if ok:
            return start, start + count - 1
    raise AssertionError('no free ports')


def _read_until(ws, marker, timeout):
    import time

    import websocket
    seen = b''
    deadline = time.monotonic() + timeout
    while marker not in seen:
        left = deadline - time.monotonic()
        assert left > 0, 'no %r on the console; got %r' % (marker, seen[-500:])
        ws.settimeout(left)
        try:
            seen += ws.recv() or b''
        except websocket.WebSocketTimeoutException:
            continue
    return seen


@full_only
def test_typing_on_the_serial_console_through_the_proxy():
    """The guest's serial port as a TCP listener (``[serial_console]
    enabled``), its log kept: ``reboot`` typed through the proxy's
    WebSocket reboots the guest, whose next BOOT-OK comes back the same
    way and reaches the log too; deleting the server closes the session."""
    import websocket

    from api import service as api_service
    from api.console_proxy import proxy as proxy_mod
    from compute_agent.virt import consolelog
    qemu_plane.require_tools()
    with qemu_support.qemu_dir() as directory, \
            qemu_plane.qemu_plane(('hosta',)) as qemu:
        first, last = _free_ports(8)
        qemu.drivers['hosta'].console = consolelog.Settings(
            enabled=True, listen_address='127.0.0.1', first_port=first,
            last_port=last)
        conf = qemu.plane.conf
        proxy = proxy_mod.ConsoleProxy(
            host='127.0.0.1', port=0, check_interval=0.2,
            conductor=api_service.make_client(conf, qemu.plane.bus,
                                              qemu.plane.statedb)).start()
        try:
            conf.set_override('base_url', proxy.url, group='serial_console')
            image_id = qemu.upload(images_test._test_image(directory),  # noqa: SLF001
                                   'test-image', 'qcow2')
            server = qemu.boot('typed', image_id, 'hosta')
            url = qemu.compute('POST', '/servers/%s/remote-consoles'
                               % server['id'], {'remote_console': {
                                   'protocol': 'serial', 'type': 'serial'}},
                               expect=(200,))['remote_console']['url']
            ws = websocket.create_connection(url, timeout=30)
            try:
                # connected before it booted: its first BOOT-OK comes here
                _read_until(ws, b'BOOT-OK', BOOT_TIMEOUT)
                ws.send_binary(b'reboot\n')
                after = _read_until(ws, b'BOOT-OK', BOOT_TIMEOUT)
                assert b'tristate-test-image: reboot' in after
                qemu_plane._bounded(  # noqa: SLF001
                    lambda: _output(qemu, server['id']).count('BOOT-OK') == 2,
                    'the second BOOT-OK in the log', timeout=10)
                qemu.delete_server(server['id'])
                ws.settimeout(30)
                while True:     # what was still on its way, then the close
                    opcode, frame = ws.recv_data_frame(True)
                    if opcode == websocket.ABNF.OPCODE_CLOSE:
                        break
                # QEMU's listener closes with the destroyed domain, or the
                # proxy's check finds the server gone: whichever comes first
                assert frame.data[:2] == (1000).to_bytes(2, 'big')
                assert frame.data[2:].decode() in (proxy_mod.DELETED_REASON,
                                                   'Target closed')
            finally:
                ws.close()
        finally:
            proxy.stop()

#!/usr/bin/python3
"""Guests of the private libvirtds of :mod:`tests.functional.qemu_plane`
on a Linux bridge: a stand-in for QEMU's ``qemu-bridge-helper``.

A libvirtd in session mode (an unprivileged user, as the private ones
are) puts a guest's ``<interface type='bridge'>`` on its bridge through
the program ``bridge_helper`` of its qemu.conf names: it runs ``HELPER
[--use-vnet] --br=BRIDGE --fd=N`` and takes back, over the Unix socket N,
a tap device already on the bridge. QEMU's own helper does that when it
is set-uid root and ``/etc/qemu/bridge.conf`` allows the bridge; neither
is so on a stock system, and a test must not change either.

Here the work is split in two:

* :class:`TapBroker` runs in the test's process (root): on a Unix socket
  of its own (group kvm: the libvirtds' user) it takes a request
  ``BRIDGE VNET``, makes a tap (``tsqtap<n>``, the bridge's MTU), puts it
  on the bridge, up, and answers with its descriptor. It serves only the
  tests' bridges (``tsq*``) and only while the plane runs.
* this file, run as a program (:func:`main`: the standard library only,
  run by the libvirtd with the system's python3, as its user with no
  privilege), is the helper: it asks the broker whose socket is
  ``taps.sock`` next to it, and hands the descriptor on to libvirt.

The tap goes when QEMU closes it (the guest stops): nothing to remove.
"""

import fcntl
import os
import socket
import struct
import subprocess
import sys
import threading

TUNSETIFF = 0x400454ca
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
IFF_VNET_HDR = 0x4000
ALLOWED_PREFIX = 'tsq'
SOCKET_NAME = 'taps.sock'


def make_tap(bridge, vnet):
    """A tap on ``bridge`` (up, with the bridge's MTU); its descriptor."""
    if not bridge.startswith(ALLOWED_PREFIX) or '/' in bridge:
        raise ValueError('bridge %r is not a test bridge' % bridge)
    with open('/sys/class/net/%s/mtu' % bridge) as f:
        mtu = f.read().strip()
    flags = IFF_TAP | IFF_NO_PI | (IFF_VNET_HDR if vnet else 0)
    tap = os.open('/dev/net/tun', os.O_RDWR | os.O_CLOEXEC)
    try:
        answer = fcntl.ioctl(tap, TUNSETIFF,
                             struct.pack('16sH22x', b'tsqtap%d', flags))
        name = answer[:16].rstrip(b'\0').decode()
        subprocess.run(['ip', 'link', 'set', 'dev', name, 'mtu', mtu,
                        'master', bridge, 'up'], check=True, timeout=30,
                       capture_output=True)
    except BaseException:
        os.close(tap)
        raise
    return tap


class TapBroker:
    """Makes taps for the helper, in a thread; ``path`` its socket."""

    def __init__(self, directory):
        self.path = os.path.join(directory, SOCKET_NAME)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.path)
        os.chown(self.path, 0, _kvm_gid())
        os.chmod(self.path, 0o660)
        self._sock.listen(8)
        self._thread = threading.Thread(target=self._serve, daemon=True,
                                        name='tap-broker')
        self.errors = []

    def start(self):
        self._thread.start()
        return self

    def _serve(self):
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return                          # closed: stop
            with conn:
                conn.settimeout(30)
                try:
                    self._answer(conn)
                except (OSError, ValueError,
                        subprocess.SubprocessError) as err:
                    self.errors.append(repr(err))
                    conn.sendall(b'ERROR %s\n' % repr(err).encode())

    @staticmethod
    def _answer(conn):
        request = conn.recv(256).decode().split()
        bridge, vnet = request[0], request[1:] == ['vnet']
        tap = make_tap(bridge, vnet)
        try:
            socket.send_fds(conn, [b'OK\n'], [tap])
        finally:
            os.close(tap)

    def stop(self):
        try:
            self._sock.shutdown(socket.SHUT_RDWR)    # wakes the accept()
        except OSError:
            pass
        self._sock.close()
        self._thread.join(5)
        if os.path.exists(self.path):
            os.unlink(self.path)


def _kvm_gid():
    import grp
    return grp.getgrnam('kvm').gr_gid


def install(directory):
    """This file as the helper program in ``directory`` (next to the
    broker's socket); its path."""
    path = os.path.join(directory, 'bridge-helper')
    with open(__file__) as src, open(path, 'w') as dst:
        dst.write(src.read())
    os.chmod(path, 0o755)
    return path


def main(argv):
    """The helper, as libvirt runs it."""
    args = dict(arg[2:].split('=', 1) if '=' in arg else (arg[2:], '')
                for arg in argv)
    bridge, fd = args.get('br', ''), int(args.get('fd', '-1'))
    if not bridge or fd < 0:
        sys.exit('bridge-helper: usage: [--use-vnet] --br=BRIDGE --fd=N')
    broker = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          SOCKET_NAME)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(broker)
        sock.sendall(('%s %s\n' % (bridge, 'vnet' if 'use-vnet' in args
                                   else 'novnet')).encode())
        message, fds, _flags, _addr = socket.recv_fds(sock, 512, 1)
    if not fds:
        sys.exit('bridge-helper: %s' % message.decode().strip())
    with socket.socket(fileno=fd) as unix:
        socket.send_fds(unix, [b'\0'], fds)


if __name__ == '__main__':
    main(sys.argv[1:])

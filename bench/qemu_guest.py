"""A real QEMU guest that powers itself off when told, for ``shutdown_libvirt
--qemu``.

A Debian cloud kernel and a busybox initramfs (fetched with ``apt-get
download``) whose init says ``ready`` on its second serial port every
second until it reads a line there, then powers off (``poweroff -f``: the
guest's own ACPI power-off, no host request). The bench starts its clock
when it writes the line.
"""

import glob
import os
import shlex
import shutil
import subprocess
import termios
import time
import tty
import xml.etree.ElementTree as ET

INIT = """#!/bin/busybox sh
B=/bin/busybox
$B mkdir -p /dev /proc /sys
$B mount -t devtmpfs none /dev
$B stty -F /dev/ttyS1 raw -echo
exec 3<>/dev/ttyS1
while ! read -t 1 line <&3; do echo ready >&3; done
$B poweroff -f
"""
DOMAIN = """<domain type='qemu'>
  <name>%(name)s</name><uuid>%(uuid)s</uuid>
  <memory unit='MiB'>128</memory><vcpu>1</vcpu>
  <os><type arch='x86_64'>hvm</type><kernel>%(kernel)s</kernel>
    <initrd>%(initrd)s</initrd>
    <cmdline>console=ttyS0 quiet panic=-1</cmdline></os>
  <features><acpi/></features>
  <on_poweroff>destroy</on_poweroff><on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices><serial type='pty'><target port='0'/></serial>
    <serial type='pty'><target port='1'/></serial></devices>
</domain>
"""


class NoGuest(Exception):
    """The kernel or busybox could not be fetched."""


def _kernel_package():
    depends = subprocess.run(['apt-cache', 'depends',
                              'linux-image-cloud-amd64'],
                             capture_output=True, text=True,
                             check=False).stdout
    for line in depends.splitlines():
        name = line.strip().partition('Depends: ')[2]
        if name.startswith('linux-image-'):
            return name
    return 'linux-image-cloud-amd64'


def build(directory):
    """(kernel, initrd) of the guest, made in ``directory`` (which QEMU's
    user must be able to read)."""
    packages = [_kernel_package(), 'busybox-static']
    done = subprocess.run(['apt-get', 'download', '-qq', *packages],
                          cwd=directory, capture_output=True, text=True,
                          check=False)
    debs = glob.glob(os.path.join(directory, '*.deb'))
    if done.returncode != 0 or len(debs) != 2:
        raise NoGuest('cannot fetch %s with apt-get download: %s'
                      % (' and '.join(packages), done.stderr.strip()))
    for deb in debs:
        subprocess.run('dpkg-deb --fsys-tarfile %s | tar -x -C %s'
                       % (shlex.quote(deb), shlex.quote(directory)),
                       shell=True, check=True)
    root = os.path.join(directory, 'root')
    os.makedirs(os.path.join(root, 'bin'))
    busybox = os.path.join(root, 'bin', 'busybox')
    shutil.copy(os.path.join(directory, 'bin', 'busybox'), busybox)
    with open(os.path.join(root, 'init'), 'w') as f:
        f.write(INIT)
    os.chmod(os.path.join(root, 'init'), 0o755)
    initrd = os.path.join(directory, 'initrd.gz')
    subprocess.run('find . | %s cpio -o -H newc | gzip -1 > %s'
                   % (shlex.quote(busybox), shlex.quote(initrd)),
                   shell=True, check=True, cwd=root, capture_output=True)
    [kernel] = glob.glob(os.path.join(directory, 'boot', 'vmlinuz-*'))
    for path in (kernel, initrd):
        os.chmod(path, 0o644)
    return kernel, initrd


class Trigger:
    """The host's end of the guest's second serial port (a pty)."""

    def __init__(self, dom):
        tree = ET.fromstring(dom.XMLDesc(0))
        [path] = [s.find('source').get('path')
                  for s in tree.findall('devices/serial')
                  if s.find('target').get('port') == '1']
        self.fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(self.fd, termios.TCSANOW)   # no echo back to the guest

    def wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        seen = b''
        os.set_blocking(self.fd, False)
        while b'ready' not in seen:
            if time.monotonic() > deadline:
                raise TimeoutError('the guest did not say ready in %s s '
                                   '(it said %r)' % (timeout, seen[-200:]))
            try:
                seen += os.read(self.fd, 1024)
            except BlockingIOError:
                time.sleep(0.01)

    def drain(self):
        """Forget what the guest said so far."""
        os.set_blocking(self.fd, False)
        try:
            while os.read(self.fd, 4096):
                pass
        except BlockingIOError:
            pass

    def power_off(self):
        self.drain()
        os.write(self.fd, b'go\n')

    def close(self):
        os.close(self.fd)

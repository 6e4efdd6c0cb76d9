"""What the tests on a real hypervisor share: the libvirt URI they need
(``TRISTATE_TEST_LIBVIRT_URI``, skipped with the reason without it), a
directory QEMU can read, an image directory for the plane to build from,
a tiny guest to boot (Debian's cloud kernel and a busybox initramfs,
fetched with apt) whose ``/init`` each test writes for itself, the test
image (a bootable disk, ``tools/build-test-image.sh``), and a guest's
serial console, read and typed on through its pseudo-terminal.
"""

import contextlib
import glob
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
import tty

import pytest

URI_ENV = 'TRISTATE_TEST_LIBVIRT_URI'
BUILD_TEST_IMAGE = os.path.join(os.path.dirname(__file__), '..', '..',
                                'tools', 'build-test-image.sh')
NO_PACKAGES = 3         # build-test-image.sh: apt cannot fetch them


def uri_or_skip(why):
    """The real hypervisor's URI (``URI_ENV``); without one the test is
    skipped, the reason ending with ``why``."""
    uri = os.environ.get(URI_ENV)
    if not uri:
        pytest.skip('%s is not set: %s' % (URI_ENV, why))
    return uri


@contextlib.contextmanager
def qemu_dir(*, umask=None):
    """A fresh directory QEMU (running as another user, libvirt-qemu) can
    reach: pytest's tmp_path is inside a 0700 directory of root. With
    ``umask``, that umask while it is used (0 for a libvirtd in session
    mode, which does not hand the instance's files to QEMU's user as the
    system one does)."""
    path = tempfile.mkdtemp(prefix='tristate-qemu-')
    os.chmod(path, 0o755)
    before = None if umask is None else os.umask(umask)
    try:
        yield path
    finally:
        if before is not None:
            os.umask(before)
        shutil.rmtree(path, ignore_errors=True)


def blank_images(directory):
    """``directory``/images holding a 1 MiB image ``blank`` (no OS: a
    guest built from it boots nothing); its path."""
    images = os.path.join(directory, 'images')
    os.mkdir(images)
    with open(os.path.join(images, 'blank'), 'wb') as f:
        f.truncate(1024 * 1024)
    return images


def kernel_package():
    """The versioned image package linux-image-cloud-amd64 depends on."""
    depends = subprocess.run(['apt-cache', 'depends',
                              'linux-image-cloud-amd64'],
                             capture_output=True, text=True,
                             check=False).stdout
    for line in depends.splitlines():
        name = line.strip().partition('Depends: ')[2]
        if name.startswith('linux-image-'):
            return name
    return 'linux-image-cloud-amd64'


def busybox_guest(directory, init, *, modules=()):
    """(kernel, initrd) in ``directory``: Debian's cloud kernel and an
    initramfs of busybox-static whose ``/init`` is the text ``init``, with
    the kernel's ``modules`` (paths under its ``kernel/`` directory) copied
    to its root. Skips, with the reason, when apt cannot fetch them."""
    packages = [kernel_package(), 'busybox-static']
    done = subprocess.run(['apt-get', 'download', '-qq', *packages],
                          cwd=directory, capture_output=True, text=True,
                          check=False)
    debs = glob.glob(os.path.join(directory, '*.deb'))
    if done.returncode != 0 or len(debs) != 2:
        pytest.skip('cannot fetch %s with apt-get download: %s'
                    % (' and '.join(packages), done.stderr.strip()))
    for deb in debs:
        subprocess.run('dpkg-deb --fsys-tarfile %s | tar -x -C %s'
                       % (shlex.quote(deb), shlex.quote(directory)),
                       shell=True, check=True)
    root = os.path.join(directory, 'root')
    os.makedirs(os.path.join(root, 'bin'))
    busybox = os.path.join(root, 'bin', 'busybox')
    shutil.copy(os.path.join(directory, 'bin', 'busybox'), busybox)
    for module in modules:
        [path] = glob.glob(os.path.join(directory, 'lib', 'modules', '*',
                                        'kernel', module))
        shutil.copy(path, root)
    with open(os.path.join(root, 'init'), 'w') as f:
        f.write(init)
    os.chmod(os.path.join(root, 'init'), 0o755)
    initrd = os.path.join(directory, 'initrd.gz')
    subprocess.run('find . | %s cpio -o -H newc | gzip -1 > %s'
                   % (shlex.quote(busybox), shlex.quote(initrd)),
                   shell=True, check=True, cwd=root, capture_output=True)
    [kernel] = glob.glob(os.path.join(directory, 'boot', 'vmlinuz-*'))
    for path in (kernel, initrd):
        os.chmod(path, 0o644)
    return kernel, initrd


def build_test_image(directory, fmt='raw'):
    """The test image (``tools/build-test-image.sh``) in ``fmt`` (raw or
    qcow2), written to ``directory``; its path. The script's cache
    (``TRISTATE_TEST_IMAGE_CACHE``, which tools/run-tests.sh sets) makes
    every call after the first a copy. Skips, with the reason, when apt
    cannot fetch the packages; any other failure fails the test."""
    path = os.path.join(directory, 'test-image.%s' % fmt)
    done = subprocess.run([BUILD_TEST_IMAGE, path, '--format', fmt],
                          capture_output=True, text=True, check=False)
    if done.returncode == NO_PACKAGES:
        pytest.skip('cannot build the test image: %s' % done.stderr.strip())
    assert done.returncode == 0, done.stderr
    return path


class SerialConsole:
    """A running domain's serial console (its ``<serial type='pty'>``, as
    Tristate's domain definitions have it), read and typed on through the
    pseudo-terminal QEMU holds: the tests run as root on the libvirt host.
    (libvirt's console stream would need an event loop thread.) ``text``
    is everything read so far."""

    POLL = 0.1

    def __init__(self, dom):
        found = re.search(r"<serial type='pty'>\s*<source path='([^']+)'",
                          dom.XMLDesc())
        assert found, 'the domain has no pty serial console'
        self.fd = os.open(found.group(1),
                          os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        tty.setraw(self.fd)     # bytes as the guest sent them, no echo
        self.text = ''
        self._ended = False

    def poll(self):
        """Read what has arrived (nothing once the guest's QEMU is gone)."""
        while not self._ended:  # ends: the terminal holds a finite backlog
            try:
                data = os.read(self.fd, 4096)
            except BlockingIOError:
                return
            except OSError:     # EIO: QEMU closed its side
                self._ended = True
                return
            if not data:
                self._ended = True
                return
            self.text += data.decode('utf-8', 'replace')

    def wait_for(self, marker, timeout, *, count=1):
        """Wait until ``marker`` has appeared ``count`` times in all the
        output so far (at most ``timeout`` seconds); fails the test with
        the output otherwise."""
        deadline = time.monotonic() + timeout
        while self.text.count(marker) < count:
            assert time.monotonic() < deadline, (
                'no %r (x%d) on the console within %.0f s; it shows:\n%s'
                % (marker, count, timeout, self.text))
            self.poll()
            time.sleep(self.POLL)

    def type_line(self, line):
        """Type ``line`` and Enter (a carriage return, as a terminal)."""
        os.write(self.fd, (line + '\r').encode())

    def close(self):
        os.close(self.fd)

"""What the tests on a real hypervisor share: the libvirt URI they need
(``TRISTATE_TEST_LIBVIRT_URI``, skipped with the reason without it), a
directory QEMU can read, an image directory for the plane to build from,
and a tiny guest to boot (Debian's cloud kernel and a busybox initramfs,
fetched with apt) whose ``/init`` each test writes for itself.
"""

import contextlib
import glob
import os
import shlex
import shutil
import subprocess
import tempfile

import pytest

URI_ENV = 'TRISTATE_TEST_LIBVIRT_URI'


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

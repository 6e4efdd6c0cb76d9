"""Images and instance files on the host's file system.

* An image is a file in ``[libvirt] images_path`` named by the instance's
  ``image_ref`` (raw or qcow2, told apart by the qcow2 magic bytes).
* An instance's files live in ``<instances_path>/<uuid>/``: ``disk`` (a
  qcow2 overlay on a qcow2 image when ``qemu-img`` is installed, else a copy
  of the image, a raw copy grown sparsely to the flavor's disk size),
  ``disk.rescue`` while rescued, and small JSON files holding what an
  operation must undo later (``rescue.json``: the definition to go back to;
  ``resize.json``: the definition a revert restores).

Disks only ever grow: a resize revert keeps the larger disk.
"""

import json
import os
import shutil
import subprocess

from compute_agent.virt.driver import VirtError

QCOW2_MAGIC = b'QFI\xfb'
GIB = 1024 ** 3


def _check_name(kind, name):
    if (not name or os.sep in name or name.startswith('.')
            or (os.altsep and os.altsep in name)):
        raise VirtError('invalid %s name %r: a plain file name is needed'
                        % (kind, name))


def find_image(images_path, image_ref):
    """The path of image ``image_ref``; VirtError when it is missing."""
    _check_name('image', image_ref)
    path = os.path.join(images_path, image_ref)
    if not os.path.isfile(path):
        raise VirtError('image %r not found: no file %s' % (image_ref, path))
    return path


def new_image_path(images_path, image_name):
    """Where a snapshot named ``image_name`` goes; it must not exist yet."""
    _check_name('image', image_name)
    path = os.path.join(images_path, image_name)
    if os.path.exists(path):
        raise VirtError('image %r already exists (%s)' % (image_name, path))
    return path


def image_format(path):
    with open(path, 'rb') as f:
        return 'qcow2' if f.read(4) == QCOW2_MAGIC else 'raw'


def _qemu_img(*args):
    """Run qemu-img; its output, or None when it is not installed."""
    tool = shutil.which('qemu-img')
    if tool is None:
        return None
    try:
        done = subprocess.run([tool, *args], check=True, capture_output=True,
                              text=True, timeout=600)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
        raise VirtError('qemu-img %s failed: %s' % (
            args[0], (getattr(err, 'stderr', '') or '').strip() or err)
        ) from None
    return done.stdout


def sparse_copy(source, target):
    """Copy ``source`` to ``target`` writing only its data, not its holes
    (images and grown raw disks are mostly holes)."""
    with open(source, 'rb') as src, open(target, 'wb') as dst:
        size = os.fstat(src.fileno()).st_size
        offset = 0
        while offset < size:
            try:
                start = os.lseek(src.fileno(), offset, os.SEEK_DATA)
                end = os.lseek(src.fileno(), start, os.SEEK_HOLE)
            except OSError:                 # no data after offset
                break
            _copy_range(src, dst, start, end)
            offset = end
        dst.truncate(size)


def _copy_range(src, dst, start, end):
    src.seek(start)
    dst.seek(start)
    left = end - start
    while left > 0:
        chunk = src.read(min(left, 1 << 20))
        if not chunk:
            return
        dst.write(chunk)
        left -= len(chunk)


def create_disk(image, target, size_gb):
    """Make ``target`` from ``image``, at least ``size_gb``; its format.

    Written under a temporary name and renamed: a failure leaves nothing.
    """
    fmt = image_format(image)
    part = target + '.part'
    try:
        if fmt != 'qcow2' or _qemu_img(
                'create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b',
                os.path.abspath(image), part) is None:
            sparse_copy(image, part)
        grow(part, fmt, size_gb)
        os.replace(part, target)
    except OSError as err:
        raise VirtError('cannot create disk %s from %s: %s'
                        % (target, image, err)) from None
    finally:
        if os.path.exists(part):
            os.unlink(part)
    return fmt


def grow(path, fmt, size_gb):
    """Grow a disk to ``size_gb`` (never shrink it); qcow2 needs qemu-img."""
    size = int(size_gb) * GIB
    if size <= 0:
        return
    if fmt == 'raw':
        if os.path.getsize(path) < size:
            os.truncate(path, size)          # sparse: no blocks written
        return
    info = _qemu_img('info', '--output=json', '-f', 'qcow2', path)
    if info is not None and json.loads(info)['virtual-size'] < size:
        _qemu_img('resize', '-q', '-f', 'qcow2', path, str(size))


def export(path, fmt, target):
    """Write disk ``path`` as a stand-alone image ``target``."""
    part = target + '.part'
    try:
        if fmt != 'qcow2' or _qemu_img(
                'convert', '-q', '-O', 'qcow2', path, part) is None:
            sparse_copy(path, part)
        os.replace(part, target)
    except OSError as err:
        raise VirtError('cannot write image %s from %s: %s'
                        % (target, path, err)) from None
    finally:
        if os.path.exists(part):
            os.unlink(part)


class InstanceFiles:
    """``<instances_path>/<uuid>/``: an instance's disks and undo records."""

    def __init__(self, instances_path, uuid):
        _check_name('instance', uuid)
        self.path = os.path.join(instances_path, uuid)
        self.disk = os.path.join(self.path, 'disk')
        self.rescue_disk = os.path.join(self.path, 'disk.rescue')

    def create(self):
        os.makedirs(self.path, exist_ok=True)

    def remove(self):
        shutil.rmtree(self.path, ignore_errors=True)

    def load(self, name):
        """The record ``name`` (e.g. 'rescue', 'resize'), or None."""
        try:
            with open(self._record(name)) as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def save(self, name, data):
        self.create()
        part = self._record(name) + '.part'
        with open(part, 'w') as f:
            json.dump(data, f)
        os.replace(part, self._record(name))

    def discard(self, name):
        try:
            os.unlink(self._record(name))
        except FileNotFoundError:
            pass

    def _record(self, name):
        return os.path.join(self.path, '%s.json' % name)

"""Instance disks on the host's file system.

* An instance's disk is a qcow2 overlay whose backing file is the image in
  the agent's cache (:mod:`compute_agent.imagecache`), raw or qcow2: a
  build copies nothing, whatever the image's size. The overlay names its
  base (``-F`` raw or qcow2, never probed), so the cache can tell which
  bases disks use (:func:`backing_files`) and never removes those.
* An instance's files live in ``<instances_path>/<uuid>/``: ``disk``,
  ``disk.rescue`` while rescued (an overlay on the rescue image), and
  small JSON files holding what an operation must undo later
  (``rescue.json``: the definition to go back to; ``resize.json``: the
  definition a revert restores).
* A snapshot is the disk flattened into a stand-alone qcow2
  (:func:`export`), which the agent uploads to the image service.

Disks only ever grow: a resize revert in place keeps the larger disk (a
resize to another host leaves the source's disk as it was, so its revert
restores the old size: :mod:`.coldmove`). ``qemu-img``
(Debian qemu-utils) is required.
"""

import contextlib
import glob
import json
import os
import shutil
import struct
import subprocess

from compute_agent.virt.driver import VirtError

QCOW2_MAGIC = b'QFI\xfb'
GIB = 1024 ** 3
FORMATS = ('raw', 'qcow2')
# A qcow2 header: magic, version, backing_file_offset (8 bytes),
# backing_file_size (4 bytes).
_HEADER = struct.Struct('>4sIQI')


def _check_name(kind, name):
    if (not name or os.sep in name or name.startswith('.')
            or (os.altsep and os.altsep in name)):
        raise VirtError('invalid %s name %r: a plain file name is needed'
                        % (kind, name))


def image_format(path):
    with open(path, 'rb') as f:
        return 'qcow2' if f.read(4) == QCOW2_MAGIC else 'raw'


def _qemu_img(*args):
    """Run qemu-img; its output. VirtError when it fails or is missing."""
    tool = shutil.which('qemu-img')
    if tool is None:
        raise VirtError('qemu-img is not installed (Debian: apt-get install '
                        'qemu-utils): the libvirt driver needs it to build '
                        'disks')
    try:
        done = subprocess.run([tool, *args], check=True, capture_output=True,
                              text=True, timeout=3600)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
        raise VirtError('qemu-img %s failed: %s' % (
            args[0], (getattr(err, 'stderr', '') or '').strip() or err)
        ) from None
    return done.stdout


def _create_file(path):
    """Create ``path`` empty with the process's umask: qemu-img would
    create it 0644, which a QEMU running as another user of the group
    cannot open for writing; on an existing file it keeps the mode."""
    with open(path, 'wb'):
        pass


def create_disk(image, target, size_gb):
    """Make ``target``, a qcow2 overlay backed by ``image`` (a
    :class:`~compute_agent.imagecache.CachedImage`: its ``path``,
    ``disk_format`` and ``virtual_size``), of ``size_gb`` or the image's
    virtual size if larger (0: the image's size). Its format ('qcow2').

    Written under a temporary name and renamed: a failure leaves nothing.
    """
    if image.disk_format not in FORMATS:
        raise VirtError('image %s has format %r: expected one of %s'
                        % (image.path, image.disk_format, ', '.join(FORMATS)))
    size = max(int(size_gb) * GIB, int(image.virtual_size or 0))
    part = target + '.part'
    try:
        _create_file(part)
        _qemu_img('create', '-q', '-f', 'qcow2', '-F', image.disk_format,
                  '-b', os.path.abspath(image.path), part,
                  *([str(size)] if size else []))
        os.replace(part, target)
    except OSError as err:
        raise VirtError('cannot create disk %s on %s: %s'
                        % (target, image.path, err)) from None
    finally:
        if os.path.exists(part):
            os.unlink(part)
    return 'qcow2'


def grow(path, fmt, size_gb):
    """Grow a disk to ``size_gb`` (never shrink it)."""
    size = int(size_gb) * GIB
    if size <= 0:
        return
    if fmt == 'raw':
        if os.path.getsize(path) < size:
            os.truncate(path, size)          # sparse: no blocks written
        return
    info = _qemu_img('info', '--output=json', '-f', 'qcow2', path)
    if json.loads(info)['virtual-size'] < size:
        _qemu_img('resize', '-q', '-f', 'qcow2', path, str(size))


def export(path, fmt, target):
    """Write disk ``path`` as a stand-alone (flattened) qcow2 ``target``:
    what a snapshot uploads. Its format ('qcow2')."""
    part = target + '.part'
    try:
        _qemu_img('convert', '-q', '-f', fmt, '-O', 'qcow2', path, part)
        os.replace(part, target)
    except OSError as err:
        raise VirtError('cannot write image %s from %s: %s'
                        % (target, path, err)) from None
    finally:
        if os.path.exists(part):
            os.unlink(part)
    return 'qcow2'


def backing_file(path):
    """The backing file a qcow2 disk's header names, or None (raw, none,
    unreadable). Read from the header: no qemu-img, no probing."""
    try:
        with open(path, 'rb') as f:
            header = f.read(_HEADER.size)
            if len(header) < _HEADER.size:
                return None
            magic, _version, offset, size = _HEADER.unpack(header)
            if magic != QCOW2_MAGIC or not offset or not 0 < size <= 4096:
                return None
            f.seek(offset)
            name = f.read(size).decode('utf-8', 'replace')
    except OSError:
        return None
    return os.path.join(os.path.dirname(path), name)


def backing_files(instances_path):
    """The backing files of every instance disk under ``instances_path``
    (their real paths)."""
    found = set()
    for path in glob.glob(os.path.join(glob.escape(instances_path), '*',
                                       'disk*')):
        base = backing_file(path)
        if base is not None:
            found.add(os.path.realpath(base))
    return found


class InstanceFiles:
    """``<instances_path>/<uuid>/``: an instance's disks and undo records."""

    def __init__(self, instances_path, uuid):
        _check_name('instance', uuid)
        self.path = os.path.join(instances_path, uuid)
        self.disk = os.path.join(self.path, 'disk')
        self.rescue_disk = os.path.join(self.path, 'disk.rescue')
        # The serial console's log (virtlogd writes and rotates it).
        self.console_log = os.path.join(self.path, 'console.log')

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


class LocalImages:
    """Images as files named by their ref in one directory: the stand-in
    image source of tests and benchmarks (a driver's ``images``). Agents
    use their image cache instead."""

    def __init__(self, path):
        self.path = str(path)

    @contextlib.contextmanager
    def use(self, image_ref):
        from compute_agent import imagecache
        _check_name('image', image_ref)
        path = os.path.join(self.path, image_ref)
        if not os.path.isfile(path):
            raise VirtError('image %r not found: no file %s'
                            % (image_ref, path))
        info = imagecache.check_content(path, image_format(path))
        yield imagecache.CachedImage(
            image_id=image_ref, path=path, disk_format=info.disk_format,
            size=info.size, virtual_size=info.virtual_size)

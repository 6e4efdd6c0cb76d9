"""Images for the scenarios: the plane's default image, files of a given
size to upload, and what a process's memory peaked at.

Since issue 21 the API refuses a create whose image is not an active
image of its catalogue, so every plane the scenarios build on holds
:data:`IMAGE` (a small public raw image, made as an upload makes it: its
data in the plane's image store, hashed). The scenarios of images upload
theirs through the real image API instead (:mod:`bench.image_transfer`,
:mod:`bench.image_cached_build`).
"""

import contextlib
import os
import shutil
import tempfile

from common.images import register

# The image every scenario's servers are built from (the bench's 'cirros').
IMAGE = '6e1c3b0a-5d2f-4e8b-9a71-b3c4d5e6f708'
IMAGE_NAME = 'cirros'
IMAGE_DATA = b'TRISTATE-BENCH-IMAGE\n'.ljust(64 * 1024, b'\0')
MIB = 1024 * 1024
_PIECE = 4 * MIB


def register_image(conf, statedb, *, image_id=IMAGE, name=IMAGE_NAME,
                   data=IMAGE_DATA):
    """A public, active raw image with ``data`` in ``conf``'s store and
    ``statedb``'s catalogue (nothing done if it is there already)."""
    return register.register_image(conf, statedb, data, image_id=image_id,
                                   name=name)


def scratch_dir(need_bytes, prefix='tristate-bench-img-'):
    """A new directory in memory (``/dev/shm``) when it has room for
    ``need_bytes`` and a quarter more, else in the temporary directory:
    files there stay in the page cache, so a transfer measures the
    transfer, not a disk."""
    shm = '/dev/shm'
    try:
        free = shutil.disk_usage(shm).free
    except OSError:
        free = 0
    where = shm if free > need_bytes * 1.25 else None
    return tempfile.mkdtemp(prefix=prefix, dir=where)


def write_random(path, size):
    """``path``, ``size`` bytes of random data (a raw image no format
    inspector takes for anything else; nothing compresses it), written
    in pieces (never ``size`` in memory)."""
    with open(path, 'wb') as f:
        left = size
        while left:
            piece = min(left, _PIECE)
            f.write(os.urandom(piece))
            left -= piece
    return path


def read_through(path):
    """Read ``path`` once, so that its pages are cached before it is
    measured."""
    with open(path, 'rb') as f:
        while f.read(_PIECE):
            pass


@contextlib.contextmanager
def source_files(sizes_mib):
    """``{size in MiB: path}``: a random file of each size, in memory when
    there is room (:func:`scratch_dir`), read once; removed after."""
    tmp = scratch_dir(sum(sizes_mib) * MIB * 3)
    try:
        paths = {}
        for size in sizes_mib:
            paths[size] = write_random(os.path.join(tmp, '%d.raw' % size),
                                       size * MIB)
            read_through(paths[size])
        yield paths
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def peak_rss_mb(pid='self'):
    """The peak resident set of process ``pid`` since it started or since
    :func:`reset_peak` (``VmHWM``), in MiB."""
    with open('/proc/%s/status' % pid) as f:
        for line in f:
            if line.startswith('VmHWM:'):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError('no VmHWM in /proc/%s/status' % pid)


def reset_peak(pid='self'):
    """Start a new peak at the current RSS (Linux ``clear_refs`` 5; needs
    the right to write it: the process's owner or root). False if not
    possible."""
    try:
        with open('/proc/%s/clear_refs' % pid, 'w') as f:
            f.write('5')
    except OSError:
        return False
    return True

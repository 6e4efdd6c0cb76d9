"""The ``file`` store's upload path, hashing on two cores.

glance_store's filesystem driver computes the md5 ``checksum`` and the
sha512 ``os_hash_value`` one after the other in the thread that writes,
and those two hashes are most of an upload's CPU (about 1.3 and 1.15 s per
GB here, against about 1 s for reading the socket and writing the file).
:func:`write` stores the same file at the same place with the same
location, md5 on a thread of its own while sha512 and the write run in the
caller's (``hashlib`` releases the GIL on large buffers), so an upload
takes about the longer of the two instead of their sum.

Only the plain set-up is served here: one ``filesystem_store_datadir`` and
no thin provisioning. Anything else (several ``filesystem_store_datadirs``
with priorities, ``filesystem_thin_provisioning``) stays with glance_store's
own ``add`` (:func:`handles`). Reading and deleting are glance_store's
whatever wrote the file: the location is the ``file://`` URI it would have
given.
"""

import errno
import hashlib
import logging
import os
import threading

from glance_store import exceptions as gs_exc

LOG = logging.getLogger(__name__)


def handles(conf):
    """Whether :func:`write` can stand in for glance_store's ``file``
    ``add`` under ``conf``'s ``[glance_store]``."""
    store = conf.glance_store
    return not (store.filesystem_store_datadirs
                or store.filesystem_thin_provisioning)


class _Hasher:
    """md5 of the chunks handed to :meth:`feed`, on a thread of its own;
    :meth:`wait` returns once the last chunk fed is hashed."""

    def __init__(self):
        self.md5 = hashlib.md5(usedforsecurity=False)
        self._chunk = None
        self._error = None
        self._ready = threading.Semaphore(0)
        self._done = threading.Semaphore(0)
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='image-md5')
        self._thread.start()

    def _run(self):
        while True:
            self._ready.acquire()
            chunk = self._chunk
            if chunk is None:
                return
            try:
                self.md5.update(chunk)
            except BaseException as err:       # handed to the writer
                self._error = err
            self._done.release()

    def feed(self, chunk):
        self._chunk = chunk
        self._ready.release()

    def wait(self):
        self._done.acquire()
        if self._error is not None:
            raise self._error

    def close(self):
        self._chunk = None
        self._ready.release()
        self._thread.join()


def write(conf, image_id, chunks, size):
    """Store ``chunks`` as ``image_id`` in the ``file`` store's datadir.
    Returns ``(uri, bytes written, md5 hex, sha512 hex)``; raises
    glance_store's ``Duplicate`` (data already there), ``StorageFull``,
    ``StorageWriteDenied`` and ``Invalid`` (not ``size`` bytes, when
    ``size`` is not 0) as its driver does, with nothing left stored."""
    store = conf.glance_store
    path = os.path.join(store.filesystem_store_datadir, str(image_id))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise gs_exc.Duplicate(image=path) from None
    except OSError as err:
        raise _store_error(err) from err
    try:
        with os.fdopen(fd, 'wb') as f:
            written, md5, sha512 = _copy(chunks, f, size)
    except BaseException as err:
        _remove(path, image_id)
        if isinstance(err, OSError):
            raise _store_error(err) from err
        raise
    if store.filesystem_store_file_perm > 0:
        try:
            os.chmod(path, int(str(store.filesystem_store_file_perm), 8))
        except OSError:
            LOG.warning('Unable to set the permission of image file %s', path)
    return 'file://%s' % path, written, md5, sha512


def _copy(chunks, f, size):
    sha512 = hashlib.sha512()
    hasher = _Hasher()
    written = 0
    try:
        for chunk in chunks:
            written += len(chunk)
            if size and written > size:
                raise gs_exc.Invalid('Size exceeds: expected %d bytes, got '
                                     '%d bytes' % (size, written))
            hasher.feed(chunk)
            try:
                sha512.update(chunk)
                f.write(chunk)
            finally:
                hasher.wait()
    finally:
        hasher.close()
    if size and written != size:
        raise gs_exc.Invalid('Size mismatch: expected %d bytes, got %d bytes'
                             % (size, written))
    return written, hasher.md5.hexdigest(), sha512.hexdigest()


def _store_error(err):
    if err.errno in (errno.EFBIG, errno.ENOSPC):
        return gs_exc.StorageFull()
    if err.errno == errno.EACCES:
        return gs_exc.StorageWriteDenied()
    return err


def _remove(path, image_id):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as err:
        LOG.error('Unable to remove the partial data of image %s: %s',
                  image_id, err)

"""The agent's image cache: images fetched by id, verified, shared by the
disks built on them.

Layout of ``[image] cache_path``:

* ``<image id>``: the image, read-only, complete and verified. It appears
  only by a rename of a download whose hash matched the image's
  ``os_hash_value`` (sha512; the md5 ``checksum`` for an image that has
  no multihash): a crash, a broken connection or a wrong hash leaves no
  file under that name.
* ``<image id>.json``: what was verified: size, mtime, ctime and inode of
  the file then, its hash, format and virtual size. Its own mtime is when
  the image was last used.
* ``<image id>.part-*``: a download under way (removed when it fails;
  left by a crash, removed when a cache starts and nobody downloads it).
* ``<image id>.lock``: the per-image lock (``flock``): one download per
  image, whoever asks, in this process or another; the others wait and
  use its result.
* ``<image id>.scratch.part-*``: a snapshot written before its upload
  (:meth:`ImageCache.scratch_file`).

Why a cache hit does not hash the image again: a build must take the same
time whatever the image's size (a cache hit copies nothing: the disk is a
qcow2 overlay on the cached file), and hashing a 10 GiB base at every build
would cost tens of seconds. Cached files are read-only, and the cache
compares the file's size, mtime, ctime and inode with what it recorded
when it verified it: any write, truncation, replacement or ``chmod``
changes one of them, and the file is then hashed again before it is used
(and fetched again when it no longer matches). What this misses is
corruption below the file system (a disk's bit rot), which the file
system's own checks are for.

In use: a base is never removed while a disk on this host is built on it
(the driver says which: ``in_use``, e.g. the backing files of the
instance disks), nor while a task holds it (:meth:`ImageCache.use`, from
the fetch until the disk exists). Otherwise an image unused for
``[image] cache_max_age`` seconds is removed by :meth:`ImageCache.clean`,
which the agent runs every ``cache_check_interval`` seconds.

An image service that cannot be reached (or answers 5xx) does not stop a
build from an image cached here: the copy verified before is used as it is
(unchanged since: its stamp), as a hypervisor host builds from its cache
without asking Glance. Only a copy never verified, or changed since, needs
the service.

Errors: an image that does not exist, is not active, has an unsupported
format or content, or whose data does not match its hash fails the task as
the user's mistake (:class:`ImageUnusable`, fault code 400); an image
service that cannot be reached or refuses the task's grant (the API
checked the user may use the image), or a full disk, as the system's
(:class:`~compute_agent.virt.driver.VirtError`, 500).
"""

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import logging
import os
import re
import stat
import threading
import time
import uuid as uuid_mod

from common import exception
from common.images import client as client_mod
from common.images import formats
from compute_agent.virt.driver import VirtError

LOG = logging.getLogger(__name__)

FORMATS = ('raw', 'qcow2')
_STAMP = ('st_size', 'st_mtime_ns', 'st_ctime_ns', 'st_ino')
_ID = re.compile(r'[A-Za-z0-9_-]{1,255}')

# Tasks holding a base, by (cache directory, image id): shared by every
# ImageCache of the process (tristate-all runs several agents on one
# cache directory).
_PINS = {}
_PINS_LOCK = threading.Lock()


class ImageServiceUnreachable(VirtError):
    """The image service could not be reached or failed (5xx): a copy
    cached and verified before is used as it is (:meth:`ImageCache.fetch`);
    without one, the task fails as the system's trouble (500)."""


class ImageUnusable(VirtError):
    """The image cannot be used, and asking again will not help: the
    user's mistake (fault code 400). Nothing was changed."""

    fault_code = 400

    def __init__(self, message):
        super().__init__(message, rolled_back=True)


@dataclasses.dataclass(frozen=True)
class CachedImage:
    """A verified image in the cache, for the driver to build a disk on."""
    image_id: str
    path: str
    disk_format: str
    size: int
    virtual_size: int


def _check_id(image_id):
    if not isinstance(image_id, str) or not _ID.fullmatch(image_id):
        raise ImageUnusable('invalid image id %r: expected letters, digits, '
                            '"-" and "_" (a uuid)' % (image_id,))


def _stamp(st):
    return [getattr(st, name) for name in _STAMP]


def check_content(path, disk_format):
    """The :class:`~common.images.formats.ImageInfo` of the file, whose
    content must be what it claims, with no backing or data file
    (:func:`common.images.formats.check_file`); ImageUnusable if not."""
    try:
        return formats.check_file(path, disk_format)
    except exception.Invalid as err:
        raise ImageUnusable('image %s refused: %s'
                            % (os.path.basename(path), err)) from None
    except OSError as err:
        raise VirtError('cannot read image %s: %s' % (path, err)) from None


def _expected_hash(meta):
    """(algorithm, hex digest) the image's data must match."""
    algo, value = meta.get('os_hash_algo'), meta.get('os_hash_value')
    if algo and value:
        if algo not in hashlib.algorithms_available:
            raise ImageUnusable('image %s: hash algorithm %r is not '
                                'supported' % (meta.get('id'), algo))
        return algo, value.lower()
    if meta.get('checksum'):
        return 'md5', meta['checksum'].lower()
    raise ImageUnusable('image %s has no hash (os_hash_value or checksum) '
                        'to verify it against' % meta.get('id'))


def _check_meta(image_id, meta):
    status = meta.get('status')
    if status != 'active':
        raise ImageUnusable('image %s is %s, not active: it cannot be used'
                            % (image_id, status))
    if meta.get('disk_format') not in FORMATS:
        raise ImageUnusable('image %s has disk_format %r: expected one of %s'
                            % (image_id, meta.get('disk_format'),
                               ', '.join(FORMATS)))


class ImageCache:
    """One agent's cache, in ``[image] cache_path``.

    ``in_use``: a callable answering the paths of the cached files disks
    on this host are built on (none by default). ``clock``: seconds since
    the epoch (tests inject theirs).
    """

    def __init__(self, conf, *, in_use=None, clock=time.time):
        self.path = os.path.realpath(conf.image.cache_path)
        self.max_age = conf.image.cache_max_age
        self.chunk_size = conf.image.chunk_size
        self.in_use = in_use or (lambda: ())
        self.clock = clock
        os.makedirs(self.path, exist_ok=True)
        self._remove_stale_parts()

    # --- files and locks ---------------------------------------------------------

    def _file(self, image_id, suffix=''):
        return os.path.join(self.path, image_id + suffix)

    @contextlib.contextmanager
    def _locked(self, image_id, *, wait=True):
        """Hold the image's lock; yields False if ``wait`` is false and
        someone else holds it."""
        fd = os.open(self._file(image_id, '.lock'), os.O_RDWR | os.O_CREAT,
                     0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)           # releases the lock

    def _remove_stale_parts(self):
        for name in os.listdir(self.path):
            if '.part-' not in name:
                continue
            image_id = name.split('.part-')[0]
            with self._locked(image_id, wait=False) as mine:
                if mine:            # nobody downloads it: a crash left it
                    LOG.info('Removing %s, left by an interrupted download',
                             name)
                    _unlink(os.path.join(self.path, name))

    def _load_record(self, image_id):
        try:
            with open(self._file(image_id, '.json')) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def _save_record(self, image_id, record):
        target = self._file(image_id, '.json')
        part = target + '.tmp'
        with open(part, 'w') as f:
            json.dump(record, f)
        os.replace(part, target)

    def _touch(self, image_id):
        now = self.clock()
        try:
            os.utime(self._file(image_id, '.json'), (now, now))
        except FileNotFoundError:
            pass

    # --- fetching ----------------------------------------------------------------

    def fetch(self, image_id, client):
        """The verified cached copy of ``image_id``, downloaded through
        ``client`` (a :class:`~common.images.client.GlanceClient`) unless
        a good copy is cached. Raises :class:`ImageUnusable` or
        VirtError."""
        _check_id(image_id)
        try:
            meta = self._show(image_id, client)
        except ImageServiceUnreachable as err:
            cached = self._recorded(image_id)
            if cached is None:
                raise
            LOG.warning('Image service unreachable (%s): using image %s as '
                        'cached and verified before', err, image_id)
            return cached
        _check_meta(image_id, meta)
        algo, digest = _expected_hash(meta)
        with self._locked(image_id):
            cached = self._verified(image_id, meta, algo, digest)
            if cached is None:
                cached = self._download(image_id, meta, client, algo, digest)
            else:       # defence in depth: the header, whatever recorded it
                check_content(cached.path, cached.disk_format)
            self._touch(image_id)
        return cached

    @contextlib.contextmanager
    def use(self, image_id, client):
        """Fetch, and hold the image for the block: :meth:`clean` does not
        remove it meanwhile (build the disk on it within the block)."""
        _check_id(image_id)
        key = (self.path, image_id)
        with _PINS_LOCK:
            _PINS[key] = _PINS.get(key, 0) + 1
        try:
            yield self.fetch(image_id, client)
        finally:
            with _PINS_LOCK:
                _PINS[key] -= 1
                if not _PINS[key]:
                    del _PINS[key]
                self._touch(image_id)       # used until now

    @contextlib.contextmanager
    def scratch_file(self, image_id):
        """A new empty file in the cache's directory for image ``image_id``
        (a snapshot before its upload), removed after the block. Held
        under a lock, so that a cache starting meanwhile does not take it
        for a leftover."""
        _check_id(image_id)
        key = image_id + '.scratch'
        with self._locked(key):
            path = self._file(key, '.part-%s' % uuid_mod.uuid4().hex[:8])
            with open(path, 'wb'):
                pass
            try:
                yield path
            finally:
                _unlink(path)
                _unlink(self._file(key, '.lock'))

    @staticmethod
    def _show(image_id, client):
        try:
            return client.show(image_id)
        except client_mod.ImageNotFound:
            raise ImageUnusable('image %s not found' % image_id) from None
        except client_mod.ImageForbidden as err:
            # A refused grant or credential is the system's trouble: the
            # API checked that the user may use the image.
            raise VirtError('image %s: %s' % (image_id, err)) from None
        except client_mod.ImageServiceError as err:
            status = err.kwargs.get('status')
            if status is None or status >= 500:
                raise ImageServiceUnreachable(
                    'image %s: %s' % (image_id, err)) from None
            raise VirtError('image %s: %s' % (image_id, err)) from None

    def _recorded(self, image_id):
        """The cached copy as verified before, if it is there unchanged
        (the image service cannot be asked): else None."""
        with self._locked(image_id):
            record = self._load_record(image_id)
            try:
                st = os.stat(self._file(image_id))
            except FileNotFoundError:
                return None
            if record is None or record.get('stamp') != _stamp(st):
                return None
            cached = self._cached(image_id, record)
            check_content(cached.path, cached.disk_format)
            self._touch(image_id)
        return cached

    def _verified(self, image_id, meta, algo, digest):
        """The cached copy if it is there and good; a bad one is removed."""
        path = self._file(image_id)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        record = self._load_record(image_id)
        if (record is not None and record.get('stamp') == _stamp(st)
                and record.get('hash') == [algo, digest]):
            return self._cached(image_id, record)
        LOG.info('Cached image %s changed since it was verified (or was '
                 'never recorded): hashing it again', image_id)
        try:
            size, actual = _hash_file(path, algo, self.chunk_size)
        except OSError as err:
            raise VirtError('cannot read cached image %s: %s'
                            % (image_id, err)) from None
        if actual != digest or (meta.get('size') is not None
                                and size != meta['size']):
            LOG.warning('Cached image %s is corrupt (its %s does not match '
                        'the image\'s): fetching it again', image_id, algo)
            self._remove(image_id)
            return None
        _make_read_only(path)
        return self._record(image_id, meta, algo, digest,
                            check_content(path, meta['disk_format']))

    def _cached(self, image_id, record):
        return CachedImage(image_id=image_id, path=self._file(image_id),
                           disk_format=record['disk_format'],
                           size=record['size'],
                           virtual_size=record['virtual_size'])

    def _record(self, image_id, meta, algo, digest, info):
        st = os.stat(self._file(image_id))
        record = {'stamp': _stamp(st), 'hash': [algo, digest],
                  'disk_format': meta['disk_format'], 'size': st.st_size,
                  'virtual_size': info.virtual_size}
        self._save_record(image_id, record)
        return self._cached(image_id, record)

    def _download(self, image_id, meta, client, algo, digest):
        part = self._file(image_id, '.part-%s' % uuid_mod.uuid4().hex[:8])
        LOG.info('Downloading image %s (%s bytes) into the cache', image_id,
                 meta.get('size'))
        try:
            size, actual = self._write(image_id, client, part, algo)
            if actual != digest:
                raise ImageUnusable(
                    'image %s: the data downloaded does not match its %s '
                    '(expected %s, got %s): the stored image is corrupt'
                    % (image_id, algo, digest, actual))
            if meta.get('size') is not None and size != meta['size']:
                raise ImageUnusable('image %s: %d bytes downloaded, its size '
                                    'is %d' % (image_id, size, meta['size']))
            _make_read_only(part)
            info = check_content(part, meta['disk_format'])
            os.replace(part, self._file(image_id))
        finally:
            _unlink(part)
        return self._record(image_id, meta, algo, digest, info)

    def _write(self, image_id, client, part, algo):
        """Stream the image into ``part``; (size, hex digest)."""
        try:
            with open(part, 'wb') as f:
                size, digest = self._stream(image_id, client, f, algo)
                f.flush()
                os.fsync(f.fileno())
        except OSError as err:
            raise VirtError('cannot write image %s into the cache: %s'
                            % (image_id, err)) from None
        return size, digest

    def _stream(self, image_id, client, f, algo):
        hasher = hashlib.new(algo)
        size = 0
        try:
            chunks, _headers = client.download(image_id)
            try:
                for chunk in chunks:
                    hasher.update(chunk)
                    f.write(chunk)
                    size += len(chunk)
            finally:
                chunks.close()
        except client_mod.ImageNotFound:
            raise ImageUnusable('image %s not found' % image_id) from None
        except (client_mod.ImageForbidden,
                client_mod.ImageServiceError) as err:
            raise VirtError('download of image %s failed: %s'
                            % (image_id, err)) from None
        return size, hasher.hexdigest()

    def _remove(self, image_id):
        _unlink(self._file(image_id))
        _unlink(self._file(image_id, '.json'))

    # --- keeping it small ---------------------------------------------------

    def images(self):
        """Ids of the images in the cache."""
        return sorted(name for name in os.listdir(self.path)
                      if '.' not in name)

    def used_bytes(self):
        """Bytes the cache takes on disk (downloads under way included):
        counted in the disk the host reports as used."""
        total = 0
        for name in os.listdir(self.path):
            try:
                total += os.stat(os.path.join(self.path, name)).st_blocks * 512
            except FileNotFoundError:
                pass
        return total

    def clean(self):
        """Remove the images unused for ``cache_max_age`` seconds (none if
        it is 0) that no disk and no task uses. Returns their ids."""
        if not self.max_age:
            return []
        removed = []
        with _PINS_LOCK:    # a task that pins from now on sees it gone
            used = {os.path.realpath(p) for p in self.in_use()}
            for image_id in self.images():
                if self._expired(image_id, used):
                    removed.append(image_id)
        if removed:
            LOG.info('Image cache: removed %s (unused for %d s)',
                     ', '.join(removed), self.max_age)
        return removed

    def _expired(self, image_id, used):
        """Remove ``image_id`` if nothing uses it and it is old enough."""
        path = self._file(image_id)
        if (self.path, image_id) in _PINS or path in used:
            self._touch(image_id)       # its age counts from its last use
            return False
        with self._locked(image_id, wait=False) as mine:
            if not mine:            # being fetched right now
                return False
            try:
                last = os.stat(self._file(image_id, '.json')).st_mtime
            except FileNotFoundError:
                last = os.stat(path).st_mtime
            if self.clock() - last < self.max_age:
                return False
            self._remove(image_id)
            # A fetch that opened this lock file just now may then download
            # alongside a later one: both write their own temporary file and
            # rename, so the image stays whole; lock files do not pile up.
            _unlink(self._file(image_id, '.lock'))
        return True


def _hash_file(path, algo, chunk_size):
    hasher = hashlib.new(algo)
    size = 0
    with open(path, 'rb') as f:
        while chunk := f.read(chunk_size):
            hasher.update(chunk)
            size += len(chunk)
    return size, hasher.hexdigest()


def _make_read_only(path):
    os.chmod(path, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass

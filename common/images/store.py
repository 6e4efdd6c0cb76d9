"""Where image bytes live: a thin wrapper over ``glance_store``.

``glance_store`` is the library Glance itself stores images with; its own
``[glance_store]`` options select the store (``file``, ``rbd``, ``s3``,
``swift``, ``http`` read-only). Tristate's embedded default is the ``file``
store under ``$state_dir/image-store``.

What this module adds to the library:

* one object per ``ConfigOpts``: the drivers are loaded and configured on
  the conf given, and locations are parsed by those drivers, never through
  glance_store's process-wide scheme map (tests build several confs);
* ``[image] max_image_size`` enforced while bytes arrive, and a declared
  size checked, with nothing left stored when either fails;
* the md5 ``checksum`` and the sha512 ``os_hash_value`` Glance v2 reports,
  computed while writing (one pass, nothing held in memory); for the
  ``file`` store on two cores at once (:mod:`common.images.filewrite`);
* downloads cut in pieces of at most ``[image] chunk_size``;
* errors of our own hierarchy (:mod:`common.exception`), so that the API
  tier answers 4xx for the user's mistakes.

The location a store returns (``file:///...``, ``rbd://...``) may hold
credentials: it is kept in the catalogue, never shown to users and never
taken from them (``get`` and ``delete`` open whatever location they are
given).
"""

import functools
import logging
import os

import glance_store
from glance_store import backend as gs_backend
from glance_store import exceptions as gs_exc
from glance_store import location as gs_location
from oslo_config import cfg
from stevedore import driver as stevedore_driver

from common import exception
from common.images import filewrite

LOG = logging.getLogger(__name__)

GROUP = 'glance_store'
# The drivers whose options the sample config lists and the validator
# accepts. glance_store's own lister (namespace ``glance.store``) loads
# every driver it ships, so the sample would change with what is installed
# (``cinder`` needs os-brick and logs an ERROR without it) and offer
# ``cinder`` and ``vmware``, which Tristate neither documents nor tests.
DRIVERS = ('file', 'http', 'rbd', 's3', 'swift')
DEFAULT_DATADIR = '$state_dir/image-store'
HASH_ALGO = 'sha512'


class ImageTooLarge(exception.TristateError):
    msg_fmt = ('Image %(image_id)s is larger than the %(limit)d bytes the '
               'image service accepts ([image] max_image_size)')
    code = 413


class ImageSizeMismatch(exception.Invalid):
    msg_fmt = ('Image %(image_id)s: %(expected)d bytes were declared, '
               '%(actual)s arrived')


class ImageDataNotFound(exception.NotFound):
    # Never the location: it may hold a store's credentials.
    msg_fmt = 'The image store has no data for this image.'


class ImageDataExists(exception.Conflict):
    msg_fmt = ('Image %(image_id)s already has data in the image store '
               '(an upload that did not finish cleanly): delete the image '
               'and upload again')


class ImageStoreError(exception.TristateError):
    msg_fmt = 'The image store failed: %(reason)s'
    code = 503


def _driver_class(name):
    return stevedore_driver.DriverManager(
        'glance_store.drivers', name, invoke_on_load=False).driver


def list_opts():
    """``[('glance_store', opts)]``: glance_store's store selection
    (``stores``, ``default_store``) and the options of :data:`DRIVERS`,
    with Tristate's defaults (the ``tristate.glance_store`` namespace of
    the sample config and the validator)."""
    # On the option objects themselves: the sample and the validator read
    # those, not a conf. A daemon's conf gets them from ImageStore too.
    filesystem = _driver_class('file')
    cfg.set_defaults(filesystem.OPTIONS,
                     filesystem_store_datadir=DEFAULT_DATADIR)
    opts = list(gs_backend._STORE_OPTS)
    for name in DRIVERS:
        opts.extend(_driver_class(name).OPTIONS or ())
    return [(GROUP, opts)]


def register_opts(conf):
    for group, opts in list_opts():
        conf.register_opts(opts, group=group)


class _Counted:
    """The upload's chunks, counted as they pass: refuses to go past
    ``limit`` (raising inside the store's write loop, so the store removes
    what it wrote) and drops empty chunks."""

    def __init__(self, chunks, image_id, limit, chunk_size):
        if hasattr(chunks, 'read'):
            # A file object iterates by lines: read it in chunks instead.
            chunks = iter(functools.partial(chunks.read, chunk_size), b'')
        self._chunks = chunks
        self._image_id = image_id
        self._limit = limit
        self.count = 0

    def __iter__(self):
        for chunk in self._chunks:
            if not chunk:
                continue
            self.count += len(chunk)
            if self.count > self._limit:
                raise ImageTooLarge(image_id=self._image_id,
                                    limit=self._limit)
            yield chunk


def _pieces(chunks, size):
    """``chunks`` cut to at most ``size`` bytes each (no copy for chunks
    already small enough); closes the store's iterator however the caller
    stops."""
    try:
        for chunk in chunks:
            if len(chunk) <= size:
                yield chunk
                continue
            view = memoryview(chunk)
            for start in range(0, len(view), size):
                yield bytes(view[start:start + size])
    finally:
        close = getattr(chunks, 'close', None)
        if close is not None:
            close()


class ImageStore:
    """The configured glance_store drivers, on one conf.

    ``add`` writes to the ``[glance_store] default_store``; ``get`` and
    ``delete`` pick the driver by the location's scheme among
    ``[glance_store] stores``.
    """

    def __init__(self, conf):
        self._conf = conf
        register_opts(conf)
        conf.set_default('filesystem_store_datadir', DEFAULT_DATADIR,
                         group=GROUP)
        conf.set_default('filesystem_store_chunk_size',
                         conf.image.chunk_size, group=GROUP)
        self._by_scheme = {}
        for name in conf.glance_store.stores:
            self._load(name)
        default = conf.glance_store.default_store
        if default not in self._by_scheme:
            raise ImageStoreError(
                reason='[glance_store] default_store %r is not one of the '
                       'stores enabled by [glance_store] stores (%s)'
                       % (default, ', '.join(conf.glance_store.stores)))
        self._default = self._by_scheme[default]

    def _load(self, name):
        try:
            store = stevedore_driver.DriverManager(
                'glance_store.drivers', name, invoke_on_load=True,
                invoke_args=[self._conf]).driver
        except (RuntimeError, ImportError) as err:
            raise ImageStoreError(reason='no glance_store driver %r: %s'
                                  % (name, err)) from err
        try:
            store.configure(re_raise_bsc=True)
        except gs_exc.BadStoreConfiguration as err:
            raise ImageStoreError(reason=str(err)) from err
        for scheme in store.get_schemes():
            self._by_scheme[scheme] = store

    def _locate(self, uri):
        scheme = uri.partition(':')[0]
        store = self._by_scheme.get(scheme)
        if store is None:
            raise ImageStoreError(
                reason='no enabled store handles %r locations ([glance_store] '
                       'stores)' % scheme)
        loc = gs_location.Location(scheme, store.get_store_location_class(),
                                   self._conf, uri=uri)
        return store, loc

    def add(self, image_id, chunks, size=None, *, replace=False):
        """Store the bytes of ``chunks`` (an iterable of ``bytes``, or a
        binary file object) as ``image_id``. Returns ``(location, size,
        md5 hex, sha512 hex)``. ``replace``: data already stored under
        ``image_id`` is a dead upload's leftover (the caller holds the
        image's upload): the file store removes it first; other stores
        answer :class:`ImageDataExists` as without it.

        ``size``, when given, must be what arrives (else
        :class:`ImageSizeMismatch`); more than ``[image] max_image_size``
        raises :class:`ImageTooLarge`. Either way nothing stays stored.
        """
        limit = self._conf.image.max_image_size
        if size is not None and size > limit:
            raise ImageTooLarge(image_id=image_id, limit=limit)
        counted = _Counted(chunks, image_id, limit,
                           self._conf.image.chunk_size)
        try:
            uri, written, md5, sha512 = self._add(image_id, counted, size)
        except gs_exc.Duplicate:
            if not (replace and self._remove_leftover(image_id)):
                raise ImageDataExists(image_id=image_id) from None
            return self.add(image_id, chunks, size)
        except glance_store.Invalid:
            # The store's own check: more than the declared size arrived
            # (it stops there) or fewer; it removed what it wrote.
            actual = ('more than that' if counted.count > (size or 0)
                      else counted.count)
            raise ImageSizeMismatch(image_id=image_id, expected=size or 0,
                                    actual=actual) from None
        except gs_exc.StorageFull as err:
            raise ImageStoreError(reason='storage full: %s' % err) from err
        if size is not None and written != size:
            # A store that does not check sizes itself.
            self.delete(uri)
            raise ImageSizeMismatch(image_id=image_id, expected=size,
                                    actual=written)
        LOG.debug('Stored image %s: %d bytes', image_id, written)
        return uri, written, md5, sha512

    def _add(self, image_id, counted, size):
        if self._default is self._by_scheme.get('file') and (
                filewrite.handles(self._conf)):
            return filewrite.write(self._conf, image_id, counted, size or 0)
        uri, written, md5, sha512, _meta = self._default.add(
            image_id, counted, size or 0, HASH_ALGO)
        return uri, written, md5, sha512

    def _remove_leftover(self, image_id):
        """Remove the file store's data of ``image_id`` (a process that
        died mid-upload left it; glance_store refuses to write over it).
        False for other stores."""
        if self._default is not self._by_scheme.get('file'):
            return False
        self.discard_upload(image_id)
        return True

    def discard_upload(self, image_id):
        """Remove what an upload of ``image_id`` that never finished left
        in the ``file`` store (its process died; the image is being
        deleted): its data is under the image's id and no location names
        it. An upload still running elsewhere writes on into the removed
        file and finds its image gone. Other stores: nothing to find."""
        if self._default is not self._by_scheme.get('file'):
            return False
        datadir = self._conf.glance_store.filesystem_store_datadir
        try:
            os.unlink(os.path.join(datadir, image_id))
        except FileNotFoundError:
            return False
        LOG.warning('Removed the data an unfinished upload of image %s left '
                    'in %s', image_id, datadir)
        return True

    def get(self, location, chunk_size=None):
        """``(iterator of bytes, size)`` of the image at ``location``, in
        pieces of at most ``chunk_size`` (default ``[image] chunk_size``).
        Closing the iterator closes the store's file or connection."""
        store, loc = self._locate(location)
        try:
            chunks, size = store.get(loc)
        except gs_exc.NotFound:
            raise ImageDataNotFound() from None
        return _pieces(chunks, chunk_size or self._conf.image.chunk_size), size

    def delete(self, location):
        """Remove the image at ``location``; nothing there is fine."""
        store, loc = self._locate(location)
        try:
            store.delete(loc)
        except gs_exc.NotFound:
            LOG.debug('Image data at %s already gone', location)

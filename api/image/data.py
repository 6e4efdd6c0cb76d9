"""Image data: ``PUT`` and ``GET /v2/images/{id}/file``, streamed.

An upload moves the image queued → saving (:func:`common.db.images.
begin_upload`, which hands out the upload's token), streams the request
body into the store in ``[image] chunk_size`` pieces, the first bytes
through the formats inspector (a qcow2 with a backing or external data
file, or content that is not the declared ``disk_format``, is refused
before more is stored), and ends active with its size, md5 ``checksum``
and sha512 ``os_hash_value``. Any failure (the client went away or stayed
idle past ``[image] upload_idle_timeout``, more than ``[image]
max_image_size``, refused content, a store error) removes what was stored
and puts the image back to ``queued``, as Glance does: a failed upload
never leaves an active image. The body never goes through the compute
API's size limit and whole-body read (:mod:`api.image.app` mounts this app
in front of them); memory stays one chunk whatever the image's size.

A download answers the store's chunks as they come, with Glance's
``Content-MD5``; an image with no data answers 204.
"""

import logging
import queue
import threading
import time

import flask
from werkzeug import exceptions as http_exceptions

from api import middleware
from api.image import access
from api.image import rotation
from common import exception
from common.db import images as images_db
from common.images import formats

LOG = logging.getLogger(__name__)

bp = flask.Blueprint('image_data', __name__)

SIZE_HEADER = 'X-OpenStack-Image-Size'
# Chunks of the body read from the socket ahead of the store (memory: this
# many [image] chunk_size pieces at most, whatever the image's size).
READ_AHEAD = 4


class UploadCut(exception.Invalid):
    msg_fmt = ('The upload of image %(image)s was cut after %(count)d bytes: '
               'the client closed it, or sent nothing for more than '
               '%(idle)d s ([image] upload_idle_timeout)')


class UploadPreempted(exception.TristateError):
    msg_fmt = ('Image %(image)s could not be found after upload. The image '
               'may have been deleted during the upload, cleaning up the '
               'chunks uploaded.')
    code = 410


def _declared_size():
    for header in (SIZE_HEADER, 'Content-Length'):
        value = flask.request.headers.get(header)
        if value is None:
            continue
        if not (value.isascii() and value.isdigit()):
            raise exception.Invalid('%s must be a whole number of bytes, not '
                                    '%r' % (header, value))
        return int(value)
    return None


class _Body:
    """The request body as chunks: each read under the idle deadline, the
    image's row touched while bytes keep coming, the first bytes shown to
    the formats inspector."""

    def __init__(self, image, token, inspector):
        conf = access.services().conf
        self.image_id = image['id']
        self.token = token
        self.inspector = inspector
        self.chunk_size = conf.image.chunk_size
        self.idle = conf.image.upload_idle_timeout
        self.stream = flask.request.stream
        self.deadline = flask.request.environ.get(middleware.BODY_DEADLINE)
        self.count = 0
        self.touched = time.monotonic()

    def _read(self):
        if self.deadline is not None:
            self.deadline(self.idle)
        try:
            chunk = self.stream.read(self.chunk_size)
            self.count += len(chunk)
            return chunk
        except (OSError, ValueError, http_exceptions.ClientDisconnected):
            raise UploadCut(image=self.image_id, count=self.count,
                            idle=self.idle) from None
        finally:
            if self.deadline is not None:
                self.deadline(None)

    def _touch(self):
        now = time.monotonic()
        if now - self.touched < self.idle / 2:
            return
        self.touched = now
        if not images_db.touch_upload(access.statedb(), self.image_id,
                                      self.token):
            raise UploadPreempted(image=self.image_id)

    def __iter__(self):
        reader = _ReadAhead(self._read, READ_AHEAD)
        try:
            for chunk in reader:
                self.inspector.feed(chunk)
                self._touch()
                yield chunk
        finally:
            reader.close()
        self.inspector.finish()


class _ReadAhead:
    """The chunks ``read()`` returns until ``b''``, read by a thread of
    their own up to ``depth`` chunks ahead of the consumer.

    Why: the store hashes every chunk twice (glance_store's md5 and sha512,
    one after the other, in the request's thread) and that is most of an
    upload's CPU; the socket reads and their copies (cheroot's buffered
    reader is pure Python) are most of the rest. Hashing releases the GIL,
    so with a thread of their own the reads of the next chunks overlap the
    hashing of this one. An error of ``read()`` (the client went away or
    idle) is raised to the consumer; :meth:`close` stops the thread.
    """

    def __init__(self, read, depth):
        self._read = read
        self._queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='image-upload-reader')
        self._thread.start()

    def _run(self):
        try:
            while not self._stop.is_set():
                chunk = self._read()
                self._put((chunk, None))
                if not chunk:
                    return
        except BaseException as err:        # handed to the consumer
            self._put((None, err))

    def _put(self, item):
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def __iter__(self):
        while True:
            chunk, err = self._queue.get()
            if err is not None:
                raise err
            if not chunk:
                return
            yield chunk

    def close(self):
        """Stop reading ahead; returns once the thread has (a read under
        way ends with data, or at the idle deadline): the connection is
        never read by two threads."""
        self._stop.set()
        self._thread.join()


def _check_formats(image):
    if not image['disk_format'] or not image['container_format']:
        raise exception.Invalid('Properties disk_format, container_format '
                                'must be set prior to saving data.')


def _check_content_type():
    if flask.request.mimetype != 'application/octet-stream':
        raise access.http_error(
            415, 'Content type %s is not supported: image data must be '
                 'application/octet-stream' % (flask.request.mimetype
                                               or '(none)'))


@bp.put('/v2/images/<image_id>/file')
def upload(image_id):
    _check_content_type()
    ctx = access.context()
    image = access.image(image_id, op='write')
    _check_formats(image)
    size = _declared_size()
    conf = access.services().conf
    started = images_db.begin_upload(
        access.statedb(), image_id, ctx=ctx,
        stale_after=2 * conf.image.upload_idle_timeout)
    token = started['location']
    try:
        result = _store(started, token, size)
    except BaseException:
        if not images_db.abort_upload(access.statedb(), image_id, token):
            LOG.info('Upload of image %s failed after it was deleted or '
                     'taken over', image_id)
        raise
    LOG.info('Image %s uploaded: %d bytes', image_id, result['size'])
    claims = access.grant_claims()
    if claims is not None and claims.rotation is not None:
        rotation.rotate(access.statedb(), access.services().store, result,
                        claims.rotation)
    return flask.Response(status=204)


def _store(image, token, size):
    store = access.services().store
    inspector = formats.Inspector(image['disk_format'])
    body = _Body(image, token, inspector)
    # The upload is ours (its token): data under this id is a dead
    # upload's leftover.
    location, written, md5, sha512 = store.add(image['id'], iter(body),
                                               replace=True,
                                               size=size)
    try:
        done = images_db.finish_upload(
            access.statedb(), image['id'], token, location=location,
            size=written, checksum=md5, os_hash_value=sha512,
            virtual_size=inspector.info.virtual_size)
    except BaseException:
        store.delete(location)
        raise
    if done is None:
        store.delete(location)
        raise UploadPreempted(image=image['id'])
    return done


@bp.get('/v2/images/<image_id>/file')
def download(image_id):
    ctx = access.context()
    image = access.image(image_id, op='read')
    if image['status'] == images_db.DEACTIVATED and not (ctx and ctx.is_admin):
        raise access.http_error(403, 'The requested image has been '
                                     'deactivated. Image data download is '
                                     'forbidden.')
    location = images_db.stored_location(image)
    if image['status'] not in (images_db.ACTIVE, images_db.DEACTIVATED) or (
            location is None):
        return flask.Response(status=204)
    try:
        chunks, size = access.services().store.get(location)
    except exception.NotFound:
        LOG.warning('Image %s is active but the store has no data for it',
                    image_id)
        return flask.Response(status=204)
    response = flask.Response(chunks, mimetype='application/octet-stream',
                              direct_passthrough=True)
    response.headers['Content-Length'] = str(size)
    if image['checksum']:
        response.headers['Content-MD5'] = image['checksum']
    return response

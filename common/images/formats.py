"""What an image's content is, and whether Tristate accepts it.

Only ``raw`` and ``qcow2`` are supported. The check exists because of a
known hole: QEMU follows what an image's header says, so a qcow2 declaring a
backing file or an external data file (or a vmdk descriptor naming extents)
makes the host read any file it names into the guest. Hence the refusals,
each an :class:`ImageFormatRefused` (HTTP 400) naming what was found and
what was expected:

* a qcow2 declaring a backing file (``backing_file_offset`` != 0);
* a qcow2 declaring an external data file (incompatible feature bit 2, or
  the header extension ``0x44415441``, "data file name");
* a qcow2 that is encrypted, of a version other than 2 and 3, with
  incompatible features this module does not know, or whose header
  extensions do not end within the bytes inspected;
* content that does not match the declared ``disk_format`` (qcow2 content
  declared raw; raw, or another format's header, declared qcow2; another
  format's header, or a vmdk text descriptor, declared raw: a later probe
  must never find anything but raw in a raw image);
* a ``disk_format`` other than raw and qcow2 ("not supported yet").

It works on a stream: :meth:`Inspector.wrap` passes an upload's chunks
through unchanged and buffers only the first :data:`HEADER_LIMIT` bytes
(the qcow2 header and its extensions lie in the first cluster), deciding
there or at the end of a shorter stream. :func:`check_file` does the same
for a local file (an agent checks a cached image before using it).
"""

import dataclasses
import os
import re
import struct

from common import exception

SUPPORTED = ('raw', 'qcow2')
HEADER_LIMIT = 64 * 1024

QCOW2_MAGIC = b'QFI\xfb'
# magic, version, backing_file_offset, backing_file_size, cluster_bits,
# size, crypt_method, l1_size, l1_table_offset, refcount_table_offset,
# refcount_table_clusters, nb_snapshots, snapshots_offset: 72 bytes.
_QCOW2_V2 = struct.Struct('>4sIQIIQIIQQIIQ')
# incompatible_features, compatible_features, autoclear_features,
# refcount_order, header_length: bytes 72-103 of a version 3 header.
_QCOW2_V3 = struct.Struct('>QQQII')
_EXTENSION = struct.Struct('>II')
EXT_DATA_FILE = 0x44415441
INCOMPAT_DATA_FILE = 1 << 2
# dirty, corrupt, external data file, compression type, extended L2.
INCOMPAT_KNOWN = 0x1f

# Headers of other formats QEMU would probe (offset, magic): refused rather
# than taken for raw, so that no later probe can read them as what they are.
_OTHER_FORMATS = (
    ('qed', 0, b'QED\x00'),
    ('vmdk', 0, b'KDMV'),
    ('vmdk', 0, b'COWD'),
    ('parallels', 0, b'WithoutFreeSpace'),
    ('parallels', 0, b'WithouFreSpacExt'),
    ('vhdx', 0, b'vhdxfile'),
    ('vpc', 0, b'conectix'),
    ('vdi', 0x40, b'\x7f\x10\xda\xbe'),
    ('luks', 0, b'LUKS\xba\xbe'),
)


class ImageFormatRefused(exception.Invalid):
    msg_fmt = 'Image refused: found %(found)s, expected %(expected)s.'


@dataclasses.dataclass(frozen=True)
class ImageInfo:
    """An accepted image: its format, its size in bytes and the size of
    the disk it holds (``virtual_size``; the same as ``size`` for raw)."""

    disk_format: str
    size: int
    virtual_size: int


def _refuse(found, expected):
    raise ImageFormatRefused(found=found, expected=expected)


def check_disk_format(disk_format):
    """Refuse a ``disk_format`` other than raw and qcow2."""
    if disk_format not in SUPPORTED:
        _refuse('disk_format %r' % (disk_format,),
                'raw or qcow2 (other disk formats are not supported yet)')


_VMDK_VERSION = re.compile(rb'version=[123]\r?\n')


def _is_vmdk_descriptor(head):
    """Whether QEMU would probe ``head`` as a vmdk descriptor (a text
    file naming extents, any file of the host): its first line that is
    neither blank nor a comment is ``version=1``, ``2`` or ``3``."""
    for line in bytes(head[:4096]).splitlines(keepends=True):
        stripped = line.lstrip(b' ')
        if stripped.startswith(b'#') or not stripped.strip(b'\r\n'):
            continue
        return _VMDK_VERSION.fullmatch(stripped) is not None
    return False


def _content_format(head):
    if head.startswith(QCOW2_MAGIC):
        return 'qcow2'
    for name, offset, magic in _OTHER_FORMATS:
        if head[offset:offset + len(magic)] == magic:
            return name
    if _is_vmdk_descriptor(head):
        return 'vmdk descriptor'
    return 'raw'


def _backing_name(head, offset, size):
    name = bytes(head[offset:offset + min(size, 1024)])
    if not name:
        return ''
    return ' %r' % name.decode('utf-8', 'replace')


def _check_qcow2_v3(head, limit):
    """Refusals of the version 3 fields; the header's length."""
    if len(head) < _QCOW2_V2.size + _QCOW2_V3.size:
        _refuse('a qcow2 version 3 header cut short',
                'a whole qcow2 header')
    incompat, _compat, _autoclear, _order, header_length = (
        _QCOW2_V3.unpack_from(head, _QCOW2_V2.size))
    if incompat & INCOMPAT_DATA_FILE:
        _refuse('a qcow2 declaring an external data file (incompatible '
                'feature bit 2)', 'a qcow2 holding its own data')
    if incompat & ~INCOMPAT_KNOWN:
        _refuse('a qcow2 with unknown incompatible features %#x'
                % (incompat & ~INCOMPAT_KNOWN),
                'only the features QEMU documents for version 3')
    if not 104 <= header_length <= limit:
        _refuse('a qcow2 header_length of %d' % header_length,
                '104 to %d bytes' % limit)
    return header_length


def _check_extensions(head, start, end):
    """Walk the header extensions from ``start``; they must end (type 0)
    before ``end`` (the first cluster, or what was inspected)."""
    offset = start
    while True:
        if offset + _EXTENSION.size > end:
            _refuse('qcow2 header extensions going past byte %d' % end,
                    'header extensions ending within the first cluster and '
                    'the first %d bytes' % HEADER_LIMIT)
        kind, length = _EXTENSION.unpack_from(head, offset)
        if kind == 0:
            return
        if kind == EXT_DATA_FILE:
            _refuse('a qcow2 declaring an external data file (header '
                    'extension 0x44415441)', 'a qcow2 holding its own data')
        offset += _EXTENSION.size + (length + 7) // 8 * 8


def _qcow2_virtual_size(head):
    """The virtual size of the qcow2 whose first bytes are ``head``, or
    :class:`ImageFormatRefused`."""
    if len(head) < _QCOW2_V2.size:
        _refuse('a qcow2 header cut short (%d bytes)' % len(head),
                'a whole qcow2 header')
    (_magic, version, backing_offset, backing_size, cluster_bits, size,
     crypt_method, *_rest) = _QCOW2_V2.unpack_from(head)
    if version not in (2, 3):
        _refuse('qcow2 version %d' % version, 'qcow2 version 2 or 3')
    if not 9 <= cluster_bits <= 21:
        _refuse('qcow2 cluster_bits %d' % cluster_bits, '9 to 21')
    if backing_offset:
        _refuse('a qcow2 declaring a backing file%s'
                % _backing_name(head, backing_offset, backing_size),
                'a qcow2 without backing file (upload a flattened image: '
                'qemu-img convert -O qcow2)')
    if crypt_method:
        _refuse('an encrypted qcow2 (crypt_method %d)' % crypt_method,
                'an unencrypted qcow2 (encrypted images are not supported '
                'yet)')
    start = _QCOW2_V2.size
    if version == 3:
        start = _check_qcow2_v3(head, HEADER_LIMIT)
    _check_extensions(head, start, min(len(head), 1 << cluster_bits))
    return size


class Inspector:
    """Inspects the first bytes of an image declared ``disk_format``.

    Feed it the image in order (:meth:`feed`, or :meth:`wrap` around an
    iterator of chunks), then call :meth:`finish` at the end; either may
    raise :class:`ImageFormatRefused`. Only the first ``limit`` bytes are
    kept.
    """

    def __init__(self, disk_format, limit=HEADER_LIMIT):
        check_disk_format(disk_format)
        self.disk_format = disk_format
        self._limit = limit
        self._head = bytearray()
        self._size = 0
        self._qcow2_size = None
        self._decided = False
        self.info = None

    def feed(self, data):
        self._size += len(data)
        if self._decided:
            return
        room = self._limit - len(self._head)
        self._head += data[:room]
        if len(self._head) >= self._limit:
            self._decide()

    def _decide(self):
        self._decided = True
        found = _content_format(self._head)
        if found != self.disk_format:
            what = ('raw content (no qcow2 header)' if found == 'raw'
                    else '%s content' % found)
            _refuse(what, '%s content, as disk_format says'
                    % self.disk_format)
        if found == 'qcow2':
            self._qcow2_size = _qcow2_virtual_size(self._head)
        self._head = bytearray()

    def finish(self, size=None):
        """The :class:`ImageInfo` of the image fed (``size``: its total
        size in bytes, if not all of it was fed)."""
        if not self._decided:
            self._decide()
        total = self._size if size is None else size
        virtual = total if self._qcow2_size is None else self._qcow2_size
        self.info = ImageInfo(disk_format=self.disk_format, size=total,
                              virtual_size=virtual)
        return self.info

    def wrap(self, chunks):
        """``chunks`` passed through unchanged, inspected on the way;
        :attr:`info` is set once the last chunk has gone."""
        for chunk in chunks:
            self.feed(chunk)
            yield chunk
        self.finish()


def check_file(path, disk_format):
    """The :class:`ImageInfo` of the local image file ``path`` declared
    ``disk_format``, or :class:`ImageFormatRefused`."""
    inspector = Inspector(disk_format)
    with open(path, 'rb') as image:
        inspector.feed(image.read(HEADER_LIMIT))
        return inspector.finish(size=os.fstat(image.fileno()).st_size)

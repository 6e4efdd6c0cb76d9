"""Image content inspection on real ``qemu-img`` output: raw and qcow2
(versions 2 and 3) accepted with their virtual size; a qcow2 declaring a
backing file or an external data file refused (the host-file-read hole),
as are content that does not match the declared disk_format and formats
other than raw and qcow2."""

import os
import shutil
import struct
import subprocess

import pytest

from common import exception
from common.images import formats

pytestmark = pytest.mark.skipif(shutil.which('qemu-img') is None,
                                reason='needs qemu-img (qemu-utils)')

MIB = 1024 * 1024


def _qemu_img(*args):
    subprocess.run(['qemu-img', 'create', '-q', *args], check=True,
                   capture_output=True, timeout=60)


def _qcow2(path, size='1G', *options):
    _qemu_img('-f', 'qcow2', *options, str(path), size)
    return path


def _raw(path, data=None):
    path.write_bytes(os.urandom(3 * 4096) if data is None else data)
    return path


def _refused(path, disk_format):
    with pytest.raises(formats.ImageFormatRefused) as err:
        formats.check_file(str(path), disk_format)
    assert isinstance(err.value, exception.Invalid)
    assert err.value.code == 400
    return str(err.value)


def _chunks(path, size):
    with open(path, 'rb') as image:
        while chunk := image.read(size):
            yield chunk


def _stream(path, disk_format, size=4096):
    inspector = formats.Inspector(disk_format)
    data = b''.join(inspector.wrap(_chunks(path, size)))
    assert data == path.read_bytes()     # passed through unchanged
    return inspector.info


def _patch(path, offset, fmt, value):
    data = bytearray(path.read_bytes())
    struct.pack_into(fmt, data, offset, value)
    path.write_bytes(bytes(data))
    return path


# Acceptance.

def test_raw_accepted(tmp_path):
    path = _raw(tmp_path / 'disk.raw')
    info = formats.check_file(str(path), 'raw')
    assert info == formats.ImageInfo('raw', 3 * 4096, 3 * 4096)
    assert _stream(path, 'raw', size=1000) == info


def test_empty_raw_accepted(tmp_path):
    path = _raw(tmp_path / 'empty', b'')
    assert formats.check_file(str(path), 'raw').virtual_size == 0


@pytest.mark.parametrize('compat', ['1.1', '0.10'])
def test_qcow2_accepted_with_its_virtual_size(tmp_path, compat):
    path = _qcow2(tmp_path / 'disk.qcow2', '3G', '-o', 'compat=' + compat)
    info = formats.check_file(str(path), 'qcow2')
    assert info.disk_format == 'qcow2'
    assert info.virtual_size == 3 * 1024 ** 3
    assert info.size == os.path.getsize(path)
    assert _stream(path, 'qcow2') == info
    assert _stream(path, 'qcow2', size=7) == info    # header split across


def test_qcow2_with_data_converted_from_raw_accepted(tmp_path):
    raw = _raw(tmp_path / 'disk.raw', os.urandom(MIB))
    path = tmp_path / 'disk.qcow2'
    subprocess.run(['qemu-img', 'convert', '-f', 'raw', '-O', 'qcow2',
                    str(raw), str(path)], check=True, timeout=60)
    assert formats.check_file(str(path), 'qcow2').virtual_size == MIB
    assert _stream(path, 'qcow2', size=65536).virtual_size == MIB


# The host-file-read hole.

@pytest.mark.parametrize('compat', ['1.1', '0.10'])
def test_qcow2_with_a_backing_file_refused(tmp_path, compat):
    base = _raw(tmp_path / 'base.raw')
    path = _qcow2(tmp_path / 'overlay.qcow2', '1G', '-b', str(base), '-F',
                  'raw', '-o', 'compat=' + compat)
    message = _refused(path, 'qcow2')
    assert 'backing file' in message
    assert str(base) in message
    assert 'without backing file' in message
    with pytest.raises(formats.ImageFormatRefused):
        _stream(path, 'qcow2')


def test_qcow2_with_a_backing_file_declared_raw_refused(tmp_path):
    base = _raw(tmp_path / 'base.raw')
    path = _qcow2(tmp_path / 'overlay.qcow2', '1G', '-b', str(base), '-F',
                  'raw')
    assert 'found qcow2 content, expected raw' in _refused(path, 'raw')


def _with_data_file(tmp_path):
    return _qcow2(tmp_path / 'disk.qcow2', '1G', '-o',
                  'data_file=%s' % (tmp_path / 'data.raw'))


def test_qcow2_with_an_external_data_file_refused(tmp_path):
    message = _refused(_with_data_file(tmp_path), 'qcow2')
    assert 'external data file' in message
    assert 'holding its own data' in message


def test_external_data_file_feature_bit_alone_refused(tmp_path):
    path = _with_data_file(tmp_path)
    data = path.read_bytes()
    ext = data.index(struct.pack('>I', formats.EXT_DATA_FILE))
    # The extension renamed to one nobody knows (skipped by readers): the
    # incompatible feature bit alone must still refuse.
    _patch(path, ext, '>I', 0x7a7a7a7a)
    assert 'feature bit 2' in _refused(path, 'qcow2')


def test_external_data_file_extension_alone_refused(tmp_path):
    path = _with_data_file(tmp_path)
    incompat = struct.unpack_from('>Q', path.read_bytes(), 72)[0]
    _patch(path, 72, '>Q', incompat & ~formats.INCOMPAT_DATA_FILE)
    assert 'header extension 0x44415441' in _refused(path, 'qcow2')


def test_refused_while_streaming_before_the_upload_ends(tmp_path):
    base = _raw(tmp_path / 'base.raw')
    path = _qcow2(tmp_path / 'overlay.qcow2', '1G', '-b', str(base), '-F',
                  'raw')
    with open(path, 'ab') as image:
        image.write(b'\0' * 4 * MIB)
    passed = []
    inspector = formats.Inspector('qcow2')
    with pytest.raises(formats.ImageFormatRefused):
        for chunk in inspector.wrap(_chunks(path, 4096)):
            passed.append(len(chunk))
    assert sum(passed) < formats.HEADER_LIMIT


# Content that does not match the declared format.

def test_raw_declared_qcow2_refused(tmp_path):
    message = _refused(_raw(tmp_path / 'disk.raw'), 'qcow2')
    assert 'found raw content (no qcow2 header), expected qcow2' in message


def test_empty_file_declared_qcow2_refused(tmp_path):
    assert 'found raw content' in _refused(_raw(tmp_path / 'e', b''), 'qcow2')


def test_qcow2_declared_raw_refused(tmp_path):
    path = _qcow2(tmp_path / 'disk.qcow2')
    assert 'found qcow2 content, expected raw' in _refused(path, 'raw')
    with pytest.raises(formats.ImageFormatRefused):
        _stream(path, 'raw')


@pytest.mark.parametrize('fmt', ['vmdk', 'qed', 'vdi', 'vhdx', 'vpc',
                                 'parallels'])
def test_another_format_declared_raw_refused(tmp_path, fmt):
    path = tmp_path / ('disk.' + fmt)
    _qemu_img('-f', fmt, str(path), '64M')
    assert 'found %s content, expected raw' % fmt in _refused(path, 'raw')


def test_a_vmdk_descriptor_declared_raw_refused(tmp_path):
    """The classic hole: a text descriptor naming a host file as its
    extent, which a probing QEMU would read."""
    path = tmp_path / 'disk.vmdk'
    _qemu_img('-f', 'vmdk', '-o', 'subformat=monolithicFlat', str(path),
              '1M')
    assert 'found vmdk descriptor content' in _refused(path, 'raw')
    path.write_bytes(b'# Disk DescriptorFile\r\n\r\nversion=1\r\n'
                     b'RW 2048 FLAT "/etc/shadow" 0\r\n')
    assert 'found vmdk descriptor content' in _refused(path, 'raw')


def test_text_that_is_no_descriptor_is_raw(tmp_path):
    path = _raw(tmp_path / 'disk', b'# a comment\n\nversion=10\n')
    assert formats.check_file(str(path), 'raw').disk_format == 'raw'


@pytest.mark.parametrize('disk_format', ['vmdk', 'iso', 'ami', '', None])
def test_other_disk_formats_not_supported_yet(tmp_path, disk_format):
    message = _refused(_raw(tmp_path / 'disk'), disk_format)
    assert 'not supported yet' in message
    assert repr(disk_format) in message
    with pytest.raises(formats.ImageFormatRefused):
        formats.Inspector(disk_format)


# qcow2 headers this module will not vouch for.

@pytest.mark.parametrize('method', [1, 2])      # AES, LUKS
def test_encrypted_qcow2_refused(tmp_path, method):
    # The header's crypt_method, as qemu-img writes it for an encrypted
    # image (qemu-img's own LUKS set-up times its key derivation, and fails
    # with "Unable to get accurate CPU usage" on a loaded machine).
    path = _patch(_qcow2(tmp_path / 'secret.qcow2'), 32, '>I', method)
    assert 'encrypted qcow2' in _refused(path, 'qcow2')


def test_qcow2_of_an_unknown_version_refused(tmp_path):
    path = _patch(_qcow2(tmp_path / 'disk.qcow2'), 4, '>I', 4)
    assert 'qcow2 version 4' in _refused(path, 'qcow2')


def test_unknown_incompatible_feature_refused(tmp_path):
    path = _qcow2(tmp_path / 'disk.qcow2')
    incompat = struct.unpack_from('>Q', path.read_bytes(), 72)[0]
    _patch(path, 72, '>Q', incompat | 1 << 40)
    assert 'unknown incompatible features' in _refused(path, 'qcow2')


def test_header_cut_short_refused(tmp_path):
    path = _qcow2(tmp_path / 'disk.qcow2')
    path.write_bytes(path.read_bytes()[:60])
    assert 'cut short' in _refused(path, 'qcow2')


def test_header_length_beyond_the_inspected_bytes_refused(tmp_path):
    path = _patch(_qcow2(tmp_path / 'disk.qcow2', '1G', '-o',
                         'cluster_size=2M'), 100, '>I', 70000)
    assert 'header_length of 70000' in _refused(path, 'qcow2')


def test_extensions_beyond_the_inspected_bytes_refused(tmp_path):
    """A 2 MiB first cluster whose extensions would go past 64 KiB: what
    lies beyond is not inspected, so the image is refused."""
    path = _qcow2(tmp_path / 'disk.qcow2', '1G', '-o', 'cluster_size=2M')
    header_length = struct.unpack_from('>I', path.read_bytes(), 100)[0]
    _patch(path, header_length + 4, '>I', 70000)    # first extension's size
    assert 'going past byte 65536' in _refused(path, 'qcow2')


def test_a_refused_upload_leaves_nothing_in_the_store(tmp_path):
    """The upload path: the store writes what the inspector passes and
    removes it when the inspector refuses."""
    from oslo_config import cfg

    from common import conf as tconf
    from common.images import store as image_store
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    conf([])
    conf.set_override('state_dir', str(tmp_path / 'state'))
    store = image_store.ImageStore(conf)
    base = _raw(tmp_path / 'base.raw')
    bad = _qcow2(tmp_path / 'overlay.qcow2', '1G', '-b', str(base), '-F',
                 'raw')
    with pytest.raises(formats.ImageFormatRefused):
        store.add('img-1', formats.Inspector('qcow2').wrap(
            _chunks(bad, 4096)))
    assert os.listdir(tmp_path / 'state' / 'image-store') == []
    good = _qcow2(tmp_path / 'good.qcow2', '2G')
    inspector = formats.Inspector('qcow2')
    _loc, size, _md5, _sha = store.add('img-1', inspector.wrap(
        _chunks(good, 4096)))
    assert inspector.info.virtual_size == 2 * 1024 ** 3
    assert inspector.info.size == size == os.path.getsize(good)


def test_a_refusal_crosses_rpc_as_a_400_with_its_message(tmp_path):
    """The agent's check_file refusal reaches the conductor (and the
    user's fault) as an Invalid, 400, naming what was found."""
    path = _qcow2(tmp_path / 'disk.qcow2')
    with pytest.raises(formats.ImageFormatRefused) as err:
        formats.check_file(str(path), 'raw')
    rebuilt = exception.from_dict(err.value.to_dict())
    assert isinstance(rebuilt, exception.Invalid)
    assert rebuilt.code == 400
    assert rebuilt.message == str(err.value)

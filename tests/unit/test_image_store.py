"""The image store: glance_store's ``file`` store on a conf of its own,
sizes and hashes checked while streaming, nothing left behind on failure."""

import errno
import hashlib
import io
import os
import threading

from oslo_config import cfg
import pytest

from common import conf as tconf
from common.images import filewrite
from common.images import store as image_store


def _conf(state_dir, **image):
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    conf([])
    conf.set_override('state_dir', str(state_dir))
    for name, value in image.items():
        conf.set_override(name, value, group='image')
    return conf


@pytest.fixture
def store(tmp_path):
    return image_store.ImageStore(_conf(tmp_path / 'state', chunk_size=4096))


def _datadir(tmp_path):
    return tmp_path / 'state' / 'image-store'


def _chunks(data, size=1000):
    for start in range(0, len(data), size):
        yield data[start:start + size]


DATA = os.urandom(10000) + b'\0' * 5000


def test_add_then_get_round_trip_with_glance_hashes(store, tmp_path):
    loc, size, md5, sha512 = store.add('img-1', _chunks(DATA), size=len(DATA))
    assert loc == 'file://%s' % (_datadir(tmp_path) / 'img-1')
    assert size == len(DATA)
    assert md5 == hashlib.md5(DATA).hexdigest()
    assert sha512 == hashlib.sha512(DATA).hexdigest()
    chunks, got_size = store.get(loc)
    pieces = list(chunks)
    assert got_size == len(DATA)
    assert b''.join(pieces) == DATA
    # [image] chunk_size (4096 here) bounds every piece handed out.
    assert max(len(p) for p in pieces) == 4096


def test_add_without_declared_size(store):
    loc, size, _md5, sha512 = store.add('img-1', _chunks(DATA))
    assert size == len(DATA)
    assert sha512 == hashlib.sha512(DATA).hexdigest()


def test_get_with_a_smaller_chunk_size(store):
    loc, *_ = store.add('img-1', [DATA])
    chunks, _size = store.get(loc, chunk_size=1000)
    pieces = list(chunks)
    assert b''.join(pieces) == DATA
    assert max(len(p) for p in pieces) == 1000


@pytest.mark.parametrize('declared', [len(DATA) - 1, len(DATA) + 1])
def test_size_mismatch_refused_and_nothing_stored(store, tmp_path, declared):
    with pytest.raises(image_store.ImageSizeMismatch) as err:
        store.add('img-1', _chunks(DATA), size=declared)
    assert err.value.code == 400
    assert str(declared) in str(err.value)
    assert os.listdir(_datadir(tmp_path)) == []


def test_stream_past_max_image_size_refused_and_nothing_stored(tmp_path):
    store = image_store.ImageStore(
        _conf(tmp_path / 'state', max_image_size=len(DATA) - 1))
    with pytest.raises(image_store.ImageTooLarge) as err:
        store.add('img-1', _chunks(DATA))
    assert err.value.code == 413
    assert 'max_image_size' in str(err.value)
    assert os.listdir(_datadir(tmp_path)) == []


def test_declared_size_past_max_refused_before_reading(tmp_path):
    store = image_store.ImageStore(_conf(tmp_path / 'state',
                                         max_image_size=100))
    read = []

    def chunks():
        read.append(True)
        yield b'x'

    with pytest.raises(image_store.ImageTooLarge):
        store.add('img-1', chunks(), size=101)
    assert read == []


def test_interrupted_upload_leaves_nothing_and_can_be_retried(store, tmp_path):
    def broken():
        yield DATA[:5000]
        raise ConnectionError('client went away')

    with pytest.raises(ConnectionError):
        store.add('img-1', broken(), size=len(DATA))
    assert os.listdir(_datadir(tmp_path)) == []
    _loc, size, _md5, _sha = store.add('img-1', [DATA], size=len(DATA))
    assert size == len(DATA)


def test_second_add_of_the_same_image_is_a_conflict(store):
    loc, *_ = store.add('img-1', [DATA])
    with pytest.raises(image_store.ImageDataExists) as err:
        store.add('img-1', [b'other'])
    assert err.value.code == 409
    assert b''.join(store.get(loc)[0]) == DATA


def test_delete_is_idempotent_and_get_after_is_not_found(store, tmp_path):
    loc, *_ = store.add('img-1', [DATA])
    store.delete(loc)
    store.delete(loc)
    assert os.listdir(_datadir(tmp_path)) == []
    with pytest.raises(image_store.ImageDataNotFound) as err:
        store.get(loc)
    assert err.value.code == 404


def test_closing_a_download_early_closes_the_file(store):
    loc, *_ = store.add('img-1', [DATA])
    chunks, _size = store.get(loc, chunk_size=1000)
    assert len(next(chunks)) == 1000
    chunks.close()
    with pytest.raises(StopIteration):
        next(chunks)


def test_two_confs_two_stores(tmp_path):
    """Each ImageStore uses its own conf, not glance_store's global one."""
    one = image_store.ImageStore(_conf(tmp_path / 'one'))
    two = image_store.ImageStore(_conf(tmp_path / 'two'))
    loc1, *_ = one.add('img-1', [b'one'])
    loc2, *_ = two.add('img-1', [b'two'])
    assert loc1.startswith('file://%s/' % (tmp_path / 'one'))
    assert loc2.startswith('file://%s/' % (tmp_path / 'two'))
    assert b''.join(one.get(loc1)[0]) == b'one'
    assert b''.join(two.get(loc2)[0]) == b'two'


def test_operator_datadir_is_honoured(tmp_path):
    conf = _conf(tmp_path / 'state')
    image_store.ImageStore(conf)  # registers [glance_store]
    conf.set_override('filesystem_store_datadir', str(tmp_path / 'elsewhere'),
                      group='glance_store')
    loc, *_ = image_store.ImageStore(conf).add('img-1', [b'x'])
    assert loc == 'file://%s' % (tmp_path / 'elsewhere' / 'img-1')


def test_default_store_not_enabled_is_a_clear_error(tmp_path):
    conf = _conf(tmp_path / 'state')
    image_store.ImageStore(conf)
    conf.set_override('stores', ['file'], group='glance_store')
    conf.set_override('default_store', 'http', group='glance_store')
    with pytest.raises(image_store.ImageStoreError) as err:
        image_store.ImageStore(conf)
    assert 'default_store' in str(err.value)


def test_location_of_a_store_not_enabled(store):
    with pytest.raises(image_store.ImageStoreError) as err:
        store.get('rbd://fsid/pool/img/snap')
    assert "'rbd'" in str(err.value)


def test_the_operator_can_select_each_documented_store():
    """The sample config and the validator list every store Tristate
    documents (the ``tristate.glance_store`` namespace)."""
    [(group, opts)] = image_store.list_opts()
    names = {opt.dest for opt in opts}
    assert group == 'glance_store'
    assert {'stores', 'default_store', 'filesystem_store_datadir',
            'https_insecure', 'rbd_store_pool', 's3_store_bucket',
            'swift_store_container'} <= names
    datadir = next(o for o in opts if o.dest == 'filesystem_store_datadir')
    assert datadir.default == '$state_dir/image-store'


def test_add_reads_a_file_object_in_chunks(store):
    data = b'line\n' * 3000
    loc, size, _md5, _sha = store.add('img-1', io.BytesIO(data))
    assert size == len(data)
    assert b''.join(store.get(loc)[0]) == data


# --- the file store's own writer (common.images.filewrite) -------------------

def _glance_store_writes(conf):
    """Make glance_store's own ``add`` write (thin provisioning is one of
    the set-ups the two-core writer leaves to it)."""
    conf.set_override('filesystem_thin_provisioning', True,
                      group='glance_store')


@pytest.mark.parametrize('writer', ['tristate', 'glance_store'])
def test_both_writers_store_the_same_file_at_the_same_location(tmp_path,
                                                                writer):
    conf = _conf(tmp_path / 'state', chunk_size=4096)
    image_store.register_opts(conf)
    if writer == 'glance_store':
        _glance_store_writes(conf)
    store = image_store.ImageStore(conf)
    assert filewrite.handles(conf) is (writer == 'tristate')
    loc, size, md5, sha512 = store.add('img-1', _chunks(DATA), size=len(DATA))
    assert (loc, size, md5, sha512) == (
        'file://%s' % (_datadir(tmp_path) / 'img-1'), len(DATA),
        hashlib.md5(DATA).hexdigest(), hashlib.sha512(DATA).hexdigest())
    assert (_datadir(tmp_path) / 'img-1').read_bytes() == DATA


def test_file_permission_is_honoured(tmp_path):
    conf = _conf(tmp_path / 'state')
    image_store.register_opts(conf)
    conf.set_override('filesystem_store_file_perm', 640, group='glance_store')
    store = image_store.ImageStore(conf)
    store.add('img-1', _chunks(DATA), size=len(DATA))
    assert (_datadir(tmp_path) / 'img-1').stat().st_mode & 0o777 == 0o640


def test_a_failed_upload_leaves_no_hashing_thread(store, tmp_path):
    def broken():
        yield DATA[:1000]
        raise OSError(errno.ECONNRESET, 'client went away')

    before = {t.ident for t in threading.enumerate()}
    for _ in range(5):
        with pytest.raises(OSError):
            store.add('img-1', broken(), size=len(DATA))
        assert not (_datadir(tmp_path) / 'img-1').exists()
    store.add('img-1', _chunks(DATA), size=len(DATA))
    left = [t for t in threading.enumerate()
            if t.ident not in before and t.name == 'image-md5']
    assert left == []


def test_a_full_disk_is_the_store_being_full(store, monkeypatch):
    def no_space(_f, _chunk):
        raise OSError(errno.ENOSPC, 'No space left on device')

    real_copy = filewrite._copy
    monkeypatch.setattr(filewrite, '_copy', lambda chunks, f, size: real_copy(
        chunks, _Failing(f, no_space), size))
    with pytest.raises(image_store.ImageStoreError) as err:
        store.add('img-1', _chunks(DATA), size=len(DATA))
    assert 'storage full' in str(err.value)


class _Failing:
    def __init__(self, f, write):
        self._f, self._write = f, write

    def write(self, chunk):
        return self._write(self._f, chunk)

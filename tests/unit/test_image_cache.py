"""The agent's image cache (compute_agent/imagecache.py) against a Glance
stand-in over real HTTP (tests/unit/glance_stub.py): one download for many
callers, verification, crashes and corruption, eviction, its size."""

import hashlib
import os
import subprocess
import threading

import pytest

from common.images.client import GlanceClient
from compute_agent import imagecache
from compute_agent import reporter as reporter_mod
from compute_agent.imagecache import ImageCache
from compute_agent.imagecache import ImageUnusable
from compute_agent.virt import driver as virt

DATA = b'boot sector' + bytes(range(256)) * 2000       # ~500 KiB, raw


@pytest.fixture
def conf(conf):
    conf.set_override('cache_max_age', 100, group='image')
    return conf


@pytest.fixture
def client(glance):
    return GlanceClient(glance.url, timeout=10)


class Clock:
    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self):
        return self.now


def cached_files(cache):
    return sorted(os.listdir(cache.path))


def test_a_fetch_verifies_renames_and_makes_the_copy_read_only(conf, glance,
                                                               client):
    image_id = glance.add(DATA)
    cached = ImageCache(conf).fetch(image_id, client)
    assert (cached.disk_format, cached.size, cached.virtual_size) == (
        'raw', len(DATA), len(DATA))
    with open(cached.path, 'rb') as f:
        assert f.read() == DATA
    assert os.stat(cached.path).st_mode & 0o222 == 0      # read-only
    assert not [n for n in cached_files(ImageCache(conf)) if '.part-' in n]


def test_concurrent_fetches_of_one_uncached_image_download_it_once(
        conf, glance, client):
    image_id = glance.add(DATA)
    glance.hold = threading.Event()          # the download waits for us
    caches = [ImageCache(conf) for _ in range(2)]   # two agents, one dir
    results, errors = [], []

    def fetch(cache):
        try:
            results.append(cache.fetch(image_id, client))
        except Exception as err:            # reported below
            errors.append(err)

    threads = [threading.Thread(target=fetch, args=(caches[i % 2],))
               for i in range(6)]
    for thread in threads:
        thread.start()
    # every caller has asked for the image before the download moves
    deadline = threading.Event()
    for _ in range(200):
        if glance.count('GET', '/' + image_id) == 6:
            break
        deadline.wait(0.05)
    glance.hold.set()
    for thread in threads:
        thread.join(30)
    assert not errors
    assert len(results) == 6 and len({r.path for r in results}) == 1
    assert glance.count('GET', '/file') == 1


def test_a_cache_hit_downloads_nothing_and_hashes_nothing(conf, glance,
                                                          client, monkeypatch):
    image_id = glance.add(DATA)
    cache = ImageCache(conf)
    cache.fetch(image_id, client)
    hashed = []
    real = imagecache._hash_file
    monkeypatch.setattr(imagecache, '_hash_file',
                        lambda *a: hashed.append(a) or real(*a))
    for _ in range(3):
        cache.fetch(image_id, client)
    assert glance.count('GET', '/file') == 1
    assert hashed == []          # build time must not depend on image size


@pytest.mark.parametrize('how', ['rewritten', 'same size and mtime'])
def test_a_corrupted_cached_copy_is_detected_and_fetched_again(
        conf, glance, client, how):
    image_id = glance.add(DATA)
    cache = ImageCache(conf)
    path = cache.fetch(image_id, client).path
    before = os.stat(path)
    os.chmod(path, 0o644)
    with open(path, 'r+b') as f:
        f.write(b'EVIL')
    if how == 'same size and mtime':         # only ctime betrays it
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    cached = cache.fetch(image_id, client)
    with open(cached.path, 'rb') as f:
        assert f.read() == DATA
    assert glance.count('GET', '/file') == 2


def test_a_changed_but_intact_copy_is_hashed_not_fetched(conf, glance,
                                                         client):
    image_id = glance.add(DATA)
    cache = ImageCache(conf)
    path = cache.fetch(image_id, client).path
    os.chmod(path, 0o644)                    # stamp changes, content not
    cache.fetch(image_id, client)
    assert glance.count('GET', '/file') == 1
    assert os.stat(path).st_mode & 0o222 == 0


def test_an_interrupted_download_leaves_no_image_and_a_retry_works(
        conf, glance, client):
    image_id = glance.add(DATA)
    glance.cut_after = 1000
    cache = ImageCache(conf)
    with pytest.raises(virt.VirtError) as exc:
        cache.fetch(image_id, client)
    assert not isinstance(exc.value, ImageUnusable)   # not the user's fault
    assert 'transfer broken' in str(exc.value)
    assert image_id not in cache.images()
    assert not [n for n in cached_files(cache) if '.part-' in n]
    glance.cut_after = None
    assert cache.fetch(image_id, client).size == len(DATA)


def test_a_crash_leftover_is_removed_when_a_cache_starts(conf, glance):
    cache = ImageCache(conf)
    left = os.path.join(cache.path, 'abc.part-dead')
    with open(left, 'wb') as f:
        f.write(b'half an image')
    ImageCache(conf)
    assert not os.path.exists(left)


def test_a_download_under_way_is_not_taken_for_a_leftover(conf, glance,
                                                          client):
    image_id = glance.add(DATA)
    glance.hold = threading.Event()
    cache = ImageCache(conf)
    done = []
    thread = threading.Thread(
        target=lambda: done.append(cache.fetch(image_id, client)))
    thread.start()
    for _ in range(200):
        if any('.part-' in n for n in cached_files(cache)):
            break
        threading.Event().wait(0.05)
    ImageCache(conf)                         # another agent starts
    glance.hold.set()
    thread.join(30)
    assert done and done[0].size == len(DATA)


def test_a_hash_mismatch_is_refused_as_the_users_fault(conf, glance,
                                                       client):
    image_id = glance.add(DATA)
    glance.images[image_id]['meta']['os_hash_value'] = (
        hashlib.sha512(b'other').hexdigest())
    cache = ImageCache(conf)
    with pytest.raises(ImageUnusable, match='does not match') as exc:
        cache.fetch(image_id, client)
    assert exc.value.fault_code == 400 and exc.value.rolled_back
    assert cached_files(cache) == ['%s.lock' % image_id]


@pytest.mark.parametrize('status', ['queued', 'saving', 'killed', 'deleted',
                                    'deactivated'])
def test_an_image_that_is_not_active_is_refused(conf, glance, client,
                                                status):
    image_id = glance.add(DATA, status=status)
    with pytest.raises(ImageUnusable, match='is %s, not active' % status):
        ImageCache(conf).fetch(image_id, client)
    assert glance.count('GET', '/file') == 0


def test_a_missing_image_is_refused_a_refused_grant_fails(conf, glance,
                                                         client):
    with pytest.raises(ImageUnusable, match='not found'):
        ImageCache(conf).fetch('9' * 8 + '-0000-0000-0000-' + '0' * 12,
                               client)
    image_id = glance.add(DATA)
    glance.grant = 'other'          # a refused grant: not the user's fault
    with pytest.raises(virt.VirtError, match='forbidden') as exc:
        ImageCache(conf).fetch(image_id, client)
    assert not isinstance(exc.value, ImageUnusable)
    with pytest.raises(ImageUnusable, match='invalid image id'):
        ImageCache(conf).fetch('../etc', client)


def test_content_that_is_not_its_disk_format_is_refused(conf, glance,
                                                        client, tmp_path):
    """A qcow2 that declares a backing file (a host-file-read hole), even
    when its hash matches: formats.check_file before use."""
    base = tmp_path / 'base'
    base.write_bytes(b'\0' * 65536)
    evil = tmp_path / 'evil.qcow2'
    subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', '-F', 'raw',
                    '-b', str(base), str(evil)], check=True)
    image_id = glance.add(evil.read_bytes(), disk_format='qcow2')
    cache = ImageCache(conf)
    with pytest.raises(ImageUnusable, match='refused'):
        cache.fetch(image_id, client)
    assert image_id not in cache.images()


def test_eviction_never_removes_a_base_in_use(conf, glance, client):
    clock = Clock()
    in_use = set()
    cache = ImageCache(conf, in_use=lambda: in_use, clock=clock)
    disk, idle, held = (glance.add(DATA + b'%d' % i) for i in range(3))
    for image_id in (disk, idle, held):
        cache.fetch(image_id, client)
    in_use.add(cache.fetch(disk, client).path)    # a disk is built on it
    clock.now += 99
    assert cache.clean() == []                    # not old enough yet
    with cache.use(held, client):                 # a task holds it
        clock.now += 200
        assert cache.clean() == [idle]
    # used until the task let it go: kept until it ages from then
    assert cache.clean() == []
    clock.now += 101
    assert cache.clean() == [held]
    assert cache.images() == [disk]               # the disk still uses it
    in_use.clear()              # the disk is gone: its age counts from now
    assert cache.clean() == []
    clock.now += 101
    assert cache.clean() == [disk]
    assert cache.images() == [] and cached_files(cache) == []


def test_max_age_zero_never_removes(conf, glance, client):
    conf.set_override('cache_max_age', 0, group='image')
    clock = Clock()
    cache = ImageCache(conf, clock=clock)
    cache.fetch(glance.add(DATA), client)
    clock.now += 10 ** 9
    assert cache.clean() == [] and len(cache.images()) == 1


def test_the_cache_is_counted_in_the_disk_the_host_reports(conf, glance,
                                                           client):
    cache = ImageCache(conf)
    assert cache.used_bytes() == 0
    data = os.urandom(3 * 1024 * 1024)
    cache.fetch(glance.add(data), client)
    assert cache.used_bytes() >= len(data)
    sent = []

    class Conductor:
        def heartbeat(self, ctx, **kwargs):
            sent.append(kwargs['capacity'])

    class Journal:
        def lost(self):
            return []

    class Driver:
        def get_capacity(self):
            return virt.Capacity(vcpus=4, memory_mb=4096, disk_gb=100)

    reporter = reporter_mod.Reporter(
        host='h1', driver=Driver(), conductor=Conductor(), conf=conf,
        journal=Journal(), image_cache=cache)
    assert reporter.heartbeat()
    assert sent[-1]['disk_gb'] == 99          # 3 MiB cached: 1 GiB taken


def test_a_snapshot_scratch_file_is_removed_after_use(conf):
    cache = ImageCache(conf)
    with cache.scratch_file('img-1') as path:
        ImageCache(conf)                      # a starting cache leaves it
        assert os.path.exists(path)
    assert cached_files(cache) == []


def test_the_agent_runs_the_cache_pass_every_check_interval(conf):
    """The reporter's periodic pass: at start, then every
    [image] cache_check_interval (1 s here, its minimum)."""
    conf.set_override('cache_check_interval', 1, group='image')
    passes = threading.Semaphore(0)

    class Cache:
        def clean(self):
            passes.release()

        def used_bytes(self):
            return 0

    class Conductor:
        def carries_power(self):
            return True

        def heartbeat(self, ctx, **kwargs):
            return None

    class Driver:
        def get_capacity(self):
            return virt.Capacity(vcpus=1, memory_mb=1, disk_gb=1)

        def list_domains(self):
            return []

        def watch(self, callback):
            pass

    class Journal:
        def lost(self):
            return []

    conf.set_override('heartbeat_interval', 600, group='compute')
    reporter = reporter_mod.Reporter(
        host='h1', driver=Driver(), conductor=Conductor(), conf=conf,
        journal=Journal(), image_cache=Cache())
    reporter.start()
    try:
        assert passes.acquire(timeout=10)       # at start
        assert passes.acquire(timeout=10)       # and again
    finally:
        reporter.stop()


# --- the image service down ---------------------------------------------------

@pytest.mark.parametrize('how', ['stopped', 'answers 503'])
def test_a_cached_image_builds_while_the_image_service_is_down(conf, glance,
                                                               client, how):
    image_id = glance.add(DATA)
    cache = ImageCache(conf)
    first = cache.fetch(image_id, client)
    if how == 'stopped':
        glance.stop()
        client = GlanceClient(glance.url, timeout=10)   # no kept connection
    else:
        glance.fail[('GET', '/v2/images/' + image_id)] = 503
    with cache.use(image_id, client) as cached:
        assert (cached.path, cached.size, cached.disk_format) == (
            first.path, len(DATA), 'raw')


def test_without_the_image_service_an_uncached_or_changed_copy_fails(
        conf, glance, client):
    cached_id, other_id = glance.add(DATA), glance.add(DATA + b'x')
    cache = ImageCache(conf)
    path = cache.fetch(cached_id, client).path
    glance.stop()
    client = GlanceClient(glance.url, timeout=10)       # no kept connection
    with pytest.raises(imagecache.ImageServiceUnreachable) as err:
        cache.fetch(other_id, client)        # never fetched here
    assert other_id in str(err.value)
    assert not isinstance(err.value, ImageUnusable)      # not the user's
    os.chmod(path, 0o644)                    # changed since it was verified
    with pytest.raises(imagecache.ImageServiceUnreachable):
        cache.fetch(cached_id, client)


def test_a_refused_grant_is_not_taken_for_an_outage(conf, glance, client):
    image_id = glance.add(DATA)
    cache = ImageCache(conf)
    cache.fetch(image_id, client)
    glance.grant = 'another'             # 403: the cache is not used
    with pytest.raises(virt.VirtError) as err:
        cache.fetch(image_id, client)
    assert not isinstance(err.value, imagecache.ImageServiceUnreachable)

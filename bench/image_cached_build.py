"""Builds from a cached image, on the libvirt driver: the time does not
depend on the image's size, and a cache hit copies nothing.

Target (issue 21): the time to build from a cached image is independent of
the image size (10 MB and 1 GB images; a cache hit copies nothing). An
embedded plane with its REST API and one agent on :class:`LibvirtDriver`
with libvirt's test driver (``test:///NODE.xml``, no daemon) and the real
``qemu-img``: the agent fetches each image by id from the plane's image
API (``/image``) with the conductor's grant into its cache, and builds the
disk as a qcow2 overlay on the cached file, as on a real host. Two raw
images of ``--small`` and ``--big`` MiB are uploaded through the image API
(random bytes); then, per image, a first build (POST /v2.1/servers until
ACTIVE: download, sha512 verification, overlay) and ``--builds`` builds
from the cached image, the sizes alternating build by build. Every round
(``--rounds``) is a fresh plane with an empty cache.

Held to the target: the median cache-hit build of the big image over that
of the small one, ≤ 1.2 (a copy of the big image would make it several
times slower: reading and writing 1 GiB takes seconds, a build tens of
milliseconds). The proof that a hit copies nothing, checked on every
build: the disk's backing file is the cached base (``qemu-img info``), the
cached base is the same file (inode, mtime) as after the first build, and
the bytes on disk under the instance's directory, whose largest is
printed (target ≤ 1 MiB: a qcow2 overlay's metadata).
"""

import json
import os
import shutil
import subprocess
import time

import requests

from bench import core
from bench import imagedata
from bench import plane as plane_mod

NAME = 'image_cached_build'
TINY = ['--small', '1', '--big', '2', '--builds', '2', '--rounds', '1']
HOST = 'lv1'
FLAVOR = 'imgbench'
RATIO = 1.2
OVERLAY_MAX = 1024 * 1024
NODE = """<node>
  <cpu><mhz>2000</mhz><model>x86_64</model><active>64</active><max>64</max>
  <nodes>1</nodes><sockets>1</sockets><cores>32</cores><threads>2</threads></cpu>
  <memory>268435456</memory>
</node>
"""


def add_arguments(parser):
    parser.add_argument('--small', type=core.positive_int, default=10,
                        help='MiB of the small image (default 10)')
    parser.add_argument('--big', type=core.positive_int, default=1024,
                        help='MiB of the big image (default 1024)')
    parser.add_argument('--builds', type=core.positive_int, default=10,
                        help='builds from the cached image, per image and '
                             'round (default 10)')
    core.add_rounds(parser, default=3)


def _start_agent(plane):
    from compute_agent.virt.libvirt import LibvirtDriver
    node = os.path.join(plane.tmp, 'node.xml')
    with open(node, 'w') as f:
        f.write(NODE)
    drv = LibvirtDriver(uri='test://%s' % node, virt_type='kvm',
                        instances_path=os.path.join(plane.tmp, 'instances'),
                        event_debounce=0.05, shutdown_timeout=2)
    drv.init_host(HOST)
    plane.embedded.start_agent(HOST, driver=drv)
    core.wait_for(lambda: any(h['name'] == HOST and h['last_heartbeat']
                              for h in plane.statedb.list_hosts()),
                  timeout=30, what='a heartbeat of %s' % HOST)
    return drv


def upload(plane, path, name):
    """The id of a new raw image with ``path``'s bytes, uploaded through
    the plane's image API as a user does."""
    base = 'http://%s:%d/image/v2/images' % (plane.api.host, plane.api.port)
    headers = {'X-Auth-Token': plane_mod.TOKEN}
    made = requests.post(base, headers=headers, timeout=60, json={
        'name': name, 'disk_format': 'raw', 'container_format': 'bare'})
    made.raise_for_status()
    image_id = made.json()['id']
    try:
        with open(path, 'rb') as f:
            put = requests.put('%s/%s/file' % (base, image_id), data=f,
                               timeout=600, headers=dict(
                                   headers, **{'Content-Type':
                                               'application/octet-stream'}))
    except requests.ConnectionError as err:
        # The API answered before it read the body (and closed): say what
        # became of the image.
        seen = requests.get('%s/%s' % (base, image_id), headers=headers,
                            timeout=60)
        raise RuntimeError('upload of %s cut (%s); the image is now: %s %s'
                           % (path, err, seen.status_code,
                              seen.text[:300])) from None
    put.raise_for_status()
    return image_id


def _disk_bytes(path):
    """Bytes allocated on disk under ``path``."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def _backing(disk):
    info = json.loads(subprocess.run(
        ['qemu-img', 'info', '--output=json', disk], check=True,
        capture_output=True, text=True).stdout)
    return info.get('backing-filename')


class Round:
    """One plane, two images, their first builds and cache hits."""

    def __init__(self, plane, sources):
        self.plane = plane
        self.cache = plane.conf.image.cache_path
        self.instances = os.path.join(plane.tmp, 'instances')
        self.images = {size: upload(plane, path, 'bench-%d' % size)
                       for size, path in sources.items()}
        self.bases = {}
        self.first = {}
        self.hits = {size: [] for size in sources}
        self.overlay = {size: [] for size in sources}

    def build(self, size, tag):
        """Seconds from POST to ACTIVE of one server on the image of
        ``size``, and its uuid. A connection of its own: a kept-alive one
        would be closed by the API while a big image is fetched (cheroot
        drops connections idle for 10 s)."""
        http = self.plane.http()
        try:
            started = time.monotonic()
            status, body = http.request('POST', '/servers', {'server': {
                'name': tag, 'flavorRef': FLAVOR,
                'imageRef': self.images[size]}})
        finally:
            http.close()
        if status != 202:
            raise RuntimeError('POST /servers answered %d: %s'
                               % (status, body))
        uuid = body['server']['id']
        self.plane.wait_vm_state(uuid, 'active', timeout=600)
        return time.monotonic() - started, uuid

    def _base(self, size):
        path = os.path.join(self.cache, self.images[size])
        st = os.stat(path)
        return path, (st.st_ino, st.st_mtime_ns, st.st_size)

    def first_builds(self):
        for size in self.images:
            self.first[size], _uuid = self.build(size, 'first-%d' % size)
            self.bases[size] = self._base(size)

    def cache_hit(self, size, n):
        seconds, uuid = self.build(size, 'hit-%d-%d' % (size, n))
        path, stamp = self.bases[size]
        if self._base(size) != (path, stamp):
            raise RuntimeError('the cached image %s changed during a cache '
                               'hit (fetched again?)' % path)
        disk = os.path.join(self.instances, uuid, 'disk')
        if _backing(disk) != path:
            raise RuntimeError('the disk %s is not an overlay on the cached '
                               'image %s' % (disk, path))
        self.hits[size].append(seconds)
        self.overlay[size].append(_disk_bytes(os.path.dirname(disk)))


def one_round(args, sources):
    sizes = sorted(sources)
    disk_gb = -(-max(sizes) // 1024)       # the big image fits the flavor
    with plane_mod.Plane(hosts=0, conductor={
            'flavors': ['%s:1:64:%d' % (FLAVOR, disk_gb)]}) as plane:
        _start_agent(plane)
        rnd = Round(plane, sources)
        rnd.first_builds()
        for n in range(args.builds):
            for size in (sizes if n % 2 == 0 else sizes[::-1]):
                rnd.cache_hit(size, n)
        cached = _disk_bytes(rnd.cache)
    return rnd, cached


def run(args):
    if args.big <= args.small:
        raise SystemExit('--big (%d MiB) must be larger than --small (%d MiB)'
                         % (args.big, args.small))
    if shutil.which('qemu-img') is None:
        raise SystemExit('qemu-img is needed (apt-get install qemu-utils)')
    import libvirt
    libvirt.registerErrorHandler(lambda *a: None, None)
    sizes = [args.small, args.big]
    first = {size: [] for size in sizes}
    hits = {size: [] for size in sizes}
    overlay = {size: [] for size in sizes}
    cached = []
    with imagedata.source_files(sizes) as sources:
        for _ in range(args.rounds):
            rnd, cache_bytes = one_round(args, sources)
            cached.append(cache_bytes / (sum(sizes) * imagedata.MIB))
            for size in sizes:
                first[size].append(rnd.first[size])
                hits[size].extend(rnd.hits[size])
                overlay[size].extend(rnd.overlay[size])
    return _figures(args, sizes, first, hits, overlay) + [core.Figure(
        NAME, 'image cache on disk after every build / the images\' size',
        core.median(cached), 'x', size='%d and %d MiB' % tuple(sizes),
        note='one copy of each image: ' + core.rounds_note(cached, '%.3f'))]


def _figures(args, sizes, first, hits, overlay):
    figures = []
    per = '%d builds per image and round, %d rounds, libvirt test driver' % (
        args.builds, args.rounds)
    for size in sizes:
        figures.append(core.Figure(
            NAME, 'first build (download + verify), %d MiB image' % size,
            core.median(first[size]) * 1e3, 'ms', size='%d MiB' % size,
            note=core.rounds_note([s * 1e3 for s in first[size]])))
        figures.append(core.Figure(
            NAME, 'build from the cached image, %d MiB image, median' % size,
            core.median(hits[size]) * 1e3, 'ms', size=per,
            note='p90 %.1f ms' % (core.percentile(hits[size], 90) * 1e3)))
        figures.append(core.Figure(
            NAME, 'bytes on disk under a cache-hit build\'s instance dir, '
            'max, %d MiB image' % size, max(overlay[size]) / 1024.0, 'KiB',
            '<=', OVERLAY_MAX / 1024, size=per,
            note='the disk is a qcow2 overlay on the cached base (checked '
                 'on every build)'))
    small, big = sizes
    figures.append(core.Figure(
        NAME, 'cache-hit build, %d MiB / %d MiB image' % (big, small),
        core.median(hits[big]) / core.median(hits[small]), 'x', '<=', RATIO,
        size=per, note='ratio of the median build times'))
    return figures

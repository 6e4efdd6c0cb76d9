"""Image upload and download through the image API, over HTTP on 127.0.0.1.

Targets (issue 21): upload and download at ≥ 200 MB/s (page cache to page
cache), memory flat whatever the image's size. ``tristate-api`` runs as
its own process (cheroot, the image API under ``/image`` as it serves it;
SQLite, the ``file`` image store, both under a scratch directory that is
in memory, ``/dev/shm``, when it has room). Each transfer is made by a
client process of its own with the agents' Glance client
(:class:`common.images.client.GlanceClient`) and the grant the conductor
would give an agent (``X-Tristate-Image-Grant``): an upload streams a
file of random bytes, read once before so that it is in the page cache,
with its Content-Length (as a snapshot's upload does); a download streams
the image into a file in the same scratch directory. Sizes: ``--small``
and ``--big`` MiB (10 and 1,024); the rate is bytes / the seconds the
client's call took (MB = 10^6 bytes), the median over ``--rounds``,
which alternate which size goes first.

Memory: the peak RSS (``VmHWM``) of the API process during each
transfer (its peak is reset just before, :func:`bench.imagedata.
reset_peak`) and of the client process (a fresh one per transfer). Flat
means no term that grows with the image: the target held is the peak at
``--big`` over the peak at ``--small``, ≤ 1.1 (the image is 100× bigger).
The CPU seconds per GB moved of either process are printed too: on a
shared machine the rate is the share of the cores a transfer gets, and
1 / CPU per GB is the rate the process would reach with a core of its
own.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import psutil
import requests

from bench import core
from api.image import access
from bench import imagedata
from common.db import api as db_api
from common.db import engine
from common.db import images as images_db
from common.db import migration
from common.images import grants

NAME = 'image_transfer'
TINY = ['--small', '1', '--big', '2', '--rounds', '1']
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = 'bench:bench'
MB = 1e6
FLAT = 1.1
# The name of the key the image API checks agents' grants with.
GRANT_KEY = access.GRANT_KEY


def add_arguments(parser):
    parser.add_argument('--small', type=core.positive_int, default=10,
                        help='MiB of the small image (default 10)')
    parser.add_argument('--big', type=core.positive_int, default=1024,
                        help='MiB of the big image (default 1024)')
    core.add_rounds(parser, default=3)


# --- the client process ---------------------------------------------------------

def client_main(argv):
    """``upload|download URL IMAGE_ID GRANT PATH``: one transfer with the
    agents' client; prints ``{"seconds", "bytes", "cpu", "peak_rss_mb"}`` (``cpu``: the
    process's CPU seconds during the call)."""
    from common.images import client as client_mod
    op, url, image_id, grant, path = argv
    client = client_mod.GlanceClient(url, grant=grant)
    started, cpu = time.perf_counter(), time.process_time()
    if op == 'upload':
        size = os.path.getsize(path)
        with open(path, 'rb') as f:
            client.upload(image_id, f, size=size)
    else:
        size = 0
        chunks, _headers = client.download(image_id)
        with open(path, 'wb') as f:
            for chunk in chunks:
                f.write(chunk)
                size += len(chunk)
    seconds = time.perf_counter() - started
    print(json.dumps({'seconds': seconds, 'bytes': size,
                      'cpu': time.process_time() - cpu,
                      'peak_rss_mb': imagedata.peak_rss_mb()}))
    return 0


def _env():
    """The environment of the processes started here: this tree first."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [ROOT] + [p for p in [os.environ.get('PYTHONPATH')] if p]))


def _client(op, url, image_id, grant, path):
    code = ('import sys; from bench.image_transfer import client_main; '
            'sys.exit(client_main(sys.argv[1:]))')
    proc = subprocess.run(
        [sys.executable, '-c', code, op, url, image_id, grant, path],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        env=_env())
    if proc.returncode != 0:
        raise RuntimeError('%s client failed (%d): %s' % (
            op, proc.returncode, proc.stderr.strip()[-1500:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- the API process ------------------------------------------------------------

def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class ApiProcess:
    """``tristate-api`` on SQLite with its image store under ``path``."""

    def __init__(self, path):
        self.path = path
        self.port = _free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.db_url = 'sqlite:///%s' % os.path.join(path, 'api.sqlite')
        database = engine.Database(self.db_url)
        migration.upgrade(database)
        self.statedb = db_api.StateDB(database)
        self.key = images_db.service_key(self.statedb, GRANT_KEY)
        self.proc = None

    def start(self):
        conf = os.path.join(self.path, 'api.conf')
        with open(conf, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = inproc://\nstate_dir = %s\n'
                    'log_file = %s\n[database]\nconnection = %s\n'
                    '[api]\nlisten = 127.0.0.1\nport = %d\n'
                    'auth_strategy = noauth\n'
                    % (self.path, os.path.join(self.path, 'api.log'),
                       self.db_url, self.port))
        code = 'import sys; from api.cmd.api import main; sys.exit(main())'
        with open(os.path.join(self.path, 'api.err'), 'wb') as err:
            self.proc = subprocess.Popen(
                [sys.executable, '-c', code, '--config-file', conf], cwd=ROOT,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=err,
                env=_env())
        core.wait_for(self._answers, timeout=60, interval=0.05,
                      what='tristate-api to answer')
        self.ps = psutil.Process(self.proc.pid)
        return self

    def _answers(self):
        if self.proc.poll() is not None:
            with open(os.path.join(self.path, 'api.err')) as f:
                raise RuntimeError('tristate-api exited with %s: %s' % (
                    self.proc.returncode, f.read()[-1500:]))
        try:
            return requests.get(self.url + '/image/', timeout=5).ok
        except requests.RequestException:
            return False

    def request(self, method, path, **kwargs):
        resp = requests.request(method, self.url + '/image/v2' + path,
                                headers={'X-Auth-Token': TOKEN}, timeout=60,
                                **kwargs)
        if resp.status_code >= 400:
            raise RuntimeError('%s %s answered %d: %s' % (
                method, path, resp.status_code, resp.text[:500]))
        return resp.json() if resp.content else None

    def grant(self, image_id, op):
        return grants.issue(self.key, image_id=image_id, host='bench', op=op,
                            ttl=3600)

    def cpu_seconds(self):
        times = self.ps.cpu_times()
        return times.user + times.system

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.statedb.db.dispose()


# --- one transfer each way ---------------------------------------------------------

def _transfer(api, op, image_id, path):
    """(client's answer, API peak RSS MiB, API CPU seconds) of one
    transfer."""
    imagedata.reset_peak(api.proc.pid)
    cpu = api.cpu_seconds()
    seen = _client(op, api.url + '/image', image_id,
                   api.grant(image_id, 'read' if op == 'download' else 'write'),
                   path)
    return seen, imagedata.peak_rss_mb(api.proc.pid), api.cpu_seconds() - cpu


def one_image(api, source, size, scratch):
    """Upload ``source`` as a new image, download it, delete it: a dict of
    what each way measured."""
    image = api.request('POST', '/images', json={
        'name': 'bench-%d' % size, 'disk_format': 'raw',
        'container_format': 'bare'})
    out = {}
    try:
        up, out['api_up'], out['cpu_up'] = _transfer(api, 'upload',
                                                     image['id'], source)
        stored = api.request('GET', '/images/%s' % image['id'])
        if stored['status'] != 'active' or stored['size'] != size:
            raise RuntimeError('image %s is %s with %s bytes after the upload '
                               'of %d' % (image['id'], stored['status'],
                                          stored['size'], size))
        target = os.path.join(scratch, 'down-%s' % image['id'])
        try:
            down, out['api_down'], out['cpu_down'] = _transfer(
                api, 'download', image['id'], target)
        finally:
            if os.path.exists(target):
                os.unlink(target)
        if down['bytes'] != size:
            raise RuntimeError('%d bytes downloaded of %d' % (down['bytes'],
                                                              size))
    finally:
        api.request('DELETE', '/images/%s' % image['id'])
    out.update(up=size / up['seconds'] / MB, down=size / down['seconds'] / MB,
               client_up=up['peak_rss_mb'], client_down=down['peak_rss_mb'],
               cpu_client_up=up['cpu'], cpu_client_down=down['cpu'])
    return out


def measure(args):
    """{size MiB: [one_image() per round]}, the API's idle RSS (MiB),
    and where its store and the files were."""
    sizes = [args.small, args.big]
    seen = {size: [] for size in sizes}
    with imagedata.source_files(sizes) as sources:
        scratch = imagedata.scratch_dir(args.big * imagedata.MIB * 2)
        api = None
        try:
            api = ApiProcess(scratch)
            api.start()
            idle = api.ps.memory_info().rss / 2 ** 20
            for round_no in range(args.rounds):
                for size in (sizes if round_no % 2 == 0 else sizes[::-1]):
                    seen[size].append(one_image(
                        api, sources[size], size * imagedata.MIB, scratch))
        finally:
            if api is not None:
                api.stop()
            shutil.rmtree(scratch, ignore_errors=True)
    return seen, idle, os.path.dirname(scratch)


def _median(rounds, key):
    values = [r[key] for r in rounds]
    return core.median(values), core.rounds_note(values, '%.1f')


def _rates(seen, sizes, where):
    figures = []
    for size in sizes:
        for way, key in (('upload', 'up'), ('download', 'down')):
            value, note = _median(seen[size], key)
            figures.append(core.Figure(
                NAME, '%s, %d MiB image' % (way, size), value, 'MB/s', '>=',
                200, size='%d MiB, over HTTP on 127.0.0.1, files and store in '
                '%s' % (size, where), note=note))
    return figures


def _memory(seen, sizes, idle):
    figures = []
    peaks = {}
    for who, keys in (('API process', ('api_up', 'api_down')),
                      ('client process', ('client_up', 'client_down'))):
        for size in sizes:
            per_round = [max(r[k] for k in keys) for r in seen[size]]
            peaks[who, size] = core.median(per_round)
            note = core.rounds_note(per_round, '%.1f')
            if who == 'API process':
                note += '; idle before the transfers %.1f MiB' % idle
            figures.append(core.Figure(
                NAME, '%s peak RSS, %d MiB image' % (who, size),
                peaks[who, size], 'MiB', size='%d MiB, upload and download'
                % size, note=note))
        small, big = sizes
        figures.append(core.Figure(
            NAME, '%s peak RSS, %d MiB / %d MiB image' % (who, big, small),
            peaks[who, big] / peaks[who, small], 'x', '<=', FLAT,
            size='%d and %d MiB, %d rounds' % (small, big,
                                              len(seen[small])),
            note='memory flat: no term growing with the image'))
    return figures


def _cpu(seen, sizes):
    figures = []
    big = sizes[-1]
    for who, way, key in (('API', 'upload', 'cpu_up'),
                          ('API', 'download', 'cpu_down'),
                          ('client', 'upload', 'cpu_client_up'),
                          ('client', 'download', 'cpu_client_down')):
        per_gb = [r[key] / (big * imagedata.MIB / 1e9) for r in seen[big]]
        figures.append(core.Figure(
            NAME, '%s process CPU per GB, %s' % (who, way),
            core.median(per_gb),
            's/GB', size='%d MiB' % big,
            note=core.rounds_note(per_gb, '%.2f')))
    return figures


def run(args):
    if args.big <= args.small:
        raise SystemExit('--big (%d MiB) must be larger than --small (%d MiB)'
                         % (args.big, args.small))
    sizes = [args.small, args.big]
    seen, idle, where = measure(args)
    return _rates(seen, sizes, where) + _memory(seen, sizes, idle) + _cpu(seen, sizes)

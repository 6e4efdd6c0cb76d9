"""The embedded control plane (``tristate-all``'s) with its REST API, as the
scenarios use it, and a small HTTP client for the API.

Each plane gets RPC topics of its own (kombu's in-memory bus is global to
the process, as in tests/functional/conftest.py) and a state directory
under a temporary directory removed when the plane stops. The fake
hypervisor's hosts get room for thousands of tiny instances, so that a
burst measures the plane, not the scheduler saying no.
"""

import contextlib
import http.client
import json
import logging
import shutil
import tempfile
import threading
import time
import uuid as uuidlib

from oslo_config import cfg

from bench import core
from bench import imagedata
from common import conf as tconf
from common import context
from common import rpc
from common import service
from common.states import vm
from conductor import embedded

MEMORY_URL = embedded.MEMORY_URL
FLAVOR = 'tiny'
# Every plane's catalogue holds it (bench.imagedata.register_image).
IMAGE = imagedata.IMAGE
# The owner of every instance the scenarios make through the API (noauth).
TOKEN = 'bench:bench'


def quiet_logs():
    logging.basicConfig(level=logging.WARNING)
    for name in ('oslo_messaging', 'kombu', 'amqp', 'cheroot', 'werkzeug',
                 'api', 'conductor', 'compute_agent', 'common'):
        logging.getLogger(name).setLevel(logging.ERROR)


def new_conf(state_dir, **groups):
    """A private configuration: defaults of a real deployment, but topics
    of its own and roomy fake hosts; ``groups`` overrides (group -> dict,
    ``None`` for DEFAULT)."""
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    rpc.register_opts(conf)
    conf([], project='tristate', default_config_files=[])
    suffix = uuidlib.uuid4().hex[:12]
    values = {
        None: {'state_dir': str(state_dir)},
        'conductor': {'topic': 'bench-conductor-%s' % suffix},
        'compute': {'topic': 'bench-compute-%s' % suffix},
        'fake_driver': {'vcpus': 4096, 'memory_mb': 4 * 1024 * 1024,
                        'disk_gb': 100000},
    }
    for group, opts in groups.items():
        values.setdefault(group, {}).update(opts)
    for group, opts in values.items():
        for name, value in opts.items():
            conf.set_override(name, value, group=group)
    return conf


# The network of a plane made with ``network=True``: a /16, room for any
# burst.
NETWORK = 'bench-net'


class Plane:
    """An embedded plane with ``hosts`` agents and, with ``api=True``, its
    REST API on a free port of 127.0.0.1. A context manager."""

    def __init__(self, *, hosts=4, api=True, periodic_jobs=True,
                 network=False, **groups):
        self.tmp = tempfile.mkdtemp(prefix='tristate-bench-')
        if network:     # every build gets a port on it (issue 23)
            groups.setdefault('network', {})['default_network'] = NETWORK
        self.network = network
        self.conf = new_conf(self.tmp, **groups)
        self.hosts = hosts
        self.want_api = api
        self.periodic_jobs = periodic_jobs
        self.embedded = None
        self.api = None
        self.ctx = context.RequestContext(user_id='bench', project_id='bench')

    def __enter__(self):
        quiet_logs()
        self.embedded = embedded.Embedded(
            self.conf, hosts=self.hosts, url=MEMORY_URL,
            periodic_jobs=self.periodic_jobs).start()
        quiet_logs()
        core.wait_for(lambda: len(self.statedb.list_hosts()) >= self.hosts,
                      timeout=60, what='a heartbeat of every agent',
                      interval=0.01)
        imagedata.register_image(self.conf, self.statedb)
        if self.network:
            self.statedb.create_network(
                {'name': NETWORK, 'cidr': '10.128.0.0/16',
                 'bridge': 'br-bench'}, network_id=NETWORK)
        if self.want_api:
            from api import service as api_service
            self.api = api_service.serve_embedded(self.conf, self.embedded,
                                                  port=0)
        # as tristate-all does once it has started (common.service)
        service.freeze_startup_objects()
        return self

    def __exit__(self, *exc):
        service.thaw()
        try:
            if self.api is not None:
                self.api.stop()
            if self.embedded is not None:
                self.embedded.stop()
                self.statedb.db.dispose()
        finally:
            self.conf.reset()
            shutil.rmtree(self.tmp, ignore_errors=True)

    @property
    def statedb(self):
        return self.embedded.statedb

    @property
    def client(self):
        return self.embedded.client

    def http(self):
        return Http(self.api.host, self.api.port)

    # --- waiting on the database (cheaper than polling the API) --------------

    def wait_vm_state(self, uuid, wanted, *, timeout=30.0, interval=0.001):
        def reached():
            inst = self.statedb.get_instance(uuid)
            if inst['vm_state'] == vm.ERROR:
                raise RuntimeError('instance %s went to error' % uuid)
            return inst['vm_state'] == wanted and inst['task_id'] is None
        core.wait_for(reached, timeout=timeout, interval=interval,
                      what='instance %s to be %s' % (uuid, wanted))

    def wait_all_active(self, uuids, *, timeout):
        """Until every instance of ``uuids`` is ACTIVE with no task. One
        COUNT query every 10 ms (reading every row instead would load the
        plane more, the more instances it has): the scenarios that call
        this run on a database that holds only their own instances."""
        import sqlalchemy as sa

        from common.db import api as db_api
        table = db_api.I
        query = sa.select(
            sa.func.count().filter(sa.and_(table.c.vm_state == vm.ACTIVE,
                                           table.c.task_id.is_(None))),
            sa.func.count().filter(table.c.vm_state == vm.ERROR))
        wanted = len(set(uuids))

        def done():
            active, errors = self.statedb.db.transaction(
                lambda conn: conn.execute(query).one(), readonly=True)
            if errors:
                raise RuntimeError('%d instance(s) went to error' % errors)
            return active >= wanted
        core.wait_for(done, timeout=timeout, interval=0.01,
                      what='%d instances to be ACTIVE' % wanted)

    def build_direct(self, count, *, timeout=120.0):
        """``count`` ACTIVE instances made through the conductor client (no
        HTTP): the set-up of scenarios that measure something else."""
        uuids = [self.client.create_instance(
            self.ctx, name='pre%d' % i, flavor=FLAVOR,
            image_ref=IMAGE)['uuid'] for i in range(count)]
        self.wait_all_active(uuids, timeout=timeout)
        return uuids


class Http:
    """One keep-alive connection to the API, as user ``bench``."""

    def __init__(self, host, port):
        self.conn = http.client.HTTPConnection(host, port, timeout=60)
        self.headers = {'Content-Type': 'application/json',
                        'Accept': 'application/json',
                        'X-Auth-Token': TOKEN}

    def request(self, method, path, body=None):
        """(status, parsed body or None)."""
        data = None if body is None else json.dumps(body)
        self.conn.request(method, '/v2.1' + path, body=data,
                          headers=self.headers)
        resp = self.conn.getresponse()
        raw = resp.read()
        return resp.status, (json.loads(raw) if raw else None)

    def create(self, name):
        status, body = self.request('POST', '/servers', {'server': {
            'name': name, 'flavorRef': FLAVOR, 'imageRef': IMAGE}})
        if status != 202:
            raise RuntimeError('POST /servers answered %d: %s' % (status, body))
        return body['server']['id']

    def close(self):
        self.conn.close()


def run_clients(count, work, items):
    """Run ``work(http_index, item)`` over ``items`` from ``count`` threads
    (each item once); return (results in item order, wall seconds)."""
    results = [None] * len(items)
    lock = threading.Lock()
    todo = iter(range(len(items)))
    errors = []

    def client(index):
        while not errors:
            with lock:
                i = next(todo, None)
            if i is None:
                return
            try:
                results[i] = work(index, items[i])
            except Exception as err:     # reported by the caller
                errors.append(err)
    threads = [threading.Thread(target=client, args=(n,)) for n in range(count)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results, time.monotonic() - started


@contextlib.contextmanager
def connections(plane, count):
    """``count`` HTTP connections to the plane's API, closed at the end."""
    conns = [plane.http() for _ in range(count)]
    try:
        yield conns
    finally:
        for conn in conns:
            conn.close()

"""The embedded control plane (``tristate-all``'s) with its REST API, as the
scenarios use it (its HTTP clients are :mod:`bench.clients`).

Each plane gets RPC topics of its own (kombu's in-memory bus is global to
the process, as in tests/functional/conftest.py) and a state directory
under a temporary directory removed when the plane stops; the fake hosts'
files are on tmpfs when the machine has one, and the plane's threads run
on one CPU, as ``[DEFAULT] pin_to_cpu`` pins a daemon's (:class:`Plane`).
The fake hypervisor's hosts get room for thousands of tiny instances, so
that a burst measures the plane, not the scheduler saying no.
"""

import contextlib
import logging
import os
import shutil
import tempfile
import uuid as uuidlib

from oslo_config import cfg

from bench import clients
from bench import core
from bench import imagedata
from common import affinity
from common import conf as tconf
from common import context
from common import rpc
from common import service
from common.states import vm
from compute_agent.virt import fake
from compute_agent.virt import fake_store
from conductor import embedded

MEMORY_URL = embedded.MEMORY_URL
SHM = '/dev/shm'
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


def _fake_hosts_on_tmpfs(state_dir):
    """The fake hosts' files (``<state_dir>/fakevirt``, and their guests'
    console logs) in a directory of their own on tmpfs, linked from
    ``state_dir``; that directory, or None (and the files in
    ``state_dir``) when the machine has no writable ``/dev/shm``.

    They stand for what a hypervisor keeps in its own memory (libvirtd's
    domains), in another process than the control plane; on a disk (ext4
    mounted with ``discard`` here) their writes cost the plane's process a
    millisecond or more a build and moved with the disk. The database and
    the agents' task journals stay in ``state_dir``: they are the plane's.
    """
    if not (os.path.isdir(SHM) and os.access(SHM, os.W_OK)):
        return None
    fake_tmp = tempfile.mkdtemp(prefix='tristate-bench-fakevirt-', dir=SHM)
    for sub in (fake_store.STORE_SUBDIR, fake.CONSOLE_SUBDIR):
        os.mkdir(os.path.join(fake_tmp, sub))
        os.symlink(os.path.join(fake_tmp, sub), os.path.join(state_dir, sub))
    return fake_tmp


class Plane:
    """An embedded plane with ``hosts`` agents and, with ``api=True``, its
    REST API on a free port of 127.0.0.1. A context manager."""

    def __init__(self, *, hosts=4, api=True, periodic_jobs=True,
                 network=False, pin=True, **groups):
        # The CPUs the process may use: it runs on the last of them while
        # the plane runs, with ``pin`` (as tristate-all with [DEFAULT]
        # pin_to_cpu), and on all of them again after; the clients' child
        # process runs on all of them.
        self.cpus = os.sched_getaffinity(0)
        self.pin = pin and len(self.cpus) > 1
        self.tmp = tempfile.mkdtemp(prefix='tristate-bench-')
        self.fake_tmp = _fake_hosts_on_tmpfs(self.tmp)
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
        if self.pin:        # before the plane's threads start, as prepare()
            self.conf.set_override('pin_to_cpu', max(self.cpus))
            affinity.apply(self.conf)
        try:
            return self._start()
        except BaseException:
            self.__exit__()     # what started stops; every CPU given back
            raise

    def _start(self):
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
            if self.pin:
                affinity.set_all(self.cpus)
            self.conf.reset()
            shutil.rmtree(self.tmp, ignore_errors=True)
            if self.fake_tmp is not None:
                shutil.rmtree(self.fake_tmp, ignore_errors=True)

    @property
    def statedb(self):
        return self.embedded.statedb

    @property
    def client(self):
        return self.embedded.client

    def http(self):
        return clients.Http(self.api.host, self.api.port, token=TOKEN,
                            flavor=FLAVOR, image=IMAGE)

    def client_process(self, count):
        """``count`` connections to the API in a child process (a context
        manager; :class:`bench.clients.ClientProcess`)."""
        return clients.ClientProcess(self.api.host, self.api.port, count,
                                     token=TOKEN, flavor=FLAVOR, image=IMAGE,
                                     cpus=self.cpus)

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


@contextlib.contextmanager
def connections(plane, count):
    """``count`` HTTP connections to the plane's API, closed at the end."""
    conns = [plane.http() for _ in range(count)]
    try:
        yield conns
    finally:
        for conn in conns:
            conn.close()

"""The whole control plane in one process, for the functional tests.

* ``conf``: a private configuration with short intervals, state under the
  test's ``tmp_path`` and RPC topics no other test uses (kombu's in-memory
  transport is process-global: shared topics would mix tests' messages).
* ``make_plane(hosts=N, clock=None)``: starts an :class:`Embedded` plane
  (one conductor, agents ``host1..hostN`` on the fake hypervisor, SQLite in
  ``tmp_path``, the periodic jobs off: tests run them with ``run_once``);
  ``plane``: one with two hosts. Stopped when the test ends.
* ``wait_for``/``wait_idle``/``build``/``act``: poll with a deadline, never
  sleep a fixed time; a timeout says what the instance looked like last.
"""

import time
import uuid as uuidlib

import pytest
from oslo_config import cfg

from common import conf as tconf
from common import context
from common import rpc
from common.db import api as db_api
from common.db import engine
from common.db import migration
from common.states import vm
from compute_agent.virt import fake
from conductor import embedded

MEMORY_URL = 'kombu+memory:////'
TIMEOUT = 10.0
_SHOWN = ('vm_state', 'task_state', 'task_id', 'power_state', 'host',
          'flavor_name', 'progress_step')


# --- configuration and the plane ---------------------------------------------

@pytest.fixture
def conf(tmp_path):
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    rpc.register_opts(conf)
    conf([], project='tristate', default_config_files=[])
    suffix = uuidlib.uuid4().hex[:12]
    for name, value, group in (
            ('state_dir', str(tmp_path), None),
            ('topic', 'conductor-%s' % suffix, 'conductor'),
            ('topic', 'compute-%s' % suffix, 'compute'),
            ('heartbeat_interval', 0.1, 'compute'),
            ('power_sync_interval', 0.5, 'compute'),
            ('report_retry_max', 0.5, 'compute'),
            ('service_down_time', 5, 'conductor'),
            ('rpc_timeout', 5, 'conductor'),
            ('poll_interval', 0.05, 'fake_driver')):
        conf.set_override(name, value, group=group)
    yield conf
    conf.reset()


def set_opts(conf, group, **values):
    for name, value in values.items():
        conf.set_override(name, value, group=group)


@pytest.fixture
def make_plane(conf):
    """Start a plane: ``make_plane(hosts=2, clock=None)``.

    ``clock`` (a :class:`tests.conftest.FakeClock`) becomes the database's
    clock: heartbeats, task timestamps and the periodic jobs then move only
    when the test advances it.
    """
    planes = []

    def make(*, hosts=2, clock=None):
        database = engine.Database.from_conf(conf)
        migration.upgrade(database)
        statedb = (db_api.StateDB(database) if clock is None
                   else db_api.StateDB(database, clock=clock))
        plane = embedded.Embedded(conf, hosts=hosts, url=MEMORY_URL,
                                  statedb=statedb, periodic_jobs=False)
        planes.append(plane)
        plane.start()
        for name in plane.host_names:
            wait_for(lambda name=name: heartbeat_of(plane, name) is not None,
                     what='the first heartbeat of %s' % name)
        return plane

    yield make
    for plane in planes:
        plane.stop()
        plane.statedb.db.dispose()


@pytest.fixture
def plane(make_plane):
    return make_plane(hosts=2)


@pytest.fixture
def ctx():
    return context.RequestContext(user_id='alice', project_id='demo',
                                  roles=['member'])


@pytest.fixture
def admin(ctx):
    return ctx.elevated()


# --- waiting --------------------------------------------------------------------

def wait_for(predicate, *, timeout=TIMEOUT, what='the condition', show=None):
    """Poll ``predicate`` until it returns something true; return that.

    Fails after ``timeout`` seconds naming ``what`` and ``show()``'s value.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            last = show() if show is not None else value
            pytest.fail('%s did not happen within %.0f s; last seen: %r'
                        % (what, timeout, last), pytrace=False)
        time.sleep(0.01)


def summary(inst):
    return {key: inst.get(key) for key in _SHOWN}


def wait_instance(plane, uuid, predicate, *, what, timeout=TIMEOUT):
    """Poll the instance's row until ``predicate(inst)``; return the row."""
    def check():
        inst = plane.statedb.get_instance(uuid)
        return inst if predicate(inst) else None
    return wait_for(check, timeout=timeout, what='%s (instance %s)' % (what, uuid),
                    show=lambda: summary(plane.statedb.get_instance(uuid)))


def wait_idle(plane, uuid, *, timeout=TIMEOUT):
    """The instance once no task runs on it."""
    return wait_instance(plane, uuid, lambda inst: inst['task_id'] is None,
                         what='its task to end', timeout=timeout)


def wait_domain(plane, host, uuid, predicate, *, what):
    """Poll the fake hypervisor's record of ``uuid`` on ``host``."""
    store = fake.HostStore(plane.conf.state_dir, host)
    return wait_for(lambda: predicate(store.read()['domains'].get(uuid)),
                    what='%s (domain %s on %s)' % (what, uuid, host),
                    show=lambda: store.read()['domains'].get(uuid))


# --- doing things ---------------------------------------------------------------

def build(plane, ctx, *, flavor='tiny', name='vm', **kwargs):
    """Create an instance and wait for its build to end; the row after."""
    inst = plane.client.create_instance(ctx, name=name, flavor=flavor,
                                        image_ref='cirros', **kwargs)
    return wait_idle(plane, inst['uuid'])


def active(plane, ctx, **kwargs):
    inst = build(plane, ctx, **kwargs)
    assert inst['vm_state'] == vm.ACTIVE, summary(inst)
    return inst


def act(plane, ctx, uuid, action, **params):
    """Run ``action`` through the RPC client and wait for it to end."""
    plane.client.run_action(ctx, uuid, action, params)
    return wait_idle(plane, uuid)


# --- what the plane and the hypervisor say ---------------------------------------

def heartbeat_of(plane, host):
    for row in plane.statedb.list_hosts():
        if row['name'] == host:
            return row['last_heartbeat']
    return None


def host_row(plane, host):
    return plane.statedb.get_host(host)


def used(plane, host):
    """(vcpus, memory_mb, disk_gb) the scheduler counts as taken on ``host``."""
    row = plane.statedb.get_host(host)
    return row['used_vcpus'], row['used_memory_mb'], row['used_disk_gb']


def allocated(plane, host):
    """The sum of the allocation rows on ``host``, as :func:`used` says it."""
    rows = plane.statedb.list_allocations(host=host)
    return (sum(r['vcpus'] for r in rows), sum(r['memory_mb'] for r in rows),
            sum(r['disk_gb'] for r in rows))


def domain(plane, host, uuid):
    """The fake hypervisor's record of ``uuid`` on ``host``, or None."""
    return fake.HostStore(plane.conf.state_dir, host).read()['domains'].get(uuid)


def last_action(plane, uuid, action=None):
    entries = [e for e in plane.statedb.list_actions(uuid)
               if action is None or e['action'] == action]
    assert entries, 'no action log entry%s for %s' % (
        '' if action is None else ' of %s' % action, uuid)
    return entries[-1]

"""The whole control plane in one process, for the functional tests.

* ``conf``: a private configuration with short intervals, state under the
  test's ``tmp_path`` and RPC topics no other test uses (kombu's in-memory
  transport is process-global: shared topics would mix tests' messages).
  Notifications are off unless a test turns them on (:func:`notifications_on`).
* ``make_plane(hosts=N, clock=None)``: starts an :class:`Embedded` plane (one
  conductor, agents ``host1..hostN`` on the fake hypervisor, SQLite under the
  state dir, periodic jobs off: tests run them with ``run_once``). ``plane``
  is one with two hosts; ``shared_plane`` one per test module, for tests that
  only need instances of their own (:func:`tidy` it after each test). Every
  plane is stopped at the end.
* ``wait_for``, ``wait_idle``, ``build``, ``act``: poll with a deadline, never
  sleep a fixed time; a timeout says what the instance looked like last.

The fake clock (``clock``, from ``tests/conftest.py``) becomes the database's
clock: heartbeats, task timestamps and the periodic jobs then see time move
only when the test advances it.
"""

import os
import threading
import time
import uuid as uuidlib

import futurist._thread
import pytest
from oslo_config import cfg

from common import conf as tconf
from common import context
from common import rpc
from common.db import api as db_api
from common.db import engine
from common.db import migration
from common.states import vm
from compute_agent import journal
from compute_agent.cmd import fakevirt
from compute_agent.virt import fake
from conductor import embedded
from tests import images_support

MEMORY_URL = embedded.MEMORY_URL
TIMEOUT = 10.0
_SHOWN = ('vm_state', 'task_state', 'task_id', 'power_state', 'host',
          'flavor_name', 'progress_step')


# --- configuration -----------------------------------------------------------

def new_conf(state_dir):
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    rpc.register_opts(conf)
    conf([], project='tristate', default_config_files=[])
    suffix = uuidlib.uuid4().hex[:12]
    conf.set_override('state_dir', str(state_dir))
    set_opts(conf, 'conductor', topic='conductor-%s' % suffix,
             service_down_time=5, rpc_timeout=5)
    set_opts(conf, 'compute', topic='compute-%s' % suffix,
             heartbeat_interval=0.1, power_sync_interval=0.5,
             report_retry_max=0.5)
    set_opts(conf, 'fake_driver', poll_interval=0.05)
    return conf


def set_opts(conf, group, **values):
    for name, value in values.items():
        conf.set_override(name, value, group=group)


def notifications_on(conf):
    """Send notifications on the bus (oslo.messaging sends none by default)."""
    conf.set_override('driver', ['messagingv2'],
                      group='oslo_messaging_notifications')


@pytest.fixture
def conf(tmp_path):
    conf = new_conf(tmp_path)
    yield conf
    conf.reset()


# --- planes ------------------------------------------------------------------

@pytest.fixture(autouse=True, scope='session')
def _quicker_server_stop():
    """An RPC server's stop waits for its idle worker threads, which look
    for work once a second (futurist's ThreadWorker.MAX_IDLE_FOR): a second
    or more per plane stopped. Tests only: let them look more often."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(futurist._thread.ThreadWorker, 'MAX_IDLE_FOR', 0.05)
        yield


class Planes:
    """Starts planes on one configuration; stops them all at the end."""

    def __init__(self, conf):
        self.conf = conf
        self.started = []

    def start(self, *, hosts=2, clock=None):
        database = engine.Database.from_conf(self.conf)
        migration.upgrade(database)
        statedb = (db_api.StateDB(database) if clock is None
                   else db_api.StateDB(database, clock=clock))
        plane = embedded.Embedded(self.conf, hosts=hosts, url=MEMORY_URL,
                                  statedb=statedb, periodic_jobs=False)
        self.started.append(plane)
        plane.start()
        images_support.register_all(self.conf, statedb)
        for name in plane.host_names:
            wait_heartbeat(plane, name)
        return plane

    def stop_all(self):
        for plane in self.started:
            # A hang left by a failing test would hold its agent's stop.
            for host in fake.list_hosts(self.conf.state_dir):
                fake.HostStore(self.conf.state_dir, host).clear_faults()
            # In parallel: each agent's RPC server waits for its workers.
            stoppers = [threading.Thread(target=plane.stop_agent, args=(name,))
                        for name in list(plane.agents)]
            for thread in stoppers:
                thread.start()
            for thread in stoppers:
                thread.join()
            plane.stop()
            plane.statedb.db.dispose()


@pytest.fixture
def make_plane(conf):
    """``make_plane(hosts=2, clock=None)`` starts a plane on ``conf``."""
    planes = Planes(conf)
    yield planes.start
    planes.stop_all()


@pytest.fixture
def plane(make_plane):
    return make_plane(hosts=2)


@pytest.fixture(scope='module')
def shared_plane(tmp_path_factory):
    """One two-host plane for a whole module: for tests whose assertions
    are about their own instances only."""
    conf = new_conf(tmp_path_factory.mktemp('plane'))
    planes = Planes(conf)
    yield planes.start(hosts=2)
    planes.stop_all()
    conf.reset()


@pytest.fixture
def app(plane):
    """The REST API's WSGI app over the test's ``plane``."""
    from tests.functional import api_support    # it imports this module
    return api_support.make_app(plane)


@pytest.fixture(scope='module', params=[
    'sqlite', pytest.param('postgresql', marks=pytest.mark.postgresql)])
def plane_on_each_database(request, tmp_path_factory):
    """One two-host plane for a whole module, on SQLite, then on a fresh
    PostgreSQL database (skipped without TRISTATE_TEST_PG_URL): the
    module's tests run once on each."""
    from tests.functional import api_support    # it imports this module
    with api_support.plane_on(request, request.param,
                              tmp_path_factory.mktemp('plane')) as plane:
        yield plane


@pytest.fixture(scope='module')
def leasable_plane_on_each_database(plane_on_each_database):
    """:func:`plane_on_each_database` with every host in the reservable
    pool: for modules whose tests make leases."""
    reservable(plane_on_each_database)
    return plane_on_each_database


def tidy(plane, *, keep=()):
    """Clear every fault and delete every instance but those in ``keep``:
    what a test on a shared plane leaves must not disturb the next one."""
    for host in plane.host_names:
        fake.HostStore(plane.conf.state_dir, host).clear_faults()
    system = context.get_admin_context()
    for inst in plane.statedb.list_instances():
        if inst['uuid'] not in keep:
            plane.client.delete_instance(system, inst['uuid'])


@pytest.fixture
def admin(ctx):
    return ctx.elevated()


# --- waiting -----------------------------------------------------------------

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
    """Poll the instance's row until ``predicate(row)``; return the row."""
    def check():
        inst = plane.statedb.get_instance(uuid)
        return inst if predicate(inst) else None
    return wait_for(check, timeout=timeout,
                    what='%s (instance %s)' % (what, uuid),
                    show=lambda: summary(plane.statedb.get_instance(uuid)))


def wait_idle(plane, uuid, *, timeout=TIMEOUT):
    """The instance's row once no task runs on it."""
    return wait_instance(plane, uuid, lambda inst: inst['task_id'] is None,
                         what='its task to end', timeout=timeout)


def wait_task(plane, uuid, task_state):
    """The instance's row once ``task_state`` runs (e.g. hung on a fault)."""
    return wait_instance(plane, uuid,
                         lambda inst: inst['task_state'] == task_state,
                         what='task %s to run' % task_state)


def wait_domain(plane, host, uuid, predicate, *, what):
    """Poll the fake hypervisor's record of ``uuid`` on ``host`` (None if
    absent) until ``predicate(record)``."""
    return wait_for(lambda: predicate(domain(plane, host, uuid)),
                    what='%s (domain %s on %s)' % (what, uuid, host),
                    show=lambda: domain(plane, host, uuid))


def wait_heartbeat(plane, host, *, since=None):
    """Until ``host`` has sent a heartbeat (stamped ``since`` or later)."""
    def beat():
        last = heartbeat_of(plane, host)
        return last is not None and (since is None or last >= since)
    wait_for(beat, what='a heartbeat of %s' % host,
             show=lambda: heartbeat_of(plane, host))


def wait_agent_done(plane, host):
    """Until the agent of ``host`` has no task left in its journal: every
    task it was given has been reported (and the report answered)."""
    path = os.path.join(plane.conf.state_dir, 'agent', '%s-tasks.json' % host)

    def tasks():
        return journal.read_tasks(path)
    wait_for(lambda: tasks() == {}, what='the agent of %s to end its tasks'
             % host, show=tasks)


def wait_log(caplog, *words):
    """Until a log record (captured by ``caplog``) contains every word."""
    wait_for(lambda: any(all(word in record.getMessage() for word in words)
                         for record in caplog.records),
             what='a log line with %s' % ', '.join(words),
             show=lambda: caplog.text[-2000:])


# --- doing things ------------------------------------------------------------

def build(plane, ctx, *, flavor='tiny', name='vm', **kwargs):
    """Create an instance and wait for its build to end; its row after."""
    inst = plane.client.create_instance(ctx, name=name, flavor=flavor,
                                        image_ref='cirros', **kwargs)
    return wait_idle(plane, inst['uuid'])


def active(plane, ctx, **kwargs):
    """A built, ACTIVE instance's row."""
    inst = build(plane, ctx, **kwargs)
    assert inst['vm_state'] == vm.ACTIVE, summary(inst)
    return inst


def act(plane, ctx, uuid, action, **params):
    """Run ``action`` through the RPC client, wait for it to end; the row."""
    plane.client.run_action(ctx, uuid, action, params)
    return wait_idle(plane, uuid)


def faults(plane, host):
    """The fake hypervisor's fault switchboard of ``host``."""
    return fake.HostStore(plane.conf.state_dir, host)


def outside(plane, command, uuid):
    """``tristate-fakevirt COMMAND UUID`` on the plane's fake hypervisor."""
    argv = ['--state-dir', plane.conf.state_dir, command, uuid]
    assert fakevirt.main(argv) == 0, 'tristate-fakevirt %s failed' % argv


def wait_hung(plane, host, operation):
    """Until the agent's driver call ``operation`` hangs on its fault (set
    with ``count=1``, which the call spends when it takes it): the task's
    first progress report, sent before any driver call, was recorded."""
    store = faults(plane, host)
    wait_for(lambda: (store.read()['faults'].get(operation) or {}).get(
        'remaining') == 0, what='%s to hang on %s' % (operation, host))


# --- what the plane and the hypervisor say -----------------------------------

def heartbeat_of(plane, host):
    for row in plane.statedb.list_hosts():
        if row['name'] == host:
            return row['last_heartbeat']
    return None


def used(plane, host):
    """(vcpus, memory_mb, disk_gb) the scheduler counts as taken on ``host``."""
    row = plane.statedb.get_host(host)
    return row['used_vcpus'], row['used_memory_mb'], row['used_disk_gb']


def allocated(plane, host):
    """The sum of the allocation rows on ``host``."""
    rows = plane.statedb.list_allocations(host=host)
    return (sum(r['vcpus'] for r in rows), sum(r['memory_mb'] for r in rows),
            sum(r['disk_gb'] for r in rows))


def resources(flavor):
    return flavor.vcpus, flavor.memory_mb, flavor.disk_gb


def domain(plane, host, uuid):
    """The fake hypervisor's record of ``uuid`` on ``host``, or None."""
    store = fake.HostStore(plane.conf.state_dir, host)
    return store.read()['domains'].get(uuid)


# What the agents' periodic full reports move even when nothing changed: the
# stored power_state is then known as of their newer read.
REPORT_MARKS = ('power_seq', 'power_reported_at')


def without_report_marks(inst):
    """``inst`` without :data:`REPORT_MARKS`, for "nothing changed" checks
    made while the agents report."""
    return {k: v for k, v in inst.items() if k not in REPORT_MARKS}


def log_of(plane, uuid, action=None):
    """The instance's action log (entries of ``action`` only, if given)."""
    return [entry for entry in plane.statedb.list_actions(uuid)
            if action is None or entry['action'] == action]


def last_log(plane, uuid, action=None):
    entries = log_of(plane, uuid, action)
    assert entries, 'no action log entry%s for %s' % (
        '' if action is None else ' of %s' % action, uuid)
    return entries[-1]


def reservable(plane, *names):
    """Put hosts (every host of the plane by default) into the leases'
    reservable pool, as an admin does: only its hosts can be leased."""
    for name in names or plane.host_names:
        plane.conductor.leases.db.set_reservable(name, True)

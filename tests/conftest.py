"""Fixtures every test may use.

* ``db``: a migrated, empty database, once per backend: a SQLite file, and a
  fresh PostgreSQL database when ``TRISTATE_TEST_PG_URL`` names a server
  (tools/test-services.sh starts one). Without it the PostgreSQL run is
  skipped, or fails when ``CI=true``: CI must test both.
* ``clock``, ``statedb``, ``ctx``: the state gateway over ``db`` with a clock
  that moves only when a test says so, and a user's request context.
* ``instances``: makes instances in any vm_state the way users and the
  conductor do, by driving the action table through the gateway.
"""

import contextlib
import datetime
import os
import re
import sys
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from common import actions
from common import context
from common.db import api
from common.db import engine
from common.db import migration
from common.db import models
from common.states import VM_STATES
from common.states import vm

PG_URL_ENV = 'TRISTATE_TEST_PG_URL'


# --- parallel runs (pytest-xdist) ------------------------------------------------
# tools/run-tests.sh runs the suite on two workers (``-n 2 --dist
# loadgroup``), each with servers of its own: worker gwN (N > 0) reads
# ``TRISTATE_TEST_W<N>_*`` as ``TRISTATE_TEST_*`` (a second PostgreSQL and
# RabbitMQ started for it), so a test that kills its broker or its
# database never hits a test of the other worker. Read here, when the
# worker first imports this file, before any test module reads them.

def _worker_services(environ):
    worker = environ.get('PYTEST_XDIST_WORKER', '')
    if not worker.startswith('gw') or worker == 'gw0':
        return
    prefix = 'TRISTATE_TEST_W%s_' % worker[2:]
    own = {key[len(prefix):]: value for key, value in environ.items()
           if key.startswith(prefix)}
    shared = [key for key in ('TRISTATE_TEST_PG_URL', 'TRISTATE_TEST_RABBIT_URL')
              if key in environ]
    if shared and not own:
        sys.exit('worker %s has no servers of its own (%s*): it would share '
                 'gw0\'s %s, which the fault tests stop; start a set per '
                 'worker as tools/run-tests.sh does, or run without -n'
                 % (worker, prefix, ', '.join(shared)))
    for key, value in own.items():
        environ['TRISTATE_TEST_' + key] = value


_worker_services(os.environ)

# Modules that use the host itself (the system libvirtd and the serial
# ports of its guests, bridges, network namespaces, dnsmasq): one worker
# runs them all, one after the other. Every other module runs whole on one
# worker (its module fixtures set up once). The controller schedules by
# node id alone, so these are named by path
# (tests/unit/test_parallel_groups.py checks every module that boots QEMU
# or makes namespaces is matched).
HOST_MODULES = re.compile(r'(_on_real_qemu|/test_test_image|/test_dhcp_dnsmasq'
                          r'|/test_libvirt_agent|/test_qemu_guest_\w+'
                          r'|/test_guest_reboot_\w+)\w*\.py$')


def scope_of(nodeid):
    """The group a test runs in: ``host``, or its module."""
    path = nodeid.split('::', 1)[0]
    return 'host' if HOST_MODULES.search(path) else path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return scope_of(nodeid)
    return ByModule(config, log)


HOST = 'node1'
FLAVOR = {'vcpus': 2, 'memory_mb': 2048, 'disk_gb': 20}


class FakeClock:
    """Naive-UTC time that moves only by :meth:`advance`."""

    def __init__(self, start=datetime.datetime(2026, 1, 1, 12, 0, 0)):
        self.now = start

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += datetime.timedelta(seconds=seconds)
        return self.now


# --- databases ------------------------------------------------------------------

def _require_pg_url():
    url = os.environ.get(PG_URL_ENV)
    if url:
        return url
    reason = ('%s is not set, so the PostgreSQL tests cannot run (e.g. '
              '%s=postgresql+psycopg2://postgres@127.0.0.1:54329/postgres; '
              'tools/test-services.sh starts such a server)'
              % (PG_URL_ENV, PG_URL_ENV))
    if os.environ.get('CI') == 'true':
        pytest.fail('CI needs PostgreSQL: ' + reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope='session')
def pg_admin():
    """An AUTOCOMMIT engine on the server's maintenance database."""
    admin = sa.create_engine(_require_pg_url(), isolation_level='AUTOCOMMIT')
    yield admin
    admin.dispose()


@contextlib.contextmanager
def pg_database(admin):
    name = 'tristate_test_%s' % uuidlib.uuid4().hex
    with admin.connect() as conn:
        conn.exec_driver_sql('CREATE DATABASE %s' % name)
    database = engine.Database(admin.url.set(database=name))
    try:
        migration.upgrade(database)
        yield database
    finally:
        database.dispose()
        with admin.connect() as conn:
            conn.exec_driver_sql('DROP DATABASE IF EXISTS %s WITH (FORCE)'
                                 % name)


@pytest.fixture(params=['sqlite', pytest.param('postgresql',
                                               marks=pytest.mark.postgresql)])
def db(request, tmp_path):
    """A migrated, empty :class:`common.db.engine.Database` per backend."""
    if request.param == 'sqlite':
        database = engine.Database('sqlite:///%s'
                                   % (tmp_path / 'tristate.sqlite'))
        migration.upgrade(database)
        yield database
        database.dispose()
        return
    _require_pg_url()
    with pg_database(request.getfixturevalue('pg_admin')) as database:
        yield database


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def statedb(db, clock):
    return api.StateDB(db, clock=clock)


@pytest.fixture
def ctx():
    return context.RequestContext(user_id='alice', project_id='demo',
                                  roles=['member'])


# --- instances in any vm_state ---------------------------------------------------

def _paths_from_active(table=actions.TABLE):
    """The shortest walk of task actions from ACTIVE to each vm_state it reaches."""
    paths = {vm.ACTIVE: ()}
    frontier = [vm.ACTIVE]
    while frontier:
        reached = []
        for source, action, target in table:
            if (source in frontier and target in VM_STATES
                    and target not in paths
                    and table.action(action).kind == actions.KIND_TASK):
                paths[target] = paths[source] + (action,)
                reached.append(target)
        frontier = reached
    return paths


PATHS = _paths_from_active()


class Instances:
    """Makes instances through the gateway, as the conductor would."""

    host = HOST
    flavor = FLAVOR

    def __init__(self, statedb, ctx):
        self.db = statedb
        self.ctx = ctx
        statedb.host_heartbeat(HOST, vcpus=100000, memory_mb=10 ** 9,
                               disk_gb=10 ** 7)

    def create(self, name='vm'):
        """A new instance, INITIALIZED with its build task running.

        Returns the uuid and the context of the build task.
        """
        inst = self.db.create_instance(self.ctx, dict(
            FLAVOR, name=name, project_id='demo', user_id='alice',
            flavor_name='m1.small', image_ref='cirros'))
        return inst['uuid'], self.ctx.for_task(inst['task_id'])

    def active(self):
        """A built instance: scheduled on :data:`HOST`, ACTIVE, idle."""
        uuid, task = self.create()
        self.db.allocate(task, uuid, HOST, **FLAVOR)
        self.db.finish_task(task, uuid)
        return uuid

    def start(self, uuid, action):
        """Claim ``action``; return the context of its task."""
        claimed = self.db.claim_task(self.ctx, uuid, action)
        return self.ctx.for_task(claimed['task_id'])

    def run(self, uuid, action):
        """Claim ``action`` and finish it; return the instance after."""
        return self.db.finish_task(self.start(uuid, action), uuid)[1]

    def snapshot(self, uuid):
        """Everything a change could touch: the row and its action log."""
        return self.db.get_instance(uuid), self.db.list_actions(uuid)

    def in_state(self, vm_state):
        """An idle instance (no task) in ``vm_state``; returns its uuid."""
        if vm_state in PATHS and not hasattr(self, '_make_' + vm_state):
            uuid = self.active()
            for action in PATHS[vm_state]:
                self.run(uuid, action)
        else:
            uuid = getattr(self, '_make_' + vm_state)()
        inst = self.db.get_instance(uuid)
        assert (inst['vm_state'], inst['task_id']) == (vm_state, None)
        return uuid

    def _make_error(self):
        uuid, task = self.create()
        self.db.fail_task(task, uuid, error='spawn failed', rolled_back=False)
        return uuid

    def _make_pending(self):
        uuid, task = self.create()
        self.db.bury(task, uuid, reason='no valid host', use_pending=True)
        return uuid

    def _make_shelved_offloaded(self):
        # the offload's finish as the conductor makes it
        # (conductor/results.py): every allocation freed, on no host, the
        # shelve's snapshot named
        uuid = self.in_state(vm.SHELVED)
        self.db.finish_task(self.start(uuid, 'shelve_offload'), uuid,
                            values={'host': None,
                                    'shelved_image_id': str(uuidlib.uuid4())},
                            settle=[{'free': {}}])
        return uuid

    def _make_hard_deleted(self):
        uuid = self.active()
        self.db.hard_delete(self.ctx, uuid)
        return uuid

    def _make_initialized(self):
        # No gateway call leaves INITIALIZED idle: the build is claimed in
        # the INSERT and a failed build ends in ERROR. To test the claim's
        # WHERE clause from INITIALIZED we clear the build task by hand.
        uuid, _task = self.create()
        table = models.Instance.__table__
        self.db.db.transaction(lambda conn: conn.execute(
            sa.update(table).where(table.c.uuid == uuid).values(
                task_id=None, task_state=None, task_action=None)))
        return uuid


@pytest.fixture
def instances(statedb, ctx):
    return Instances(statedb, ctx)


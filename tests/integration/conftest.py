"""Integration tests: the daemons as separate OS processes on a real RabbitMQ.

``tools/test-services.sh start DIR`` starts a private RabbitMQ node on
127.0.0.1 and prints two variables:

* ``TRISTATE_TEST_RABBIT_URL``: the broker, e.g. ``rabbit://guest:guest@
  127.0.0.1:56729/``. Without it these tests are skipped, or fail when
  ``CI=true``: CI must run them.
* ``TRISTATE_TEST_RABBIT_CTL``: a command to which ``stop``, ``kill`` or
  ``start`` is appended to stop the node (SIGTERM), kill it (SIGKILL) or
  start it again and wait until it is up. The broker-restart test needs it.

Fixtures:

* ``broker``: the node above (url, stop/kill/start).
* ``make_plane``: a factory of :class:`Plane`, a conductor (or two, with
  ``conductors=2``) and two compute
  agents (hosts ``h1`` and ``h2``) run as separate processes with config
  files written under ``tmp_path``, and the test process as the API tier
  (a :class:`~conductor.rpcapi.ConductorAPI` with database access). Each
  plane has its own exchange and topics, so nothing of another test (or
  of an earlier run on the same broker) reaches it; its processes are
  stopped at the end of the test, whatever happened, and the tails of
  their logs are added to the report of a failed test. A test may
  SIGKILL one (:meth:`Plane.kill`) and start it again
  (:meth:`Plane.restart`), and check the invariants of
  ``tristate-manage check`` on the plane's database
  (:meth:`Plane.violations`).
"""

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid as uuidlib

import pytest
from oslo_config import cfg

import conductor
from common import conf as tconf
from common import context
from common import rpc
from common.db import api as db_api
from common.db import checks
from common.db import engine
from common.db import migration
from common.states import power
from common.states import vm
from compute_agent import journal
from compute_agent.virt import fake
from tests import images_support
from tests import support
from tests.conftest import pg_database
from conductor import rpcapi

URL_ENV = 'TRISTATE_TEST_RABBIT_URL'
# The fault-injection tests (test_faults_*.py) run small in CI, at the
# figures of issue 9 with this set to 1 (tox -e faults).
FULL_ENV = 'TRISTATE_FAULTS_FULL'
CTL_ENV = 'TRISTATE_TEST_RABBIT_CTL'
HOSTS = ('h1', 'h2')
MAINS = {'conductor': 'conductor.cmd.conductor',
         'agent': 'compute_agent.cmd.agent',
         'api': 'api.cmd.api'}
# The source tree the test process imports: the daemons run the same code.
SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(
    conductor.__file__)))
POLL = 0.05


def size(small, full):
    """``full`` when :data:`FULL_ENV` is 1, else ``small``."""
    return full if os.environ.get(FULL_ENV) == '1' else small


def _require(env, example):
    value = os.environ.get(env)
    if value:
        return value
    reason = ('%s is not set, so the RabbitMQ integration tests cannot run '
              '(e.g. %s; `eval "$(tools/test-services.sh start DIR)"` starts '
              'such a broker)' % (env, example))
    if os.environ.get('CI') == 'true':
        pytest.fail('CI needs RabbitMQ: ' + reason, pytrace=False)
    pytest.skip(reason)


class Broker:
    """The RabbitMQ node of tools/test-services.sh."""

    def __init__(self, url, ctl):
        self.url = url
        self.ctl = ctl

    def require_ctl(self):
        """Skip (fail in CI) unless the broker can be restarted."""
        if not self.ctl:
            self.ctl = _require(CTL_ENV, "%s='tools/test-services.sh rabbit "
                                "DIR'" % CTL_ENV)

    def _run(self, what, timeout):
        self.require_ctl()
        done = subprocess.run(shlex.split(self.ctl) + [what], timeout=timeout,
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, 'broker %s failed (%d): %s%s' % (
            what, done.returncode, done.stdout, done.stderr)

    def kill(self):
        """SIGKILL the node: no goodbye to the clients, no clean shutdown."""
        self._run('kill', timeout=60)

    def stop(self):
        self._run('stop', timeout=60)

    def start(self):
        """Start the node again; returns once it accepts clients."""
        self._run('start', timeout=90)


@pytest.fixture(scope='session')
def broker():
    url = _require(URL_ENV, '%s=rabbit://guest:guest@127.0.0.1:56729/'
                   % URL_ENV)
    return Broker(url, os.environ.get(CTL_ENV))


def _ini(sections):
    lines = []
    for section, values in sections.items():
        lines.append('[%s]' % section)
        lines.extend('%s = %s' % item for item in values.items())
        lines.append('')
    return '\n'.join(lines)


class DaemonDied(AssertionError):
    pass


class Plane:
    """One conductor and the agents of :data:`HOSTS`, each its own process."""

    def __init__(self, path, url, *, fake_driver=None, conductors=1,
                 db_url=None, urls=None, rabbit=None, exchange=None,
                 hosts=HOSTS, task_timeouts=None):
        self.path = path
        self.url = url
        # Per process kind ('conductor', 'agent', 'api'), or per agent
        # ('agent:HOST'): its own transport_url (a user per service, or
        # per host), else ``url``.
        self.urls = dict(urls or {})
        self.hosts = tuple(hosts)
        # [conductor] task_timeouts: the reaper's per-action seconds.
        self.task_timeouts = dict(task_timeouts or {})
        self.rabbit = dict(rabbit or {})
        self.tag = uuidlib.uuid4().hex[:12]
        self.exchange = exchange or 'tristate-it-%s' % self.tag
        self.state_dir = path / 'state'
        self.db_url = db_url or 'sqlite:///%s' % (path / 'tristate.sqlite')
        self.fake_driver = dict(fake_driver or {})
        self.conductors = ['conductor'] + ['conductor%d' % (n + 1)
                                           for n in range(1, conductors)]
        self.procs = {}
        self.kinds = {}
        self.killed = set()
        self.logs = {}
        self.bus = None
        self.api = None
        self.statedb = None
        self.ctx = context.RequestContext(user_id='alice', project_id='demo',
                                          roles=['member'])

    # --- configuration -------------------------------------------------------

    def _common(self):
        """What every process shares. No [database]: agents never get it."""
        return {
            'DEFAULT': {
                'transport_url': self.url,
                'control_exchange': self.exchange,
                'state_dir': self.state_dir,
                'debug': 'true',
            },
            'conductor': {
                'topic': 'tristate-conductor-%s' % self.tag,
                'periodic_interval': 1,
                # the agents' calls to the conductor; retried until recorded
                'rpc_timeout': 5,
                **({'task_timeouts': ','.join(
                    '%s:%s' % kv for kv in self.task_timeouts.items())}
                   if self.task_timeouts else {}),
            },
            'compute': {
                'topic': 'tristate-compute-%s' % self.tag,
                'heartbeat_interval': 0.5,
                'power_sync_interval': 1,
                'report_retry_max': 1,
                'shutdown_timeout': 0,
            },
            # Reconnect attempts back off 1, 3, 5... s up to this (default
            # 30): a restarted broker is found again within 2 s.
            'oslo_messaging_rabbit': {'rabbit_interval_max': 2,
                                      **self.rabbit},
            # A free port each: several conductors (and other test runs)
            # share the machine.
            'metrics': {'host': '127.0.0.1', 'port': 0},
            # Real notifications, as in production.
            'oslo_messaging_notifications': {'driver': 'messagingv2'},
        }

    def _own_url(self, kind, name=None):
        url = self.urls.get('%s:%s' % (kind, name)) or self.urls.get(kind)
        return {'transport_url': url} if url else {}

    def write_config(self, name, sections):
        path = self.path / ('%s.conf' % name)
        path.write_text(_ini(sections))
        return path

    def configure(self):
        self.common_conf = self.write_config('common', self._common())
        self.own_conf = {name: self.write_config(name, {
            'DEFAULT': {'host': '%s-%s' % (name, self.tag),
                        'log_file': self.path / ('%s.log' % name),
                        **self._own_url('conductor')},
            'database': {'connection': self.db_url},
        }) for name in self.conductors}
        for host in self.hosts:
            sections = {'DEFAULT': {'host': host,
                                    'log_file': self.path / ('%s.log' % host),
                                    **self._own_url('agent', host)}}
            if self.fake_driver:
                sections['fake_driver'] = {
                    key: ','.join('%s:%s' % kv for kv in value.items())
                    if isinstance(value, dict) else value
                    for key, value in self.fake_driver.items()}
            self.own_conf[host] = self.write_config('agent-%s' % host,
                                                    sections)

    # --- processes -----------------------------------------------------------

    def spawn(self, name, kind):
        code = 'import sys; from %s import main; sys.exit(main())' % MAINS[kind]
        env = dict(os.environ, PYTHONUNBUFFERED='1',
                   PYTHONPATH=os.pathsep.join(
                       [SOURCE_ROOT] + [p for p in [os.environ.get(
                           'PYTHONPATH')] if p]))
        self.kinds[name] = kind
        with open(self.path / ('%s.out' % name), 'ab') as out:
            self.procs[name] = subprocess.Popen(
                [sys.executable, '-c', code,
                 '--config-file', str(self.common_conf),
                 '--config-file', str(self.own_conf[name])],
                cwd=self.path, env=env, stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT)
        # Only now: a check_alive() of another thread meanwhile would
        # take the killed process for one that died.
        self.killed.discard(name)
        self.logs[name] = [self.path / ('%s.log' % name),
                           self.path / ('%s.out' % name)]

    def start(self, before_agents=None, *, with_conductors=None):
        """Start the conductors (and, meanwhile, ``with_conductors()``, if
        given), then (after ``before_agents()``, if given) the agents;
        returns once every agent heartbeats."""
        self.configure()
        database = engine.Database(self.db_url)
        migration.upgrade(database)
        self.statedb = db_api.StateDB(database)
        conf = cfg.ConfigOpts()
        tconf.register_all(conf)
        rpc.register_opts(conf)
        conf([], project='tristate',
             default_config_files=[str(self.common_conf)])
        self.bus = rpc.Bus(conf, url=self.urls.get('api'))
        self.api = rpcapi.ConductorAPI(self.bus, conf, statedb=self.statedb,
                                       timeout=15)
        for name in self.conductors:
            self.spawn(name, 'conductor')
        if with_conductors is not None:
            with_conductors()
        # Agents started first would work too, but their first calls would
        # wait out a whole rpc_timeout for a conductor queue not declared yet.
        ping = rpcapi.ConductorAPI(self.bus, conf, timeout=1)
        self.wait_for(lambda: self._answers(ping), 60,
                      'the conductor to answer')
        if before_agents is not None:
            before_agents()
        for host in self.hosts:
            self.spawn(host, 'agent')
        self.wait_for(self._hosts_up, 60, 'every agent to heartbeat')
        return self

    def start_api(self, port, *, rpc_timeout=30, name='api', image=True,
                  wait=True):
        """Start ``tristate-api`` (process ``name``) on 127.0.0.1:``port``
        (noauth: send ``X-Auth-Token: USER:PROJECT``); returns its base URL
        once it listens, with the test image uploaded unless ``image`` is
        false (at once, nothing uploaded, unless ``wait``)."""
        self.own_conf[name] = self.write_config(name, {
            'DEFAULT': {'host': '%s-%s' % (name, self.tag),
                        'log_file': self.path / ('%s.log' % name)},
            'database': {'connection': self.db_url},
            'api': {'listen': '127.0.0.1', 'port': port,
                    'auth_strategy': 'noauth', 'rpc_timeout': rpc_timeout},
        })
        self.spawn(name, 'api')
        url = 'http://127.0.0.1:%d' % port
        if not wait:
            return url
        self.wait_for(lambda: support.listening(port), 60, 'the API to listen')
        if image:
            images_support.upload_image(url)      # what servers boot
        return url

    def _answers(self, conductor_api):
        try:
            conductor_api.list_instances(self.ctx)
        except rpc.MessagingTimeout:
            return False
        return True

    def _hosts_up(self):
        beating = {h['name'] for h in self.statedb.list_hosts()
                   if h['last_heartbeat'] is not None}
        return beating >= set(self.hosts)

    def kill(self, name):
        """SIGKILL process ``name``: no goodbye, nothing cleaned up."""
        self.killed.add(name)
        self.procs[name].kill()
        self.procs[name].wait(timeout=30)

    def freeze(self, name):
        """SIGSTOP process ``name``: it holds what it received, answers
        nothing, until it is killed."""
        self.procs[name].send_signal(signal.SIGSTOP)

    def restart(self, name):
        """Start process ``name`` again, with the same configuration."""
        self.spawn(name, self.kinds[name])

    def check_alive(self):
        for name, proc in self.procs.items():
            if name not in self.killed and proc.poll() is not None:
                raise DaemonDied('%s (pid %d) exited with %s'
                                 % (name, proc.pid, proc.returncode))

    def stop(self, timeout=10):
        """Terminate every process, then kill what did not exit in time."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        if self.bus is not None:
            self.bus.cleanup()      # takes a few seconds: meanwhile they stop
            self.bus = None
        for name, proc in self.procs.items():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with open(self.path / ('%s.out' % name), 'a') as out:
                    out.write('\n*** did not exit %d s after SIGTERM: killed\n'
                              % timeout)
                proc.kill()
                proc.wait(timeout=10)
        if self.statedb is not None:
            self.statedb.db.dispose()

    def open_files(self, name, basename):
        """Files named ``basename`` that process ``name`` has open."""
        fd_dir = '/proc/%d/fd' % self.procs[name].pid
        if not os.path.isdir(fd_dir):
            pytest.skip('no %s to look at open files' % fd_dir)
        found = []
        for fd in os.listdir(fd_dir):
            with contextlib.suppress(OSError):
                target = os.readlink(os.path.join(fd_dir, fd))
                if os.path.basename(target) == basename:
                    found.append(target)
        return found

    def log_tails(self, lines=60):
        for paths in self.logs.values():
            for path in paths:
                try:
                    text = path.read_text(errors='replace').splitlines()
                except FileNotFoundError:
                    continue
                if text:
                    yield ('%s (last %d lines)' % (path.name, lines),
                           '\n'.join(text[-lines:]))

    # --- waiting ---------------------------------------------------------------

    def wait_for(self, predicate, timeout, what):
        """Poll ``predicate`` until it returns something true; fail after
        ``timeout`` seconds or as soon as a daemon dies."""
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError('timed out after %s s waiting for %s'
                                     % (timeout, what))
            time.sleep(POLL)

    def instance(self, uuid):
        return self.statedb.get_instance(uuid)

    def last_task(self, uuid, action):
        """The task_id of the latest ``action`` on ``uuid``, from its action
        log (the instance a call returns may be read after the task ended)."""
        return [e['task_id'] for e in self.statedb.list_actions(uuid)
                if e['action'] == action][-1]

    def agent_tasks(self, host):
        """The task ids in the journal of ``host``'s agent."""
        return set(journal.read_tasks(
            self.state_dir / 'agent' / ('%s-tasks.json' % host)))

    def violations(self):
        """What ``tristate-manage check`` finds wrong on this plane's
        database, one string each (the daemons' defaults: the action
        table's timeouts and allocation ratios, a 1 s reaper period)."""
        found, _seen = checks.find_violations(
            self.statedb.db, checks.Limits(ratios=(4.0, 1.0, 1.0), grace=1))
        return [str(v) for v in found]

    def wait_idle(self, uuid, timeout=30):
        """The instance once no task runs on it."""
        def idle():
            inst = self.instance(uuid)
            return inst if inst['task_id'] is None else None
        return self.wait_for(idle, timeout, 'instance %s to end its task '
                             '(now %s)' % (uuid, self._brief(uuid)))

    def _brief(self, uuid):
        inst = self.instance(uuid)
        return '%s/%s' % (inst['vm_state'], inst['task_state'])

    def act(self, uuid, action, timeout=30, **params):
        self.api.run_action(self.ctx, uuid, action, params)
        return self.wait_idle(uuid, timeout)

    def build(self, name, timeout=30, flavor='tiny'):
        inst = self.api.create_instance(self.ctx, name=name, flavor=flavor,
                                        image_ref='cirros')
        return self.wait_idle(inst['uuid'], timeout)

    def domains(self, host):
        """The fake hypervisor's domains on ``host``, as its store says."""
        return fake.HostStore(str(self.state_dir), host).read()['domains']

    def domain(self, inst):
        return self.domains(inst['host']).get(inst['uuid'])

    def still_works(self, live, hosts):
        """After a fault: each of ``hosts`` stops an ACTIVE instance of
        ``live`` (instance rows), a new build becomes ACTIVE, ``check`` is
        clean and every daemon still runs."""
        stopping = [next(i['uuid'] for i in live if i['host'] == host
                         and i['vm_state'] == vm.ACTIVE) for host in hosts]
        for uuid in stopping:           # all at once, then each waited for
            self.api.run_action(self.ctx, uuid, 'stop', {})
        built = self.api.create_instance(self.ctx, name='after',
                                         flavor='tiny', image_ref='cirros')
        for uuid in stopping:
            assert self.wait_idle(uuid, 60)['vm_state'] == vm.STOPPED
        assert self.wait_idle(built['uuid'], 60)['vm_state'] == vm.ACTIVE
        assert self.violations() == []
        self.check_alive()

    def wait_destroyed(self, inst, timeout):
        """Until the domain of the deleted ``inst`` is gone from its host
        and the conductor has stored that (a full report that no longer
        finds it: power_state NOSTATE). Until then ``check`` rightly names
        a domain reported after the delete."""
        def gone():
            return (self.domain(inst) is None and self.instance(
                inst['uuid'])['power_state'] == power.NOSTATE)
        return self.wait_for(gone, timeout, 'the domain of deleted %s to be '
                             'destroyed and reported gone' % inst['uuid'])


@pytest.fixture
def make_plane(request, tmp_path, broker):
    """``make_plane(fake_driver={...}, conductors=1, postgresql=False)``
    starts a :class:`Plane`; on a fresh PostgreSQL database of the server
    named by ``TRISTATE_TEST_PG_URL`` with ``postgresql=True``, else on
    SQLite."""
    planes = []
    request.node.tristate_planes = planes
    with contextlib.ExitStack() as stack:
        def make(postgresql=False, **kwargs):
            if postgresql:
                admin = request.getfixturevalue('pg_admin')
                database = stack.enter_context(pg_database(admin))
                kwargs['db_url'] = database.url.render_as_string(
                    hide_password=False)
            plane = Plane(tmp_path / ('plane%d' % len(planes)), broker.url,
                          **kwargs)
            plane.path.mkdir()
            planes.append(plane)
            return plane.start()

        yield make
        for plane in planes:
            plane.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        for plane in getattr(item, 'tristate_planes', ()):
            for title, text in plane.log_tails():
                report.sections.append(('log tail: ' + title, text))
    return report

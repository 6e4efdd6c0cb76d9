"""RabbitMQ, PostgreSQL and the daemons as separate processes, for the
scenarios that need them (as tests/integration does).

Broker and database: ``TRISTATE_TEST_RABBIT_URL`` and
``TRISTATE_TEST_PG_URL`` when set (``tools/run-tests.sh`` and
``eval "$(tools/test-services.sh start DIR)"`` set them); otherwise
``tools/test-services.sh start`` is run on ports of the bench's own
(``TRISTATE_BENCH_RABBIT_PORT``, default 57729; ``TRISTATE_BENCH_PG_PORT``,
default 55439) and stopped at the end. Every run gets a fresh PostgreSQL
database, dropped at the end, and an exchange and topics of its own.
"""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid as uuidlib

from oslo_config import cfg

from bench import core
from common import conf as tconf
from common import rpc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, 'tools', 'test-services.sh')
MAINS = {'conductor': 'conductor.cmd.conductor',
         'agent': 'compute_agent.cmd.agent'}


class Unavailable(RuntimeError):
    """RabbitMQ or PostgreSQL cannot be had here."""


def _start_services(tmp):
    if not os.path.exists('/usr/lib/rabbitmq/bin/rabbitmq-server'):
        raise Unavailable('RabbitMQ is not installed and TRISTATE_TEST_'
                          'RABBIT_URL is not set (tools/run-tests.sh '
                          'installs and starts both)')
    env = dict(os.environ,
               TRISTATE_TEST_RABBIT_PORT=os.environ.get(
                   'TRISTATE_BENCH_RABBIT_PORT', '57729'),
               TRISTATE_TEST_PG_PORT=os.environ.get(
                   'TRISTATE_BENCH_PG_PORT', '55439'))
    proc = subprocess.run([SCRIPT, 'start', tmp], env=env, text=True,
                          capture_output=True, check=False, timeout=180)
    if proc.returncode != 0:
        subprocess.run([SCRIPT, 'stop', tmp], check=False, timeout=120)
        raise Unavailable('tools/test-services.sh start failed: %s'
                          % proc.stderr.strip()[-500:])
    found = {}
    for line in proc.stdout.splitlines():
        if line.startswith('export '):
            key, _, value = line[len('export '):].partition('=')
            found[key] = value.strip("'")
    return found['TRISTATE_TEST_RABBIT_URL'], found['TRISTATE_TEST_PG_URL']


@contextlib.contextmanager
def broker_and_database():
    """Yield (rabbit_url, postgresql_url of a fresh database)."""
    with broker_and_server() as (rabbit, server):
        with fresh_database(server) as url:
            yield rabbit, url


@contextlib.contextmanager
def broker_and_server():
    """Yield (rabbit_url, postgresql_url of the server): for a scenario
    that makes several fresh databases (:func:`fresh_database`)."""
    rabbit = os.environ.get('TRISTATE_TEST_RABBIT_URL')
    pg = os.environ.get('TRISTATE_TEST_PG_URL')
    tmp = None
    if not (rabbit and pg):
        tmp = tempfile.mkdtemp(prefix='tristate-bench-services-')
        os.chmod(tmp, 0o755)
        rabbit, pg = _start_services(tmp)
    try:
        yield rabbit, pg
    finally:
        if tmp is not None:
            subprocess.run([SCRIPT, 'stop', tmp], check=False, timeout=120,
                           capture_output=True)
            shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def fresh_database(server_url):
    import sqlalchemy as sa
    name = 'bench_%s' % uuidlib.uuid4().hex[:12]
    admin = sa.create_engine(server_url, isolation_level='AUTOCOMMIT')
    with admin.connect() as conn:
        conn.execute(sa.text('CREATE DATABASE %s' % name))
    try:
        yield str(sa.engine.make_url(server_url).set(database=name)
                  .render_as_string(hide_password=False))
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(
                'SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
                'WHERE datname = :n'), {'n': name})
            conn.execute(sa.text('DROP DATABASE IF EXISTS %s' % name))
        admin.dispose()


@contextlib.contextmanager
def round_daemons(rabbit, server_url, *, hosts):
    """One round's :class:`Daemons` (none started yet): on a fresh, migrated
    database of ``server_url``'s server and in a temporary directory of
    their own, both stopped and removed at the end."""
    from common.db import engine
    from common.db import migration
    tmp = tempfile.mkdtemp(prefix='tristate-bench-')
    try:
        with fresh_database(server_url) as db_url:
            migration.upgrade(engine.Database(db_url))
            daemons = Daemons(rabbit, db_url, hosts=hosts, path=tmp)
            try:
                yield daemons
            finally:
                daemons.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ini(sections):
    """The text of an INI file of ``{section: {key: value}}``."""
    lines = []
    for section, values in sections.items():
        lines.append('[%s]' % section)
        lines.extend('%s = %s' % item for item in values.items())
        lines.append('')
    return '\n'.join(lines)


class Daemons:
    """A conductor and ``hosts`` agents (fake driver) as processes."""

    def __init__(self, rabbit_url, db_url, *, hosts, path, power_sync=60.0):
        self.path = path
        self.tag = uuidlib.uuid4().hex[:12]
        self.db_url = db_url
        self.hosts = ['h%d' % n for n in range(1, hosts + 1)]
        self.procs = {}
        self.common = {
            'DEFAULT': {'transport_url': rabbit_url,
                        'control_exchange': 'tristate-bench-%s' % self.tag,
                        'state_dir': os.path.join(path, 'state')},
            'conductor': {'topic': 'tristate-bench-conductor-%s' % self.tag},
            'compute': {'topic': 'tristate-bench-compute-%s' % self.tag,
                        'power_sync_interval': power_sync},
            'fake_driver': {'vcpus': 4096, 'memory_mb': 4 * 1024 * 1024,
                            'disk_gb': 100000},
        }
        self.common_file = self._write('common', self.common)

    def _write(self, name, sections):
        path = os.path.join(self.path, '%s.conf' % name)
        with open(path, 'w') as f:
            f.write(ini(sections))
        return path

    def conf(self, *, database=True):
        """A configuration of this process on the same bus (and database)."""
        conf = cfg.ConfigOpts()
        tconf.register_all(conf)
        rpc.register_opts(conf)
        conf([], project='tristate', default_config_files=[self.common_file])
        if database:
            conf.set_override('connection', self.db_url, group='database')
        return conf

    def spawn(self, name, kind, own):
        own_file = self._write(name, own)
        code = 'import sys; from %s import main; sys.exit(main())' % MAINS[kind]
        env = dict(os.environ, PYTHONUNBUFFERED='1', PYTHONPATH=os.pathsep.join(
            [ROOT] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
        with open(os.path.join(self.path, '%s.out' % name), 'ab') as out:
            self.procs[name] = subprocess.Popen(
                [sys.executable, '-c', code, '--config-file', self.common_file,
                 '--config-file', own_file],
                cwd=self.path, env=env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT)
        return self.procs[name]

    def start_conductor(self, name='conductor'):
        """A conductor process ``name`` (several may run: each its name)."""
        return self.spawn(name, 'conductor', {
            'DEFAULT': {'host': '%s-%s' % (name, self.tag),
                        'log_file': os.path.join(self.path, '%s.log' % name)},
            # a free port each: several conductors share the machine
            'metrics': {'host': '127.0.0.1', 'port': 0},
            'database': {'connection': self.db_url}})

    def start_agents(self, statedb):
        for host in self.hosts:
            self.spawn(host, 'agent', {'DEFAULT': {
                'host': host,
                'log_file': os.path.join(self.path, '%s.log' % host)}})

        def beating():
            self.check_alive()
            return {h['name'] for h in statedb.list_hosts()
                    if h['last_heartbeat']} >= set(self.hosts)
        core.wait_for(beating, timeout=120, interval=0.05,
                      what='a heartbeat of every agent')

    def check_alive(self):
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                tail = ''
                with contextlib.suppress(OSError):
                    with open(os.path.join(self.path, '%s.out' % name)) as f:
                        tail = f.read()[-1500:]
                raise RuntimeError('%s exited with %s: %s'
                                   % (name, proc.returncode, tail))

    def stop(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def wait_conductor(client, ctx, *, timeout=120):
    """Until a conductor answers on the bus."""
    def answers():
        try:
            client.list_hosts(ctx)
        except rpc.MessagingTimeout:
            return False
        return True
    core.wait_for(answers, timeout=timeout, interval=0.1,
                  what='the conductor to answer')

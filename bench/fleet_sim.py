"""The fleet simulation for capacity planning (issue 26): many simulated
agents heartbeating and reporting their instances to two conductors.

What runs, each its own OS process: two ``tristate-conductor`` daemons on
PostgreSQL; ``--processes`` processes of simulated agents
(:mod:`bench.fleet_agents`: the agent's own Reporter per host, many hosts
per process, at ``[compute] heartbeat_interval`` and
``power_sync_interval``, the defaults unless told); the broker. With
``--cluster`` the broker is a three-node RabbitMQ cluster started here
(``tools/test-services.sh cluster``, quorum queues as the operator guide's
"Scaling out" section says) and PostgreSQL a server initialised here
(``initdb``; ``TRISTATE_FLEET_PG_PORT``, else a free port); without, the
broker and PostgreSQL server of ``TRISTATE_TEST_RABBIT_URL`` and
``TRISTATE_TEST_PG_URL`` (a fresh database), as the CI form uses. All on
127.0.0.1; everything started is stopped at the end.

The instances are seeded in bulk (:func:`bench.fleet.seed` and
:func:`bench.fleet.place`); what is measured is the steady state that
follows. In each stage, over a window after a warm-up: both conductors'
CPU (user + system) and RSS, the depth of every queue (``rabbitmqctl
list_queues name messages``, cluster only, every ``--sample`` s), and each
message's latency from the agent's send to the conductor's answer (the
answer goes once the report is stored). With ``--ramp N`` the stage is run
again with both intervals halved, up to N times, until it breaks: a message
failed, the 99th percentile of latency passed the heartbeat interval, a
host was seen down, or the conductor queue was still deep at the window's
end. A stage whose simulated agents fell behind their own schedule says so
(the offered load was then less than the intervals ask: the rate printed is
what was sent); the ramp goes on. Then ``tristate-manage check`` on the database.

``python -m bench.fleet_sim --help``; ``tests/integration/test_fleet_sim.py``
runs it (small in CI, at full size in ``tox -e faults``).
"""

import argparse
import contextlib
import dataclasses
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import psutil
from oslo_config import cfg

from bench import core
from bench import fleet
from bench import services
from common import conf as tconf
from common import context
from common import rpc
from common.cmd import manage
from common.db import api as db_api
from common.db import engine
from common.db import migration
from conductor import rpcapi

ROOT = services.ROOT
SCRIPT = services.SCRIPT
PREFIX = 'sim'
CAPACITY = {'vcpus': 4096, 'memory_mb': 4 * 1024 * 1024, 'disk_gb': 100000}
# [oslo_messaging_rabbit] for a cluster, as the operator guide says.
QUORUM = {'rabbit_quorum_queue': 'true',
          'rabbit_transient_quorum_queue': 'true'}


@dataclasses.dataclass
class Size:
    agents: int = 1000
    per_agent: int = 100
    processes: int = 4
    heartbeat: float = 10.0       # [compute] heartbeat_interval's default
    power_sync: float = 60.0      # [compute] power_sync_interval's default
    seconds: float = 120.0        # the measured window of a stage
    warmup: float = 15.0
    ramp: int = 0                 # stages with the intervals halved
    sample: float = 10.0
    workers: int = 32             # threads per agents' process


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _run(args, timeout, env=None):
    done = subprocess.run(args, capture_output=True, text=True, check=False,
                          timeout=timeout, env=env)
    if done.returncode != 0:
        raise RuntimeError('%s failed (%d): %s%s' % (
            ' '.join(args[:4]), done.returncode, done.stdout[-800:],
            done.stderr[-800:]))
    return done.stdout


class Cluster:
    """Three RabbitMQ nodes (tools/test-services.sh cluster)."""

    SERVER = '/usr/lib/rabbitmq/bin/rabbitmq-server'

    def __init__(self, path):
        self.path = path
        self.url = None

    def start(self):
        base = os.environ.get('TRISTATE_TEST_RABBIT_CLUSTER_PORT')
        while base is None:
            port = _free_port()
            if port + 17 < 65536 and not any(
                    core.listening(port + n) for n in range(17)):
                base = str(port)
        out = _run([SCRIPT, 'cluster', self.path, 'start'], 600, env=dict(
            os.environ, TRISTATE_TEST_RABBIT_CLUSTER_PORT=base))
        self.url = next(line.split('=', 1)[1] for line in out.splitlines()
                        if 'TRISTATE_TEST_RABBIT_CLUSTER_URL=' in line)
        return self

    def depths(self):
        """{queue: messages ready + unacknowledged} (rabbitmqctl)."""
        out = _run([SCRIPT, 'cluster', self.path, 'ctl', '0', 'list_queues',
                    'name', 'messages', '--formatter', 'json'], 60)
        return {row['name']: row['messages'] for row in json.loads(out)}

    def queue_types(self):
        out = _run([SCRIPT, 'cluster', self.path, 'ctl', '0', 'list_queues',
                    'name', 'type', '--formatter', 'json'], 60)
        return {row['name']: row['type'] for row in json.loads(out)}

    def stop(self):
        subprocess.run([SCRIPT, 'cluster', self.path, 'stop'],
                       capture_output=True, timeout=300, check=False)


class PostgreSQL:
    """A PostgreSQL server of its own: ``initdb``, then
    ``tools/test-services.sh pg DIR start|stop``."""

    def __init__(self, path):
        self.path = path
        self.port = int(os.environ.get('TRISTATE_FLEET_PG_PORT')
                        or _free_port())
        self.url = ('postgresql+psycopg2://postgres@127.0.0.1:%d/postgres'
                    % self.port)

    def start(self):
        pg_dir = os.path.join(self.path, 'pg')
        bins = sorted(d for d in os.listdir('/usr/lib/postgresql'))
        initdb = '/usr/lib/postgresql/%s/bin/initdb' % bins[-1]
        os.makedirs(pg_dir)
        shutil.chown(pg_dir, 'postgres', 'postgres')
        os.chmod(pg_dir, 0o700)
        _run(['setpriv', '--reuid=postgres', '--regid=postgres',
              '--init-groups', initdb, '-D', os.path.join(pg_dir, 'data'),
              '-A', 'trust', '-U', 'postgres'], 300)
        with open(os.path.join(pg_dir, 'port'), 'w') as f:
            f.write('%d\n' % self.port)
        _run([SCRIPT, 'pg', self.path, 'start'], 300)
        return self

    def stop(self):
        subprocess.run([SCRIPT, 'pg', self.path, 'stop'], capture_output=True,
                       timeout=120, check=False)


@contextlib.contextmanager
def servers(path, *, cluster):
    """Yield (rabbit url, PostgreSQL server url, the cluster or None)."""
    if not cluster:
        with services.broker_and_server() as (rabbit, pg):
            yield rabbit, pg, None
        return
    # Users postgres and rabbitmq enter it: not under a private directory.
    own = tempfile.mkdtemp(prefix='tristate-fleet-servers-')
    os.chmod(own, 0o755)
    made = []
    try:
        made.append(PostgreSQL(own))
        made[-1].start()
        made.append(Cluster(own))
        made[-1].start()
        yield made[1].url, made[0].url, made[1]
    finally:
        if os.path.isdir(os.path.join(own, 'cluster')):
            shutil.copytree(os.path.join(own, 'cluster'),
                            os.path.join(path, 'rabbitmq-logs'),
                            ignore=shutil.ignore_patterns('mnesia', 'home'),
                            dirs_exist_ok=True)
        for server in reversed(made):
            server.stop()
        shutil.rmtree(own, ignore_errors=True)


class Stage:
    """The figures of one stage."""

    def __init__(self, size, heartbeat, power_sync):
        self.heartbeat = heartbeat
        self.power_sync = power_sync
        self.hosts = size.agents
        self.instances = size.agents * size.per_agent
        self.window = 0.0
        self.cpu = []              # per conductor, seconds in the window
        self.rss = []              # per conductor, largest MB seen
        self.depth = 0             # largest conductor queue depth seen
        self.depth_any = (0, None)
        self.depth_end = 0
        self.load = []
        self.latency = []
        self.full_latency = []
        self.failed = {}
        self.lag = 0.0
        self.down = 0
        self.broken = []           # what the product failed at
        self.behind = None         # the load generator's own shortfall

    @property
    def cores(self):
        return sum(self.cpu) / self.window if self.window else 0.0

    def lines(self):
        lat = self.latency
        rate = len(lat) / self.window if self.window else 0.0
        cores = self.cores
        out = [
            'stage: %d hosts x %d = %d instances, heartbeat every %g s, '
            'full report every %g s; %.0f s measured' % (
                self.hosts, self.instances // max(self.hosts, 1),
                self.instances, self.heartbeat, self.power_sync,
                self.window),
            '  messages: %.1f/s (%d carried a full report); failed: %s; '
            'worst lag of a sender: %.2f s' % (
                rate, len(self.full_latency), self.failed, self.lag),
            '  conductors CPU: %s of a core (total %.3f cores); RSS %s MB' % (
                ', '.join('%.1f %%' % (100 * c / self.window)
                          for c in self.cpu), cores,
                ', '.join('%.0f' % r for r in self.rss)),
            '  per conductor core: %s hosts, %s instances; conductor CPU '
            '%.2f ms a message' % (
                _per(self.hosts, cores), _per(self.instances, cores),
                1e3 * sum(self.cpu) / max(len(lat), 1)),
            '  latency send -> stored: p50 %.1f ms, p95 %.1f ms, p99 %.1f ms,'
            ' max %.1f ms; full reports p50 %.1f ms, p99 %.1f ms' % tuple(
                1e3 * v for v in (
                    core.percentile(lat, 50), core.percentile(lat, 95),
                    core.percentile(lat, 99), max(lat, default=0.0),
                    core.percentile(self.full_latency, 50),
                    core.percentile(self.full_latency, 99))),
            '  queue depth: conductor topic max %d (at the end %d); any queue'
            ' max %d (%s)' % (self.depth, self.depth_end, self.depth_any[0],
                              self.depth_any[1]),
            '  hosts seen down at the end: %d; machine load (1 min) %s' % (
                self.down, ', '.join('%.1f' % x for x in self.load)),
            '  %s%s' % ('BROKE: ' + '; '.join(self.broken) if self.broken
                        else 'kept up', '; ' + self.behind if self.behind
                        else ''),
        ]
        return out

    def judge(self):
        if sum(self.failed.values()):
            self.broken.append('%d message(s) failed' % sum(
                self.failed.values()))
        p99 = core.percentile(self.latency, 99)
        if not self.latency or p99 > self.heartbeat:
            self.broken.append('latency p99 %.1f s > heartbeat interval' % p99)
        if self.down:
            self.broken.append('%d host(s) seen down' % self.down)
        if self.depth_end > self.hosts // 2:
            self.broken.append('conductor queue still %d deep' %
                               self.depth_end)
        if self.lag > self.heartbeat:
            self.behind = ('the simulated agents fell %.1f s behind their '
                           'schedule (the load generator, not the conductor)'
                           % self.lag)
        return not self.broken


def _per(count, cores):
    return '%.0f' % (count / cores) if cores > 0 else 'n/a'


class Fleet:
    """Seeded database, two conductors, the agents' processes per stage."""

    def __init__(self, rabbit_url, db_url, path, size, *, quorum):
        self.size = size
        self.path = path
        self.daemons = services.Daemons(rabbit_url, db_url, hosts=0,
                                        path=path)
        common = self.daemons.common
        common['oslo_messaging_rabbit'] = dict(QUORUM) if quorum else {}
        common['metrics'] = {'host': '127.0.0.1', 'port': 0}
        common['fake_driver'] = dict(CAPACITY)
        # The agents' [compute] intervals: the defaults unless a stage says.
        common['compute'].pop('power_sync_interval', None)
        self.daemons.common_file = self.daemons._write('common', common)
        self.db_url = db_url
        self.statedb = None
        self.conductors = {}
        self.own = {}
        self.names = fleet.host_names(size.agents, PREFIX)

    def prepare(self):
        database = engine.Database(self.db_url)
        migration.upgrade(database)
        self.statedb = db_api.StateDB(database)

    def seed(self):
        conf = self.daemons.conf(database=False)
        try:
            count = fleet.seed(self.statedb, conf.state_dir, self.names,
                               self.size.per_agent)
        finally:
            conf.reset()
        fleet.place(self.statedb, self.names, **CAPACITY)
        return count

    def start_conductors(self, count=2):
        """Spawn them (they boot while the instances are seeded)."""
        for n in range(count):
            name = 'conductor%d' % n
            self.own[name] = {
                'DEFAULT': {'host': '%s-%s' % (name, self.daemons.tag),
                            'log_file': os.path.join(self.path,
                                                     '%s.log' % name)},
                'database': {'connection': self.db_url}}
            proc = self.daemons.spawn(name, 'conductor', self.own[name])
            self.conductors[name] = psutil.Process(proc.pid)

    def wait_conductors(self):
        conf = self.daemons.conf(database=False)
        bus = rpc.Bus(conf)
        try:
            services.wait_conductor(rpcapi.ConductorAPI(bus, conf, timeout=2),
                                    context.get_admin_context(), timeout=180)
        finally:
            bus.cleanup()
            conf.reset()

    def _cpu(self):
        return [sum(p.cpu_times()[:2]) for p in self.conductors.values()]

    def _agents_conf(self, heartbeat, power_sync):
        sections = json.loads(json.dumps(self.daemons.common))
        sections['compute'].update(heartbeat_interval=heartbeat,
                                   power_sync_interval=power_sync)
        name = 'agents-%g' % heartbeat
        return self.daemons._write(name, sections)

    def _spawn_agents(self, conf_file, go, seconds):
        procs, outs = [], []
        per = -(-self.size.agents // self.size.processes)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [ROOT] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
        for n, first in enumerate(range(0, self.size.agents, per)):
            out = os.path.join(self.path, 'agents-%d.json' % n)
            outs.append(out)
            with open(os.path.join(self.path, 'agents-%d.out' % n),
                      'ab') as log:
                procs.append(subprocess.Popen(
                    [sys.executable, '-m', 'bench.fleet_agents',
                     '--config-file', conf_file, '--hosts', '%s:%d:%d' % (
                         PREFIX, first, min(per, self.size.agents - first)),
                     '--go', go, '--seconds', repr(seconds),
                     '--workers', str(self.size.workers), '--out', out],
                    cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT))
        return procs, outs

    def _go(self, procs, outs, go, ready):
        """Once ``ready()`` returned and every agents' process is ready
        (they boot meanwhile): their first period starts in a second.
        Returns its time."""
        def all_ready():
            for proc, out in zip(procs, outs, strict=True):
                if proc.poll() is not None:
                    raise RuntimeError('agents\' process %s exited with %s'
                                       % (out, proc.returncode))
            return all(os.path.exists(out + '.ready') for out in outs)
        if ready is not None:
            ready()
        core.wait_for(all_ready, timeout=600, interval=0.1,
                      what='the simulated agents to be ready')
        start_at = time.monotonic() + 1.0
        with open(go + '.tmp', 'w') as f:
            f.write(repr(start_at))
        os.rename(go + '.tmp', go)
        return start_at

    def stage(self, heartbeat, power_sync, depths=None, ready=None):
        """Run the agents at these intervals; the stage's figures.
        ``ready``: called once they are ready, before their first
        message (the conductors are waited for there). A stage of shorter
        intervals than the first is measured for as many periods (not less
        than 30 s)."""
        size = self.size
        stage = Stage(size, heartbeat, power_sync)
        scale = heartbeat / size.heartbeat
        seconds = max(size.seconds * scale, min(size.seconds, 30.0))
        warmup = size.warmup * scale
        go = os.path.join(self.path, 'go-%g' % heartbeat)
        procs, outs = self._spawn_agents(
            self._agents_conf(heartbeat, power_sync), go, warmup + seconds)
        try:
            begin = self._go(procs, outs, go, ready) + warmup
            self._watch(stage, begin, begin + seconds, depths)
        finally:
            for proc in procs:
                try:
                    proc.wait(timeout=max(60.0, 3 * heartbeat))
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self._tally(stage, outs, begin, begin + seconds)
        stage.down = self._down(heartbeat)
        stage.judge()
        return stage

    def _watch(self, stage, begin, end, depths):
        """Sample RSS, queue depths and load until ``end``; the conductors'
        CPU over [begin, end]."""
        time.sleep(max(0.0, begin - time.monotonic()))
        cpu0 = self._cpu()
        stage.rss = [0.0] * len(self.conductors)
        topic = self.daemons.common['conductor']['topic']
        while True:
            self.daemons.check_alive()
            stage.rss = [max(r, p.memory_info().rss / 2**20) for r, p in zip(
                stage.rss, self.conductors.values(), strict=True)]
            stage.load.append(os.getloadavg()[0])
            if depths is not None:
                found = depths()
                mine = sum(v for k, v in found.items() if k.startswith(topic))
                stage.depth = max(stage.depth, mine)
                stage.depth_end = mine
                worst = max(found.items(), key=lambda kv: kv[1],
                            default=(None, 0))
                if worst[1] > stage.depth_any[0]:
                    stage.depth_any = (worst[1], worst[0])
            left = end - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(self.size.sample, left))
        stage.cpu = [b - a for a, b in zip(cpu0, self._cpu(), strict=True)]
        stage.window = time.monotonic() - begin

    @staticmethod
    def _tally(stage, outs, begin, end):
        """The messages sent in [begin, end); every failure (warm-up too)."""
        for out in outs:
            with open(out) as f:
                got = json.load(f)
            for began, took, full, lag in got['sent']:
                if begin <= began < end:
                    stage.latency.append(took)
                    stage.lag = max(stage.lag, lag)
                    if full:
                        stage.full_latency.append(took)
            for _began, _took, full, _lag in got['failed']:
                kind = 'full' if full else 'heartbeat'
                stage.failed[kind] = stage.failed.get(kind, 0) + 1

    def _down(self, heartbeat):
        """Simulated hosts whose last heartbeat is older than the
        conductor's ``service_down_time`` (60 s), or three of this stage's
        heartbeat intervals if longer."""
        limit = max(60.0, 3 * heartbeat)
        now = db_api.utcnow()
        hosts = {h['name']: h for h in self.statedb.list_hosts()}
        return sum(1 for name in self.names
                   if hosts.get(name, {}).get('last_heartbeat') is None
                   or (now - hosts[name]['last_heartbeat']).total_seconds()
                   > limit)

    def check(self):
        """``tristate-manage check`` on the database (its ``main``, with a
        configuration of its own): (exit code, output)."""
        own = self.daemons._write('manage', self.own['conductor0'])
        conf = cfg.ConfigOpts()
        tconf.register_all(conf)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = manage.main(['--config-file', self.daemons.common_file,
                                '--config-file', own, 'check'], conf=conf)
        return code, out.getvalue().strip()

    def stop(self):
        self.daemons.stop()
        if self.statedb is not None:
            self.statedb.db.dispose()


def run(size, *, cluster, path=None, say=print):
    """The whole simulation; returns {'stages', 'check', 'queue_types',
    'seconds'} (the stages' :class:`Stage`, check's (code, output))."""
    own_tmp = path is None
    path = path or tempfile.mkdtemp(prefix='tristate-fleet-')
    started = time.monotonic()
    result = {'stages': [], 'check': None, 'queue_types': {}}
    try:
        with servers(path, cluster=cluster) as (rabbit, pg, broker):
            say('servers up after %.0f s (%s)' % (
                time.monotonic() - started,
                'three-node RabbitMQ cluster, own PostgreSQL' if cluster
                else 'the test broker and PostgreSQL'))
            with services.fresh_database(pg) as db_url:
                _simulate(size, path, rabbit, db_url, broker, result, say)
    finally:
        if own_tmp:
            shutil.rmtree(path, ignore_errors=True)
    result['seconds'] = time.monotonic() - started
    return result


def _simulate(size, path, rabbit, db_url, broker, result, say):
    flt = Fleet(rabbit, db_url, path, size, quorum=broker is not None)
    try:
        flt.prepare()
        flt.start_conductors(2)

        def first_ready():
            # The agents' processes and the conductors boot meanwhile.
            t0 = time.monotonic()
            count = flt.seed()
            say('seeded %d instances on %d hosts in %.0f s' % (
                count, size.agents, time.monotonic() - t0))
            flt.wait_conductors()
        depths = broker.depths if broker is not None else None
        heartbeat, power_sync = size.heartbeat, size.power_sync
        for n in range(size.ramp + 1):
            stage = flt.stage(heartbeat, power_sync, depths,
                              ready=first_ready if n == 0 else None)
            result['stages'].append(stage)
            say('\n'.join(stage.lines()))
            if stage.broken or n == size.ramp:
                break
            heartbeat, power_sync = heartbeat / 2, power_sync / 2
        if broker is not None:
            result['queue_types'] = broker.queue_types()
        flt.daemons.check_alive()
    finally:
        flt.stop()
    result['check'] = flt.check()
    say('tristate-manage check: %s' % result['check'][1].splitlines()[-1])


def parse(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m bench.fleet_sim', description=__doc__.split('\n')[0])
    defaults = Size()
    for field in dataclasses.fields(Size):
        parser.add_argument('--' + field.name.replace('_', '-'),
                            type=field.type if field.type in (int, float)
                            else float, default=getattr(defaults, field.name))
    parser.add_argument('--cluster', action='store_true',
                        help='start a three-node RabbitMQ cluster and a '
                        'PostgreSQL server of its own (else use '
                        'TRISTATE_TEST_RABBIT_URL and TRISTATE_TEST_PG_URL)')
    parser.add_argument('--path', help='keep the logs and configs here '
                        '(default: a temporary directory, removed)')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    size = Size(**{f.name: getattr(args, f.name)
                   for f in dataclasses.fields(Size)})
    if args.path:
        os.makedirs(args.path, exist_ok=True)
    result = run(size, cluster=args.cluster, path=args.path)
    print('took %.0f s' % result['seconds'])
    return 0 if result['check'][0] == 0 else 1


if __name__ == '__main__':
    sys.exit(main())

"""One scheduler decision with thousands of hosts.

Target: median ≤ 5 ms with 5,000 hosts. The hosts are registered by
heartbeats (as agents would) in a fresh database (SQLite, or PostgreSQL with
``--database postgresql``: ``TRISTATE_TEST_PG_URL``'s server, or one
started as :mod:`bench.services` says); each decision is
:meth:`Scheduler.select_and_allocate` for a new instance (filters and
weigher in one query, then the conditional UPDATE that allocates), timed
alone. Besides the wall time, the CPU time of the deciding thread is given:
on a machine others share, it moves less with their load (on SQLite it
holds the database's own work too; on PostgreSQL the server's is not in
it).
"""

import contextlib
import shutil
import tempfile
import time

from bench import core
from bench import plane as plane_mod
from bench import services
from common import context
from common.db import api as db_api
from common.db import engine
from common.db import migration
from conductor import scheduler as scheduler_mod


NAME = 'scheduler'
TINY = ['--hosts', '50', '--decisions', '10']


class _Silent:
    """A notifier that sends nothing: the decision is what is measured."""

    def info(self, *args):
        pass

    error = info


def add_arguments(parser):
    parser.add_argument('--hosts', type=int, default=5000)
    parser.add_argument('--decisions', type=int, default=200)
    parser.add_argument('--database', choices=['sqlite', 'postgresql'],
                        default='sqlite')


def _flavor(conf):
    from common import flavors
    return flavors.configured(conf, plane_mod.FLAVOR)


@contextlib.contextmanager
def _database_url(kind):
    """None (SQLite in the state directory) or a fresh PostgreSQL database."""
    if kind == 'sqlite':
        yield None
        return
    with services.broker_and_database() as (_rabbit, url):
        yield url


def _decide(args, conf):
    database = engine.Database.from_conf(conf)
    try:
        migration.upgrade(database)
        statedb = db_api.StateDB(database)
        for n in range(args.hosts):
            statedb.host_heartbeat('host%05d' % n, vcpus=64, memory_mb=262144,
                                   disk_gb=4000)
        sched = scheduler_mod.Scheduler(statedb, _Silent(), conf)
        flavor = _flavor(conf)
        ctx = context.RequestContext(user_id='bench', project_id='bench')
        wall, cpu = [], []
        for i in range(args.decisions):
            inst = statedb.create_instance(ctx, {
                'name': 'sched%d' % i, 'project_id': 'bench',
                'user_id': 'bench', 'flavor_name': flavor.name,
                'vcpus': flavor.vcpus, 'memory_mb': flavor.memory_mb,
                'disk_gb': flavor.disk_gb, 'image_ref': plane_mod.IMAGE})
            task_ctx = ctx.for_task(inst['task_id'])
            started, used = time.perf_counter(), time.thread_time()
            sched.select_and_allocate(task_ctx, inst['uuid'], flavor)
            cpu.append((time.thread_time() - used) * 1e3)
            wall.append((time.perf_counter() - started) * 1e3)
        return wall, cpu
    finally:
        database.engine.dispose()


def run(args):
    tmp = tempfile.mkdtemp(prefix='tristate-bench-')
    conf = plane_mod.new_conf(tmp)
    try:
        with _database_url(args.database) as url:
            if url is not None:
                conf.set_override('connection', url, group='database')
            wall, cpu = _decide(args, conf)
    finally:
        conf.reset()
        shutil.rmtree(tmp, ignore_errors=True)
    size = '%d hosts, %d decisions, %s' % (
        args.hosts, args.decisions,
        'SQLite' if args.database == 'sqlite' else 'PostgreSQL')
    return [
        core.Figure(NAME, 'decision, median', core.median(wall), 'ms', '<=',
                    5, size=size),
        core.Figure(NAME, 'decision, p99', core.percentile(wall, 99), 'ms',
                    size=size),
        core.Figure(NAME, 'decision CPU, median', core.median(cpu), 'ms',
                    size=size),
    ]

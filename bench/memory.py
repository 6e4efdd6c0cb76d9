"""Memory: agent RSS with 100 domains; conductor RSS at 100,000 instances.

Targets: agent RSS ≤ 80 MB with 100 domains; conductor RSS ≤ 300 MB at
100,000 instances. Both are real daemons (``tristate-compute-agent`` on
the fake driver, ``tristate-conductor``) on RabbitMQ and PostgreSQL (see
:mod:`bench.services`). The conductor's database holds ``--instances``
instances on simulated hosts (:mod:`bench.fleet`), which send one full
power report each, so that the conductor has handled every instance; the
agent's host holds ``--domains`` domains, whose instances it reports. RSS
(psutil) is read once both have reported and settled.
"""

import shutil
import tempfile
import time

import psutil

from bench import core
from bench import fleet
from bench import plane as plane_mod
from bench import reports
from bench import services
from common import states
from common.db import api as db_api

NAME = 'memory'
TINY = ['--instances', '100', '--domains', '5', '--settle', '0.5']
AGENT = 'hmem'
PER_HOST = 20


def add_arguments(parser):
    parser.add_argument('--instances', type=int, default=100000,
                        help='instances in the conductor\'s database')
    parser.add_argument('--domains', type=int, default=100,
                        help='domains on the real agent\'s host')
    parser.add_argument('--settle', type=float, default=3.0,
                        help='seconds to wait before reading RSS')


def _agent_reported(statedb, count):
    # The conductor writes only changes: the agent's instances are seeded
    # as NOSTATE, so its first full report shows as RUNNING everywhere.
    insts = statedb.list_instances(host=AGENT)
    return len(insts) == count and all(
        i['power_state'] == states.power.RUNNING for i in insts)


def _forget_power(statedb):
    statedb.db.transaction(lambda conn: conn.execute(
        db_api.I.update().where(db_api.I.c.host == AGENT)
        .values(power_state=states.power.NOSTATE)))


def _measure(flt, args):
    fleet.seed(flt.statedb, flt.conf.state_dir, [AGENT], args.domains)
    _forget_power(flt.statedb)
    flt.start()
    agent = psutil.Process(flt.daemons.spawn(AGENT, 'agent', {'DEFAULT': {
        'host': AGENT, 'log_file': '%s/%s.log' % (flt.daemons.path, AGENT)}}
    ).pid)
    flt.cycle(0)
    core.wait_for(lambda: _agent_reported(flt.statedb, args.domains),
                  timeout=120, interval=0.1,
                  what='the agent\'s first full report')
    time.sleep(args.settle)
    flt.daemons.check_alive()
    return agent.memory_info().rss / 2**20, flt.rss_mb()


def run(args):
    plane_mod.quiet_logs()
    hosts = max(1, args.instances // PER_HOST)
    tmp = tempfile.mkdtemp(prefix='tristate-bench-')
    try:
        with services.broker_and_database() as (rabbit, db_url):
            flt = reports.Fleet(rabbit, db_url, tmp, hosts, PER_HOST, 8)
            try:
                agent_rss, conductor_rss = _measure(flt, args)
            finally:
                flt.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    total = flt.instances + args.domains
    # A target is judged only at (or above) the size it is set for.
    agent_target = ('<=', 80) if args.domains >= 100 else (None, None)
    conductor_target = ('<=', 300) if total >= 100000 else (None, None)
    return [
        core.Figure(NAME, 'agent RSS with %d domains' % args.domains,
                    agent_rss, 'MB', *agent_target,
                    size='%d domains, fake driver' % args.domains),
        core.Figure(NAME, 'conductor RSS at %d instances' % total,
                    conductor_rss, 'MB', *conductor_target,
                    size='%d instances, every one reported once' % total),
    ]

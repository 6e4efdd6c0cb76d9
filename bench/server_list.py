"""GET /servers/detail of many servers, at Nova's 2.1 and at Tristate's 2.101.

Target (issue 22): the time stays within 10 % of what it was before the
bodies followed Nova's microversions (compare runs of this scenario on
both trees; bench/RESULTS.md). ``--servers`` ACTIVE instances of the
bench user's project are written to the database directly
(:func:`bench.fleet.seed`, on the plane's own hosts), then ``--runs`` GETs
at each microversion are timed on a kept-alive connection, after
``--warmup`` ones; the figures are the medians (ms per whole list), and
the least CPU time one GET took in this process (the API serves from a
thread of it; the client's parsing of the answer included): on a shared
machine, that one moves far less with the load than the wall-clock time.
"""

import time

from bench import core
from bench import fleet
from bench import plane as plane_mod

NAME = 'server_list'
TINY = ['--servers', '50', '--runs', '3', '--warmup', '1']
VERSIONS = ('2.1', '2.101')


def add_arguments(parser):
    parser.add_argument('--servers', type=core.positive_int, default=1000,
                        help='servers in the list (default 1000)')
    parser.add_argument('--runs', type=core.positive_int, default=20,
                        help='GETs timed per microversion (default 20)')
    parser.add_argument('--warmup', type=int, default=3,
                        help='GETs made first, not timed (default 3)')


def _timed(http, version, count):
    """(wall ms of each GET, CPU ms of each, servers listed)."""
    http.headers['OpenStack-API-Version'] = 'compute %s' % version
    times, cpu = [], []
    for _ in range(count):
        started, cpu_started = time.monotonic(), time.process_time()
        status, body = http.request('GET', '/servers/detail?limit=%d'
                                    % 10 ** 6)
        times.append((time.monotonic() - started) * 1e3)
        cpu.append((time.process_time() - cpu_started) * 1e3)
        if status != 200:
            raise RuntimeError('GET /servers/detail answered %d: %s'
                               % (status, body))
    return times, cpu, len(body['servers'])


def run(args):
    figures = []
    with plane_mod.Plane(hosts=2, periodic_jobs=False,
                         api={'max_limit': 10 ** 6}) as plane:
        hosts = [h['name'] for h in plane.statedb.list_hosts()]
        per_host = -(-args.servers // len(hosts))
        fleet.seed(plane.statedb, plane.conf.state_dir, hosts, per_host)
        http = plane.http()
        try:
            for version in VERSIONS:
                _timed(http, version, args.warmup)
                times, cpu, listed = _timed(http, version, args.runs)
                size = '%d servers, %d GETs' % (listed, args.runs)
                figures.append(core.Figure(
                    NAME, 'GET /servers/detail at %s, median' % version,
                    core.median(times), 'ms', size=size))
                figures.append(core.Figure(
                    NAME, 'GET /servers/detail at %s, CPU, least' % version,
                    min(cpu), 'ms', size=size))
        finally:
            http.close()
    return figures

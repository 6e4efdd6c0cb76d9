"""One build through the API to ACTIVE, embedded plane, fake driver.

Target: median ≤ 20 ms. Each run is POST /v2.1/servers on a kept-alive
connection, then the instance's row polled every millisecond until it is
ACTIVE with no task; builds run one after the other. The CPU per build
of the whole process (``time.process_time()`` over the measured builds)
is printed too, without a target.
"""

import time

from bench import core
from bench import plane as plane_mod

NAME = 'build_one'
TINY = ['--runs', '3', '--warmup', '1']


def add_arguments(parser):
    parser.add_argument('--runs', type=int, default=50,
                        help='builds measured (default 50)')
    parser.add_argument('--warmup', type=int, default=5,
                        help='builds made first, not measured (default 5)')
    parser.add_argument('--hosts', type=int, default=4)
    parser.add_argument('--network', action='store_true',
                        help='a port and address on a network for every '
                             'build (issue 23)')
    parser.add_argument('--unpinned', action='store_true',
                        help='leave the plane\'s threads on every CPU '
                             'instead of one (bench.plane)')


def run(args):
    times = []
    with plane_mod.Plane(hosts=args.hosts, network=args.network,
                         pin=not args.unpinned) as plane:
        http = plane.http()
        try:
            for i in range(args.warmup + args.runs):
                if i == args.warmup:
                    used = time.process_time()
                started = time.monotonic()
                uuid = http.create('one%d' % i)
                plane.wait_vm_state(uuid, 'active')
                if i >= args.warmup:
                    times.append((time.monotonic() - started) * 1e3)
            used = time.process_time() - used
        finally:
            http.close()
    size = '%d builds, %d hosts%s' % (args.runs, args.hosts,
                                      ', a port each' if args.network else '')
    return [
        core.Figure(NAME, 'build to ACTIVE, median', core.median(times), 'ms',
                    '<=', 20, size=size),
        core.Figure(NAME, 'build to ACTIVE, p90', core.percentile(times, 90),
                    'ms', size=size),
        core.Figure(NAME, 'CPU per build, whole process',
                    used * 1e3 / args.runs, 'ms', size=size),
    ]

"""Builds in a burst through the API: 8 concurrent clients, 4 hosts, until
every instance is ACTIVE; then a bigger burst, which must be no slower per
server.

Targets: ≥ 100 servers/s for 200; 1,000 no slower per server than 200.
The plane's threads run on one CPU, as ``[DEFAULT] pin_to_cpu`` pins a
daemon's (``--unpinned``: on every CPU), and the clients post from a child
process (``--clients-here``: from this one).
The clock starts before the first POST and stops when the last instance is
ACTIVE with no task (rows polled every 10 ms).

Every burst runs on a fresh plane, ``--rounds`` times per size, and the
figures are the medians (the issue's "medians over repeated runs"): a
single burst of 200 lasts about a second, and one run's rate moves by
±10 % with the machine, so the ratio of two single runs says more about
the machine than about the code. The sizes alternate which runs first in
each round, so that neither always pays the process's first-use costs.
The ratio held to the target is that of the two median rates; the median
of the rounds' own ratios (the two bursts of a round run back to back) is
printed too, without a target. So are the CPU per build of the whole
process (API, conductor, fake agents: ``time.process_time()`` around each
burst; the clients post from a child process, :mod:`bench.clients`, and
count only with ``--clients-here``) and the conductor's CPU per create
call (its thread's ``time.thread_time()`` across ``Flows.create``: the
create transaction, addresses included, and the placement; the machine's
load does not count in it as it does in wall time), to compare forms such
as ``--network`` (issue 23: port allocation ≤ 1 ms of conductor CPU per
build).
"""

import time

from bench import clients as clients_mod
from bench import core
from bench import plane as plane_mod

NAME = 'burst'
TINY = ['--builds', '8', '--big', '16', '--rounds', '2']


def add_arguments(parser):
    parser.add_argument('--builds', type=int, default=200,
                        help='servers in the burst (default 200)')
    parser.add_argument('--big', type=int, default=1000,
                        help='servers in the bigger burst (default 1000; 0 '
                             'skips it)')
    parser.add_argument('--clients', type=int, default=8)
    parser.add_argument('--hosts', type=int, default=4)
    parser.add_argument('--network', action='store_true',
                        help='a port and address on a network for every '
                             'build (issue 23)')
    parser.add_argument('--unpinned', action='store_true',
                        help='leave the plane\'s threads on every CPU '
                             '(as before the eighteenth session) instead of '
                             'one, as [DEFAULT] pin_to_cpu does')
    parser.add_argument('--clients-here', action='store_true',
                        help='post from threads of the measuring process '
                             '(as before the eighteenth session) instead of '
                             'a child process')
    core.add_rounds(parser, default=5)


def burst(plane, count, clients, tag, *, child=True):
    """Seconds from the first POST until ``count`` servers are ACTIVE;
    the clients post from a child process (:mod:`bench.clients` says why),
    or with ``child=False`` from threads of this one."""
    timeout = max(120.0, count * 0.5)
    if child:
        with plane.client_process(clients) as posting:
            return _until_active(plane, lambda: posting.create(
                tag, count, timeout=timeout), timeout)
    with plane_mod.connections(plane, clients) as conns:
        return _until_active(plane, lambda: clients_mod.run_clients(
            clients, lambda n, i: conns[n].create('%s%d' % (tag, i)),
            list(range(count)))[0], timeout)


def _until_active(plane, post, timeout):
    """Seconds from ``post()`` (the uuids it made) until they are ACTIVE."""
    started = time.monotonic()
    plane.wait_all_active(post(), timeout=timeout)
    return time.monotonic() - started


def _counting_creates(plane):
    """The conductor's ``Flows.create`` of ``plane`` wrapped to note each
    call's thread CPU seconds; the list they go to."""
    flows = plane.embedded.conductor.flows
    create, spent = flows.create, []

    def counted(*args, **kwargs):
        started = time.thread_time()
        try:
            return create(*args, **kwargs)
        finally:
            spent.append(time.thread_time() - started)
    flows.create = counted
    return spent


def run(args):
    sizes = [args.builds] + ([args.big] if args.big else [])
    rates = {count: [] for count in sizes}
    cpu = {count: [] for count in sizes}
    creates = {count: [] for count in sizes}
    for round_no in range(args.rounds):
        for count in (sizes if round_no % 2 == 0 else sizes[::-1]):
            # A fresh plane each: the bigger burst must not start on a
            # fuller database than the first one did.
            with plane_mod.Plane(hosts=args.hosts, network=args.network,
                                 pin=not args.unpinned) as plane:
                spent = _counting_creates(plane)
                used = time.process_time()
                seconds = burst(plane, count, args.clients, 'b',
                                child=not args.clients_here)
                used = time.process_time() - used
            rates[count].append(count / seconds)
            cpu[count].append(used * 1e3 / count)
            creates[count].append(core.median(spent) * 1e3)
    figures = []
    for count in sizes:
        size = '%d builds, %d clients, %d hosts%s' % (
            count, args.clients, args.hosts,
            ', a port each' if args.network else '')
        figures.append(core.Figure(
            NAME, 'burst of %d to all ACTIVE' % count,
            core.median(rates[count]), 'servers/s', '>=', 100, size=size,
            note=core.rounds_note(rates[count])))
        figures.append(core.Figure(
            NAME, 'burst of %d: CPU per build, whole process' % count,
            core.median(cpu[count]), 'ms', size=size,
            note=core.rounds_note(cpu[count], '%.2f')))
        figures.append(core.Figure(
            NAME, 'burst of %d: conductor CPU per create call, median'
            % count, core.median(creates[count]), 'ms', size=size,
            note=core.rounds_note(creates[count], '%.3f')))
    if args.big:
        # Seconds per server of the big burst over those of the small one:
        # the ratio of the two median rates, held to the target; and, for
        # the reader, the median of each round's own ratio (its two bursts
        # run back to back), which moves with the machine just as much.
        paired = [small / big for small, big in zip(
            rates[args.builds], rates[args.big], strict=True)]
        size = '%d and %d builds, %d rounds%s' % (
            args.builds, args.big, args.rounds,
            ', a port each' if args.network else '')
        metric = '%d vs %d: time per server ratio' % (args.big, args.builds)
        figures.append(core.Figure(
            NAME, metric,
            core.median(rates[args.builds]) / core.median(rates[args.big]),
            'x', '<=', 1.0, size=size,
            note='seconds per server of the big burst / of the small one, '
                 'from the median rates'))
        figures.append(core.Figure(
            NAME, metric + ', per round', core.median(paired), 'x',
            size=size, note=core.rounds_note(paired, '%.3f')))
    return figures

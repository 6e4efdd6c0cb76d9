"""Hard deletes through the API with every agent stopped.

Targets: ≥ 500 deletes/s, each request's median ≤ 5 ms. The instances are
built first (ACTIVE, through the conductor client), then the agents are
stopped, then ``--deletes`` DELETE /v2.1/servers/ID are sent by
``--clients`` concurrent clients (the rate), then ``--one-by-one`` more by
a single client (each request's own time). Every one must answer 204.

Why two passes: with ``--clients`` requests always in flight, a request
waits for the others (Little's law: its median is about clients / rate,
16 ms for 8 clients at exactly 500/s), so the time of one request is
measured where it waits for nobody; the concurrent median is printed too.

Every round (``--rounds``) builds and deletes on a fresh plane; the rate is
the median of the rounds' rates, the request times are over every round's
requests together.
"""

import time

from bench import clients as clients_mod
from bench import core
from bench import plane as plane_mod

NAME = 'delete'
TINY = ['--deletes', '10', '--one-by-one', '5', '--rounds', '2']


def add_arguments(parser):
    parser.add_argument('--deletes', type=int, default=200)
    parser.add_argument('--one-by-one', type=int, default=100,
                        help='deletes sent by one client after the '
                             'concurrent ones, for the time of a request')
    parser.add_argument('--clients', type=int, default=8)
    parser.add_argument('--hosts', type=int, default=4)
    core.add_rounds(parser)


def one_round(args):
    """(deletes/s of the concurrent pass, its request times in ms, the
    one-client pass's request times in ms), on a fresh plane."""
    with plane_mod.Plane(hosts=args.hosts) as plane:
        uuids = plane.build_direct(args.deletes + args.one_by_one)
        for host in list(plane.embedded.agents):
            plane.embedded.stop_agent(host)
        with plane_mod.connections(plane, args.clients) as conns:
            def delete(n, uuid):
                started = time.monotonic()
                status, body = conns[n].request('DELETE', '/servers/%s' % uuid)
                if status != 204:
                    raise RuntimeError('DELETE answered %d: %s' % (status, body))
                return (time.monotonic() - started) * 1e3
            times, seconds = clients_mod.run_clients(
                args.clients, delete, uuids[:args.deletes])
            alone, _ = clients_mod.run_clients(1, delete, uuids[args.deletes:])
        left = [i for i in plane.statedb.list_instances()
                if i['uuid'] in set(uuids) and i['vm_state'] != 'hard_deleted']
        if left:
            raise RuntimeError('%d instance(s) not hard_deleted' % len(left))
    return args.deletes / seconds, times, alone


def run(args):
    rates, times, alone = [], [], []
    for _ in range(args.rounds):
        rate, concurrent, single = one_round(args)
        rates.append(rate)
        times.extend(concurrent)
        alone.extend(single)
    size = '%d deletes, %d clients, agents stopped' % (args.deletes,
                                                       args.clients)
    one = '%d deletes, one client, agents stopped' % args.one_by_one
    if args.rounds > 1:
        size += ', %d rounds' % args.rounds
        one += ', %d rounds' % args.rounds
    return [
        core.Figure(NAME, 'hard deletes', core.median(rates), 'deletes/s',
                    '>=', 500, size=size, note=core.rounds_note(rates)),
        core.Figure(NAME, 'delete request, median', core.median(alone), 'ms',
                    '<=', 5, size=one),
        core.Figure(NAME, 'delete request, p99', core.percentile(alone, 99),
                    'ms', size=one),
        core.Figure(NAME, 'delete request under %d clients, median'
                    % args.clients, core.median(times), 'ms', size=size),
    ]

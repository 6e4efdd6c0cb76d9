"""Builds per second with one and with two conductor processes, and the
CPU a conductor spends per build (issue 26).

The build burst of :mod:`bench.burst_rabbit` (``--builds`` servers posted
by ``--clients`` HTTP clients to the REST API in this process, ``--hosts``
agent processes with the fake driver, RabbitMQ and PostgreSQL, a fresh
database each time), once with one ``tristate-conductor`` process and once
with two (competing consumers of one topic), alternating which runs first
in each of the ``--rounds``. Figures, medians over the rounds:

* servers/s with 1 and with 2 conductors, and their ratio: with two it
  must not be lower (this machine has two cores shared by everything:
  the ratio shows that a second conductor costs nothing, not that it
  scales);
* conductor CPU seconds per build: the user + system time of every
  conductor process (``/proc/<pid>/stat``, fields 14 and 15) over the
  burst, divided by the builds; with two, each conductor's share too.
  The conductors' CPU while idle (``--idle`` seconds watched before the
  burst: heartbeats, periodic jobs, the bus's own threads) is given too,
  and the CPU per build without it. A build is one create call, the
  scheduling, the send to its agent and the agent's progress and result
  calls; a controller's build capacity is about its cores divided by the
  CPU per build (when PostgreSQL and RabbitMQ run elsewhere).
"""

import os
import time

from bench import burst as burst_mod
from bench import burst_rabbit
from bench import core
from bench import plane as plane_mod
from bench import services

NAME = 'conductors'
TINY = ['--builds', '4', '--hosts', '1', '--rounds', '1', '--idle', '0.5']
TICK = os.sysconf('SC_CLK_TCK')


def add_arguments(parser):
    parser.add_argument('--builds', type=int, default=200)
    parser.add_argument('--clients', type=int, default=8)
    parser.add_argument('--hosts', type=int, default=4)
    parser.add_argument('--idle', type=float, default=5.0,
                        help='seconds the conductors are watched idle before '
                             'the burst, for their CPU without builds '
                             '(default 5)')
    core.add_rounds(parser)


def cpu_seconds(pid):
    """User + system CPU seconds process ``pid`` has used so far."""
    with open('/proc/%d/stat' % pid) as f:
        # The name (field 2) may hold spaces: count from its closing ')'.
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _consuming(daemons, names):
    """True once every conductor of ``names`` logged that it consumes."""
    for name in names:
        try:
            with open(os.path.join(daemons.path, '%s.log' % name)) as f:
                if 'is consuming from the message bus' not in f.read():
                    return False
        except FileNotFoundError:
            return False
    return True


def one_round(args, rabbit, server, conductors):
    """(seconds of the burst, {conductor: CPU seconds over it}, {conductor:
    CPU seconds per second while idle})."""
    with services.round_daemons(rabbit, server, hosts=args.hosts) as daemons:
        names = ['conductor%d' % n for n in range(1, conductors + 1)]
        for name in names:
            daemons.start_conductor(name)
        with burst_rabbit.ApiTier(daemons) as tier:
            core.wait_for(lambda: _consuming(daemons, names), timeout=120,
                          interval=0.1, what='every conductor to consume')
            pids = {name: daemons.procs[name].pid for name in names}
            idle = _rates(pids, args.idle)
            before = {n: cpu_seconds(p) for n, p in pids.items()}
            seconds = burst_mod.burst(tier, args.builds, args.clients, 'c')
            used = {n: cpu_seconds(p) - before[n] for n, p in pids.items()}
            daemons.check_alive()
    return seconds, used, idle


def _rates(pids, seconds):
    """{name: CPU seconds per second} of each process over ``seconds``."""
    if seconds <= 0:
        return {name: 0.0 for name in pids}
    before = {n: cpu_seconds(p) for n, p in pids.items()}
    time.sleep(seconds)
    return {n: (cpu_seconds(p) - before[n]) / seconds
            for n, p in pids.items()}


def run(args):
    plane_mod.quiet_logs()
    rates = {1: [], 2: []}
    per_build = {1: [], 2: []}
    net = {1: [], 2: []}
    shares, idles = [], []
    with services.broker_and_server() as (rabbit, server):
        for round_no in range(args.rounds):
            for count in ((1, 2) if round_no % 2 == 0 else (2, 1)):
                seconds, used, idle = one_round(args, rabbit, server, count)
                rates[count].append(args.builds / seconds)
                per_build[count].append(sum(used.values()) / args.builds)
                # without what the conductors burn idle over as long
                net[count].append(max(0.0, sum(used.values()) - seconds * sum(
                    idle.values())) / args.builds)
                idles.extend(idle.values())
                if count == 2:
                    shares.extend(cpu / args.builds for cpu in used.values())
    size = ('%d builds, %d clients, %d agent processes, RabbitMQ + '
            'PostgreSQL' % (args.builds, args.clients, args.hosts))
    if args.rounds > 1:
        size += ', %d rounds' % args.rounds
    figures = [core.Figure(
        NAME, 'burst of %d to all ACTIVE, %d conductor%s' % (
            args.builds, count, 's' if count > 1 else ''),
        core.median(rates[count]), 'servers/s', size=size,
        note=core.rounds_note(rates[count], '%.1f')) for count in (1, 2)]
    ratios = [two / one for one, two in zip(rates[1], rates[2], strict=True)]
    figures.append(core.Figure(
        NAME, '2 vs 1 conductor: servers/s ratio',
        core.median(rates[2]) / core.median(rates[1]), 'x', '>=', 0.9,
        size=size, note='not lower, within the ±10 %% one run moves on this '
        'machine; per round: %s' % core.rounds_note(ratios, '%.2f')))
    for count in (1, 2):
        figures.append(core.Figure(
            NAME, 'conductor CPU per build, %d conductor%s (all of them)' % (
                count, 's' if count > 1 else ''),
            core.median(per_build[count]) * 1000, 'ms', size=size,
            note=core.rounds_note([v * 1000 for v in per_build[count]],
                                  '%.1f')))
    figures.append(core.Figure(
        NAME, 'conductor CPU per build without its idle CPU, 1 and 2 '
        'conductors', core.median(net[1] + net[2]) * 1000, 'ms', size=size,
        note='per round, 1 conductor: %s; 2: %s' % tuple(', '.join(
            '%.1f' % (v * 1000) for v in net[c]) for c in (1, 2))))
    figures.append(core.Figure(
        NAME, 'CPU of an idle conductor', core.median(idles) * 1000,
        'ms/s', size=size, note='%.0f s watched before each burst; every '
        'conductor: %s' % (args.idle, ', '.join('%.1f' % (v * 1000)
                                                for v in idles))))
    figures.append(core.Figure(
        NAME, 'CPU per build of each of 2 conductors (its share)',
        core.median(shares) * 1000, 'ms', size=size,
        note='every conductor of every round: %s' % ', '.join(
            '%.1f' % (v * 1000) for v in shares)))
    return figures

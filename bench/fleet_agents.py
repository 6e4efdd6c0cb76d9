"""One process of simulated agents for the fleet simulation
(:mod:`bench.fleet_sim`): many hosts, one real agent
:class:`~compute_agent.reporter.Reporter` each (fake driver), one bus.

Light-weight: no thread per host. A heap holds each host's next due time
and a few worker threads take the host that is due, as the agent's own
heartbeat loop (``Reporter._beats``) would: a heartbeat every ``[compute]
heartbeat_interval``, and every ``power_sync_interval`` the heartbeat that
carries the full report instead (conductor RPC 1.4). A real fleet's agents
started at different times: each host's first beat and first full report
fall at a random point of their period (seeded, the same every run).

Each message is timed from the call to its answer. The conductor answers
a heartbeat once its transaction committed, so that is the latency from
the agent's send to the conductor's stored state (plus the reply's trip).
The lag of a message (its start after its due time) says whether this
process kept up. Figures go, as JSON, to ``--out`` at the end.

Run: ``python -m bench.fleet_agents --config-file F --hosts PREFIX:FIRST:COUNT
--go FILE --seconds S --out FILE``: once its reporters are made it writes
``FILE.ready`` (the out file's name), then waits for the go file.
"""

import argparse
import heapq
import json
import logging
import os
import random
import sys
import threading
import time

from oslo_config import cfg

from common import conf as tconf
from common import rpc
from compute_agent import journal as journal_mod
from compute_agent import reporter as reporter_mod
from compute_agent.virt import fake
from conductor import rpcapi


class Schedule:
    """Hosts by due time; :meth:`take` blocks until one is due."""

    def __init__(self, reps, conf, *, rng, start, until):
        beat = conf.compute.heartbeat_interval
        self.full_every = conf.compute.power_sync_interval
        self.beat = beat
        self.until = until
        self.lock = threading.Lock()
        self.heap = []
        self.full_due = {}
        for n in range(len(reps)):
            self.full_due[n] = start + rng.uniform(0, self.full_every)
            heapq.heappush(self.heap, (start + rng.uniform(0, beat), n))

    def take(self):
        """(index, due time, whether its full report is due), or None once
        the run is over."""
        while True:
            with self.lock:
                due, n = self.heap[0]
                now = time.monotonic()
                if due >= self.until:
                    return None
                if due <= now:
                    heapq.heappop(self.heap)
                    return n, due, due >= self.full_due[n] - 1e-6
            time.sleep(min(due - now, 0.05))

    def done(self, n, due, full):
        """The host's next message: a heartbeat period after this one, or
        earlier when its full report falls due before (as the agent)."""
        with self.lock:
            if full:
                self.full_due[n] = due + self.full_every
            heapq.heappush(self.heap, (min(due + self.beat,
                                           self.full_due[n]), n))


class Tally:
    """Each message: [start, seconds to its answer, 1 if it carried the
    full report, seconds it started after its due time]; the same of
    each message that failed."""

    def __init__(self):
        self.lock = threading.Lock()
        self.sent = []
        self.failed = []

    def add(self, full, began, took, due, ok):
        with self.lock:
            (self.sent if ok else self.failed).append(
                (began, took, int(full), began - due))


def work(schedule, reps, tally):
    while True:
        got = schedule.take()
        if got is None:
            return
        n, due, full = got
        began = time.monotonic()
        ok = (reps[n].full_report() if full else reps[n].heartbeat())
        tally.add(full, began, time.monotonic() - began, due, ok)
        schedule.done(n, due, full)


def host_names(spec):
    """PREFIX:FIRST:COUNT: the names bench.fleet.host_names gives."""
    prefix, first, count = spec.split(':')
    return ['%s%05d' % (prefix, n)
            for n in range(int(first), int(first) + int(count))]


def reporters(conf, conductor, hosts):
    """One agent Reporter per host, on the fake driver's store (seeded by
    bench.fleet.seed), not started: the schedule paces them."""
    out = []
    for host in hosts:
        drv = fake.FakeDriver.from_conf(conf)
        drv.init_host(host)
        out.append(reporter_mod.Reporter(
            host=host, driver=drv, conductor=conductor, conf=conf,
            journal=journal_mod.TaskJournal(os.path.join(
                conf.state_dir, 'agent', '%s-tasks.json' % host))))
    return out


def wait_go(path):
    while not os.path.exists(path):
        time.sleep(0.05)
    with open(path) as f:
        return float(f.read())


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--config-file', required=True)
    parser.add_argument('--hosts', required=True,
                        help='PREFIX:FIRST:COUNT (fleet.host_names)')
    parser.add_argument('--go', required=True,
                        help='a file to wait for: it holds the '
                        'time.monotonic() of the first period (one clock '
                        'for every process of the machine)')
    parser.add_argument('--seconds', type=float, required=True)
    parser.add_argument('--workers', type=int, default=16)
    parser.add_argument('--seed', type=int, default=26)
    parser.add_argument('--out', required=True)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.ERROR)
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    rpc.register_opts(conf)
    conf([], project='tristate', default_config_files=[args.config_file])
    hosts = host_names(args.hosts)
    bus = rpc.Bus(conf)
    conductor = rpcapi.ConductorAPI(bus, conf,
                                    timeout=conf.conductor.rpc_timeout)
    reps = reporters(conf, conductor, hosts)
    with open(args.out + '.ready', 'w'):
        pass
    start = wait_go(args.go)
    time.sleep(max(0.0, start - time.monotonic()))
    tally = Tally()
    schedule = Schedule(reps, conf, rng=random.Random(args.seed), start=start,
                        until=start + args.seconds)
    threads = [threading.Thread(target=work, args=(schedule, reps, tally),
                                daemon=True) for _ in range(args.workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with open(args.out, 'w') as f:
        json.dump({'hosts': len(hosts), 'start': start, 'sent': tally.sent,
                   'failed': tally.failed}, f)
    bus.cleanup()
    return 0


if __name__ == '__main__':
    sys.exit(main())

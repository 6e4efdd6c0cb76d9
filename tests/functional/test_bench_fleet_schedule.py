"""The simulated agents' pacing (bench/fleet_agents.py): each host sends a
heartbeat every heartbeat_interval and, every power_sync_interval, the one
that carries its full report, as the agent's own loop does; otherwise the
fleet simulation's figures would not be at the rate they claim."""

import itertools
import random
import threading
import time
import types

from bench import fleet_agents

BEAT = 0.05
FULL = 0.2
RUN = 0.6


class Host:
    def __init__(self):
        self.sent = []      # (monotonic time, carried the full report)

    def heartbeat(self):
        self.sent.append((time.monotonic(), False))
        return True

    def full_report(self):
        self.sent.append((time.monotonic(), True))
        return True


def test_each_host_beats_every_interval_and_reports_in_full_every_period():
    conf = types.SimpleNamespace(compute=types.SimpleNamespace(
        heartbeat_interval=BEAT, power_sync_interval=FULL))
    hosts = [Host() for _ in range(5)]
    start = time.monotonic()
    schedule = fleet_agents.Schedule(hosts, conf, rng=random.Random(1),
                                     start=start, until=start + RUN)
    tally = fleet_agents.Tally()
    threads = [threading.Thread(target=fleet_agents.work,
                                args=(schedule, hosts, tally), daemon=True)
               for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not any(t.is_alive() for t in threads), 'the schedule never ended'
    assert tally.failed == []
    assert len(tally.sent) == sum(len(h.sent) for h in hosts)
    for host in hosts:
        times = [t for t, _ in host.sent]
        fulls = [t for t, full in host.sent if full]
        # A full report each period (the first within the first one), not
        # more often.
        assert int(RUN / FULL) - 1 <= len(fulls) <= int(RUN / FULL) + 1, \
            host.sent
        # A message at least every heartbeat interval (some slack for a
        # busy machine), never two at once.
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert len(times) >= RUN / BEAT / 2, host.sent
        assert min(gaps) > 0, host.sent
        assert all(gap <= BEAT * 1.01 + 0.5 for gap in gaps), host.sent

"""A guest shuts itself down (the fake hypervisor changed from outside, as
``tristate-fakevirt guest-shutdown`` does) -> vm_state STOPPED.

Target: median < 1 s, p99 < 1.5 s. Default options of a deployment
(``[fake_driver] poll_interval`` 0.1 s, the default ``user_shutdown``
policy ``stop``). One instance at a time: the clock starts when the store
is changed and stops when the row says STOPPED with no task.
"""

import time

from bench import core
from bench import plane as plane_mod
from common import states
from compute_agent.virt import fake

NAME = 'shutdown'
TINY = ['--instances', '3']


def add_arguments(parser):
    parser.add_argument('--instances', type=int, default=100,
                        help='guest shutdowns measured (default 100)')
    parser.add_argument('--hosts', type=int, default=4)


def run(args):
    times = []
    with plane_mod.Plane(hosts=args.hosts, api=False) as plane:
        uuids = plane.build_direct(args.instances)
        state_dir = plane.conf.state_dir
        for uuid in uuids:
            store = fake.HostStore(state_dir, fake.find_host(state_dir, uuid))
            started = time.monotonic()
            store.set_power(uuid, states.power.SHUTDOWN, states.REASON_GUEST,
                            by='guest-shutdown')
            plane.wait_vm_state(uuid, 'stopped', timeout=30)
            times.append(time.monotonic() - started)
        poll = plane.conf.fake_driver.poll_interval
    size = '%d guest shutdowns, fake poll_interval %.2f s' % (len(times), poll)
    return [
        core.Figure(NAME, 'guest shutdown -> STOPPED, median',
                    core.median(times) * 1e3, 'ms', '<', 1000, size=size),
        core.Figure(NAME, 'guest shutdown -> STOPPED, p99',
                    core.percentile(times, 99) * 1e3, 'ms', '<', 1500,
                    size=size),
    ]

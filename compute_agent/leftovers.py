"""The sweep of files an agent keeps for instances its host does not own.

A guest's config drive ISO (:mod:`compute_agent.configdrive`) and its
console log (the driver's) are removed with its domain. An agent that died
between the destroy and the removal, or a domain removed behind the
agent's back (``virsh undefine``), leaves them behind: they would hold user
data, a password or a guest's output for ever. So the agent sweeps them at
its start and every ``[compute] leftover_sweep_interval`` seconds
(:class:`compute_agent.reporter.Reporter`): a file goes when its instance
has no domain on this host, no task runs on it here, and it was last
written more than :data:`GRACE` seconds ago (a build writes the drive
before it defines the domain, while its task runs; the age covers the
moment between the reads below).
"""

import logging
import time

from compute_agent import configdrive

LOG = logging.getLogger(__name__)

# Seconds a file is kept after its last write whatever owns it.
GRACE = 300.0


def sweep(*, conf, host, driver, busy, now=None):
    """Remove the leftovers of ``host``; the uuids whose files went.
    ``busy()``: the uuids with a task running here (read before the
    domains: a task that ends meanwhile has its domain listed)."""
    keep = set(busy())
    keep |= {info.uuid for info in driver.list_domains()}
    cutoff = (time.time() if now is None else now) - GRACE
    removed = set(configdrive.sweep(conf, host, keep, cutoff))
    removed |= set(driver.sweep_console_logs(keep, cutoff))
    for uuid in sorted(removed):
        LOG.warning('Removed the config drive or console log of %s: no '
                    'domain of it on host %s', uuid, host)
    return removed

"""Ganeti's cleanup of preserved domains (seed 003), for the Xen flavour.

With ``on_poweroff``/``on_crash`` ``preserve`` (libxl), a guest that powered
itself off or crashed stays defined *and active*, holding its memory, so
that the agent can see and report why it stopped. Once that state has been
reported (handed to the watch callback, or returned by ``list_domains`` or
``get_domain``), :meth:`PreserveOps.cleanup_preserved` destroys it. The
agent calls it on its periodic pass; the driver calls it before every
operation that allocates resources (spawn, power_on, reboot, resume,
rescue, unrescue, rebuild, resize, revert_resize). Query-only calls never
clean up. A destroyed preserved domain keeps reporting the reason it
stopped for (``guest``, ``crashed``), not the ``host`` of the destroy.
"""

import logging

import libvirt

from common.states import power
from compute_agent.virt.driver import VirtError
from compute_agent.virt.libvirt import config

LOG = logging.getLogger(__name__)

_DOWN = frozenset({power.SHUTDOWN, power.CRASHED})


class PreserveOps:
    """Mixed into :class:`LibvirtDriver`; uses its helpers."""

    def _mark_reported(self, info):
        with self._reported_lock:
            if info.power_state == power.NOSTATE:
                self._reported.pop(info.uuid, None)
            else:
                self._reported[info.uuid] = info

    def cleanup_preserved(self):
        """Destroy preserved domains that stopped or crashed and whose state
        was reported; the uuids destroyed. Domains not yet reported wait."""
        return self.connection.run(self._cleanup_preserved)

    def _cleanup_preserved(self, conn):
        destroyed = []
        for dom in conn.listAllDomains(libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
            info = self._info(dom)
            if (info.power_state not in _DOWN
                    or not config.preserves(dom.XMLDesc(0))):
                continue
            with self._reported_lock:
                reported = self._reported.get(info.uuid) == info
            if not reported:
                LOG.info('Preserved domain %s (%s) is kept until its state '
                         'has been reported', info.uuid, info.reason)
                continue
            with self._book.busy(info.uuid):
                self._book.expect(info.uuid, power.SHUTDOWN, info.reason)
                self._destroy_active(dom)
            destroyed.append(info.uuid)
            LOG.info('Destroyed preserved domain %s (%s)', info.uuid,
                     info.reason)
        return destroyed

    def _cleanup_before_allocation(self):
        """Ganeti's rule: free what preserved domains hold before a task
        that allocates. A failure here must not fail the task."""
        try:
            self.cleanup_preserved()
        except (VirtError, libvirt.libvirtError) as err:
            LOG.warning('Cleaning up preserved domains failed: %s', err)


"""A guest's network links up or down: its security groups on the host.

Tristate's one security group, ``default``, allows all traffic; a port in no
group drops all of it (:mod:`common.secgroups`). The driver makes that real
with the card's libvirt link state, ``<link state='down'/>``:

* **at every definition**: the template writes it from the ports a task
  carries (:func:`.config._interface`), and the ports are kept in the
  domain's metadata, so a rebuild, resize, rescue, migration, unshelve or
  a libvirtd restart all keep it with nothing to re-apply (the link state
  is part of the persistent definition; QEMU starts with the link down);
* **live** (:meth:`LinkOps.set_security_groups`): the definition is made
  again with the new ports (next boot, and the metadata), then each card
  whose state changes gets ``updateDeviceFlags(AFFECT_LIVE)`` with its own
  live ``<interface>`` and the new ``<link>``, as ``virsh domif-setlink``
  does. QEMU then drops every frame the card sends or would receive.

Why a link state rather than a libvirt nwfilter that drops everything: it
needs no nwfilter driver, ebtables or root-only daemon on the host (session
libvirtds have none), it cannot be bypassed by the guest (QEMU's own net
layer drops the frames), and it lives in the domain definition, so no
agent-side state has to be rebuilt after a restart. Xen (libxl) has neither
a live link update nor a link state at start: a port in no group is refused
there, rolled back, rather than left passing traffic, by the live change,
by a build (spawn: an offloaded guest's groups change with no host) and by
a cold migration's arrival (migrate_in).

A failure before the live change leaves everything as it was; after, the
old definition and the old live states are put back (rolled back), or the
task fails without rollback when even that fails.
"""

import logging

import libvirt

from common import secgroups
from compute_agent.net import ports as net_ports
from compute_agent.virt.driver import VirtError
from compute_agent.virt.libvirt import config

LOG = logging.getLogger(__name__)


class LinkOps:
    """Mixed into :class:`~.driver.LibvirtDriver`; uses its helpers."""

    def set_security_groups(self, uuid, *, ports):
        ports = net_ports.checked(ports)
        wanted = {port['mac']: secgroups.link_state(port) for port in ports}
        self._links_honoured(uuid, ports, 'left as it was')
        self._op('set_security_groups', uuid,
                 lambda dom: self._set_links(dom, ports, wanted))

    def _links_honoured(self, uuid, ports, outcome):
        """Raise VirtError (rolled back) when a port of ``ports`` is in no
        group on Xen: libxl has no link state, so the guest would pass
        the traffic its group drops. Checked by the live change, by every
        build (an offloaded guest's groups change with no host, and its
        unshelve builds it) and by a cold migration's arrival."""
        if self.virt_type == 'xen' and any(
                secgroups.link_state(port) == secgroups.LINK_DOWN
                for port in ports):
            raise VirtError('a port in no security group cannot be honoured '
                            'on Xen: libxl has no link state (domain %s %s)'
                            % (uuid, outcome))

    def _set_links(self, dom, ports, wanted):
        xml = dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)
        if set(config.link_states_of(xml)) != set(wanted):
            raise VirtError('domain %s has the cards %s, not those of the '
                            'task (%s)' % (dom.UUIDString(),
                                           sorted(config.link_states_of(xml)),
                                           sorted(wanted)))
        live = (config.link_states_of(dom.XMLDesc(0)) if dom.isActive()
                else {})
        dom.connect().defineXML(self._definition(dom, xml, ports=ports))
        try:
            self._live_links(dom, {mac: state for mac, state in wanted.items()
                                   if mac in live and live[mac] != state})
        except libvirt.libvirtError as err:
            self._links_back(dom, xml, live, err)
        LOG.info('Domain %s: links %s', dom.UUIDString(),
                 ', '.join('%s %s' % item for item in sorted(wanted.items())))

    @staticmethod
    def _live_links(dom, changes):
        """Each card of ``changes`` ({mac: state}) set live."""
        if not changes:
            return
        nics = config.interface_elements(dom.XMLDesc(0))
        for mac, state in sorted(changes.items()):
            dom.updateDeviceFlags(config.with_link_state(nics[mac], state),
                                  libvirt.VIR_DOMAIN_AFFECT_LIVE)

    def _links_back(self, dom, xml, live, err):
        """Put definition ``xml`` and the live states ``live`` back;
        always raises."""
        try:
            dom.connect().defineXML(xml)
            now = (config.link_states_of(dom.XMLDesc(0)) if dom.isActive()
                   else {})
            self._live_links(dom, {mac: state for mac, state in live.items()
                                   if now.get(mac) != state})
        except libvirt.libvirtError as again:
            raise VirtError('setting the links of domain %s failed (%s) and '
                            'putting them back failed too (%s)'
                            % (dom.UUIDString(), err, again),
                            rolled_back=False) from None
        raise VirtError('setting the links of domain %s failed, links put '
                        'back: %s' % (dom.UUIDString(), err))

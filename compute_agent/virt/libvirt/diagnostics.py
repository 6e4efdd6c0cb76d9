"""A domain's diagnostics from libvirt (Nova's server diagnostics): its
state, memory, each vCPU's time, each disk's and interface's counters, read
from the domain itself (``info``, ``vcpus``, ``blockStats``,
``interfaceStats``, ``memoryStats``) and its XML for the devices. A
counter the hypervisor does not keep (the call fails) is left out, as Nova
does; the shape is :meth:`compute_agent.virt.driver.ComputeDriver.
get_diagnostics`'s."""

from xml.etree import ElementTree

import libvirt

from compute_agent.virt.libvirt import power as power_map

_NIC_COUNTERS = ('rx_octets', 'rx_packets', 'rx_errors', 'rx_drop',
                 'tx_octets', 'tx_packets', 'tx_errors', 'tx_drop')


def _cpus(dom):
    try:
        infos, _ = dom.vcpus()
    except libvirt.libvirtError:
        return []
    return [{'id': number, 'time': cpu_time}
            for number, _, cpu_time, _ in infos]


def _disks(dom, devices):
    found = []
    for disk in devices.findall('disk'):
        target = disk.find('target')
        if target is None or not target.get('dev'):
            continue
        dev = target.get('dev')
        try:
            rd_req, rd_bytes, wr_req, wr_bytes, errors = dom.blockStats(dev)
        except libvirt.libvirtError:
            continue
        found.append({'dev': dev, 'read_bytes': rd_bytes,
                      'read_requests': rd_req, 'write_bytes': wr_bytes,
                      'write_requests': wr_req, 'errors_count': errors})
    return found


def _nics(dom, devices):
    found = []
    for iface in devices.findall('interface'):
        mac = iface.find('mac')
        target = iface.find('target')
        nic = {'dev': None if target is None else target.get('dev'),
               'mac_address': None if mac is None else mac.get('address')}
        nic.update(dict.fromkeys(_NIC_COUNTERS))
        if nic['dev']:
            try:
                stats = dom.interfaceStats(nic['dev'])
            except libvirt.libvirtError:
                stats = None
            if stats is not None:
                nic.update(zip(_NIC_COUNTERS, (
                    stats[0], stats[1], stats[2], stats[3], stats[4],
                    stats[5], stats[6], stats[7]), strict=True))
        found.append(nic)
    return found


def _memory_stats(dom):
    try:
        return {str(k): int(v) for k, v in dom.memoryStats().items()}
    except (libvirt.libvirtError, AttributeError):
        return {}


def read(dom, virt_type):
    """The diagnostics of ``dom`` (a virDomain) now."""
    state, max_mem, mem, _, _ = dom.info()
    devices = ElementTree.fromstring(dom.XMLDesc(0)).find('devices')
    if devices is None:
        devices = ElementTree.Element('devices')
    return {'power_state': power_map.power_of(state),
            'hypervisor': virt_type, 'hypervisor_os': 'linux',
            'memory_kib': max_mem, 'memory_used_kib': mem,
            'memory_stats': _memory_stats(dom), 'cpus': _cpus(dom),
            'disks': _disks(dom, devices), 'nics': _nics(dom, devices)}

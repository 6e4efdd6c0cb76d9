"""``GET /servers/{id}/diagnostics`` (admin): what the instance's host
reads of its domain (the agent's driver, through the conductor), in Nova's
two bodies: before 2.48 the libvirt driver's own keys (``cpu0_time``,
``vda_read``, ``memory``, ...), from 2.48 Nova's standard one.

``driver`` is one of the names Nova's API allows: ``libvirt`` for both of
Tristate's drivers (the fake hypervisor says ``fake`` in ``hypervisor``).
Memory is in MiB. Nova's 409 when the server is on no host.
"""

import datetime

from oslo_utils import timeutils

from api import microversion
from common.states import power

STANDARD = microversion.APIVersion(2, 48)
_STATE = {power.NOSTATE: 'pending', power.RUNNING: 'running',
          power.PAUSED: 'paused', power.SHUTDOWN: 'shutdown',
          power.CRASHED: 'crashed', power.SUSPENDED: 'suspended'}
_DISK = ('read_bytes', 'read_requests', 'write_bytes', 'write_requests',
         'errors_count')
_NIC = ('mac_address', 'rx_octets', 'rx_errors', 'rx_drop', 'rx_packets',
        'tx_octets', 'tx_errors', 'tx_drop', 'tx_packets')
# the libvirt driver's keys before 2.48: (suffix, counter)
_LEGACY_DISK = (('_read_req', 'read_requests'), ('_read', 'read_bytes'),
                ('_write_req', 'write_requests'), ('_write', 'write_bytes'),
                ('_errors', 'errors_count'))
_LEGACY_NIC = (('_rx', 'rx_octets'), ('_rx_packets', 'rx_packets'),
               ('_rx_errors', 'rx_errors'), ('_rx_drop', 'rx_drop'),
               ('_tx', 'tx_octets'), ('_tx_packets', 'tx_packets'),
               ('_tx_errors', 'tx_errors'), ('_tx_drop', 'tx_drop'))


def _uptime(inst):
    launched = inst.get('launched_at')
    if not launched:
        return None
    if isinstance(launched, str):
        launched = datetime.datetime.fromisoformat(launched)
    return int(timeutils.delta_seconds(timeutils.normalize_time(launched),
                                       timeutils.utcnow()))


def standard(raw, inst):
    """Nova's body from 2.48."""
    return {
        'state': _STATE.get(raw['power_state'], 'pending'),
        'driver': 'libvirt', 'hypervisor': raw['hypervisor'],
        'hypervisor_os': raw['hypervisor_os'], 'uptime': _uptime(inst),
        'config_drive': bool(inst.get('config_drive')),
        'num_cpus': len(raw['cpus']), 'num_nics': len(raw['nics']),
        'num_disks': len(raw['disks']),
        'memory_details': {'maximum': raw['memory_kib'] // 1024,
                           'used': raw['memory_used_kib'] // 1024},
        'cpu_details': [{'id': c['id'], 'time': c['time'],
                         'utilisation': None} for c in raw['cpus']],
        'nic_details': [dict({k: n[k] for k in _NIC}, rx_rate=None,
                             tx_rate=None) for n in raw['nics']],
        'disk_details': [{k: d[k] for k in _DISK} for d in raw['disks']],
    }


def legacy(raw):
    """The libvirt driver's body before 2.48."""
    body = {'cpu%d_time' % c['id']: c['time'] for c in raw['cpus']}
    for disk in raw['disks']:
        body.update((disk['dev'] + suffix, disk[key])
                    for suffix, key in _LEGACY_DISK)
    for nic in raw['nics']:
        if nic['dev'] and nic['rx_octets'] is not None:
            body.update((nic['dev'] + suffix, nic[key])
                        for suffix, key in _LEGACY_NIC)
    body['memory'] = raw['memory_kib']
    body.update(('memory-' + k, v) for k, v in raw['memory_stats'].items())
    return body


def body(raw, inst, version):
    return standard(raw, inst) if version >= STANDARD else legacy(raw)

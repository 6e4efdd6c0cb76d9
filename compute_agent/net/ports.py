"""The ports a build or rebuild task carries (``params['ports']``), checked.

The conductor sends, in the order of the request, one dict per port (see
the session contract and :mod:`conductor` for who fills it)::

    {"id": str, "mac": "fa:16:3e:xx:xx:xx",
     "network": {"id", "name", "bridge" (or None), "libvirt_network" (or
                 None), "mtu" (int or None), "cidr", "gateway", "dns": [str],
                 "ipv6_cidr" (or None), "ipv6_gateway" (or None)},
     "fixed_ips": [{"address": str, "version": 4 | 6}]}

The agent writes these values into domain definitions, DHCP host files and
dnsmasq command lines, so :func:`checked` refuses anything that is not what
it says (a MAC that is not one, a bridge name Linux would not take, an
address that does not parse) before anything is changed, with a rolled-back
:class:`~compute_agent.virt.driver.VirtError` naming the port and the field.
Unknown keys are kept as they are (a later conductor may send more).
"""

import ipaddress
import re

from compute_agent.virt.driver import VirtError

_MAC = re.compile(r'^[0-9a-f]{2}(:[0-9a-f]{2}){5}$')
# What Linux takes as an interface name: 1-15 bytes, no '/', no space, no
# ':' (aliases); kept to the characters bridges are named with in practice.
_IFNAME = re.compile(r'^[A-Za-z0-9_.-]{1,15}$')
_LIBVIRT_NET = re.compile(r'^[A-Za-z0-9_.-]{1,64}$')
MTU_RANGE = (68, 65535)


def checked(ports):
    """``ports`` as a list of plain dicts, each checked; raises VirtError
    (rolled back) naming the first bad field."""
    if ports is None:
        return []
    if not isinstance(ports, (list, tuple)):
        raise _bad('ports', 'a list of port objects', ports)
    return [_port(i, port) for i, port in enumerate(ports)]


def _bad(field, expected, value):
    return VirtError('bad port data: %s must be %s, not %r'
                     % (field, expected, value))


def _port(index, port):
    where = 'ports[%d]' % index
    if not isinstance(port, dict):
        raise _bad(where, 'an object', port)
    mac = port.get('mac')
    if not isinstance(mac, str) or not _MAC.match(mac.lower()):
        raise _bad(where + '.mac', 'a MAC address like fa:16:3e:00:00:01',
                   mac)
    network = port.get('network')
    if not isinstance(network, dict):
        raise _bad(where + '.network', 'an object', network)
    out = dict(port, mac=mac.lower(),
               network=_network(where + '.network', network),
               fixed_ips=_fixed_ips(where + '.fixed_ips',
                                    port.get('fixed_ips') or []))
    return out


def _network(where, network):
    bridge, libvirt_net = network.get('bridge'), network.get('libvirt_network')
    if bridge is not None and (not isinstance(bridge, str)
                               or not _IFNAME.match(bridge)):
        raise _bad(where + '.bridge', 'a Linux interface name (1-15 of '
                   'A-Z a-z 0-9 _ . -)', bridge)
    if libvirt_net is not None and (not isinstance(libvirt_net, str)
                                    or not _LIBVIRT_NET.match(libvirt_net)):
        raise _bad(where + '.libvirt_network', 'a libvirt network name',
                   libvirt_net)
    if bridge is None and libvirt_net is None:
        raise _bad(where, 'a network with a bridge or a libvirt_network',
                   network.get('name'))
    mtu = network.get('mtu')
    if mtu is not None and (isinstance(mtu, bool) or not isinstance(mtu, int)
                            or not MTU_RANGE[0] <= mtu <= MTU_RANGE[1]):
        raise _bad(where + '.mtu', 'an integer in %d-%d or null' % MTU_RANGE,
                   mtu)
    out = dict(network)
    for key in ('gateway', 'ipv6_gateway'):
        out[key] = _address(where + '.' + key, network.get(key), null=True)
    for key in ('cidr', 'ipv6_cidr'):
        out[key] = _cidr(where + '.' + key, network.get(key))
    dns = network.get('dns') or []
    if not isinstance(dns, (list, tuple)):
        raise _bad(where + '.dns', 'a list of addresses', dns)
    out['dns'] = [_address('%s.dns[%d]' % (where, i), a)
                  for i, a in enumerate(dns)]
    return out


def _fixed_ips(where, fixed_ips):
    if not isinstance(fixed_ips, (list, tuple)):
        raise _bad(where, 'a list', fixed_ips)
    out = []
    for i, ip in enumerate(fixed_ips):
        if not isinstance(ip, dict):
            raise _bad('%s[%d]' % (where, i), 'an object', ip)
        address = _address('%s[%d].address' % (where, i), ip.get('address'))
        out.append(dict(ip, address=address,
                        version=ipaddress.ip_address(address).version))
    return out


def _address(where, value, *, null=False):
    if value is None and null:
        return None
    try:
        return str(ipaddress.ip_address(value))
    except (TypeError, ValueError):
        raise _bad(where, 'an IP address', value) from None


def _cidr(where, value):
    if value is None:
        return None
    try:
        return str(ipaddress.ip_network(value, strict=False))
    except (TypeError, ValueError):
        raise _bad(where, 'a CIDR like 10.0.0.0/24', value) from None


def ipv4(port):
    """The port's first IPv4 fixed address, or None."""
    return next((ip['address'] for ip in port['fixed_ips']
                 if ip['version'] == 4), None)

"""Port dicts in the shape the conductor sends on build and rebuild tasks
(``params['ports']``, the session contract), for the agent's tests."""


def network(name='net1', *, bridge='br-guest', libvirt_network=None,
            mtu=1450, cidr='10.20.0.0/24', gateway='10.20.0.1',
            dns=('10.20.0.1',)):
    return {'id': 'id-' + name, 'name': name, 'bridge': bridge,
            'libvirt_network': libvirt_network, 'mtu': mtu, 'cidr': cidr,
            'gateway': gateway, 'dns': list(dns), 'ipv6_cidr': None,
            'ipv6_gateway': None}


def port(index=1, address='10.20.0.%d', net=None, **net_kwargs):
    """Port ``index``: MAC fa:16:3e:00:00:<index>, address .10+index."""
    if '%' in address:
        address = address % (10 + index)
    return {'id': 'port-%d' % index, 'mac': 'fa:16:3e:00:00:%02x' % index,
            'network': net or network(**net_kwargs),
            'fixed_ips': [{'address': address, 'version': 4}]}

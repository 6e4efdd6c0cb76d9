"""``tristate-manage network``: define the first networks before any API
is up (bootstrap); afterwards ``tristate network ...`` (the API, admins)
does the same.

    tristate-manage [--config-file F] network create NAME --cidr CIDR
        (--bridge BR | --libvirt-network NET) [--gateway IP] [--dns IP]...
        [--allocation-start IP --allocation-end IP] [--ipv6-cidr CIDR]
        [--mtu N] [--project ID]
    tristate-manage [--config-file F] network list
    tristate-manage [--config-file F] network delete NAME_OR_ID
"""

import uuid as uuidlib

from common import exception
from common.cmd import manage_hosts

_FIELDS = ('cidr', 'bridge', 'libvirt_network', 'gateway', 'dns',
           'allocation_start', 'allocation_end', 'ipv6_cidr', 'ipv6_gateway',
           'mtu', 'project_id')


def _create(conf):
    args = conf.command
    values = {'name': args.network_name}
    values.update({k: getattr(args, k) for k in _FIELDS
                   if getattr(args, k) not in (None, [])})
    try:
        net = manage_hosts._with_db(conf, lambda statedb: statedb.create_network(
            values, network_id=str(uuidlib.uuid4())))
    except exception.TristateError as err:
        print('Network not created: %s' % err.message)
        return 1
    print('Network %s created: id %s, %s, gateway %s, addresses %s-%s, on %s.'
          % (net['name'], net['id'], net['cidr'], net['gateway'],
             net['allocation_start'], net['allocation_end'],
             net['bridge'] or 'libvirt network %s' % net['libvirt_network']))
    return 0


def _list(conf):
    def read(statedb):
        return [(n, statedb.network_usage(n['id']))
                for n in statedb.list_networks()]
    for net, used in manage_hosts._with_db(conf, read):
        print('%s  %s  %s  gateway %s  on %s  %s  %d address(es) held' % (
            net['id'], net['name'], net['cidr'], net['gateway'],
            net['bridge'] or 'libvirt:%s' % net['libvirt_network'],
            'project %s' % net['project_id'] if net['project_id']
            else 'shared', used))
    return 0


def _delete(conf):
    ref = conf.command.network_name

    def delete(statedb):
        net = statedb.get_network(ref)
        statedb.delete_network(net['id'])
        return net
    try:
        net = manage_hosts._with_db(conf, delete)
    except exception.TristateError as err:
        print('Network not deleted: %s' % err.message)
        return 1
    print('Network %s (%s) deleted.' % (net['name'], net['id']))
    return 0


def add_parsers(subparsers):
    network = subparsers.add_parser('network', help='create, list or '
                                    'delete the networks guests use')
    sub = network.add_subparsers(dest='network_command')
    sub.required = True
    create = sub.add_parser('create', help='define a network')
    create.add_argument('network_name', metavar='NAME')
    create.add_argument('--cidr', required=True, help='IPv4 subnet')
    create.add_argument('--bridge', help='Linux bridge on every hypervisor')
    create.add_argument('--libvirt-network', dest='libvirt_network')
    create.add_argument('--gateway')
    create.add_argument('--dns', action='append', default=[])
    create.add_argument('--allocation-start', dest='allocation_start')
    create.add_argument('--allocation-end', dest='allocation_end')
    create.add_argument('--ipv6-cidr', dest='ipv6_cidr')
    create.add_argument('--ipv6-gateway', dest='ipv6_gateway')
    create.add_argument('--mtu', type=int)
    create.add_argument('--project', dest='project_id',
                        help='owner (default: shared by every project)')
    create.set_defaults(func=_create)
    sub.add_parser('list', help='every network').set_defaults(func=_list)
    delete = sub.add_parser('delete', help='delete a network no port is on')
    delete.add_argument('network_name', metavar='NAME_OR_ID')
    delete.set_defaults(func=_delete)

"""``tristate network create|list|show|delete``: the networks servers are
plugged into (issue 23), through the compute API at Tristate's
microversion (2.101, the command line's default ``latest``): list and
show for everyone they are visible to, create and delete for admins."""

from cliff import command
from cliff import lister
from cliff import show

_PATH = '/os-networks'
_LIST = ('ID', 'Name', 'CIDR', 'Gateway', 'Bridge', 'Shared')


def _client(app):
    return app.client


def _find(client, ref):
    """The network of id or name ``ref`` (the API takes either)."""
    return client.get('%s/%s' % (_PATH, ref))['network']


class ListNetworks(lister.Lister):
    """Networks this project may plug servers into (its own and shared)."""

    def take_action(self, parsed_args):
        nets = _client(self.app).get(_PATH)['networks']
        return _LIST, [(n['id'], n['name'], n['cidr'], n['gateway'],
                        n['bridge'] or 'libvirt:%s' % n['libvirt_network'],
                        n['shared']) for n in nets]


class ShowNetwork(show.ShowOne):
    """One network, every field, with how many addresses are held."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('network', help='Network ID or name.')
        return parser

    def take_action(self, parsed_args):
        net = _find(_client(self.app), parsed_args.network)
        keys = sorted(net)
        return tuple(keys), tuple(net[k] for k in keys)


class CreateNetwork(show.ShowOne):
    """Define a network (admin): a Linux bridge every hypervisor has (or
    a libvirt network) and an IPv4 subnet."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name')
        parser.add_argument('--cidr', required=True,
                            help='IPv4 subnet, e.g. 192.0.2.0/24.')
        where = parser.add_mutually_exclusive_group(required=True)
        where.add_argument('--bridge', help='Linux bridge on every '
                           'hypervisor guests are attached to.')
        where.add_argument('--libvirt-network',
                           help='libvirt network guests are attached to.')
        parser.add_argument('--gateway', help='Default: the first address.')
        parser.add_argument('--dns', action='append', default=[],
                            help='DNS server (repeat for several).')
        parser.add_argument('--allocation-start', help='First address '
                            'handed out. Default: the first host address.')
        parser.add_argument('--allocation-end', help='Last address handed '
                            'out. Default: the last host address.')
        parser.add_argument('--ipv6-cidr', help='Optional IPv6 subnet '
                            '(/64 or larger; addresses from the MAC).')
        parser.add_argument('--ipv6-gateway')
        parser.add_argument('--mtu', type=int)
        parser.add_argument('--project', help='Only this project may use '
                            'it. Default: shared by every project.')
        return parser

    def take_action(self, parsed_args):
        a = parsed_args
        body = {'name': a.name, 'cidr': a.cidr}
        optional = {'bridge': a.bridge, 'libvirt_network': a.libvirt_network,
                    'gateway': a.gateway, 'allocation_start':
                    a.allocation_start, 'allocation_end': a.allocation_end,
                    'ipv6_cidr': a.ipv6_cidr, 'ipv6_gateway': a.ipv6_gateway,
                    'mtu': a.mtu, 'project_id': a.project,
                    'dns': a.dns or None}
        body.update({k: v for k, v in optional.items() if v is not None})
        net = _client(self.app).post(_PATH, {'network': body})['network']
        keys = sorted(net)
        return tuple(keys), tuple(net[k] for k in keys)


class DeleteNetwork(command.Command):
    """Delete networks (admin) no server is on."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('network', nargs='+', help='Network ID or name.')
        return parser

    def take_action(self, parsed_args):
        client = _client(self.app)
        for ref in parsed_args.network:
            client.delete('%s/%s' % (_PATH, _find(client, ref)['id']))


def commands():
    return {'network list': ListNetworks, 'network show': ShowNetwork,
            'network create': CreateNetwork, 'network delete': DeleteNetwork}

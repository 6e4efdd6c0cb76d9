"""``tristate availability-zone list [--long]``: the availability zones
(Nova's ``os-availability-zone``; ``--long``, admins: every host and
service in each, as openstackclient's ``availability zone list --long``).
"""

from cliff import lister


class ListZones(lister.Lister):
    """Availability zones, available or not (--long: hosts, services)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--long', action='store_true',
                            help='Also list hosts and services (admin).')
        return parser

    def take_action(self, parsed_args):
        path = '/os-availability-zone' + ('/detail' if parsed_args.long
                                          else '')
        zones = self.app.client.get(path)['availabilityZoneInfo']
        if not parsed_args.long:
            return ('Zone Name', 'Zone Status'), [
                (z['zoneName'], _state(z['zoneState']['available']))
                for z in zones]
        rows = []
        for zone in zones:
            state = _state(zone['zoneState']['available'])
            for host, services in sorted((zone['hosts'] or {}).items()):
                for name, service in sorted(services.items()):
                    rows.append((zone['zoneName'], state, host, name,
                                 '%s %s' % (
                                     'enabled' if service['active']
                                     else 'disabled',
                                     ':-)' if service['available'] else 'XXX'),
                                 service['updated_at']))
            if not zone['hosts']:
                rows.append((zone['zoneName'], state, '', '', '', ''))
        return ('Zone Name', 'Zone Status', 'Host Name', 'Service Name',
                'Service Status', 'Updated At'), rows


def _state(available):
    return 'available' if available else 'not available'


def commands():
    return {'availability-zone list': ListZones}

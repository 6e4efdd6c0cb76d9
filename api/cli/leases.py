"""``tristate lease create|list|show|update|delete``: host reservations.

    tristate lease create night --start "2026-01-01 20:00" --end "2026-01-02 06:00" \\
        --hosts 2 --hypervisor-properties '[">=", "$memory_mb", "16384"]'
    tristate lease show night
    tristate server create job1 --flavor small --reservation RESERVATION_ID
    tristate lease update night --prolong-for 2h
    tristate lease delete night

Dates are UTC: ``now``, ``YYYY-MM-DD HH:MM`` or ISO 8601.
"""

from urllib import parse

from cliff import command
from cliff import lister
from cliff import show

from common import leases as rules

SHOW_FIELDS = ('id', 'name', 'status', 'status_reason', 'project_id',
               'start_date', 'end_date', 'before_end_date', 'on_end',
               'reservations', 'events', 'created_at', 'updated_at')
LIST_FIELDS = ('ID', 'Name', 'Status', 'Start', 'End', 'Hosts',
               'Reservation')
# The reservable pool: Blazar's os-hosts, in the reservation API.
POOL = '/reservation/v1/os-hosts'


def _reservations(lease):
    return '; '.join(
        '%s: %s %s-%s host(s) %s [%s]' % (
            r['id'], r['resource_type'], r['min'], r['max'], r['status'],
            ', '.join(r.get('tristate:hosts') or ()))
        for r in lease['reservations'])


def _events(lease):
    return '; '.join('%s %s %s' % (e['event_type'], e['time'], e['status'])
                     for e in lease['events'])


def show_lease(lease):
    values = dict(lease, reservations=_reservations(lease),
                  events=_events(lease))
    return SHOW_FIELDS, tuple(values.get(f) for f in SHOW_FIELDS)


def find_lease(client, name_or_id):
    """A lease by id, or by its exact name if that is unique."""
    from api.cli import client as client_mod
    try:
        return client.get('/leases/%s' % name_or_id)['lease']
    except client_mod.ApiError as err:
        if err.status != 404:
            raise
    found = [lease for lease in client.get('/leases')['leases']
             if lease['name'] == name_or_id]
    if len(found) == 1:
        return found[0]
    if not found:
        raise client_mod.ApiError('No lease with a name or ID of %r exists.'
                                  % name_or_id, status=404)
    raise client_mod.ApiError('More than one lease is named %r: use its ID '
                              '(%s).' % (name_or_id, ', '.join(
                                  lease['id'] for lease in found)))


class CreateLease(show.ShowOne):
    """Reserve whole hosts for your project from --start to --end."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', help='Name of the new lease.')
        parser.add_argument('--start', default='now',
                            help='Start (UTC): now, "YYYY-MM-DD HH:MM" or '
                                 'ISO 8601. Default: now.')
        parser.add_argument('--end', required=True, help='End (UTC).')
        parser.add_argument('--hosts', type=int, default=1, metavar='N',
                            help='Hosts to reserve. Default: 1.')
        parser.add_argument('--min', type=int, metavar='N',
                            help='Take fewer hosts, down to N, if --hosts '
                                 'are not free. Default: --hosts.')
        parser.add_argument('--hypervisor-properties', default='',
                            metavar='JSON',
                            help='Which hosts, e.g. \'[">=", "$memory_mb", '
                                 '"16384"]\' (fields $name, $vcpus, '
                                 '$memory_mb, $disk_gb). Default: any.')
        parser.add_argument('--before-end', metavar='DATE',
                            help='When to send lease.before_end. Default: '
                                 'the controller\'s ([leases] before_end).')
        parser.add_argument('--on-end', choices=rules.ON_END,
                            help='What happens to the instances on the '
                                 'reserved hosts at the end. Default: '
                                 'delete.')
        return parser

    def take_action(self, parsed_args):
        args = parsed_args
        body = {'name': args.name, 'start_date': args.start,
                'end_date': args.end,
                'reservations': [{
                    'resource_type': rules.RESOURCE_HOST,
                    'min': args.min or args.hosts, 'max': args.hosts,
                    'hypervisor_properties': args.hypervisor_properties}]}
        if args.before_end:
            body['before_end_date'] = args.before_end
        if args.on_end:
            body['on_end'] = args.on_end
        return show_lease(self.app.client.post('/leases', body)['lease'])


class ListLeases(lister.Lister):
    """List leases (your project's; every project's with --all-projects)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--all-projects', action='store_true',
                            help='Every project\'s leases (admin only).')
        return parser

    def take_action(self, parsed_args):
        params = {'all_projects': '1'} if parsed_args.all_projects else {}
        leases = self.app.client.get('/leases', **params)['leases']
        rows = [(lease['id'], lease['name'], lease['status'],
                 lease['start_date'], lease['end_date'],
                 ', '.join(h for r in lease['reservations']
                           for h in r.get('tristate:hosts') or ()),
                 ', '.join(r['id'] for r in lease['reservations']))
                for lease in leases]
        return LIST_FIELDS, rows


class ShowLease(show.ShowOne):
    """Show a lease: status, dates, reservations and events."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('lease', help='Lease name or ID.')
        return parser

    def take_action(self, parsed_args):
        return show_lease(find_lease(self.app.client, parsed_args.lease))


class UpdateLease(show.ShowOne):
    """Change a lease: dates (hosts are checked again), name or on_end."""

    OPTIONS = (('--name', 'name', 'New name.'),
               ('--start', 'start_date', 'New start (only before it '
                'starts).'),
               ('--end', 'end_date', 'New end.'),
               ('--prolong-for', 'prolong_for', 'Move the end later, e.g. '
                '2h, 30m, 1d.'),
               ('--reduce-by', 'reduce_by', 'Move the end earlier.'),
               ('--before-end', 'before_end_date', 'When to send '
                'lease.before_end.'))

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('lease', help='Lease name or ID.')
        for flag, dest, text in self.OPTIONS:
            parser.add_argument(flag, dest=dest, help=text)
        parser.add_argument('--on-end', dest='on_end', choices=rules.ON_END)
        return parser

    def take_action(self, parsed_args):
        client = self.app.client
        lease = find_lease(client, parsed_args.lease)
        body = {dest: getattr(parsed_args, dest)
                for _, dest, _ in self.OPTIONS + ((None, 'on_end', None),)
                if getattr(parsed_args, dest) is not None}
        updated = client.request('PUT', '/leases/%s' % lease['id'],
                                 body=body)['lease']
        return show_lease(updated)


class DeleteLease(command.Command):
    """Delete leases, from any status (an active one ends first: on_end)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('leases', nargs='+', metavar='lease',
                            help='Lease names or IDs.')
        return parser

    def take_action(self, parsed_args):
        client = self.app.client
        for lease_id in [find_lease(client, name)['id']
                         for name in parsed_args.leases]:
            client.delete('/leases/%s' % lease_id)


class ListPoolHosts(lister.Lister):
    """List the hosts of the reservable pool (admin only)."""

    def take_action(self, parsed_args):
        client = self.app.client
        hosts = client.request('GET', POOL, base=client.root)['hosts']
        return (('Host', 'vCPUs', 'RAM (MiB)', 'Disk (GiB)', 'Enabled'),
                [(h['id'], h['vcpus'], h['memory_mb'], h['local_gb'],
                  h['tristate:enabled']) for h in hosts])


class AddPoolHost(command.Command):
    """Put hosts into the reservable pool: only they can be leased
    (admin only)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('hosts', nargs='+', metavar='host',
                            help='Host names (tristate host list).')
        return parser

    def take_action(self, parsed_args):
        client = self.app.client
        for host in parsed_args.hosts:
            client.request('POST', POOL, body={'name': host},
                           base=client.root)


class RemovePoolHost(command.Command):
    """Take hosts out of the reservable pool (refused while a lease
    holds one; admin only)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('hosts', nargs='+', metavar='host',
                            help='Host names.')
        return parser

    def take_action(self, parsed_args):
        client = self.app.client
        for host in parsed_args.hosts:
            client.request('DELETE', '%s/%s' % (POOL, parse.quote(host, safe='')),
                           base=client.root)


def commands():
    return {'lease create': CreateLease, 'lease list': ListLeases,
            'lease show': ShowLease, 'lease update': UpdateLease,
            'lease delete': DeleteLease, 'lease host list': ListPoolHosts,
            'lease host add': AddPoolHost,
            'lease host remove': RemovePoolHost}

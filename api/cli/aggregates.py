"""``tristate aggregate create|list|show|set|unset|add host|remove host|
delete``: host aggregates and the availability zones they make (admin;
Nova's ``os-aggregates``, openstackclient's commands and columns).

    tristate aggregate create --zone east rack-1
    tristate aggregate add host rack-1 host1
    tristate aggregate set --property ssd=true rack-1
    tristate aggregate list --long

An aggregate is named by its name or its id.
"""

from cliff import command
from cliff import lister
from cliff import show

from api.cli import client as client_mod

SHOW_FIELDS = ('id', 'uuid', 'name', 'availability_zone', 'hosts',
               'properties', 'created_at', 'updated_at')


def _find(client, name_or_id):
    for found in client.get('/os-aggregates')['aggregates']:
        if name_or_id in (found['name'], str(found['id']), found.get('uuid')):
            return found
    raise client_mod.ApiError('No aggregate found for %s' % name_or_id)


def _shown(found):
    values = dict(found, properties={
        k: v for k, v in (found.get('metadata') or {}).items()
        if k != 'availability_zone'})
    values['hosts'] = ', '.join(found.get('hosts') or ())
    values['properties'] = ', '.join('%s=%s' % kv for kv in sorted(
        values['properties'].items()))
    return SHOW_FIELDS, tuple(values.get(f) for f in SHOW_FIELDS)


def _named(parser, what='aggregate'):
    parser.add_argument(what, help='Aggregate name or ID.')
    return parser


class CreateAggregate(show.ShowOne):
    """Create an aggregate, in an availability zone if given."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', help='New aggregate name.')
        parser.add_argument('--zone', help='Its availability zone.')
        return parser

    def take_action(self, parsed_args):
        body = {'name': parsed_args.name}
        if parsed_args.zone:
            body['availability_zone'] = parsed_args.zone
        made = self.app.client.post('/os-aggregates', {'aggregate': body})
        return _shown(made['aggregate'])


class ListAggregates(lister.Lister):
    """Aggregates, with their zones (and hosts and properties: --long)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--long', action='store_true',
                            help='Also list hosts and properties.')
        return parser

    def take_action(self, parsed_args):
        found = self.app.client.get('/os-aggregates')['aggregates']
        fields = ['ID', 'Name', 'Availability Zone']
        if parsed_args.long:
            fields += ['Hosts', 'Properties']
        rows = []
        for agg in found:
            row = [agg['id'], agg['name'], agg['availability_zone']]
            if parsed_args.long:
                shown = dict(zip(*_shown(agg), strict=True))
                row += [shown['hosts'], shown['properties']]
            rows.append(row)
        return fields, rows


class ShowAggregate(show.ShowOne):
    """One aggregate: zone, hosts and properties."""

    def get_parser(self, prog_name):
        return _named(super().get_parser(prog_name))

    def take_action(self, parsed_args):
        return _shown(_find(self.app.client, parsed_args.aggregate))


def _properties(values):
    found = {}
    for item in values or ():
        key, sep, value = item.partition('=')
        if not sep:
            raise client_mod.ApiError('--property takes KEY=VALUE, got %r'
                                      % item)
        found[key] = value
    return found


class SetAggregate(command.Command):
    """Rename an aggregate, change its zone or set properties."""

    def get_parser(self, prog_name):
        parser = _named(super().get_parser(prog_name))
        parser.add_argument('--name', help='New name.')
        parser.add_argument('--zone', help='New availability zone.')
        parser.add_argument('--property', action='append', metavar='KEY=VALUE',
                            help='A property to set (repeat for more).')
        return parser

    def take_action(self, parsed_args):
        client = self.app.client
        found = _find(client, parsed_args.aggregate)
        path = '/os-aggregates/%s' % found['id']
        changes = {k: v for k, v in (('name', parsed_args.name),
                                     ('availability_zone', parsed_args.zone))
                   if v}
        if changes:
            client.put(path, {'aggregate': changes})
        properties = _properties(parsed_args.property)
        if properties:
            client.post(path + '/action',
                        {'set_metadata': {'metadata': properties}})


class UnsetAggregate(command.Command):
    """Remove properties of an aggregate."""

    def get_parser(self, prog_name):
        parser = _named(super().get_parser(prog_name))
        parser.add_argument('--property', action='append', metavar='KEY',
                            required=True,
                            help='A property to remove (repeat for more).')
        return parser

    def take_action(self, parsed_args):
        found = _find(self.app.client, parsed_args.aggregate)
        self.app.client.post('/os-aggregates/%s/action' % found['id'], {
            'set_metadata': {'metadata': dict.fromkeys(parsed_args.property)}})


class _HostCommand(show.ShowOne):
    ACTION = None

    def get_parser(self, prog_name):
        parser = _named(super().get_parser(prog_name))
        parser.add_argument('host', help='Host name.')
        return parser

    def take_action(self, parsed_args):
        found = _find(self.app.client, parsed_args.aggregate)
        changed = self.app.client.post(
            '/os-aggregates/%s/action' % found['id'],
            {self.ACTION: {'host': parsed_args.host}})
        return _shown(changed['aggregate'])


class AddHost(_HostCommand):
    """Add a host to an aggregate (and so to its zone)."""
    ACTION = 'add_host'


class RemoveHost(_HostCommand):
    """Remove a host from an aggregate."""
    ACTION = 'remove_host'


class DeleteAggregate(command.Command):
    """Delete an aggregate (it must hold no host)."""

    def get_parser(self, prog_name):
        return _named(super().get_parser(prog_name))

    def take_action(self, parsed_args):
        found = _find(self.app.client, parsed_args.aggregate)
        self.app.client.delete('/os-aggregates/%s' % found['id'])


def commands():
    return {'aggregate create': CreateAggregate,
            'aggregate list': ListAggregates,
            'aggregate show': ShowAggregate,
            'aggregate set': SetAggregate,
            'aggregate unset': UnsetAggregate,
            'aggregate add host': AddHost,
            'aggregate remove host': RemoveHost,
            'aggregate delete': DeleteAggregate}

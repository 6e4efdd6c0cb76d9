"""``tristate server ...``: create, list, show, delete, every action of the
table, ``set-policy``, ``rename`` and ``actions`` (the action log)."""

import base64
import dataclasses
import typing

from cliff import command
from cliff import lister
from cliff import show

from api.cli import client as client_mod
from api.cli import columns
from api.cli import waits
from common import states

# (column title, server body key) of `server show`, in order; the values of
# those in _DERIVED are made from the whole body.
SHOW_FIELDS = (
    ('id', 'id'), ('name', 'name'), ('status', 'status'),
    ('vm_state', 'OS-EXT-STS:vm_state'), ('task_state', 'OS-EXT-STS:task_state'),
    ('task_id', 'tristate:task_id'), ('progress', 'tristate:progress'),
    ('power_state', 'tristate:power_state_name'),
    ('power_reason', 'tristate:power_reason'),
    ('oper_state', 'tristate:oper_state'), ('ec2_state', 'tristate:ec2_state'),
    ('host', 'OS-EXT-SRV-ATTR:host'), ('addresses', 'addresses'),
    ('flavor', 'flavor'), ('image', 'image'), ('key_name', 'key_name'),
    ('config_drive', 'config_drive'), ('user_shutdown', 'metadata'),
    ('crash', 'metadata'), ('project_id', 'tenant_id'),
    ('user_id', 'user_id'), ('created', 'created'), ('updated', 'updated'),
    ('fault', 'fault'),
)
LIST_FIELDS = ('ID', 'Name', 'Status', 'Task State', 'Power State',
               'Oper State', 'Host', 'Flavor')
LONG_FIELDS = LIST_FIELDS + ('VM State', 'EC2 State', 'Progress', 'Project')


def flavor_name(server):
    flavor = server.get('flavor') or {}
    return flavor.get('original_name') or flavor.get('id')


def _value(server, title, key):
    if title in _DERIVED:
        return _DERIVED[title](server)
    if title == 'image':
        return (server.get('image') or {}).get('id')
    if title in ('user_shutdown', 'crash'):
        return server['metadata'].get('tristate:%s' % title)
    if title == 'progress':
        return columns.Progress(server.get(key))
    if title == 'fault':
        return (server.get('fault') or {}).get('message')
    return server.get(key)


def addresses(server):
    """``net=addr, addr; other=addr``, as openstackclient shows them."""
    return '; '.join('%s=%s' % (net, ', '.join(a['addr'] for a in found))
                     for net, found in sorted(
                         (server.get('addresses') or {}).items()))


_DERIVED = {'flavor': flavor_name, 'addresses': addresses}


def show_server(server):
    titles = tuple(t for t, _ in SHOW_FIELDS)
    return titles, tuple(_value(server, t, k) for t, k in SHOW_FIELDS)


def list_row(server, long=False):
    row = (server['id'], server['name'], server['status'],
           server['OS-EXT-STS:task_state'],
           server['tristate:power_state_name'],
           server['tristate:oper_state'],
           # empty for a member: where it runs is for admins (as in Nova)
           server.get('OS-EXT-SRV-ATTR:host'),
           flavor_name(server))
    if long:
        row += (server['OS-EXT-STS:vm_state'], server['tristate:ec2_state'],
                columns.Progress(server['tristate:progress']),
                server['tenant_id'])
    return row


class _Waits:
    """--wait and --wait-timeout for commands that start a task: progress
    on stderr while it runs, exit 1 when it failed (:mod:`waits`)."""

    failed = None

    def add_wait(self, parser):
        parser.add_argument('--wait', action='store_true',
                            help='Wait until the task has settled (no task '
                                 'running), show the result, and exit 1 if '
                                 'the task failed.')
        parser.add_argument('--wait-timeout', type=float, default=300.0,
                            metavar='SECONDS',
                            help='Give up waiting after this long (exit 1). '
                                 'Default: 300.')

    def settled(self, server_id, parsed_args, task_id=None, *, check=True):
        client = self.app.client
        if not parsed_args.wait:
            return client.server(server_id)
        server = client.wait_settled(server_id,
                                     timeout=parsed_args.wait_timeout,
                                     progress=waits.Progress(self.app.stderr))
        if check:
            self.failed = waits.failure(client, server, task_id)
        return server

    def run(self, parsed_args):
        code = super().run(parsed_args)
        if self.failed:
            self.app.stderr.write('The task failed: %s\n' % self.failed)
            return 1
        return code


# --- create, list, show, delete ---------------------------------------------

def _guest_access(parsed_args):
    found = {}
    if parsed_args.key_name:
        found['key_name'] = parsed_args.key_name
    if parsed_args.user_data:
        with open(parsed_args.user_data, 'rb') as f:
            found['user_data'] = base64.b64encode(f.read()).decode()
    if parsed_args.config_drive:
        found['config_drive'] = True
    return found


class CreateServer(_Waits, show.ShowOne):
    """Create a server and build it (on a host the scheduler picks)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', help='Name of the new server.')
        parser.add_argument('--flavor', required=True,
                            help='Flavor name (see `tristate flavor list`).')
        parser.add_argument('--image', required=True,
                            help='Image name or ID (see `tristate image '
                                 'list`).')
        parser.add_argument('--user-shutdown',
                            choices=states.USER_SHUTDOWN_POLICIES,
                            help='What to do when the guest shuts itself '
                                 'down. Default: the controller\'s.')
        parser.add_argument('--crash', choices=states.CRASH_POLICIES,
                            help='What to do when the guest crashes. '
                                 'Default: the controller\'s.')
        parser.add_argument('--reservation', metavar='RESERVATION_ID',
                            help='Build on the hosts of this reservation of '
                                 'an active lease (`tristate lease show`).')
        parser.add_argument('--group', metavar='SERVER_GROUP_ID',
                            help='Join this server group (`openstack server '
                                 'group list`): placed by its policy.')
        parser.add_argument('--same-host', action='append', default=[],
                            metavar='SERVER',
                            help='Build on a host holding this server of '
                                 'your project (name or ID; repeat for '
                                 'several: a host holding any of them).')
        parser.add_argument('--different-host', action='append', default=[],
                            metavar='SERVER',
                            help='Build on a host none of these servers of '
                                 'your project is on (name or ID; repeat '
                                 'for several).')
        parser.add_argument('--network', action='append', default=[],
                            metavar='NETWORK',
                            help='Network name or ID to plug the server '
                                 'into, one port each (repeat for several; '
                                 '"none" for no network). Default: the '
                                 'default network, if any '
                                 '(`tristate network list`).')
        parser.add_argument('--key-name', help='One of your key pairs '
                            '(`tristate keypair list`), for the guest.')
        parser.add_argument('--user-data', metavar='FILE',
                            help='A file the guest gets as its user data '
                                 '(cloud-init; at most 64 KiB).')
        parser.add_argument('--config-drive', action='store_true',
                            help='Give the guest a config drive.')
        self.add_wait(parser)
        return parser

    def take_action(self, parsed_args):
        image = self.app.images.find(parsed_args.image)
        server = {'name': parsed_args.name, 'flavorRef': parsed_args.flavor,
                  'imageRef': image['id']}
        metadata = {'tristate:%s' % key: getattr(parsed_args, key)
                    for key in ('user_shutdown', 'crash')
                    if getattr(parsed_args, key)}
        if metadata:
            server['metadata'] = metadata
        if parsed_args.network == ['none']:
            server['networks'] = 'none'
        elif parsed_args.network:
            server['networks'] = [
                {'uuid': self.app.client.get('/os-networks/%s' % ref)[
                    'network']['id']} for ref in parsed_args.network]
        server.update(_guest_access(parsed_args))
        body = {'server': server}
        hints = {}
        if parsed_args.reservation:
            hints['reservation_id'] = parsed_args.reservation
        if parsed_args.group:
            hints['group'] = parsed_args.group
        for hint in ('same_host', 'different_host'):
            named = getattr(parsed_args, hint)
            if named:
                hints[hint] = [self.app.client.find_server(ref)['id']
                               for ref in named]
        if hints:
            body['os:scheduler_hints'] = hints
        created, task_id = self.app.client.start_task('/servers', body)
        return show_server(self.settled(created['server']['id'], parsed_args,
                                        task_id))


class ListServers(lister.Lister):
    """List servers (your project's; every project's with --all-projects).

    Every page the API answers is followed (its ``servers_links``), up to
    --limit servers.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--all-projects', action='store_true',
                            help='Every project\'s servers (admin only).')
        parser.add_argument('--long', action='store_true',
                            help='Also vm_state, EC2 state, progress, '
                                 'project.')
        parser.add_argument('--status', help='Only servers with this status.')
        parser.add_argument('--name', metavar='REGEX',
                            help='Only servers whose name matches this '
                                 'regular expression (as Nova).')
        parser.add_argument('--host', help='Only servers on this host '
                                           '(admin).')
        parser.add_argument('--project', metavar='PROJECT_ID',
                            help='Only this project\'s servers (admin; '
                                 'implies --all-projects).')
        parser.add_argument('--limit', type=int, metavar='N',
                            help='At most N servers (default: all).')
        parser.add_argument('--marker', metavar='SERVER_ID',
                            help='Start after this server (as listed).')
        return parser

    def take_action(self, parsed_args):
        args = parsed_args
        if args.limit is not None and args.limit < 0:
            raise client_mod.ApiError('--limit must be >= 0, not %d'
                                      % args.limit)
        params = {key: value for key, value in (
            ('status', args.status), ('name', args.name),
            ('host', args.host), ('project_id', args.project),
            ('marker', args.marker)) if value}
        if args.all_projects or args.project:
            params['all_tenants'] = '1'
        servers = self.app.client.list_servers(params, limit=args.limit)
        fields = LONG_FIELDS if args.long else LIST_FIELDS
        return fields, [list_row(s, args.long) for s in servers]


class ShowServer(show.ShowOne):
    """Show one server's states, host, flavor and policies."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', help='Server name or ID.')
        return parser

    def take_action(self, parsed_args):
        return show_server(self.app.client.find_server(parsed_args.server))


class DeleteServer(command.Command):
    """Delete servers: one database update each; always works."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('servers', nargs='+', metavar='server',
                            help='Server names or IDs.')
        parser.add_argument('--wait', action='store_true',
                            help='Wait until the servers are gone.')
        parser.add_argument('--wait-timeout', type=float, default=60.0,
                            metavar='SECONDS', help='Default: 60.')
        return parser

    def take_action(self, parsed_args):
        client = self.app.client
        ids = [client.find_server(s)['id'] for s in parsed_args.servers]
        for server_id in ids:
            client.delete('/servers/%s' % server_id)
        if parsed_args.wait:
            for server_id in ids:
                client.wait_gone(server_id, timeout=parsed_args.wait_timeout)


class ServerActions(lister.Lister):
    """The action log of a server, oldest first: who did what, how it ended."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', help='Server name or ID.')
        return parser

    def take_action(self, parsed_args):
        _, entries = self.app.client.actions(parsed_args.server)
        fields = ('Action', 'Result', 'VM State Before', 'VM State After',
                  'Started', 'Finished', 'User', 'Task ID', 'Message')
        rows = [(e['tristate:action'], e['tristate:result'],
                 e['tristate:vm_state_before'], e['tristate:vm_state_after'],
                 e['start_time'], e['tristate:finish_time'], e['user_id'],
                 e['tristate:task_id'], e['message'])
                for e in reversed(entries)]
        return fields, rows


class SetPolicy(show.ShowOne):
    """Change a server's reconcile policies (user_shutdown, crash)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', help='Server name or ID.')
        parser.add_argument('--user-shutdown',
                            choices=states.USER_SHUTDOWN_POLICIES)
        parser.add_argument('--crash', choices=states.CRASH_POLICIES)
        return parser

    def take_action(self, parsed_args):
        client = self.app.client
        server = client.find_server(parsed_args.server)
        metadata = {'tristate:%s' % key: getattr(parsed_args, key)
                    for key in ('user_shutdown', 'crash')
                    if getattr(parsed_args, key)}
        client.post('/servers/%s/metadata' % server['id'],
                    {'metadata': metadata})
        return show_server(client.server(server['id']))


class RenameServer(show.ShowOne):
    """Give a server a new name (no task: it works while one runs)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', help='Server name or ID.')
        parser.add_argument('name', help='The new name.')
        return parser

    def take_action(self, parsed_args):
        client = self.app.client
        server = client.find_server(parsed_args.server)
        body = client.put('/servers/%s' % server['id'],
                          {'server': {'name': parsed_args.name}})
        return show_server(body['server'])


# --- the actions ---------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Arg:
    flags: tuple
    kwargs: dict


def _arg(*flags, **kwargs):
    return Arg(flags, kwargs)


@dataclasses.dataclass(frozen=True)
class ActionSpec:
    """One ``tristate server NAME`` command: its API body from its args."""
    name: str
    help: str
    body: typing.Callable
    args: tuple = ()


def _empty(key):
    return lambda args: {key: None}


def _rebuild(args):
    return {'rebuild': {'imageRef': args.image}}


def _backup(args):
    return {'createBackup': {'name': args.name, 'backup_type': args.type,
                             'rotation': args.rotation}}


def _migrate(args):
    return {'os-migrateLive': {'host': args.host, 'block_migration': 'auto'}}


def _evacuate(args):
    return {'evacuate': {'host': args.host} if args.host else {}}


def _migrate_cold(args):
    return {'migrate': {'host': args.host} if args.host else None}


def _optional(key, **fields):
    """An action whose body carries only the options given: ``fields``
    maps a body key to the parsed argument's name; no option, a null body."""
    def body(args):
        given = {k: getattr(args, a) for k, a in fields.items()
                 if getattr(args, a)}
        return {key: given or None}
    return body


_unshelve = _optional('unshelve', host='host',
                      availability_zone='availability_zone')
_rescue = _optional('rescue', rescue_image_ref='image', adminPass='password')


ACTIONS = (
    ActionSpec('stop', 'Power the guest off.', _empty('os-stop')),
    ActionSpec('start', 'Power the guest on.', _empty('os-start')),
    ActionSpec('reboot', 'Reboot (soft, ACPI; --hard resets).',
               lambda a: {'reboot': {'type': 'HARD' if a.hard else 'SOFT'}},
               (_arg('--hard', action='store_true', help='Hard reboot.'),)),
    ActionSpec('pause', 'Freeze the guest in memory.', _empty('pause')),
    ActionSpec('unpause', 'Thaw a paused guest.', _empty('unpause')),
    ActionSpec('suspend', 'Save the guest to disk.', _empty('suspend')),
    ActionSpec('resume', 'Restore a suspended guest.', _empty('resume')),
    ActionSpec('rescue', 'Boot the rescue image (shows its adminPass).',
               _rescue,
               (_arg('--image', help='Rescue image name or ID (default: '
                                     'the server\'s).'),
                _arg('--password', help='Admin password of the rescue '
                                        'system (default: generated).'))),
    ActionSpec('unrescue', 'Leave rescue.', _empty('unrescue')),
    ActionSpec('rebuild', 'Spawn again from an image (a PENDING server: '
               'build it again).', _rebuild,
               (_arg('--image', help='Image name or ID (default: the '
                                     'server\'s).'),)),
    ActionSpec('resize', 'Move to another flavor; then confirm-resize or '
               'revert-resize.',
               lambda a: {'resize': {'flavorRef': a.flavor}},
               (_arg('--flavor', required=True, help='New flavor.'),)),
    ActionSpec('confirm-resize', 'Keep the new flavor.',
               _empty('confirmResize')),
    ActionSpec('revert-resize', 'Go back to the old flavor.',
               _empty('revertResize')),
    ActionSpec('live-migrate', 'Move the running guest to another host '
               '(admin).', _migrate,
               (_arg('--host', help='Target host (default: the scheduler '
                                    'picks).'),)),
    ActionSpec('evacuate', 'Rebuild, from its image, on another host, a '
               'server whose host is forced down and silent (admin; its '
               'local disk data is lost).', _evacuate,
               (_arg('--host', help='Target host (default: the scheduler '
                                    'picks).'),)),
    ActionSpec('migrate', 'Move the guest to another host, its disk copied '
               '(admin); then confirm-resize or revert-resize.', _migrate_cold,
               (_arg('--host', help='Target host (default: the scheduler '
                                    'picks).'),)),
    ActionSpec('snapshot', 'Save an image of the disk (shows its id).',
               lambda a: {'createImage': {'name': a.name}},
               (_arg('--name', required=True, help='Image name.'),)),
    ActionSpec('backup', 'Save a rotated backup image.', _backup,
               (_arg('--name', required=True, help='Image name.'),
                _arg('--type', default='daily', help='Backup type. '
                                                     'Default: daily.'),
                _arg('--rotation', type=int, required=True,
                     help='Backups of this type to keep.'))),
    ActionSpec('set-password', 'Set the admin password in the guest.',
               lambda a: {'changePassword': {'adminPass': a.password}},
               (_arg('--password', required=True),)),
    ActionSpec('add-security-group', 'Put the server in a security group '
               '(Tristate has one: default, all traffic).',
               lambda a: {'addSecurityGroup': {'name': a.group}},
               (_arg('--group', default='default',
                     help='Group name. Default: default.'),)),
    ActionSpec('remove-security-group', 'Take the server out of a security '
               'group (out of default: in none, its links down, all traffic '
               'dropped).',
               lambda a: {'removeSecurityGroup': {'name': a.group}},
               (_arg('--group', default='default',
                     help='Group name. Default: default.'),)),
    ActionSpec('soft-delete', 'Power off and keep the disk until restored '
               'or reclaimed.', _empty('tristate:softDelete')),
    ActionSpec('restore', 'Bring a soft-deleted server back.',
               _empty('restore')),
    ActionSpec('shelve', 'Power off and save an image of the disk '
               '(offloaded by [compute] shelved_offload_time).',
               _empty('shelve')),
    ActionSpec('shelve-offload', 'Remove a shelved server from its host '
               '(admin).', _empty('shelveOffload')),
    ActionSpec('unshelve', 'Start a shelved server again (an offloaded '
               'one is scheduled and built from its snapshot).', _unshelve,
               (_arg('--host', help='Host of an offloaded server (admin; '
                                    'default: the scheduler picks).'),
                _arg('--availability-zone', help='Zone of an offloaded '
                                                 'server.'))),
    ActionSpec('force-delete', 'Hard-delete (same as delete).',
               _empty('forceDelete')),
    ActionSpec('reset-state', 'Admin: force vm_state active or error and '
               'clear any task.',
               lambda a: {'os-resetState': {'state': a.state}},
               (_arg('--state', required=True, choices=('active', 'error')),)),
    ActionSpec('lock', 'Lock: only an admin may change the server until '
               'it is unlocked (--reason needs microversion 2.73).',
               lambda a: {'lock': {'locked_reason': a.reason}
                          if a.reason else None},
               (_arg('--reason'),)),
    ActionSpec('unlock', 'Unlock a locked server.', _empty('unlock')),
)


class ServerAction(_Waits, show.ShowOne):
    """Base of the generated action commands (:func:`action_command`)."""

    spec = None

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', help='Server name or ID.')
        for arg in self.spec.args:
            parser.add_argument(*arg.flags, **arg.kwargs)
        self.add_wait(parser)
        return parser

    def take_action(self, parsed_args):
        client = self.app.client
        server = client.find_server(parsed_args.server)
        if getattr(parsed_args, 'image', None):     # rebuild, rescue
            parsed_args.image = self.app.images.find(parsed_args.image)['id']
        elif self.spec.name == 'rebuild':
            parsed_args.image = server['image']['id']
        answer, task_id = client.start_task(
            '/servers/%s/action' % server['id'], self.spec.body(parsed_args))
        if self.spec.name == 'force-delete':
            return show_server(dict(server, status='DELETED'))
        # reset-state runs no task; ERROR is what it may be asked for
        titles, values = show_server(self.settled(
            server['id'], parsed_args, task_id,
            check=self.spec.name != 'reset-state'))
        # what the API answers once only: rescue's password, an image's id
        extra = {k: v for k, v in (answer or {}).items()
                 if k in ('adminPass', 'image_id')}
        return titles + tuple(extra), values + tuple(extra.values())


def action_command(spec):
    return type('Server%sCommand' % spec.name.title().replace('-', ''),
                (ServerAction,), {'spec': spec, '__doc__': spec.help})


def commands():
    """{'server NAME': command class} for every server command."""
    out = {'server create': CreateServer, 'server list': ListServers,
           'server show': ShowServer, 'server delete': DeleteServer,
           'server actions': ServerActions, 'server set-policy': SetPolicy,
           'server rename': RenameServer}
    for spec in ACTIONS:
        out['server %s' % spec.name] = action_command(spec)
    return out

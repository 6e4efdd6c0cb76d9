"""``tristate host enable|disable|drain`` (issue 25), through Nova's
``os-services`` (2.53: a service by its uuid) and ``os-migrateLive``.

``drain HOST``: disable the host with a reason (it takes no new build or
move), then live-migrate each of its servers in turn, the scheduler
choosing where, waiting for each; a line of progress per server on
stderr, then one row per server: where it went, or why it could not move
(a server that is not ACTIVE or PAUSED, no room elsewhere, a failed
migration). The host stays disabled; ``tristate host
enable HOST`` brings it back. ``--cold``: what cannot move live (a
stopped server, or one whose live migration failed) is cold-migrated
(Nova's ``migrate``: its disk copied through the image service), then
the move confirmed; it comes back as it was (stopped stays stopped).
A shelved server (SHELVED: stopped, its disk in a snapshot, still held
by the host) is offloaded (Nova's ``shelveOffload``): it keeps its
snapshot and leaves the host; its unshelve builds it on a host the
scheduler picks.
"""

from cliff import command
from cliff import lister

from api.cli import client as client_mod

COMPUTE = 'nova-compute'
DRAIN_REASON = 'drained by tristate host drain'
# What live migration takes (common/actions.py's live_migrate row), and
# what a cold migration takes (its migrate row).
MOVABLE = ('ACTIVE', 'PAUSED')
COLD_MOVABLE = ('ACTIVE', 'SHUTOFF')
SHELVED = 'SHELVED'


def _service(client, host):
    found = client.get('/os-services', host=host, binary=COMPUTE)
    services = found['services']
    if not services:
        raise client_mod.ApiError('No compute host named %r exists.' % host,
                                  status=404)
    return services[0]


def _update(client, host, body):
    service = _service(client, host)
    return client.put('/os-services/%s' % service['id'], body)['service']


class _HostCommand(command.Command):
    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('host', help='Host name.')
        return parser


class EnableHost(_HostCommand):
    """Enable a host (admin): it takes builds and moves again."""

    def take_action(self, parsed_args):
        service = _update(self.app.client, parsed_args.host,
                          {'status': 'enabled'})
        self.app.stdout.write('%s: %s\n' % (service['host'],
                                            service['status']))


class DisableHost(_HostCommand):
    """Disable a host (admin): it keeps its servers, takes no new ones."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--reason', help='Why (shown with the host).')
        return parser

    def take_action(self, parsed_args):
        body = {'status': 'disabled'}
        if parsed_args.reason:
            body['disabled_reason'] = parsed_args.reason
        service = _update(self.app.client, parsed_args.host, body)
        self.app.stdout.write('%s: %s (%s)\n' % (
            service['host'], service['status'],
            service.get('disabled_reason') or 'no reason given'))


class DrainHost(lister.Lister):
    """Disable a host (admin) and live-migrate every server off it."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('host', help='Host name.')
        parser.add_argument('--reason', default=DRAIN_REASON,
                            help='Why the host is disabled (default: %r).'
                                 % DRAIN_REASON)
        parser.add_argument('--cold', action='store_true',
                            help='Cold-migrate what cannot move live (a '
                                 'stopped server, a failed live migration), '
                                 'then confirm the move.')
        parser.add_argument('--timeout', type=float, default=3600.0,
                            metavar='SECONDS',
                            help='Seconds to wait for each migration. '
                                 'Default: 3600.')
        return parser

    def take_action(self, parsed_args):
        client = self.app.client
        host = parsed_args.host
        _update(client, host, {'status': 'disabled',
                               'disabled_reason': parsed_args.reason})
        servers = client.list_servers({'host': host, 'all_tenants': 1})
        rows = []
        for number, server in enumerate(servers, 1):
            self._progress('[%d/%d] %s (%s): ' % (number, len(servers),
                                                  server['name'],
                                                  server['id']))
            if server['status'] == SHELVED:
                row = self._offload(client, server, host,
                                    parsed_args.timeout)
            else:
                row = self._move(client, server, host, parsed_args.timeout)
            if row[2] == 'offloaded':
                self._progress('offloaded\n')
                rows.append(row)
                continue
            if (row[2] != 'moved' and parsed_args.cold
                    and server['status'] != SHELVED):
                row = self._move_cold(client, server, host,
                                      parsed_args.timeout, row[3])
            self._progress('%s\n' % (row[3] if row[2] != 'moved'
                                     else 'moved to %s' % row[3]))
            rows.append(row)
        self._failed = bool(client.list_servers(
            {'host': host, 'all_tenants': 1}))
        if self._failed:
            self._progress('host %s is not empty\n' % host)
        return ('ID', 'Name', 'Result', 'Where or Why'), rows

    def run(self, parsed_args):
        """Exit 1 when the host is not empty at the end."""
        self._failed = False
        code = super().run(parsed_args)
        return code or (1 if self._failed else 0)

    def _progress(self, text):
        self.app.stderr.write(text)
        self.app.stderr.flush()

    @staticmethod
    def _move(client, server, host, timeout):
        """(id, name, 'moved'|'not moved', the new host or why)."""
        row = (server['id'], server['name'])
        if server['status'] not in MOVABLE:
            return row + ('not moved', 'status %s: live migration takes %s'
                          % (server['status'], ' or '.join(MOVABLE)))
        try:
            _, task_id = client.start_task(
                '/servers/%s/action' % server['id'],
                {'os-migrateLive': {'host': None, 'block_migration': 'auto'}})
            after = client.wait_settled(server['id'], timeout=timeout)
        except client_mod.ApiError as err:
            return row + ('not moved', str(err))
        where = after.get('OS-EXT-SRV-ATTR:host')
        if where and where != host:
            return row + ('moved', where)
        entry = client.task_entry(server['id'], task_id) if task_id else None
        return row + ('not moved', (entry or {}).get('message')
                      or 'the migration ended on %s' % host)


    @staticmethod
    def _offload(client, server, host, timeout):
        """Offload a shelved ``server``: the same row as :meth:`_move`,
        'offloaded' once it has left ``host``."""
        row = (server['id'], server['name'])
        try:
            _, task_id = client.start_task(
                '/servers/%s/action' % server['id'], {'shelveOffload': None})
            after = client.wait_settled(server['id'], timeout=timeout)
        except client_mod.ApiError as err:
            return row + ('not moved', 'status SHELVED, not offloaded: %s'
                          % err)
        if after['status'] == 'SHELVED_OFFLOADED':
            return row + ('offloaded', 'its unshelve picks a host')
        entry = client.task_entry(server['id'], task_id) if task_id else None
        return row + ('not moved', 'status SHELVED, not offloaded: %s' % (
            (entry or {}).get('message') or 'it is %s' % after['status']))

    @staticmethod
    def _move_cold(client, server, host, timeout, live_why):
        """Cold-migrate ``server`` (that could not move live: ``live_why``)
        and confirm the move: the same row as :meth:`_move`."""
        row = (server['id'], server['name'])
        status = client.server(server['id'])['status']
        if status not in COLD_MOVABLE:
            return row + ('not moved', '%s; status %s: cold migration takes '
                          '%s' % (live_why, status, ' or '.join(COLD_MOVABLE)))
        try:
            _, task_id = client.start_task(
                '/servers/%s/action' % server['id'], {'migrate': None})
            after = client.wait_settled(server['id'], timeout=timeout)
            if after['status'] == 'VERIFY_RESIZE':
                client.action(server['id'], {'confirmResize': None})
                after = client.wait_settled(server['id'], timeout=timeout)
        except client_mod.ApiError as err:
            return row + ('not moved', '%s; cold: %s' % (live_why, err))
        where = after.get('OS-EXT-SRV-ATTR:host')
        if where and where != host:
            return row + ('moved', where)
        entry = client.task_entry(server['id'], task_id) if task_id else None
        return row + ('not moved', '%s; cold: %s' % (live_why, (
            entry or {}).get('message') or 'the migration ended on %s' % host))


def commands():
    return {'host enable': EnableHost, 'host disable': DisableHost,
            'host drain': DrainHost}

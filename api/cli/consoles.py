"""``tristate console log show|url show``: a server's console log and a
one-time URL of its serial console (the names openstackclient uses).

    tristate console log show web1 --lines 20
    tristate console url show web1

The log is Nova's ``os-getConsoleOutput`` (the last ``--lines`` lines of
the guest's serial console); the URL is ``remote-consoles`` (``serial``),
to open once with a WebSocket client before ``[serial_console] token_ttl``
passes (see docs/operator-guide.md, "Consoles").
"""

import sys

from cliff import command
from cliff import show


class ShowConsoleLog(command.Command):
    """Print the end of a server's console log."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', help='Server name or ID.')
        parser.add_argument('--lines', type=int, default=None,
                            help='Only the last N lines (default: all '
                                 'the agent sends).')
        return parser

    def take_action(self, parsed_args):
        client = self.app.client
        server = client.find_server(parsed_args.server)
        lines = parsed_args.lines
        # Nova counts the empty piece after a final newline as a line:
        # ask for one more, and keep the last ``lines`` whole lines.
        body = {'length': lines + 1 if lines and lines > 0 else lines}
        answer = client.post('/servers/%s/action' % server['id'],
                             {'os-getConsoleOutput': body})
        output = answer['output']
        if lines and lines > 0:
            output = ''.join(output.splitlines(keepends=True)[-lines:])
        sys.stdout.write(output)
        return 0


class ShowConsoleUrl(show.ShowOne):
    """A one-time URL of a server's serial console."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', help='Server name or ID.')
        return parser

    def take_action(self, parsed_args):
        client = self.app.client
        server = client.find_server(parsed_args.server)
        answer = client.post('/servers/%s/remote-consoles' % server['id'],
                             {'remote_console': {'protocol': 'serial',
                                                 'type': 'serial'}})
        console = answer['remote_console']
        return ('protocol', 'type', 'url'), (
            console['protocol'], console['type'], console['url'])


def commands():
    return {'console log show': ShowConsoleLog,
            'console url show': ShowConsoleUrl}

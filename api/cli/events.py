"""``tristate server event list|show``: Nova's instance actions.

    tristate server event list web1
    tristate server event show web1 REQUEST_ID

The same action log as ``tristate server actions`` (oldest first there,
with Tristate's action names and states), with openstackclient's columns
and Nova's action names (newest first, as the API answers): one row per
request, and ``show`` with its events (one per task the request started,
with how each ended).
"""

from cliff import lister
from cliff import show

LIST_FIELDS = ('Request ID', 'Server ID', 'Action', 'Start Time', 'Result',
               'Task ID')
SHOW_FIELDS = ('request_id', 'instance_uuid', 'action', 'project_id',
               'user_id', 'start_time', 'updated_at', 'message',
               'tristate:result', 'tristate:task_id', 'events')


def _events(action):
    return '; '.join('%s %s %s%s' % (
        e['event'], e.get('start_time'), e.get('result') or 'running',
        ' (%s)' % e['details'] if e.get('details') else '')
        for e in action.get('events') or ())


class ListEvents(lister.Lister):
    """A server's actions, newest first (instance actions)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', help='Server name or ID.')
        return parser

    def take_action(self, parsed_args):
        _, entries = self.app.client.actions(parsed_args.server)
        return LIST_FIELDS, [
            (e['request_id'], e['instance_uuid'], e['action'],
             e['start_time'], e.get('tristate:result'),
             e.get('tristate:task_id')) for e in entries]


class ShowEvent(show.ShowOne):
    """One action of a server, with its events."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', help='Server name or ID.')
        parser.add_argument('request_id', help='Request ID (or task ID).')
        return parser

    def take_action(self, parsed_args):
        client = self.app.client
        server = client.find_server(parsed_args.server)
        action = client.get('/servers/%s/os-instance-actions/%s' % (
            server['id'], parsed_args.request_id))['instanceAction']
        values = dict(action, events=_events(action))
        return SHOW_FIELDS, tuple(values.get(f) for f in SHOW_FIELDS)


def commands():
    return {'server event list': ListEvents, 'server event show': ShowEvent}

"""``--wait``: progress while a task runs, and how the task ended.

A command that starts a task learns its id from the API's
``Tristate-Task-Id`` header. Once no task runs on the server, the action
log's entry of that task says how it ended: anything but ``success`` (a
stop rolled back, a reboot that left the server in ERROR, a build buried
as PENDING, a task a delete preempted) makes the command exit 1 after
showing the server, so a script that waits can trust the exit status.
Against an API that names no task, a server left in ERROR or PENDING is a
failure.
"""

from api.cli import columns

FAILED_STATUSES = ('ERROR', 'PENDING')
SUCCESS = 'success'


class Progress:
    """Writes one line to ``stream`` each time the server's status, task
    or progress step changes (stderr: ``-f json`` output stays clean)."""

    def __init__(self, stream):
        self.stream = stream
        self.last = None

    def __call__(self, server):
        task = server.get('OS-EXT-STS:task_state')
        step = columns.Progress(server.get('tristate:progress'))
        line = '%s: %s%s%s' % (
            server['id'], server['status'],
            ' (%s)' % task if task else '',
            ' %s' % step.human_readable() if task and step.human_readable()
            else '')
        if line != self.last:
            self.last = line
            self.stream.write(line + '\n')
            self.stream.flush()


def failure(client, server, task_id):
    """Why the task ``task_id`` on ``server`` (settled) failed, or None."""
    entry = client.task_entry(server['id'], task_id) if task_id else None
    if entry is not None and 'tristate:result' in entry:
        result = entry['tristate:result']
        if result == SUCCESS:
            return None
        return 'task %s (%s) of server %s ended %s%s; the server is %s' % (
            task_id, entry.get('tristate:action', entry['action']),
            server['id'], result,
            ': %s' % entry['message'] if entry.get('message') else '',
            server['status'])
    if server['status'] in FAILED_STATUSES:
        fault = (server.get('fault') or {}).get('message')
        return 'server %s is %s%s' % (server['id'], server['status'],
                                      ': %s' % fault if fault else '')
    return None

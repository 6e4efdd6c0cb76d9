"""The agent's journal of running tasks, kept in a small file so that an
agent that restarts can tell the conductor which tasks it lost (they are
failed at once instead of waiting for the timeout).

The file is a log of JSON lines, one per change: ``{"add": TASK_ID,
"instance_uuid": ..., "action": ...}`` or ``{"remove": TASK_ID}``; what it
holds is every task added and not removed. A change is one appended line
(one ``write``), not a rewrite of the file: each task costs two small
writes. A line cut short by a crash is ignored (its change was not
answered for yet). The file is rewritten whole, to what it holds, when an
agent starts and when the log has grown past :data:`COMPACT_AFTER` lines.

The file keeps the name of the earlier whole-file form
(``<host>-tasks.json``, one JSON object), which is still read.

The tasks a previous run left are *lost*: they stay in the file until
:meth:`TaskJournal.forget_lost` is told the conductor has them, so an
agent that restarts again before its first heartbeat was delivered still
reports them.
"""

import json
import os
import threading

# Lines appended before the file is rewritten to what it holds.
COMPACT_AFTER = 1000


def read_tasks(path):
    """{task_id: {'instance_uuid', 'action'}} of the journal at ``path``
    (empty if there is none)."""
    tasks = {}
    try:
        with open(path, encoding='utf-8') as f:
            for line in f:
                _replay(tasks, line)
    except FileNotFoundError:
        pass
    return tasks


def _replay(tasks, line):
    try:
        entry = json.loads(line)
    except ValueError:
        return          # a line a crash cut short: its change never counted
    if not isinstance(entry, dict):
        return
    if 'add' not in entry and 'remove' not in entry:
        # The whole-file form that agents wrote before: {task_id: entry}.
        tasks.update((task_id, value) for task_id, value in entry.items()
                     if isinstance(value, dict))
    elif 'add' in entry:
        tasks[entry['add']] = {'instance_uuid': entry.get('instance_uuid'),
                               'action': entry.get('action')}
    elif 'remove' in entry:
        tasks.pop(entry['remove'], None)


def _line(entry):
    return json.dumps(entry, separators=(',', ':')) + '\n'


class TaskJournal:
    """The file is read once, when the agent starts; after that this
    process is its only writer, and keeps its content in memory."""

    def __init__(self, path):
        self.path = path
        self._lock = threading.Lock()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self._lost = read_tasks(path)       # left by a previous run
        self._tasks = {}                     # this run's
        self._file = None                    # opened by the first change
        self._lines = 0
        if os.path.exists(path):
            with self._lock:
                self._compact()

    def _compact(self):
        """Rewrite the file to what it holds; appends go on from there."""
        if self._file is not None:
            self._file.close()
            self._file = None
        held = dict(self._lost, **self._tasks)
        tmp = '%s.tmp' % self.path
        with open(tmp, 'w', encoding='utf-8') as f:
            f.writelines(_line(dict(add=task_id, **entry))
                         for task_id, entry in held.items())
        os.replace(tmp, self.path)
        self._lines = len(held)

    def _append(self, entry):
        if self._lines >= COMPACT_AFTER:
            self._compact()
        if self._file is None:
            self._file = open(self.path, 'a', encoding='utf-8')
        self._file.write(_line(entry))
        self._file.flush()
        self._lines += 1

    def add(self, task_id, instance_uuid, action):
        with self._lock:
            # A lost task sent again to this run is this run's now.
            self._lost.pop(task_id, None)
            self._tasks[task_id] = {'instance_uuid': instance_uuid,
                                    'action': action}
            self._append({'add': task_id, 'instance_uuid': instance_uuid,
                          'action': action})

    def remove(self, task_id):
        with self._lock:
            if self._tasks.pop(task_id, None) is not None:
                self._append({'remove': task_id})

    def lost(self):
        """Ids of the tasks a previous run left unfinished and the
        conductor has not been told of yet."""
        with self._lock:
            return list(self._lost)

    def forget_lost(self, task_ids):
        """The conductor has been told of these lost tasks."""
        with self._lock:
            for task_id in task_ids:
                if self._lost.pop(task_id, None) is not None:
                    self._append({'remove': task_id})

    def close(self):
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

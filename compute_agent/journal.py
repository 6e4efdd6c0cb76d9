"""The agent's journal of running tasks, kept in a small file so that an
agent that restarts can tell the conductor which tasks it lost (they are
failed at once instead of waiting for the timeout)."""

import json
import os
import threading


class TaskJournal:
    """The file is read once, when the agent starts; after that this
    process is its only writer, and keeps its content in memory."""

    def __init__(self, path):
        self.path = path
        self._lock = threading.Lock()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self._tasks = self._read()

    def _read(self):
        try:
            with open(self.path) as f:
                return json.load(f)
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def _write(self):
        tmp = '%s.tmp' % self.path
        with open(tmp, 'w') as f:
            json.dump(self._tasks, f)
        os.replace(tmp, self.path)

    def add(self, task_id, instance_uuid, action):
        with self._lock:
            self._tasks[task_id] = {'instance_uuid': instance_uuid,
                                    'action': action}
            self._write()

    def remove(self, task_id):
        with self._lock:
            if self._tasks.pop(task_id, None) is not None:
                self._write()

    def take_all(self):
        """The tasks a previous run left unfinished; the journal is emptied."""
        with self._lock:
            tasks, self._tasks = self._tasks, {}
            self._write()
            return tasks

"""The agent's journal of running tasks, kept in a small file so that an
agent that restarts can tell the conductor which tasks it lost (they are
failed at once instead of waiting for the timeout)."""

import json
import os
import threading


class TaskJournal:
    def __init__(self, path):
        self.path = path
        self._lock = threading.Lock()
        os.makedirs(os.path.dirname(path), exist_ok=True)

    def _read(self):
        try:
            with open(self.path) as f:
                return json.load(f)
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def _write(self, tasks):
        tmp = '%s.tmp' % self.path
        with open(tmp, 'w') as f:
            json.dump(tasks, f)
        os.replace(tmp, self.path)

    def add(self, task_id, instance_uuid, action):
        with self._lock:
            tasks = self._read()
            tasks[task_id] = {'instance_uuid': instance_uuid, 'action': action}
            self._write(tasks)

    def remove(self, task_id):
        with self._lock:
            tasks = self._read()
            if tasks.pop(task_id, None) is not None:
                self._write(tasks)

    def take_all(self):
        """The tasks a previous run left unfinished; the journal is emptied."""
        with self._lock:
            tasks = self._read()
            self._write({})
            return tasks

"""The conductor's periodic jobs: its own heartbeat (the ``services`` row
``tristate-manage status`` reads), the stuck-task reaper, the reclaim of
soft-deleted instances and the offload of shelved ones
(:meth:`conductor.shelve.Shelving.sweep`). Several conductors may run
them at once: every change they make is guarded by the task_id or the
vm_state, so the second one finds nothing left to do."""

import logging
import threading

from common import context as tcontext
from common import exception

LOG = logging.getLogger(__name__)


class PeriodicJobs:
    def __init__(self, *, results, flows, interval, clock, beat=None):
        self.results = results
        self.flows = flows
        self.beat = beat
        self.interval = interval
        self.clock = clock
        self._stop = threading.Event()
        self._thread = None

    def run_once(self):
        """Every job once, now. Returns what each did, for logs and tests."""
        ctx = tcontext.get_admin_context()
        now = self.clock()
        done = {}
        jobs = [('reaped', self.results.reap),
                ('reclaimed', self.flows.reclaim),
                ('shelved', self.flows.shelving.sweep)]
        if self.beat is not None:
            jobs.insert(0, ('heartbeat', self.beat))
        for name, job in jobs:
            ctx.update_store()      # not the tags of the task a job ended
            try:
                done[name] = job(ctx, now)
            except exception.DBUnavailable as err:     # expected: one line
                LOG.warning('Periodic job %s skipped: %s', name, err)
            except Exception:   # a job failing must not stop the others
                LOG.exception('Periodic job %s failed', name)
        return done

    def _loop(self):
        while not self._stop.wait(self.interval):
            self.run_once()

    def start(self):
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name='conductor-periodic')
        self._thread.start()

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

"""The conductor's lease job, every ``[leases] periodic_interval`` seconds
(its own thread: the lease events keep their pace whatever the other
periodic jobs do). Several conductors run it at once; each event is run by
the one that claims it (:mod:`conductor.leases.events`)."""

import logging
import threading

from common import exception

LOG = logging.getLogger(__name__)


class LeaseJobs:
    def __init__(self, *, runner, interval):
        self.runner = runner
        self.interval = interval
        self._stop = threading.Event()
        self._thread = None

    def run_once(self):
        """Run the due events now; what happened, for logs and tests."""
        try:
            return self.runner.run_due()
        except exception.DBUnavailable as err:     # expected: one line
            LOG.warning('The lease job skipped a pass: %s', err)
            return {}
        except Exception:   # the next pass tries again
            LOG.exception('The lease job failed')
            return {}

    def _loop(self):
        while not self._stop.wait(self.interval):
            self.run_once()

    def start(self):
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name='conductor-leases')
        self._thread.start()

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

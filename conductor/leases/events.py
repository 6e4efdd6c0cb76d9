"""The lease job: runs the lease events that are due, one conductor each.

Every conductor runs :meth:`EventRunner.run_due` every ``[leases]
periodic_interval`` seconds. An event is run only by the conductor whose
conditional UPDATE claimed it (UNDONE -> IN_PROGRESS with a new run id, the
lease moved to the operation's transitional status in the same
transaction); every later write of the run is guarded by that run id, so a
run that was taken over cannot finish or fail the event.

* ``start_lease``: PENDING -> STARTING; the reservations become active
  (their hosts now take only instances that name them); -> ACTIVE;
  ``lease.start``.
* ``before_end_lease``: ``lease.before_end`` (the lease stays ACTIVE).
* ``end_lease``: ACTIVE (or ERROR) -> TERMINATING; ``on_end`` for the
  instances that used each active reservation; the hosts go back to the
  common pool; -> TERMINATED; ``lease.end``.

A run that raises is released and tried again at the next pass; one whose
conductor stopped is taken over after ``[leases] event_timeout``; after
``[leases] event_retries`` retries the event goes to ERROR and its lease
with it. A lease deleted during a run wins: the run stops where it is.
"""

import datetime
import logging

from common import context as tcontext
from common import exception
from common import leases as rules

LOG = logging.getLogger(__name__)

NOTIFICATIONS = {rules.START_LEASE: 'start',
                 rules.BEFORE_END_LEASE: 'before_end',
                 rules.END_LEASE: 'end'}


class EventRunner:
    def __init__(self, *, db, flows, conf):
        self.db = db
        self.flows = flows
        self.conf = conf
        self._work = {rules.START_LEASE: self._start,
                      rules.BEFORE_END_LEASE: lambda lease, run_id: None,
                      rules.END_LEASE: self._end}

    @property
    def max_attempts(self):
        return 1 + self.conf.leases.event_retries

    def run_due(self, now=None):
        """Run every due event once; ``{outcome: count}`` for logs and tests
        (outcomes: done, retry, error, preempted; events another conductor
        had are not counted)."""
        now = now or self.db.clock()
        stale_before = now - datetime.timedelta(
            seconds=self.conf.leases.event_timeout)
        outcomes = {}
        for event in self.db.due_events(now=now, stale_before=stale_before):
            outcome = self.run(event['id'], stale_before=stale_before)
            if outcome is not None:
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
        return outcomes

    def run(self, event_id, *, stale_before):
        try:
            claimed = self.db.claim_event(event_id, stale_before=stale_before,
                                          max_attempts=self.max_attempts)
        except exception.LeaseActionNotAllowed as err:
            # e.g. the end of an ERROR lease whose start failed: seed 002
            # allows no TERMINATING lease without a started one. It stays
            # until the lease is deleted.
            LOG.debug('Lease event %s cannot run: %s', event_id, err)
            return None
        if claimed is None:
            return None         # another conductor has it, or not yet
        lease, event, run_id = claimed
        event_type = event['event_type']
        if run_id is None:
            LOG.error('Lease %s: %s was claimed %d times without ending; it '
                      'is now ERROR', lease['id'], event_type,
                      event['attempts'])
            return 'error'
        LOG.info('Lease %s: running %s (attempt %d, run %s)', lease['id'],
                 event_type, event['attempts'], run_id)
        try:
            self._work[event_type](lease, run_id)
            after = self.db.finish_event(lease['id'], event_type, run_id)
        except (exception.LeaseEventPreempted, exception.LeaseNotFound) as err:
            LOG.info('Lease %s: %s stopped: %s', lease['id'], event_type, err)
            return 'preempted'
        except Exception as err:
            return self._failed(lease, event, run_id, err)
        LOG.info('Lease %s: %s done; the lease is %s', lease['id'],
                 event_type, after['status'])
        self.flows.notify(tcontext.get_admin_context(),
                          NOTIFICATIONS[event_type], after)
        return 'done'

    def _failed(self, lease, event, run_id, err):
        event_type = event['event_type']
        LOG.warning('Lease %s: %s failed (attempt %d of %d): %s', lease['id'],
                    event_type, event['attempts'], self.max_attempts, err,
                    exc_info=True)
        try:
            final = self.db.fail_event(lease['id'], event_type, run_id,
                                       error='%s: %s' % (type(err).__name__,
                                                         err),
                                       max_attempts=self.max_attempts)
        except (exception.LeaseEventPreempted, exception.LeaseNotFound):
            return 'preempted'
        return 'error' if final else 'retry'

    # --- the work of each event ----------------------------------------------

    def _start(self, lease, run_id):
        self.db.activate(lease['id'], run_id)

    def _end(self, lease, run_id):
        for res in lease['reservations']:
            if res['status'] == rules.reservation.ACTIVE:
                self.flows.apply_on_end(lease, res, strict=True)

"""The conductor's periodic jobs while the database is down: each job is
skipped with one warning line (no traceback: the outage is expected and
the next pass tries again) and the other jobs still run."""

import logging

from common import exception
from conductor import periodic
from conductor.leases import periodic as lease_periodic


def _down(*args):
    raise exception.DBUnavailable(attempts=5, seconds=0.8,
                                  reason='connection refused')


class _Jobs:
    def __init__(self, reap):
        self.reap = reap
        self.reclaim = self.run_due = lambda *args: 3
        self.shelving = self        # the shelved-offload sweep
        self.sweep = lambda *args: 4


def test_a_job_the_database_refuses_is_skipped_in_one_line(caplog):
    jobs = periodic.PeriodicJobs(results=_Jobs(_down), flows=_Jobs(_down),
                                 interval=1, clock=lambda: 0, beat=_down)
    with caplog.at_level(logging.WARNING, logger='conductor.periodic'):
        done = jobs.run_once()
    assert done == {'reclaimed': 3, 'shelved': 4}
    assert [(r.levelname, r.exc_info) for r in caplog.records] == [
        ('WARNING', None)] * 2
    assert 'Periodic job reaped skipped: The database is unavailable' in (
        caplog.records[1].getMessage())


def test_the_lease_job_skips_a_pass_in_one_line(caplog):
    runner = _Jobs(None)
    runner.run_due = _down
    jobs = lease_periodic.LeaseJobs(runner=runner, interval=1)
    with caplog.at_level(logging.WARNING, logger='conductor.leases.periodic'):
        assert jobs.run_once() == {}
    assert [(r.levelname, r.exc_info) for r in caplog.records] == [
        ('WARNING', None)]

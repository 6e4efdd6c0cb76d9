"""Fault injection: the PostgreSQL primary dies and its standby is promoted.

Issue 26. The test starts its own PostgreSQL pair (Debian's server,
``tools/test-services.sh pgpair``): a primary made by initdb with
``wal_level = replica`` and a replication user allowed from loopback only,
and a hot standby made by ``pg_basebackup -R`` (``standby.signal``) that
streams from it, the primary committing synchronously to it. The plane runs
as separate processes (``tristate-api``, two conductors,
two agents on the fake hypervisor) given one multi-host libpq URL naming
both servers with ``target_session_attrs=read-write``, as the operator
guide's "Scaling out" section recommends.

Under a load of builds, actions, looks and hard deletes through the REST
API, the primary is stopped hard (``pg_ctl stop -m immediate``: every
session cut without a word, as in a crash), and :data:`PROMOTE_AFTER`
seconds later (the time a failover manager such as Patroni takes to
decide) the standby is promoted (``pg_ctl promote``). What a user relies
on, checked here:

* no request fails otherwise than with a 503 that says the database is
  unavailable, and those only between the crash and a bounded time after
  the promotion; no 500, no hang;
* requests succeed again within :data:`RECOVERY` s of the promotion, with
  no daemon restarted: every process finds the new primary through the URL;
* every task ends (done, or failed with a reason); what the API accepted
  before the crash is on the new primary (nothing acknowledged is lost);
  nothing is half-applied: the invariants of ``tristate-manage check``
  hold on the new primary.

Printed: the requests, the failures, the longest stall and the time to
recover. Run by ``tox -e faults`` (``TRISTATE_FAULTS_FULL=1``) only: its
processes take the default suite's whole share of time to start. The small
form there is tests/functional/test_pg_failover.py (the plane in one
process, the same pair and URL).
"""

import datetime
import os
import time

import pytest

from common import states
from common.states import vm
from tests import support
from tests.pg_pair_support import running_pair
from tests.pg_pair_support import serving_port

from .conftest import FULL_ENV
from .conftest import Plane
from .test_faults_postgres import Client
from .test_faults_postgres import Load
from .test_faults_postgres import _assert_every_task_ended
from .test_faults_postgres import _refused_results

pytestmark = [pytest.mark.rabbitmq, pytest.mark.postgresql,
              pytest.mark.skipif(
                  os.environ.get(FULL_ENV) != '1',
                  reason='full size only (tox -e faults); the default suite '
                  'runs tests/functional/test_pg_failover.py')]

# Seconds between the primary's crash and the promotion: what a failover
# manager takes to notice and decide (Patroni: its ttl, 30 s by default).
PROMOTE_AFTER = 5
CONDUCTORS = 2
PRE_BUILT = 20              # servers built before the load starts
AFTER = 15                  # seconds of load after the first success
API_RPC_TIMEOUT = 30        # what a hung request would wait for
SLOW_ANSWER = 10.0          # seconds: no request may take longer
RECOVERY = 15.0             # seconds from the promotion to a 2xx again
END_DEADLINE = 300
OK = (200, 202, 204, 409)


class Requests(Client):
    """:class:`Client`, each delete's answer knowing its server."""

    def delete(self, uuid):
        answer = super().delete(uuid)
        answer.uuid = uuid
        return answer


@pytest.fixture
def pair(tmp_path):
    yield from running_pair(tmp_path / 'pg-logs')


def _serving_port(plane):
    return serving_port(plane.statedb.db)


def _stalls(answers):
    """The longest time with no request answered well, and the slowest
    request."""
    done = sorted(a.sent + a.took for a in answers if a.status in OK)
    gaps = [b - a for a, b in zip(done, done[1:], strict=False)] or [0.0]
    return max(gaps), max(answers, key=lambda a: a.took)


def _in_flight(plane, uuids, crash, promoted):
    """The tasks running at ``crash`` (naive UTC): how many, and seconds
    from ``promoted`` to the end of the last; the tasks that failed, as
    (action, message)."""
    running, ends, failed = 0, [], []
    for uuid in uuids:
        for entry in plane.statedb.list_actions(uuid):
            if entry['result'] not in (states.RESULT_SUCCESS,
                                       states.RESULT_PREEMPTED):
                failed.append((entry['action'], entry['message']))
            if entry['started_at'] < crash < entry['finished_at']:
                running += 1
                ends.append(entry['finished_at'])
    last = (max(ends) - promoted).total_seconds() if ends else 0.0
    return running, last, failed


def _utcnow():
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def _assert_answers(client, killed, promoted):
    """Every answer is a success, a conflict of the action table, or a 503
    saying the database is unavailable between the crash and
    :data:`RECOVERY` s after the promotion; none took long."""
    wrong = []
    for answer in client.answers:
        if answer.took > SLOW_ANSWER:
            wrong.append(answer)
        elif answer.status == 503:
            if ('database is unavailable' not in answer.message()
                    or answer.sent + answer.took < killed
                    or answer.sent > promoted + RECOVERY):
                wrong.append(answer)
        elif answer.status not in OK:
            wrong.append(answer)
    assert wrong == [], wrong


def test_primary_crash_and_promotion_under_load(request, tmp_path, broker,
                                                 pair):
    plane = Plane(tmp_path / 'plane', broker.url, db_url=pair.url,
                  conductors=CONDUCTORS,
                  fake_driver={'vcpus': 256, 'memory_mb': 1024 * 1024,
                               'latency': {'spawn': 1, 'power_off': 0.5,
                                           'power_on': 0.5, 'reboot': 0.5}})
    plane.path.mkdir()
    request.node.tristate_planes = [plane]
    try:
        _scenario(plane, pair)
    finally:
        plane.stop()


def _scenario(plane, pair):
    plane.start()
    client = Requests(plane.start_api(support.free_port(),
                                    rpc_timeout=API_RPC_TIMEOUT))
    assert _serving_port(plane) == pair.ports[0]
    made = [client.create('pre-%d' % n) for n in range(PRE_BUILT)]
    assert [a.status for a in made] == [202] * PRE_BUILT, made
    targets = list(client.created)
    client.deletable.clear()
    for uuid in targets:
        assert plane.wait_idle(uuid, 120)['vm_state'] == vm.ACTIVE
    pids = {name: proc.pid for name, proc in plane.procs.items()}

    with Load(client, targets):
        # A build of the load is on its hypervisor: it ends during the
        # switch.
        plane.wait_for(lambda: any(
            i['task_state'] is not None for i in plane.statedb.list_instances()
            if i['uuid'] not in targets), 60, 'a build of the load to run')
        killed, crash = client.now(), _utcnow()
        pair.kill_primary()
        time.sleep(PROMOTE_AFTER)   # the failover manager's decision time
        promoting = client.now()
        pair.promote()
        promoted, promoted_utc = client.now(), _utcnow()
        first_ok = plane.wait_for(
            lambda: next((a for a in client.since(promoted)
                          if a.status < 300), None),
            RECOVERY + 30, 'a request to succeed after the promotion')
        plane.wait_for(lambda: client.now() > first_ok.sent + AFTER,
                       AFTER + 10, 'more load on the new primary')

    recovered = first_ok.sent + first_ok.took
    _assert_answers(client, killed, promoted)
    assert recovered - promoted < RECOVERY, first_ok
    assert _serving_port(plane) == pair.ports[1]

    # Nothing the API accepted is lost, every task ended, and nothing is
    # half-applied.
    everything = plane.statedb.list_instances(include_deleted=True)
    assert set(client.created) <= {i['uuid'] for i in everything}
    for answer in client.answers:
        if answer.op == 'delete' and answer.status == 204:
            assert plane.instance(answer.uuid)['vm_state'] == vm.HARD_DELETED
    _assert_every_task_ended(plane, [i['uuid'] for i in everything])
    running, last, failed = _in_flight(plane, [i['uuid'] for i in everything],
                                       crash, promoted_utc)
    assert running >= 1, 'no task met the switch: nothing was proved'
    for inst in plane.statedb.list_instances(include_deleted=True):
        if inst['vm_state'] == vm.HARD_DELETED and inst['host']:
            plane.wait_destroyed(inst, END_DEADLINE)
    assert plane.violations() == []
    for answer in client.since(promoted):
        if answer.op == 'create' and answer.status == 202:
            inst = plane.instance(answer.body['server']['id'])
            assert inst['vm_state'] in (vm.ACTIVE, vm.HARD_DELETED), inst
    plane.check_alive()
    assert {n: p.pid for n, p in plane.procs.items()} == pids

    failures = [a for a in client.answers if a.status not in OK]
    gap, slowest = _stalls(client.answers)
    print('\nprimary killed at %.1f s, standby promoted %.1f s later (pg_ctl '
          'promote took %.2f s); %d requests (%d servers created), %d '
          'failed (all 503 "database is unavailable"); longest stall: %.1f s '
          'with no request answered well, slowest request %.2f s (%s %d at '
          '%.1f s); first success %.2f s after the promotion (%.2f s after '
          'the crash); %d task(s) running at the crash, the last ended '
          '%.1f s after the promotion; %d result(s) refused by the conductor '
          'and sent again; %d task(s) failed%s'
          % (killed, promoting - killed, promoted - promoting,
             len(client.answers), len(client.created), len(failures), gap,
             slowest.took, slowest.op, slowest.status, slowest.sent,
             recovered - promoted, recovered - killed, running, last,
             len(_refused_results(plane)), len(failed),
             ''.join('\n  %s: %s' % f for f in failed)))

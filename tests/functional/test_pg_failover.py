"""The PostgreSQL primary dies and its standby is promoted: the small form.

Issue 26, in the default suite. The same PostgreSQL pair as the full-size
test (tests/integration/test_faults_pg_failover.py, ``tox -e faults``): a
primary and a streaming standby made by ``pg_basebackup -R``, started here
on free loopback ports (:mod:`tests.pg_pair_support`), never the shared
server. The plane runs in this process (a conductor and two agents on the
fake hypervisor) on the multi-host URL (both servers,
``target_session_attrs=read-write``). Client threads build, stop, start and
hard-delete all along; the primary is stopped hard (``pg_ctl stop -m
immediate``) and the standby promoted :data:`PROMOTE_AFTER` s later.

Checked: a call fails only with "database unavailable", and only between
the crash and a bounded time after the promotion; calls succeed again
within :data:`RECOVERY` s of the promotion, nothing restarted; every task
ends (done, or failed with a reason); every instance whose create was
answered is on the promoted server; ``tristate-manage check``'s invariants
hold there.
"""

import threading
import time

import pytest

from common import exception
from common import states
from common.db import checks
from common.states import power
from common.states import vm
from tests.functional.conftest import active
from tests.functional.conftest import domain
from tests.functional.conftest import wait_for
from tests.functional.conftest import wait_idle
from tests.pg_pair_support import running_pair
from tests.pg_pair_support import serving_port

pytestmark = pytest.mark.postgresql

PROMOTE_AFTER = 1.0     # seconds: a failover manager's decision, shortened
RECOVERY = 15.0         # seconds from the promotion to a call that succeeds
AFTER = 1.0             # seconds of load once calls succeed again
WORKERS = 3
PAUSE = 0.05            # seconds between a worker's calls
# Action on an idle instance, by its vm_state.
NEXT = {vm.ACTIVE: 'stop', vm.STOPPED: 'start'}


@pytest.fixture
def pair(tmp_path):
    yield from running_pair(tmp_path / 'pg-logs')


class Calls:
    """Each worker's calls to the conductor: (sent, took, what, error or
    None), and the uuids of the instances whose create was answered."""

    def __init__(self, plane, ctx, targets):
        self.plane, self.ctx = plane, ctx
        self.targets = targets
        self.started = time.monotonic()
        self.record, self.created, self.deletable = [], [], []
        self.halt = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(n,),
                                         daemon=True) for n in range(WORKERS)]

    def now(self):
        return time.monotonic() - self.started

    def _call(self, what, call):
        sent = self.now()
        try:
            result = call()
        except exception.Conflict:      # the action table said no: fine
            result, error = None, None
        except Exception as err:        # noqa: BLE001 - checked by the test
            result, error = None, err
        else:
            error = None
        self.record.append((sent, self.now() - sent, what, error))
        return result

    def _run(self, worker):
        client, n = self.plane.client, 0
        while not self.halt.wait(PAUSE):
            n += 1
            if n % 3 == 1:
                made = self._call('create', lambda name='load-%d-%d' % (
                    worker, n): client.create_instance(
                        self.ctx, name=name, flavor='tiny',
                        image_ref='cirros'))
                if made:
                    self.created.append(made['uuid'])
                    self.deletable.append(made['uuid'])
            elif n % 3 == 2:
                self._act(self.targets[worker % len(self.targets)])
            else:
                self._delete()

    def _delete(self):
        try:
            doomed = self.deletable.pop(0)
        except IndexError:
            return
        self._call('delete', lambda: self.plane.client.delete_instance(
            self.ctx, doomed))

    def _act(self, uuid):
        inst = self._call('read', lambda: self.plane.statedb.get_instance(uuid))
        if inst and inst['task_id'] is None and inst['vm_state'] in NEXT:
            self._call(NEXT[inst['vm_state']], lambda: self.plane.client.
                       run_action(self.ctx, uuid, NEXT[inst['vm_state']]))

    def succeeded_since(self, when):
        return next((r for r in list(self.record)
                     if r[0] >= when and r[3] is None), None)

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.halt.set()
        for thread in self.threads:
            thread.join(60)


def _check_calls(calls, killed, promoted):
    wrong = [r for r in calls.record if r[3] is not None and not (
        isinstance(r[3], exception.DBUnavailable)
        and r[0] + r[1] >= killed and r[0] <= promoted + RECOVERY)]
    assert wrong == [], wrong


def _wait_destroyed(plane, inst):
    """Until the deleted ``inst``'s domain is gone and reported so (until
    then ``check`` rightly names a domain reported after the delete)."""
    wait_for(lambda: domain(plane, inst['host'], inst['uuid']) is None
             and plane.statedb.get_instance(inst['uuid'])['power_state']
             == power.NOSTATE,
             what='the domain of deleted %s to be reported gone'
             % inst['uuid'])


def test_primary_crash_and_promotion(pair, conf, make_plane, ctx):
    conf.set_override('connection', pair.url, group='database')
    plane = make_plane(hosts=2)
    assert serving_port(plane.statedb.db) == pair.ports[0]
    targets = [active(plane, ctx, name='pre-%d' % n)['uuid']
               for n in range(2)]

    with Calls(plane, ctx, targets) as calls:
        wait_for(lambda: len(calls.record) > 6, what='the load to run')
        killed = calls.now()
        pair.kill_primary()
        time.sleep(PROMOTE_AFTER)   # the failover manager's decision time
        pair.promote()
        promoted = calls.now()
        first_ok = wait_for(lambda: calls.succeeded_since(promoted),
                            timeout=RECOVERY,
                            what='a call to succeed after the promotion')
        wait_for(lambda: calls.now() > first_ok[0] + AFTER,
                 what='more load on the new primary')

    _check_calls(calls, killed, promoted)
    assert serving_port(plane.statedb.db) == pair.ports[1]
    everything = plane.statedb.list_instances(include_deleted=True)
    assert set(calls.created) <= {i['uuid'] for i in everything}
    for inst in everything:
        wait_idle(plane, inst['uuid'], timeout=60)
        for entry in plane.statedb.list_actions(inst['uuid']):
            assert entry['result'] != states.RESULT_RUNNING, entry
            if entry['result'] != states.RESULT_SUCCESS:
                assert entry['message'], entry
        if inst['vm_state'] == vm.HARD_DELETED and inst['host']:
            _wait_destroyed(plane, inst)
    found, _seen = checks.find_violations(
        plane.statedb.db, checks.Limits(ratios=(4.0, 1.0, 1.0), grace=1))
    assert [str(v) for v in found] == []
    refused = [r for r in calls.record if r[3] is not None]
    print('\n%d calls, %d answered "database unavailable"; first success '
          '%.2f s after the promotion (%.2f s after the crash)'
          % (len(calls.record), len(refused), first_ok[0] + first_ok[1]
             - promoted, first_ok[0] + first_ok[1] - killed))

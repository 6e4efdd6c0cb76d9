"""Reconcile end to end: tristate-fakevirt acts behind the control plane's
back (a guest shuts itself down, crashes, vanishes, is started by hand) and
the plane brings vm_state and the hypervisor back into agreement by the
decision table (DESIGN.md section 5), each decision in the action log with
its reason.

Every wait polls with a deadline. Where a test checks that something does
*not* happen, it first waits for a later event (a newer power report stored,
an agent's log line) instead of sleeping.
"""

import logging
import threading
import time
import uuid as uuidlib

import pytest

from common import context
from common import exception
from common import reconcile as rtable
from common import states
from common.states import power
from common.states import vm
from compute_agent.cmd import fakevirt
from compute_agent.virt import fake
from tests.functional.conftest import Planes
from tests.functional.conftest import act
from tests.functional.conftest import active
from tests.functional.conftest import domain
from tests.functional.conftest import last_log
from tests.functional.conftest import log_of
from tests.functional.conftest import outside
from tests.functional.conftest import new_conf
from tests.functional.conftest import set_opts
from tests.functional.conftest import summary
from tests.functional.conftest import wait_domain
from tests.functional.conftest import wait_for
from tests.functional.conftest import wait_instance

CRASH_LIMIT = 2
WINDOW = 600
SYSTEM_USER = context.get_admin_context().user_id


@pytest.fixture(scope='module')
def rplane(tmp_path_factory):
    """One two-host plane for the module: each test has its own instances.
    A crash budget of 2, and orphans acted on at their first report."""
    conf = new_conf(tmp_path_factory.mktemp('reconcile'))
    set_opts(conf, 'reconcile', crash_restart_limit=CRASH_LIMIT,
             crash_restart_window=WINDOW, orphan_grace=0)
    planes = Planes(conf)
    yield planes.start(hosts=2)
    planes.stop_all()
    conf.reset()


def successes(plane, uuid, action):
    return [e for e in log_of(plane, uuid, action)
            if e['result'] == states.RESULT_SUCCESS]


def wait_settled(plane, uuid, what, predicate):
    """The row once no task runs and ``predicate(row)`` holds."""
    return wait_instance(
        plane, uuid, lambda i: i['task_id'] is None and predicate(i),
        what=what)


def wait_newer_report(plane, uuid, row):
    """The row once the instance's agent has sent two more full reports
    (every 0.5 s here) and the conductor has answered them: a later event to
    check against. (The conductor writes only changes, so an unchanged
    report leaves no trace in the row itself.)"""
    reporter = plane.agents[row['host']].reporter
    target = reporter.full_reports_sent + 2
    wait_for(lambda: reporter.full_reports_sent >= target,
             what='two more full power reports from %s' % row['host'])
    return plane.statedb.get_instance(uuid)


def check_reconciled(entry, before, after, why):
    assert (entry['action'], entry['vm_state_before'], entry['vm_state_after'],
            entry['result'], entry['user_id']) == (
        'reconcile', before, after, states.RESULT_SUCCESS, SYSTEM_USER), entry
    assert entry['message'] == why


# --- guest shutdown ----------------------------------------------------------

def test_guest_shutdown_with_stop_policy_stops(rplane, ctx):
    inst = active(rplane, ctx, policies={'user_shutdown': 'stop'})
    uuid = inst['uuid']

    outside(rplane, 'guest-shutdown', uuid)

    row = wait_settled(rplane, uuid, 'vm_state stopped',
                       lambda i: i['vm_state'] == vm.STOPPED)
    assert (row['power_state'], row['power_reason']) == (power.SHUTDOWN,
                                                         'guest')
    check_reconciled(last_log(rplane, uuid, 'reconcile'), vm.ACTIVE,
                     vm.STOPPED, 'the guest shut itself down')
    # Not restarted: still down at the next report, once recorded.
    later = wait_newer_report(rplane, uuid, row)
    assert (later['vm_state'], later['task_id']) == (vm.STOPPED, None)
    assert [e['action'] for e in log_of(rplane, uuid)] == ['build',
                                                           'reconcile']
    assert domain(rplane, row['host'], uuid)['power_state'] == power.SHUTDOWN
    assert rtable.oper_state(row, host_up=True) == rtable.ADMIN_DOWN
    # The user's will is followed: it starts again when asked.
    assert act(rplane, ctx, uuid, 'start')['vm_state'] == vm.ACTIVE


def test_guest_shutdown_with_restart_policy_restarts(rplane, ctx):
    inst = active(rplane, ctx, policies={'user_shutdown': 'restart'})
    uuid = inst['uuid']

    outside(rplane, 'guest-shutdown', uuid)

    row = wait_settled(rplane, uuid, 'a restart by reconcile',
                       lambda i: successes(rplane, uuid, 'power_on'))
    assert (row['vm_state'], row['power_state']) == (vm.ACTIVE, power.RUNNING)
    [entry] = log_of(rplane, uuid, 'power_on')
    assert (entry['message'], entry['user_id'], entry['vm_state_after']) == (
        'the guest shut itself down', SYSTEM_USER, vm.ACTIVE)
    assert log_of(rplane, uuid, 'reconcile') == []
    assert domain(rplane, row['host'], uuid)['power_state'] == power.RUNNING
    assert rtable.oper_state(row, host_up=True) == rtable.RUNNING


# --- crash, vanish, started by hand ------------------------------------------

def test_crash_is_restarted_then_error_after_the_budget(rplane, ctx):
    uuid = active(rplane, ctx)['uuid']      # crash policy: restart (default)
    for n in range(1, CRASH_LIMIT + 1):
        outside(rplane, 'crash', uuid)
        row = wait_settled(
            rplane, uuid, 'crash restart %d' % n,
            lambda i, n=n: len(successes(rplane, uuid, 'power_on')) == n
            and i['power_state'] == power.RUNNING)
        assert row['vm_state'] == vm.ACTIVE
        assert last_log(rplane, uuid, 'power_on')['message'] == (
            'crash restart: the guest crashed (%d of %d in %d s)'
            % (n, CRASH_LIMIT, WINDOW))

    outside(rplane, 'crash', uuid)

    row = wait_settled(rplane, uuid, 'vm_state error',
                       lambda i: i['vm_state'] == vm.ERROR)
    assert row['power_state'] == power.CRASHED
    check_reconciled(
        last_log(rplane, uuid, 'reconcile'), vm.ACTIVE, vm.ERROR,
        'the guest crashed %d times in %d s, over the restart budget of %d'
        % (CRASH_LIMIT + 1, WINDOW, CRASH_LIMIT))
    assert len(log_of(rplane, uuid, 'power_on')) == CRASH_LIMIT


def test_a_failed_restart_is_retried_at_the_next_report(rplane, ctx):
    inst = active(rplane, ctx, policies={'user_shutdown': 'restart'})
    uuid, store = inst['uuid'], fake.HostStore(rplane.conf.state_dir,
                                               inst['host'])
    store.set_fault('power_on', 'fail', count=1)
    try:
        outside(rplane, 'guest-shutdown', uuid)
        row = wait_settled(rplane, uuid, 'a restart by reconcile',
                           lambda i: successes(rplane, uuid, 'power_on'))
    finally:
        store.clear_faults()
    assert (row['vm_state'], row['power_state']) == (vm.ACTIVE, power.RUNNING)
    assert [e['result'] for e in log_of(rplane, uuid, 'power_on')] == [
        states.RESULT_ROLLED_BACK, states.RESULT_SUCCESS]


def test_vanished_domain_is_an_error(rplane, ctx):
    uuid = active(rplane, ctx)['uuid']

    outside(rplane, 'vanish', uuid)

    row = wait_settled(rplane, uuid, 'vm_state error',
                       lambda i: i['vm_state'] == vm.ERROR)
    assert row['power_state'] == power.NOSTATE
    check_reconciled(last_log(rplane, uuid, 'reconcile'), vm.ACTIVE, vm.ERROR,
                     'the domain vanished from its host')


def test_vanished_while_the_agent_was_down_is_an_error(make_plane, ctx):
    # No event can tell: the agent's full report, which no longer lists the
    # domain, is the safety net.
    plane = make_plane(hosts=1)
    uuid = active(plane, ctx)['uuid']
    plane.stop_agent('host1')
    outside(plane, 'vanish', uuid)

    plane.start_agent('host1')

    row = wait_settled(plane, uuid, 'vm_state error',
                       lambda i: i['vm_state'] == vm.ERROR)
    assert row['power_state'] == power.NOSTATE
    check_reconciled(last_log(plane, uuid, 'reconcile'), vm.ACTIVE, vm.ERROR,
                     'the domain vanished from its host')


def test_stopped_instance_started_behind_our_back_is_powered_off(rplane, ctx):
    uuid = active(rplane, ctx)['uuid']
    assert act(rplane, ctx, uuid, 'stop')['vm_state'] == vm.STOPPED

    outside(rplane, 'start', uuid)

    row = wait_settled(rplane, uuid, 'a power_off by reconcile',
                       lambda i: successes(rplane, uuid, 'power_off')
                       and i['power_state'] == power.SHUTDOWN)
    assert row['vm_state'] == vm.STOPPED
    [entry] = log_of(rplane, uuid, 'power_off')
    assert (entry['message'], entry['user_id'], entry['vm_state_before'],
            entry['vm_state_after']) == (
        "started behind Tristate's back; the user asked for stopped",
        SYSTEM_USER, vm.STOPPED, vm.STOPPED)
    assert domain(rplane, row['host'], uuid)['power_state'] == power.SHUTDOWN


# --- deleted while its host was down, and orphans ----------------------------

def test_deleted_while_host_down_is_destroyed_when_agent_returns(
        make_plane, ctx, caplog):
    caplog.set_level(logging.INFO, logger='compute_agent.reporter')
    plane = make_plane(hosts=1)
    uuid = active(plane, ctx)['uuid']
    plane.stop_agent('host1')
    # The hard delete's UPDATE, and no cleanup request: it would be lost
    # with the agent down, so only the agent's power report can clean up.
    plane.statedb.hard_delete(ctx, uuid)
    assert domain(plane, 'host1', uuid) is not None

    plane.start_agent('host1')

    wait_domain(plane, 'host1', uuid, lambda rec: rec is None,
                what='the domain destroyed')
    assert plane.statedb.get_instance(uuid)['vm_state'] == vm.HARD_DELETED
    assert any(uuid in r.getMessage() and 'its instance was deleted'
               in r.getMessage() for r in caplog.records)


def _spawn_orphan(plane, host):
    driver = fake.FakeDriver(state_dir=plane.conf.state_dir)
    driver.init_host(host)
    uuid = str(uuidlib.uuid4())     # no instance has it
    driver.spawn(uuid, name='orphan', image_ref='cirros', flavor={
        'name': 'tiny', 'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1})
    return driver, uuid


@pytest.mark.parametrize('action', ['destroy', 'stop', 'log'])
def test_orphan_is_handled_by_its_policy(rplane, caplog, action):
    caplog.set_level(logging.WARNING, logger='compute_agent.reporter')
    rplane.conf.set_override('orphan_action', action, group='reconcile')
    driver, uuid = _spawn_orphan(rplane, 'host2')
    try:
        if action == 'destroy':
            wait_domain(rplane, 'host2', uuid, lambda rec: rec is None,
                        what='the orphan destroyed')
        elif action == 'stop':
            wait_domain(rplane, 'host2', uuid,
                        lambda rec: rec is not None
                        and rec['power_state'] == power.SHUTDOWN,
                        what='the orphan stopped')
        else:
            wait_for(lambda: [r for r in caplog.records
                              if uuid in r.getMessage()
                              and 'belongs to no instance' in r.getMessage()],
                     what='the orphan %s logged' % uuid)
            assert domain(rplane, 'host2', uuid)['power_state'] == (
                power.RUNNING)
    finally:
        rplane.conf.clear_override('orphan_action', group='reconcile')
        driver.destroy(uuid)


# --- races with the user -----------------------------------------------------

def _reported_shutdown(plane, uuid, after_seq, deadline=10.0):
    """Poll until the guest's shutdown is stored (in the user's thread)."""
    give_up = time.monotonic() + deadline
    while time.monotonic() < give_up:
        inst = plane.statedb.get_instance(uuid)
        if inst['power_seq'] > after_seq and inst['power_reason'] == 'guest':
            return True
        time.sleep(0.001)
    return False


def _race_stop_with_guest_shutdown(plane, ctx, uuid, when):
    """The user's stop and the guest's shutdown, both at once (``when`` is
    'together') or the stop as soon as the shutdown is stored, while
    reconcile decides ('reported'); what the user got."""
    barrier = threading.Barrier(2, timeout=10)
    seq = plane.statedb.get_instance(uuid)['power_seq']
    outcome = {}

    def user():
        barrier.wait()
        if when == 'reported' and not _reported_shutdown(plane, uuid, seq):
            outcome['stop'] = 'the shutdown was never reported'
            return
        try:
            plane.client.run_action(ctx, uuid, 'stop')
            outcome['stop'] = 'claimed'
        except exception.ActionNotAllowed as err:
            outcome['stop'] = 'denied'
            outcome['error'] = err
        except Exception as err:       # reported by the test thread
            outcome['stop'] = err

    def guest():
        barrier.wait()
        outcome['guest'] = fakevirt.main(
            ['--state-dir', plane.conf.state_dir, 'guest-shutdown', uuid])

    threads = [threading.Thread(target=user), threading.Thread(target=guest)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=15)
    assert outcome.get('guest') == 0, outcome
    assert outcome.get('stop') in ('claimed', 'denied'), outcome
    return outcome


def _consistent(inst):
    return (inst['vm_state'], inst['power_state']) in {
        (vm.STOPPED, power.SHUTDOWN), (vm.ACTIVE, power.RUNNING)}


@pytest.mark.parametrize('policy', ['stop', 'restart'])
def test_reconcile_racing_a_users_stop(rplane, ctx, policy):
    uuid = active(rplane, ctx, policies={'user_shutdown': policy})['uuid']
    for round_, when in enumerate(['together', 'reported'] * 2):
        log_before = len(log_of(rplane, uuid))
        outcome = _race_stop_with_guest_shutdown(rplane, ctx, uuid, when)

        row = wait_settled(rplane, uuid, 'round %d to settle' % round_,
                           _consistent)
        if policy == 'stop':
            assert row['vm_state'] == vm.STOPPED, summary(row)
        # Exactly one of the two won: the user's stop, or reconcile.
        new = log_of(rplane, uuid)[log_before:]
        stops = [e for e in new if e['action'] == 'stop']
        decided = [e for e in new if e['action'] in ('reconcile', 'power_on')]
        if outcome['stop'] == 'claimed':
            assert [e['result'] for e in stops] == [states.RESULT_SUCCESS]
            # A restart may have come and gone before the stop, never
            # during it.
            assert all(e['action'] == 'power_on'
                       and e['result'] == states.RESULT_SUCCESS
                       and e['finished_at'] <= stops[0]['started_at']
                       for e in decided), new
            if policy == 'stop':
                assert decided == []
        else:
            assert 'Cannot stop' in str(outcome['error'])
            assert stops == []
            assert [(e['action'], e['message']) for e in decided] == [(
                'reconcile' if policy == 'stop' else 'power_on',
                'the guest shut itself down')]
        # Nothing moves afterwards: checked after a newer report.
        later = wait_newer_report(rplane, uuid, row)
        assert (later['vm_state'], later['task_id']) == (row['vm_state'],
                                                         None), summary(later)
        assert _consistent(later), summary(later)
        if later['vm_state'] == vm.STOPPED:
            act(rplane, ctx, uuid, 'start')


# --- policies ----------------------------------------------------------------

def test_policies_changed_later_take_effect(rplane, ctx):
    uuid = active(rplane, ctx)['uuid']
    assert (rplane.statedb.get_instance(uuid)['user_shutdown_policy']) == 'stop'

    changed = rplane.client.update_policies(
        ctx, uuid, {'user_shutdown': 'restart', 'crash': 'error'})

    assert (changed['user_shutdown_policy'], changed['crash_policy']) == (
        'restart', 'error')
    outside(rplane, 'guest-shutdown', uuid)
    row = wait_settled(rplane, uuid, 'a restart by reconcile',
                       lambda i: successes(rplane, uuid, 'power_on')
                       and i['power_state'] == power.RUNNING)
    assert row['vm_state'] == vm.ACTIVE
    outside(rplane, 'crash', uuid)
    wait_settled(rplane, uuid, 'vm_state error',
                 lambda i: i['vm_state'] == vm.ERROR)
    check_reconciled(last_log(rplane, uuid, 'reconcile'), vm.ACTIVE, vm.ERROR,
                     'the guest crashed')
    assert len(log_of(rplane, uuid, 'power_on')) == 1


@pytest.mark.parametrize('policies,allowed', [
    ({'user_shutdown': 'reboot'}, 'stop, restart, delete'),
    ({'crash': 'ignore'}, 'restart, stop, error'),
    ({'user_shutdown': 'stop', 'crash': 'sometimes'}, 'restart, stop, error'),
])
def test_invalid_policy_values_are_refused(rplane, ctx, policies, allowed):
    uuid = active(rplane, ctx)['uuid']
    before = rplane.statedb.get_instance(uuid)

    with pytest.raises(exception.InvalidState) as err:
        rplane.client.update_policies(ctx, uuid, policies)
    assert allowed in str(err.value)
    after = rplane.statedb.get_instance(uuid)
    assert (after['user_shutdown_policy'], after['crash_policy']) == (
        before['user_shutdown_policy'], before['crash_policy'])

    count = len(rplane.statedb.list_instances())
    with pytest.raises(exception.InvalidState) as err:
        rplane.client.create_instance(ctx, name='bad', flavor='tiny',
                                      image_ref='cirros', policies=policies)
    assert allowed in str(err.value)
    assert len(rplane.statedb.list_instances()) == count


def test_unknown_policy_is_refused(rplane, ctx):
    uuid = active(rplane, ctx)['uuid']
    with pytest.raises(exception.Invalid) as err:
        rplane.client.update_policies(ctx, uuid, {'reboot': 'stop'})
    assert 'crash, user_shutdown' in str(err.value)


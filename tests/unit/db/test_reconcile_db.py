"""Every rule of the reconcile table against the real gateway and database.

For each rule: a power report stored while a task runs changes nothing but
the power_state; the same report on an idle instance has the rule's effect
(a vm_state change logged as 'reconcile' with the reason, a power_on or
power_off task claimed, or a destroy asked of the agent). Then the races:
a decision taken on a stale report, or after a user claimed a task, does
nothing. The agent is not under test here: the flows' ``send`` is a stub
that records what would be sent. SQLite only (the conditional UPDATEs are
checked on PostgreSQL by test_concurrency.py and test_gateway.py).
"""

import datetime
import shutil

import pytest

from common import context
from common import exception
from common import reconcile as rtable
from common import states
from common.db import api
from common.db import engine
from common.db import migration
from common.states import power
from common.states import task
from common.states import vm
from conductor import reconcile
from tests.conftest import HOST
from tests.unit.db import world as world_mod
from tests.unit.db.world import CAPACITY
from tests.unit.db.world import WINDOW
from tests.unit.db.world import report_of

WINDOW_DELTA = datetime.timedelta(seconds=WINDOW)

# What a decision turns into, per policy: (concrete decision, policy).
_POLICIES = {
    rtable.USER_SHUTDOWN: ('user_shutdown', states.USER_SHUTDOWN_POLICIES),
    rtable.CRASH: ('crash', states.CRASH_POLICIES),
}
_BY_POLICY = {'stop': rtable.STOP, 'error': rtable.ERROR,
              'restart': 'power_on', 'delete': rtable.DELETE}
_TASK_STATE = {'power_on': task.POWERING_ON, 'power_off': task.POWERING_OFF}


# --- fixtures ----------------------------------------------------------------

@pytest.fixture(scope='module')
def migrated(tmp_path_factory):
    """One migrated SQLite file; each test gets a copy (migrating is slow)."""
    path = tmp_path_factory.mktemp('reconcile-db') / 'template.sqlite'
    database = engine.Database('sqlite:///%s' % path)
    migration.upgrade(database)
    database.dispose()
    return path


@pytest.fixture
def statedb(migrated, tmp_path, clock):
    path = tmp_path / 'tristate.sqlite'
    shutil.copy(migrated, path)
    database = engine.Database('sqlite:///%s' % path)
    yield api.StateDB(database, clock=clock)
    database.dispose()


# The fixtures, over this module's SQLite statedb.
conf = world_mod.conf
world = world_mod.world


# --- every rule --------------------------------------------------------------

def _key(value):
    return (value is not None, value)


def _rule_cases():
    """One case per rule, vm_state in it and policy value that applies."""
    cases = []
    for number, rule in enumerate(rtable.TABLE.rules):
        power_state = sorted(rule.power_states)[0]
        reason = sorted(rule.reasons, key=_key)[0]
        name, choices = _POLICIES.get(rule.decision, (None, (None,)))
        for vm_state in sorted(rule.vm_states, key=states.VM_STATES.index):
            for choice in choices:
                policy = {name: choice} if name else {}
                concrete = _BY_POLICY[choice] if name else rule.decision
                case_id = 'rule%02d-%s-%s-%s-%s' % (
                    number, vm_state, states.POWER_STATES[power_state],
                    reason or 'none', choice or rule.decision)
                cases.append(pytest.param(rule, vm_state, power_state, reason,
                                          policy, concrete, id=case_id))
    return cases


RULE_CASES = _rule_cases()


@pytest.mark.parametrize('rule,vm_state,power_state,reason,policy,concrete',
                         RULE_CASES)
def test_rule_with_a_task_running_stores_power_only(
        world, rule, vm_state, power_state, reason, policy, concrete):
    uuid, task_id = world.busy(vm_state, **policy)
    before, log_before = world.snapshot(uuid)

    stored = world.report(uuid, power_state, reason)

    assert stored is not None, 'the report was not stored while a task ran'
    assert (stored['power_state'], stored['power_reason']) == (power_state,
                                                               reason)
    assert world.reconciler.consider(stored) is False
    after, log_after = world.snapshot(uuid)
    changed = {key for key in after if after[key] != before[key]}
    assert changed <= {'power_state', 'power_reason', 'power_seq',
                       'power_reported_at'}
    assert (after['vm_state'], after['task_id']) == (vm_state, task_id)
    assert log_after == log_before
    assert world.flows.sent == []
    assert world.notifier.sent == []


@pytest.mark.parametrize('rule,vm_state,power_state,reason,policy,concrete',
                         RULE_CASES)
def test_rule_without_a_task_has_its_effect(
        world, rule, vm_state, power_state, reason, policy, concrete):
    uuid = world.idle(vm_state, **policy)
    _before, log_before = world.snapshot(uuid)
    stored = world.report(uuid, power_state, reason)
    assert rtable.TABLE.decide(vm_state, power_state, reason) is rule

    destroy = world.reconciler.consider(stored)

    after, log_after = world.snapshot(uuid)
    new_log = log_after[len(log_before):]
    assert log_after[:len(log_before)] == log_before
    assert (after['power_state'], after['power_reason']) == (power_state,
                                                             reason)
    assert destroy is (concrete == rtable.DESTROY)
    if concrete in (rtable.NONE, rtable.STORE, rtable.DESTROY):
        assert after == stored
        assert new_log == []
        assert world.flows.sent == []
        assert world.notifier.sent == []
    elif concrete in (rtable.STOP, rtable.ERROR):
        _check_state_change(world, after, new_log, vm_state, concrete, rule)
    elif concrete == rtable.DELETE:
        _check_deleted(world, after, new_log, vm_state, rule)
    else:
        _check_task(world, after, new_log, vm_state, concrete, rule)


def _check_state_change(world, after, new_log, vm_state, concrete, rule):
    target = vm.STOPPED if concrete == rtable.STOP else vm.ERROR
    assert (after['vm_state'], after['task_id'], after['task_state']) == (
        target, None, None)
    assert len(new_log) == 1, new_log
    entry = new_log[0]
    assert (entry['action'], entry['vm_state_before'], entry['vm_state_after'],
            entry['result']) == ('reconcile', vm_state, target,
                                 states.RESULT_SUCCESS)
    assert entry['message'] == rule.why
    assert entry['user_id'] == context.get_admin_context().user_id
    assert world.flows.sent == []
    events = world.notifier.events()
    assert events == ['instance.update', 'instance.power_reconcile']
    payload = world.notifier.sent[1][1]
    assert (payload['decision'], payload['reason'], payload['vm_state']) == (
        concrete, rule.why, target)


def _check_deleted(world, after, new_log, vm_state, rule):
    """user_shutdown policy delete: the hard delete, logged with why, its
    allocation freed, and the domain destroyed."""
    assert (after['vm_state'], after['task_id']) == (vm.HARD_DELETED, None)
    assert [(e['action'], e['vm_state_before'], e['vm_state_after'],
             e['message']) for e in new_log] == [
        ('delete', vm_state, vm.HARD_DELETED,
         '%s; user_shutdown policy delete' % rule.why)]
    assert world.db.list_allocations(instance_uuid=after['uuid']) == []
    assert world.flows.destroyed == [(HOST, after['uuid'])]
    assert world.flows.sent == []
    assert world.notifier.events() == ['instance.update', 'instance.delete.end',
                                       'instance.power_reconcile']


def _check_task(world, after, new_log, vm_state, concrete, rule):
    assert (after['vm_state'], after['task_action'], after['task_state']) == (
        vm_state, concrete, _TASK_STATE[concrete])
    assert after['task_id'] is not None
    assert len(new_log) == 1, new_log
    entry = new_log[0]
    assert (entry['action'], entry['task_id'], entry['vm_state_before'],
            entry['result']) == (concrete, after['task_id'], vm_state,
                                 states.RESULT_RUNNING)
    if rule.decision == rtable.CRASH:
        assert entry['message'] == ('%s: %s (1 of 3 in %d s)' % (
            reconcile.CRASH_PREFIX, rule.why, WINDOW))
    else:
        assert entry['message'] == rule.why
    assert entry['user_id'] == context.get_admin_context().user_id
    [(task_ctx, host, inst, action, params)] = world.flows.sent
    assert (task_ctx.task_id, host, inst['uuid'], action, params) == (
        after['task_id'], HOST, after['uuid'], concrete, {})
    assert task_ctx.is_admin
    events = world.notifier.events()
    assert events == ['instance.update', 'instance.%s.start' % concrete,
                      'instance.power_reconcile']


def test_every_rule_is_covered_by_a_case():
    covered = {id(case.values[0]) for case in RULE_CASES}
    assert covered == {id(rule) for rule in rtable.TABLE.rules}


# --- stale decisions never act -----------------------------------------------

def test_a_decision_on_a_stale_report_does_nothing(world):
    uuid = world.idle(vm.ACTIVE)
    stale = world.report(uuid, power.SHUTDOWN, 'guest')
    world.report(uuid, power.RUNNING)             # the guest came back
    before = world.snapshot(uuid)

    assert world.reconciler.consider(stale) is False

    assert world.snapshot(uuid) == before
    assert world.notifier.sent == []


def test_a_task_on_a_stale_report_is_not_claimed(world):
    uuid = world.idle(vm.STOPPED)
    stale = world.report(uuid, power.RUNNING)
    world.report(uuid, power.SHUTDOWN)
    before = world.snapshot(uuid)

    world.reconciler.consider(stale)

    assert world.snapshot(uuid) == before
    assert world.flows.sent == []


def test_a_decision_after_a_users_claim_does_nothing(world, ctx):
    uuid = world.idle(vm.ACTIVE)
    stored = world.report(uuid, power.SHUTDOWN, 'guest')
    claimed = world.db.claim_task(ctx, uuid, 'stop')   # the user was first
    before = world.snapshot(uuid)

    world.reconciler.consider(stored)      # decided on the row read before

    assert world.snapshot(uuid) == before
    assert world.db.get_instance(uuid)['task_id'] == claimed['task_id']


def test_a_restart_after_a_users_claim_is_not_claimed(world, ctx):
    uuid = world.idle(vm.ACTIVE, user_shutdown='restart')
    stored = world.report(uuid, power.SHUTDOWN, 'guest')
    world.db.claim_task(ctx, uuid, 'stop')
    before = world.snapshot(uuid)

    world.reconciler.consider(stored)

    assert world.snapshot(uuid) == before
    assert world.flows.sent == []


def test_reconcile_state_needs_the_same_report(world):
    uuid = world.idle(vm.ACTIVE)
    stored = world.report(uuid, power.SHUTDOWN, 'guest')
    world.report(uuid, power.SHUTDOWN, 'guest')
    before = world.snapshot(uuid)
    assert world.db.reconcile_state(
        world.ctx, uuid, vm_state=vm.ACTIVE, power_seq=stored['power_seq'],
        target=vm.STOPPED, why='stale') is None
    assert world.snapshot(uuid) == before


def test_reconcile_state_needs_no_task(world, ctx):
    uuid = world.idle(vm.ACTIVE)
    stored = world.report(uuid, power.SHUTDOWN, 'guest')
    world.db.claim_task(ctx, uuid, 'reboot')
    before = world.snapshot(uuid)
    assert world.db.reconcile_state(
        world.ctx, uuid, vm_state=vm.ACTIVE, power_seq=stored['power_seq'],
        target=vm.STOPPED, why='too late') is None
    assert world.snapshot(uuid) == before


def test_reconcile_state_needs_the_same_vm_state(world):
    uuid = world.idle(vm.ACTIVE)
    stored = world.report(uuid, power.SHUTDOWN, 'guest')
    before = world.snapshot(uuid)
    assert world.db.reconcile_state(
        world.ctx, uuid, vm_state=vm.RESCUED, power_seq=stored['power_seq'],
        target=vm.STOPPED, why='wrong state') is None
    assert world.snapshot(uuid) == before


def test_reconcile_state_wins_once(world):
    uuid = world.idle(vm.ACTIVE)
    stored = world.report(uuid, power.SHUTDOWN, 'guest')
    args = {'vm_state': vm.ACTIVE, 'power_seq': stored['power_seq'],
            'target': vm.STOPPED, 'why': 'guest'}
    before, after = world.db.reconcile_state(world.ctx, uuid, **args)
    assert (before['vm_state'], after['vm_state']) == (vm.ACTIVE, vm.STOPPED)
    assert world.db.reconcile_state(world.ctx, uuid, **args) is None
    assert len([e for e in world.db.list_actions(uuid)
                if e['action'] == 'reconcile']) == 1


@pytest.mark.parametrize('vm_state,target', [
    (vm.STOPPED, vm.STOPPED), (vm.HARD_DELETED, vm.ERROR),
    (vm.ERROR, vm.ERROR), (vm.ACTIVE, vm.ACTIVE)])
def test_reconcile_state_refuses_what_the_action_table_forbids(
        world, vm_state, target):
    uuid = world.idle(vm_state)
    before = world.snapshot(uuid)
    with pytest.raises(exception.InvalidState):
        world.db.reconcile_state(world.ctx, uuid, vm_state=vm_state,
                                 power_seq=before[0]['power_seq'],
                                 target=target, why='no')
    assert world.snapshot(uuid) == before


def test_claim_with_a_stale_power_seq_returns_none(world):
    uuid = world.idle(vm.STOPPED)
    stored = world.report(uuid, power.RUNNING)
    world.report(uuid, power.SHUTDOWN)
    before = world.snapshot(uuid)
    assert world.db.claim_task(world.ctx, uuid, 'power_off',
                               power_seq=stored['power_seq']) is None
    assert world.snapshot(uuid) == before


def test_claim_with_a_power_seq_while_a_task_runs_returns_none(world, ctx):
    uuid = world.idle(vm.ACTIVE)
    stored = world.report(uuid, power.CRASHED, 'crashed')
    world.db.claim_task(ctx, uuid, 'reboot')
    assert world.db.claim_task(world.ctx, uuid, 'power_on',
                               power_seq=stored['power_seq']) is None
    # A user's claim (no power_seq) is told why.
    with pytest.raises(exception.ActionNotAllowed):
        world.db.claim_task(ctx, uuid, 'stop')


def test_a_users_claim_after_reconcile_is_denied(world, ctx):
    uuid = world.idle(vm.ACTIVE)
    world.reconciler.consider(world.report(uuid, power.SHUTDOWN, 'guest'))
    assert world.db.get_instance(uuid)['vm_state'] == vm.STOPPED
    with pytest.raises(exception.ActionNotAllowed):
        world.db.claim_task(ctx, uuid, 'stop')


def test_an_older_report_is_not_stored_and_not_decided(world):
    uuid = world.idle(vm.ACTIVE)
    world.report(uuid, power.RUNNING, seq=10)
    before = world.snapshot(uuid)
    assert world.report(uuid, power.SHUTDOWN, 'guest', seq=5) is None
    assert world.snapshot(uuid) == before


# --- the crash budget --------------------------------------------------------

def _crash_and_restart(world, uuid):
    """A crash report, decided; finish the restart it started, if any."""
    world.reconciler.consider(world.report(uuid, power.CRASHED, 'crashed'))
    inst = world.db.get_instance(uuid)
    if inst['task_action'] != 'power_on':
        return inst
    world.db.finish_task(context.get_admin_context(inst['task_id']), uuid,
                         power={'power_state': power.RUNNING, 'reason': None,
                                'seq': world.report_seq()})
    return world.db.get_instance(uuid)


def _restarts(world, uuid):
    return [e for e in world.db.list_actions(uuid)
            if e['action'] == 'power_on']


def test_crashes_are_restarted_within_the_budget_then_error(world, conf):
    conf.set_override('crash_restart_limit', 2, group='reconcile')
    uuid = world.idle(vm.ACTIVE)
    for n in (1, 2):
        inst = _crash_and_restart(world, uuid)
        assert (inst['vm_state'], inst['task_id'], inst['power_state']) == (
            vm.ACTIVE, None, power.RUNNING)
        assert _restarts(world, uuid)[-1]['message'] == (
            'crash restart: the guest crashed (%d of 2 in %d s)' % (n, WINDOW))
        world.clock.advance(10)

    inst = _crash_and_restart(world, uuid)

    assert (inst['vm_state'], inst['task_id']) == (vm.ERROR, None)
    assert len(_restarts(world, uuid)) == 2
    entry = world.db.list_actions(uuid)[-1]
    assert (entry['action'], entry['vm_state_after']) == ('reconcile',
                                                          vm.ERROR)
    assert entry['message'] == ('the guest crashed 3 times in %d s, over the '
                                'restart budget of 2' % WINDOW)


def test_the_crash_budget_is_per_window(world, conf):
    conf.set_override('crash_restart_limit', 1, group='reconcile')
    uuid = world.idle(vm.ACTIVE)
    _crash_and_restart(world, uuid)
    world.clock.advance(WINDOW + 1)
    inst = _crash_and_restart(world, uuid)
    assert (inst['vm_state'], inst['power_state']) == (vm.ACTIVE,
                                                       power.RUNNING)
    assert len(_restarts(world, uuid)) == 2


def test_a_zero_budget_makes_every_crash_an_error(world, conf):
    conf.set_override('crash_restart_limit', 0, group='reconcile')
    uuid = world.idle(vm.ACTIVE)
    inst = _crash_and_restart(world, uuid)
    assert inst['vm_state'] == vm.ERROR
    assert _restarts(world, uuid) == []


def test_guest_shutdown_restarts_do_not_spend_the_crash_budget(world, conf):
    conf.set_override('crash_restart_limit', 1, group='reconcile')
    uuid = world.idle(vm.ACTIVE, user_shutdown='restart')
    for _ in range(3):
        world.reconciler.consider(world.report(uuid, power.SHUTDOWN, 'guest'))
        inst = world.db.get_instance(uuid)
        assert inst['task_action'] == 'power_on'
        world.db.finish_task(context.get_admin_context(inst['task_id']), uuid)
    assert world.db.count_actions(uuid, action='power_on',
                                  since=world.clock() - WINDOW_DELTA,
                                  message_prefix=reconcile.CRASH_PREFIX) == 0
    assert _crash_and_restart(world, uuid)['vm_state'] == vm.ACTIVE


def test_count_actions(world, ctx):
    uuid = world.idle(vm.ACTIVE)
    since = world.clock()
    assert world.db.count_actions(uuid, action='reboot', since=since) == 0
    for _ in range(2):
        task_ctx = ctx.for_task(world.db.claim_task(ctx, uuid,
                                                    'reboot')['task_id'])
        world.db.finish_task(task_ctx, uuid)
    assert world.db.count_actions(uuid, action='reboot', since=since) == 2
    assert world.db.count_actions(uuid, action='reboot', since=since,
                                  message_prefix='crash') == 0
    world.clock.advance(1)
    assert world.db.count_actions(uuid, action='reboot',
                                  since=world.clock()) == 0


# --- policies ----------------------------------------------------------------

def test_set_policies(world):
    uuid = world.idle(vm.ACTIVE)
    inst = world.db.get_instance(uuid)
    assert (inst['user_shutdown_policy'], inst['crash_policy']) == (
        'stop', 'restart')
    inst = world.db.set_policies(uuid, user_shutdown='restart')
    assert (inst['user_shutdown_policy'], inst['crash_policy']) == (
        'restart', 'restart')
    inst = world.db.set_policies(uuid, crash='error')
    assert (inst['user_shutdown_policy'], inst['crash_policy']) == (
        'restart', 'error')
    assert world.db.set_policies(uuid) == world.db.get_instance(uuid)


def test_set_policies_of_a_missing_instance(world):
    with pytest.raises(exception.InstanceNotFound):
        world.db.set_policies(api.new_uuid(), crash='stop')


# --- the conductor's results: decided when a task ends, and power reports ----

def test_a_report_during_a_task_is_decided_when_it_finishes(world, ctx):
    uuid = world.idle(vm.ACTIVE)
    task_ctx = ctx.for_task(world.db.claim_task(ctx, uuid,
                                                'reboot')['task_id'])
    world.reconciler.consider(world.report(uuid, power.SHUTDOWN, 'guest'))
    assert world.db.get_instance(uuid)['vm_state'] == vm.ACTIVE

    world.results.finished(task_ctx, host=HOST, instance_uuid=uuid,
                           power=None)

    inst = world.db.get_instance(uuid)
    assert (inst['vm_state'], inst['task_id']) == (vm.STOPPED, None)
    log = world.db.list_actions(uuid)
    assert [(e['action'], e['result']) for e in log[-2:]] == [
        ('reboot', states.RESULT_SUCCESS), ('reconcile', states.RESULT_SUCCESS)]


def test_the_power_a_task_ends_with_is_decided(world, ctx):
    uuid = world.idle(vm.STOPPED)
    task_ctx = ctx.for_task(world.db.claim_task(ctx, uuid,
                                                'snapshot')['task_id'])
    world.results.finished(task_ctx, host=HOST, instance_uuid=uuid, power={
        'power_state': power.RUNNING, 'reason': None,
        'seq': world.report_seq()})
    inst = world.db.get_instance(uuid)
    assert (inst['vm_state'], inst['task_action'], inst['task_state']) == (
        vm.STOPPED, 'power_off', task.POWERING_OFF)
    assert [sent[3] for sent in world.flows.sent] == ['power_off']


def test_a_report_during_a_task_is_decided_when_it_fails(world, ctx):
    uuid = world.idle(vm.ACTIVE)
    task_ctx = ctx.for_task(world.db.claim_task(ctx, uuid,
                                                'reboot')['task_id'])
    world.reconciler.consider(world.report(uuid, power.NOSTATE))
    world.results.failed(task_ctx, host=HOST, instance_uuid=uuid,
                         error='no domain', rolled_back=True, power=None)
    inst = world.db.get_instance(uuid)
    assert (inst['vm_state'], inst['task_id']) == (vm.ERROR, None)
    assert world.db.list_actions(uuid)[-1]['message'] == (
        'the domain vanished from its host')


def _failed_restart(world, power_after):
    """A guest shut itself down, reconcile's restart fails on the host."""
    uuid = world.idle(vm.ACTIVE, user_shutdown='restart')
    world.reconciler.consider(world.report(uuid, power.SHUTDOWN, 'guest'))
    inst = world.db.get_instance(uuid)
    assert inst['task_action'] == 'power_on'
    world.flows.sent.clear()
    power_state, reason = power_after
    world.results.failed(
        context.get_admin_context(inst['task_id']), host=HOST,
        instance_uuid=uuid, error='injected', rolled_back=True,
        power={'power_state': power_state, 'reason': reason,
               'seq': world.report_seq()})
    return uuid


def test_a_failed_restart_is_not_retried_at_once(world):
    uuid = _failed_restart(world, (power.SHUTDOWN, 'guest'))

    inst = world.db.get_instance(uuid)
    assert (inst['vm_state'], inst['task_id']) == (vm.ACTIVE, None)
    assert world.flows.sent == []
    assert [e['result'] for e in _restarts(world, uuid)] == [
        states.RESULT_ROLLED_BACK]
    # The next report decides again.
    world.reconciler.consider(world.report(uuid, power.SHUTDOWN, 'guest'))
    assert [sent[3] for sent in world.flows.sent] == ['power_on']


def test_a_failed_restart_whose_domain_vanished_is_decided_at_once(world):
    uuid = _failed_restart(world, (power.NOSTATE, None))
    inst = world.db.get_instance(uuid)
    assert (inst['vm_state'], inst['task_id']) == (vm.ERROR, None)
    assert world.flows.sent == []


def test_a_users_failed_task_is_decided_at_once(world, ctx):
    uuid = world.idle(vm.ACTIVE)
    world.report(uuid, power.SHUTDOWN, 'guest')
    task_ctx = ctx.for_task(world.db.claim_task(ctx, uuid,
                                                'reboot')['task_id'])
    world.results.failed(task_ctx, host=HOST, instance_uuid=uuid,
                         error='injected', rolled_back=True, power=None)
    assert world.db.get_instance(uuid)['vm_state'] == vm.STOPPED


def test_power_report_answers_destroy_and_orphans(world, conf):
    conf.set_override('orphan_action', 'destroy', group='reconcile')
    conf.set_override('orphan_grace', 7, group='reconcile')
    deleted = world.idle(vm.HARD_DELETED)
    active = world.idle(vm.ACTIVE)
    elsewhere = world.idle(vm.ACTIVE)
    # placed on another host (a renamed host, a leftover of a move): never
    # an orphan (issue 19 item 7), recorded for check
    world.set_columns(elsewhere, host='node2')
    orphan, gone = api.new_uuid(), api.new_uuid()

    answer = world.results.power_report(world.ctx, host=HOST, reports=[
        report_of(deleted, power.RUNNING, 1),
        report_of(active, power.SHUTDOWN, 1, 'guest'),
        report_of(elsewhere, power.RUNNING, 1),
        report_of(orphan, power.RUNNING, 1),
        report_of(gone, power.NOSTATE, 1),
        report_of(active, power.RUNNING, 2, 'no-such-reason'),   # ignored
    ])

    assert answer == {'destroy': [deleted],
                      'orphans': {'uuids': [orphan],
                                  'action': 'destroy', 'grace': 7}}
    assert sorted((s['host'], s['instance_uuid'], s['power_state'])
                  for s in world.db.list_strays()) == sorted([
        (HOST, elsewhere, power.RUNNING), (HOST, orphan, power.RUNNING)])
    inst = world.db.get_instance(active)
    assert (inst['vm_state'], inst['power_state']) == (vm.STOPPED,
                                                       power.SHUTDOWN)
    assert world.db.get_instance(elsewhere)['power_seq'] == 0


def test_a_deleted_domain_is_destroyed_again_at_every_report(world):
    uuid = world.idle(vm.HARD_DELETED)
    for seq in (1, 2, 3):
        answer = world.results.power_report(world.ctx, host=HOST, reports=[
            report_of(uuid, power.SHUTDOWN, seq)])
        assert answer['destroy'] == [uuid]
    answer = world.results.power_report(world.ctx, host=HOST, reports=[
        report_of(uuid, power.NOSTATE, 4)])
    assert answer['destroy'] == []
    assert world.db.get_instance(uuid)['vm_state'] == vm.HARD_DELETED


def test_a_full_report_without_an_instance_means_its_domain_is_gone(world):
    listed = world.idle(vm.ACTIVE)
    missing = world.idle(vm.ACTIVE)
    stopped = world.idle(vm.STOPPED)
    newer = world.idle(vm.ACTIVE)
    elsewhere = world.idle(vm.ACTIVE)
    for uuid in (listed, missing, stopped, newer, elsewhere):
        world.report(uuid, power.RUNNING if uuid != stopped else power.SHUTDOWN,
                     seq=10)
    world.report(newer, power.RUNNING, seq=30)     # after the full read
    world.set_columns(elsewhere, host='node2')   # migrated away

    world.results.power_report(world.ctx, host=HOST, full=20, reports=[
        report_of(listed, power.RUNNING, 21)])

    def state(uuid):
        inst = world.db.get_instance(uuid)
        return inst['vm_state'], inst['power_state'], inst['power_seq']
    # unchanged: the state is not written again, but it is now known as of
    # the read (a late older report cannot undo it)
    assert state(listed) == (vm.ACTIVE, power.RUNNING, 20)
    assert state(missing) == (vm.ERROR, power.NOSTATE, 20)
    assert state(stopped) == (vm.ERROR, power.NOSTATE, 20)
    assert state(newer) == (vm.ACTIVE, power.RUNNING, 30)
    assert state(elsewhere) == (vm.ACTIVE, power.RUNNING, 10)
    assert world.db.list_actions(missing)[-1]['message'] == (
        'the domain vanished from its host')


def test_an_unchanged_report_is_not_undone_by_an_older_one(world):
    """A report that changes nothing still moves power_seq up: a report
    read before it (a late task result, a replayed batch) is then stale,
    though newer than the last report that changed something."""
    uuid = world.idle(vm.ACTIVE)
    world.report(uuid, power.RUNNING, seq=10)
    before = world.db.get_instance(uuid)
    answer = world.results.power_report(world.ctx, host=HOST, full=20, reports=[
        report_of(uuid, power.RUNNING, 21)])
    assert answer['destroy'] == [] and answer['orphans']['uuids'] == []
    confirmed = world.db.get_instance(uuid)
    assert confirmed['power_seq'] == 20
    assert confirmed['power_reported_at'] >= before['power_reported_at']

    world.results.power_report(world.ctx, host=HOST, reports=[
        report_of(uuid, power.SHUTDOWN, 15, states.REASON_GUEST)])
    after = world.db.get_instance(uuid)
    assert (after['vm_state'], after['power_state'], after['power_seq']) == (
        vm.ACTIVE, power.RUNNING, 20)


def test_a_report_is_compared_alike_however_it_is_spelled(world):
    """The shortcut for a report that plainly says what is stored (its
    state the stored number, its seq an int) agrees with the full
    comparison, which takes names and numbers as strings too."""
    plain, named, text_seq, bad = (world.idle(vm.ACTIVE) for _ in range(4))
    for uuid in (plain, named, text_seq, bad):
        world.report(uuid, power.RUNNING, seq=10)
    answer = world.results.power_report(world.ctx, host=HOST, full=20, reports=[
        report_of(plain, power.RUNNING, 21),
        report_of(named, 'running', 22),
        report_of(text_seq, power.RUNNING, '23'),
        report_of(bad, True, 24),          # not a state: ignored
    ])
    assert answer['destroy'] == [] and answer['orphans']['uuids'] == []
    assert {uuid: world.db.get_instance(uuid)['power_seq']
            for uuid in (plain, named, text_seq, bad)} == {
        plain: 20, named: 20, text_seq: 20, bad: 10}


def test_a_confirmation_never_moves_a_row_that_changed_meanwhile(world):
    """The batched seq update re-checks the state it was compared with: a
    row written since (here: SHUTDOWN at seq 12) keeps its own seq."""
    uuid = world.idle(vm.ACTIVE)
    world.report(uuid, power.RUNNING, seq=10)
    world.report(uuid, power.SHUTDOWN, seq=12)
    for read_seq in (None, 20):
        assert world.db.confirm_power(HOST, [(uuid, 21, power.RUNNING, None)],
                                      read_seq=read_seq) == 0
        assert world.db.confirm_power('node2', [(uuid, 21, power.SHUTDOWN,
                                                 None)], read_seq=read_seq) == 0
    assert world.db.get_instance(uuid)['power_seq'] == 12
    assert world.db.confirm_power(HOST, [(uuid, 21, power.SHUTDOWN, None)],
                                  read_seq=20) == 1
    assert world.db.get_instance(uuid)['power_seq'] == 20
    assert world.db.confirm_power(HOST, [(uuid, 25, power.SHUTDOWN,
                                          None)]) == 1
    assert world.db.get_instance(uuid)['power_seq'] == 25


@pytest.mark.parametrize('full', [False, True])
def test_a_report_that_is_not_full_says_nothing_of_the_others(world, full):
    uuid = world.idle(vm.ACTIVE)
    world.report(uuid, power.RUNNING, seq=10)
    before = world.snapshot(uuid)
    world.results.power_report(world.ctx, host=HOST, full=full, reports=[])
    assert world.snapshot(uuid) == before


def test_a_full_report_leaves_instances_without_a_domain_alone(world, ctx):
    building, _task = world.instances.create()     # NOSTATE until spawned
    world.set_columns(building, host=HOST)
    before = world.snapshot(building)
    world.results.power_report(world.ctx, host=HOST, full=20, reports=[])
    assert world.snapshot(building) == before


# --- a full report carried by a heartbeat ------------------------------------------



def _transactions(world, monkeypatch):
    """The transactions the StateDB runs from now on (one entry each)."""
    runs = []
    real = world.db.db.transaction

    def counted(fn, *args, **kwargs):
        runs.append(fn)
        return real(fn, *args, **kwargs)
    monkeypatch.setattr(world.db.db, 'transaction', counted)
    return runs


def test_a_heartbeat_and_its_unchanged_report_are_one_transaction(
        world, clock, monkeypatch):
    uuid = world.idle(vm.ACTIVE)
    world.report(uuid, power.RUNNING, seq=10)
    now = clock.advance(5)
    runs = _transactions(world, monkeypatch)

    answer = world.results.heartbeat(
        world.ctx, host=HOST, capacity=CAPACITY, started_at=None,
        lost_tasks=[], power=([report_of(uuid, power.RUNNING, 21)], 20))

    assert len(runs) == 1
    assert answer['destroy'] == [] and answer['orphans']['uuids'] == []
    assert world.db.get_instance(uuid)['power_seq'] == 20
    host = world.db.get_host(HOST)
    assert (host['last_heartbeat'], host['vcpus']) == (now, 8)
    assert [s['last_seen'] for s in world.db.list_services()
            if s['host'] == HOST] == [now]


def test_a_heartbeat_with_lost_tasks_fails_them_before_its_report(world):
    uuid, task_id = world.busy(vm.ACTIVE)
    world.report(uuid, power.SHUTDOWN, seq=10)

    world.results.heartbeat(
        world.ctx, host=HOST, capacity=CAPACITY, started_at=None,
        lost_tasks=[task_id],
        power=([report_of(uuid, power.SHUTDOWN, 21)], 20))

    inst = world.db.get_instance(uuid)
    assert inst['task_id'] is None
    # the report came after the task ended: reconcile acted on it (an
    # ACTIVE instance found shut down)
    assert inst['vm_state'] != vm.ACTIVE
    assert world.db.get_host(HOST)['last_heartbeat'] is not None

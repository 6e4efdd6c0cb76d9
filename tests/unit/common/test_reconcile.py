"""The reconcile table's invariants (DESIGN.md section 5) and oper_state.

The table is data: these tests check that it is complete and disjoint, that
it says what DESIGN.md section 5 says, that it never asks for a vm_state
change the action table forbids, and that docs/reconcile.md is rendered
from it.
"""

import itertools
import pathlib

import pytest

from common import actions
from common import docs
from common import reconcile
from common.reconcile import REASONS
from common.reconcile import TABLE
from common.states import POWER_REASONS
from common.states import POWER_STATES
from common.states import VM_STATES
from common.states import power
from common.states import vm

ROOT = pathlib.Path(__file__).resolve().parents[3]
ALL = list(itertools.product(VM_STATES, POWER_STATES, REASONS))
OTHER_SHUTDOWN_REASONS = (None, 'host', 'saved', 'unknown')


def _combinations(vm_states, power_states, reasons=REASONS):
    return [(v, p, r) for v in vm_states for p in power_states
            for r in reasons]


def _param(vm_state, power_state, reason, decision):
    return pytest.param(vm_state, power_state, reason, decision,
                        id='%s-%s-%s' % (vm_state, POWER_STATES[power_state],
                                         reason or 'none'))


def _design_rows():
    """DESIGN.md section 5, row by row, as (vm, power, reason, decision)."""
    up = (vm.ACTIVE, vm.RESCUED)
    held = (vm.PAUSED, vm.SUSPENDED)
    not_down = set(POWER_STATES) - {power.SHUTDOWN, power.NOSTATE}
    present = set(POWER_STATES) - {power.NOSTATE}
    rows = []
    rows += [(v, p, r, reconcile.USER_SHUTDOWN)
             for v, p, r in _combinations(up, [power.SHUTDOWN], ['guest'])]
    rows += [(v, p, r, reconcile.STOP) for v, p, r in _combinations(
        up, [power.SHUTDOWN], OTHER_SHUTDOWN_REASONS)]
    rows += [(v, p, r, reconcile.CRASH)
             for v, p, r in _combinations(up, [power.CRASHED])]
    rows += [(v, p, r, reconcile.ERROR)
             for v, p, r in _combinations([vm.ACTIVE], [power.NOSTATE])]
    rows += [(v, p, r, reconcile.POWER_OFF)
             for v, p, r in _combinations([vm.STOPPED], [power.RUNNING])]
    rows += [(v, p, r, reconcile.ERROR)
             for v, p, r in _combinations(held, [power.RUNNING])]
    rows += [(v, p, r, reconcile.NONE if (v, r) == (vm.SUSPENDED, 'saved')
              else reconcile.STOP)
             for v, p, r in _combinations(held, [power.SHUTDOWN])]
    rows += [(v, p, r, reconcile.POWER_OFF)
             for v, p, r in _combinations([vm.SOFT_DELETED], sorted(not_down))]
    rows += [(v, p, r, reconcile.DESTROY)
             for v, p, r in _combinations([vm.HARD_DELETED], sorted(present))]
    rows += [(v, p, r, reconcile.STORE)
             for v, p, r in _combinations([vm.ERROR], sorted(POWER_STATES))]
    return [_param(*row) for row in rows]


# --- complete and disjoint ------------------------------------------------------

def test_every_combination_has_a_rule():
    assert TABLE.missing() == []


def test_every_combination_has_exactly_one_rule():
    counted = sum(len(rule.vm_states) * len(rule.power_states)
                  * len(rule.reasons) for rule in TABLE.rules)
    assert counted == len(ALL)
    for combination in ALL:
        matching = [rule for rule in TABLE.rules
                    if combination[0] in rule.vm_states
                    and combination[1] in rule.power_states
                    and combination[2] in rule.reasons]
        assert len(matching) == 1, (combination, matching)
        assert TABLE.decide(*combination) is matching[0]


def test_an_overlapping_rule_is_refused():
    extra = reconcile.Rule(frozenset({vm.ACTIVE}), frozenset({power.RUNNING}),
                           frozenset({None}), reconcile.STORE, 'overlaps')
    with pytest.raises(ValueError, match='two reconcile rules'):
        reconcile.ReconcileTable(reconcile.RULES + (extra,))


def test_a_gap_is_reported():
    first, rest = reconcile.RULES[0], reconcile.RULES[1:]
    gaps = reconcile.ReconcileTable(rest).missing()
    assert sorted(gaps, key=repr) == sorted(
        _combinations(first.vm_states, first.power_states, first.reasons),
        key=repr)


def test_reasons_are_the_power_reasons_and_none():
    assert set(REASONS) == {None, *POWER_REASONS}


def test_an_unknown_reason_counts_as_unknown():
    assert TABLE.decide(vm.ACTIVE, power.SHUTDOWN, 'cosmic-ray') is (
        TABLE.decide(vm.ACTIVE, power.SHUTDOWN, 'unknown'))


@pytest.mark.parametrize('rule', TABLE.rules, ids=lambda r: r.why[:40])
def test_every_rule_is_well_formed(rule):
    assert rule.decision in reconcile.DECISIONS
    assert rule.vm_states and rule.vm_states <= set(VM_STATES)
    assert rule.power_states and rule.power_states <= set(POWER_STATES)
    assert rule.reasons and rule.reasons <= set(REASONS)
    assert rule.why


# --- what DESIGN.md section 5 says ------------------------------------------------

@pytest.mark.parametrize('vm_state,power_state,reason,decision', _design_rows())
def test_design_row(vm_state, power_state, reason, decision):
    assert TABLE.decide(vm_state, power_state, reason).decision == decision


def test_a_guest_that_shut_down_with_a_crash_reason_counts_as_a_crash():
    # Not in DESIGN.md's examples: libvirt's SHUTOFF_CRASHED is a crash.
    assert TABLE.decide(vm.ACTIVE, power.SHUTDOWN,
                        'crashed').decision == reconcile.CRASH


@pytest.mark.parametrize('vm_state', [vm.ACTIVE, vm.RESCUED, vm.RESIZED,
                                      vm.STOPPED, vm.PAUSED, vm.SUSPENDED])
def test_a_domain_that_vanished_is_an_error(vm_state):
    for reason in REASONS:
        assert TABLE.decide(vm_state, power.NOSTATE,
                            reason).decision == reconcile.ERROR


@pytest.mark.parametrize('vm_state,power_state', [
    (vm.ACTIVE, power.RUNNING), (vm.RESCUED, power.RUNNING),
    (vm.RESIZED, power.RUNNING), (vm.STOPPED, power.SHUTDOWN),
    (vm.PAUSED, power.PAUSED), (vm.SUSPENDED, power.SUSPENDED),
    (vm.SOFT_DELETED, power.SHUTDOWN), (vm.SOFT_DELETED, power.NOSTATE),
    (vm.HARD_DELETED, power.NOSTATE)])
def test_states_that_agree_need_nothing(vm_state, power_state):
    for reason in REASONS:
        assert TABLE.decide(vm_state, power_state,
                            reason).decision == reconcile.NONE


# --- the two tables agree -----------------------------------------------------------

def _concrete(decision):
    """What a decision can turn into once the instance's policy is read."""
    return {
        reconcile.USER_SHUTDOWN: {reconcile.STOP, 'power_on'},
        reconcile.CRASH: {'power_on', reconcile.STOP, reconcile.ERROR},
    }.get(decision, {decision})


def _allowed(concrete):
    table = actions.TABLE
    return {
        reconcile.STOP: table.allowed_from('reconcile', vm.STOPPED),
        reconcile.ERROR: table.allowed_from('reconcile', vm.ERROR),
        reconcile.POWER_OFF: table.allowed_from('power_off'),
        'power_on': table.allowed_from('power_on'),
    }.get(concrete)


@pytest.mark.parametrize('rule', [r for r in TABLE.rules if r.decision not in (
    reconcile.NONE, reconcile.STORE, reconcile.DESTROY)],
    ids=lambda r: '%s-%s' % (r.decision, r.why[:30]))
def test_every_decision_is_allowed_by_the_action_table(rule):
    for concrete in _concrete(rule.decision):
        allowed = _allowed(concrete)
        assert rule.vm_states <= allowed, (
            'reconcile decides %s from %s, but the action table allows it '
            'only from %s' % (concrete, sorted(rule.vm_states - allowed),
                              sorted(allowed)))


def test_system_actions_are_not_for_users():
    for name in ('power_on', 'power_off', 'reconcile'):
        assert actions.TABLE.action(name).system
    assert actions.TABLE.action('power_off').kind == actions.KIND_TASK
    assert actions.TABLE.action('power_on').kind == actions.KIND_TASK
    assert actions.TABLE.action('reconcile').kind == actions.KIND_DB


# --- the generated page ------------------------------------------------------

def test_reconcile_page_is_fresh():
    committed = (ROOT / 'docs' / 'reconcile.md').read_text()
    assert committed == docs.render_reconcile_md(), (
        'docs/reconcile.md is stale: run `tox -e docs` and commit the result')


def test_reconcile_page_lists_every_rule():
    page = docs.render_reconcile_md()
    for rule in TABLE.rules:
        assert rule.why in page


# --- oper_state ----------------------------------------------------------------

def _inst(vm_state, power_state, reason=None, host='node1'):
    return {'vm_state': vm_state, 'power_state': power_state,
            'power_reason': reason, 'host': host}


@pytest.mark.parametrize('inst,host_up,expected', [
    pytest.param(_inst(vm.ACTIVE, power.RUNNING), True, reconcile.RUNNING,
                 id='running'),
    pytest.param(_inst(vm.RESCUED, power.RUNNING), True, reconcile.RUNNING,
                 id='rescued-running'),
    pytest.param(_inst(vm.STOPPED, power.SHUTDOWN), True,
                 reconcile.ADMIN_DOWN, id='stopped'),
    pytest.param(_inst(vm.HARD_DELETED, power.NOSTATE), True,
                 reconcile.ADMIN_DOWN, id='deleted-gone'),
    pytest.param(_inst(vm.HARD_DELETED, power.NOSTATE), False,
                 reconcile.ADMIN_DOWN, id='deleted-gone-host-down'),
    pytest.param(_inst(vm.PAUSED, power.PAUSED), True, reconcile.ADMIN_DOWN,
                 id='paused'),
    pytest.param(_inst(vm.ACTIVE, power.SHUTDOWN, 'guest'), True,
                 reconcile.USER_DOWN, id='guest-shut-down'),
    pytest.param(_inst(vm.ACTIVE, power.SHUTDOWN, 'host'), True,
                 reconcile.ERROR_DOWN, id='shut-down-by-host'),
    pytest.param(_inst(vm.ACTIVE, power.CRASHED, 'crashed'), True,
                 reconcile.ERROR_DOWN, id='crashed'),
    pytest.param(_inst(vm.ACTIVE, power.NOSTATE), True, reconcile.ERROR_DOWN,
                 id='vanished'),
    pytest.param(_inst(vm.ERROR, power.SHUTDOWN), True, reconcile.ERROR_DOWN,
                 id='error-down'),
    pytest.param(_inst(vm.STOPPED, power.RUNNING), True, reconcile.ERROR_UP,
                 id='stopped-but-running'),
    pytest.param(_inst(vm.SOFT_DELETED, power.RUNNING), True,
                 reconcile.ERROR_UP, id='soft-deleted-running'),
    pytest.param(_inst(vm.HARD_DELETED, power.RUNNING), True,
                 reconcile.ERROR_UP, id='deleted-running'),
    pytest.param(_inst(vm.ACTIVE, power.RUNNING), False,
                 reconcile.ERROR_NODEDOWN, id='host-down'),
    pytest.param(_inst(vm.STOPPED, power.SHUTDOWN), False,
                 reconcile.ERROR_NODEDOWN, id='stopped-host-down'),
    pytest.param(_inst(vm.PENDING, power.NOSTATE, host=None), False,
                 reconcile.ADMIN_DOWN, id='no-host-is-never-nodedown'),
])
def test_oper_state(inst, host_up, expected):
    assert reconcile.oper_state(inst, host_up=host_up) == expected


@pytest.mark.parametrize('host_up', [True, False])
def test_oper_state_is_always_one_of_the_six(host_up):
    for vm_state, power_state, reason in ALL:
        got = reconcile.oper_state(_inst(vm_state, power_state, reason),
                                   host_up=host_up)
        assert got in reconcile.OPER_STATES, (vm_state, power_state, reason)

"""The action table's invariants (DESIGN.md section 2)."""

import pytest

from common import actions
from common import exception
from common.actions import TABLE
from common.states import TASK_STATES
from common.states import VM_STATES
from common.states import vm

ISSUE_ACTIONS = (
    'build', 'rebuild', 'stop', 'start', 'reboot', 'reboot_hard', 'pause',
    'unpause', 'suspend', 'resume', 'rescue', 'unrescue', 'resize',
    'confirm_resize', 'revert_resize', 'live_migrate', 'snapshot', 'backup',
    'set_password', 'soft_delete', 'restore', 'delete', 'reset_state')


SYSTEM_ACTIONS = {name for name, spec in TABLE.actions.items() if spec.system}


def _allowed_in(vm_state):
    """What a user may ask for in ``vm_state`` (reconcile's own actions aside)."""
    return {action for source, action, _ in TABLE
            if source == vm_state and action not in SYSTEM_ACTIONS}


@pytest.mark.parametrize('action', ISSUE_ACTIONS)
def test_every_action_has_a_row(action):
    assert TABLE.allowed_from(action)
    assert any(row.action == action for row in TABLE.rows)


def test_no_action_without_a_row():
    assert set(TABLE.actions) == {row.action for row in TABLE.rows}


def test_error_allows_only_delete_and_reset():
    assert _allowed_in(vm.ERROR) == {'delete', 'reset_state'}


def test_pending_allows_rebuild_delete_and_reset_to_error():
    assert _allowed_in(vm.PENDING) == {'rebuild', 'delete', 'reset_state'}
    resets = {target for source, action, target in TABLE
              if source == vm.PENDING and action == 'reset_state'}
    assert resets == {vm.ERROR}
    assert TABLE.row('rebuild', vm.PENDING).target == vm.ACTIVE


def test_hard_deleted_allows_only_delete():
    assert _allowed_in(vm.HARD_DELETED) == {'delete'}


def test_delete_is_allowed_from_every_state_and_preempts():
    assert TABLE.allowed_from('delete') == set(VM_STATES)
    preempting = {name for name, spec in TABLE.actions.items() if spec.preempts}
    assert preempting == {'delete', 'reset_state'}


def test_targets_are_vm_states_or_special():
    for _source, _action, target in TABLE:
        assert target in VM_STATES or target in (actions.UNCHANGED,
                                                 actions.RETURN)


def test_task_states_of_rows_are_valid():
    for row in TABLE.rows:
        if TABLE.action(row.action).kind == actions.KIND_TASK:
            assert row.task_state in TASK_STATES, row
        else:
            assert row.task_state is None, row


def test_every_return_has_a_detour_saving_where_to_go_back():
    savers_into = {target for _source, action, target in TABLE
                   if TABLE.action(action).saves_return}
    returning = [row for row in TABLE.rows if row.target == actions.RETURN]
    assert returning
    for row in returning:
        assert row.sources <= savers_into, row


def test_task_actions_are_deterministic():
    # Only database actions (reset_state, reconcile) are told their target;
    # a task action has one row per source state.
    seen = {}
    for source, action, _target in TABLE:
        seen[source, action] = seen.get((source, action), 0) + 1
    multi = {action for (_, action), count in seen.items() if count > 1}
    assert 'reset_state' in multi
    for action in multi:
        assert TABLE.action(action).kind == actions.KIND_DB, action


def test_system_actions_are_not_for_users():
    for name in SYSTEM_ACTIONS:
        assert name not in ISSUE_ACTIONS
        assert not TABLE.action(name).preempts


def test_iteration_yields_source_action_target_triples():
    triples = list(TABLE)
    expected = {(source, row.action, row.target)
                for row in TABLE.rows for source in row.sources}
    assert all(len(t) == 3 for t in triples)
    assert len(triples) == len(expected)
    assert set(triples) == expected


def test_admin_only_actions():
    admin = {name for name, spec in TABLE.actions.items() if spec.admin_only}
    assert admin == {'live_migrate', 'migrate', 'evacuate', 'evacuate_stopped',
                     'reset_state', 'shelve_offload'}


def test_unknown_action_names_the_known_ones():
    with pytest.raises(exception.ActionNotFound) as err:
        TABLE.allowed_from('explode')
    assert 'explode' in str(err.value) and 'reboot' in str(err.value)


def test_reset_state_needs_a_target():
    with pytest.raises(exception.Invalid):
        TABLE.row('reset_state', vm.ACTIVE)
    assert TABLE.row('reset_state', vm.ACTIVE, vm.ERROR).target == vm.ERROR


def test_table_refuses_duplicate_and_undeclared_rows():
    dup = actions.Row('stop', frozenset({vm.ACTIVE}), 'stopping', vm.STOPPED)
    with pytest.raises(ValueError, match='two rows'):
        actions.ActionTable(actions.ACTIONS, actions.ROWS + (dup,))
    ghost = actions.Row('explode', frozenset({vm.ACTIVE}), None, vm.ERROR)
    with pytest.raises(ValueError, match='undeclared'):
        actions.ActionTable(actions.ACTIONS, actions.ROWS + (ghost,))


@pytest.mark.parametrize('action,rolled_back,expected', [
    ('stop', True, vm.ACTIVE), ('stop', False, vm.ERROR),
    ('build', True, vm.ERROR), ('build', False, vm.ERROR)])
def test_failure_state(action, rolled_back, expected):
    assert TABLE.failure_state(action, vm.ACTIVE, rolled_back) == expected

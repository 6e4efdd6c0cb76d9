"""The lease tables (common/leases.py) against seed 002 and Blazar, written
out here by hand: every transition allowed and denied, every combination
of lease, reservation and event statuses, and the derived stable status."""

import itertools

import pytest

from common import exception
from common import leases as rules
from common.leases import event as ev
from common.leases import lease as ls
from common.leases import reservation as rs

# Seed 002's statuses, as the seed lists them.
SEED_STABLE = ('PENDING', 'ACTIVE', 'TERMINATED', 'ERROR')
SEED_TRANSITIONAL = ('CREATING', 'STARTING', 'UPDATING', 'TERMINATING',
                     'DELETING')
SEED_RESERVATION = ('pending', 'active', 'deleted', 'error')
SEED_EVENT = ('UNDONE', 'IN_PROGRESS', 'DONE', 'ERROR')
ALL = SEED_STABLE + SEED_TRANSITIONAL

# Blazar's NEXT_STATUSES, with this project's one change: DELETING goes to
# DELETING (a delete runs again) instead of ERROR, so that delete wins.
EXPECTED_LEASE = {
    'PENDING': {'STARTING', 'UPDATING', 'DELETING'},
    'ACTIVE': {'TERMINATING', 'UPDATING', 'DELETING'},
    'TERMINATED': {'UPDATING', 'DELETING'},
    'ERROR': {'TERMINATING', 'UPDATING', 'DELETING'},
    'CREATING': {'PENDING', 'DELETING'},
    'STARTING': {'ACTIVE', 'ERROR', 'DELETING'},
    'UPDATING': set(SEED_STABLE) | {'DELETING'},
    'TERMINATING': {'TERMINATED', 'ERROR', 'DELETING'},
    'DELETING': {'DELETING'},
}
EXPECTED_RESERVATION = {
    'pending': {'active', 'deleted', 'error'},
    'active': {'deleted', 'error'},
    'deleted': set(),
    'error': {'deleted'},
}
# Blazar's, plus IN_PROGRESS -> IN_PROGRESS: a retry claims it again.
EXPECTED_EVENT = {
    'UNDONE': {'IN_PROGRESS'},
    'IN_PROGRESS': {'IN_PROGRESS', 'DONE', 'ERROR'},
    'DONE': set(),
    'ERROR': set(),
}

# Seed 002's table of allowed combinations, cell by cell ("Any status"
# spelled out). ERROR is not in the seed's table: anything goes.
_ANY_R = set(SEED_RESERVATION)
_ANY_E = set(SEED_EVENT)
SEED_TABLE = {
    'CREATING': ({'pending'}, {'UNDONE'}, {'UNDONE'}),
    'PENDING': ({'pending'}, {'UNDONE'}, {'UNDONE'}),
    'STARTING': ({'pending', 'active', 'error'}, {'IN_PROGRESS'}, {'UNDONE'}),
    'ACTIVE': ({'active'}, {'DONE'}, {'UNDONE'}),
    'TERMINATING': ({'active', 'deleted', 'error'}, {'DONE'},
                    {'IN_PROGRESS'}),
    'TERMINATED': ({'deleted'}, {'DONE'}, {'DONE'}),
    'DELETING': (_ANY_R, _ANY_E, _ANY_E),
    'UPDATING': (_ANY_R, _ANY_E - {'IN_PROGRESS'}, _ANY_E - {'IN_PROGRESS'}),
    'ERROR': (_ANY_R, _ANY_E, _ANY_E),
}


def test_statuses_are_the_seeds():
    assert rules.STABLE == SEED_STABLE
    assert rules.TRANSITIONAL == SEED_TRANSITIONAL
    assert rules.RESERVATION_STATUSES == SEED_RESERVATION
    assert rules.EVENT_STATUSES == SEED_EVENT
    assert rules.EVENT_TYPES == ('start_lease', 'before_end_lease',
                                 'end_lease')


def test_every_status_has_a_combination_row():
    assert set(rules.COMBINATIONS) == set(ALL)


# --- transitions -------------------------------------------------------------

@pytest.mark.parametrize('source,target', list(itertools.product(ALL, ALL)))
def test_lease_transition(source, target):
    allowed = target in EXPECTED_LEASE[source]
    assert rules.LEASES.allowed(source, target) is allowed
    if allowed:
        rules.check_move('L1', 'x', source, target)
        return
    with pytest.raises(exception.LeaseActionNotAllowed) as err:
        rules.check_move('L1', 'x', source, target)
    assert err.value.code == 409
    assert 'its status is %s' % source in err.value.message
    assert '%s cannot go to %s' % (source, target) in err.value.message


@pytest.mark.parametrize('source,target',
                         list(itertools.product(SEED_RESERVATION, repeat=2)))
def test_reservation_transition(source, target):
    allowed = target in EXPECTED_RESERVATION[source]
    assert rules.RESERVATIONS.allowed(source, target) is allowed
    if not allowed:
        with pytest.raises(exception.LeaseActionNotAllowed) as err:
            rules.check_step(rules.RESERVATIONS, 'L1', 'start', 'R1', source,
                             target)
        assert 'reservation R1 cannot go from %s to %s' % (
            source, target) in err.value.message


@pytest.mark.parametrize('source,target',
                         list(itertools.product(SEED_EVENT, repeat=2)))
def test_event_transition(source, target):
    allowed = target in EXPECTED_EVENT[source]
    assert rules.EVENTS.allowed(source, target) is allowed
    if not allowed:
        with pytest.raises(exception.LeaseActionNotAllowed):
            rules.check_step(rules.EVENTS, 'L1', 'end', 'end_lease', source,
                             target)


@pytest.mark.parametrize('status', ALL)
def test_delete_is_allowed_from_every_status(status):
    assert rules.LEASES.allowed(status, ls.DELETING)
    assert status in rules.LEASES.sources(rules.OPERATIONS['delete'].status)


def test_an_update_while_starting_is_denied_with_the_reason():
    with pytest.raises(exception.LeaseActionNotAllowed) as err:
        rules.check_move('L1', 'update', ls.STARTING, ls.UPDATING)
    assert err.value.message == (
        'Cannot update lease L1: its status is STARTING and update needs '
        'PENDING, ACTIVE, TERMINATED or ERROR (STARTING cannot go to '
        'UPDATING).')


def test_operations_use_the_transitional_statuses():
    used = {op.status for op in rules.OPERATIONS.values()}
    assert used == set(SEED_TRANSITIONAL)
    assert rules.operation_of('start_lease').status == ls.STARTING
    assert rules.operation_of('end_lease').status == ls.TERMINATING
    assert rules.operation_of('before_end_lease') is None


def test_transitional_statuses_lead_only_to_stable_or_deleting():
    for source in SEED_TRANSITIONAL:
        for target in EXPECTED_LEASE[source]:
            assert target in SEED_STABLE or target == 'DELETING'


def test_machines_refuse_unknown_statuses_and_duplicates():
    with pytest.raises(ValueError):
        rules.Machine('x', ('A',), [rules.Transition('A', 'B', '')])
    with pytest.raises(ValueError):
        rules.Machine('x', ('A', 'B'), [rules.Transition('A', 'B', ''),
                                        rules.Transition('A', 'B', '')])


# --- combinations ------------------------------------------------------------

_CASES = list(itertools.product(ALL, SEED_RESERVATION, SEED_EVENT, SEED_EVENT))


@pytest.mark.parametrize('status,res,start,end', _CASES)
def test_combination(status, res, start, end):
    want_res, want_start, want_end = SEED_TABLE[status]
    allowed = res in want_res and start in want_start and end in want_end
    events = {'start_lease': start, 'end_lease': end}
    assert (rules.combination_errors(status, [res], events) == []) is allowed
    if allowed:
        rules.check_combination('L1', 'x', status, [res], events)
        return
    with pytest.raises(exception.LeaseActionNotAllowed) as err:
        rules.check_combination('L1', 'x', status, [res], events)
    assert 'a %s lease cannot have' % status in err.value.message


def test_every_reservation_of_a_lease_is_checked():
    events = {'start_lease': ev.DONE, 'end_lease': ev.UNDONE}
    assert rules.combination_errors(ls.ACTIVE, [rs.ACTIVE, rs.ACTIVE],
                                    events) == []
    assert rules.combination_errors(ls.ACTIVE, [rs.ACTIVE, rs.ERROR],
                                    events) == [
        'reservations error (needs active)']


def test_a_combination_error_names_what_is_wrong():
    with pytest.raises(exception.LeaseActionNotAllowed) as err:
        rules.check_combination('L1', 'update', ls.UPDATING, [rs.PENDING],
                                {'start_lease': ev.IN_PROGRESS,
                                 'end_lease': ev.UNDONE})
    assert err.value.message == (
        'Cannot update lease L1: a UPDATING lease cannot have start_lease '
        'IN_PROGRESS (needs UNDONE, DONE or ERROR).')


# --- the derived stable status -----------------------------------------------

@pytest.mark.parametrize('start,end', list(itertools.product(SEED_EVENT, repeat=2)))
def test_derived_status_from_the_events(start, end):
    expected = {('UNDONE', 'UNDONE'): 'PENDING', ('DONE', 'UNDONE'): 'ACTIVE',
                ('DONE', 'DONE'): 'TERMINATED'}.get((start, end), 'ERROR')
    fitting = {'PENDING': 'pending', 'ACTIVE': 'active',
               'TERMINATED': 'deleted', 'ERROR': 'error'}[expected]
    events = {'start_lease': start, 'end_lease': end}
    assert rules.derive_status([fitting], events) == expected
    assert expected in SEED_STABLE


def test_derived_status_is_error_when_the_reservations_do_not_fit():
    events = {'start_lease': ev.DONE, 'end_lease': ev.UNDONE}
    assert rules.derive_status([rs.ACTIVE], events) == ls.ACTIVE
    assert rules.derive_status([rs.PENDING], events) == ls.ERROR
    assert rules.derive_status([rs.ACTIVE, rs.DELETED], events) == ls.ERROR

"""power_state input is normalised; only current values are ever stored."""

import pytest

from common import states
from common.states import power


@pytest.mark.parametrize('value,name', sorted(states.POWER_STATES.items()))
def test_current_power_states_by_number_and_name(value, name):
    assert states.normalize_power_state(value) == value
    assert states.normalize_power_state(name) == value
    assert states.normalize_power_state(name.lower()) == value
    assert states.power_state_name(value) == name


@pytest.mark.parametrize('obsolete,current', [
    ('BLOCKED', power.RUNNING), (2, power.RUNNING),
    ('SHUTOFF', power.SHUTDOWN), (5, power.SHUTDOWN), ('shutoff', power.SHUTDOWN),
    ('FAILED', power.NOSTATE), (8, power.NOSTATE),
])
def test_obsolete_power_states_are_mapped(obsolete, current):
    stored = states.normalize_power_state(obsolete)
    assert stored == current
    assert stored in states.POWER_STATES
    assert stored not in (2, 5, 8)


def test_obsolete_numbers_are_not_power_states():
    assert not {2, 5, 8} & set(states.POWER_STATES)
    assert not {'BLOCKED', 'SHUTOFF', 'FAILED'} & set(states.POWER_STATES.values())


@pytest.mark.parametrize('bad', ['RUNNNING', 'shutoff!', 9, -1, None, True, ''])
def test_bad_power_state_names_what_is_accepted(bad):
    with pytest.raises(ValueError) as err:
        states.normalize_power_state(bad)
    if bad is not True:
        message = str(err.value)
        for name in list(states.POWER_STATES.values()) + ['SHUTOFF']:
            assert name in message


def test_power_state_name_of_unset_is_none():
    assert states.power_state_name(None) is None


def test_progress_steps_belong_to_real_tasks():
    assert states.PROGRESS_STEPS
    for task_state, steps in states.PROGRESS_STEPS.items():
        assert task_state in states.TASK_STATES
        assert steps and len(set(steps)) == len(steps)


def test_no_transitional_names_are_vm_states():
    for name in ('rebuilding', 'migrating', 'resizing', 'shutoff',
                 'resize_verify', 'building', 'deleted'):
        assert name not in states.VM_STATES
    assert len(set(states.VM_STATES)) == len(states.VM_STATES) == 13


@pytest.mark.parametrize('value, seq', [
    (0, 0), (17, 17), ('17', 17), (2 ** 63 - 1, 2 ** 63 - 1)])
def test_a_power_seq_is_a_whole_number_that_fits_a_bigint(value, seq):
    assert states.normalize_power_seq(value) == seq


@pytest.mark.parametrize('value', [2 ** 63, -1, 'many', None, True, [3]])
def test_a_power_seq_beyond_a_bigint_or_not_a_number_is_refused(value):
    with pytest.raises(ValueError) as err:
        states.normalize_power_seq(value)
    assert 'expected a whole number from 0 to 2**63 - 1' in str(err.value)

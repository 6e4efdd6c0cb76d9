"""The server status and EC2 state maps cover every state, like Nova's."""

import pytest

from api import microversion
from api import status
from common.states import TASK_STATES
from common.states import VM_STATES
from common.states import task
from common.states import vm

NOVA_STATUSES = {'ACTIVE', 'BUILD', 'DELETED', 'ERROR', 'HARD_REBOOT',
                 'MIGRATING', 'PASSWORD', 'PAUSED', 'REBOOT', 'REBUILD',
                 'RESCUE', 'RESIZE', 'REVERT_RESIZE', 'SHELVED',
                 'SHELVED_OFFLOADED', 'SHUTOFF', 'SOFT_DELETED',
                 'SUSPENDED', 'VERIFY_RESIZE'}
OLD = microversion.APIVersion(2, 100)


def test_every_vm_state_has_a_status():
    assert set(status.STATUS_MAP) == set(VM_STATES)
    assert set(status.EC2_BY_VM) == set(VM_STATES)


@pytest.mark.parametrize('vm_state', VM_STATES)
@pytest.mark.parametrize('task_state', (None,) + TASK_STATES)
def test_every_combination_has_a_known_status_and_ec2_state(vm_state,
                                                            task_state):
    shown = status.shown_status(vm_state, task_state, OLD)
    assert shown in NOVA_STATUSES           # no PENDING for old clients
    assert status.status(vm_state, task_state) in NOVA_STATUSES | {'PENDING'}
    assert status.ec2_state(vm_state, task_state) in status.EC2_STATES


@pytest.mark.parametrize('vm_state, task_state, expected', [
    (vm.INITIALIZED, task.BUILDING, 'BUILD'),
    (vm.ACTIVE, None, 'ACTIVE'),
    (vm.ACTIVE, task.STOPPING, 'ACTIVE'),
    (vm.ACTIVE, task.REBOOTING, 'REBOOT'),
    (vm.ACTIVE, task.REBOOTING_HARD, 'HARD_REBOOT'),
    (vm.ACTIVE, task.UPDATING_PASSWORD, 'PASSWORD'),
    (vm.ACTIVE, task.RESIZING, 'RESIZE'),
    (vm.ACTIVE, task.REBUILDING, 'REBUILD'),
    (vm.ACTIVE, task.MIGRATING, 'MIGRATING'),
    (vm.STOPPED, None, 'SHUTOFF'),
    (vm.STOPPED, task.RESIZING, 'RESIZE'),
    (vm.RESIZED, None, 'VERIFY_RESIZE'),
    (vm.RESIZED, task.RESIZE_REVERTING, 'REVERT_RESIZE'),
    (vm.RESIZED, task.RESIZE_CONFIRMING, 'VERIFY_RESIZE'),
    (vm.PAUSED, task.MIGRATING, 'MIGRATING'),
    (vm.RESCUED, None, 'RESCUE'),
    (vm.ERROR, task.REBUILDING, 'REBUILD'),
    (vm.SOFT_DELETED, None, 'SOFT_DELETED'),
    (vm.HARD_DELETED, None, 'DELETED'),
    (vm.PENDING, None, 'PENDING'),
    (vm.PENDING, task.BUILDING, 'BUILD'),
])
def test_nova_status_map(vm_state, task_state, expected):
    assert status.status(vm_state, task_state) == expected


def test_pending_is_error_before_its_microversion():
    assert status.shown_status(vm.PENDING, None, OLD) == 'ERROR'
    assert status.shown_vm_state(vm.PENDING, OLD) == vm.ERROR
    new = microversion.PENDING
    assert status.shown_status(vm.PENDING, None, new) == 'PENDING'
    assert status.shown_vm_state(vm.PENDING, new) == vm.PENDING
    # a rebuild of a buried instance is a build, at every version
    assert status.shown_status(vm.PENDING, task.BUILDING, OLD) == 'BUILD'
    assert status.shown_vm_state(vm.STOPPED, OLD) == vm.STOPPED


@pytest.mark.parametrize('vm_state, task_state, expected', [
    (vm.INITIALIZED, task.BUILDING, 'pending'),
    (vm.PENDING, None, 'pending'),
    (vm.ACTIVE, None, 'running'),
    (vm.ACTIVE, task.REBOOTING, 'running'),
    (vm.ACTIVE, task.STOPPING, 'stopping'),
    (vm.STOPPED, None, 'stopped'),
    (vm.STOPPED, task.STARTING, 'pending'),
    (vm.ACTIVE, task.SOFT_DELETING, 'shutting-down'),
    (vm.SOFT_DELETED, None, 'terminated'),
    (vm.HARD_DELETED, None, 'terminated'),
    (vm.SUSPENDED, None, 'stopped'),
])
def test_ec2_state(vm_state, task_state, expected):
    assert status.ec2_state(vm_state, task_state) == expected

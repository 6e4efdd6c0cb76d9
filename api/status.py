"""What API clients see of an instance's states, declared once as data.

* ``status``: Nova's server status, from vm_state + task_state through
  :data:`STATUS_MAP` (Nova's ``_STATE_MAP`` with Tristate's vm_states; a
  task not listed under a vm_state shows that vm_state's default).
* ``tristate:ec2_state``: the EC2 instance state (pending, running,
  shutting-down, terminated, stopping, stopped), from the running task if it
  has one in :data:`EC2_BY_TASK`, else from the vm_state (:data:`EC2_BY_VM`).
* PENDING (seed 004) exists only from microversion 2.101: older requests
  see ``error`` / ``ERROR`` instead (:func:`shown_vm_state`).
"""

from api import microversion
from common.states import task
from common.states import vm

DEFAULT = 'default'
_RESIZE = {task.RESIZING: 'RESIZE'}
_REBUILD = {task.REBUILDING: 'REBUILD'}

STATUS_MAP = {
    vm.INITIALIZED: {DEFAULT: 'BUILD'},
    vm.ACTIVE: {DEFAULT: 'ACTIVE',
                task.REBOOTING: 'REBOOT',
                task.REBOOTING_HARD: 'HARD_REBOOT',
                task.UPDATING_PASSWORD: 'PASSWORD',
                task.MIGRATING: 'MIGRATING',
                **_REBUILD, **_RESIZE},
    vm.STOPPED: {DEFAULT: 'SHUTOFF', **_REBUILD, **_RESIZE},
    vm.RESIZED: {DEFAULT: 'VERIFY_RESIZE',
                 task.RESIZE_REVERTING: 'REVERT_RESIZE'},
    vm.PAUSED: {DEFAULT: 'PAUSED', task.MIGRATING: 'MIGRATING'},
    vm.SUSPENDED: {DEFAULT: 'SUSPENDED'},
    vm.RESCUED: {DEFAULT: 'RESCUE'},
    vm.ERROR: {DEFAULT: 'ERROR', **_REBUILD},
    vm.SOFT_DELETED: {DEFAULT: 'SOFT_DELETED'},
    vm.HARD_DELETED: {DEFAULT: 'DELETED'},
    # seed 004: buried for lack of room; a rebuild builds it again.
    vm.PENDING: {DEFAULT: 'PENDING', task.BUILDING: 'BUILD'},
    vm.SHELVED: {DEFAULT: 'SHELVED'},
    vm.SHELVED_OFFLOADED: {DEFAULT: 'SHELVED_OFFLOADED'},
}

EC2_PENDING = 'pending'
EC2_RUNNING = 'running'
EC2_SHUTTING_DOWN = 'shutting-down'
EC2_TERMINATED = 'terminated'
EC2_STOPPING = 'stopping'
EC2_STOPPED = 'stopped'
EC2_STATES = (EC2_PENDING, EC2_RUNNING, EC2_SHUTTING_DOWN, EC2_TERMINATED,
              EC2_STOPPING, EC2_STOPPED)

# Tasks that move the instance between EC2 states; the others (reboot,
# resize, snapshot, ...) leave it in its vm_state's EC2 state.
EC2_BY_TASK = {
    task.BUILDING: EC2_PENDING,
    task.REBUILDING: EC2_PENDING,
    task.STARTING: EC2_PENDING,
    task.POWERING_ON: EC2_PENDING,
    task.UNPAUSING: EC2_PENDING,
    task.RESUMING: EC2_PENDING,
    task.RESTORING: EC2_PENDING,
    task.STOPPING: EC2_STOPPING,
    task.POWERING_OFF: EC2_STOPPING,
    task.PAUSING: EC2_STOPPING,
    task.SUSPENDING: EC2_STOPPING,
    task.SOFT_DELETING: EC2_SHUTTING_DOWN,
    task.SHELVING: EC2_STOPPING,
    task.UNSHELVING: EC2_PENDING,
    task.DESTROYING: EC2_SHUTTING_DOWN,
}

EC2_BY_VM = {
    vm.INITIALIZED: EC2_PENDING,
    vm.PENDING: EC2_PENDING,
    vm.ACTIVE: EC2_RUNNING,
    vm.RESCUED: EC2_RUNNING,
    vm.RESIZED: EC2_RUNNING,
    # EC2 has no paused state; a frozen or saved guest runs no code.
    vm.PAUSED: EC2_STOPPED,
    vm.SUSPENDED: EC2_STOPPED,
    vm.STOPPED: EC2_STOPPED,
    # EC2 has no error state either: the instance runs nothing it should.
    vm.ERROR: EC2_STOPPED,
    vm.SOFT_DELETED: EC2_TERMINATED,
    vm.HARD_DELETED: EC2_TERMINATED,
    vm.SHELVED: EC2_STOPPED,
    vm.SHELVED_OFFLOADED: EC2_STOPPED,
}


def status(vm_state, task_state):
    """Nova's server status for ``vm_state`` + ``task_state``."""
    by_task = STATUS_MAP.get(vm_state, {DEFAULT: 'UNKNOWN'})
    return by_task.get(task_state, by_task[DEFAULT])


def ec2_state(vm_state, task_state):
    return EC2_BY_TASK.get(task_state) or EC2_BY_VM.get(vm_state, EC2_PENDING)


def shows_pending(version):
    return version >= microversion.PENDING


def shown_vm_state(vm_state, version):
    """``vm_state`` as a client on ``version`` may see it (seed 004)."""
    if vm_state == vm.PENDING and not shows_pending(version):
        return vm.ERROR
    return vm_state


def shown_status(vm_state, task_state, version):
    shown = status(vm_state, task_state)
    if shown == 'PENDING' and not shows_pending(version):
        return 'ERROR'
    return shown

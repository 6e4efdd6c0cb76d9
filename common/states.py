"""The three states of an instance, as constants and groups only (DESIGN.md section 1).

* ``power_state``: what the hypervisor says, reported bottom-up by the agent.
  Integers in libvirt's numbering, so a report can be stored as it came.
* ``vm_state``: the stable state the user expects when no task runs. Adjectives.
* ``task_state``: the one task in progress, verb+ING, ``None`` when idle.

Which action may start from which vm_state, and where it leads, lives in
:mod:`common.actions`; nothing here encodes a transition.
"""

# --- power_state -----------------------------------------------------------

class power:
    """power_state values (libvirt's numbering)."""
    NOSTATE = 0
    RUNNING = 1
    PAUSED = 3
    SHUTDOWN = 4
    CRASHED = 6
    SUSPENDED = 7


POWER_STATES = {
    power.NOSTATE: 'NOSTATE',
    power.RUNNING: 'RUNNING',
    power.PAUSED: 'PAUSED',
    power.SHUTDOWN: 'SHUTDOWN',
    power.CRASHED: 'CRASHED',
    power.SUSPENDED: 'SUSPENDED',
}

# Obsolete names and numbers (seed 000), accepted on input, never stored.
_OBSOLETE_POWER = {
    'BLOCKED': power.RUNNING, 2: power.RUNNING,
    'SHUTOFF': power.SHUTDOWN, 5: power.SHUTDOWN,
    'FAILED': power.NOSTATE, 8: power.NOSTATE,
}
_POWER_BY_NAME = {name: value for value, name in POWER_STATES.items()}


def normalize_power_state(value):
    """Return the stored power_state for ``value`` (a number or a name).

    Obsolete names and numbers (BLOCKED, SHUTOFF, FAILED) are mapped to their
    current meaning. Anything else raises ``ValueError`` naming what is accepted.
    """
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        _bad_power_state(value)
    key = value.upper() if isinstance(value, str) else value
    if key in POWER_STATES:
        return key
    if key in _POWER_BY_NAME:
        return _POWER_BY_NAME[key]
    if key in _OBSOLETE_POWER:
        return _OBSOLETE_POWER[key]
    _bad_power_state(value)


# A power report's seq is stored in a BIGINT (instances.power_seq).
SEQ_LIMIT = 2 ** 63


def normalize_power_seq(value):
    """Return a power report's seq as stored: what ``int()`` makes of
    ``value``, which must be from 0 up to 2**63 - 1 (a BIGINT). Anything
    else raises ``ValueError`` naming what is accepted."""
    try:
        seq = int(value)
    except (TypeError, ValueError, OverflowError):
        seq = None
    if isinstance(value, bool) or seq is None or not 0 <= seq < SEQ_LIMIT:
        raise ValueError('power report seq %r: expected a whole number from '
                         '0 to 2**63 - 1' % (value,))
    return seq


def _bad_power_state(value):
    from common import exception
    accepted = sorted(_POWER_BY_NAME) + ['BLOCKED', 'SHUTOFF', 'FAILED']
    raise exception.InvalidPowerState(
        value=value, expected='%s or their numbers %s' % (
            ', '.join(accepted), sorted(POWER_STATES)))


def power_state_name(value):
    """The display name of a stored power_state (``None`` stays ``None``)."""
    if value is None:
        return None
    return POWER_STATES[value]


# Why a domain is not running, as far as the hypervisor can tell.
REASON_GUEST = 'guest'        # the guest powered itself off
REASON_HOST = 'host'          # destroyed, or the host shut it down
REASON_CRASHED = 'crashed'
REASON_SAVED = 'saved'        # managed save (suspend to disk)
REASON_UNKNOWN = 'unknown'
POWER_REASONS = (REASON_GUEST, REASON_HOST, REASON_CRASHED, REASON_SAVED,
                 REASON_UNKNOWN)

# --- vm_state ----------------------------------------------------------------

class vm:
    """vm_state values: stable, adjectives (seeds 000 and 004)."""
    INITIALIZED = 'initialized'
    ACTIVE = 'active'
    RESCUED = 'rescued'
    PAUSED = 'paused'
    SUSPENDED = 'suspended'
    STOPPED = 'stopped'
    SOFT_DELETED = 'soft_deleted'
    HARD_DELETED = 'hard_deleted'
    RESIZED = 'resized'
    ERROR = 'error'
    PENDING = 'pending'
    # Nova's shelving (issue 22): powered off with a snapshot of its disk,
    # still on its host; offloaded: on no host, holding nothing there.
    SHELVED = 'shelved'
    SHELVED_OFFLOADED = 'shelved_offloaded'


VM_STATES = (vm.INITIALIZED, vm.ACTIVE, vm.RESCUED, vm.PAUSED, vm.SUSPENDED,
             vm.STOPPED, vm.SOFT_DELETED, vm.HARD_DELETED, vm.RESIZED,
             vm.ERROR, vm.PENDING, vm.SHELVED, vm.SHELVED_OFFLOADED)

# --- task_state ----------------------------------------------------------------


class task:
    """task_state values: one per compute action, verb+ING."""
    BUILDING = 'building'
    REBUILDING = 'rebuilding'
    STOPPING = 'stopping'
    STARTING = 'starting'
    REBOOTING = 'rebooting'
    REBOOTING_HARD = 'rebooting_hard'
    PAUSING = 'pausing'
    UNPAUSING = 'unpausing'
    SUSPENDING = 'suspending'
    RESUMING = 'resuming'
    RESCUING = 'rescuing'
    UNRESCUING = 'unrescuing'
    RESIZING = 'resizing'
    RESIZE_CONFIRMING = 'resize_confirming'
    RESIZE_REVERTING = 'resize_reverting'
    MIGRATING = 'migrating'
    IMAGE_SNAPSHOTTING = 'image_snapshotting'
    IMAGE_BACKINGUP = 'image_backingup'
    UPDATING_PASSWORD = 'updating_password'
    UPDATING_SECURITY_GROUPS = 'updating_security_groups'
    SOFT_DELETING = 'soft_deleting'
    RESTORING = 'restoring'
    SHELVING = 'shelving'
    SHELVING_OFFLOADING = 'shelving_offloading'
    UNSHELVING = 'unshelving'
    # Tasks that reconcile runs on its own (DESIGN.md section 5).
    POWERING_OFF = 'powering_off'
    POWERING_ON = 'powering_on'
    DESTROYING = 'destroying'


TASK_STATES = tuple(v for k, v in vars(task).items() if k.isupper())

# --- progress steps (seed 001's sub-steps: a separate field, seed 000) --------

class step:
    """``progress`` steps of the long tasks."""
    SCHEDULING = 'scheduling'
    NETWORKING = 'networking'
    BLOCK_DEVICE_MAPPING = 'block_device_mapping'
    SPAWNING = 'spawning'
    RESIZE_PREP = 'resize_prep'
    RESIZE_MIGRATING = 'resize_migrating'
    RESIZE_MIGRATED = 'resize_migrated'
    RESIZE_FINISH = 'resize_finish'


# NETWORKING and BLOCK_DEVICE_MAPPING are steps of drivers that attach
# networks and disks as separate calls; the drivers Tristate ships (fake,
# libvirt) do both within spawning, and an agent reports a step only when
# work on it starts, so their builds go scheduling -> spawning.
_BUILD_STEPS = (step.SCHEDULING, step.SPAWNING)
# The steps a task walks through, in order; other tasks report percent only.
PROGRESS_STEPS = {
    task.BUILDING: _BUILD_STEPS,
    task.REBUILDING: _BUILD_STEPS,
    task.RESIZING: (step.RESIZE_PREP, step.RESIZE_MIGRATING,
                    step.RESIZE_MIGRATED, step.RESIZE_FINISH),
}

# --- action log results --------------------------------------------------------

RESULT_RUNNING = 'running'
RESULT_SUCCESS = 'success'
RESULT_ROLLED_BACK = 'rolled_back'     # failed, cleaned up, vm_state unchanged
RESULT_ERROR = 'error'                 # failed without rollback, vm_state ERROR
RESULT_PREEMPTED = 'preempted'         # a hard delete or reset took the instance
RESULT_BURIED = 'buried'               # no valid host: PENDING or ERROR
ACTION_RESULTS = (RESULT_RUNNING, RESULT_SUCCESS, RESULT_ROLLED_BACK,
                  RESULT_ERROR, RESULT_PREEMPTED, RESULT_BURIED)

# --- per-instance reconcile policies -------------------------------------------

USER_SHUTDOWN_POLICIES = ('stop', 'restart', 'delete')
CRASH_POLICIES = ('restart', 'stop', 'error')

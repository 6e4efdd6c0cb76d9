"""The action table: one DFA over the stable vm_states (DESIGN.md section 2).

Declared once, as data. The conductor's task gateway accepts or denies every
request with it, ``tristate-manage docs`` renders it into ``docs/states.md``,
and the tests walk it. Nothing else in the tree decides whether an action may
start or which vm_state it leads to.

A row says: *action* may start from any of *sources*; while it runs the
instance's task_state is *task_state*; when it succeeds the vm_state becomes
*target*. Two special targets:

* ``UNCHANGED``: the vm_state the task started from.
* ``RETURN``: the vm_state saved when a detour began (rescue, resize), so
  unrescue, confirm_resize and revert_resize go back where the user was.

Whether an action may start depends only on the vm_state and on whether any
task is running, never on which task (seed 000). Only the actions marked
``preempts`` (hard delete, admin reset) start while a task runs.
"""

import dataclasses
import types

from common import exception
from common.states import task, vm
from common.states import VM_STATES

UNCHANGED = 'UNCHANGED'
RETURN = 'RETURN'

# How an action runs.
KIND_TASK = 'task'      # a task sent to the instance's compute agent
KIND_DB = 'db'          # a pure database operation, done at once

# What a failed task leaves (DESIGN.md section 1).
ROLLBACK_OR_ERROR = 'rollback_or_error'   # unchanged if rolled back, else ERROR
ALWAYS_ERROR = 'always_error'             # nothing to roll back to


@dataclasses.dataclass(frozen=True)
class Action:
    """What is true of an action whatever state it starts from."""
    name: str
    kind: str = KIND_TASK
    admin_only: bool = False
    system: bool = False            # started by reconcile only, never by users
    preempts: bool = False          # may start while a task runs
    saves_return: bool = False      # records the vm_state RETURN goes back to
    on_failure: str = ROLLBACK_OR_ERROR
    timeout: int = 600              # seconds without progress before reaping
    description: str = ''


@dataclasses.dataclass(frozen=True)
class Row:
    action: str
    sources: frozenset
    task_state: str | None
    target: str
    note: str = ''


_ALL = frozenset(VM_STATES)
_LIVE = frozenset({vm.ACTIVE, vm.STOPPED, vm.PAUSED, vm.SUSPENDED,
                   vm.RESCUED})

ACTIONS = types.MappingProxyType({a.name: a for a in (
    Action('build', on_failure=ALWAYS_ERROR, timeout=1800,
           description='schedule the new instance and spawn it'),
    Action('rebuild', timeout=1800,
           description='spawn again from an image (a buried instance: build)'),
    Action('stop', timeout=600, description='power the guest off'),
    Action('start', timeout=600, description='power the guest on'),
    Action('reboot', timeout=600, description='soft reboot (ACPI)'),
    Action('reboot_hard', timeout=600, description='hard reboot (reset)'),
    Action('pause', timeout=300, description='freeze the guest in memory'),
    Action('unpause', timeout=300, description='thaw a paused guest'),
    Action('suspend', timeout=600, description='save the guest to disk'),
    Action('resume', timeout=600, description='restore a suspended guest'),
    Action('rescue', saves_return=True, timeout=900,
           description='boot the rescue image'),
    Action('unrescue', timeout=900,
           description='leave rescue, back to where the user was'),
    Action('resize', saves_return=True, timeout=3600,
           description='move to a new flavor; the user confirms or reverts'),
    Action('confirm_resize', timeout=900,
           description='keep the new flavor, drop the old copy'),
    Action('revert_resize', timeout=1800,
           description='go back to the old flavor'),
    Action('migrate', admin_only=True, saves_return=True, timeout=3600,
           description='cold: move the guest to another host (its disk '
                       'copied); the admin confirms or reverts'),
    Action('live_migrate', admin_only=True, timeout=3600,
           description='move the running guest to another host'),
    Action('evacuate', admin_only=True, timeout=1800,
           description='rebuild, from its image, on another host, a guest '
                       'whose host is forced down and silent (local disk '
                       'data is lost)'),
    Action('evacuate_stopped', admin_only=True, timeout=1800,
           description='evacuate, and leave the guest stopped on its new '
                       'host (Nova 2.95)'),
    Action('snapshot', timeout=3600, description='save an image of the disk'),
    Action('backup', timeout=3600, description='save a rotated backup image'),
    Action('set_password', timeout=300,
           description='set the admin password in the guest'),
    Action('set_security_groups', timeout=300,
           description='put every port of the guest in the default group '
                       '(all traffic) or in none (its links down: '
                       'common/secgroups.py)'),
    Action('soft_delete', timeout=600,
           description='power off and keep the disk until reclaimed'),
    Action('restore', timeout=600,
           description='bring a soft-deleted instance back'),
    Action('shelve', timeout=3600,
           description='power off and save an image of the disk; the guest '
                       'stays on its host until offloaded'),
    Action('shelve_offload', admin_only=True, timeout=600,
           description='remove a shelved guest from its host and free what '
                       'it held there (also [compute] shelved_offload_time)'),
    Action('unshelve', timeout=1800,
           description='power a shelved guest on again, or build an '
                       'offloaded one from its snapshot where the scheduler '
                       '(or the admin) places it; the snapshot is deleted'),
    Action('delete', kind=KIND_DB, preempts=True, timeout=0,
           description='hard delete: one database update, always succeeds'),
    Action('reset_state', kind=KIND_DB, admin_only=True, preempts=True,
           timeout=0, description='admin: force ACTIVE or ERROR, clear task'),
    # Reconcile's own tasks (common/reconcile.py decides when).
    Action('power_off', system=True, timeout=600,
           description='reconcile: power off a domain that must not run'),
    Action('power_on', system=True, timeout=600,
           description='reconcile: start a guest again (user_shutdown or '
                       'crash policy restart)'),
    Action('reconcile', kind=KIND_DB, system=True, timeout=0,
           description='reconcile: record what the hypervisor did '
                       '(implicit stop, error)'),
)})

# The transitions. One line each; read it as "action: from -> to while task".
ROWS = (
    # build: the create request claims it at once, in the same INSERT.
    Row('build', frozenset({vm.INITIALIZED}), task.BUILDING, vm.ACTIVE),
    Row('rebuild', frozenset({vm.ACTIVE, vm.STOPPED}), task.REBUILDING,
        UNCHANGED),
    # seed 004: a buried instance is built again (PENDING -> BUILD).
    Row('rebuild', frozenset({vm.PENDING}), task.BUILDING, vm.ACTIVE,
        'schedules again'),
    Row('stop', frozenset({vm.ACTIVE, vm.RESCUED}), task.STOPPING,
        vm.STOPPED),
    Row('start', frozenset({vm.STOPPED}), task.STARTING, vm.ACTIVE),
    Row('reboot', frozenset({vm.ACTIVE}), task.REBOOTING, vm.ACTIVE),
    Row('reboot_hard', frozenset({vm.ACTIVE, vm.STOPPED, vm.PAUSED,
                                  vm.SUSPENDED}),
        task.REBOOTING_HARD, vm.ACTIVE),
    Row('pause', frozenset({vm.ACTIVE}), task.PAUSING, vm.PAUSED),
    Row('unpause', frozenset({vm.PAUSED}), task.UNPAUSING, vm.ACTIVE),
    Row('suspend', frozenset({vm.ACTIVE}), task.SUSPENDING, vm.SUSPENDED),
    Row('resume', frozenset({vm.SUSPENDED}), task.RESUMING, vm.ACTIVE),
    Row('rescue', frozenset({vm.ACTIVE, vm.STOPPED}), task.RESCUING,
        vm.RESCUED),
    Row('unrescue', frozenset({vm.RESCUED}), task.UNRESCUING, RETURN),
    Row('resize', frozenset({vm.ACTIVE, vm.STOPPED}), task.RESIZING,
        vm.RESIZED),
    Row('confirm_resize', frozenset({vm.RESIZED}), task.RESIZE_CONFIRMING,
        RETURN),
    Row('revert_resize', frozenset({vm.RESIZED}), task.RESIZE_REVERTING,
        RETURN),
    Row('migrate', frozenset({vm.ACTIVE, vm.STOPPED}), task.MIGRATING,
        vm.RESIZED),
    Row('live_migrate', frozenset({vm.ACTIVE, vm.PAUSED}), task.MIGRATING,
        UNCHANGED),
    # issue 25: only from a host forced down and silent (conductor/evacuate.py)
    Row('evacuate', frozenset({vm.ACTIVE, vm.STOPPED}), task.REBUILDING,
        UNCHANGED, 'rebuilt on another host'),
    Row('evacuate_stopped', frozenset({vm.ACTIVE, vm.STOPPED}),
        task.REBUILDING, vm.STOPPED, 'rebuilt on another host, stopped'),
    Row('snapshot', frozenset({vm.ACTIVE, vm.STOPPED, vm.PAUSED,
                               vm.SUSPENDED}),
        task.IMAGE_SNAPSHOTTING, UNCHANGED),
    Row('backup', frozenset({vm.ACTIVE, vm.STOPPED, vm.PAUSED,
                             vm.SUSPENDED}),
        task.IMAGE_BACKINGUP, UNCHANGED),
    Row('set_password', frozenset({vm.ACTIVE}), task.UPDATING_PASSWORD,
        UNCHANGED),
    # Nova's add/removeSecurityGroup (issue 22): where the guest's
    # definition is the one it runs with next (not a rescue's or a cold
    # move's copy, not a suspended guest's saved image); an offloaded
    # guest has no domain: its ports change alone.
    Row('set_security_groups', frozenset({vm.ACTIVE, vm.STOPPED, vm.PAUSED,
                                          vm.SHELVED, vm.SHELVED_OFFLOADED}),
        task.UPDATING_SECURITY_GROUPS, UNCHANGED),
    Row('soft_delete', _LIVE | {vm.RESIZED}, task.SOFT_DELETING,
        vm.SOFT_DELETED),
    Row('restore', frozenset({vm.SOFT_DELETED}), task.RESTORING, vm.ACTIVE),
    # Nova's shelving (issue 22): offload frees the host, unshelve of an
    # offloaded instance schedules it again.
    Row('shelve', frozenset({vm.ACTIVE, vm.STOPPED, vm.PAUSED,
                             vm.SUSPENDED}), task.SHELVING, vm.SHELVED),
    Row('shelve_offload', frozenset({vm.SHELVED}), task.SHELVING_OFFLOADING,
        vm.SHELVED_OFFLOADED, 'frees its host'),
    Row('unshelve', frozenset({vm.SHELVED, vm.SHELVED_OFFLOADED}),
        task.UNSHELVING, vm.ACTIVE, 'offloaded: schedules again'),
    # seed 000: delete is allowed from everywhere, with or without a task.
    Row('delete', _ALL, None, vm.HARD_DELETED, 'pure database update'),
    # admin reset: never resurrects a hard-deleted instance; PENDING only
    # to ERROR (seed 004), and an offloaded one, which has no domain
    # anywhere to be ACTIVE with (unshelve builds it).
    Row('reset_state', _ALL - {vm.HARD_DELETED, vm.PENDING,
                               vm.SHELVED_OFFLOADED}, None, vm.ACTIVE),
    Row('reset_state', _ALL - {vm.HARD_DELETED}, None, vm.ERROR),
    Row('power_off', frozenset({vm.STOPPED, vm.SOFT_DELETED, vm.SHELVED}),
        task.POWERING_OFF, UNCHANGED),
    Row('power_on', frozenset({vm.ACTIVE, vm.RESCUED}), task.POWERING_ON,
        UNCHANGED),
    # Only for instances with no task running, in one conditional UPDATE.
    Row('reconcile', frozenset({vm.ACTIVE, vm.RESCUED, vm.PAUSED,
                                vm.SUSPENDED}), None, vm.STOPPED),
    Row('reconcile', frozenset({vm.ACTIVE, vm.RESCUED, vm.STOPPED, vm.PAUSED,
                                vm.SUSPENDED, vm.RESIZED}), None, vm.ERROR),
)


class ActionTable:
    """The rows above as a value: looked up, iterated, never changed."""

    def __init__(self, actions, rows):
        self.actions = actions
        self._rows = tuple(rows)
        self._index = {}
        self._by_source = {}
        for row in self._rows:
            if row.action not in actions:
                raise ValueError('row for undeclared action %r' % row.action)
            for source in row.sources:
                key = (row.action, source, row.target)
                if key in self._index:
                    raise ValueError('two rows for %r from %r to %r' % key)
                self._index[key] = row
                self._by_source.setdefault((row.action, source), []).append(row)

    def __iter__(self):
        """Yield ``(source, action, target)`` triples, in table order."""
        for row in self._rows:
            for source in sorted(row.sources, key=VM_STATES.index):
                yield source, row.action, row.target

    @property
    def rows(self):
        return self._rows

    def action(self, name):
        try:
            return self.actions[name]
        except KeyError:
            raise exception.ActionNotFound(
                action=name, expected=', '.join(sorted(self.actions))) from None

    def timeout(self, name, overrides=None):
        """Seconds without progress after which a task of ``name`` is
        failed: ``overrides`` (``[conductor] task_timeouts``) if it names
        the action, else the table's. 0: never (database-only actions)."""
        overrides = overrides or {}
        if name in overrides:
            return int(overrides[name])
        return self.action(name).timeout

    def allowed_from(self, name, target=None):
        """The vm_states ``name`` may start from (for ``target`` if given)."""
        self.action(name)
        return frozenset(source for (action, source, tgt) in self._index
                         if action == name and (target is None or tgt == target))

    def denial(self, inst, name, allowed=None):
        """The :class:`~common.exception.ActionNotAllowed` that says why
        ``name`` cannot start on the row ``inst``."""
        return exception.ActionNotAllowed(
            action=name, instance=inst['uuid'], vm_state=inst['vm_state'],
            task_state=inst['task_state'], task_id=inst['task_id'],
            allowed=self.allowed_from(name) if allowed is None else allowed)

    def refuse_if_denied(self, inst, name):
        """Raise :class:`~common.exception.ActionNotAllowed` if the row
        ``inst``, as read, shows that ``name`` cannot start (a task runs, or
        its vm_state is not one ``name`` starts from). Only the claim's
        conditional UPDATE grants an action; this refuses early, without
        it, what the row already denies (a burst of requests that cannot
        win then queues neither on the bus nor on the database's writer)."""
        allowed = self.allowed_from(name)
        if inst['task_id'] is not None or inst['vm_state'] not in allowed:
            raise self.denial(inst, name, allowed)

    def targets(self, name):
        """The explicit targets an action can be asked for (reset_state)."""
        return sorted({row.target for row in self._rows if row.action == name})

    def row(self, name, vm_state, target=None):
        """The row for ``name`` from ``vm_state``, or None if not allowed.

        ``target`` picks among rows of an action with several targets from
        one state (reset_state); it is required for those and refused for
        the others.
        """
        self.action(name)
        candidates = [row for row in self._by_source.get((name, vm_state), ())
                      if target is None or row.target == target]
        if len(candidates) > 1:
            raise exception.Invalid(
                reason='%s needs a target state: one of %s'
                % (name, ', '.join(self.targets(name))))
        return candidates[0] if candidates else None

    def success_state(self, row, vm_state, return_vm_state):
        """The vm_state a task of ``row`` that started in ``vm_state`` ends in."""
        if row.target == UNCHANGED:
            return vm_state
        if row.target == RETURN:
            # A detour always saved where it came from; if that was lost
            # (an old row), ACTIVE is the state the user most likely had.
            return return_vm_state or vm.ACTIVE
        return row.target

    def failure_state(self, name, vm_state, rolled_back):
        """The vm_state a failed task leaves (DESIGN.md section 1)."""
        if rolled_back and self.action(name).on_failure == ROLLBACK_OR_ERROR:
            return vm_state
        return vm.ERROR


TABLE = ActionTable(ACTIONS, ROWS)


# --- the lock (Nova's ``lock``/``unlock``, issue 22) ---------------------------

# What a locked server still takes from its non-admin users: reads, the
# lock's own actions, and what Nova does not lock (rename, tags).
NOT_LOCKED = frozenset({'lock', 'unlock', 'rename', 'tags'})


def refuse_if_locked(inst, ctx, name):
    """The one check of the lock: a locked server refuses ``name`` to
    anyone but an admin, with Nova's 409 ``Instance ... is locked``.
    Called by every route that changes a server (actions, delete,
    metadata, rebuild's attributes) on the row it read."""
    if name in NOT_LOCKED or not inst.get('locked') or ctx.is_admin:
        return
    raise exception.InstanceLocked(instance=inst['uuid'])

"""The reconcile table: what the conductor does when the hypervisor disagrees
with vm_state (DESIGN.md section 5), declared once, as data; and oper_state.

Read a row as: an instance in one of *vm_states*, reported in one of
*power_states* for one of *reasons*, with no task running, gets *decision*.
The rows are disjoint and cover every combination (a test checks), so there
is exactly one answer for each; ``docs/reconcile.md`` is generated from them.

Decisions:

* ``none``: they agree; nothing to do.
* ``store``: keep the power_state, change nothing (ERROR, builds, transients).
* ``stop``: vm_state -> STOPPED, no hypervisor call (an implicit stop).
* ``error``: vm_state -> ERROR with the reason.
* ``user_shutdown``: the instance's ``user_shutdown`` policy: ``stop``,
  ``restart`` or ``delete`` (seed 000's SHUTOFF -> DELETED when
  ``shutdown_terminate``: a hard delete, quota and billing freed at once).
* ``crash``: the instance's ``crash`` policy: ``restart`` (within a budget,
  then ERROR), ``stop`` or ``error``.
* ``power_off``: a system task powers the domain off (vm_state unchanged).
* ``destroy``: the agent destroys the domain again, until it is gone.
"""

import dataclasses

from common.states import POWER_REASONS
from common.states import POWER_STATES
from common.states import VM_STATES
from common.states import power
from common.states import vm

NONE = 'none'
STORE = 'store'
STOP = 'stop'
ERROR = 'error'
USER_SHUTDOWN = 'user_shutdown'
CRASH = 'crash'
POWER_OFF = 'power_off'
DESTROY = 'destroy'
# What a user_shutdown policy can turn into besides the rows' decisions.
DELETE = 'delete'
DECISIONS = (NONE, STORE, STOP, ERROR, USER_SHUTDOWN, CRASH, POWER_OFF,
             DESTROY)

REASONS = (None,) + POWER_REASONS
_ANY_REASON = frozenset(REASONS)
_ALL_POWER = frozenset(POWER_STATES)


@dataclasses.dataclass(frozen=True)
class Rule:
    vm_states: frozenset
    power_states: frozenset
    reasons: frozenset
    decision: str
    why: str


def _r(vm_states, power_states, decision, why, reasons=_ANY_REASON):
    return Rule(frozenset(vm_states), frozenset(power_states),
                frozenset(reasons), decision, why)


_UP = (vm.ACTIVE, vm.RESCUED)
_NOT_GUEST = _ANY_REASON - {'guest', 'crashed'}
_HELD = (vm.PAUSED, vm.SUSPENDED)

RULES = (
    # running as asked
    _r(_UP, {power.RUNNING}, NONE, 'running as asked'),
    _r(_UP, {power.SHUTDOWN}, USER_SHUTDOWN, 'the guest shut itself down',
       {'guest'}),
    _r(_UP, {power.SHUTDOWN}, STOP, 'the domain was powered off outside '
       'Tristate (host, admin or unknown)', _NOT_GUEST),
    _r(_UP, {power.SHUTDOWN}, CRASH, 'the guest crashed', {'crashed'}),
    _r(_UP, {power.CRASHED}, CRASH, 'the guest crashed'),
    _r(_UP, {power.NOSTATE}, ERROR, 'the domain vanished from its host'),
    _r(_UP, {power.PAUSED, power.SUSPENDED}, STORE,
       'paused or saved outside a task (snapshot, migration): watched, not '
       'acted on'),
    # stopped on purpose
    _r({vm.STOPPED}, {power.RUNNING, power.PAUSED}, POWER_OFF,
       'started behind Tristate\'s back; the user asked for stopped'),
    _r({vm.STOPPED}, {power.SHUTDOWN, power.CRASHED, power.SUSPENDED}, NONE,
       'down as asked'),
    _r({vm.STOPPED}, {power.NOSTATE}, ERROR,
       'the domain vanished from its host'),
    # paused or suspended on purpose
    _r({vm.PAUSED}, {power.PAUSED}, NONE, 'paused as asked'),
    _r({vm.SUSPENDED}, {power.SUSPENDED}, NONE, 'suspended as asked'),
    _r({vm.SUSPENDED}, {power.SHUTDOWN}, NONE, 'saved to disk as asked',
       {'saved'}),
    _r(_HELD, {power.RUNNING}, ERROR, 'the pause or suspend did not hold'),
    _r({vm.PAUSED}, {power.SHUTDOWN}, STOP, 'powered off while paused'),
    _r({vm.SUSPENDED}, {power.SHUTDOWN}, STOP,
       'powered off while suspended', _ANY_REASON - {'saved'}),
    _r({vm.PAUSED}, {power.SUSPENDED}, STORE, 'saved while paused'),
    _r({vm.SUSPENDED}, {power.PAUSED}, STORE, 'paused while suspended'),
    _r(_HELD, {power.CRASHED}, ERROR, 'crashed while paused or suspended'),
    _r(_HELD, {power.NOSTATE}, ERROR, 'the domain vanished from its host'),
    # soft-deleted: kept on disk, never running
    _r({vm.SOFT_DELETED}, {power.RUNNING, power.PAUSED, power.SUSPENDED,
                           power.CRASHED}, POWER_OFF,
       'a soft-deleted instance must not run'),
    _r({vm.SOFT_DELETED}, {power.SHUTDOWN, power.NOSTATE}, NONE,
       'down as asked'),
    # shelved: powered off with a snapshot, kept on its host until
    # offloaded (a vanished domain is rebuilt from the snapshot by unshelve)
    _r({vm.SHELVED}, {power.RUNNING, power.PAUSED}, POWER_OFF,
       'a shelved instance must not run'),
    _r({vm.SHELVED}, {power.SHUTDOWN, power.CRASHED, power.SUSPENDED}, NONE,
       'down as asked'),
    _r({vm.SHELVED}, {power.NOSTATE}, STORE, 'the domain is gone; unshelve '
       'builds it from the snapshot'),
    # offloaded: on no host, no domain (never "fixed")
    _r({vm.SHELVED_OFFLOADED}, {power.NOSTATE}, NONE, 'no domain, as asked'),
    _r({vm.SHELVED_OFFLOADED}, _ALL_POWER - {power.NOSTATE}, STORE,
       'offloaded: placed on no host; a domain left on its old host is a '
       'stray (tristate-manage check)'),
    # hard-deleted: destroy until gone
    _r({vm.HARD_DELETED}, _ALL_POWER - {power.NOSTATE}, DESTROY,
       'the instance was deleted; its domain must go'),
    _r({vm.HARD_DELETED}, {power.NOSTATE}, NONE, 'gone as asked'),
    # waiting for the user to confirm or revert a resize
    _r({vm.RESIZED}, {power.RUNNING}, NONE, 'running as asked'),
    _r({vm.RESIZED}, {power.NOSTATE}, ERROR,
       'the domain vanished from its host'),
    _r({vm.RESIZED}, _ALL_POWER - {power.RUNNING, power.NOSTATE}, STORE,
       'the user decides with confirm or revert'),
    # nothing to reconcile against
    _r({vm.ERROR}, _ALL_POWER, STORE, 'ERROR: stored only (a domain there '
       'is counted on its host: its allocation kept or taken again); delete '
       'or reset'),
    _r({vm.INITIALIZED, vm.PENDING}, _ALL_POWER, STORE,
       'not built yet: stored only'),
)


class ReconcileTable:
    def __init__(self, rules):
        self.rules = tuple(rules)
        self._index = {}
        for rule in self.rules:
            for key in self._keys(rule):
                if key in self._index:
                    raise ValueError('two reconcile rules for %r' % (key,))
                self._index[key] = rule

    @staticmethod
    def _keys(rule):
        for vm_state in rule.vm_states:
            for power_state in rule.power_states:
                for reason in rule.reasons:
                    yield vm_state, power_state, reason

    def decide(self, vm_state, power_state, reason):
        """The rule for one combination; unknown reasons count as unknown."""
        if reason not in _ANY_REASON:
            reason = 'unknown'
        return self._index[(vm_state, power_state, reason)]

    def missing(self):
        """Combinations no rule covers (empty when the table is complete)."""
        return [(v, p, r) for v in VM_STATES for p in POWER_STATES
                for r in REASONS if (v, p, r) not in self._index]


TABLE = ReconcileTable(RULES)

# --- oper_state (Ganeti's operational status), derived for display -------------

RUNNING = 'running'
ADMIN_DOWN = 'ADMIN_down'
USER_DOWN = 'USER_down'
ERROR_DOWN = 'ERROR_down'
ERROR_UP = 'ERROR_up'
ERROR_NODEDOWN = 'ERROR_nodedown'
OPER_STATES = (RUNNING, ADMIN_DOWN, USER_DOWN, ERROR_DOWN, ERROR_UP,
               ERROR_NODEDOWN)

_SHOULD_RUN = frozenset({vm.ACTIVE, vm.RESCUED, vm.RESIZED})
_GONE_OR_DOWN = frozenset({power.NOSTATE, power.SHUTDOWN})


def oper_state(inst, *, host_up):
    """What an operator should make of the instance now.

    ``host_up``: whether the agent of the instance's host sends heartbeats.
    """
    vm_state, power_state = inst['vm_state'], inst['power_state']
    runs = power_state == power.RUNNING
    if vm_state == vm.HARD_DELETED:
        return ADMIN_DOWN if power_state in _GONE_OR_DOWN else ERROR_UP
    if inst.get('host') and not host_up:
        return ERROR_NODEDOWN
    if vm_state in _SHOULD_RUN and not runs:
        by_guest = (power_state == power.SHUTDOWN
                    and inst.get('power_reason') == 'guest')
        return USER_DOWN if by_guest else ERROR_DOWN
    if runs:
        return RUNNING if vm_state in _SHOULD_RUN else ERROR_UP
    return ERROR_DOWN if vm_state == vm.ERROR else ADMIN_DOWN

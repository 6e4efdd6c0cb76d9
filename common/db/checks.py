"""The invariants of the control plane, checked on its database (issue 9).

``tristate-manage check`` runs :func:`find_violations` and prints what it
returns; the fault-injection tests end with it. Every check is read-only SQL
in one snapshot (REPEATABLE READ on PostgreSQL, one transaction on SQLite),
so a plane that is running can be checked without stopping it.

What is checked, and where the rule comes from:

* tasks: none older than its timeout (the action table's, or ``[conductor]
  task_timeouts``: :meth:`common.actions.ActionTable.timeout`, the reaper's
  rule); task_id, task_state and task_action set together, and the
  task_state the one the action table gives the task's action from the
  instance's vm_state.
* the action log: the running task of an instance is logged as running;
  every other entry ended, with a known result, an end time and the
  vm_state it left.
* hosts: each host's ``used_*`` is the sum of the allocations on it; no
  host is over its capacity under its allocation ratios (its own, else the
  scheduler's); the scheduler's stored weigher ``free_memory_mb`` is
  ``memory_mb x ram_ratio - used_memory_mb``.
* server groups: a hard policy holds where its members hold allocations.
* instances: a HARD_DELETED one holds no allocation, nor does an idle
  SHELVED_OFFLOADED one, which is placed on no host and names the snapshot
  it is unshelved from; an idle one holds its
  own allocation on its own host only, a resize's only while RESIZED (or
  ERROR after a failed confirm or revert), a migration's never; every
  vm_state is one the action table can reach.
* power: a known power_state and reason; a report's seq and its time are
  stored together (a power_state never comes from nowhere) and no report
  is stamped in the future. Whether a stored report is older than one the
  conductor received cannot be told from the rows alone: the reports that
  were ignored leave no trace. The fault tests check that end to end.
* domains (issue 19: whatever runs on a host is counted on that host, and
  no guest outlives its instance): a domain reported on its instance's host
  for an idle instance that holds no allocation there; a hard-deleted
  instance's domain reported since the delete (on its host, or on any other:
  ``stray_domains``); a domain reported on a host other than its live
  instance's (``stray_domains``, :mod:`common.db.domains`).
* addresses (issue 23, :mod:`common.db.networks`): none held by a
  hard-deleted instance (the delete frees them in its transaction); none
  held twice on one L2 (two networks on the same bridge or libvirt
  network whose subnets overlap, each with a port on the same address:
  the database's uniqueness is per network); every address inside its
  network's subnet.
"""

import dataclasses
import datetime
import ipaddress

import sqlalchemy as sa

from common import actions
from common import exception
from common import states
from common.db import api as db_api
from common.db import models
from common.states import vm

I = models.Instance.__table__          # noqa: E741 (the table, read as "I")
H = models.Host.__table__
A = models.Allocation.__table__
LOGT = models.InstanceAction.__table__
S = models.StrayDomain.__table__
N = models.Network.__table__
P = models.Port.__table__
F = models.FixedIP.__table__
G = models.ServerGroup.__table__
GM = models.ServerGroupMember.__table__

TABLE = actions.TABLE
_RESOURCES = ('vcpus', 'memory_mb', 'disk_gb')


@dataclasses.dataclass(frozen=True)
class Violation:
    """One broken invariant: ``kind`` is ``instance``, ``host`` or
    ``server group``, ``subject`` its uuid or name."""
    kind: str
    subject: str
    problem: str

    def __str__(self):
        return '%s %s: %s' % (self.kind, self.subject, self.problem)


@dataclasses.dataclass(frozen=True)
class Limits:
    """What the checks compare against: the clock and the configuration.
    ``now`` None: the clock once the snapshot is read, so that a write
    committed while the check starts is not stamped "in the future"."""
    now: datetime.datetime = None
    task_timeouts: dict = dataclasses.field(default_factory=dict)
    # (cpu, ram, disk), as [scheduler] *_allocation_ratio.
    ratios: tuple = (1.0, 1.0, 1.0)
    # Seconds a task may outlive its timeout before it counts: the reaper
    # runs every [conductor] periodic_interval.
    grace: float = 0.0

    @classmethod
    def from_conf(cls, conf, now=None):
        sched = conf.scheduler
        return cls(now=now, task_timeouts=dict(conf.conductor.task_timeouts),
                   ratios=(sched.cpu_allocation_ratio,
                           sched.ram_allocation_ratio,
                           sched.disk_allocation_ratio),
                   grace=conf.conductor.periodic_interval)


def reachable_vm_states(table=TABLE):
    """Every vm_state a new instance (INITIALIZED) can reach through the
    table: UNCHANGED stays, RETURN goes back to where a detour began."""
    returns = {src for row in table.rows
               if table.action(row.action).saves_return for src in row.sources}
    # A build that finds no valid host is buried (seed 004): PENDING or
    # ERROR, outside the rows, as a failure is.
    reached = {vm.INITIALIZED, vm.PENDING, vm.ERROR}
    frontier = list(reached)
    while frontier:
        source = frontier.pop()
        for row in table.rows:
            if source not in row.sources:
                continue
            if row.target == actions.UNCHANGED:
                targets = {source}
            elif row.target == actions.RETURN:
                targets = returns
            else:
                targets = {row.target}
            for target in targets - reached:
                reached.add(target)
                frontier.append(target)
    return frozenset(reached)


REACHABLE = reachable_vm_states()


# --- reading one snapshot -------------------------------------------------------

@dataclasses.dataclass
class Snapshot:
    instances: list
    hosts: list
    allocations: list
    running_log: list       # action log entries still 'running'
    bad_log: list           # entries that ended without a proper end
    strays: list = dataclasses.field(default_factory=list)  # reported ones
    # (address, version, network, its cidrs and L2, port, instance)
    addresses: list = dataclasses.field(default_factory=list)
    # (group uuid, policy, max_server_per_host, member uuid)
    members: list = dataclasses.field(default_factory=list)


def _rows(conn, query):
    return [dict(r._mapping) for r in conn.execute(query)]


def _read(conn):
    ended_badly = sa.or_(LOGT.c.result.not_in(states.ACTION_RESULTS),
                         LOGT.c.finished_at.is_(None),
                         LOGT.c.vm_state_after.is_(None))
    return Snapshot(
        instances=_rows(conn, sa.select(I).order_by(I.c.created_at, I.c.uuid)),
        hosts=_rows(conn, sa.select(H).order_by(H.c.name)),
        allocations=_rows(conn, sa.select(A).order_by(A.c.id)),
        running_log=_rows(conn, sa.select(LOGT).where(
            LOGT.c.result == states.RESULT_RUNNING).order_by(LOGT.c.id)),
        bad_log=_rows(conn, sa.select(LOGT).where(
            LOGT.c.result != states.RESULT_RUNNING, ended_badly
        ).order_by(LOGT.c.id)),
        strays=_rows(conn, sa.select(S).where(
            S.c.power_state.is_not(None),
            S.c.power_state != states.power.NOSTATE).order_by(
                S.c.host, S.c.instance_uuid)),
        addresses=_rows(conn, sa.select(
            F.c.address, F.c.version, F.c.port_id, P.c.instance_uuid,
            N.c.name.label('network'), N.c.cidr, N.c.ipv6_cidr, N.c.bridge,
            N.c.libvirt_network).join(P, P.c.id == F.c.port_id).join(
                N, N.c.id == F.c.network_id).order_by(F.c.address)),
        members=_rows(conn, sa.select(
            G.c.uuid, G.c.policy, G.c.max_server_per_host,
            GM.c.instance_uuid).join(GM, GM.c.group_id == G.c.id).order_by(
                G.c.uuid, GM.c.instance_uuid)))


def read_snapshot(database):
    """Everything the checks look at, read in one consistent snapshot."""
    engine = database.engine.execution_options(tristate_readonly=True)
    if not database.is_sqlite:
        engine = engine.execution_options(isolation_level='REPEATABLE READ')
    with engine.begin() as conn:
        return _read(conn)


# --- the checks -----------------------------------------------------------------

def check_tasks(snap, limits):
    for inst in snap.instances:
        yield from _task_of(inst, limits)


def _task_of(inst, limits):
    held = (inst['task_id'], inst['task_state'], inst['task_action'])
    if not any(held):
        return
    if not all(held):
        yield _inst(inst, 'task_id %s, task_state %s and task_action %s are '
                    'not set together' % held)
        return
    action = inst['task_action']
    if action not in TABLE.actions:
        yield _inst(inst, 'task %s runs unknown action %r'
                    % (inst['task_id'], action))
        return
    try:
        row = TABLE.row(action, inst['vm_state'])
    except exception.Invalid:       # several rows: not a task's action
        row = None
    if row is None or row.task_state != inst['task_state']:
        yield _inst(inst, 'task_state %s of %s cannot run from vm_state %s '
                    '(the action table gives %s)' % (
                        inst['task_state'], action, inst['vm_state'],
                        row.task_state if row else 'no such row'))
    yield from _overdue(inst, action, limits)


def _overdue(inst, action, limits):
    timeout = TABLE.timeout(action, limits.task_timeouts)
    since = inst['task_updated_at']
    if since is None:
        yield _inst(inst, 'task %s (%s) has no time of last progress'
                    % (inst['task_id'], action))
        return
    idle = (limits.now - since).total_seconds()
    if timeout and idle > timeout + limits.grace:
        yield _inst(inst, 'task %s (%s, %s) made no progress for %d s, '
                    'longer than its timeout of %d s' % (
                        inst['task_id'], action, inst['task_state'], idle,
                        timeout))


def check_action_log(snap, limits):
    holding = {i['task_id']: i for i in snap.instances if i['task_id']}
    logged = {e['task_id'] for e in snap.running_log}
    for entry in snap.running_log:
        inst = holding.get(entry['task_id'])
        if inst is None or inst['uuid'] != entry['instance_uuid']:
            yield Violation('instance', entry['instance_uuid'],
                            'action log entry of task %s (%s) is still '
                            'running but the instance does not hold that task'
                            % (entry['task_id'], entry['action']))
    for task_id, inst in holding.items():
        if task_id not in logged:
            yield _inst(inst, 'running task %s (%s) is not in the action log '
                        'as running' % (task_id, inst['task_action']))
    for entry in snap.bad_log:
        yield Violation('instance', entry['instance_uuid'],
                        'action log entry of task %s (%s) ended without a '
                        'proper end: result %r, finished_at %s, vm_state '
                        'after %s' % (entry['task_id'], entry['action'],
                                      entry['result'], entry['finished_at'],
                                      entry['vm_state_after']))


def check_hosts(snap, limits):
    sums = {}
    for alloc in snap.allocations:
        total = sums.setdefault(alloc['host'], dict.fromkeys(_RESOURCES, 0))
        for key in _RESOURCES:
            total[key] += alloc[key]
    for host in snap.hosts:
        total = sums.get(host['name'], dict.fromkeys(_RESOURCES, 0))
        for key, default, own in zip(_RESOURCES, limits.ratios,
                                     ('own_cpu_ratio', 'own_ram_ratio',
                                      'own_disk_ratio'), strict=True):
            # the host's own ratio (its agent's [compute] option) wins
            ratio = default if host.get(own) is None else host[own]
            used = host['used_' + key]
            if used != total[key]:
                yield _host(host, 'used_%s is %d but its allocations sum to %d'
                            % (key, used, total[key]))
            if used > host[key] * ratio:
                yield _host(host, 'used_%s %d is over its capacity %d x %g'
                            % (key, used, host[key], ratio))
        yield from _check_free_ram(host)


def _check_free_ram(host):
    expected = host['memory_mb'] * host['ram_ratio'] - host['used_memory_mb']
    # Written by the database from the same columns: equal but for rounding.
    if abs(host['free_memory_mb'] - expected) > 1e-6:
        yield _host(host, 'free_memory_mb is %g but memory_mb %d x ram_ratio '
                    '%g - used_memory_mb %d is %g' % (
                        host['free_memory_mb'], host['memory_mb'],
                        host['ram_ratio'], host['used_memory_mb'], expected))


def check_instances(snap, limits):
    allocs = {}
    for alloc in snap.allocations:
        allocs.setdefault(alloc['instance_uuid'], []).append(alloc)
    for inst in snap.instances:
        if inst['vm_state'] not in REACHABLE:
            yield _inst(inst, 'vm_state %r is not one the action table can '
                        'reach' % inst['vm_state'])
        yield from _allocations_of(inst, allocs.get(inst['uuid'], ()))


def _allocations_of(inst, held):
    if held and inst['vm_state'] == vm.HARD_DELETED:
        yield _inst(inst, 'is hard-deleted but holds %s' % _describe(held))
        return
    if inst['task_id'] is not None:
        return          # a migration or a resize holds two places meanwhile
    if inst['vm_state'] == vm.SHELVED_OFFLOADED:
        # its disk is its snapshot: without one, nothing to unshelve from
        if not inst['shelved_image_id']:
            yield _inst(inst, 'is shelved_offloaded with no snapshot to '
                        'unshelve from (its disk is lost)')
        # seed 000: an offloaded instance holds no host resources
        if held or inst['host']:
            yield _inst(inst, 'is shelved_offloaded but %s' % (
                'holds ' + _describe(held) if held
                else 'is placed on host %s' % inst['host']))
        return
    elsewhere = [a for a in held if a['purpose'] == 'instance'
                 and a['host'] != inst['host']]
    if elsewhere:
        yield _inst(inst, 'runs on host %s but holds %s'
                    % (inst['host'], _describe(elsewhere)))
    # A resize holds its new flavor until confirmed or reverted (a failed
    # confirm or revert leaves ERROR holding it, for the operator); a
    # migration holds its destination only while it runs.
    left = [a for a in held if a['purpose'] == 'migration' or (
        a['purpose'] == 'resize'
        and inst['vm_state'] not in (vm.RESIZED, vm.ERROR))]
    if left:
        yield _inst(inst, 'is %s with no task running but holds %s'
                    % (inst['vm_state'], _describe(left)))


def _describe(allocs):
    return ', '.join('%s allocation %d on %s' % (a['purpose'], a['id'],
                                                  a['host']) for a in allocs)


def check_power(snap, limits):
    for inst in snap.instances:
        yield from _power_of(inst, limits)


def _power_of(inst, limits):
    if inst['power_state'] not in states.POWER_STATES:
        yield _inst(inst, 'power_state %r is not a known power state'
                    % inst['power_state'])
    reason = inst['power_reason']
    if reason is not None and reason not in states.POWER_REASONS:
        yield _inst(inst, 'power reason %r is not a known reason' % reason)
    stamped = inst['power_reported_at']
    if (inst['power_seq'] > 0) != (stamped is not None):
        yield _inst(inst, 'power report seq %d and time %s are not stored '
                    'together' % (inst['power_seq'], stamped))
    elif stamped is not None and stamped > limits.now:
        yield _inst(inst, 'power report stamped %s, later than now (%s)'
                    % (stamped, limits.now))


def check_domains(snap, limits):
    counted = {(a['instance_uuid'], a['host']) for a in snap.allocations
               if a['purpose'] == 'instance'}
    for inst in snap.instances:
        yield from _domain_of(inst, counted)
    by_uuid = {i['uuid']: i for i in snap.instances}
    for stray in snap.strays:
        yield from _stray(stray, by_uuid.get(stray['instance_uuid']))


def _state_name(power_state):
    return states.POWER_STATES.get(power_state, power_state)


def _domain_of(inst, counted):
    if inst['power_state'] == states.power.NOSTATE or inst['host'] is None:
        return
    if inst['vm_state'] == vm.HARD_DELETED:
        deleted, seen = inst['hard_deleted_at'], inst['power_reported_at']
        if deleted is not None and seen is not None and seen > deleted:
            yield _inst(inst, 'is hard-deleted but host %s reported its '
                        'domain %s at %s, after the delete (%s)' % (
                            inst['host'], _state_name(inst['power_state']),
                            seen, deleted))
        return
    if (inst['task_id'] is None and inst['power_seq'] > 0
            and (inst['uuid'], inst['host']) not in counted):
        yield _inst(inst, 'is %s and its domain is reported %s on host %s, '
                    'but it holds no allocation there' % (
                        inst['vm_state'], _state_name(inst['power_state']),
                        inst['host']))


def _stray(stray, inst):
    if inst is None:
        return          # an orphan: the orphan_action policy's
    where = 'host %s reported its domain %s at %s' % (
        stray['host'], _state_name(stray['power_state']),
        stray['reported_at'])
    if inst['vm_state'] == vm.HARD_DELETED:
        yield _inst(inst, 'is hard-deleted but %s' % where)
    elif inst['host'] != stray['host'] and inst['task_id'] is None:
        yield _inst(inst, 'is placed on host %s but %s' % (inst['host'],
                                                            where))


def check_addresses(snap, limits):
    by_uuid = {i['uuid']: i for i in snap.instances}
    on_l2 = {}
    for held in snap.addresses:
        inst = by_uuid.get(held['instance_uuid'])
        if inst is None or inst['vm_state'] == vm.HARD_DELETED:
            yield Violation('instance', held['instance_uuid'],
                            'address %s on network %s is held by a %s '
                            'instance' % (held['address'], held['network'],
                                          'hard-deleted' if inst else
                                          'missing'))
        cidr = held['cidr'] if held['version'] == 4 else held['ipv6_cidr']
        addr = ipaddress.ip_address(held['address'])
        if cidr is None or addr not in ipaddress.ip_network(cidr):
            yield Violation('instance', held['instance_uuid'],
                            'address %s is outside network %s (%s)'
                            % (addr, held['network'], cidr))
        l2 = held['bridge'] or 'libvirt:%s' % held['libvirt_network']
        on_l2.setdefault((l2, addr), []).append(held)
    for (l2, addr), holders in on_l2.items():
        if len(holders) > 1:
            yield Violation('instance', holders[0]['instance_uuid'],
                            'address %s is held twice on %s: by %s' % (
                                addr, l2, ', '.join(
                                    '%s (network %s)' % (
                                        h['instance_uuid'], h['network'])
                                    for h in holders)))


def check_server_groups(snap, limits):
    """A hard policy holds on the hosts where its members hold an
    allocation: anti-affinity, at most ``max_server_per_host`` (1) a host;
    affinity, one host (a member moving holds two: not counted)."""
    held = {}
    for alloc in snap.allocations:
        held.setdefault(alloc['instance_uuid'], set()).add(alloc['host'])
    groups = {}
    for row in snap.members:
        groups.setdefault((row['uuid'], row['policy'],
                           row['max_server_per_host'] or 1), []).append(
            held.get(row['instance_uuid'], set()))
    for (uuid, policy, most), places in groups.items():
        yield from _group_problems(uuid, policy, most, places)


def _group_problems(uuid, policy, most, places):
    if policy == 'anti-affinity':
        counts = {}
        for hosts in places:
            for host in hosts:
                counts[host] = counts.get(host, 0) + 1
        for host, count in sorted(counts.items()):
            if count > most:
                yield Violation('server group', uuid, 'anti-affinity, at '
                                'most %d a host, has %d members on %s'
                                % (most, count, host))
    elif policy == 'affinity':
        settled = {next(iter(h)) for h in places if len(h) == 1}
        if len(settled) > 1:
            yield Violation('server group', uuid, 'affinity, has members on '
                            '%s' % ', '.join(sorted(settled)))


CHECKS = (check_tasks, check_action_log, check_hosts, check_instances,
          check_power, check_domains, check_addresses, check_server_groups)


def _inst(inst, problem):
    return Violation('instance', inst['uuid'], problem)


def _host(host, problem):
    return Violation('host', host['name'], problem)


def find_violations(database, limits, clock=db_api.utcnow):
    """Every broken invariant of the plane in ``database``, as a list of
    :class:`Violation` (empty: all hold); also the snapshot's size.
    ``clock`` gives ``limits.now`` when that is None."""
    snap = read_snapshot(database)
    if limits.now is None:
        limits = dataclasses.replace(limits, now=clock())
    found = [v for check in CHECKS for v in check(snap, limits)]
    return found, {'instances': len(snap.instances), 'hosts': len(snap.hosts),
                   'allocations': len(snap.allocations),
                   'running tasks': len(snap.running_log),
                   'stray domains': len(snap.strays),
                   'addresses': len(snap.addresses)}

"""What agents tell the conductor: task results, heartbeats, power reports.

An agent's word is accepted only for instances placed on its own host and
only for the task_id in its context (the StateDB guards both). A result for
a task that was preempted answers :class:`~common.exception.TaskPreempted`,
so the agent stops and cleans up; nothing is recorded twice.
"""

import datetime
import logging

from common import exception
from common import metrics
from common import reconcile as rtable
from common import states
from common.db import hosts as hosts_db
from common.db import services
from conductor import gateway as gw
from conductor import images
from conductor import secgroups
from conductor import shelve

LOG = logging.getLogger(__name__)

# Allocation changes when a task ends (see StateDB._settle).
# A cold move's other copy (the source's on confirm, the destination's on
# revert) gets a doomed mark with its freed allocation: its host's reports
# destroy it if the conductor's request to destroy it at once is lost.
_ON_SUCCESS = {
    'confirm_resize': [{'free': {'purpose': 'instance'}, 'doom': True},
                       {'promote': 'resize'}],
    'revert_resize': [{'free': {'purpose': 'resize'}, 'doom': True}],
    'live_migrate': [{'free': {'purpose': 'instance'}},
                     {'promote': 'migration'}],
    # seed 000: an offloaded instance holds nothing on any host
    'shelve_offload': [{'free': {}}],
}
_ON_FAILURE = {
    'build': [{'free': {}}],
    'rebuild': [],
    'resize': [{'free': {'purpose': 'resize'}, 'doom': True}],
    'migrate': [{'free': {'purpose': 'resize'}, 'doom': True}],
    # the destination freed and doomed: a copy the move left there (its
    # result lost with a restarted agent, or the move half-done) is
    # destroyed by the destination's reports (common/db/domains.py)
    'live_migrate': [{'end_moves': True}],
    # before the instance was placed on its destination (no valid host
    # there after all, the database lost): the room taken there given
    # back; after, the instance lives there (common/db/evacuations.py)
    'evacuate': [{'free': {'purpose': 'evacuation'}}],
    'evacuate_stopped': [{'free': {'purpose': 'evacuation'}}],
}


# Actions whose result comes from an allocation of this purpose: a resize
# takes the new flavor, a revert the old one, a migration the new host.
_TAKES_FROM_ALLOCATION = {'resize': 'resize', 'migrate': 'resize',
                          'revert_resize': 'instance',
                          'live_migrate': 'migration'}


# Tasks that end a cold move: the copy left on the other host goes.
_ENDS_MOVE = ('confirm_resize', 'revert_resize')


def _same_power(before, after):
    return ((before['power_state'], before['power_reason'])
            == (after['power_state'], after['power_reason']))


# What a report says, compared with what is stored (Results._compare).
_CHANGED = 'changed'
_SAME = 'same'
_QUIET = (rtable.NONE, rtable.STORE)
_BAD_REPORT = (exception.Invalid, KeyError, TypeError, ValueError)


class _Batch:
    """What one batch of power reports leads to."""

    def __init__(self):
        self.destroy = []       # domains the agent must destroy
        self.orphans = []       # domains no instance on the host owns
        self.confirmed = []     # (uuid, seq, state, reason) unchanged
        self.recheck = []       # unchanged, but reconcile may act
        self.changed = []       # (report, stored row) to write
        # (uuid, power_state, seq) reported where no live instance of
        # theirs is placed (common.db.domains)
        self.strays = []
        self.elsewhere = []     # of live instances placed on another host


def _plainly_same(host, report, row):
    """True when ``report`` is surely :data:`_SAME` as ``row`` (the common
    case of a periodic full report), decided without :meth:`Results._compare`'s
    normalising: its power_state is the stored number itself and its seq an
    int. False leaves the report to :meth:`Results._sort`."""
    state = report.get('power_state')
    seq = report.get('seq')
    return (row is not None and type(state) is int and type(seq) is int
            and seq < states.SEQ_LIMIT
            and state == row['power_state'] and state in states.POWER_STATES
            and report.get('reason') == row['power_reason']
            and row['host'] == host and seq > row['power_seq'])


def _may_act(row):
    """Whether reconcile may do something for an instance as stored, from
    the narrow columns alone (most answer "none": they agree)."""
    if row['task_id'] is not None:
        return False
    rule = rtable.TABLE.decide(row['vm_state'], row['power_state'],
                               row['power_reason'])
    return rule.decision not in _QUIET


def carried_power(power):
    """(reports, full) of the full power report a heartbeat carries
    (conductor RPC 1.4); anything else is refused as a whole, with what was
    expected, before any of it is stored."""
    expected = ("expected {'reports': [report, ...], 'full': the seq of the "
                "read of every domain, a positive integer below 2**63}")
    if not isinstance(power, dict) or set(power) != {'reports', 'full'}:
        raise exception.Invalid(reason='power %r in a heartbeat: %s'
                                % (power, expected))
    reports, full = power['reports'], power['full']
    if not isinstance(reports, list):
        raise exception.Invalid(reason='power reports %r in a heartbeat: %s'
                                % (reports, expected))
    if not _is_read_seq(full):
        raise exception.Invalid(reason='power full %r in a heartbeat: %s'
                                % (full, expected))
    return reports, full


def _is_read_seq(full):
    """Whether ``full`` is the seq of a read of every domain: a whole
    number from 1 to 2**63 - 1 (power_seq is a BIGINT)."""
    return (isinstance(full, int) and not isinstance(full, bool)
            and 0 < full < states.SEQ_LIMIT)


def _listed(reports):
    """The uuids a full read found as domains (not reported gone)."""
    listed = set()
    for report in reports:
        try:
            if states.normalize_power_state(
                    report['power_state']) != states.power.NOSTATE:
                listed.add(report['uuid'])
        except _BAD_REPORT:
            continue        # logged where the report is sorted
    return listed


# What a failed task left on its host, for settle_on_failure: nothing (a
# task never sent), as a report of a domain that is gone says.
NOTHING_SPAWNED = {'power_state': states.power.NOSTATE}


def settle_on_failure(action, vm_state=None, *, rolled_back=True,
                      power=NOTHING_SPAWNED):
    """The allocation changes of a failed task. A build frees what it
    took, but whatever runs on a host is counted there (issue 19): a build
    that ends in ERROR keeps its allocation unless ``power`` (the result's
    report, or the last one stored for a task that vanished; None: not
    known; by default nothing was spawned) says the domain is gone. A
    rebuild of a buried instance is a build; rolled back, it is PENDING
    again and frees what it took."""
    if action == 'unshelve' and vm_state == states.vm.SHELVED_OFFLOADED:
        # undone: offloaded again, on no host; else (ERROR) counted where
        # its domain may be
        return ([{'free': {}}, {'unplace': True}] if rolled_back
                else settle_on_failure('build', power=power))
    building = action == 'build' or (action == 'rebuild'
                                     and vm_state == states.vm.PENDING)
    if not building:
        return _ON_FAILURE.get(action, [])
    if action == 'rebuild' and rolled_back:
        return _ON_FAILURE['build']
    if power is not None and states.normalize_power_state(
            power['power_state']) == states.power.NOSTATE:
        return _ON_FAILURE['build']
    return []


def _other_host(allocations, host):
    """The host other than ``host`` holding one of ``allocations`` (the
    instance's own or a resize's), or None."""
    hosts = {a['host'] for a in allocations
             if a['purpose'] in ('instance', 'resize')}
    return next(iter(sorted(hosts - {host})), None)


class Results:
    def __init__(self, *, gateway, conf, reconciler):
        self.gateway = gateway
        self.db = gateway.db
        self.conf = conf
        self.reconciler = reconciler
        self.images = images.ImageAccess(conf, self.db)

    # --- task results ----------------------------------------------------------

    def progress(self, ctx, *, host, instance_uuid, step, percent):
        self.gateway.progress(ctx, instance_uuid, host=host, step=step,
                              percent=percent)

    def finished(self, ctx, *, host, instance_uuid, power, values=None):
        """``values`` the agent sends are only hints (a rebuild's image);
        everything else the conductor derives itself, from the row the
        finish reads in its transaction."""
        hints = values or {}
        other = None

        def derive(conn, inst):
            nonlocal other
            action = inst['task_action']
            # read in the finish's own transaction, before it settles the
            # allocations, and only when the end of a move needs it
            other = (_other_host(self.db.allocation_rows_in(conn, instance_uuid),
                                 inst['host'])
                     if action in _ENDS_MOVE else None)
            return (self._values_on_success(conn, inst, action, hints),
                    _ON_SUCCESS.get(action, []))
        before, after = self.gateway.finish(ctx, instance_uuid, host=host,
                                            power=power, derive=derive)
        if before['task_action'] in shelve.ACTIONS:
            self.reconciler.flows.shelving.finished(ctx, before, after)
        # What the hypervisor said during the task is decided on now; not
        # after a migration: that was the old host's word ("vanished"), the
        # new host's next report decides. ``after`` is the row as written:
        # it was held from the finish's read to its commit, so a power
        # report stored while the task ran is in it.
        if (before['task_action'] != 'live_migrate'
                and before['host'] == after['host']):
            self.reconciler.consider(after)
        if other and before['task_action'] in _ENDS_MOVE:
            # the cold move's other copy goes now (its doomed mark is the net)
            self.reconciler.flows.request_destroy(
                ctx, {'uuid': instance_uuid, 'host': other})
        return after

    def _other_copy(self, instance_uuid):
        """The host of a cold move's copy the instance is not placed on
        (the source while RESIZED on the destination, the destination while
        a revert runs on the source), or None."""
        inst = self.db.get_instance(instance_uuid)
        if inst['task_action'] not in _ENDS_MOVE + ('resize', 'migrate'):
            return None
        return _other_host(self.db.list_allocations(
            instance_uuid=instance_uuid), inst['host'])

    def _migration_dest(self, instance_uuid):
        """The host a live migration of the instance was going to."""
        return next((a['host'] for a in self.db.list_allocations(
            instance_uuid=instance_uuid) if a['purpose'] == 'migration'),
            None)

    def _abandon_incoming(self, ctx, host, instance_uuid):
        """A live migration failed with the guest still on its source:
        what its destination prepared (the instance's directory and disk,
        agent RPC 1.6) goes, as a destroy of a domain that is not there."""
        try:
            self.reconciler.flows.compute.destroy_domain(
                ctx, host=host, instance_uuid=instance_uuid)
        except Exception as err:      # best effort: the files only
            LOG.warning('Could not ask host %s to remove what it prepared '
                        'for instance %s: %s', host, instance_uuid, err)

    def _values_on_success(self, conn, inst, action, values):
        if action in shelve.ACTIONS:
            return self.reconciler.flows.shelving.success_values(
                inst, action, values)
        if action == secgroups.ACTION:
            return self.reconciler.flows.security_groups.success_values(
                conn, inst, values)
        return self._built_or_moved(conn, inst, action, values)

    def _built_or_moved(self, conn, inst, action, values):
        image = ({'image_ref': values['image_ref']}
                 if action == 'rebuild' and values.get('image_ref') else {})
        if action in ('build', 'rebuild') and inst['vm_state'] in (
                states.vm.INITIALIZED, states.vm.PENDING):
            # a buried instance's rebuild builds it from the image it names
            return dict(image, launched_at=self.db.clock())
        if image:
            return image
        purpose = _TAKES_FROM_ALLOCATION.get(action)
        if purpose is None:
            return {}
        allocs = self.db.allocations_in(conn, inst['uuid'])
        if purpose not in allocs:
            return {}
        if action == 'live_migrate':
            return {'host': allocs[purpose]['host']}
        # a cold move is placed where its allocation is (a resize in place:
        # the same host)
        return dict(self._flavor_values(allocs[purpose]),
                    host=allocs[purpose]['host'])

    @staticmethod
    def _flavor_values(alloc):
        return {'flavor_name': alloc['flavor_name'], 'vcpus': alloc['vcpus'],
                'memory_mb': alloc['memory_mb'], 'disk_gb': alloc['disk_gb']}

    def failed(self, ctx, *, host, instance_uuid, error, rolled_back, power,
               fault_code=None):
        """``fault_code``: a 4xx the agent says the failure is (the user's
        mistake: a missing or corrupt image); anything else is ignored and
        the fault is the service's (500)."""
        if not (type(fault_code) is int and 400 <= fault_code < 500):
            fault_code = None
        inst = self.db.get_instance(instance_uuid)
        action = inst['task_action'] if inst['task_id'] == ctx.task_id else None
        prepared = (self._migration_dest(instance_uuid)
                    if action == 'live_migrate' and rolled_back else None)
        if action in ('resize', 'migrate'):
            prepared = self._other_copy(instance_uuid)
            self.reconciler.flows.cold.forget_images(instance_uuid)
        after = self.gateway.fail(
            ctx, instance_uuid, host=host, error=error,
            rolled_back=rolled_back, power=power, fault_code=fault_code,
            settle=settle_on_failure(action, inst['vm_state'],
                                     rolled_back=rolled_back, power=power))
        if action in images.WRITES:
            self.images.snapshot_failed(instance_uuid)
        if prepared:
            self._abandon_incoming(ctx, prepared, instance_uuid)
        now = self.db.get_instance(instance_uuid)
        # A failed reconcile task (power_on, power_off) on a domain that did
        # not change would be decided and fail again at once, forever: the
        # next power report decides again instead (power_sync_interval).
        if not (action is not None and gw.TABLE.action(action).system
                and _same_power(inst, now)):
            self.reconciler.consider(now)
        return after

    # --- heartbeats and lost tasks ----------------------------------------------

    def heartbeat(self, ctx, *, host, capacity, started_at, lost_tasks,
                  version=None, power=None):
        """``version``: the agent's package version (None from an agent
        older than RPC 1.2). ``power``: the (reports, full) of a full power
        report the heartbeat carries (RPC 1.4); the answer is then
        :meth:`power_report`'s. Without lost tasks to fail first, the
        heartbeat is stored in the report's first transaction."""
        beat = self._beat(host, capacity, started_at, version)
        if power is not None and not lost_tasks:
            reports, full = power
            return self.power_report(ctx, host=host, reports=reports,
                                     full=full, beat=beat)
        self.db.agent_heartbeat(host, **beat)
        if lost_tasks:
            self.fail_lost_tasks(ctx, host, lost_tasks)
        if power is None:
            return None
        reports, full = power
        return self.power_report(ctx, host=host, reports=reports, full=full)

    def _beat(self, host, capacity, started_at, version):
        """What :meth:`StateDB.agent_heartbeat` takes besides the host."""
        kept = hosts_db.kept_back(capacity,
                                  self.conf.scheduler.ram_allocation_ratio)
        return {**kept,
                'agent_started_at': (
                    datetime.datetime.fromisoformat(started_at)
                    if started_at else None),
                'binary': services.AGENT, 'version': version,
                'new_host_enabled': self.conf.scheduler.enable_new_hosts}

    def fail_lost_tasks(self, ctx, host, task_ids):
        """An agent restarted and lost these tasks: fail them now."""
        wanted = set(task_ids)
        for inst in self.db.list_running_tasks(host=host):
            if inst['task_id'] not in wanted:
                continue
            self._end_vanished(
                ctx, inst, 'the agent on host %s restarted and lost the task'
                % host)

    def _end_vanished(self, ctx, inst, why):
        action = inst['task_action']
        rolled_back = gw.timeout_rolls_back(action)
        if action in ('resize', 'migrate'):
            # its source may have died after uploading the disk
            self.reconciler.flows.cold.forget_images(inst['uuid'])
        return self.gateway.fail_quietly(
            ctx.for_task(inst['task_id']), inst['uuid'], error=why,
            rolled_back=rolled_back,
            # the domain as last reported: a build that vanished after its
            # domain was seen keeps what it holds; one whose domain shows
            # up later is counted then (Reconciler.consider)
            settle=settle_on_failure(
                action, inst['vm_state'], rolled_back=rolled_back,
                power={'power_state': inst['power_state']}))

    def reap(self, ctx, now):
        """Fail tasks with no progress for longer than their timeout."""
        overrides = self.conf.conductor.task_timeouts
        shortest = min(t for t in (gw.TABLE.timeout(a, overrides)
                                   for a in gw.TABLE.actions) if t)
        reaped = 0
        for inst in self.db.list_running_tasks(
                updated_before=now - datetime.timedelta(seconds=shortest)):
            action = inst['task_action']
            timeout = gw.TABLE.timeout(action, overrides)
            idle = (now - inst['task_updated_at']).total_seconds()
            if idle < timeout:
                continue
            if self._end_vanished(ctx, inst, 'no progress for %d s (timeout '
                                  'of %s: %d s)' % (idle, action, timeout)):
                metrics.task_timed_out(action)
            reaped += 1
        return reaped

    # --- power reports -------------------------------------------------------------

    def power_report(self, ctx, *, host, reports, full=False, beat=None):
        """Store each report and reconcile; answer what the agent must do:
        domains to destroy, and domains no instance owns (orphans).

        ``full``, when a number, is the seq of a read of every domain on
        the host: an instance placed there that the read did not find is
        gone (NOSTATE), whether or not an event said so.

        Reports are compared with one narrow read; only a change is
        written row by row. A report that says what is stored (the common
        case of a periodic full report) costs a share of one UPDATE of
        ``power_seq`` per distinct state (:mod:`common.db.power`), and
        reconcile reads the whole row only where the table may act.
        ``beat``: a heartbeat carrying the report, stored in the same first
        transaction (:meth:`common.db.api.StateDB.power_view`)."""
        read_seq = full if full and not isinstance(full, bool) else None
        if read_seq is not None and not _is_read_seq(read_seq):
            raise exception.Invalid(
                reason='power report full %r: expected the seq of the read '
                       'of every domain, a whole number from 1 to 2**63 - 1, '
                       'or false' % (full,))
        reported = {r.get('uuid') for r in reports}
        batch = _Batch()

        def sort(view, done):
            batch.__init__()        # a retried transaction sorts again
            for report in reports:
                uuid = report.get('uuid')
                row = view.get(uuid)
                if uuid in done:        # confirmed by the read itself
                    if _may_act(row):
                        batch.recheck.append(uuid)
                elif _plainly_same(host, report, row):
                    self._unchanged(host, report, row, batch)
                else:
                    self._sort(host, report, row, batch)
            return batch.confirmed
        # One transaction: the host's instances (a full report), any
        # reported domain not among them (elsewhere now, or hard-deleted),
        # and the unchanged ones confirmed (on PostgreSQL, the plain ones
        # by the read itself: common.db.power._quick_confirm).
        view = self.db.power_view(
            host=host if read_seq else None, uuids=reported, confirm=sort,
            read_seq=read_seq, reporter=host,
            beat=None if beat is None else dict(beat, host=host),
            reports=reports,
            also=self._recorded(host, batch, read_seq, reports))
        if read_seq:
            self._not_found(host, view.values(), reported, read_seq)
        recorded = len(batch.strays)
        for report, row in batch.changed:
            self._write(host, report, row, batch)
        self.db.record_strays(host, batch.strays[recorded:])
        batch.destroy.extend(self._recheck(batch.recheck))
        batch.destroy.extend(self.db.doomed_on(host, batch.elsewhere))
        batch.destroy.extend(self._evacuated_away(host, batch.elsewhere))
        conf = self.conf.reconcile
        return {'destroy': batch.destroy,
                'orphans': {'uuids': batch.orphans,
                            'action': conf.orphan_action,
                            'grace': conf.orphan_grace}}

    def _recorded(self, host, batch, read_seq, reports):
        """What the first transaction of a power report writes last: the
        strays the sort found and, for a full read, the evacuations away
        from ``host`` whose domain is gone from it (done with)."""
        def also(conn):
            self.db.record_strays_in(conn, host, batch.strays, read_seq)
            if read_seq:
                self.db.settle_evacuated_in(conn, host, _listed(reports))
        return also

    def _evacuated_away(self, host, uuids):
        """The domains ``host`` reported that an evacuation recorded as
        moved away from it (common/db/evacuations.py): destroyed there."""
        found = self.db.evacuated_away(host, uuids)
        for uuid in found:
            LOG.warning('Host %s reports domain %s, which was evacuated away '
                        'from it: destroying it there', host, uuid)
        return found

    def _sort(self, host, report, row, batch):
        """One instance's report, against the stored ``row``: changed (to
        write), unchanged (to confirm; rechecked if reconcile may act),
        or not stored (an orphan?). A bad report is logged and ignored."""
        try:
            verdict = self._compare(host, report, row)
            if verdict is _SAME:
                self._unchanged(host, report, row, batch)
            elif verdict is _CHANGED:
                batch.changed.append((report, row))
            else:
                self._unplaced(host, report, row, batch)
        except _BAD_REPORT as err:
            LOG.warning('Bad power report from %s ignored: %r (%s)',
                        host, report, err)

    @staticmethod
    def _unchanged(host, report, row, batch):
        """A report that says what ``row`` holds: to confirm, and to
        recheck if reconcile may act."""
        try:
            batch.confirmed.append((row['uuid'], report['seq'],
                                    row['power_state'], row['power_reason']))
            if _may_act(row):
                batch.recheck.append(row['uuid'])
        except _BAD_REPORT as err:
            LOG.warning('Bad power report from %s ignored: %r (%s)',
                        host, report, err)

    def _write(self, host, report, row, batch):
        """Store a changed report and reconcile on the row it made."""
        try:
            stored = self._store(host, report)
        except _BAD_REPORT as err:
            LOG.warning('Bad power report from %s ignored: %r (%s)',
                        host, report, err)
            return
        if stored is not None:
            if self.reconciler.consider(stored):
                batch.destroy.append(report['uuid'])
        else:
            self._unplaced(host, report, self.db.get_instances(
                [report['uuid']]).get(report['uuid']), batch)

    def _recheck(self, uuids):
        """Reconcile unchanged instances the table may act on (a power_off
        that failed, a domain of a deleted instance still there), on their
        whole rows as they stand now; the uuids to destroy."""
        if not uuids:
            return []
        return [uuid for uuid, inst in self.db.get_instances(uuids).items()
                if self.reconciler.consider(inst)]

    def _not_found(self, host, on_host, reported, seq):
        gone = [row['uuid'] for row in on_host
                if row['host'] == host and row['uuid'] not in reported
                and row['power_state'] != states.power.NOSTATE]
        for uuid in gone:
            stored = self.db.store_power_report(
                uuid, host=host, state=states.power.NOSTATE, seq=seq)
            if stored is not None:
                self.reconciler.consider(stored)

    @staticmethod
    def _compare(host, report, row):
        """_CHANGED, _SAME, or None when the report is not for an instance
        of ``host`` or is older than what is stored."""
        power_state = states.normalize_power_state(report['power_state'])
        reason = report.get('reason')
        if row is None or row['host'] != host:
            return None
        if states.normalize_power_seq(report['seq']) <= row['power_seq']:
            return None
        if (power_state, reason) == (row['power_state'], row['power_reason']):
            return _SAME
        return _CHANGED

    def _store(self, host, report):
        """The instance as it stands after ``report``; None if the
        conditional write found it moved or newer."""
        return self.db.store_power_report(
            report['uuid'], host=host,
            state=states.normalize_power_state(report['power_state']),
            reason=report.get('reason'), seq=report['seq'])

    @staticmethod
    def _unplaced(host, report, row, batch):
        """A report that was not stored: older than what is stored (nothing
        to do), or of a domain where no live instance of its own is placed
        (issue 19), which is recorded (a stray, for ``check``) and then:
        of no instance at all, an orphan (the ``orphan_action`` policy's);
        of a hard-deleted instance, destroyed, wherever it ended up (a
        move the delete preempted); of a live instance placed on another
        host (a renamed host, a preempted move), never an orphan: it is
        destroyed only where a preempted move doomed it
        (:meth:`common.db.domains.DomainsMixin.doomed_on`). Nothing while
        the instance's task runs: a move's destination has the domain
        before the instance moves there."""
        if row is not None and (row['host'] == host
                                or row['task_id'] is not None):
            return
        uuid = report['uuid']
        state = states.normalize_power_state(report['power_state'])
        batch.strays.append((uuid, state,
                             states.normalize_power_seq(report['seq'])))
        if state == states.power.NOSTATE:
            return
        if row is None:
            batch.orphans.append(uuid)
        elif row['vm_state'] == states.vm.HARD_DELETED:
            batch.destroy.append(uuid)
        else:
            batch.elsewhere.append(uuid)

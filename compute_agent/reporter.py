"""The agent's reports to the conductor: heartbeats with capacity, and power.

Capacity: the driver's, less the bytes of the host's image cache (whole
GiB) from the disk. The image cache's periodic pass (removing images unused
for ``[image] cache_max_age``) runs here too, every ``cache_check_interval``.

Power is reported bottom-up, always: at once when the driver sees a domain
change (events, or the fake hypervisor's watcher), and in full every
``power_sync_interval`` as a safety net. The full report rides on a
heartbeat (conductor RPC 1.4), which goes early when the report is due: one
message per host per period for both, since the message costs the conductor
more than the report it carries. Capped below 1.4, the full report goes on
its own, as ``power_report``. Each report carries a sequence
number that only grows (wall-clock nanoseconds, forced monotonic in this
process), so a late report never undoes a newer one, even across restarts.
While the conductor is unreachable the latest state per instance is kept and
sent when it answers again; nothing seen is lost.

The host's DHCP entries (:mod:`compute_agent.net.dhcp`) ride along: each
domain event reads the domain's ports again (a domain that migrated in or
vanished), and each full report checks them all.
"""

import collections
import datetime
import logging
import threading
import time

from common import context as tcontext
from common import metrics
from common import states
from common import version
from compute_agent import configdrive
from compute_agent import leftovers
from compute_agent.net import dhcp as dhcp_mod
from compute_agent.virt.driver import DomainInfo

LOG = logging.getLogger(__name__)

_seq_lock = threading.Lock()
_last_seq = 0


def next_seq():
    """A number larger than every one this process handed out before, and
    (clocks permitting) than any a previous run of the agent did."""
    global _last_seq
    with _seq_lock:
        _last_seq = max(_last_seq + 1, time.time_ns())
        return _last_seq


def report_of(info):
    """A power report numbered now; see :func:`read_reports` for why
    reading and numbering go together."""
    return {'uuid': info.uuid, 'power_state': info.power_state,
            'reason': info.reason, 'seq': next_seq()}


_read_lock = threading.Lock()


def read_reports(read):
    """Call ``read()`` (it returns DomainInfos) and number what it returns,
    both under one lock: a report read later always has the larger seq, so
    a read that raced a change can never overwrite a newer one (in the
    queue below or in the database)."""
    with _read_lock:
        return [report_of(info) for info in read()]


def read_all(driver):
    """Every domain of the host, numbered, and the seq the read was made
    at: the conductor takes an instance placed on the host that the read
    did not find as gone (NOSTATE) at that seq."""
    with _read_lock:
        seq = next_seq()
        return seq, [report_of(info) for info in driver.list_domains()]


def read_domain(driver, uuid):
    """The current report of one domain (NOSTATE when it is gone)."""
    def read():
        info = driver.get_domain(uuid)
        return [info if info is not None
                else DomainInfo(uuid, states.power.NOSTATE, None)]
    return read_reports(read)[0]


class Delivered:
    """What the conductor was last told of each domain's power, by a report
    or a task's result (its seq, power_state and reason), so that an event
    that reads the state it already has is not sent again: a build's own
    "started" event, after the task's result said RUNNING, is the common
    case. The full report is sent whatever this says: it is the safety net
    for whatever the conductor did with what it was told."""

    def __init__(self):
        self._lock = threading.Lock()
        self._known = {}         # uuid -> (seq, power_state, reason)
        self._tasks = collections.Counter()     # uuid -> tasks running
        self._held = set()       # uuids with an event during their task
        # Called with a uuid whose event was held, once its task ended.
        self.on_release = None

    # --- events of a domain whose task runs here --------------------------------
    # Its result carries the power state read at its end, and reconcile
    # does not act on an instance while a task holds it: an event then is
    # noted, and read again only once the result was sent (it is then not
    # sent at all if it says what the result said). A task that runs long
    # leaves the stored power_state to the periodic full report meanwhile.

    def busy(self):
        """The uuids with a task running."""
        with self._lock:
            return set(self._tasks)

    def task_began(self, uuid):
        with self._lock:
            self._tasks[uuid] += 1

    def task_ended(self, uuid):
        """After the task's result was sent (or not)."""
        with self._lock:
            self._tasks[uuid] -= 1
            if self._tasks[uuid] > 0:
                return
            del self._tasks[uuid]
            if uuid not in self._held:
                return
            self._held.discard(uuid)
        if self.on_release is None:
            return
        try:
            self.on_release(uuid)
        except Exception as err:    # the hypervisor away: not this task's
            LOG.warning('Domain %s not read again after its task: %s; the '
                        'full report will carry it', uuid, err)

    def hold(self, uuid):
        """True, and noted, if a task runs on ``uuid``: its event waits."""
        with self._lock:
            if self._tasks.get(uuid):
                self._held.add(uuid)
                return True
            return False

    def record(self, reports, *, full=None):
        """``reports`` were stored by a conductor. ``full``: the seq of a
        read of every domain, which they are: a domain it did not find is
        forgotten (unless told of since)."""
        with self._lock:
            for report in reports:
                known = self._known.get(report['uuid'])
                if known is None or known[0] < report['seq']:
                    self._known[report['uuid']] = (
                        report['seq'], report['power_state'],
                        report['reason'])
            if full is not None:
                found = {report['uuid'] for report in reports}
                for uuid in [u for u, known in self._known.items()
                             if u not in found and known[0] < full]:
                    del self._known[uuid]

    def has(self, report):
        """Whether the conductor was told this state, by an older report."""
        known = self._known.get(report['uuid'])
        return known is not None and known[0] < report['seq'] and (
            known[1:] == (report['power_state'], report['reason']))


def kept_back(group):
    """What a heartbeat's capacity says besides the totals (issue 25):
    the resources ``[compute]`` reserves for the host (``reserved_vcpus``,
    ``reserved_memory_mb``, ``reserved_disk_gb``: MiB rounded up to whole
    GiB, as Nova) and the host's own allocation ratios where set
    (``cpu_ratio``, ``ram_ratio``, ``disk_ratio``). A conductor older than
    this ignores them."""
    found = {'reserved_vcpus': group.reserved_host_cpus,
             'reserved_memory_mb': group.reserved_host_memory_mb,
             'reserved_disk_gb': -(-group.reserved_host_disk_mb // 1024)}
    for kind in ('cpu', 'ram', 'disk'):
        ratio = getattr(group, '%s_allocation_ratio' % kind)
        if ratio is not None:
            found['%s_ratio' % kind] = float(ratio)
    return found


class Reporter:
    """Heartbeats and power reports of one host, each in its own thread."""

    def __init__(self, *, host, driver, conductor, conf, journal,
                 delivered=None, image_cache=None, dhcp=None):
        self.host = host
        self.dhcp = dhcp if dhcp is not None else dhcp_mod.NoDhcp()
        self.image_cache = image_cache
        self.delivered = delivered if delivered is not None else Delivered()
        self.delivered.on_release = self._read_and_send
        self.driver = driver
        self.conductor = conductor
        self.conf = conf
        self.journal = journal
        self.started_at = datetime.datetime.now(datetime.UTC).replace(
            tzinfo=None).isoformat()
        self._pending = {}           # uuid -> latest unsent report
        self._flush_lock = threading.Lock()
        self.full_reports_sent = 0     # for operators' logs and the tests
        self._orphans_seen = {}      # uuid -> when first reported unowned
        self._pending_lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads = []
        self.ctx = tcontext.get_admin_context()

    # --- heartbeats ----------------------------------------------------------

    def heartbeat(self):
        try:
            self._beat()
        except Exception as err:
            LOG.warning('Heartbeat of %s not delivered: %s', self.host, err)
            return False
        return True

    def _beat(self, power=None):
        """Send one heartbeat (carrying ``power``, a full report, if given)
        and return its answer; raise if it was not delivered."""
        cap = self.driver.get_capacity()
        lost = self.journal.lost()      # kept there until delivered
        capacity = dict({'vcpus': cap.vcpus, 'memory_mb': cap.memory_mb,
                         'disk_gb': self._disk_gb(cap.disk_gb)},
                        **({} if self.conf is None
                           else kept_back(self.conf.compute)))
        try:
            answer = self.conductor.heartbeat(
                self.ctx, host=self.host, capacity=capacity,
                started_at=self.started_at, lost_tasks=lost,
                version=version.package_version(), power=power)
        except Exception:
            metrics.agent_report(self.host, 'heartbeat', False)
            raise
        metrics.agent_report(self.host, 'heartbeat', True)
        if lost:
            LOG.info('Reported %d task(s) lost by the previous run of %s',
                     len(lost), self.host)
            self.journal.forget_lost(lost)
        return answer

    def _disk_gb(self, total):
        """The disk left for instances: the image cache's bytes are used
        (whole GiB, rounded up)."""
        if self.image_cache is None:
            return total
        cached = self.image_cache.used_bytes()
        return max(0, total - -(-cached // 1024 ** 3))

    def sweep_leftovers(self):
        """Config drives and console logs of instances this host does
        not own (:mod:`compute_agent.leftovers`)."""
        leftovers.sweep(conf=self.conf, host=self.host, driver=self.driver,
                        busy=self.delivered.busy)

    def clean_image_cache(self):
        """The image cache's periodic pass (``[image]
        cache_check_interval``): images unused for ``cache_max_age`` go."""
        if self.image_cache is not None:
            self.image_cache.clean()

    # --- power ---------------------------------------------------------------

    def domain_changed(self, info):
        """Driver callback: queue the domain's state, read again now (the
        event may be stale), and send it at once; if a task runs on the
        domain, once the task's result was sent (:class:`Delivered`)."""
        metrics.AGENT_EVENTS.labels(self.host).inc()
        # A domain that appeared (migrated in) or vanished (destroyed,
        # migrated away) gains or loses its DHCP entries now; one that
        # only changed power finds them as they were (nothing is written).
        self.dhcp.refresh_from(self.driver, info.uuid)
        if not self.delivered.hold(info.uuid):
            self._read_and_send(info.uuid)

    def _read_and_send(self, uuid):
        if self._queue([read_domain(self.driver, uuid)], news_only=True):
            self._wake.set()

    def full_report(self):
        # Read, queue and send under the flush lock: the batch that says
        # "this is every domain" then holds every domain read, never one
        # that the event sender took away in between.
        with self._flush_lock:
            seq, reports = read_all(self.driver)
            self._queue(reports)
            if self.conductor.carries_power():
                sent = self._flush_locked(seq, send=self._beat_with)
            else:
                sent = self._flush_locked(seq)
        # The DHCP entries' safety net, as the full report is power's: a
        # domain that migrated in or vanished unseen is found here.
        self.dhcp.sync_from(self.driver)
        if sent:
            self.full_reports_sent += 1
            # Xen keeps guests that shut down ("preserve") until reported:
            # reported now, so they can go (seed 003's periodic cleanup).
            self.driver.cleanup_preserved()
        return sent

    def _queue(self, reports, *, news_only=False):
        """Keep the newest report per domain until it is sent; with
        ``news_only``, not one that says what the conductor was told
        already, unless an older one waits (it must then be replaced).
        Returns how many were queued."""
        queued_now = 0
        with self._pending_lock:
            for report in reports:
                queued = self._pending.get(report['uuid'])
                if queued is None and news_only and (
                        self.delivered.has(report)):
                    continue
                if queued is None or queued['seq'] < report['seq']:
                    self._pending[report['uuid']] = report
                    queued_now += 1
        return queued_now

    def flush(self, *, full=False):
        """Send every queued report; keep them if the conductor is away.
        ``full``: the seq of a read of every domain (see :func:`read_all`)."""
        # One report batch in flight per agent, so that the conductor gets
        # them in the order they were read (it skips unchanged states and
        # relies on a later batch never carrying an older state).
        with self._flush_lock:
            return self._flush_locked(full)

    def _beat_with(self, batch, full):
        return self._beat(power={'reports': batch, 'full': full})

    def _send(self, batch, full):
        return self.conductor.power_report(self.ctx, host=self.host,
                                           reports=batch, full=full)

    def _flush_locked(self, full, send=None):
        with self._pending_lock:
            batch = list(self._pending.values())
        if not batch and not full:
            return True
        try:
            answer = (send or self._send)(batch, full)
        except Exception as err:
            LOG.warning('Power report of %s not delivered, kept for the '
                        'next try: %s', self.host, err)
            metrics.agent_report(self.host, 'power', False)
            return False
        metrics.agent_report(self.host, 'power', True)
        with self._pending_lock:
            for report in batch:
                if self._pending.get(report['uuid']) is report:
                    del self._pending[report['uuid']]
            # Under the lock: an event read meanwhile must see either the
            # report still waiting or the conductor told.
            self.delivered.record(batch, full=full or None)
        for uuid in answer.get('destroy', []):
            self._destroy_leftover(uuid)
        self._handle_orphans(answer.get('orphans'), batch)
        return True

    def _handle_orphans(self, orphans, batch):
        """Apply the orphan policy to domains unowned for the grace period.

        The agent remembers when it first saw each orphan; a domain that is
        owned again (or gone) is forgotten."""
        if not orphans:
            return
        now = time.monotonic()
        reported = {report['uuid'] for report in batch}
        current = set(orphans['uuids'])
        for uuid in reported - current:
            self._orphans_seen.pop(uuid, None)
        for uuid in current:
            first = self._orphans_seen.setdefault(uuid, now)
            if now - first < orphans['grace']:
                continue
            self._act_on_orphan(uuid, orphans['action'])

    def _act_on_orphan(self, uuid, action):
        try:
            if action == 'destroy':
                LOG.warning('Destroying orphan domain %s (no instance owns it)',
                            uuid)
                self.driver.destroy(uuid)
                configdrive.remove(self.conf, self.host, uuid)
                self.dhcp.refresh_from(self.driver, uuid)
                self._orphans_seen.pop(uuid, None)
            elif action == 'stop':
                info = self.driver.get_domain(uuid)
                if info is not None and info.power_state == states.power.RUNNING:
                    LOG.warning('Stopping orphan domain %s', uuid)
                    self.driver.power_off(
                        uuid, timeout=self.conf.compute.shutdown_timeout)
            else:
                LOG.warning('Domain %s on host %s belongs to no instance',
                            uuid, self.host)
        except Exception:
            LOG.exception('Orphan policy %s failed on domain %s', action, uuid)

    def _destroy_leftover(self, uuid):
        LOG.info('Destroying domain %s: its instance was deleted', uuid)
        try:
            self.driver.destroy(uuid)
            configdrive.remove(self.conf, self.host, uuid)
        except Exception:
            LOG.exception('Could not destroy leftover domain %s', uuid)
        self.dhcp.refresh_from(self.driver, uuid)

    # --- threads ---------------------------------------------------------------

    def _every(self, interval, fn, name):
        def loop():
            while not self._stop.is_set():
                try:
                    fn()
                except Exception:
                    LOG.exception('%s of %s failed', name, self.host)
                if self._stop.wait(interval):
                    return
        self._spawn(loop, name)

    def _sender(self):
        retry = 0.1
        while not self._stop.is_set():
            self._wake.wait(timeout=retry)
            self._wake.clear()
            if self._stop.is_set():
                return
            if self.flush():
                retry = 0.5
            else:
                retry = min(retry * 2 or 0.1,
                            self.conf.compute.report_retry_max)

    def _spawn(self, target, name):
        thread = threading.Thread(target=target, daemon=True,
                                  name='%s-%s' % (name, self.host))
        thread.start()
        self._threads.append(thread)

    def _beats(self):
        """Heartbeats, each carrying the full report when it is due (and
        going early for it). A full report that fails is retried at the
        next period, as are its reports by the sender as soon as the
        conductor answers again. The first heartbeat goes at once, before
        the first read of every domain, which may take a while (libvirt):
        the host is known to the scheduler from the start."""
        self.heartbeat()
        full_due = time.monotonic()
        while not self._stop.is_set():
            try:
                if time.monotonic() >= full_due:
                    full_due = (time.monotonic()
                                + self.conf.compute.power_sync_interval)
                    self.full_report()
                else:
                    self.heartbeat()
            except Exception:
                LOG.exception('Heartbeat of %s failed', self.host)
            wait = min(self.conf.compute.heartbeat_interval,
                       full_due - time.monotonic())
            if self._stop.wait(max(wait, 0)):
                return

    def start(self):
        if self.conductor.carries_power():
            self._spawn(self._beats, 'heartbeat')
        else:
            self._every(self.conf.compute.heartbeat_interval, self.heartbeat,
                        'heartbeat')
            self._every(self.conf.compute.power_sync_interval,
                        self.full_report, 'power-sync')
        self._spawn(self._sender, 'power-sender')
        if self.conf.compute.leftover_sweep_interval:
            self._every(self.conf.compute.leftover_sweep_interval,
                        self.sweep_leftovers, 'leftover-sweep')
        if self.image_cache is not None and self.conf.image.cache_max_age:
            self._every(self.conf.image.cache_check_interval,
                        self.clean_image_cache, 'image-cache')
        self.driver.watch(self.domain_changed)

    def stop(self):
        self._stop.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(timeout=5)

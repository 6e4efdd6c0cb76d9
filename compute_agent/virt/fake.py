"""The fake hypervisor: one host's domains in files other processes share.

Owns the fake's world: what a domain record holds and how it changes (the
power effect of every operation, :data:`POWER_EFFECTS`, one line each),
injected latency and faults, and the watcher thread. The files themselves
(one per domain under ``<state_dir>/fakevirt/<host>/``, their locking,
atomic writes and change journal) belong to
:mod:`compute_agent.virt.fake_store`, whose docstring says why they are laid
out so. ``tristate-fakevirt`` (:mod:`compute_agent.cmd.fakevirt`) edits the
same files as a guest or a host admin would, so an agent sees what it would
on a real host: guests that shut down, crash, vanish or start alone.

Reasons: an operation the agent asked for leaves ``reason`` None; a reason
(``guest``, ``crashed``) says the change was made *outside* the agent, which
is what reconcile keys on. Exception: a ``fail_no_rollback`` fault leaves the
domain CRASHED with reason ``unknown`` (a half-done operation).

A domain's record (``domains/<uuid>.json``)::

    {uuid, name, power_state, reason, flavor, previous_flavor, image_ref,
     rescued, rescue_image_ref, snapshots, seq, last_op, broken_by,
     updated_at, rescue_password_sha256, snapshot_ids (when set),
     ports (the build's ports, checked: what the libvirt driver makes
     ``<interface>`` elements of; moves with a migration; each port's
     ``security_groups`` says its link: up in ``default``, down in none),
     numa_cells (the guest's NUMA cells, [] for one: common/numa.py)}

and the host's faults (in ``host.json``)::

    {operation: {"mode": "hang", "remaining": null, "id": 7}}

The host's ``seq`` is its counter, bumped on every change; a domain's ``seq``
is the counter at its last change, so it grows with every change of the
domain, also across a migration (the destination's counter is raised above
it). Every operation reads and writes only its own domain's file and the
host's small file, whatever the number of domains on the host. Safe between
threads and processes.

Faults: ``remaining`` None fires on every call; a count goes down to 0 and the
spent entry stays until cleared, so a ``hang`` holds until someone clears it
(``tristate-fakevirt clear-faults HOST``, :meth:`HostStore.clear_faults`).
:meth:`FakeDriver.init_host` writes the constructor's (``[fake_driver]``)
faults to the store, so they are cleared the same way.
"""

import contextlib
import dataclasses
import hashlib
import logging
import os
import struct
import threading
import time

from common import states
from common.states import power
from compute_agent.virt import consolelog
from compute_agent.net import ports as net_ports
from compute_agent.virt import driver
from compute_agent.virt import fake_store
from compute_agent.virt.driver import VirtError

LOG = logging.getLogger(__name__)

STORE_SUBDIR = fake_store.STORE_SUBDIR
FAULT_MODES = ('fail', 'fail_no_rollback', 'hang')
DEFAULT_CAPACITY = driver.Capacity(vcpus=16, memory_mb=65536, disk_gb=1000)
SNAPSHOT_SIZE = 64 * 1024      # bytes of a snapshot's disk, as the guest sees it
_FLAVOR_KEYS = ('name', 'vcpus', 'memory_mb', 'disk_gb')
DISK_COUNTERS = ('read_bytes', 'read_requests', 'write_bytes',
                 'write_requests', 'errors_count')
NIC_COUNTERS = ('rx_octets', 'rx_packets', 'rx_errors', 'rx_drop',
                'tx_octets', 'tx_packets', 'tx_errors', 'tx_drop')

_ANY = None
# operation: (power states it may start from, _ANY for any;
#             power_state it leaves, None for unchanged). Reason -> None
# whenever power_state is set: the agent asked for it.
POWER_EFFECTS = {
    'spawn': (_ANY, power.RUNNING),           # a new domain
    'destroy': (_ANY, None),                  # the record is removed
    'power_off': (_ANY, power.SHUTDOWN),      # already off: succeeds
    'power_on': (_ANY, power.RUNNING),
    'reboot': (_ANY, power.RUNNING),          # soft or hard, from anything
    'pause': ({power.RUNNING}, power.PAUSED),
    'unpause': ({power.PAUSED}, power.RUNNING),
    'suspend': ({power.RUNNING, power.PAUSED}, power.SUSPENDED),
    'resume': ({power.SUSPENDED}, power.RUNNING),
    'rescue': (_ANY, power.RUNNING),          # boots the rescue image
    'unrescue': (_ANY, power.RUNNING),
    'rebuild': (_ANY, None),                  # new image, same power
    'resize': (_ANY, None),                   # flavor swap, same power
    'confirm_resize': (_ANY, None),
    'revert_resize': (_ANY, None),
    'migrate_out': ({power.RUNNING, power.PAUSED}, None),  # live only
    'snapshot': (_ANY, None),
    'export_disk': (_ANY, None),              # a cold move's source copy
    'migrate_in': (_ANY, None),               # started if asked
    'write_disk': (_ANY, None),               # a guest writes its disk
    'set_password': ({power.RUNNING}, None),  # needs the guest agent
    'set_security_groups': (_ANY, None),      # links up or down, any power
}
OPERATIONS = tuple(POWER_EFFECTS)

# operation: (what must hold of the record, why it cannot run otherwise).
GUARDS = {
    'rescue': (lambda rec: not rec['rescued'], 'already rescued'),
    'unrescue': (lambda rec: rec['rescued'], 'not rescued'),
    'resize': (lambda rec: rec['previous_flavor'] is None,
               'a resize waits to be confirmed or reverted'),
    'confirm_resize': (lambda rec: rec['previous_flavor'] is not None,
                       'no resize to confirm'),
    'revert_resize': (lambda rec: rec['previous_flavor'] is not None,
                      'no resize to revert'),
}


store_dir = fake_store.store_dir
# Beside the hosts' stores, not in one (a migrated guest keeps its log;
# every directory of fakevirt/ is a host).
CONSOLE_SUBDIR = 'fakevirt-consoles'
# A domain's disk content, when it has any of its own (a guest wrote it,
# or a cold migration brought it): fakevirt-disks/<host>/<uuid>.qcow2.
# Without one the disk is :func:`initial_disk` of its image.
DISK_SUBDIR = 'fakevirt-disks'
# Operations after which a running guest has (re)booted.
BOOTS = frozenset({'spawn', 'power_on', 'reboot', 'rescue', 'unrescue',
                   'rebuild'})


def console_log(state_dir, uuid):
    """The fake guest's console log file."""
    return os.path.join(state_dir, CONSOLE_SUBDIR, '%s.log' % _checked(uuid))


def _checked(uuid):
    fake_store._check_name('domain', uuid)   # noqa: SLF001 (same package)
    return uuid


list_hosts = fake_store.list_hosts


def find_host(state_dir, uuid):
    """The host whose store holds domain ``uuid``, or None."""
    for host in list_hosts(state_dir):
        if HostStore(state_dir, host).domain(uuid) is not None:
            return host
    return None


class HostStore(fake_store.HostFiles):
    """One host's domains and faults, in files shared between processes;
    what a guest or a host admin changes from outside the agent."""

    # --- changes made from outside the agent (tristate-fakevirt) ------------

    def set_power(self, uuid, power_state, reason, *, by):
        """Set a domain's power as a guest or an admin would; its record."""
        with self.update(uuid) as data:
            rec = _get(data, uuid, self.host)
            rec['power_state'], rec['reason'] = power_state, reason
            _touch(data, rec, by)
            return dict(rec)

    def remove(self, uuid):
        """Make a domain vanish; its last record."""
        with self.update(uuid) as data:
            rec = _get(data, uuid, self.host)
            del data['domains'][uuid]
            data['seq'] += 1
            return rec

    def set_fault(self, operation, mode, *, count=None):
        """Make ``operation`` fail with ``mode`` (``count`` times, or always)."""
        _check_fault(operation, mode)
        if count is not None and count < 1:
            raise ValueError('fault count must be >= 1, not %r' % count)
        with self.update() as data:
            _add_fault(data, operation, mode, count)

    def seed_faults(self, faults):
        """Set ``faults`` ({operation: mode}, always firing) unless set."""
        with self.update() as data:
            for operation, mode in faults.items():
                fault = data['faults'].get(operation) or {}
                if (fault.get('mode'), fault.get('remaining', 0)) != (mode, None):
                    _add_fault(data, operation, mode, None)

    def clear_faults(self):
        """Remove every fault; operations hung on one give up. How many."""
        with self.update() as data:
            cleared = len(data['faults'])
            data['faults'] = {}
            return cleared


def _get(data, uuid, host):
    rec = data['domains'].get(uuid)
    if rec is None:
        raise driver.DomainNotFound(uuid, host)
    return rec


def _add_fault(data, operation, mode, count):
    data['seq'] += 1     # the fault's id: a hang waits while it is there
    data['faults'][operation] = {'mode': mode, 'remaining': count,
                                 'id': data['seq']}


def _touch(data, rec, by):
    """Record a change of ``rec`` made by ``by`` (an operation or action)."""
    data['seq'] += 1
    rec['seq'], rec['last_op'], rec['updated_at'] = data['seq'], by, time.time()


def _check_operation(operation):
    if operation not in POWER_EFFECTS:
        raise ValueError('unknown operation %r: expected one of %s'
                         % (operation, ', '.join(OPERATIONS)))


def _check_fault(operation, mode):
    _check_operation(operation)
    if mode not in FAULT_MODES:
        raise ValueError('unknown fault mode %r: expected one of %s'
                         % (mode, ', '.join(FAULT_MODES)))


def _flavor_dict(flavor):
    if dataclasses.is_dataclass(flavor):
        flavor = dataclasses.asdict(flavor)
    return {key: flavor[key] for key in _FLAVOR_KEYS}


def _new_record(uuid, name, flavor, image_ref):
    return {'uuid': uuid, 'name': name, 'power_state': power.NOSTATE,
            'reason': None, 'flavor': _flavor_dict(flavor),
            'previous_flavor': None, 'image_ref': image_ref,
            'rescued': False, 'rescue_image_ref': None, 'snapshots': [],
            'seq': 0, 'last_op': None, 'broken_by': None, 'updated_at': None}


def _info(rec):
    return driver.DomainInfo(rec['uuid'], rec['power_state'], rec['reason'])


def _apply_power(operation, rec, host):
    sources, target = POWER_EFFECTS[operation]
    if sources is not _ANY and rec['power_state'] not in sources:
        raise VirtError('cannot %s domain %s on host %s: it is %s'
                        % (operation, rec['uuid'], host,
                           states.power_state_name(rec['power_state'])))
    if target is not None:
        rec['power_state'], rec['reason'] = target, None


def _check_guard(operation, rec):
    guard = GUARDS.get(operation)
    if guard is not None and not guard[0](rec):
        raise VirtError('cannot %s domain %s: %s'
                        % (operation, rec['uuid'], guard[1]))


class FakeDriver(driver.ComputeDriver):
    """A hypervisor host made of one :class:`HostStore` file.

    Every operation: sleep its latency, fire its fault if one is set, then
    change the record under the store's lock. Thread-safe; several drivers
    (in one process or many) may share a state_dir and a host.
    """

    name = 'fake'

    def __init__(self, *, state_dir, capacity=None, latency=None, faults=None,
                 poll_interval=0.1, hang_timeout=3600.0, sleep=None,
                 console=None):
        for operation, mode in (faults or {}).items():
            _check_fault(operation, mode)
        for operation, seconds in (latency or {}).items():
            _check_operation(operation)
            if seconds < 0:
                raise ValueError('latency of %s must be >= 0' % operation)
        self.state_dir = state_dir
        self.capacity = capacity or DEFAULT_CAPACITY
        self.latency = dict(latency or {})
        self.faults = dict(faults or {})
        self.poll_interval = poll_interval
        self.hang_timeout = hang_timeout
        self.console = console or consolelog.Settings()
        self.host = None
        self._store = None
        self._watcher = None
        self._stopping = threading.Event()
        self._watch_lock = threading.Lock()
        # Latency waits end early when the host stops; tests inject a fake.
        self._sleep = sleep or self._stopping.wait

    @classmethod
    def from_conf(cls, conf):
        """Build from ``[fake_driver]`` and ``[DEFAULT] state_dir``."""
        group = conf.fake_driver
        return cls(state_dir=conf.state_dir,
                   capacity=driver.Capacity(vcpus=group.vcpus,
                                            memory_mb=group.memory_mb,
                                            disk_gb=group.disk_gb),
                   latency=dict(group.latency), faults=dict(group.faults),
                   poll_interval=group.poll_interval,
                   hang_timeout=group.hang_timeout,
                   console=consolelog.Settings.from_conf(conf))

    @property
    def store(self):
        if self._store is None:
            raise VirtError('fake driver used before init_host()')
        return self._store

    def init_host(self, host):
        super().init_host(host)
        self._stopping.clear()
        self._store = HostStore(self.state_dir, host)
        self._store.seed_faults(self.faults)

    def cleanup_host(self):
        """Stop the watcher and wake every hung or sleeping operation."""
        self._stopping.set()
        with self._watch_lock:
            watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.join(timeout=5)

    # --- queries --------------------------------------------------------------

    def get_capacity(self):
        return self.capacity

    def list_domains(self):
        return [_info(rec) for rec in self.store.domains().values()]

    def get_domain(self, uuid):
        rec = self.store.domain(uuid)
        return None if rec is None else _info(rec)

    def domain_record(self, uuid):
        """The whole stored record of ``uuid`` (a copy), or None."""
        return self.store.domain(uuid)

    def watch(self, callback):
        """Report every change of (power_state, reason), and every domain that
        appears or vanishes, from a daemon thread polling the store."""
        with self._watch_lock:
            if self._watcher is None:
                self._watcher = _Watcher(self.store, self._stopping,
                                         self.poll_interval)
            self._watcher.callbacks.append(callback)
            if not self._watcher.is_alive():
                self._watcher.start()

    # --- lifecycle --------------------------------------------------------------

    def get_diagnostics(self, uuid):
        """From the record: the flavor's vCPUs and memory (used while
        the domain runs), one disk, a NIC per port (a tap device named
        as Nova names one, ``tap`` and the port id's first 11 characters,
        and its MAC); every counter 0
        (nothing runs)."""
        rec = self.store.domain(uuid)
        if rec is None:
            raise driver.DomainNotFound(uuid, self.host)
        flavor = rec['flavor']
        running = rec['power_state'] in (power.RUNNING, power.PAUSED)
        memory = flavor['memory_mb'] * 1024
        return {
            'power_state': rec['power_state'], 'hypervisor': 'fake',
            'hypervisor_os': None, 'memory_kib': memory,
            'memory_used_kib': memory if running else 0, 'memory_stats': {},
            'cpus': [{'id': i, 'time': 0} for i in range(flavor['vcpus'])],
            'disks': [dict(dict.fromkeys(DISK_COUNTERS, 0), dev='vda')],
            'nics': [dict(dict.fromkeys(NIC_COUNTERS, 0), mac_address=port[
                'mac'], dev='tap' + port['id'][:11]) for port in rec.get(
                    'ports') or ()]}

    def spawn(self, uuid, *, name, flavor, image_ref, config_drive=None,
              ports=(), numa_cells=None):
        rec = _new_record(uuid, name, flavor, image_ref)
        rec['ports'] = net_ports.checked(ports)
        # the guest's NUMA cells, as a libvirt domain's <cpu><numa> says
        rec['numa_cells'] = list(numa_cells or ())
        # the config drive's path, as a libvirt domain's CD-ROM would hold it
        rec['config_drive'] = config_drive
        self._run('spawn', uuid, new=rec)

    def domain_ports(self, uuid=None):
        """{uuid: [port]} of the host's domains that have ports (or of
        ``uuid`` alone: {} when it is gone or has none)."""
        if uuid is not None:
            rec = self.store.domain(uuid)
            recs = {} if rec is None else {uuid: rec}
        else:
            recs = self.store.domains()
        return {u: rec['ports'] for u, rec in recs.items()
                if rec.get('ports')}

    def destroy(self, uuid):
        self._prelude('destroy', uuid)
        with self.store.update(uuid) as data:
            if data['domains'].pop(uuid, None) is not None:
                data['seq'] += 1
            _unlink(self._disk_path(uuid))
        consolelog.remove(self._console_log(uuid))

    # --- disks (cold migration) ---------------------------------------------------

    def _disk_path(self, uuid):
        return os.path.join(self.state_dir, DISK_SUBDIR, self.host,
                            '%s.qcow2' % _checked(uuid))

    def disk_content(self, uuid):
        """The bytes of the domain's disk (a qcow2 file), None when there
        is no such domain."""
        rec = self.store.domain(uuid)
        if rec is None:
            return None
        try:
            with open(self._disk_path(uuid), 'rb') as f:
                return f.read()
        except FileNotFoundError:
            return initial_disk(uuid, rec['image_ref'])

    def write_disk(self, uuid, data):
        """What a guest writing its disk does: the disk holds ``data``
        (at most 64 KiB, as a qcow2 cluster)."""
        def change(rec):
            _write_file(self._disk_path(uuid), qcow2_image(data))
        self._run('write_disk', uuid, change)

    def export_disk(self, uuid, *, target):
        content = self.disk_content(uuid)
        if content is None:
            raise driver.DomainNotFound(uuid, self.host)
        self._run('export_disk', uuid)
        _write_file(target, content)

    def migrate_in(self, uuid, *, name, flavor, image_ref, disk, ports=(),
                   start=True, config_drive=None):
        rec = _new_record(uuid, name, flavor, image_ref)
        rec['ports'] = net_ports.checked(ports)
        rec['config_drive'] = config_drive

        def change(rec):
            with open(disk, 'rb') as f:
                _write_file(self._disk_path(uuid), f.read())
            rec['power_state'] = power.RUNNING if start else power.SHUTDOWN
            rec['reason'] = None
        self._run('migrate_in', uuid, change, new=rec)

    def power_off(self, uuid, *, timeout=60):
        self._run('power_off', uuid)

    def power_on(self, uuid):
        self._run('power_on', uuid)

    def reboot(self, uuid, *, hard=False):
        self._run('reboot', uuid)

    def pause(self, uuid):
        self._run('pause', uuid)

    def unpause(self, uuid):
        self._run('unpause', uuid)

    def suspend(self, uuid):
        self._run('suspend', uuid)

    def resume(self, uuid):
        self._run('resume', uuid)

    def rescue(self, uuid, *, image_ref, password=None,
               password_required=False):
        # A password the user gave needs the guest agent, as set_password
        # does: a set_password fault (no agent) fails the rescue first.
        if password is not None and password_required:
            self._prelude('set_password', uuid)
        # The store is a plain file: keep a digest, never the password.
        digest = (hashlib.sha256(password.encode()).hexdigest()
                  if password is not None else None)
        self._run('rescue', uuid, lambda rec: rec.update(
            rescued=True, rescue_image_ref=image_ref,
            rescue_password_sha256=digest))

    def unrescue(self, uuid):
        self._run('unrescue', uuid, lambda rec: rec.update(
            rescued=False, rescue_image_ref=None,
            rescue_password_sha256=None))

    def rebuild(self, uuid, *, image_ref, config_drive=None, ports=None):
        """``ports`` replace the domain's; None keeps them."""
        change = {'image_ref': image_ref, 'config_drive': config_drive}
        if ports is not None:
            change['ports'] = net_ports.checked(ports)
        self._run('rebuild', uuid, lambda rec: rec.update(change))

    def resize(self, uuid, *, flavor):
        self._run('resize', uuid, lambda rec: rec.update(
            previous_flavor=rec['flavor'], flavor=_flavor_dict(flavor)))

    def confirm_resize(self, uuid):
        self._run('confirm_resize', uuid,
                  lambda rec: rec.update(previous_flavor=None))

    def revert_resize(self, uuid):
        self._run('revert_resize', uuid, lambda rec: rec.update(
            flavor=rec['previous_flavor'], previous_flavor=None))

    def migrate_out(self, uuid, *, dest):
        """Move the record into ``dest``'s store, both files locked."""
        if dest == self.host:
            raise VirtError('cannot migrate %s to its own host %s'
                            % (uuid, dest))
        self._prelude('migrate_out', uuid)
        stores = sorted([self.store, HostStore(self.state_dir, dest)],
                        key=lambda s: s.host)    # one lock order: no deadlock
        with contextlib.ExitStack() as stack:
            data = {s.host: stack.enter_context(s.update(uuid)) for s in stores}
            source, target = data[self.host], data[dest]
            rec = _get(source, uuid, self.host)
            _apply_power('migrate_out', rec, self.host)
            if uuid in target['domains']:
                raise VirtError('domain %s already exists on host %s'
                                % (uuid, dest))
            if rec.get('config_drive'):
                # the agents carried it: the copy at the destination's
                # path (.../<host>/<uuid>.iso), as libvirt's CD-ROM moves
                folder, name = os.path.split(rec['config_drive'])
                rec['config_drive'] = os.path.join(os.path.dirname(folder),
                                                   dest, name)
            del source['domains'][uuid]
            source['seq'] += 1
            target['seq'] = max(target['seq'], rec['seq'])
            target['domains'][uuid] = rec
            _touch(target, rec, 'migrate_out')

    def snapshot(self, uuid, *, image_name, image_id=None, target=None):
        """Record the snapshot; with ``target`` (the agent uploads it to
        the image service), also write there a small qcow2 disk
        (:func:`snapshot_content`) so that the image becomes active and
        boots on any host. Returns the format written ('qcow2', the
        format snapshot images are created with, as libvirt's)."""
        def change(rec):
            rec['snapshots'].append(image_name)
            if image_id is not None:
                rec.setdefault('snapshot_ids', {})[image_id] = image_name
        self._run('snapshot', uuid, change)
        if target is not None:
            with open(target, 'wb') as f:
                f.write(snapshot_content(uuid, image_name))
        return 'qcow2'

    def set_password(self, uuid, *, password):
        self._run('set_password', uuid)

    def set_security_groups(self, uuid, *, ports):
        """The domain's ports (their MACs unchanged) in the groups the
        task's carry: each card's ``link`` is what a libvirt domain's
        ``<link state>`` would say (common/secgroups.py)."""
        ports = net_ports.checked(ports)

        def change(rec):
            mine = {port['mac'] for port in rec.get('ports') or ()}
            if mine != {port['mac'] for port in ports}:
                raise VirtError('domain %s has cards %s, not those of the '
                                'task' % (uuid, sorted(mine)))
            rec['ports'] = ports
        self._run('set_security_groups', uuid, change)

    # --- consoles -----------------------------------------------------------------

    def _console_log(self, uuid):
        return console_log(self.state_dir, uuid)

    def _log_console(self, uuid, operation, rec):
        """What a guest would print on its serial line: a line per
        operation, and when it boots a kernel's line and a boot line (as
        the test image's ``BOOT-OK``)."""
        state = states.power_state_name(rec['power_state'])
        lines = ['fake-console %s %s: power %s\n' % (
            time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()), operation,
            state)]
        if operation in BOOTS and rec['power_state'] == power.RUNNING:
            lines.append('fake-kernel: Linux version 0.0-fake booting\n')
            lines.append('BOOT-OK %s\n' % uuid)
        consolelog.append(self._console_log(uuid), ''.join(lines),
                          self.console.log_max_bytes)

    def get_console_output(self, uuid, *, max_bytes):
        return consolelog.tail(self._console_log(uuid), max_bytes)

    def console_endpoint(self, uuid):
        """Where the guest's serial console would listen: nothing does
        (a test runs its own TCP server there, standing for QEMU's)."""
        if not self.console.enabled or self.get_domain(uuid) is None:
            return None
        return {'host': self.console.listen_address,
                'port': self.console.port_for(uuid)}

    # --- the machinery every operation goes through ---------------------------

    def _run(self, operation, uuid, change=None, *, new=None):
        """Latency, fault, then guard, power effect and ``change(record)``."""
        self._prelude(operation, uuid, new=new)
        with self.store.update(uuid) as data:
            if new is not None:
                if uuid in data['domains']:
                    raise VirtError('domain %s already exists on host %s'
                                    % (uuid, self.host))
                data['domains'][uuid] = new
            rec = _get(data, uuid, self.host)
            _check_guard(operation, rec)
            _apply_power(operation, rec, self.host)
            if change is not None:
                change(rec)
            _touch(data, rec, operation)
        self._log_console(uuid, operation, rec)

    def _prelude(self, operation, uuid, *, new=None):
        seconds = self.latency.get(operation, 0)
        if seconds > 0:
            self._sleep(seconds)
        fault = self._take_fault(operation)
        if fault is None:
            return
        where = '%s of %s on fake host %s' % (operation, uuid, self.host)
        if fault['mode'] == 'hang':
            raise self._hang(operation, fault['id'], where)
        if fault['mode'] == 'fail_no_rollback':
            self._break(operation, uuid, new)
            raise VirtError('injected fault: %s failed half-way' % where,
                            rolled_back=False)
        raise VirtError('injected fault: %s failed' % where)

    def _take_fault(self, operation):
        if operation not in self.store.meta()['faults']:
            return None      # the common case takes no lock
        with self.store.update() as data:
            fault = data['faults'].get(operation)
            if fault is None or fault['remaining'] == 0:
                return None
            if fault['remaining'] is not None:
                fault['remaining'] -= 1
            return dict(fault)

    def _break(self, operation, uuid, new):
        with self.store.update(uuid) as data:
            rec = data['domains'].get(uuid)
            if rec is None and new is not None:
                rec = data['domains'][uuid] = new
            if rec is not None:
                rec['power_state'] = power.CRASHED
                rec['reason'] = states.REASON_UNKNOWN
                rec['broken_by'] = operation
                _touch(data, rec, operation)

    def _hang(self, operation, fault_id, where):
        """Block until the fault goes, the host stops or time runs out;
        return the error to raise."""
        deadline = time.monotonic() + self.hang_timeout
        while True:
            fault = self.store.meta()['faults'].get(operation)
            if fault is None or fault['id'] != fault_id:
                return VirtError('injected fault: %s hung until the fault '
                                 'was cleared' % where)
            left = deadline - time.monotonic()
            if left <= 0:
                return VirtError('injected fault: %s hung for %s s'
                                 % (where, self.hang_timeout))
            if self._stopping.wait(min(self.poll_interval, left)):
                return VirtError('injected fault: %s hung until the host '
                                 'stopped' % where)


def snapshot_content(uuid, image_name):
    """The fake's disk image: a qcow2 file (snapshot images are qcow2, and
    the image service checks the content against that) whose 64 KiB disk
    names the domain and the snapshot (:func:`snapshot_disk`)."""
    return qcow2_image(snapshot_disk(uuid, image_name))


def snapshot_disk(uuid, image_name):
    """What a guest sees on the disk of :func:`snapshot_content`."""
    text = 'tristate fake disk of %s: snapshot %s\n' % (uuid, image_name)
    return text.encode('utf-8', 'backslashreplace')[:SNAPSHOT_SIZE].ljust(
        SNAPSHOT_SIZE, b'\0')


_CLUSTER = 64 * 1024
_COPIED = 1 << 63           # an L1/L2 entry whose cluster has refcount 1


def qcow2_image(data):
    """A valid qcow2 (version 3, 64 KiB clusters, no backing file) of one
    cluster whose content is ``data`` (at most 64 KiB). Clusters: header,
    refcount table, refcount block, L1 table, L2 table, data."""
    assert len(data) <= _CLUSTER
    header = struct.pack(
        '>4sIQIIQIIQQIIQQQQII', b'QFI\xfb', 3, 0, 0, 16, _CLUSTER, 0,
        1, 3 * _CLUSTER,        # l1_size, l1_table_offset
        1 * _CLUSTER, 1,        # refcount table offset, clusters
        0, 0, 0, 0, 0,          # snapshots, features
        4, 104)                 # refcount_order (16 bits), header_length
    clusters = [header,
                struct.pack('>Q', 2 * _CLUSTER),
                struct.pack('>6H', *[1] * 6),
                struct.pack('>Q', 4 * _CLUSTER | _COPIED),
                struct.pack('>Q', 5 * _CLUSTER | _COPIED),
                data]
    return b''.join(c.ljust(_CLUSTER, b'\0') for c in clusters)


def initial_disk(uuid, image_ref):
    """The disk of a domain no one wrote yet: its image's (a qcow2)."""
    text = 'tristate fake disk of %s from image %s\n' % (uuid, image_ref)
    return qcow2_image(text.encode('utf-8', 'backslashreplace')[:_CLUSTER])


def _write_file(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + '.part'
    with open(tmp, 'wb') as f:
        f.write(data)
    os.replace(tmp, path)


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _state(rec):
    return None if rec is None else (rec['power_state'], rec['reason'])


class _Watcher(threading.Thread):
    """Polls one store and reports each domain whose (power_state, reason)
    changed, appeared or vanished, whoever changed it.

    A poll reads the host's small file; only when its ``gen`` moved does it
    read the domains the journal names (all of them if it fell behind), so
    an idle poll costs the same on a host of 10 domains as of 10,000.
    """

    def __init__(self, store, stopping, interval):
        super().__init__(name='fakevirt-watch-%s' % store.host, daemon=True)
        self.callbacks = []
        self._store, self._stopping, self._interval = store, stopping, interval
        # gen before the read: a change in between is seen again, never missed.
        self._gen = store.meta()['gen']
        self._known = {uuid: _state(rec)
                       for uuid, rec in store.domains().items()}

    def run(self):
        while not self._stopping.wait(self._interval):
            try:
                self.poll()
            except Exception:
                LOG.exception('fake host %s: watching the store failed',
                              self._store.host)

    def poll(self):
        meta = self._store.meta()
        if meta['gen'] == self._gen:
            return
        uuids = self._store.changed_since(self._gen, meta)
        self._gen = meta['gen']
        if uuids is None:           # the journal no longer reaches back
            current = {uuid: _state(rec)
                       for uuid, rec in self._store.domains().items()}
            current.update((uuid, None) for uuid in self._known.keys()
                           - current.keys())
        else:
            current = {uuid: _state(self._store.domain(uuid))
                       for uuid in uuids}
        for uuid, state in sorted(current.items(), key=lambda item: item[0]):
            self._see(uuid, state)

    def _see(self, uuid, state):
        """Note the domain's (power_state, reason), None if gone; report it
        if it differs from what was last seen."""
        if state == self._known.get(uuid):
            return
        if state is None:
            del self._known[uuid]
            state = (power.NOSTATE, None)
        else:
            self._known[uuid] = state
        self._notify(driver.DomainInfo(uuid, *state))

    def _notify(self, info):
        for callback in list(self.callbacks):
            try:
                callback(info)
            except Exception:
                LOG.exception('fake host %s: watch callback failed for %s',
                              self._store.host, info.uuid)

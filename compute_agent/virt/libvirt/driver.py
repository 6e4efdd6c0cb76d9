"""The libvirt driver: KVM/QEMU and Xen hosts, and libvirt's test driver.

Owns the host's connection (:mod:`.connection`), its event watcher
(:mod:`.events`), the mapping to power_state and reason (:mod:`.power`) and
the simple lifecycle operations; the operations that replace a definition
(rescue, rebuild, resize, snapshot) are in :mod:`.detours`; live migration
(both halves) in :mod:`.migration`.

Reasons: libvirt's state reason says why a domain is down; an operation the
agent asked for reports reason None instead (the driver remembers its own
doing in a :class:`~.power.ReasonBook`), as the fake driver does. A suspend
(managed save) keeps reason ``saved``, which reconcile needs.

Xen (seed 003): domains are defined with ``on_poweroff``/``on_crash``
``preserve``; :mod:`.preserve` destroys those that stopped once they have
been reported, on the agent's periodic pass and before every operation that
allocates resources.

Host shutdown: the agent calls :meth:`LibvirtDriver.host_shutting_down` when
systemd says the machine is going down (logind's PrepareForShutdown signal,
or the agent unit ordered ``Before=libvirt-guests.service`` so it is still
running while libvirt-guests stops the guests); from then on a guest that
shuts down is reported with reason ``host``. QEMU's SHUTDOWN event detail
(guest or host asked) is used too, when libvirt gives it.
"""

import contextlib
import logging
import os
import shutil
import threading
import time

import libvirt

from common.states import power
from compute_agent.virt import consolelog
from compute_agent.net import ports as net_ports
from compute_agent.virt import driver
from compute_agent.virt.driver import DomainInfo
from compute_agent.virt.driver import VirtError
from compute_agent.virt.libvirt import coldmove
from compute_agent.virt.libvirt import config
from compute_agent.virt.libvirt import connection as connection_mod
from compute_agent.virt.libvirt import detours
from compute_agent.virt.libvirt import diagnostics
from compute_agent.virt.libvirt import disks
from compute_agent.virt.libvirt import events
from compute_agent.virt.libvirt import links
from compute_agent.virt.libvirt import migration
from compute_agent.virt.libvirt import power as power_map
from compute_agent.virt.libvirt import preserve

LOG = logging.getLogger(__name__)

_RUNNING_STATES = frozenset({libvirt.VIR_DOMAIN_RUNNING,
                             libvirt.VIR_DOMAIN_BLOCKED})
# [libvirt] event_debounce when unset, by virt_type: libxl reports a reboot
# made inside the guest as a stop and a start, which the debounce absorbs;
# QEMU resets the guest in place and emits REBOOT, no lifecycle event (seen
# on QEMU 7.2, libvirt 9.0: tests/functional/regressions/
# test_guest_reboot_is_not_a_stop.py), so its debounce only merges a burst.
DEBOUNCE = {'xen': 0.5, 'kvm': 0.05, 'qemu': 0.05}
# virt_types whose SHUTDOWN event with detail guest means the guest is gone
# for good: the driver defines QEMU domains with on_poweroff destroy, and
# libvirt's QEMU driver, in its fake reboot (a soft reboot: ours, or virsh
# reboot), sends no SHUTDOWN event when on_poweroff is destroy; otherwise
# it kills QEMU after the event. Reading the domain then waits until libvirt
# has stopped it (1.4 s and more, seen on libvirt 9.0), so the event itself
# is reported.
_POWER_OFF_IS_FINAL = frozenset({'kvm', 'qemu'})
# States of a domain that is active but whose guest has stopped: libxl keeps
# a preserved guest active as SHUTOFF (reason SHUTDOWN or CRASHED).
_DOWN_STATES = frozenset({libvirt.VIR_DOMAIN_SHUTOFF,
                          libvirt.VIR_DOMAIN_SHUTDOWN,
                          libvirt.VIR_DOMAIN_CRASHED})
# Undefine flags, most thorough first; drivers refuse flags they lack.
_UNDEFINE_FLAGS = (
    libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE
    | libvirt.VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA
    | libvirt.VIR_DOMAIN_UNDEFINE_NVRAM
    | libvirt.VIR_DOMAIN_UNDEFINE_CHECKPOINTS_METADATA,
    libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE
    | libvirt.VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA,
    0)
_REFUSED_FLAGS = frozenset({libvirt.VIR_ERR_INVALID_ARG,
                            libvirt.VIR_ERR_NO_SUPPORT})


def _code(err):
    return err.get_error_code()


def _all_states(conn):
    """[(dom, state, reason code)] of every domain, in one call when the
    hypervisor driver can."""
    try:
        stats = conn.getAllDomainStats(libvirt.VIR_DOMAIN_STATS_STATE)
    except libvirt.libvirtError as err:
        if _code(err) != libvirt.VIR_ERR_NO_SUPPORT:
            raise
        return [(dom, *dom.state()) for dom in conn.listAllDomains()]
    return [(dom, values['state.state'], values['state.reason'])
            for dom, values in stats]


class LibvirtDriver(preserve.PreserveOps, detours.DetourOps,
                    migration.MigrationOps, coldmove.ColdMoveOps,
                    links.LinkOps, driver.ComputeDriver):
    """One libvirt host. Thread-safe: tasks, the reporter and the event
    thread use it at once."""

    name = 'libvirt'
    # The agent fetches each task's image into its cache and passes it
    # (``image=``): disks are overlays on cached files.
    needs_image_files = True

    def __init__(self, *, uri='qemu:///system', virt_type='kvm',
                 instances_path, images=None, event_debounce=None,
                 shutdown_timeout=60, reconnect_interval_min=0.5,
                 reconnect_interval_max=30.0, reconnect_timeout=60.0,
                 test_node_per_host=True, cpu_mode='host-model',
                 poll_interval=0.2, console=None, live_migration=None,
                 rescue_password_timeout=120.0):
        for what, value, allowed in (('virt_type', virt_type,
                                      config.VIRT_TYPES),
                                     ('cpu_mode', cpu_mode, config.CPU_MODES)):
            if value not in allowed:
                raise ValueError('%s %r: expected one of %s'
                                 % (what, value, ', '.join(allowed)))
        self.uri = uri
        self.virt_type = virt_type
        self.cpu_mode = cpu_mode
        self.images = images
        self.instances_path = instances_path
        self.console = console or consolelog.Settings()
        self.migration = live_migration or migration.Settings()
        self._ports_lock = threading.Lock()
        # serial ports promised to live migrations on their way here
        # (uuid -> (port, when)): their domains do not exist yet
        self._incoming_serial = {}
        self.event_debounce = (DEBOUNCE.get(virt_type, DEBOUNCE['xen'])
                               if event_debounce is None else event_debounce)
        self.shutdown_timeout = shutdown_timeout
        self.rescue_password_timeout = rescue_password_timeout
        self.poll_interval = poll_interval
        self.test_node_per_host = test_node_per_host
        self._reconnect = dict(interval_min=reconnect_interval_min,
                               interval_max=reconnect_interval_max,
                               timeout=reconnect_timeout)
        self.host = None
        self.connection = None
        self.watcher = None
        self.arch = 'x86_64'
        # In memory until init_host knows the host, then kept in a file.
        self._book = power_map.ReasonBook()
        self._reported = {}               # uuid -> DomainInfo last reported
        self._reported_lock = threading.Lock()
        self._event_ids = []              # [(conn, callback id)]
        self._stopping = threading.Event()

    @classmethod
    def from_conf(cls, conf):
        """Build from ``[libvirt]`` and ``[compute] shutdown_timeout``."""
        group = conf.libvirt
        return cls(uri=group.connection_uri, virt_type=group.virt_type,
                   instances_path=group.instances_path,
                   event_debounce=group.event_debounce,
                   shutdown_timeout=conf.compute.shutdown_timeout,
                   reconnect_interval_min=group.reconnect_interval_min,
                   reconnect_interval_max=group.reconnect_interval_max,
                   reconnect_timeout=group.reconnect_timeout,
                   test_node_per_host=group.test_node_per_host,
                   cpu_mode=group.cpu_mode,
                   console=consolelog.Settings.from_conf(conf),
                   live_migration=migration.Settings.from_conf(conf),
                   rescue_password_timeout=group.rescue_password_timeout)

    # --- setting up and down ---------------------------------------------------

    def init_host(self, host):
        """Start libvirt's event loop, connect, and start the watcher."""
        super().init_host(host)
        self._stopping.clear()
        os.makedirs(self.instances_path, exist_ok=True)
        self._book = power_map.ReasonBook(os.path.join(
            self.instances_path, '%s-reasons.json' % host))
        connection_mod.quiet_errors()
        events.start_event_loop()     # before connecting: events need it
        uri = connection_mod.resolve_uri(
            self.uri, host=host, instances_path=self.instances_path,
            per_host=self.test_node_per_host)
        self.watcher = events.DomainWatcher(
            read=self._read_info, debounce=self.event_debounce,
            delivered=self._mark_reported, busy=self._book.is_busy,
            name='libvirt-%s' % host)
        self.connection = connection_mod.Connection(
            uri, on_open=[self._on_open], **self._reconnect)
        self.arch = self.connection.run(lambda conn: conn.getInfo()[0])
        self.watcher.start()
        LOG.info('Libvirt driver of %s on %s (%s)', host, uri, self.virt_type)

    def cleanup_host(self):
        self._stopping.set()
        if self.watcher is not None:
            self.watcher.stop()
        for conn, callback_id in self._event_ids:
            try:
                conn.domainEventDeregisterAny(callback_id)
            except libvirt.libvirtError:
                pass                       # that connection is gone already
        self._event_ids = []
        if self.connection is not None:
            self.connection.close()

    def _on_open(self, conn):
        """Each new connection: listen to its lifecycle events, and after a
        reconnect read every domain again (events were missed)."""
        callback_id = conn.domainEventRegisterAny(
            None, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE, self._on_lifecycle,
            None)
        # Callbacks of a lost connection went with it; keep the live one.
        self._event_ids = [(conn, callback_id)]
        self._book.events_lost()
        if self.connection.opened:
            self.watcher.resync(d.UUIDString() for d in conn.listAllDomains())

    def _on_lifecycle(self, _conn, dom, event, detail, _opaque):
        """libvirt's event loop thread: note it, leave the rest to the
        watcher's thread."""
        uuid = dom.UUIDString()
        LOG.debug('Lifecycle event %s/%s of %s', event, detail, uuid)
        self._book.saw_event(uuid, event, detail)
        self.watcher.event(uuid, power_map.event_power(event),
                           final=self._powering_off(uuid))

    def _powering_off(self, uuid):
        return (self.virt_type in _POWER_OFF_IS_FINAL
                and self._book.powering_off(uuid))

    def host_shutting_down(self):
        """The host is going down: guests that stop now are stopped by the
        host, whatever libvirt says."""
        LOG.info('Host %s is shutting down: guest shutdowns are reported '
                 'with reason host from now on', self.host)
        self._book.host_shutting_down = True

    # --- queries ----------------------------------------------------------------

    def get_capacity(self):
        info = self.connection.run(lambda conn: conn.getInfo())
        disk = shutil.disk_usage(self.instances_path).total // disks.GIB
        return driver.Capacity(vcpus=info[2], memory_mb=info[1],
                               disk_gb=disk)

    def list_domains(self):
        infos = []
        for dom, state, code in self.connection.run(_all_states):
            try:
                infos.append(self._info(dom, state, code))
            except libvirt.libvirtError as err:
                if _code(err) != libvirt.VIR_ERR_NO_DOMAIN:
                    raise                  # (a domain that just vanished)
        for info in infos:
            self._mark_reported(info)
        return infos

    def get_domain(self, uuid):
        info = self._read_info(uuid)
        if info.power_state == power.NOSTATE:
            return None
        self._mark_reported(info)
        return info

    def _read_info(self, uuid):
        """The domain's DomainInfo now; power NOSTATE when it is gone."""
        if self._powering_off(uuid):
            # The guest powered itself off: libvirt holds the domain while
            # it stops QEMU (reads wait for it) and says SHUTOFF after.
            return DomainInfo(uuid, power.SHUTDOWN, self._book.reason(
                uuid, power.SHUTDOWN, power_map.GUEST, shutting_down=True))

        def read(conn):
            dom = self._lookup(conn, uuid)
            if dom is None:
                return DomainInfo(uuid, power.NOSTATE, None)
            return self._info(dom)
        return self.connection.run(read)

    def _info(self, dom, state=None, code=None):
        if state is None:
            state, code = dom.state()
        uuid = dom.UUIDString()
        power_state = power_map.power_of(state)
        natural = power_map.reason_of(state, code)
        if natural == power_map.SAVED and not dom.hasManagedSaveImage(0):
            natural = power_map.HOST          # the saved image was discarded
        return DomainInfo(uuid, power_state, self._book.reason(
            uuid, power_state, natural,
            shutting_down=state == libvirt.VIR_DOMAIN_SHUTDOWN))

    def get_diagnostics(self, uuid):
        """The domain's diagnostics from libvirt (a read: the domain is
        not marked busy)."""
        def read(conn):
            dom = self._lookup(conn, uuid)
            if dom is None:
                raise driver.DomainNotFound(uuid, self.host)
            return diagnostics.read(dom, self.virt_type)
        try:
            return self.connection.run(read)
        except libvirt.libvirtError as err:
            raise VirtError('diagnostics of domain %s on host %s failed: %s'
                            % (uuid, self.host, err)) from None

    def watch(self, callback):
        """``callback(DomainInfo)`` after each debounced lifecycle change."""
        if self.watcher is None:
            raise VirtError('the libvirt driver is watched before init_host()')
        self.watcher.add_callback(callback)

    # --- helpers every operation uses ------------------------------------------

    def _lookup(self, conn, uuid):
        try:
            return conn.lookupByUUIDString(uuid)
        except libvirt.libvirtError as err:
            if _code(err) == libvirt.VIR_ERR_NO_DOMAIN:
                return None
            raise

    def _op(self, what, uuid, fn, *, retry=True):
        """``fn(dom)`` on domain ``uuid``; libvirt errors become VirtError
        (rolled back: an operation that changed something and could not
        undo it raises its own VirtError)."""
        def run(conn):
            dom = self._lookup(conn, uuid)
            if dom is None:
                raise driver.DomainNotFound(uuid, self.host)
            return fn(dom)
        try:
            with self._book.busy(uuid):
                return self.connection.run(run, retry=retry)
        except libvirt.libvirtError as err:
            raise VirtError('%s of domain %s on host %s failed: %s'
                            % (what, uuid, self.host, err)) from None

    def _files(self, uuid):
        return disks.InstanceFiles(self.instances_path, uuid)

    # --- consoles ----------------------------------------------------------------

    def _console_log(self, uuid):
        """The serial console's log file; None on Xen (libxl takes no
        ``<log>``: xenconsoled's own log, if configured, is not read)."""
        if self.virt_type == 'xen':
            return None
        return self._files(uuid).console_log

    def _serial_tcp(self, conn):
        """(address, port) for a new guest's serial TCP listener: the
        first port of ``[serial_console] port_range`` no domain of this
        host uses and nothing else holds; None when disabled."""
        if not self.console.enabled or self.virt_type == 'xen':
            return None
        used, here = set(), set()
        for dom in conn.listAllDomains():
            here.add(dom.UUIDString())
            tcp = config.serial_tcp_of(dom.XMLDesc(0))
            if tcp is not None:
                used.add(tcp[1])
        used.update(self._promised_serial_ports(here))
        address = self.console.listen_address
        for port in self.console.ports():
            if port not in used and connection_mod.port_free(address, port):
                return address, port
        raise VirtError('no free serial console port in [serial_console] '
                        'port_range on host %s' % self.host)

    def sweep_console_logs(self, keep, cutoff):
        """The console logs in ``instances_path`` of instances not in
        ``keep``, untouched since ``cutoff``: removed, with their folder
        when nothing else is left in it."""
        try:
            names = os.listdir(self.instances_path)
        except FileNotFoundError:
            return []
        removed = []
        for uuid in names:
            if uuid in keep or uuid.startswith('.'):
                continue
            files = self._files(uuid)
            if not os.path.isdir(files.path) or not consolelog.stale(
                    files.console_log, cutoff):
                continue
            consolelog.remove(files.console_log)
            with contextlib.suppress(OSError):
                os.rmdir(files.path)        # only when it is empty
            removed.append(uuid)
        return removed

    def get_console_output(self, uuid, *, max_bytes):
        path = self._console_log(uuid)
        return None if path is None else consolelog.tail(path, max_bytes)

    def console_endpoint(self, uuid):
        def read(conn):
            dom = self._lookup(conn, uuid)
            return None if dom is None else config.serial_tcp_of(
                dom.XMLDesc(0))
        tcp = self.connection.run(read)
        return None if tcp is None else {'host': tcp[0], 'port': tcp[1]}

    def _image(self, image_ref, image):
        """A context holding the image to build on: ``image`` when the
        agent passed one, else the driver's ``images`` source's."""
        if image is not None:
            return contextlib.nullcontext(image)
        if self.images is None:
            raise VirtError('no image file for %r: the libvirt driver builds '
                            'disks on images the agent fetched into its '
                            'cache, and the task named no image service'
                            % (image_ref,))
        return self.images.use(image_ref)

    def image_bases_in_use(self):
        """Paths of the images this host's disks are built on: the image
        cache never removes those."""
        return disks.backing_files(self.instances_path)

    def _destroy_active(self, dom):
        """Power off at once; a domain already off is fine."""
        try:
            dom.destroy()
        except libvirt.libvirtError as err:
            if _code(err) != libvirt.VIR_ERR_OPERATION_INVALID:
                raise                       # "not running" is what we want

    def _state(self, dom):
        return dom.state()[0] if dom.isActive() else libvirt.VIR_DOMAIN_SHUTOFF

    def _up(self, dom):
        """Whether the guest runs (or is paused): active, and not a domain
        libxl keeps after it stopped (active, but SHUTOFF or CRASHED)."""
        return bool(dom.isActive()) and self._state(dom) not in _DOWN_STATES

    def _require(self, dom, what, allowed):
        state = self._state(dom)
        if state not in allowed:
            raise VirtError('cannot %s domain %s: it is %s' % (
                what, dom.UUIDString(),
                power_map.name_of(state)))
        return state

    def _shut_down(self, dom, timeout):
        """ACPI shutdown, polled until ``timeout``; then destroy. A domain
        kept after it stopped (preserve) is destroyed too: off means off."""
        if timeout > 0 and self._state(dom) in _RUNNING_STATES:
            try:
                dom.shutdown()
            except libvirt.libvirtError as err:
                LOG.warning('Clean shutdown of %s refused (%s); destroying',
                            dom.UUIDString(), err)
            else:
                self._wait_down(dom, timeout)
        if dom.isActive():
            self._destroy_active(dom)

    def _wait_down(self, dom, timeout):
        deadline = time.monotonic() + timeout
        while dom.isActive() and self._state(dom) in _RUNNING_STATES | {
                libvirt.VIR_DOMAIN_SHUTDOWN}:
            left = deadline - time.monotonic()
            if left <= 0:
                LOG.info('Domain %s did not shut down within %s s; '
                         'destroying it', dom.UUIDString(), timeout)
                return False
            if self._stopping.wait(min(self.poll_interval, left)):
                return False
        return True

    def _start(self, dom):
        self._book.forget(dom.UUIDString())
        dom.create()

    # --- lifecycle --------------------------------------------------------------

    def spawn(self, uuid, *, name, flavor, image_ref, image=None,
              config_drive=None, ports=(), numa_cells=None):
        """``image``: the cached image (:class:`~compute_agent.imagecache.
        CachedImage`) the agent fetched for ``image_ref``; without it, the
        driver's own ``images`` source is asked (tests). ``ports``: the
        task's ports (one ``<interface>`` each, kept in the metadata).
        ``numa_cells``: the guest's NUMA cells (:mod:`common.numa`)."""
        ports = net_ports.checked(ports)
        self._links_honoured(uuid, ports, 'not built')
        self._cleanup_before_allocation()
        try:
            with self._image(image_ref, image) as base, \
                    self._book.busy(uuid):
                self.connection.run(lambda conn: self._spawn(
                    conn, uuid, name, flavor, image_ref, base, config_drive,
                    ports, numa_cells),
                    retry=False)
        except libvirt.libvirtError as err:
            raise VirtError('spawn of domain %s on host %s failed: %s'
                            % (uuid, self.host, err)) from None

    def domain_ports(self, uuid=None):
        """{uuid: [port]} of every domain on the host that carries ports
        in its metadata (or of ``uuid`` alone; {} when it is gone)."""
        def read(conn):
            if uuid is not None:
                dom = self._lookup(conn, uuid)
                doms = [] if dom is None else [dom]
            else:
                doms = conn.listAllDomains()
            found = {}
            for dom in doms:
                try:
                    ports = config.ports_of(dom.XMLDesc(
                        libvirt.VIR_DOMAIN_XML_INACTIVE))
                except libvirt.libvirtError as err:
                    if _code(err) != libvirt.VIR_ERR_NO_DOMAIN:
                        raise
                    continue
                if ports:
                    found[dom.UUIDString()] = ports
            return found
        return self.connection.run(read)

    def _spawn(self, conn, uuid, name, flavor, image_ref, image,
               config_drive=None, ports=(), numa_cells=None):
        if self._lookup(conn, uuid) is not None:
            raise VirtError('domain %s already exists on host %s'
                            % (uuid, self.host))
        files = self._files(uuid)
        files.create()
        dom = None
        try:
            fmt = disks.create_disk(image, files.disk, flavor.disk_gb)
            with self._ports_lock:      # a port no other define takes
                dom = conn.defineXML(config.domain_xml(
                    virt_type=self.virt_type, uuid=uuid, name=name,
                    flavor=flavor, image_ref=image_ref, arch=self.arch,
                    cpu_mode=self.cpu_mode, disks=[(files.disk, fmt)],
                    config_drive=config_drive,
                    console_log=self._console_log(uuid),
                    serial_tcp=self._serial_tcp(conn), ports=ports,
                    numa_cells=numa_cells))
            self._start(dom)
        except BaseException:
            self._forget_domain(dom)
            files.remove()
            raise

    def _forget_domain(self, dom):
        if dom is None:
            return
        try:
            if dom.isActive():
                self._destroy_active(dom)
            self._undefine(dom)
        except libvirt.libvirtError as err:
            LOG.warning('Removing domain %s failed: %s', dom.UUIDString(), err)

    def destroy(self, uuid):
        """Power off, undefine (managed save and snapshot metadata too) and
        remove the instance's files. A domain already gone is fine."""
        def run(conn):
            dom = self._lookup(conn, uuid)
            if dom is not None:
                self._book.forget(uuid)
                try:
                    if dom.isActive():
                        self._destroy_active(dom)
                    self._undefine(dom)
                except libvirt.libvirtError as err:
                    # Gone meanwhile: another destroy of it (a delete's
                    # and the reporter's of a leftover) got there first.
                    if _code(err) != libvirt.VIR_ERR_NO_DOMAIN:
                        raise
            self._files(uuid).remove()
        try:
            with self._book.busy(uuid):
                self.connection.run(run)
        except libvirt.libvirtError as err:
            raise VirtError('destroy of domain %s on host %s failed: %s'
                            % (uuid, self.host, err), rolled_back=False) from None

    def _undefine(self, dom):
        if not dom.isPersistent():
            return
        for flags in _UNDEFINE_FLAGS:
            try:
                if flags:
                    dom.undefineFlags(flags)
                else:
                    if dom.hasManagedSaveImage(0):
                        dom.managedSaveRemove(0)
                    dom.undefine()
                return
            except libvirt.libvirtError as err:
                if _code(err) == libvirt.VIR_ERR_NO_DOMAIN:
                    return
                if _code(err) not in _REFUSED_FLAGS or not flags:
                    raise

    def power_off(self, uuid, *, timeout=60):
        def run(dom):
            self._book.expect(uuid, power.SHUTDOWN)
            self._shut_down(dom, timeout)
        self._op('power_off', uuid, run)

    def power_on(self, uuid):
        self._cleanup_before_allocation()
        self._op('power_on', uuid, self._power_on)

    def _power_on(self, dom):
        state = self._state(dom)
        if state in _RUNNING_STATES:
            return
        if state == libvirt.VIR_DOMAIN_PAUSED:
            self._book.forget(dom.UUIDString())
            dom.resume()
            return
        if state == libvirt.VIR_DOMAIN_PMSUSPENDED:
            dom.pMWakeup(0)
            return
        if dom.isActive():                  # kept after it stopped
            self._destroy_active(dom)
        self._start(dom)

    def reboot(self, uuid, *, hard=False):
        self._cleanup_before_allocation()
        self._op('reboot', uuid, lambda dom: self._reboot(dom, hard))

    def _reboot(self, dom, hard):
        if not hard and self._state(dom) in _RUNNING_STATES:
            try:
                dom.reboot(0)
                return
            except libvirt.libvirtError as err:
                LOG.warning('Soft reboot of %s failed (%s); rebooting hard',
                            dom.UUIDString(), err)
        if dom.isActive():
            self._destroy_active(dom)
        if dom.hasManagedSaveImage(0):
            dom.managedSaveRemove(0)        # a hard reboot boots afresh
        self._start(dom)

    def pause(self, uuid):
        def run(dom):
            self._require(dom, 'pause', _RUNNING_STATES)
            self._book.expect(uuid, power.PAUSED)
            dom.suspend()
        self._op('pause', uuid, run)

    def unpause(self, uuid):
        def run(dom):
            self._require(dom, 'unpause', {libvirt.VIR_DOMAIN_PAUSED})
            self._book.forget(uuid)
            dom.resume()
        self._op('unpause', uuid, run)

    def suspend(self, uuid):
        """Managed save: the domain is off, reason ``saved``, until resume."""
        def run(dom):
            self._require(dom, 'suspend', _RUNNING_STATES | {
                libvirt.VIR_DOMAIN_PAUSED})
            self._book.forget(uuid)
            dom.managedSave(0)
        self._op('suspend', uuid, run)

    def resume(self, uuid):
        self._cleanup_before_allocation()

        def run(dom):
            if dom.isActive() or not dom.hasManagedSaveImage(0):
                raise VirtError('cannot resume domain %s: it is not '
                                'suspended (no managed save image)' % uuid)
            self._start(dom)
        self._op('resume', uuid, run)

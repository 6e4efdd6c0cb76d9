"""Live migration of a libvirt domain between two hosts without shared
storage (issue 25).

Two halves, each run by its host's agent:

* the destination's :meth:`MigrationOps.prepare_incoming` (agent RPC 1.6,
  called by the conductor when the source asks for it at the start of its
  task, conductor RPC 1.18; before the task is sent to an agent older than
  RPC 1.9): the instance's
  directory, and its disk as an empty qcow2 overlay of the same size on the
  image the destination fetched into its own cache, which is what
  ``VIR_MIGRATE_NON_SHARED_INC`` copies the source's overlay into (libvirt
  creates no file of a disk outside a storage pool); a serial console port
  free there. It answers where the source sends the guest (its libvirt URI
  and data address) and the paths the guest gets there.
* the source's :meth:`MigrationOps.migrate_out`: ``migrateToURI3`` peer to
  peer, with the domain XML rewritten to the destination's paths and port,
  persistent there and undefined here; it watches the job (``jobStats``)
  and reports its progress; after ``live_migration_timeout`` it aborts the
  job (``abortJob``: the guest keeps running here) or, when post-copy is
  permitted, switches to post-copy.

What moves with the guest: its memory and device state, its disk's top
layer (the image it is built on is the destination's own copy), its
definition with the ports in its metadata (the destination's DHCP entries
follow the domain that appears: compute_agent/reporter.py). The console log
starts again on the destination; the source's files are removed once the
guest runs there. A config drive goes as its bytes, with the prepare (the
agents: compute_agent/tasks.py), and the CD-ROM points to its copy there.

libvirt's test driver (``test:///``) cannot migrate: its domains live in
the client library. The unit tests drive this module with a mocked domain;
the real one runs on two private libvirtds
(tests/functional/test_live_migration_on_real_qemu.py).
"""

import contextlib
import logging
import socket
import threading
import time
from xml.etree import ElementTree

import libvirt

from compute_agent.virt import driver
from compute_agent.virt.driver import VirtError
from compute_agent.virt.libvirt import config
from compute_agent.virt.libvirt import disks

LOG = logging.getLogger(__name__)

# Non-shared storage: live, the source's libvirtd talks to the
# destination's (the agent needs no connection there), the domain defined
# there and undefined here once it runs there, and the disk's top layer
# copied (NBD) onto the overlay the destination prepared.
FLAGS = (libvirt.VIR_MIGRATE_LIVE | libvirt.VIR_MIGRATE_PEER2PEER
         | libvirt.VIR_MIGRATE_PERSIST_DEST
         | libvirt.VIR_MIGRATE_UNDEFINE_SOURCE
         | libvirt.VIR_MIGRATE_NON_SHARED_INC)
POLL = 0.5                      # seconds between two reads of the job
PROGRESS_EVERY = 5.0            # seconds: progress sent again, unchanged
INCOMING_TTL_MIN = 600.0        # seconds: see _promised_serial_ports
ElementTree.register_namespace('tristate', config.NAMESPACE)


class Settings:
    """The ``[libvirt] live_migration_*`` options."""

    def __init__(self, *, scheme='tcp', inbound_addr=None, uri=None,
                 timeout=600, permit_post_copy=False, poll=POLL):
        self.scheme = scheme
        self.inbound_addr = inbound_addr
        self.uri = uri
        self.timeout = timeout
        self.permit_post_copy = permit_post_copy
        self.poll = poll

    @classmethod
    def from_conf(cls, conf):
        group = conf.libvirt
        return cls(scheme=group.live_migration_scheme,
                   inbound_addr=group.live_migration_inbound_addr,
                   uri=group.live_migration_uri,
                   timeout=group.live_migration_timeout,
                   permit_post_copy=group.live_migration_permit_post_copy)

    def incoming_uri(self):
        """The URI a source's libvirtd connects to, to migrate here."""
        addr = self.inbound_addr or socket.gethostname()
        if self.uri:
            return self.uri.replace('%s', addr)
        return 'qemu+%s://%s/system' % (self.scheme, addr)

    def flags(self):
        if self.permit_post_copy:
            return FLAGS | libvirt.VIR_MIGRATE_POSTCOPY
        return FLAGS


def percent_done(stats):
    """0-100 from a ``jobStats`` dict: data (memory and disk) processed of
    the total; None when libvirt says nothing yet."""
    total = stats.get('data_total') or 0
    if total <= 0:
        return None
    done = stats.get('data_processed') or 0
    return max(0, min(100, int(100 * done / total)))


def destination_xml(xml, *, source_disk, incoming):
    """``xml`` (the source's migratable definition) with the destination's
    disk path, config drive, console log and serial TCP listener
    (``incoming``)."""
    root = ElementTree.fromstring(xml)
    for source in root.findall('devices/disk/source'):
        if source.get('file') == source_disk:
            source.set('file', incoming['disk'])
    for source in root.findall("devices/disk[@device='cdrom']/source"):
        if incoming.get('config_drive') and source.get('file'):
            source.set('file', incoming['config_drive'])
    for serial in root.findall('devices/serial'):
        log = serial.find('log')
        if log is not None and incoming.get('console_log'):
            log.set('file', incoming['console_log'])
        source = serial.find('source')
        tcp = incoming.get('serial_tcp')
        if serial.get('type') == 'tcp' and source is not None and tcp:
            source.set('host', tcp[0])
            source.set('service', str(int(tcp[1])))
    return ElementTree.tostring(root, encoding='unicode')


def disk_targets(xml):
    """Target devices of the writable file disks (what is copied)."""
    root = ElementTree.fromstring(xml)
    return [disk.find('target').get('dev')
            for disk in root.findall('devices/disk')
            if disk.get('device') == 'disk' and disk.find('readonly') is None
            and disk.find('target') is not None]


class _Job:
    """``migrateToURI3`` run in its own thread: it blocks until the guest
    runs on the destination, or fails; the caller watches meanwhile."""

    def __init__(self, dom, uri, params, flags):
        self.error = None
        self._thread = threading.Thread(
            target=self._run, args=(dom, uri, params, flags),
            name='migrate-%s' % dom.UUIDString(), daemon=True)

    def _run(self, dom, uri, params, flags):
        try:
            dom.migrateToURI3(uri, params, flags)
        except libvirt.libvirtError as err:
            self.error = err

    def start(self):
        self._thread.start()
        return self

    def wait(self, timeout):
        """Whether it ended within ``timeout`` seconds."""
        self._thread.join(timeout)
        return not self._thread.is_alive()


class MigrationOps:
    """The live migration half of :class:`~.driver.LibvirtDriver`."""

    migration = Settings()
    clock = staticmethod(time.monotonic)

    # --- destination ---------------------------------------------------------

    def prepare_incoming(self, uuid, *, flavor, image_ref, image=None,
                         config_drive=None):
        """Make this host ready to receive domain ``uuid``: its directory,
        an empty overlay disk of ``flavor``'s size on ``image`` (the cached
        image the agent fetched), a serial port. What the source needs:
        ``{'uri', 'inbound_addr', 'disk', 'console_log', 'serial_tcp',
        'config_drive'}`` (``config_drive``: the ISO the agent placed here,
        the guest's own, carried: its CD-ROM points there; not copied by
        libvirt, whose NON_SHARED_INC copies only writable disks)."""
        def check(conn):
            if self._lookup(conn, uuid) is not None:
                raise VirtError('domain %s already exists on host %s'
                                % (uuid, self.host))
            # chosen and promised at once: a concurrent prepare or build
            # here never takes the same port (the domain comes later)
            with self._ports_lock:
                tcp = self._serial_tcp(conn)
                if tcp is not None:
                    self._incoming_serial[uuid] = (tcp[1], self.clock())
                return tcp
        try:
            serial_tcp = self.connection.run(check)
        except libvirt.libvirtError as err:
            raise VirtError('preparing host %s for domain %s failed: %s'
                            % (self.host, uuid, err)) from None
        files = self._files(uuid)
        files.create()
        try:
            with self._image(image_ref, image) as base:
                disks.create_disk(base, files.disk, flavor.disk_gb)
        except BaseException:
            files.remove()
            raise
        LOG.info('Host %s is ready to receive domain %s', self.host, uuid)
        return {'uri': self.migration.incoming_uri(),
                'inbound_addr': self.migration.inbound_addr,
                'disk': files.disk, 'console_log': self._console_log(uuid),
                'serial_tcp': list(serial_tcp) if serial_tcp else None,
                'config_drive': config_drive}

    def abandon_incoming(self, uuid):
        """Remove what :meth:`prepare_incoming` made, unless the domain
        arrived after all."""
        with self._ports_lock:
            self._incoming_serial.pop(uuid, None)
        if self.get_domain(uuid) is None:
            self._files(uuid).remove()

    def _promised_serial_ports(self, here):
        """Serial ports promised by :meth:`prepare_incoming` to guests
        not yet arrived (``here``: the uuids of the domains on this host,
        whose ports are read from their definitions). A promise lasts
        until the domain arrives, the move is abandoned, or twice the
        longest a migration may take (a move whose end was never told).
        Called with ``_ports_lock`` held."""
        ttl = 2 * max(self.migration.timeout or 0, INCOMING_TTL_MIN)
        now = self.clock()
        for uuid, (_port, since) in list(self._incoming_serial.items()):
            if uuid in here or now - since > ttl:
                del self._incoming_serial[uuid]
        return {port for port, _since in self._incoming_serial.values()}

    # --- source --------------------------------------------------------------

    def migrate_out(self, uuid, *, dest, incoming=None, progress=None):
        """Live-migrate domain ``uuid`` to host ``dest``, prepared as
        ``incoming`` says; ``progress(percent)`` is called as the job
        advances (whatever it raises aborts the job and is raised again).
        Returns once the guest runs on ``dest``; on failure or timeout the
        guest runs here as before (VirtError, rolled back) unless libvirt
        says it is no longer here."""
        if not incoming or not incoming.get('uri'):
            raise VirtError('host %s did not prepare for domain %s (its '
                            'agent is older than RPC 1.6, or its driver '
                            'cannot receive a live migration)'
                            % (dest, uuid))
        with self._book.busy(uuid):
            dom = self.connection.run(lambda conn: self._lookup(conn, uuid))
            if dom is None:
                raise driver.DomainNotFound(uuid, self.host)
            try:
                self._migrate(dom, dest, incoming, progress)
            except libvirt.libvirtError as err:
                raise VirtError('live migration of domain %s from %s to %s '
                                'failed: %s' % (uuid, self.host, dest, err),
                                rolled_back=self._still_here(dom)) from None
        self._book.forget(uuid)
        self._files(uuid).remove()
        LOG.info('Domain %s now runs on host %s', uuid, dest)

    def _migrate(self, dom, dest, incoming, progress):
        uuid = dom.UUIDString()
        self._require(dom, 'live-migrate', {libvirt.VIR_DOMAIN_RUNNING,
                                            libvirt.VIR_DOMAIN_PAUSED})
        source_disk = self._files(uuid).disk
        xml = dom.XMLDesc(libvirt.VIR_DOMAIN_XML_MIGRATABLE)
        persistent = dom.XMLDesc(libvirt.VIR_DOMAIN_XML_MIGRATABLE
                                 | libvirt.VIR_DOMAIN_XML_INACTIVE)
        params = {
            libvirt.VIR_MIGRATE_PARAM_DEST_XML: destination_xml(
                xml, source_disk=source_disk, incoming=incoming),
            libvirt.VIR_MIGRATE_PARAM_PERSIST_XML: destination_xml(
                persistent, source_disk=source_disk, incoming=incoming),
            libvirt.VIR_MIGRATE_PARAM_MIGRATE_DISKS: disk_targets(xml),
        }
        if incoming.get('inbound_addr'):
            params[libvirt.VIR_MIGRATE_PARAM_URI] = (
                'tcp://%s' % incoming['inbound_addr'])
        LOG.info('Live-migrating domain %s from %s to %s (%s)', uuid,
                 self.host, dest, incoming['uri'])
        job = _Job(dom, incoming['uri'], params,
                   self.migration.flags()).start()
        try:
            self._watch(dom, job, progress)
        except BaseException:
            self._abort(dom, job)
            raise
        if job.error is not None:
            raise job.error

    def _watch(self, dom, job, progress):
        """Report progress until the job ends; at the timeout abort it (or
        switch to post-copy) and raise VirtError once it has ended."""
        settings = self.migration
        deadline = (self.clock() + settings.timeout if settings.timeout
                    else None)
        last, sent = None, None
        post_copy = False
        while not job.wait(settings.poll):
            percent = self._job_percent(dom)
            if percent is not None and (last is None or percent > last):
                last = percent
            # sent when it grew, and at least every PROGRESS_EVERY seconds:
            # the answer says whether the task still holds the instance
            if progress is not None and last is not None and (
                    sent is None or sent[0] < min(last, 99)
                    or self.clock() - sent[1] >= PROGRESS_EVERY):
                sent = (min(last, 99), self.clock())
                progress(sent[0])
            if deadline is None or post_copy or self.clock() < deadline:
                continue
            if settings.permit_post_copy:
                LOG.warning('Live migration of %s reached its timeout (%d s): '
                            'switching to post-copy', dom.UUIDString(),
                            settings.timeout)
                dom.migrateStartPostCopy(0)
                post_copy = True
                continue
            self._abort(dom, job)
            raise VirtError('live migration of domain %s from %s took longer '
                            'than [libvirt] live_migration_timeout (%d s) and '
                            'was aborted; the guest runs on %s'
                            % (dom.UUIDString(), self.host, settings.timeout,
                               self.host),
                            rolled_back=self._still_here(dom))

    @staticmethod
    def _job_percent(dom):
        try:
            return percent_done(dom.jobStats(0))
        except libvirt.libvirtError:
            return None                 # the job ended meanwhile

    def _abort(self, dom, job):
        """Abort the job and wait until libvirt has ended it."""
        with contextlib.suppress(libvirt.libvirtError):   # ended already
            dom.abortJob()
        if not job.wait(max(self.migration.poll * 20, 10.0)):
            LOG.warning('Live migration of %s did not end after abortJob',
                        dom.UUIDString())

    def _still_here(self, dom):
        """Whether the guest still runs (or is paused) on this host."""
        try:
            return bool(dom.isActive())
        except libvirt.libvirtError:
            return False

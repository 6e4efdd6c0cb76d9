"""Cold migration on the libvirt driver (issue 25; the design is in
:mod:`conductor.migrate`, the agent's steps in :mod:`compute_agent.coldmove`).

The source writes its (powered off) domain's disk flattened into one
stand-alone qcow2 file (as a snapshot does) and changes nothing of its own:
its definition and its overlay stay as they were, so a revert starts the
very same disk. The destination copies the received file into the
instance's directory as its disk (no backing file: nothing to fetch from
the image service besides the disk itself), grows it to the flavor's size
(a cross-host resize), defines the domain on it and starts it if the guest
ran. A config drive, carried from the source (its bytes, placed by the
agent: :func:`compute_agent.configdrive.place`), is attached as a build
attaches it; the end of the source's console log starts this host's.
"""

import shutil

import libvirt

from compute_agent.net import ports as net_ports
from compute_agent.virt.driver import VirtError
from compute_agent.virt.libvirt import config
from compute_agent.virt.libvirt import disks


class ColdMoveOps:
    """Mixed into :class:`~compute_agent.virt.libvirt.driver.LibvirtDriver`."""

    def export_disk(self, uuid, *, target):
        self._op('export_disk', uuid, lambda dom: self._snapshot(dom, target))

    def migrate_in(self, uuid, *, name, flavor, image_ref, disk, ports=(),
                   start=True, config_drive=None, console_log=None):
        """``console_log``: the end of the source's log (bytes), which
        this host's log starts with (virtlogd appends to it)."""
        ports = net_ports.checked(ports)
        self._links_honoured(uuid, ports, 'not moved here')
        self._cleanup_before_allocation()
        spec = (name, flavor, image_ref, disk, ports, start, config_drive,
                console_log)
        try:
            with self._book.busy(uuid):
                self.connection.run(
                    lambda conn: self._migrate_in(conn, uuid, *spec),
                    retry=False)
        except libvirt.libvirtError as err:
            raise VirtError('cold migration of domain %s to host %s failed: '
                            '%s' % (uuid, self.host, err)) from None

    def _migrate_in(self, conn, uuid, name, flavor, image_ref, disk, ports,
                    start, config_drive, console_log):
        if self._lookup(conn, uuid) is not None:
            raise VirtError('domain %s already exists on host %s'
                            % (uuid, self.host))
        files = self._files(uuid)
        files.create()
        dom = None
        try:
            shutil.copyfile(disk, files.disk)
            disks.grow(files.disk, 'qcow2', flavor.disk_gb)
            log = self._console_log(uuid)
            if console_log and log is not None:
                with open(log, 'wb') as f:
                    f.write(console_log)
            with self._ports_lock:
                dom = conn.defineXML(config.domain_xml(
                    virt_type=self.virt_type, uuid=uuid, name=name,
                    flavor=flavor, image_ref=image_ref, arch=self.arch,
                    cpu_mode=self.cpu_mode, disks=[(files.disk, 'qcow2')],
                    config_drive=config_drive,
                    console_log=self._console_log(uuid),
                    serial_tcp=self._serial_tcp(conn), ports=ports))
            if start:
                self._start(dom)
        except BaseException:
            self._forget_domain(dom)
            files.remove()
            raise

"""Operations that replace a domain's definition or disk, with their undo.

Each regenerates the definition from the template (:mod:`.config`) with the
instance's metadata, and records what it must restore in the instance's
files (:class:`.disks.InstanceFiles`) before it changes anything:

* rescue: ``rescue.json`` holds the definition and whether it ran; the
  domain boots the rescue image with its own disk second. unrescue restores
  both (the domain runs again only if it ran before the rescue).
* resize (cold, same host): ``resize.json`` holds the old definition until
  confirm (dropped) or revert (redefined). The disk grows, never shrinks.
* rebuild: a new disk from the new image replaces the old one; power as
  before.
* snapshot: a running domain is saved (managed save), its disk written
  flattened to a qcow2 file the agent names (and uploads), and the domain
  restored.

Rescue and rebuild build their disk as :meth:`spawn` does: a qcow2 overlay
on the cached image (``image``, passed by the agent).

A failure before anything changed raises a rolled-back VirtError; after,
the old definition is put back (rolled back) or, if even that fails, the
VirtError says ``rolled_back=False``.
"""

import logging
import os
import time

import libvirt

from common.states import power
from compute_agent.net import ports as net_ports
from compute_agent.virt.driver import NotSupported
from compute_agent.virt.driver import VirtError
from compute_agent.virt.libvirt import config
from compute_agent.virt.libvirt import disks

LOG = logging.getLogger(__name__)

PASSWORD_USER = 'root'
_NO_AGENT = frozenset({libvirt.VIR_ERR_AGENT_UNRESPONSIVE,
                       libvirt.VIR_ERR_OPERATION_UNSUPPORTED,
                       libvirt.VIR_ERR_NO_SUPPORT,
                       libvirt.VIR_ERR_ARGUMENT_UNSUPPORTED})


_KEEP = object()      # _definition: the config drive the definition has


def _inactive_xml(dom):
    return dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)


class DetourOps:
    """Mixed into :class:`LibvirtDriver`; uses its helpers."""

    def _instance(self, dom, xml):
        inst = config.instance_of(xml)
        if inst is None:
            raise VirtError('domain %s has no Tristate metadata: it was not '
                            'made by this driver' % dom.UUIDString())
        return inst

    def _definition(self, dom, xml, *, flavor=None, image_ref=None,
                    disks=None, config_drive=_KEEP, ports=None):
        """``dom``'s definition regenerated from ``xml``, with changes (its
        config drive kept unless ``config_drive`` says another, or None;
        its ports kept unless ``ports`` is given)."""
        name, old_flavor, old_image = self._instance(dom, xml)
        if config_drive is _KEEP:
            config_drive = config.config_drive_of(xml)
        return config.domain_xml(
            virt_type=self.virt_type, uuid=dom.UUIDString(), name=name,
            flavor=flavor or old_flavor, image_ref=image_ref or old_image,
            disks=disks if disks is not None else config.disks_of(xml),
            arch=self.arch, cpu_mode=self.cpu_mode,
            config_drive=config_drive,
            console_log=self._console_log(dom.UUIDString()),
            serial_tcp=config.serial_tcp_of(xml),
            ports=config.ports_of(xml) if ports is None else ports,
            numa_cells=config.numa_of(xml))

    def _roll_back(self, dom, xml, was_running, what, err):
        """Put definition ``xml`` back, running as before; always raises."""
        uuid = dom.UUIDString()
        try:
            if dom.isActive():
                self._destroy_active(dom)
            dom = dom.connect().defineXML(xml)
            if was_running:
                self._start(dom)
        except libvirt.libvirtError as again:
            raise VirtError('%s of domain %s failed (%s) and restoring it '
                            'failed too (%s)' % (what, uuid, err, again),
                            rolled_back=False) from None
        raise VirtError('%s of domain %s failed, domain restored: %s'
                        % (what, uuid, err))

    # --- rescue -----------------------------------------------------------------

    def rescue(self, uuid, *, image_ref, image=None, password=None,
               password_required=False):
        """Boot the rescue image. A ``password_required`` (one the user
        gave) is set for root through the rescue system's qemu-guest-agent
        within ``rescue_password_timeout``, else the rescue is undone and
        a rolled-back VirtError says why; a generated one is not waited for (no
        agent may ever answer)."""
        self._cleanup_before_allocation()
        with self._image(image_ref, image) as base:
            self._op('rescue', uuid, lambda dom: self._rescue(dom, base))
        if password is not None and password_required:
            self._rescue_password(uuid, password)

    def _rescue_password(self, uuid, password):
        deadline = time.monotonic() + self.rescue_password_timeout
        while True:
            try:
                self.set_password(uuid, password=password)
                return
            except NotSupported as err:
                if time.monotonic() >= deadline:
                    why = err
                    break
            if self._stopping.wait(1.0):
                why = 'the agent stops'
                break
        self._op('unrescue', uuid, self._unrescue)
        raise VirtError('no guest agent in the rescue system of %s took the '
                        'admin password within %.0f s (%s); the rescue was '
                        'undone' % (uuid, self.rescue_password_timeout, why),
                        rolled_back=True)

    def _rescue(self, dom, image):
        files = self._files(dom.UUIDString())
        if files.load('rescue') is not None:
            raise VirtError('cannot rescue domain %s: already rescued'
                            % dom.UUIDString())
        xml = _inactive_xml(dom)
        self._instance(dom, xml)
        was_running = self._up(dom)
        fmt = disks.create_disk(image, files.rescue_disk, 0)
        files.save('rescue', {'xml': xml, 'was_running': was_running})
        try:
            if dom.isActive():          # running, or kept after it stopped
                self._destroy_active(dom)
            rescue = dom.connect().defineXML(self._definition(
                dom, xml, disks=[(files.rescue_disk, fmt), *config.disks_of(xml)]))
            self._start(rescue)
        except libvirt.libvirtError as err:
            files.discard('rescue')
            _unlink(files.rescue_disk)
            self._roll_back(dom, xml, was_running, 'rescue', err)

    def unrescue(self, uuid):
        self._cleanup_before_allocation()
        self._op('unrescue', uuid, self._unrescue)

    def _unrescue(self, dom):
        files = self._files(dom.UUIDString())
        saved = files.load('rescue')
        if saved is None:
            raise VirtError('cannot unrescue domain %s: not rescued'
                            % dom.UUIDString())
        try:
            if dom.isActive():
                self._destroy_active(dom)
            dom = dom.connect().defineXML(saved['xml'])
            if saved['was_running']:
                self._start(dom)
        except libvirt.libvirtError as err:
            raise VirtError('unrescue of domain %s failed half-way: %s'
                            % (dom.UUIDString(), err),
                            rolled_back=False) from None
        files.discard('rescue')
        _unlink(files.rescue_disk)

    # --- rebuild ----------------------------------------------------------------

    def rebuild(self, uuid, *, image_ref, image=None, config_drive=None,
                ports=None):
        """``ports``: the task's ports, which replace the domain's; None
        (a conductor that sends none) keeps those it has."""
        if ports is not None:
            ports = net_ports.checked(ports)
        self._cleanup_before_allocation()
        with self._image(image_ref, image) as base:
            self._op('rebuild', uuid, lambda dom: self._rebuild(
                dom, image_ref, base, config_drive, ports))

    def _rebuild(self, dom, image_ref, image, config_drive=None, ports=None):
        files = self._files(dom.UUIDString())
        xml = _inactive_xml(dom)
        _name, flavor, _image = self._instance(dom, xml)
        was_running = self._up(dom)
        files.create()
        fmt = disks.create_disk(image, files.disk + '.new', flavor.disk_gb)
        try:
            if dom.isActive():          # running, or kept after it stopped
                self._destroy_active(dom)
            if dom.hasManagedSaveImage(0):
                dom.managedSaveRemove(0)
            os.replace(files.disk + '.new', files.disk)
            dom = dom.connect().defineXML(self._definition(
                dom, xml, image_ref=image_ref, disks=[(files.disk, fmt)],
                config_drive=config_drive, ports=ports))
            if was_running:
                self._start(dom)
        except (libvirt.libvirtError, OSError) as err:
            _unlink(files.disk + '.new')
            raise VirtError('rebuild of domain %s failed half-way: %s'
                            % (dom.UUIDString(), err),
                            rolled_back=False) from None

    # --- resize (cold, on this host) ------------------------------------------------

    def resize(self, uuid, *, flavor):
        self._cleanup_before_allocation()
        self._op('resize', uuid, lambda dom: self._resize(dom, flavor))

    def _resize(self, dom, flavor):
        files = self._files(dom.UUIDString())
        if files.load('resize') is not None:
            raise VirtError('cannot resize domain %s: a resize waits to be '
                            'confirmed or reverted' % dom.UUIDString())
        xml = _inactive_xml(dom)
        self._instance(dom, xml)
        was_running = self._up(dom)
        files.save('resize', {'xml': xml})
        try:
            self._shut_down(dom, self.shutdown_timeout)
            dom = dom.connect().defineXML(self._definition(dom, xml, flavor=flavor))
            boot = config.disks_of(xml)[:1]
            for path, fmt in boot:
                disks.grow(path, fmt, flavor.disk_gb)
            if was_running:
                self._start(dom)
        except (libvirt.libvirtError, VirtError, OSError) as err:
            files.discard('resize')
            self._roll_back(dom, xml, was_running, 'resize', err)

    def confirm_resize(self, uuid):
        def run(dom):
            files = self._files(uuid)
            if files.load('resize') is None:
                raise VirtError('cannot confirm_resize domain %s: no resize '
                                'to confirm' % uuid)
            files.discard('resize')
        self._op('confirm_resize', uuid, run)

    def revert_resize(self, uuid):
        self._cleanup_before_allocation()
        self._op('revert_resize', uuid, self._revert_resize)

    def _revert_resize(self, dom):
        files = self._files(dom.UUIDString())
        saved = files.load('resize')
        if saved is None:
            raise VirtError('cannot revert_resize domain %s: no resize to '
                            'revert' % dom.UUIDString())
        was_running = self._up(dom)
        try:
            self._shut_down(dom, self.shutdown_timeout)
            dom = dom.connect().defineXML(saved['xml'])
            if was_running:
                self._start(dom)
        except libvirt.libvirtError as err:
            raise VirtError('revert_resize of domain %s failed half-way: %s'
                            % (dom.UUIDString(), err),
                            rolled_back=False) from None
        files.discard('resize')

    # --- snapshot and password ----------------------------------------------------

    def snapshot(self, uuid, *, image_name, image_id=None, target=None):
        """Write the disk, flattened, as a qcow2 file ``target`` (the
        agent uploads it as image ``image_id``); returns its format."""
        if target is None:
            raise NotSupported('snapshot without an image service to upload '
                               'to (the task named none)', self.name)
        self._op('snapshot', uuid, lambda dom: self._snapshot(dom, target))
        return 'qcow2'

    def _snapshot(self, dom, target):
        files = self._files(dom.UUIDString())
        own = [d for d in config.disks_of(dom.XMLDesc(0))
               if d[0] == files.disk]
        if not own:
            raise VirtError('domain %s has no disk at %s to snapshot'
                            % (dom.UUIDString(), files.disk))
        state = self._state(dom)
        active = self._up(dom)
        if active:
            dom.managedSave(0)              # a consistent disk to copy
        try:
            disks.export(*own[0], target)
        finally:
            if active:
                self._restore_saved(dom, state)

    def _restore_saved(self, dom, state):
        try:
            self._start(dom)
            if state == libvirt.VIR_DOMAIN_PAUSED:
                self._book.expect(dom.UUIDString(), power.PAUSED)
                dom.suspend()
        except libvirt.libvirtError as err:
            raise VirtError('snapshot of domain %s: restoring it after the '
                            'copy failed: %s' % (dom.UUIDString(), err),
                            rolled_back=False) from None

    def set_password(self, uuid, *, password):
        self._op('set_password', uuid,
                 lambda dom: self._set_password(dom, password))

    def _set_password(self, dom, password):
        self._require(dom, 'set_password', {libvirt.VIR_DOMAIN_RUNNING})
        try:
            dom.setUserPassword(PASSWORD_USER, password, 0)
        except libvirt.libvirtError as err:
            if err.get_error_code() in _NO_AGENT:
                raise NotSupported('set_password without a responding guest '
                                   'agent in domain %s (%s)'
                                   % (dom.UUIDString(), err),
                                   self.name) from None
            raise


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass

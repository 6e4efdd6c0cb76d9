"""The virt driver interface: what the compute agent asks of a hypervisor.

The agent (:mod:`compute_agent.manager`) is the only caller. A driver never
touches the database or the bus; it changes domains and says what it sees.
Two drivers exist: :mod:`compute_agent.virt.fake` (a file-backed fake
hypervisor, for the embedded setup and the tests) and
:mod:`compute_agent.virt.libvirt` (KVM/QEMU and Xen).

Errors: an operation that fails raises :class:`VirtError`. Its
``rolled_back`` says whether the domain was left as it was before the call
(the task then fails with vm_state unchanged) or not (vm_state ERROR).
:class:`NotSupported` is a clean failure: nothing was attempted.
"""

import abc
import dataclasses

from common import states
from common.flavors import Flavor  # noqa: F401 (part of the interface)


class VirtError(Exception):
    """A driver operation failed. ``rolled_back``: the domain is unchanged."""

    def __init__(self, message, *, rolled_back=True):
        super().__init__(message)
        self.rolled_back = rolled_back


class NotSupported(VirtError):
    def __init__(self, operation, driver):
        super().__init__('%s is not supported by the %s driver'
                         % (operation, driver), rolled_back=True)


class DomainNotFound(VirtError):
    def __init__(self, uuid, host):
        super().__init__('domain %s does not exist on host %s' % (uuid, host),
                         rolled_back=True)


@dataclasses.dataclass(frozen=True)
class DomainInfo:
    """What the hypervisor says of one domain right now."""
    uuid: str
    power_state: int
    reason: str | None = None        # one of states.POWER_REASONS, or None

    def to_dict(self):
        return {'uuid': self.uuid, 'power_state': self.power_state,
                'reason': self.reason}


@dataclasses.dataclass(frozen=True)
class Capacity:
    vcpus: int
    memory_mb: int
    disk_gb: int


class ComputeDriver(abc.ABC):
    """One hypervisor host. Every operation takes the instance's uuid.

    Operations are synchronous: they return when the domain is in the state
    asked for, or raise :class:`VirtError`. ``destroy`` never fails because
    the domain is already gone.
    """

    name = 'abstract'

    def init_host(self, host):
        """Connect; called once before anything else."""
        self.host = host

    def cleanup_host(self):  # noqa: B027 (optional hook)
        """Disconnect and stop watching; called once at shutdown."""

    @abc.abstractmethod
    def get_capacity(self):
        """The host's :class:`Capacity`."""

    @abc.abstractmethod
    def list_domains(self):
        """Every domain on the host, as :class:`DomainInfo`, instance or not."""

    def sweep_console_logs(self, keep, cutoff):
        """Remove the console logs of instances not in ``keep`` last
        written before ``cutoff``; their uuids (:mod:`compute_agent.
        leftovers`). A driver whose logs no host owns alone (the fake
        driver's, shared by its hosts) keeps them: the default."""
        return []

    def get_domain(self, uuid):
        """The :class:`DomainInfo` of one domain, or None if it is absent."""
        for info in self.list_domains():
            if info.uuid == uuid:
                return info
        return None

    def watch(self, callback):  # noqa: B027 (optional hook)
        """Call ``callback(DomainInfo)`` whenever a domain changes by itself
        or is changed from outside; ``power_state`` NOSTATE means it vanished.
        Drivers that cannot watch do nothing: the periodic report covers them.
        """

    def host_shutting_down(self):  # noqa: B027 (optional hook)
        """The machine is shutting down: from now on, guests that stop were
        stopped by the host (reason ``host``), not by themselves."""

    def cleanup_preserved(self):
        """Destroy domains kept after shutting down (Xen ``preserve``) once
        they have been reported. Returns the uuids destroyed."""
        return []

    # --- consoles (issue 24) -------------------------------------------------

    def get_console_output(self, uuid, *, max_bytes):
        """The end of the guest's console log, at most ``max_bytes`` bytes,
        also after the guest stopped; None when the driver keeps no log for
        it (the API then answers Nova's 404)."""
        return None

    def console_endpoint(self, uuid):
        """``{'host': address, 'port': int}`` of the guest's interactive
        serial console (a raw TCP listener on this host), or None when it
        has none."""
        return None

    def _unsupported(self, operation):
        raise NotSupported(operation, self.name)

    # --- lifecycle --------------------------------------------------------------

    # A driver that builds disks from image files sets this: the agent then
    # fetches the task's image into the host's cache and passes it to
    # spawn, rebuild and rescue as ``image`` (a
    # :class:`compute_agent.imagecache.CachedImage`), if they take it.
    needs_image_files = False

    @abc.abstractmethod
    def spawn(self, uuid, *, name, flavor, image_ref, config_drive=None):
        """Define and start a domain from ``image_ref`` with ``flavor``;
        ``config_drive``: the path of an ISO to attach read-only as a
        CD-ROM (the agent's, compute_agent/configdrive.py), or None.
        A driver that gives guests network cards adds a keyword-only
        ``ports=()``: the task's ports (:mod:`compute_agent.net.ports`),
        one card each, in order, kept with the domain (see
        :meth:`domain_ports`); the agent passes it only to drivers that
        take it (:func:`compute_agent.tasks.takes`)."""

    def domain_ports(self, uuid=None):
        """{uuid: [port dict]} of the domains on this host that have
        ports, as their build or rebuild gave them (or of ``uuid`` alone:
        {} when it is gone). The host's DHCP entries are made from this,
        so they follow whatever the domains carry: builds, deletes,
        migrations in and out, an agent restart. A driver without ports
        has none."""
        return {}

    @abc.abstractmethod
    def destroy(self, uuid):
        """Power off at once and remove the domain and its disks."""

    @abc.abstractmethod
    def power_off(self, uuid, *, timeout=60):
        """Clean shutdown, then destroy after ``timeout`` seconds."""

    @abc.abstractmethod
    def power_on(self, uuid):
        """Start a stopped domain."""

    def reboot(self, uuid, *, hard=False):
        self._unsupported('reboot')

    def pause(self, uuid):
        self._unsupported('pause')

    def unpause(self, uuid):
        self._unsupported('unpause')

    def suspend(self, uuid):
        self._unsupported('suspend')

    def resume(self, uuid):
        self._unsupported('resume')

    def rescue(self, uuid, *, image_ref):
        """Boot ``image_ref`` as the rescue system. A driver that can set
        the rescue system's admin password adds a ``password`` keyword: the
        agent passes the one the API answered with (never log it); and a
        ``password_required`` keyword, true when the user gave it: then
        the rescue fails (undone) when the password cannot be set."""
        self._unsupported('rescue')

    def unrescue(self, uuid):
        self._unsupported('unrescue')

    def rebuild(self, uuid, *, image_ref, config_drive=None):
        """A new root disk from ``image_ref``; ``config_drive`` as in
        :meth:`spawn` (the rebuilt one). A driver with ports adds
        ``ports=None``: the task's ports replace the domain's; None (the
        task carried none: an older conductor) keeps them."""
        self._unsupported('rebuild')

    def resize(self, uuid, *, flavor):
        """Move to ``flavor``, keeping the old definition for a revert."""
        self._unsupported('resize')

    def confirm_resize(self, uuid):
        self._unsupported('confirm_resize')

    def revert_resize(self, uuid):
        self._unsupported('revert_resize')

    def migrate_out(self, uuid, *, dest):
        """Live-migrate to ``dest``; with a fake, move it between stores."""
        self._unsupported('live_migrate')

    def export_disk(self, uuid, *, target):
        """A cold move's source: write the (powered off) domain's root
        disk to the file ``target`` as one stand-alone qcow2 image, the
        domain and its own disk untouched."""
        self._unsupported('cold migration (export_disk)')

    def migrate_in(self, uuid, *, name, flavor, image_ref, disk, ports=(),
                   start=True, config_drive=None):
        """A cold move's destination: a new domain of ``flavor`` whose
        root disk is the qcow2 file ``disk`` (copied: the caller removes
        it), grown to the flavor's size; running if ``start``; with the
        ISO file ``config_drive`` attached (the guest's, carried)."""
        self._unsupported('cold migration (migrate_in)')

    def snapshot(self, uuid, *, image_name):
        """Save an image of the disk. A driver that can name images by id
        adds an ``image_id`` keyword: the id the conductor decided and the
        API answered with. A driver that adds a ``target`` keyword writes
        the disk there (a stand-alone image file) and returns its format;
        the agent uploads it to the image service and removes it."""
        self._unsupported('snapshot')

    def set_password(self, uuid, *, password):
        self._unsupported('set_password')

    def set_security_groups(self, uuid, *, ports):
        """Each of the domain's cards (by MAC) up or down as the task's
        ``ports`` say (``security_groups``: common/secgroups.py), now and
        in its definition; the domain keeps the ports for its next
        definition."""
        self._unsupported('set_security_groups')

    def get_diagnostics(self, uuid):
        """What the hypervisor measures of the domain now (Nova's server
        diagnostics): ``{'power_state', 'hypervisor', 'hypervisor_os',
        'memory_kib', 'memory_used_kib', 'memory_stats': {name: KiB},
        'cpus': [{'id', 'time'}], 'disks': [{'dev', 'read_bytes',
        'read_requests', 'write_bytes', 'write_requests', 'errors_count'}],
        'nics': [{'dev', 'mac_address', 'rx_octets', 'rx_packets',
        'rx_errors', 'rx_drop', 'tx_octets', 'tx_packets', 'tx_errors',
        'tx_drop'}]}`` (a counter the hypervisor does not keep is None).
        :class:`DomainNotFound` when there is no such domain."""
        self._unsupported('get_diagnostics')


def power_state_of(info):
    """``info``'s power_state, NOSTATE when the domain is absent."""
    return states.power.NOSTATE if info is None else info.power_state

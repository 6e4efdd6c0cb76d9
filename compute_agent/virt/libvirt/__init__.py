"""The libvirt virt driver (KVM/QEMU, Xen, and libvirt's test driver).

The only package of Tristate that imports ``libvirt``. Modules: ``driver``
(the :class:`LibvirtDriver` and its simple operations), ``detours`` (rescue,
rebuild, resize, snapshot), ``config`` (domain XML templates per hypervisor
type), ``power`` (libvirt state and reason to power_state and reason),
``events`` (the event loop thread and the debounce), ``connection``
(re-opening a lost connection), ``disks`` (images and instance files).
"""

from compute_agent.virt.libvirt.driver import LibvirtDriver

__all__ = ['LibvirtDriver']

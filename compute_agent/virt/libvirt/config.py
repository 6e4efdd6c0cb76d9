"""Domain XML, generated from one template per hypervisor type.

``kvm`` and ``qemu`` share :data:`KVM_TEMPLATE` (``qemu`` is TCG: no host
CPU model; ``kvm`` takes ``cpu_mode``: host-model, host-passthrough, or none
for the hypervisor's default model, which nested KVM hosts may need);
``xen`` uses :data:`XEN_TEMPLATE`, an HVM guest through libxl whose
``on_poweroff`` and ``on_crash`` are ``preserve`` (seed 003): a guest that
powered itself off or crashed stays defined *and active* until the agent
has reported it and destroys it (:mod:`.preserve`).

Each domain carries Tristate's view of it in ``<metadata>`` (instance name,
flavor, image, and its ports as the build task gave them, JSON in
``<tristate:ports>``), so resize, rescue and rebuild can regenerate or edit
the definition without asking the conductor, and the host's DHCP service
(:mod:`compute_agent.net.dhcp`) can rebuild its entries from the domains
alone after a restart or a migration. Ports become ``<interface>``
elements (:func:`_interfaces`): on KVM/QEMU a virtio card with the port's
MAC on the network's Linux bridge or libvirt network, with its MTU; on Xen
the same without a model (libxl gives an HVM guest an emulated card and a
PV one, the guest's PV driver takes over) and without ``<mtu>`` (Xen's
vif-bridge script gives the vif the bridge's MTU). The domain's libvirt name is
``tristate-<uuid>``: instance names need not be unique, domain names must.

A guest with NUMA cells (a flavor's ``hw:numa_nodes`` > 1,
:mod:`common.numa`) gets them as ``<cpu><numa><cell/>...`` in either
template (libxl makes them the Xen guest's vNUMA nodes); a definition
regenerated from the domain's own XML keeps them (:func:`numa_of`).
"""

import json
import string
from xml.etree import ElementTree
from xml.sax.saxutils import escape
from xml.sax.saxutils import quoteattr

from common import secgroups
from common.flavors import Flavor

NAMESPACE = 'urn:tristate:instance:1'
_NS = {'t': NAMESPACE}
VIRT_TYPES = ('kvm', 'qemu', 'xen')
CPU_MODES = ('host-model', 'host-passthrough', 'none')
PRESERVE = 'preserve'

KVM_TEMPLATE = string.Template("""\
<domain type='$virt_type'>
  <name>$domain_name</name>
  <uuid>$uuid</uuid>
  <title>$title</title>
  <metadata>
$metadata
  </metadata>
  <memory unit='MiB'>$memory_mb</memory>
  <currentMemory unit='MiB'>$memory_mb</currentMemory>
  <vcpu placement='static'>$vcpus</vcpu>
  <os>
    <type arch='$arch'>hvm</type>
    <boot dev='hd'/>
  </os>
  <features><acpi/><apic/></features>
$cpu
  <clock offset='utc'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
$disks
$interfaces
$serial
    <channel type='unix'>
      <target type='virtio' name='org.qemu.guest_agent.0'/>
    </channel>
    <memballoon model='virtio'/>
  </devices>
</domain>
""")

XEN_TEMPLATE = string.Template("""\
<domain type='xen'>
  <name>$domain_name</name>
  <uuid>$uuid</uuid>
  <title>$title</title>
  <metadata>
$metadata
  </metadata>
  <memory unit='MiB'>$memory_mb</memory>
  <currentMemory unit='MiB'>$memory_mb</currentMemory>
  <vcpu placement='static'>$vcpus</vcpu>
  <os>
    <type arch='$arch' machine='xenfv'>hvm</type>
    <boot dev='hd'/>
  </os>
  <features><acpi/><apic/><pae/></features>
$cpu
  <clock offset='utc'/>
  <on_poweroff>preserve</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>preserve</on_crash>
  <devices>
$disks
$interfaces
    <serial type='pty'/>
    <console type='pty'/>
  </devices>
</domain>
""")

_DISK = string.Template("""\
    <disk type='file' device='disk'>
      <driver name='qemu' type='$fmt'/>
      <source file=$path/>
      <target dev='$dev' bus='$bus'/>
    </disk>""")

# The config drive (issue 24): read-only, on the bus the guest's firmware
# and kernel read without drivers (IDE for KVM/QEMU, Xen HVM's emulated
# IDE too), after the disks.
_CDROM = string.Template("""\
    <disk type='file' device='cdrom'>
      <driver name='qemu' type='raw'/>
      <source file=$path/>
      <target dev='$dev' bus='$bus'/>
      <readonly/>
    </disk>""")
_CDROM_TARGETS = {'kvm': ('hdd', 'ide'), 'qemu': ('hdd', 'ide'),
                  'xen': ('hdd', 'ide')}

_METADATA = string.Template("""\
    <tristate:instance xmlns:tristate='%s'>
      <tristate:name>$name</tristate:name>
      <tristate:flavor name=$flavor_name vcpus='$vcpus' memory_mb='$memory_mb'
                       disk_gb='$disk_gb'/>
      <tristate:image ref=$image_ref/>$ports
    </tristate:instance>""" % NAMESPACE)

# virt_type: (template, disk device prefix, disk bus, NIC model or None)
_FLAVOURS = {
    'kvm': (KVM_TEMPLATE, 'vd', 'virtio', 'virtio'),
    'qemu': (KVM_TEMPLATE, 'vd', 'virtio', 'virtio'),
    'xen': (XEN_TEMPLATE, 'xvd', 'xen', None),
}


def domain_name(uuid):
    return 'tristate-%s' % uuid


def domain_xml(*, virt_type, uuid, name, flavor, image_ref, disks,
               arch='x86_64', cpu_mode='host-model', config_drive=None,
               console_log=None, serial_tcp=None, ports=(), numa_cells=None):
    """The domain XML. ``disks``: [(path, format)], the boot disk first;
    ``config_drive``: an ISO's path, attached read-only as a CD-ROM.
    ``console_log``: the file the serial console is logged to (KVM/QEMU);
    ``serial_tcp``: (address, port) of the serial console's TCP listener,
    or None for a pty (see :func:`serial_xml`). ``ports``: checked port
    dicts (:func:`compute_agent.net.ports.checked`), one ``<interface>``
    each, in order. ``numa_cells``: the guest's NUMA cells
    (:mod:`common.numa`), a ``<numa>`` in its ``<cpu>``."""
    template, prefix, bus, nic_model = _FLAVOURS[virt_type]
    cdrom = ''
    if config_drive:
        dev, cd_bus = _CDROM_TARGETS[virt_type]
        cdrom = '\n' + _CDROM.substitute(path=quoteattr(config_drive),
                                         dev=dev, bus=cd_bus)
    return template.substitute(
        serial=serial_xml(console_log, serial_tcp),
        virt_type=virt_type, domain_name=domain_name(uuid), uuid=uuid,
        title=escape(name), arch=escape(arch),
        metadata=_metadata(name, flavor, image_ref, ports),
        interfaces=_interfaces(ports, nic_model, mtu=virt_type != 'xen'),
        memory_mb=int(flavor.memory_mb), vcpus=int(flavor.vcpus),
        cpu=_cpu(virt_type, cpu_mode, numa_cells),
        disks='\n'.join(_DISK.substitute(fmt=fmt, path=quoteattr(path),
                                         dev=prefix + chr(ord('a') + i),
                                         bus=bus)
                        for i, (path, fmt) in enumerate(disks)) + cdrom)


def _cpu(virt_type, cpu_mode, numa_cells):
    """The ``<cpu>`` element: KVM's CPU model, and the guest's NUMA cells
    (KVM, QEMU, and Xen, where libxl makes them the guest's vNUMA nodes);
    empty when there is neither."""
    mode = (" mode='%s'" % cpu_mode
            if virt_type == 'kvm' and cpu_mode != 'none' else '')
    if not numa_cells:
        return '  <cpu%s/>' % mode if mode else ''
    cells = '\n'.join(
        "      <cell id='%d' cpus='%s' memory='%d' unit='MiB'/>"
        % (int(c['id']), escape(str(c['cpus'])), int(c['memory_mb']))
        for c in numa_cells)
    return '  <cpu%s>\n    <numa>\n%s\n    </numa>\n  </cpu>' % (mode, cells)


def numa_of(xml):
    """The NUMA cells of a definition's ``<cpu>``, as
    :func:`domain_xml` takes them (None when it has none)."""
    cells = ElementTree.fromstring(xml).findall('cpu/numa/cell')
    if not cells:
        return None
    return [{'id': int(c.get('id')), 'cpus': c.get('cpus'),
             'memory_mb': _mib(c.get('memory'), c.get('unit', 'KiB'))}
            for c in cells]


def _mib(value, unit):
    scale = {'KiB': 1024, 'k': 1024, 'K': 1024, 'MiB': 1, 'M': 1,
             'GiB': 1 / 1024, 'G': 1 / 1024, 'b': 1024 * 1024,
             'bytes': 1024 * 1024}
    return int(int(value) / scale.get(unit, 1024))


# The guest's serial port, logged by libvirt (virtlogd, which rotates the
# file: /etc/libvirt/virtlogd.conf max_size, max_backups) to a file per
# instance. A pty serial gets the ``<console>`` alias libvirt's own tools
# use (virsh console); a TCP one (interactive console through
# tristate-console-proxy) is a raw listener, and libvirt adds the alias.
_SERIAL_PTY = """\
    <serial type='pty'>$log
    </serial>
    <console type='pty'/>"""
_SERIAL_TCP = """\
    <serial type='tcp'>
      <source mode='bind' host=$host service='$port'/>
      <protocol type='raw'/>$log
    </serial>"""
_LOG = "\n      <log file=%s append='on'/>"


def serial_xml(console_log=None, serial_tcp=None):
    log = _LOG % quoteattr(console_log) if console_log else ''
    if serial_tcp is None:
        return string.Template(_SERIAL_PTY).substitute(log=log)
    host, port = serial_tcp
    return string.Template(_SERIAL_TCP).substitute(
        log=log, host=quoteattr(host), port=int(port))


def serial_tcp_of(xml):
    """(address, port) of a definition's TCP serial listener, or None."""
    root = ElementTree.fromstring(xml)
    for serial in root.findall('devices/serial'):
        source = serial.find('source')
        if serial.get('type') == 'tcp' and source is not None \
                and source.get('mode') == 'bind':
            return source.get('host'), int(source.get('service'))
    return None


def _metadata(name, flavor, image_ref, ports):
    return _METADATA.substitute(
        name=escape(name), flavor_name=quoteattr(flavor.name),
        vcpus=int(flavor.vcpus), memory_mb=int(flavor.memory_mb),
        disk_gb=int(flavor.disk_gb), image_ref=quoteattr(image_ref),
        ports=('\n      <tristate:ports>%s</tristate:ports>'
               % escape(json.dumps(list(ports), sort_keys=True))
               if ports else ''))


def _interfaces(ports, model, *, mtu):
    """One ``<interface>`` per port: on its network's Linux bridge, else
    on its libvirt network."""
    return '\n'.join(_interface(port, model, mtu) for port in ports)


def _interface(port, model, with_mtu):
    network = port['network']
    if network.get('bridge'):
        kind, source = 'bridge', "<source bridge=%s/>" % quoteattr(
            network['bridge'])
    else:
        kind, source = 'network', "<source network=%s/>" % quoteattr(
            network['libvirt_network'])
    lines = ["    <interface type='%s'>" % kind,
             '      <mac address=%s/>' % quoteattr(port['mac']),
             '      ' + source]
    if model:
        lines.append("      <model type='%s'/>" % model)
    if with_mtu and network.get('mtu'):
        lines.append("      <mtu size='%d'/>" % int(network['mtu']))
    if secgroups.link_state(port) == secgroups.LINK_DOWN:
        # in no security group: all traffic dropped (common/secgroups.py)
        lines.append("      <link state='down'/>")
    lines.append('    </interface>')
    return '\n'.join(lines)


# --- reading and editing a definition -------------------------------------------

def instance_of(xml):
    """(name, Flavor, image_ref) from a definition's metadata, or None."""
    root = ElementTree.fromstring(xml)
    inst = root.find('metadata/t:instance', _NS)
    if inst is None:
        return None
    fl = inst.find('t:flavor', _NS)
    flavor = Flavor(fl.get('name'), int(fl.get('vcpus')),
                    int(fl.get('memory_mb')), int(fl.get('disk_gb')))
    return (inst.findtext('t:name', '', _NS), flavor,
            inst.find('t:image', _NS).get('ref'))


def ports_of(xml):
    """The ports a definition's metadata carries (a list of dicts, as the
    build task gave them); [] for a definition without any."""
    root = ElementTree.fromstring(xml)
    text = root.findtext('metadata/t:instance/t:ports', None, _NS)
    return json.loads(text) if text else []


def interfaces_of(xml):
    """[(type, source, mac, model or None, mtu or None)] of the
    definition's ``<interface>`` elements, in order."""
    root = ElementTree.fromstring(xml)
    found = []
    for nic in root.findall('devices/interface'):
        source = nic.find('source')
        model, mtu = nic.find('model'), nic.find('mtu')
        found.append((nic.get('type'),
                      source.get('bridge') or source.get('network'),
                      nic.find('mac').get('address'),
                      None if model is None else model.get('type'),
                      None if mtu is None else int(mtu.get('size'))))
    return found


def link_states_of(xml):
    """{mac: 'up' | 'down'} of the definition's ``<interface>`` elements
    (no ``<link>``: up)."""
    root = ElementTree.fromstring(xml)
    found = {}
    for nic in root.findall('devices/interface'):
        link = nic.find('link')
        found[nic.find('mac').get('address').lower()] = (
            secgroups.LINK_UP if link is None else link.get('state'))
    return found


def with_link_state(nic_xml, state):
    """One ``<interface>`` element (as the domain's XML has it) with its
    ``<link state>`` set to ``state``: what ``updateDeviceFlags`` takes,
    as ``virsh domif-setlink`` does."""
    nic = ElementTree.fromstring(nic_xml)
    link = nic.find('link')
    if link is None:
        link = ElementTree.SubElement(nic, 'link')
    link.set('state', state)
    return ElementTree.tostring(nic, encoding='unicode')


def interface_elements(xml):
    """{mac: the ``<interface>`` element's XML} of a definition."""
    root = ElementTree.fromstring(xml)
    return {nic.find('mac').get('address').lower():
            ElementTree.tostring(nic, encoding='unicode')
            for nic in root.findall('devices/interface')}


def lifecycle_actions(xml):
    """{'on_poweroff': ..., 'on_crash': ...} as the definition says."""
    root = ElementTree.fromstring(xml)
    return {tag: (root.findtext(tag) or '').strip()
            for tag in ('on_poweroff', 'on_crash', 'on_reboot')}


def preserves(xml):
    """Whether a stopped or crashed domain of this definition is kept."""
    actions = lifecycle_actions(xml)
    return PRESERVE in (actions['on_poweroff'], actions['on_crash'])


def config_drive_of(xml):
    """The path of the definition's config drive (its CD-ROM), or None."""
    root = ElementTree.fromstring(xml)
    for disk in root.findall("devices/disk[@device='cdrom']"):
        source = disk.find('source')
        if source is not None and source.get('file'):
            return source.get('file')
    return None


def disks_of(xml):
    """[(path, format)] of the definition's file disks (not its CD-ROM),
    in order."""
    root = ElementTree.fromstring(xml)
    disks = []
    for disk in root.findall("devices/disk[@device='disk']"):
        source, driver = disk.find('source'), disk.find('driver')
        if source is not None and source.get('file'):
            fmt = driver.get('type', 'raw') if driver is not None else 'raw'
            disks.append((source.get('file'), fmt))
    return disks

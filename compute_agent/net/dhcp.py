"""The host's DHCP for its own guests: one dnsmasq per Linux bridge.

Owns what answers a guest's DHCP request on this host, and nothing else:
each dnsmasq answers ONLY the MAC addresses of the ports of this host's
domains, each with its fixed IPv4 address (``dhcp-range=...,static`` and
``dhcp-ignore=tag:!known``: no dynamic range, and silence, never a NAK,
for a MAC it does not know). So several hosts whose guests share one L2
(a VLAN or VXLAN the operator made) never disagree: each answers its own.

Where the entries come from: the domains themselves. Each driver keeps a
domain's ports with it (:meth:`~compute_agent.virt.driver.ComputeDriver.
domain_ports`: the libvirt domain's ``<metadata>``, the fake's record), so
the entries follow builds, rebuilds, deletes and migrations in and out
by reading them again (:meth:`HostDhcp.refresh_from` after each such task
and each destroy, :meth:`HostDhcp.sync_from` when the agent starts and on
every full power report), and an agent restart rebuilds them from
scratch: nothing to lose.

How each dnsmasq is reached without an address on the bridge (the guests'
bridge has none in the host's namespace: no route from the host into a
guest network): it runs in a network namespace of its own
(``tristate-dhcp-<bridge>-<hash of the host's name>``), joined to the
bridge by a veth pair (``tdh<hash>`` on the bridge, ``dhcp0`` inside),
with a link-local /32 address derived from the host and bridge names
(the names and address are the host's: two agents on one machine, as in
the tests, each keep their own; dnsmasq needs an address
to answer from; ``shared-network`` lets it serve the guests' subnet on
it). Leases are infinite, so guests never need to reach that address to
renew. Files, per bridge, under ``[dhcp] state_path/<bridge>/``:
``dnsmasq.conf`` (command line: the subnets; a change restarts it),
``hosts`` (``--dhcp-hostsfile``: MAC, address) and ``opts``
(``--dhcp-optsfile``: router, DNS servers, MTU per subnet); a change of
these two is a SIGHUP. A bridge left without entries loses its dnsmasq,
namespace and directory.

Only IPv4 (DHCPv4) is served; IPv6 addresses and ports on a libvirt
network (libvirt's own DHCP serves those, if the network defines it) are
not. Errors (a bridge that does not exist, ip or dnsmasq failing) are
logged, never raised into a task: the guest's card works without DHCP.
"""

import hashlib
import ipaddress
import logging
import os
import signal
import subprocess
import tempfile
import threading
import time

from compute_agent.net import ports as net_ports

LOG = logging.getLogger(__name__)

NS_PREFIX = 'tristate-dhcp-'
NS_IFACE = 'dhcp0'
STOP_WAIT = 5.0          # seconds a dnsmasq is given to exit after SIGTERM
_METADATA_ADDRESS = ipaddress.ip_address('169.254.169.254')


class DhcpError(Exception):
    """An ip or dnsmasq command failed."""


def run_command(argv, *, daemon=False):
    """Run ``argv``; its stdout. Raises DhcpError with its stderr. A
    ``daemon`` (dnsmasq, which forks and stays) gets files, never pipes,
    as its output: a write to a pipe nobody reads any more would kill it
    (SIGPIPE) at its next reload."""
    try:
        if daemon:
            with tempfile.TemporaryFile('w+') as out:
                done = subprocess.run(argv, stdin=subprocess.DEVNULL,
                                      stdout=out, stderr=out, timeout=30,
                                      check=False)
                out.seek(0)
                done.stdout = done.stderr = out.read()
        else:
            done = subprocess.run(argv, capture_output=True, text=True,
                                  timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise DhcpError('%s: %s' % (' '.join(argv), err)) from None
    if done.returncode != 0:
        raise DhcpError('%s exited with %d: %s' % (
            ' '.join(argv), done.returncode, done.stderr.strip()))
    return done.stdout


def from_conf(conf, host):
    """The host's :class:`HostDhcp` per ``[dhcp]``, or a :class:`NoDhcp`
    when it is disabled."""
    group = conf.dhcp
    if not group.enabled:
        return NoDhcp()
    return HostDhcp(host=host, path=group.state_path, ip=group.ip_path,
                    dnsmasq=group.dnsmasq_path, user=group.dnsmasq_user)


class NoDhcp:
    """DHCP disabled: every call does nothing."""

    def sync_from(self, driver):
        pass

    def refresh_from(self, driver, uuid):
        pass


def link_local(host, bridge):
    """The dnsmasq's address in its namespace: 169.254.x.y, stable for
    (host, bridge), unlikely to be another host's on the same L2, never
    the metadata address."""
    digest = hashlib.sha256(('%s/%s' % (host, bridge)).encode()).digest()
    address = ipaddress.ip_address('169.254.%d.%d' % (
        1 + digest[0] % 254, 1 + digest[1] % 254))
    return str(address if address != _METADATA_ADDRESS else address + 1)


def namespace(host, bridge):
    """The network namespace of ``host``'s dnsmasq for ``bridge``."""
    return '%s%s-%s' % (NS_PREFIX, bridge,
                        hashlib.sha256(host.encode()).hexdigest()[:6])


def veth_name(host, bridge):
    """The host side of the veth pair of ``host``'s dnsmasq for
    ``bridge`` (15 bytes at most)."""
    return 'tdh' + hashlib.sha256(('%s/%s' % (host, bridge)).encode()
                                  ).hexdigest()[:8]


def _legacy_names(bridge):
    """(namespace, veth) as agents before session 14 named them: by the
    bridge alone."""
    return (NS_PREFIX + bridge,
            'tdh' + hashlib.sha256(bridge.encode()).hexdigest()[:8])


def _tag(cidr):
    return 'net_' + cidr.replace('.', '_').replace('/', '_').replace(':', '_')


def entries(domain_ports):
    """{bridge: {mac: (address, network)}}: every port of ``domain_ports``
    ({uuid: [port]}) on a Linux bridge with an IPv4 fixed address in its
    network's IPv4 subnet."""
    found = {}
    for uuid, ports in sorted(domain_ports.items()):
        for port in net_ports.checked(ports):
            network, address = port['network'], net_ports.ipv4(port)
            if not network.get('bridge') or address is None:
                continue
            cidr = network.get('cidr')
            if cidr is None or ipaddress.ip_address(address) not in (
                    ipaddress.ip_network(cidr)):
                LOG.warning('Port %s of %s: address %s is not in its '
                            'network\'s subnet %s; no DHCP entry',
                            port.get('id'), uuid, address, cidr)
                continue
            found.setdefault(network['bridge'], {})[port['mac']] = (
                address, network)
    return found


def render(bridge, macs, *, directory, user):
    """(dnsmasq.conf, hosts, opts) texts of one bridge's entries."""
    networks = {}
    hosts = []
    for mac, (address, network) in sorted(macs.items()):
        networks.setdefault(network['cidr'], network)
        # No set:<tag> here: dnsmasq 2.90 frees a host's tags wrongly on
        # a SIGHUP once it holds a lease (free(): invalid pointer). The
        # dhcp-range's tag says which subnet's options apply.
        hosts.append('%s,%s,infinite' % (mac, address))
    conf = ['# Written by the Tristate compute agent for bridge %s: every '
            'change is overwritten.' % bridge,
            'port=0', 'interface=%s' % NS_IFACE, 'bind-interfaces',
            'no-resolv', 'no-hosts', 'no-ping',
            'dhcp-leasefile=%s' % os.path.join(directory, 'leases'),
            'dhcp-ignore=tag:!known',
            'pid-file=%s' % os.path.join(directory, 'dnsmasq.pid'),
            # One line per DHCP packet (no log-dhcp: a guest asks once per
            # boot, the leases being infinite).
            'log-facility=%s' % os.path.join(directory, 'dnsmasq.log'),
            'dhcp-hostsfile=%s' % os.path.join(directory, 'hosts'),
            'dhcp-optsfile=%s' % os.path.join(directory, 'opts')]
    if user:
        conf.append('user=%s' % user)
    opts = []
    for cidr, network in sorted(networks.items()):
        subnet, tag = ipaddress.ip_network(cidr), _tag(cidr)
        conf.append('dhcp-range=set:%s,%s,static,%s,infinite'
                    % (tag, subnet.network_address, subnet.netmask))
        conf.append('shared-network=%s,%s' % (NS_IFACE,
                                              subnet.network_address))
        opts.extend(_options(tag, network))
    return ('\n'.join(conf) + '\n', '\n'.join(hosts) + '\n',
            '\n'.join(opts) + '\n')


def _options(tag, network):
    """Router, DNS servers and MTU of a subnet; an empty option tells
    dnsmasq to send none (it would offer its own address otherwise)."""
    dns = ','.join(network.get('dns') or ())
    lines = ['tag:%s,option:router%s' % (tag, ',' + network['gateway']
                                          if network.get('gateway') else ''),
             'tag:%s,option:dns-server%s' % (tag, ',' + dns if dns else '')]
    if network.get('mtu'):
        lines.append('tag:%s,option:mtu,%d' % (tag, int(network['mtu'])))
    return lines


class HostDhcp:
    """The dnsmasqs of one host. Thread-safe: tasks and the reporter call
    it at once. ``run(argv, daemon=False)`` runs a command and returns its
    stdout (:func:`run_command`; tests replace it)."""

    def __init__(self, *, host, path, ip='ip', dnsmasq='dnsmasq',
                 user='nobody', run=run_command):
        self.host = host
        self.path = path
        self.ip = ip
        self.dnsmasq = dnsmasq
        self.user = user
        self._run = run
        self._lock = threading.Lock()
        self._ports = {}            # uuid -> [port], the domains' ports

    # --- what the agent calls -----------------------------------------------

    def sync_from(self, driver):
        """Entries of every domain of the host, from scratch."""
        try:
            ports = driver.domain_ports()
        except Exception:
            LOG.exception('DHCP on %s: reading the domains\' ports failed',
                          self.host)
            return
        with self._lock:
            self._ports = dict(ports)
            self._apply()

    def refresh_from(self, driver, uuid):
        """Entries of one domain, read again (none if it is gone)."""
        try:
            ports = driver.domain_ports(uuid).get(uuid) or []
        except Exception:
            LOG.exception('DHCP on %s: reading the ports of %s failed',
                          self.host, uuid)
            return
        with self._lock:
            if (self._ports.get(uuid) or []) == ports:
                return
            if ports:
                self._ports[uuid] = ports
            else:
                self._ports.pop(uuid, None)
            self._apply()

    def stop_all(self):
        """Stop every dnsmasq and remove its namespace and files."""
        with self._lock:
            self._ports = {}
            self._apply()

    # --- making it so ---------------------------------------------------------

    def _apply(self):
        try:
            wanted = entries(self._ports)
        except Exception:
            LOG.exception('DHCP on %s: bad port data', self.host)
            return
        for bridge, macs in sorted(wanted.items()):
            try:
                self._ensure(bridge, macs)
            except (DhcpError, OSError) as err:
                LOG.error('DHCP on %s for bridge %s failed: %s', self.host,
                          bridge, err)
        for bridge in sorted(set(self._bridges_on_disk()) - set(wanted)):
            try:
                self._remove(bridge)
            except (DhcpError, OSError) as err:
                LOG.error('DHCP on %s: removing the service of bridge %s '
                          'failed: %s', self.host, bridge, err)

    def _bridges_on_disk(self):
        if not os.path.isdir(self.path):
            return []
        return [name for name in os.listdir(self.path)
                if os.path.isdir(os.path.join(self.path, name))]

    def _directory(self, bridge):
        directory = os.path.join(self.path, bridge)
        os.makedirs(directory, exist_ok=True)
        # dnsmasq reads its files again on SIGHUP as [dhcp] dnsmasq_user.
        for path in (self.path, directory):
            os.chmod(path, 0o755)
        return directory

    def _ensure(self, bridge, macs):
        directory = self._directory(bridge)
        conf, hosts, opts = render(bridge, macs, directory=directory,
                                   user=self.user)
        changed = {name: _write(os.path.join(directory, name), text)
                   for name, text in (('dnsmasq.conf', conf),
                                      ('hosts', hosts), ('opts', opts))}
        pid = self._pid(directory)
        if pid is None or changed['dnsmasq.conf']:
            if pid is not None:
                _stop(pid)
            self._plumb(bridge)
            self._run([self.ip, 'netns', 'exec', namespace(self.host, bridge),
                       self.dnsmasq, '--conf-file=%s'
                       % os.path.join(directory, 'dnsmasq.conf')],
                      daemon=True)
            LOG.info('DHCP on %s: dnsmasq started for bridge %s (%d '
                     'entries)', self.host, bridge, len(macs))
        elif changed['hosts'] or changed['opts']:
            os.kill(pid, signal.SIGHUP)
            LOG.info('DHCP on %s: bridge %s now has %d entries (SIGHUP)',
                     self.host, bridge, len(macs))

    def _pid(self, directory):
        """The pid of the bridge's dnsmasq if it runs, else None."""
        try:
            with open(os.path.join(directory, 'dnsmasq.pid')) as f:
                pid = int(f.read().strip())
            with open('/proc/%d/cmdline' % pid, 'rb') as f:
                cmdline = f.read()
        except (OSError, ValueError):
            return None
        conf = os.path.join(directory, 'dnsmasq.conf').encode()
        return pid if conf in cmdline and _alive(pid) else None

    def _plumb(self, bridge):
        """The bridge's namespace and veth pair, made if missing."""
        ns, veth = namespace(self.host, bridge), veth_name(self.host, bridge)
        if not os.path.isdir('/sys/class/net/%s/bridge' % bridge):
            raise DhcpError('no Linux bridge %s on this host' % bridge)
        self._remove_plumbing(*_legacy_names(bridge))
        if ns not in self._run([self.ip, 'netns', 'list']).split():
            self._run([self.ip, 'netns', 'add', ns])
            if os.path.exists('/sys/class/net/%s' % veth):
                # A pair whose other end went with an older namespace.
                self._run([self.ip, 'link', 'del', veth])
        if not os.path.exists('/sys/class/net/%s' % veth):
            self._run([self.ip, 'link', 'add', veth, 'type', 'veth', 'peer',
                       'name', NS_IFACE, 'netns', ns])
        self._run([self.ip, 'link', 'set', veth, 'master', bridge, 'up'])
        for argv in (['link', 'set', 'lo', 'up'],
                     ['addr', 'replace', link_local(self.host, bridge) +
                      '/32', 'dev', NS_IFACE],
                     ['link', 'set', NS_IFACE, 'up']):
            self._run([self.ip, '-n', ns, *argv])

    def _remove(self, bridge):
        directory = os.path.join(self.path, bridge)
        pid = self._pid(directory)
        if pid is not None:
            _stop(pid)
        self._remove_plumbing(namespace(self.host, bridge),
                              veth_name(self.host, bridge))
        self._remove_plumbing(*_legacy_names(bridge))
        for name in ('dnsmasq.conf', 'hosts', 'opts', 'dnsmasq.pid',
                     'dnsmasq.log', 'leases'):
            _unlink(os.path.join(directory, name))
        os.rmdir(directory)
        LOG.info('DHCP on %s: bridge %s has no entry left; its dnsmasq '
                 'and namespace are gone', self.host, bridge)


    def _remove_plumbing(self, ns, veth):
        """The namespace ``ns`` and veth pair ``veth``, if they exist."""
        if os.path.exists('/sys/class/net/%s' % veth):
            self._run([self.ip, 'link', 'del', veth])  # both ends
        if ns in self._run([self.ip, 'netns', 'list']).split():
            self._run([self.ip, 'netns', 'del', ns])


def _write(path, text):
    """Write ``text`` to ``path`` atomically (0644) unless it holds it
    already; whether it changed."""
    try:
        with open(path) as f:
            if f.read() == text:
                return False
    except FileNotFoundError:
        pass
    tmp = path + '.tmp'
    with open(tmp, 'w') as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return True


def _alive(pid):
    """Whether process ``pid`` runs (a zombie does not)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except (OSError, IndexError):
        return False


def _stop(pid):
    """SIGTERM, then SIGKILL after :data:`STOP_WAIT` seconds."""
    try:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass

"""Issue 23, the agent's DHCP with a real dnsmasq: each host's dnsmasq
answers only its own instances' MACs with their fixed address, gateway,
DNS servers and MTU; two hosts on one bridge never answer each other's
guests; a deleted instance's MAC gets no answer; an agent restart finds
its dnsmasq again from the domains alone.

The guests are network namespaces joined to a bridge (no address in the
host's namespace) by veth pairs, each running busybox's udhcpc. Needs
root, iproute2, dnsmasq (Debian: dnsmasq-base) and busybox (busybox-static);
skipped with the reason otherwise (a failure with ``CI=true``). Every
client try is bounded (udhcpc -t 3 -T 1, and a timeout); the test removes
its bridge, namespaces, dnsmasqs and files whatever happens.
"""

import contextlib
import glob
import json
import os
import pwd
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid as uuidlib

import pytest

from compute_agent.net import dhcp
from tests.functional import qemu_plane
from tests.unit.compute_agent.port_data import network
from tests.unit.compute_agent.port_data import port

NET = network('net1', bridge=None, cidr='10.77.0.0/24', gateway='10.77.0.1',
              dns=('10.77.0.2', '10.77.0.3'), mtu=1400)


def _require():
    missing = [tool for tool in ('ip', 'dnsmasq', 'busybox')
               if shutil.which(tool) is None]
    if missing:
        qemu_plane.skip_or_fail('not installed: %s (Debian: iproute2, '
                                'dnsmasq-base, busybox-static)'
                                % ', '.join(missing))
    if os.geteuid() != 0:
        qemu_plane.skip_or_fail('bridges and network namespaces need root')


def _ip(*args):
    subprocess.run(['ip', *args], check=True, capture_output=True,
                   timeout=30)


def no_ipv6(interface):
    path = '/proc/sys/net/ipv6/conf/%s/disable_ipv6' % interface
    if os.path.exists(path):
        with open(path, 'w') as f:
            f.write('1')


class Guests:
    """A bridge with no address and 'guests': namespaces with one veth
    each on it, with a MAC of our choosing."""

    def __init__(self):
        tag = uuidlib.uuid4().hex[:6]
        self.bridge = 'tsb' + tag
        self.prefix = 'tsg' + tag
        self.names = []
        _ip('link', 'add', self.bridge, 'type', 'bridge')
        no_ipv6(self.bridge)        # not even a link-local address
        _ip('link', 'set', self.bridge, 'up')

    def add(self, index, mac):
        ns = '%s-%d' % (self.prefix, index)
        outside, inside = '%sh%d' % (self.prefix, index), 'eth0'
        _ip('netns', 'add', ns)
        self.names.append(ns)
        _ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', inside,
            'netns', ns)
        _ip('link', 'set', outside, 'master', self.bridge, 'up')
        _ip('-n', ns, 'link', 'set', inside, 'address', mac, 'up')
        return ns

    def lease(self, ns, directory):
        """What udhcpc in ``ns`` obtained ({'ip', 'router', 'dns',
        'mtu'}), or None when nobody answered (3 tries, 1 s apart)."""
        out = os.path.join(directory, ns + '.lease')
        script = os.path.join(directory, 'udhcpc.sh')
        with open(script, 'w') as f:
            f.write('#!/bin/sh\n[ "$1" = bound ] && printf "%%s\\n" '
                    '"ip=$ip" "router=$router" "dns=$dns" "mtu=$mtu" > %s\n'
                    'exit 0\n' % out)
        os.chmod(script, 0o755)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(out)
        subprocess.run(['ip', 'netns', 'exec', ns, 'busybox', 'udhcpc', '-i',
                        'eth0', '-n', '-q', '-f', '-t', '3', '-T', '1', '-O', 'mtu',
                        '-s', script], capture_output=True, timeout=30,
                       check=False)
        if not os.path.exists(out):
            return None
        with open(out) as f:
            return dict(line.split('=', 1) for line in f.read().splitlines())

    def remove(self):
        for ns in self.names:
            subprocess.run(['ip', 'netns', 'del', ns], capture_output=True,
                           check=False)
        subprocess.run(['ip', 'link', 'del', self.bridge],
                       capture_output=True, check=False)


class Domains:
    """A driver's ``domain_ports`` over a dict the test edits."""

    def __init__(self):
        self.ports = {}

    def domain_ports(self, uuid=None):
        if uuid is None:
            return dict(self.ports)
        return {uuid: self.ports[uuid]} if uuid in self.ports else {}


@pytest.fixture
def world():
    _require()
    directory = tempfile.mkdtemp(prefix='tristate-dhcp-')
    os.chmod(directory, 0o755)      # dnsmasq reads it as user nobody
    guests = Guests()
    services = []
    try:
        yield guests, directory, services
    finally:
        for service in services:
            service.stop_all()
        guests.remove()
        shutil.rmtree(directory, ignore_errors=True)


def _port(guests, index):
    return port(index, address='10.77.0.%d' % (10 + index),
                net=dict(NET, bridge=guests.bridge))


def test_each_host_answers_only_its_own_guests(world):
    guests, directory, services = world
    a, b, c = (guests.add(i, 'fa:16:3e:00:00:%02x' % i) for i in (1, 2, 3))
    on_h1, on_h2 = Domains(), Domains()
    on_h1.ports['vm-a'] = [_port(guests, 1)]
    on_h2.ports['vm-b'] = [_port(guests, 2)]
    h1 = dhcp.HostDhcp(host='h1', path=os.path.join(directory, 'h1'))
    h2 = dhcp.HostDhcp(host='h2', path=os.path.join(directory, 'h2'))
    services.extend([h1, h2])
    h1.sync_from(on_h1)
    h2.sync_from(on_h2)

    assert guests.lease(a, directory) == {
        'ip': '10.77.0.11', 'router': '10.77.0.1',
        'dns': '10.77.0.2 10.77.0.3', 'mtu': '1400'}
    assert guests.lease(b, directory)['ip'] == '10.77.0.12'
    assert guests.lease(c, directory) is None       # nobody's guest
    # Each dnsmasq lives in its own namespace; the bridge has no address.
    shown = subprocess.run(['ip', '-o', 'addr', 'show', 'dev',
                            guests.bridge], capture_output=True, text=True,
                           check=True).stdout
    assert ' inet' not in shown, shown

    # h1's instance is deleted: its MAC gets no answer from anyone.
    del on_h1.ports['vm-a']
    h1.refresh_from(on_h1, 'vm-a')
    assert guests.lease(a, directory) is None
    assert not os.path.exists(os.path.join(directory, 'h1', guests.bridge))

    # c's instance migrates in to h1 (its domain appears there).
    on_h1.ports['vm-c'] = [_port(guests, 3)]
    h1.refresh_from(on_h1, 'vm-c')
    assert guests.lease(c, directory)['ip'] == '10.77.0.13'


def test_an_agent_restart_keeps_the_running_dnsmasq(world):
    guests, directory, services = world
    a = guests.add(1, 'fa:16:3e:00:00:01')
    domains = Domains()
    domains.ports['vm-a'] = [_port(guests, 1)]
    path = os.path.join(directory, 'h1')
    first = dhcp.HostDhcp(host='h1', path=path)
    services.append(first)
    first.sync_from(domains)
    pid_file = os.path.join(path, guests.bridge, 'dnsmasq.pid')
    with open(pid_file) as f:
        pid = f.read()

    again = dhcp.HostDhcp(host='h1', path=path)     # the agent restarted
    services.append(again)
    again.sync_from(domains)
    with open(pid_file) as f:
        assert f.read() == pid
    assert guests.lease(a, directory)['ip'] == '10.77.0.11'

    # A rebuild that changes the port's address: SIGHUP, same dnsmasq.
    domains.ports['vm-a'] = [port(1, address='10.77.0.50',
                                  net=dict(NET, bridge=guests.bridge))]
    again.refresh_from(domains, 'vm-a')
    with open(pid_file) as f:
        assert f.read() == pid
    assert guests.lease(a, directory)['ip'] == '10.77.0.50'


# --- the agent as a user other than root (operator guide, "Networks") ---------

UNIT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'etc', 'systemd',
    'tristate-compute-agent.service')


def _unit_capabilities():
    """The DHCP capabilities of the shipped unit (its commented
    ``AmbientCapabilities=`` line), as setpriv spells them."""
    with open(UNIT) as f:
        line = next(line for line in f
                    if line.startswith('#AmbientCapabilities='))
    names = line.split('=', 1)[1].split()
    return ','.join('+' + name[len('CAP_'):].lower() for name in names)

# The agent's side, as the agent runs it: HostDhcp over the domains' ports
# (JSON in argv[2]), with [dhcp] dnsmasq_user empty; then, once a line
# comes on stdin, over no domain. One process, as the agent is: its mount
# namespace holds the namespace's /run/netns file. Errors are logged, as
# in the agent: printed here for a failure's message.
_AGENT = """
import json, logging, sys
from compute_agent.net import dhcp
logging.basicConfig(level=logging.INFO, stream=sys.stdout, force=True)
path, ports = sys.argv[1], json.loads(sys.argv[2])
class Domains:
    def __init__(self, ports):
        self.ports = ports
    def domain_ports(self, uuid=None):
        return self.ports
service = dhcp.HostDhcp(host='nonroot', path=path, user='')
service.sync_from(Domains(ports))
print('SYNCED', flush=True)
sys.stdin.readline()
service.sync_from(Domains({}))
print('SYNCED', flush=True)
"""


def _as_agent_user(netns_dir, *argv):
    """``argv`` as user nobody with the capabilities the shipped systemd
    unit gives the agent (ambient, and the bounding set), with ``netns_dir`` (group
    nogroup, group-writable: what the unit's ExecStartPre makes of
    /run/netns) as /run/netns, in a mount namespace of its own."""
    caps = _unit_capabilities()
    inner = ('mount --bind "$0" /run/netns && exec setpriv --reuid=nobody '
             f'--regid=nogroup --clear-groups --inh-caps={caps} '
             f'--ambient-caps={caps} --bounding-set=-all,{caps} "$@"')
    return ['unshare', '--mount', '--propagation', 'private', 'sh', '-c',
            inner, netns_dir, *argv]


def _until_synced(agent):
    """What the agent printed up to its next SYNCED (60 s at most)."""
    out = b''
    deadline = time.monotonic() + 60
    while not out.endswith(b'SYNCED\n'):
        left = deadline - time.monotonic()
        assert left > 0 and select.select([agent.stdout], [], [], left)[0], (
            'the agent did not sync: %s' % out.decode())
        chunk = os.read(agent.stdout.fileno(), 65536)
        assert chunk, 'the agent exited: %s' % out.decode()
        out += chunk
    return out.decode()


def _stop_left(state):
    """A dnsmasq the non-root agent left running (a failed test)."""
    for pid_file in glob.glob(os.path.join(state, '*', 'dnsmasq.pid')):
        with contextlib.suppress(OSError, ValueError):
            with open(pid_file) as f:
                os.kill(int(f.read()), signal.SIGTERM)


def test_a_non_root_agent_serves_dhcp_with_the_documented_capabilities(
        world):
    """The set-up of the operator guide for an agent that is not root: the
    four ambient capabilities, a /run/netns its group may write, and
    ``[dhcp] dnsmasq_user`` empty. Its dnsmasq (as that user) answers its
    guest; with no guest left it stops it and removes the namespace and
    veth pair."""
    guests, directory, _services = world
    if shutil.which('setpriv') is None or shutil.which('unshare') is None:
        qemu_plane.skip_or_fail('not installed: setpriv, unshare '
                                '(Debian: util-linux)')
    python = [sys.executable, '-c']
    probe = subprocess.run(_as_agent_user('/run/netns', *python,
                                          'import compute_agent.net.dhcp'),
                           capture_output=True, text=True, timeout=60,
                           check=False)
    if probe.returncode != 0:
        pytest.skip('user nobody cannot run this checkout\'s Python: %s'
                    % probe.stderr.strip()[-300:])
    netns_dir, state = (os.path.join(directory, name)
                        for name in ('netns', 'state'))
    os.mkdir(netns_dir, 0o775)
    shutil.chown(netns_dir, 'root', 'nogroup')
    os.chmod(netns_dir, 0o775)
    os.mkdir(state)
    shutil.chown(state, 'nobody', 'nogroup')
    a = guests.add(1, 'fa:16:3e:00:00:01')
    ports = {'vm-a': [_port(guests, 1)]}
    agent = subprocess.Popen(  # noqa: S603
        _as_agent_user(netns_dir, *python, _AGENT, state, json.dumps(ports)),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, bufsize=0)
    try:
        out = _until_synced(agent)
        assert 'dnsmasq started' in out, out
        pid_file = os.path.join(state, guests.bridge, 'dnsmasq.pid')
        with open(pid_file) as f:
            pid = int(f.read())
        with open('/proc/%d/status' % pid) as f:
            uid = [line.split()[1] for line in f if line.startswith('Uid:')]
        assert uid == [str(pwd.getpwnam('nobody').pw_uid)]
        assert guests.lease(a, directory) == {
            'ip': '10.77.0.11', 'router': '10.77.0.1',
            'dns': '10.77.0.2 10.77.0.3', 'mtu': '1400'}

        agent.stdin.write(b'\n')
        out = _until_synced(agent)
        assert 'namespace are gone' in out, out
        assert agent.wait(30) == 0
        assert not os.path.exists(os.path.join(state, guests.bridge))
        assert not os.path.exists('/sys/class/net/%s' % dhcp.veth_name(
            'nonroot', guests.bridge))
        assert guests.lease(a, directory) is None
    finally:
        if agent.poll() is None:
            agent.kill()
        agent.wait(30)
        agent.stdin.close()
        agent.stdout.close()
        _stop_left(state)
        with contextlib.suppress(subprocess.CalledProcessError):
            _ip('link', 'del', dhcp.veth_name('nonroot', guests.bridge))

"""Issue 23 on real QEMU (TCG), through the API, on two hosts: two guests
of the test image, one built on each host with a port on one network,
get the addresses the API shows from their own host's dnsmasq, answer
HTTP on them from a network namespace that holds the gateway address,
and reach each other; once one is deleted its address stops answering,
its host's DHCP entry is gone and the address is free (the next server
that asks for it gets it). Before that, one guest is taken out of its
security group (issue 22): it stops answering, the other does not; back
in ``default``, it answers again.

The hosts are those of :mod:`tests.functional.qemu_plane`: two agents,
each on a private libvirtd of its own (session mode, as user
libvirt-qemu), the plane and its REST API; their guests sit on the test's
bridge through :mod:`tests.functional.bridge_helper` (QEMU's
``qemu-bridge-helper`` is not set-uid on a stock system), and each agent
runs its own dnsmasq (:mod:`compute_agent.net.dhcp`), answering only its
own guest, as two machines on one L2 would.

The set-up keeps every guest packet inside one bridge and one namespace:
the bridge (``tsq<hex>``) has no address in the host's namespace (IPv6
off on it too), the test's client side is a namespace joined to it by a
veth pair with the gateway address, and each dnsmasq sits in a namespace
of its own. No forwarding, no NAT, no route from the host to the guests.
Skipped, with the reason, without root, iproute2, dnsmasq, libvirtd or
QEMU (a failure with ``CI=true``). Every wait is bounded; the test removes
its domains, dnsmasqs, namespaces, bridge and files whatever happens.

:func:`_require` and :func:`_l2` serve the single-host guest-access test
too (:mod:`tests.functional.test_guest_access_on_real_qemu`).
"""

import contextlib
import os
import shutil
import subprocess
import sys
import time
import uuid as uuidlib

import pytest

from tests.functional import qemu_plane
from tests.functional import qemu_support
from tests.functional import test_console_on_real_qemu as console_test
from tests.functional import test_images_on_real_qemu as images_test
from tests.functional.test_dhcp_dnsmasq import no_ipv6

libvirt = pytest.importorskip('libvirt')

BOOT_TIMEOUT = 180.0      # two TCG guests booting at once on a shared machine
GATEWAY = '10.78.0.1'


def _ip(*args, check=True):
    return subprocess.run(['ip', *args], capture_output=True, text=True,
                          timeout=30, check=check)


def _require():
    uri = qemu_support.uri_or_skip('no privileged libvirtd to attach guests '
                                   'to a bridge')
    missing = [tool for tool in ('ip', 'dnsmasq', 'busybox', 'qemu-img')
               if shutil.which(tool) is None]
    if missing:
        qemu_plane.skip_or_fail('not installed: %s' % ', '.join(missing))
    if os.geteuid() != 0:
        qemu_plane.skip_or_fail('bridges and namespaces need root')
    return uri


@contextlib.contextmanager
def _l2(tag, gateway=GATEWAY):
    """The bridge (no address) and the client namespace on it (the
    ``gateway`` address); removed afterwards."""
    bridge, ns = 'tsq' + tag, 'tsq%s-client' % tag
    try:
        _ip('link', 'add', bridge, 'type', 'bridge')
        no_ipv6(bridge)
        _ip('link', 'set', bridge, 'up')
        _ip('netns', 'add', ns)
        _ip('link', 'add', 'tsq%sc' % tag, 'type', 'veth', 'peer', 'name',
            'eth0', 'netns', ns)
        _ip('link', 'set', 'tsq%sc' % tag, 'master', bridge, 'up')
        _ip('-n', ns, 'addr', 'add', gateway + '/24', 'dev', 'eth0')
        _ip('-n', ns, 'link', 'set', 'eth0', 'up')
        _ip('-n', ns, 'link', 'set', 'lo', 'up')
        yield bridge, ns
    finally:
        _ip('netns', 'del', ns, check=False)
        _ip('link', 'del', 'tsq%sc' % tag, check=False)
        _ip('link', 'del', bridge, check=False)


# The client: Python's urllib in the namespace (busybox-static's wget
# crashes on Debian 12).
_FETCH = """
import sys, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1],
                                 timeout=float(sys.argv[2])).read().decode())
except OSError as err:
    sys.exit('%s: %s' % (sys.argv[1], err))
"""


def _get(ns, url, timeout=3):
    """``url`` fetched from namespace ``ns`` (``timeout`` seconds at most),
    or None. A guest's /cgi-bin/peer takes up to ~6 s (ARP, then its nc's
    3 s) for a peer that is gone: ask it with more."""
    done = subprocess.run(['ip', 'netns', 'exec', ns, sys.executable, '-c',
                           _FETCH, url, str(timeout)], capture_output=True,
                          text=True, timeout=timeout + 20, check=False)
    return done.stdout if done.returncode == 0 else None


def _diagnose(ns, address):
    """What the namespace sees of ``address``: for a failure's message."""
    out = []
    for argv in (['ip', 'netns', 'exec', ns, 'busybox', 'ping', '-c', '2',
                  '-W', '1', address],
                 ['ip', '-n', ns, 'neigh']):
        done = subprocess.run(argv, capture_output=True, text=True,
                              timeout=20, check=False)
        out.append('$ %s\n%s%s' % (' '.join(argv), done.stdout,
                                    done.stderr))
    return '\n'.join(out)


def _answers(ns, address, show, *, timeout=BOOT_TIMEOUT):
    """The page ``address`` serves, once it answers (``show()``: what a
    failure shows besides)."""
    deadline = time.monotonic() + timeout
    while True:
        body = _get(ns, 'http://%s/' % address)
        if body is not None:
            return body
        assert time.monotonic() < deadline, (
            'nothing answers on %s within %.0f s:\n%s\n%s' % (
                address, timeout, show(), _diagnose(ns, address)))
        time.sleep(1)


def _output(qemu, server_id):
    """The server's console output (``os-getConsoleOutput``)."""
    return console_test._output(qemu, server_id)  # noqa: SLF001


def _on(network_id, address=None):
    """The create's ``networks``: one port on the network (``address``)."""
    port = {'uuid': network_id}
    if address is not None:
        port['fixed_ip'] = address
    return [port]


def _dhcp_hosts(qemu, host, bridge):
    """The MACs ``host``'s dnsmasq answers on ``bridge`` (None: it has no
    service there)."""
    path = os.path.join(qemu.plane.agents[host].dhcp.path, bridge, 'hosts')
    try:
        with open(path) as f:
            return {line.split(',')[0] for line in f.read().split()}
    except FileNotFoundError:
        return None


def test_two_hosts_guests_answer_reach_each_other_and_delete_frees():
    _require_plane()
    tag = uuidlib.uuid4().hex[:6]
    with qemu_support.qemu_dir() as directory, _l2(tag) as (bridge, ns), \
            qemu_plane.qemu_plane(('hosta', 'hostb'), bridges=True) as qemu:
        image_id = qemu.upload(images_test._test_image(directory),  # noqa: SLF001
                               'test-image', 'qcow2')
        net = qemu.compute('POST', '/os-networks', {'network': {
            'name': 'guests', 'bridge': bridge, 'cidr': '10.78.0.0/24',
            'gateway': GATEWAY, 'dns': [GATEWAY], 'mtu': 1400}},
            expect=(201,))['network']
        a = qemu.boot('guest-a', image_id, 'hosta',
                      networks=_on(net['id']))
        b = qemu.boot('guest-b', image_id, 'hostb',
                      networks=_on(net['id']))
        (port_a,), (port_b,) = (s['addresses']['guests'] for s in (a, b))
        address_a, address_b = port_a['addr'], port_b['addr']
        mac_a = port_a['OS-EXT-IPS-MAC:mac_addr']
        mac_b = port_b['OS-EXT-IPS-MAC:mac_addr']
        # Each host's dnsmasq answers its own guest only...
        assert _dhcp_hosts(qemu, 'hosta', bridge) == {mac_a}
        assert _dhcp_hosts(qemu, 'hostb', bridge) == {mac_b}
        # ... each guest answers on the address the API shows...
        for server, address in ((a, address_a), (b, address_b)):
            assert address in _answers(
                ns, address, lambda s=server: _output(qemu, s['id']))
            # the DHCP options reached it (the network's MTU; the console
            # log may trail the guest by a moment)
            qemu_plane._bounded(  # noqa: SLF001
                lambda s=server: 'mtu=1400' in _output(qemu, s['id']),
                "the guest's line mtu=1400", timeout=30,
                show=lambda s=server: _output(qemu, s['id'])[-2000:])
        # ... and reaches the other (A fetches B's page, and back).
        assert address_b in _get(ns, 'http://%s/cgi-bin/peer?%s'
                                 % (address_a, address_b), timeout=15)
        assert address_a in _get(ns, 'http://%s/cgi-bin/peer?%s'
                                 % (address_b, address_a), timeout=15)
        # The bridge holds no address in the host's namespace.
        shown = _ip('-o', 'addr', 'show', 'dev', bridge).stdout
        assert ' inet' not in shown, shown
        _security_groups(qemu, ns, a, address_a, address_b)

        # Delete B: its address stops answering, hostb's dnsmasq is gone
        # with its last entry, and the address is free.
        qemu.delete_server(b['id'])
        qemu.wait_no_domains('hostb')
        assert _get(ns, 'http://%s/' % address_b) is None
        assert 'peer unreachable' in _get(
            ns, 'http://%s/cgi-bin/peer?%s' % (address_a, address_b),
            timeout=15)
        qemu_plane._bounded(  # noqa: SLF001
            lambda: _dhcp_hosts(qemu, 'hostb', bridge) is None,
            "hostb's DHCP for the bridge to go", timeout=30)
        assert _dhcp_hosts(qemu, 'hosta', bridge) == {mac_a}
        shown = qemu.compute('GET', '/os-networks/%s' % net['id'])
        assert shown['network']['tristate:used_ips'] == 1, shown
        again = qemu.boot('guest-c', image_id, 'hostb',
                          networks=_on(net['id'], address_b))
        assert again['addresses']['guests'][0]['addr'] == address_b
        qemu.delete_server(again['id'])


def _security_groups(qemu, ns, server, address, other):
    """Issue 22: out of every security group, the guest's link is down
    (all traffic dropped: common/secgroups.py) and nothing reaches it,
    while the other guest still answers; back in ``default``, it answers
    again."""
    path = '/servers/%s/action' % server['id']
    qemu.compute('POST', path, {'removeSecurityGroup': {'name': 'default'}},
                 expect=(202,))
    assert 'security_groups' not in qemu.server(server['id'])
    assert _get(ns, 'http://%s/' % address) is None
    assert other in _get(ns, 'http://%s/' % other)
    qemu.compute('POST', path, {'addSecurityGroup': {'name': 'default'}},
                 expect=(202,))
    assert address in _answers(ns, address,
                               lambda: _output(qemu, server['id']),
                               timeout=30)


def _require_plane():
    """Skip (or fail in CI) unless this machine can run the test."""
    missing = [tool for tool in ('ip', 'dnsmasq')
               if shutil.which(tool) is None]
    if missing:
        qemu_plane.skip_or_fail('not installed: %s' % ', '.join(missing))
    qemu_plane.require_tools()

"""The host's DHCP entries (compute_agent.net.dhcp) without running
anything: which ports get an entry, the dnsmasq files they make (static
only, unknown MACs ignored, router/DNS/MTU per subnet), errors that never
fail a task, a restart's cleanup of bridges left without guests, and the
agent calls that keep the entries following the domains."""

import logging
import os
import threading

from common import context
from common.flavors import Flavor
from compute_agent import manager as manager_mod
from compute_agent import reporter as reporter_mod
from compute_agent.net import dhcp
from compute_agent.net import ports as net_ports
from compute_agent.virt import fake
from compute_agent.virt.driver import DomainInfo
from tests.unit.compute_agent.port_data import network
from tests.unit.compute_agent.port_data import port

UUID = '11111111-2222-3333-4444-555555555555'
OTHER = network('net2', bridge='br-two', cidr='10.30.0.0/24',
                gateway=None, dns=(), mtu=None)


def test_entries_are_ipv4_ports_on_bridges_in_their_subnet():
    found = dhcp.entries({
        'a': [port(1), port(2, address='10.30.0.%d', net=OTHER)],
        'b': [port(3, net=network('lv', bridge=None,
                                  libvirt_network='default'))],
        'c': [port(4, address='10.99.0.4')],            # not in its subnet
        'd': [port(5, address='fd00::5')]})              # IPv6 only
    assert {bridge: sorted(macs) for bridge, macs in found.items()} == {
        'br-guest': ['fa:16:3e:00:00:01'], 'br-two': ['fa:16:3e:00:00:02']}


def test_the_files_serve_only_known_macs_with_their_options(tmp_path):
    macs = dhcp.entries({'a': [port(1), port(2)],
                         'b': [port(3, address='10.30.0.%d', net=OTHER)]})
    conf, hosts, opts = dhcp.render('br-guest', macs['br-guest'],
                                    directory=str(tmp_path), user='nobody')
    lines = conf.splitlines()
    assert 'dhcp-ignore=tag:!known' in lines and 'port=0' in lines
    assert [line for line in lines if line.startswith('dhcp-range')] == [
        'dhcp-range=set:net_10_20_0_0_24,10.20.0.0,static,255.255.255.0,'
        'infinite']
    assert 'shared-network=dhcp0,10.20.0.0' in lines
    assert hosts.splitlines() == ['fa:16:3e:00:00:01,10.20.0.11,infinite',
                                  'fa:16:3e:00:00:02,10.20.0.12,infinite']
    assert opts.splitlines() == [
        'tag:net_10_20_0_0_24,option:router,10.20.0.1',
        'tag:net_10_20_0_0_24,option:dns-server,10.20.0.1',
        'tag:net_10_20_0_0_24,option:mtu,1450']
    # A network without gateway or DNS: dnsmasq is told to send none.
    _conf, _hosts, opts = dhcp.render('br-two', macs['br-two'],
                                      directory=str(tmp_path), user='')
    assert opts.splitlines() == ['tag:net_10_30_0_0_24,option:router',
                                 'tag:net_10_30_0_0_24,option:dns-server']


def test_names_and_addresses_are_stable_and_short():
    assert dhcp.link_local('h1', 'br0') == dhcp.link_local('h1', 'br0')
    assert dhcp.link_local('h1', 'br0') != dhcp.link_local('h2', 'br0')
    assert dhcp.link_local('h1', 'br0').startswith('169.254.')
    assert len(dhcp.veth_name('a-host', 'a-bridge-name15')) <= 15
    # two agents on one machine (the two-host tests) never share them
    assert dhcp.veth_name('h1', 'br0') != dhcp.veth_name('h2', 'br0')
    assert dhcp.namespace('h1', 'br0') != dhcp.namespace('h2', 'br0')
    assert dhcp.namespace('h1', 'br0').startswith('tristate-dhcp-br0-')


class Domains:
    def __init__(self, ports):
        self.ports = ports

    def domain_ports(self, uuid=None):
        if uuid is None:
            return dict(self.ports)
        return {uuid: self.ports[uuid]} if uuid in self.ports else {}


def test_a_missing_bridge_is_logged_never_raised(tmp_path, caplog):
    commands = []
    service = dhcp.HostDhcp(host='h1', path=str(tmp_path / 'dhcp'),
                            run=lambda argv, daemon=False: commands.append(
                                argv) or '')
    caplog.set_level(logging.ERROR)
    service.sync_from(Domains({'a': [port(1, bridge='tsb-none')]}))
    assert 'no Linux bridge tsb-none' in caplog.text
    assert not any('dnsmasq' in argv for argv in commands)


def test_a_restart_removes_what_bridges_without_guests_left(tmp_path):
    left = tmp_path / 'dhcp' / 'br-old'
    left.mkdir(parents=True)
    (left / 'hosts').write_text('fa:16:3e:00:00:09,10.0.0.9,infinite\n')
    service = dhcp.HostDhcp(host='h1', path=str(tmp_path / 'dhcp'),
                            run=lambda argv, daemon=False: '')
    service.sync_from(Domains({}))
    assert not left.exists()


def test_the_namespace_older_agents_named_after_the_bridge_is_removed(
        tmp_path):
    """Before two agents could share a machine the namespace was
    ``tristate-dhcp-<bridge>``: an upgraded agent leaving the bridge
    removes it too, not only the one it names now."""
    left = tmp_path / 'dhcp' / 'br-old'
    left.mkdir(parents=True)
    commands = []

    def run(argv, daemon=False):
        commands.append(argv)
        return 'tristate-dhcp-br-old\n' if argv[1:] == ['netns', 'list'] \
            else ''
    service = dhcp.HostDhcp(host='h1', path=str(tmp_path / 'dhcp'), run=run)
    service.sync_from(Domains({}))
    assert ['ip', 'netns', 'del', 'tristate-dhcp-br-old'] in commands
    assert not left.exists()


def test_disabled_is_a_no_op(conf):
    assert isinstance(dhcp.from_conf(conf, 'h1'), dhcp.NoDhcp)
    conf.set_override('enabled', True, group='dhcp')
    made = dhcp.from_conf(conf, 'h1')
    assert made.path == os.path.join(conf.state_dir, 'dhcp')


# --- the agent keeps them following the domains --------------------------------

class Recorder:
    def __init__(self):
        self.refreshed, self.synced = [], 0
        self.done = threading.Event()

    def refresh_from(self, driver, uuid):
        self.refreshed.append((uuid, driver.domain_ports(uuid)))
        self.done.set()

    def sync_from(self, driver):
        self.synced += 1


class _Conductor:
    def task_progress(self, ctx, **kwargs):
        pass

    def task_finished(self, ctx, **kwargs):
        pass


class _Journal:
    def add(self, *args):
        pass

    def remove(self, *args):
        pass


def test_the_manager_refreshes_after_builds_and_destroys(conf, tmp_path):
    drv = fake.FakeDriver(state_dir=str(tmp_path))
    drv.init_host('h1')
    recorder = Recorder()
    manager = manager_mod.AgentManager(
        host='h1', driver=drv, conductor=_Conductor(), conf=conf,
        journal=_Journal(), dhcp=recorder)
    inst = {'uuid': UUID, 'name': 'vm', 'image_ref': 'img',
            'flavor_name': 'tiny', 'vcpus': 1, 'memory_mb': 512,
            'disk_gb': 1}
    manager.run_task(context.RequestContext(task_id='t-1'), inst, 'build',
                     {'ports': [port(1)]})
    assert recorder.done.wait(10)
    assert recorder.refreshed == [
        (UUID, {UUID: net_ports.checked([port(1)])})]
    manager.destroy_domain(context.RequestContext(), UUID)
    assert recorder.refreshed[-1] == (UUID, {})


def test_the_reporter_refreshes_on_every_event(conf, tmp_path):
    drv = fake.FakeDriver(state_dir=str(tmp_path))
    drv.init_host('h1')
    drv.spawn(UUID, name='vm', flavor=Flavor('tiny', 1, 512, 1),
              image_ref='img', ports=[port(1)])
    recorder = Recorder()
    rep = reporter_mod.Reporter(host='h1', driver=drv, conductor=None,
                                conf=conf, journal=None, dhcp=recorder)
    rep.delivered.hold = lambda uuid: True      # nothing sent here
    rep.domain_changed(DomainInfo(UUID, 1, None))   # e.g. migrated in
    assert recorder.refreshed == [
        (UUID, {UUID: net_ports.checked([port(1)])})]

"""Wires a compute agent together: driver, journal, manager, reporter, and
its RPC server on ``[compute] topic`` with ``server=<host>``."""

import logging
import os

from common import rpc
from compute_agent import imagecache
from compute_agent import journal as journal_mod
from compute_agent import manager as manager_mod
from compute_agent.net import dhcp as dhcp_mod
from compute_agent import reporter as reporter_mod
from conductor import rpcapi as conductor_rpcapi

LOG = logging.getLogger(__name__)
# Seconds a stopping agent waits for its running tasks to end.
STOP_WAIT = 30


def load_driver(conf, host):
    if conf.compute.driver == 'fake':
        from compute_agent.virt import fake
        driver = fake.FakeDriver.from_conf(conf)
    else:
        from compute_agent.virt import libvirt as libvirt_driver
        driver = libvirt_driver.LibvirtDriver.from_conf(conf)
    driver.init_host(host)
    return driver


class AgentService:
    """One compute agent. It has no database access: everything goes
    through the conductor's RPC API. A ``driver`` passed in must already
    have had its ``init_host`` called."""

    def __init__(self, conf, bus, *, host=None, driver=None):
        self.host = host or conf.host
        self.driver = driver or load_driver(conf, self.host)
        conductor = conductor_rpcapi.ConductorAPI(
            bus, conf, timeout=conf.conductor.rpc_timeout, bounded=True)
        self.journal = journal = journal_mod.TaskJournal(os.path.join(
            conf.state_dir, 'agent', '%s-tasks.json' % self.host))
        delivered = reporter_mod.Delivered()
        # Disks built on cached images say which (the libvirt driver reads
        # their backing files): the cache never removes those.
        self.image_cache = imagecache.ImageCache(
            conf, in_use=getattr(self.driver, 'image_bases_in_use', None))
        # The host's DHCP entries, made from what the domains carry.
        self.dhcp = dhcp_mod.from_conf(conf, self.host)
        self.manager = manager_mod.AgentManager(
            host=self.host, driver=self.driver, conductor=conductor,
            conf=conf, journal=journal, delivered=delivered,
            image_cache=self.image_cache, dhcp=self.dhcp)
        self.reporter = reporter_mod.Reporter(
            host=self.host, driver=self.driver, conductor=conductor,
            conf=conf, journal=journal, delivered=delivered,
            image_cache=self.image_cache, dhcp=self.dhcp)
        self.server = bus.server(conf.compute.topic, [self.manager],
                                 server=self.host)

    def start(self, *, wait_for_bus=True, on_bus=None):
        """Start consuming and reporting. With ``wait_for_bus`` false (the
        daemon), the RPC server connects in the background
        (:class:`common.rpc.BackgroundStart`) and ``on_bus`` is called once
        it consumes; reports fail fast until the bus is back."""
        self.dhcp.sync_from(self.driver)     # after a restart: from scratch
        self.starter = rpc.BackgroundStart(
            self.server, 'Compute agent %s' % self.host,
            on_started=on_bus).start(background=not wait_for_bus)
        self.reporter.start()
        LOG.info('Compute agent %s started (%s driver)', self.host,
                 self.driver.name)

    def host_shutting_down(self):
        """The machine is going down: guests stopped from now on are
        reported as stopped by the host, and a full report goes out first."""
        LOG.info('Host %s is shutting down', self.host)
        self.driver.host_shutting_down()
        self.reporter.full_report()

    def stop(self):
        self.manager.stop()
        self.reporter.stop()
        if self.starter.started:
            self.server.stop()
        # Before wait(): it wakes driver calls that hang, which wait() would
        # otherwise wait for (until [fake_driver] hang_timeout, an hour).
        self.driver.cleanup_host()
        if self.starter.started:
            self.server.wait()
        left = self.manager.wait(STOP_WAIT)
        if left:
            LOG.warning('Compute agent %s stops with %d task(s) still running '
                        '(%s); its journal reports them lost on restart',
                        self.host, len(left), ', '.join(left))
        self.journal.close()
        LOG.info('Compute agent %s stopped', self.host)

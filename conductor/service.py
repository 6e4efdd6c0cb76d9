"""Wires a conductor together: database, bus, gateway, scheduler, flows,
results, the RPC server and the periodic jobs."""

import logging

from common import rpc
from common import version
from common.db import api as db_api
from common.db import quotas
from common.db import services
from compute_agent import rpcapi as compute_rpcapi
from conductor import flows as flows_mod
from conductor import gateway as gateway_mod
from conductor.leases import service as lease_service
from conductor import manager
from conductor import periodic
from conductor import reconcile
from conductor import results as results_mod
from conductor import scheduler as scheduler_mod

LOG = logging.getLogger(__name__)


class ConductorService:
    """One conductor. Stateless: run as many as you like on one topic."""

    def __init__(self, conf, bus, statedb, *, host=None):
        self.host = host or conf.host
        statedb.quota = quotas.Settings.from_conf(conf)
        notifier = bus.notifier('conductor.%s' % self.host)
        self.gateway = gateway_mod.TaskGateway(statedb, notifier)
        self.scheduler = scheduler_mod.Scheduler(statedb, notifier, conf)
        self.flows = flows_mod.Flows(
            gateway=self.gateway, scheduler=self.scheduler,
            compute=compute_rpcapi.ComputeAPI(bus, conf), conf=conf)
        self.reconciler = reconcile.Reconciler(
            gateway=self.gateway, flows=self.flows, conf=conf)
        self.results = results_mod.Results(
            gateway=self.gateway, conf=conf, reconciler=self.reconciler)
        self.manager = manager.ConductorManager(
            flows=self.flows, results=self.results, gateway=self.gateway)
        self.leases = lease_service.LeaseService(
            conf, statedb, flows=self.flows, notifier=notifier)
        self.server = bus.server(conf.conductor.topic,
                                 [self.manager, self.leases.manager],
                                 server=self.host)
        self.periodic = periodic.PeriodicJobs(
            results=self.results, flows=self.flows,
            interval=conf.conductor.periodic_interval, clock=statedb.clock,
            beat=self.beat)
        self.statedb = statedb
        self.started_at = statedb.clock()

    def beat(self, ctx=None, now=None):
        """Record that this conductor runs, and its version."""
        self.statedb.service_heartbeat(
            binary=services.CONDUCTOR, host=self.host,
            version=version.package_version(), started_at=self.started_at)
        return True

    def start(self, *, periodic_jobs=True, wait_for_bus=True,
              on_bus=None):
        """Start consuming, the heartbeat and the periodic jobs. With
        ``wait_for_bus`` false (the daemon), the RPC server connects in the
        background (:class:`common.rpc.BackgroundStart`), ``on_bus`` is
        called once it consumes, and this returns at once."""
        self.starter = rpc.BackgroundStart(
            self.server, 'Conductor %s' % self.host,
            on_started=on_bus).start(background=not wait_for_bus)
        try:
            self.beat()
        except Exception:       # the periodic loop tries again
            LOG.exception('Conductor %s could not record its heartbeat',
                          self.host)
        if periodic_jobs:
            self.periodic.start()
            self.leases.periodic.start()
        LOG.info('Conductor %s started', self.host)

    def stop(self):
        self.periodic.stop()
        self.leases.periodic.stop()
        self.flows.delivery.stop()
        self.starter.stop()
        LOG.info('Conductor %s stopped', self.host)


def make_statedb(conf):
    from common.db import engine
    return db_api.StateDB(engine.Database.from_conf(conf))

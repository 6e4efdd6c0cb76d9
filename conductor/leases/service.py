"""A conductor's lease half, wired: database, flows, event runner, RPC
endpoint and the job's thread (:class:`conductor.service.ConductorService`
builds one)."""

from common.db import leases as leases_db
from conductor.leases import events
from conductor.leases import flows as lease_flows
from conductor.leases import manager
from conductor.leases import periodic


class LeaseService:
    """A conductor's lease half: flows, event runner, RPC endpoint, job."""

    def __init__(self, conf, statedb, *, flows, notifier):
        self.db = leases_db.LeaseDB(statedb.db, clock=statedb.clock,
                                    quota=statedb.quota)
        self.flows = lease_flows.LeaseFlows(db=self.db, flows=flows,
                                            notifier=notifier, conf=conf)
        self.runner = events.EventRunner(db=self.db, flows=self.flows,
                                         conf=conf)
        self.manager = manager.LeaseManager(flows=self.flows)
        self.periodic = periodic.LeaseJobs(
            runner=self.runner, interval=conf.leases.periodic_interval)

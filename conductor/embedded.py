"""The whole control plane in one process: one conductor and N agents on the
fake hypervisor, SQLite and the in-process bus (``inproc://``,
:mod:`common.inproc`; kombu's ``kombu+memory:////`` works too, slower).

``tristate-all`` runs it; the functional tests use it too, so what a newcomer
runs is what the tests exercise.
"""

import logging

from common import rpc
from common.db import api as db_api
from common.db import engine
from common.db import migration
from compute_agent import service as agent_service
from conductor import rpcapi
from conductor import service as conductor_service

LOG = logging.getLogger(__name__)
MEMORY_URL = 'inproc://'     # common/inproc.py: wakes, never polls
POLL_SECONDS = 0.001


class _FixedPollingInterval:
    """kombu's memory transport polls its queues every ``polling_interval``
    seconds; oslo.messaging sets it to 0 ("to speed up tests"), so every
    idle consumer spins a core. This pins it to one millisecond."""

    def __get__(self, obj, owner=None):
        return POLL_SECONDS

    def __set__(self, obj, value):
        pass


def tune_memory_transport():
    """Make the in-memory bus poll, not spin (idempotent)."""
    import kombu.transport.memory
    kombu.transport.memory.Transport.polling_interval = _FixedPollingInterval()


class Embedded:
    """Start with :meth:`start`, stop with :meth:`stop`. ``client`` is a
    ConductorAPI with database access, like the API tier's."""

    def __init__(self, conf, *, hosts=2, url=None, statedb=None,
                 periodic_jobs=True):
        self.conf = conf
        self.host_names = ['host%d' % i for i in range(1, hosts + 1)]
        self.url = url or conf.transport_url
        if statedb is None:
            database = engine.Database.from_conf(conf)
            migration.upgrade(database)
            statedb = db_api.StateDB(database)
        self.statedb = statedb
        self.periodic_jobs = periodic_jobs
        self.bus = None
        self.conductor = None
        self.agents = {}
        self.client = None

    def start(self):
        if self.url.startswith('kombu+memory'):
            # No broker, so no AMQP heartbeats; kombu also warns once per
            # connection that the memory URL has no host name.
            self.conf.set_override('heartbeat_timeout_threshold', 0,
                                   group='oslo_messaging_rabbit')
            logging.getLogger('kombu.connection').setLevel(logging.ERROR)
            tune_memory_transport()
        self.bus = rpc.Bus(self.conf, url=self.url)
        self.conductor = conductor_service.ConductorService(
            self.conf, self.bus, self.statedb, host='conductor')
        self.conductor.start(periodic_jobs=self.periodic_jobs)
        for name in self.host_names:
            self.start_agent(name)
        self.client = rpcapi.ConductorAPI(self.bus, self.conf,
                                          statedb=self.statedb)
        return self

    def start_agent(self, name, driver=None):
        agent = agent_service.AgentService(self.conf, self.bus, host=name,
                                           driver=driver)
        agent.start()
        self.agents[name] = agent
        return agent

    def stop_agent(self, name):
        self.agents.pop(name).stop()

    def stop(self):
        for name in list(self.agents):
            self.stop_agent(name)
        if self.conductor is not None:
            self.conductor.stop()
        if self.bus is not None:
            self.bus.cleanup()

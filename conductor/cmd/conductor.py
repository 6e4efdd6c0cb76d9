"""``tristate-conductor``: the conductor daemon (controller hosts; run many).

    tristate-conductor --config-file /etc/tristate/tristate.conf
"""

import logging

from common import metrics
from common import rpc
from common import sdnotify
from common import service
from conductor import service as conductor_service

LOG = logging.getLogger(__name__)


def main(argv=None):
    conf = service.prepare(argv, description='Tristate conductor')
    statedb = conductor_service.make_statedb(conf)
    bus = rpc.Bus(conf)
    conductor = conductor_service.ConductorService(conf, bus, statedb)
    conductor.start()
    metrics_server = metrics.serve(conf, statedb=statedb, default=True)
    sdnotify.ready('conductor %s on topic %s' % (conductor.host,
                                                 conf.conductor.topic))
    try:
        service.wait_for_signal()
    finally:
        sdnotify.stopping()
        if metrics_server is not None:
            metrics_server.shutdown()
        conductor.stop()
        bus.cleanup()
    return 0

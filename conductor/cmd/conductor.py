"""``tristate-conductor``: the conductor daemon (controller hosts; run many).

    tristate-conductor --config-file /etc/tristate/tristate.conf

Tells systemd it is ready (``Type=notify``) once its database answers (its
first heartbeat is recorded), whether or not the message bus is reachable
yet: the RPC server connects in the background, retried until the broker
is back, and ``systemctl status`` (``STATUS=``) says which. A conductor that
waited for the bus was killed and restarted by systemd every
TimeoutStartSec while the broker was away, to no use (issue 20, item 13).
``tristate-manage status`` shows the bus as the operator's host sees it.
"""

import logging

from common import metrics
from common import rpc
from common import sdnotify
from common import service
from conductor import service as conductor_service

LOG = logging.getLogger(__name__)
# Seconds between two tries of the first heartbeat while the database is
# away (before READY=1).
DB_RETRY = 2.0


def _wait_for_database(conductor):
    """True once a heartbeat is recorded; False if a stop was asked first."""
    while True:
        try:
            return conductor.beat()
        except Exception as err:
            LOG.warning('Conductor %s cannot record its heartbeat (database '
                        'unavailable?), not ready yet: %s', conductor.host,
                        err)
            sdnotify.status('waiting for the database: %s' % err)
        if service.SIGNALS.wait(DB_RETRY):
            return False


def main(argv=None):
    conf = service.prepare(argv, description='Tristate conductor',
                           requires=('database',))
    statedb = conductor_service.make_statedb(conf)
    bus = rpc.Bus(conf)
    conductor = conductor_service.ConductorService(conf, bus, statedb)
    what = 'conductor %s on topic %s' % (conductor.host, conf.conductor.topic)
    # First: a port it cannot have stops it before it takes any message.
    metrics_server = metrics.serve(conf, statedb=statedb, default=True)
    conductor.start(wait_for_bus=False, on_bus=lambda: sdnotify.status(
        '%s; message bus connected' % what))
    try:
        if _wait_for_database(conductor):
            sdnotify.ready('%s; message bus %s' % (
                what, 'connected' if conductor.starter.started
                else 'connecting (retried until the broker answers)'))
        service.wait_for_signal(conf, 'tristate-conductor')
    finally:
        sdnotify.stopping()
        if metrics_server is not None:
            metrics_server.shutdown()
        conductor.stop()
        bus.cleanup()
    return 0

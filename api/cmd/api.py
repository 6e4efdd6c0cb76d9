"""``tristate-api``: the REST API daemon (controller hosts; run several
behind a load balancer, they share nothing but the database and the bus).

    tristate-api --config-file /etc/tristate/tristate.conf

Reads ``[database]`` (the hard delete is made here, without the bus) and
calls the conductors over ``transport_url`` for everything else. Tells
systemd it is ready once it listens (``Type=notify``).
"""

import logging

from common import sdnotify
from api import service as api_service
from common import rpc
from common import service
from common.db import api as db_api
from common.db import engine

LOG = logging.getLogger(__name__)


def main(argv=None):
    conf = service.prepare(argv, description='Tristate REST API',
                           requires=('database', 'keystone'))
    statedb = db_api.StateDB(engine.Database.from_conf(conf))
    bus = rpc.Bus(conf)
    client = api_service.make_client(conf, bus, statedb)
    server = api_service.serve(conf, client)
    sdnotify.ready('serving on %s' % server.url)
    try:
        service.wait_for_signal(conf, 'tristate-api')
    finally:
        sdnotify.stopping()
        server.stop()
        bus.cleanup()
        statedb.db.dispose()
    return 0

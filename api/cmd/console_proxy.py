"""``tristate-console-proxy``: the serial console proxy (issue 24).

    tristate-console-proxy --config-file /etc/tristate/tristate.conf

Listens on ``[serial_console] proxy_host``:``proxy_port`` for WebSocket
clients holding a console token, checks each token with a conductor over
``transport_url`` (no database access) and connects it to the guest's
serial console on its host (:mod:`api.console_proxy.proxy`). Run it where
it reaches the hosts' ``[serial_console] listen_address``; put a TLS
terminator in front of it for ``wss://`` URLs.
"""

import logging

from api.console_proxy import proxy
from common import rpc
from common import sdnotify
from common import service
from conductor import rpcapi

LOG = logging.getLogger(__name__)


def main(argv=None):
    conf = service.prepare(argv, description='Tristate console proxy')
    bus = rpc.Bus(conf)
    client = rpcapi.ConductorAPI(bus, conf, timeout=conf.api.rpc_timeout,
                                 bounded=True)
    group = conf.serial_console
    server = proxy.ConsoleProxy(
        host=group.proxy_host, port=group.proxy_port, conductor=client,
        check_interval=group.session_check_interval).start()
    sdnotify.ready('serving on %s' % server.url)
    LOG.info('Console proxy serving on %s', server.url)
    try:
        service.wait_for_signal(conf, 'tristate-console-proxy')
    finally:
        sdnotify.stopping()
        server.stop()
        bus.cleanup()
    return 0

"""The HTTP server: cheroot (CherryPy's production WSGI server), run in a
thread so that ``tristate-api`` and ``tristate-all`` control its life.

``ApiServer(app, host=..., port=...).start()`` returns once the socket
listens (port 0 picks a free one: see :attr:`ApiServer.url`); :meth:`stop`
finishes the requests in flight, up to a few seconds, and returns.
"""

import logging
import threading

from cheroot import wsgi as cheroot_wsgi

LOG = logging.getLogger(__name__)


class ApiServer:
    def __init__(self, app, *, host='127.0.0.1', port=8774, threads=16,
                 shutdown_timeout=5):
        self.server = cheroot_wsgi.Server(
            (host, port), app, numthreads=threads,
            server_name='tristate-api', request_queue_size=128,
            shutdown_timeout=shutdown_timeout)
        self.thread = None

    def start(self):
        """Bind and listen (raises ``OSError`` if the port is taken), then
        serve from a thread."""
        self.server.prepare()
        self.thread = threading.Thread(target=self.server.serve,
                                       name='tristate-api', daemon=True)
        self.thread.start()
        LOG.info('Tristate API listening on %s', self.url)
        return self

    @property
    def host(self):
        return self.server.bind_addr[0]

    @property
    def port(self):
        return self.server.bind_addr[1]

    @property
    def url(self):
        host = self.host
        if host in ('0.0.0.0', '::'):
            host = '127.0.0.1'
        elif ':' in host:
            host = '[%s]' % host
        return 'http://%s:%d' % (host, self.port)

    def stop(self):
        if self.thread is None:
            return
        self.server.stop()
        self.thread.join(timeout=10)
        self.thread = None
        LOG.info('Tristate API stopped')

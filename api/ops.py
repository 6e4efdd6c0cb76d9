"""The operators' endpoints of the API, outside authentication:

* ``/healthcheck``: oslo.middleware's healthcheck (its ``[healthcheck]``
  options apply: ``detailed``, ``backends`` such as ``disable_by_file``),
  plus a check that the database answers. 200 when every check passes, 503
  otherwise; a load balancer takes an API whose database is gone out.
* ``/metrics``: the Prometheus scrape (:mod:`common.metrics`), when
  ``[metrics] enabled`` (on by default for the API).

Both answer without a token, as load balancers and Prometheus expect:
expose the API's port to those only, or turn metrics off.
"""

import logging

from oslo_middleware import healthcheck
from oslo_middleware.healthcheck import pluginbase
import sqlalchemy as sa

from common import metrics

LOG = logging.getLogger(__name__)
HEALTHCHECK_PATH = '/healthcheck'
METRICS_PATH = '/metrics'


class DatabaseCheck(pluginbase.HealthcheckBaseExtension):
    """Available when ``SELECT 1`` succeeds, without the transaction retries
    (a health check must answer fast)."""

    def __init__(self, statedb):
        self.statedb = statedb

    def healthcheck(self, server_port):
        try:
            with self.statedb.db.engine.connect() as conn:
                conn.execute(sa.text('SELECT 1'))
        except Exception as err:
            LOG.warning('Health check: the database does not answer: %s', err)
            return pluginbase.HealthcheckResult(
                available=False, reason='database unavailable',
                details=str(err))
        return pluginbase.HealthcheckResult(available=True,
                                            reason='database OK')


class _Extension:
    """What the middleware reads of a stevedore extension: ``obj``."""

    def __init__(self, obj):
        self.obj = obj


class Healthcheck(healthcheck.Healthcheck):
    """oslo.middleware's healthcheck application with :class:`DatabaseCheck`
    after the backends ``[healthcheck] backends`` names (none by default)."""

    def __init__(self, conf, statedb):
        super().__init__(None, conf)
        mine = [_Extension(DatabaseCheck(statedb))] if statedb else []
        self._backends = list(self._backends) + mine


def wrap(app, conf, statedb):
    """``app`` with ``/healthcheck`` and (if enabled) ``/metrics`` in front."""
    routes = {HEALTHCHECK_PATH: Healthcheck(conf, statedb)}
    if metrics.enabled(conf, default=True):
        routes[METRICS_PATH] = metrics.wsgi_app(statedb, conf)

    def dispatch(environ, start_response):
        route = routes.get(environ.get('PATH_INFO', '').rstrip('/'))
        if route is None:
            return app(environ, start_response)
        return route(environ, start_response)
    return dispatch

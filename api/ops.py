"""The operators' endpoints of the API, outside authentication:

* ``/healthcheck``: oslo.middleware's healthcheck (its ``[healthcheck]``
  options apply: ``detailed``, ``backends`` such as ``disable_by_file``),
  plus two checks of its own, each with its line: the database answers
  (:class:`DatabaseCheck`) and the message bus takes a message
  (:class:`BusCheck`). 200 when every check passes, 503 otherwise; a load
  balancer takes an API whose database or bus is gone out. A request that
  sends an admin's X-Auth-Token gets the detailed view (each check's
  details, the process's threads) whatever ``[healthcheck] detailed`` says;
  a bad token gets 401, no token or a member's the summary.
* ``/metrics``: the Prometheus scrape (:mod:`common.metrics`), when
  ``[metrics] enabled`` (on by default for the API).

Both answer without a token, as load balancers and Prometheus expect:
expose the API's port to those only, or turn metrics off.
"""

import logging

from oslo_middleware import healthcheck
from oslo_middleware.healthcheck import pluginbase
import sqlalchemy as sa

from api import auth
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


class BusCheck(pluginbase.HealthcheckBaseExtension):
    """Available when this API is connected to the broker and a message can
    be published now (:meth:`common.rpc.Connector.problem`): nothing waits
    on a broker that is gone."""

    def __init__(self, connector):
        self.connector = connector

    def healthcheck(self, server_port):
        problem = self.connector.problem()
        if problem:
            LOG.warning('Health check: the message bus is unavailable: %s',
                        problem)
            return pluginbase.HealthcheckResult(
                available=False, reason='message bus unavailable',
                details=problem)
        return pluginbase.HealthcheckResult(available=True,
                                            reason='message bus OK')


class _Extension:
    """What the middleware reads of a stevedore extension: ``obj``."""

    def __init__(self, obj):
        self.obj = obj


class Healthcheck(healthcheck.Healthcheck):
    """oslo.middleware's healthcheck application with :class:`DatabaseCheck`
    and :class:`BusCheck` after the backends ``[healthcheck] backends``
    names (none by default); ``detailed`` forces the detailed view."""

    def __init__(self, conf, statedb, connector=None, *, detailed=False):
        super().__init__(None, conf)
        mine = [_Extension(DatabaseCheck(statedb))] if statedb else []
        if connector is not None:
            mine.append(_Extension(BusCheck(connector)))
        self._backends = list(self._backends) + mine
        if detailed:
            self._show_details = True


def _healthcheck(conf, statedb, connector):
    """The summary, or the detailed view for a caller whose token is an
    admin's (checked by the API's own authentication)."""
    summary = Healthcheck(conf, statedb, connector)
    detailed = Healthcheck(conf, statedb, connector, detailed=True)

    def by_caller(environ, start_response):
        ctx = environ.get(auth.ENV_CONTEXT)
        view = detailed if ctx is not None and ctx.is_admin else summary
        return view(environ, start_response)
    authenticated = auth.wrap(by_caller, conf)

    def route(environ, start_response):
        if environ.get('HTTP_X_AUTH_TOKEN'):
            return authenticated(environ, start_response)
        return summary(environ, start_response)
    return route


def wrap(app, conf, statedb, connector=None):
    """``app`` with ``/healthcheck`` and (if enabled) ``/metrics`` in
    front; ``connector`` is the API client's bus connector (none: the bus
    is not checked)."""
    routes = {HEALTHCHECK_PATH: _healthcheck(conf, statedb, connector)}
    if metrics.enabled(conf, default=True):
        routes[METRICS_PATH] = metrics.wsgi_app(statedb, conf)

    def dispatch(environ, start_response):
        route = routes.get(environ.get('PATH_INFO', '').rstrip('/'))
        if route is None:
            return app(environ, start_response)
        return route(environ, start_response)
    return dispatch

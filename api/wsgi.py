"""The WSGI application: Flask routes behind the authentication middleware.

``create_app(conf, client)`` takes a :class:`conductor.rpcapi.ConductorAPI`
built *with* ``statedb`` (the API tier has database access and makes the
hard delete's UPDATE itself, so DELETE works with the bus down). Every
other request goes to a conductor over RPC.

Per request: the middleware (:mod:`api.auth`) puts the caller's context in
the environ; for ``/v2.1/...`` the microversion is read from the headers
(400/406 if bad) and echoed in the response; a route validates the body
(:mod:`api.schemas`), checks policy (:mod:`api.policy`), calls the
conductor and renders (:mod:`api.views`); any error becomes Nova's JSON
fault (:mod:`api.faults`).

Under ``/image`` the image API (Glance v2, :mod:`api.image`) answers
instead, mounted before the body limit (its uploads are streamed); under
``/reservation`` the reservation API (Blazar v1, :mod:`api.reservation`),
with the same conductor client and policy, behind the body limit.
"""

import logging
import time

import flask
from werkzeug import exceptions as http_exceptions

from api import auth
from api import faults
from api import jsonbody
from api import microversion
from api import middleware
from api import ops
from api import policy as policy_mod
from api import request
from api.image import app as image_app
from api.reservation import app as reservation_app
from api.routes import accounting
from api.routes import aggregates
from api.routes import availability_zones
from api.routes import catalog
from api.routes import consoles
from api.routes import external_events
from api.routes import flavors
from api.routes import image_metadata
from api.routes import images
from api.routes import keypairs
from api.routes import leases
from api.routes import limits
from api.routes import migrations
from api.routes import networks
from api.routes import noauth_identity
from api.routes import os_hosts
from api.routes import security_groups
from api.routes import server_actions
from api.routes import server_attrs
from api.routes import server_groups
from api.routes import servers
from api.routes import services as services_routes
from api.routes import versions

LOG = logging.getLogger(__name__)
REQUEST_ID_HEADERS = ('X-OpenStack-Request-ID', 'X-Compute-Request-ID')
# Seconds a client is asked to wait before trying a 503 again.
RETRY_AFTER = 5
_UNVERSIONED = frozenset({'/', '/v2', '/v2/', '/v2.1', '/v2.1/'})


def create_app(conf, client, *, policy=None):
    app = flask.Flask('tristate-api')
    app.json.sort_keys = False
    app.url_map.strict_slashes = False
    services = request.Services(
        conf=conf, client=client, policy=policy or policy_mod.Policy(conf))
    app.extensions[request.EXTENSION] = services
    for blueprint in (versions.bp, servers.bp, server_actions.bp,
                      server_attrs.bp, catalog.bp, leases.bp, os_hosts.bp,
                      accounting.bp, images.bp, image_metadata.bp,
                      flavors.bp, limits.bp, services_routes.bp,
                      aggregates.bp, availability_zones.bp, migrations.bp,
                      networks.bp, keypairs.bp, consoles.bp,
                      external_events.bp, server_groups.bp,
                      security_groups.bp):
        app.register_blueprint(blueprint)
    if conf.api.auth_strategy == 'noauth':
        app.register_blueprint(noauth_identity.bp)
    app.before_request(_read_version)
    app.before_request(lambda: jsonbody.check_path(flask.request.view_args))
    app.after_request(_response_headers)
    app.after_request(_log_request)
    app.register_error_handler(http_exceptions.HTTPException, _http_error)
    app.register_error_handler(Exception, _error)
    statedb = getattr(client, 'statedb', None)
    compute = reservation_app.mount(auth.wrap(app.wsgi_app, conf), conf,
                                    services)
    app.wsgi_app = middleware.wrap(
        ops.wrap(compute, conf, statedb, getattr(client, 'connector', None)),
        conf,
        before_limit=lambda compute: image_app.mount(compute, conf, statedb))
    return app


def _read_version():
    flask.g.started = time.monotonic()
    flask.g.version = None
    if flask.request.path not in _UNVERSIONED:
        flask.g.version = microversion.from_headers(flask.request.headers)


def _response_headers(response):
    version = flask.g.get('version')
    if version is not None:
        response.headers.update(microversion.response_headers(version))
    if response.status_code == 503:
        response.headers.setdefault('Retry-After', str(RETRY_AFTER))
    ctx = flask.request.environ.get(auth.ENV_CONTEXT)
    if ctx is not None:
        for header in REQUEST_ID_HEADERS:
            response.headers[header] = ctx.request_id
    return response


def _log_request(response):
    started = flask.g.get('started')
    elapsed = time.monotonic() - started if started is not None else 0.0
    ctx = flask.request.environ.get(auth.ENV_CONTEXT)
    task_id = response.headers.get(request.TASK_ID_HEADER)
    if ctx is not None and task_id:
        # The line of a request that started a task names it, like every
        # line the conductor and the agent write for that task.
        ctx.task_id = task_id
    LOG.info('%s %s %s status: %d time: %.3f', ctx.who if ctx else '-',
             flask.request.method, flask.request.full_path.rstrip('?'),
             response.status_code, elapsed)
    return response


def _json_error(code, body):
    response = flask.jsonify(body)
    response.status_code = code
    return response


def _http_error(err):
    """Flask's own errors (no such path, wrong method) as Nova faults."""
    message = err.description or err.name
    if err.code == 404:
        message = 'The resource could not be found: %s' % flask.request.path
    elif err.code == 405:
        message = 'The method %s is not allowed for %s' % (
            flask.request.method, flask.request.path)
    response = _json_error(err.code, faults.body(err.code, message))
    if err.code == 405 and hasattr(err, 'valid_methods') and err.valid_methods:
        response.headers['Allow'] = ', '.join(err.valid_methods)
    return response


def _error(err):
    ctx = flask.request.environ.get(auth.ENV_CONTEXT)
    code, body = faults.from_exception(err, ctx.request_id if ctx else None)
    if code >= 500:
        LOG.warning('%s %s answered %d: %s', flask.request.method,
                    flask.request.path, code, body)
    return _json_error(code, body)

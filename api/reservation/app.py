"""The reservation API's WSGI application (Blazar v1), and its mount under
``/reservation``.

Why a mount and not ``/v1`` at the root of the port: the root answers the
compute API's version discovery (``/``), which Blazar's own discovery would
have to share; under ``/reservation`` each API has its own, as the image
API has under ``/image``. A Keystone catalog names
``http://HOST:PORT/reservation/v1`` as the ``reservation`` endpoint (as
Blazar's is ``http://HOST:1234/v1``); without Keystone, openstackclient
takes it from ``reservation_endpoint_override``.

    GET /reservation/ and /reservation/versions   300, Blazar's version list
    /reservation/v1/leases, /reservation/v1/os-hosts   :mod:`.routes`

Errors are Blazar's: ``{"error_code": 409, "error_message": "...",
"error_name": 409}``. A client may send ``OpenStack-API-Version:
reservation 1.0`` (or ``latest``): 1.0 is the only version, as in Blazar;
another is 406, a malformed one 400. Authentication is the compute API's
(:mod:`api.auth`); version discovery needs none. The routes call the same
conductor client and policy as the compute API's ``/v2.1/leases``.
"""

import logging

import flask
from werkzeug import exceptions as http_exceptions

from api import auth
from api import faults
from api import jsonbody
from api import microversion
from api import request
from api.reservation import routes

LOG = logging.getLogger(__name__)
PREFIX = '/reservation'
OPEN_PATHS = frozenset({'', '/', '/versions'})
SERVICE = 'reservation'
VERSION = microversion.APIVersion(1, 0)


def create_app(conf, services):
    """``services``: the compute API's :class:`api.request.Services` (its
    conductor client and policy)."""
    app = flask.Flask('tristate-reservation-api')
    app.json.sort_keys = False
    app.url_map.strict_slashes = False
    app.extensions[request.EXTENSION] = services
    app.add_url_rule('/', 'versions', _versions)
    app.add_url_rule('/versions', 'versions_list', _versions)
    for blueprint in (routes.leases_bp, routes.hosts_bp):
        app.register_blueprint(blueprint)
    app.before_request(_read_version)
    app.before_request(lambda: jsonbody.check_path(flask.request.view_args))
    app.after_request(_version_headers)
    app.after_request(_log_request)
    app.register_error_handler(http_exceptions.HTTPException, _http_error)
    app.register_error_handler(Exception, _error)
    # behind api.auth, except version discovery
    app.wsgi_app = auth.wrap(app.wsgi_app, conf, open_paths=OPEN_PATHS)
    return app


def _versions():
    root = (request.services().conf.api.link_prefix
            or flask.request.host_url).rstrip('/')
    resp = flask.jsonify({'versions': [{
        'id': 'v1.0', 'status': 'CURRENT',
        'links': [{'href': root + PREFIX + '/v1', 'rel': 'self'}],
        'min_version': str(VERSION), 'max_version': str(VERSION)}]})
    resp.status_code = 300
    return resp


def _requested(headers):
    """The reservation version text a request names, or None."""
    for part in headers.get(microversion.HEADER, '').split(','):
        service, _, version = part.strip().partition(' ')
        if service.lower() == SERVICE:
            return version.strip()
    return None


def _read_version():
    text = _requested(flask.request.headers)
    if text is None or text.lower() == 'latest':
        return
    if microversion.APIVersion.parse(text, microversion.HEADER) != VERSION:
        raise microversion.NotAcceptable(version=text, min=VERSION,
                                         max=VERSION)


def _version_headers(response):
    response.headers[microversion.HEADER] = '%s %s' % (SERVICE, VERSION)
    response.headers.add('Vary', microversion.HEADER)
    return response


def _log_request(response):
    ctx = flask.request.environ.get(auth.ENV_CONTEXT)
    LOG.info('%s %s %s%s status: %d', ctx.who if ctx else '-',
             flask.request.method, flask.request.script_root,
             flask.request.full_path.rstrip('?'), response.status_code)
    if ctx is not None:
        response.headers['X-OpenStack-Request-ID'] = ctx.request_id
    return response


def error_response(code, message):
    """Blazar's error body: its ``error_name`` is the code, as Blazar's
    own exceptions give it, but for a version it does not serve."""
    name = 'NOT_ACCEPTABLE' if code == 406 else code
    resp = flask.jsonify({'error_code': code, 'error_message': message,
                          'error_name': name})
    resp.status_code = code
    return resp


def _http_error(err):
    """Flask's own errors (no such path, wrong method) in Blazar's shape."""
    message = err.description or err.name
    if err.code == 404:
        message = 'The resource could not be found: %s%s' % (
            flask.request.script_root, flask.request.path)
    elif err.code == 405:
        message = 'The method %s is not allowed for %s%s' % (
            flask.request.method, flask.request.script_root,
            flask.request.path)
    resp = error_response(err.code, message)
    if err.code == 405 and getattr(err, 'valid_methods', None):
        resp.headers['Allow'] = ', '.join(err.valid_methods)
    return resp


def _error(err):
    """Any error a route let out, with the compute API's rules (what an
    unexpected one tells the client: only the request id), in Blazar's
    shape."""
    ctx = flask.request.environ.get(auth.ENV_CONTEXT)
    code, body = faults.from_exception(err, ctx.request_id if ctx else None)
    (fault,) = body.values()
    if code >= 500:
        LOG.warning('%s %s%s answered %d: %s', flask.request.method,
                    flask.request.script_root, flask.request.path, code,
                    fault['message'])
    return error_response(code, fault['message'])


def mount(compute, conf, services):
    """A WSGI app sending ``/reservation...`` to the reservation API (made
    here), the rest to ``compute``."""
    app = create_app(conf, services)

    def dispatch(environ, start_response):
        path = environ.get('PATH_INFO', '')
        if path != PREFIX and not path.startswith(PREFIX + '/'):
            return compute(environ, start_response)
        environ['SCRIPT_NAME'] = environ.get('SCRIPT_NAME', '') + PREFIX
        environ['PATH_INFO'] = path[len(PREFIX):]
        return app(environ, start_response)
    return dispatch

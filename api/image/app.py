"""The image API's WSGI application, and its mount under ``/image``.

``create_app(conf, statedb)`` is a Flask app of its own (Glance's paths,
bodies and errors); :func:`mount` puts it in front of the compute API so
one port serves both: a request under ``/image`` goes to it (``SCRIPT_NAME``
``/image``, ``PATH_INFO`` the rest) without passing the compute API's body
limit, whole-body read and body deadline (an image upload is streamed and
bounded by ``[image] max_image_size`` and ``upload_idle_timeout`` instead).

Authentication is the compute API's (:mod:`api.auth`: noauth or
keystone); version discovery (``/``, ``/v2``) needs none, and a request
with ``X-Tristate-Image-Grant`` (an agent's) is checked by the routes
against the grant instead. With ``[image] api_endpoint`` set, images are
served by that Glance: ``/image`` answers 404 saying so.
"""

import logging

import flask
from werkzeug import exceptions as http_exceptions

from api import auth
from api import middleware
from api.image import access
from api.image import data
from api.image import images
from api.image import members
from common.images import store as store_mod

LOG = logging.getLogger(__name__)
PREFIX = '/image'
OPEN_PATHS = frozenset({'', '/', '/v2', '/v2/', '/versions'})
GRANT_ENVIRON = 'HTTP_X_TRISTATE_IMAGE_GRANT'


def create_app(conf, statedb, *, store_factory=store_mod.ImageStore):
    app = flask.Flask('tristate-image-api')
    app.json.sort_keys = False
    app.url_map.strict_slashes = False
    app.extensions[access.EXTENSION] = access.Services(
        conf=conf, statedb=statedb, store_factory=store_factory)
    for blueprint in (images.bp, data.bp, members.bp):
        app.register_blueprint(blueprint)
    app.before_request(access.check_request)
    app.register_error_handler(http_exceptions.HTTPException, _http_error)
    app.register_error_handler(Exception, _error)
    app.after_request(_log_request)
    # behind api.auth, except discovery and grants
    app.wsgi_app = auth.wrap(app.wsgi_app, conf, open_paths=OPEN_PATHS,
                             open_environ=GRANT_ENVIRON)
    return app


def _http_error(err):
    """Flask's own errors (no such path, wrong method) as Glance's."""
    if err.code == 404:
        message = 'The resource could not be found: %s' % flask.request.path
    else:
        message = err.description or err.name
    headers = None
    if err.code == 405 and getattr(err, 'valid_methods', None):
        headers = {'Allow': ', '.join(err.valid_methods)}
    return access.http_error(err.code, message, headers=headers)


def _error(err):
    response = access.error_response(err)
    if response is None:
        ctx = access.context()
        LOG.error('Unexpected error in the image API (request %s)',
                  ctx.request_id if ctx else '-', exc_info=err)
        response = access.http_error(
            500, 'Unexpected image API error. Please report it with the '
                 'request id %s; the API\'s log has the details.'
                 % (ctx.request_id if ctx else '(none)'))
    elif response.code >= 500:
        LOG.warning('%s %s answered %d: %s', flask.request.method,
                    flask.request.path, response.code, err)
    return response


def _log_request(response):
    ctx = access.context()
    LOG.info('%s %s %s%s status: %d', ctx.who if ctx else 'grant',
             flask.request.method, flask.request.script_root,
             flask.request.full_path.rstrip('?'), response.status_code)
    if ctx is not None:
        response.headers['X-OpenStack-Request-ID'] = ctx.request_id
    return response


def _elsewhere(endpoint):
    message = ('Images are served by the Glance at %s ([image] '
               'api_endpoint); this API serves none.' % endpoint)

    def answer(environ, start_response):
        return access.http_error(404, message)(environ, start_response)
    return answer


def mount(compute, conf, statedb):
    """A WSGI app sending ``/image...`` to the image API (made here), the
    rest to ``compute``."""
    if conf.image.api_endpoint:
        image_app = _elsewhere(conf.image.api_endpoint)
    else:
        image_app = create_app(conf, statedb)

    def dispatch(environ, start_response):
        path = environ.get('PATH_INFO', '')
        if path != PREFIX and not path.startswith(PREFIX + '/'):
            return compute(environ, start_response)
        environ['SCRIPT_NAME'] = environ.get('SCRIPT_NAME', '') + PREFIX
        environ['PATH_INFO'] = path[len(PREFIX):]
        # The compute API's deadline on reading the whole body does not
        # apply: uploads have their own idle deadline (api.image.data).
        environ.pop(middleware.BODY_READ, lambda: None)()
        return image_app(environ, start_response)
    return dispatch

"""What every image route needs: the app's services, who asks (a user's
context, or an agent's grant), the image it may see, links, and errors in
Glance's shape.

A request carries either the user's token (checked by :mod:`api.auth`, the
compute API's middleware: the context is in the environ) or, from an agent,
``X-Tristate-Image-Grant``: a grant the conductor issued
(:mod:`common.images.grants`), checked here against the key in the
database. A read grant shows one image and its data; a write grant uploads
that image's data while it is queued; nothing else.

Errors are webob's HTTP exceptions, as Glance answers them: HTML, JSON
(``{"message", "code", "title"}``) or plain text by the Accept header.
"""

import dataclasses
import threading

import flask
import webob.exc

from api import auth
from api import jsonbody
from common import exception
from common.db import images as images_db
from common.images import grants

EXTENSION = 'tristate-image'
GRANT_HEADER = 'X-Tristate-Image-Grant'
GRANT_KEY = 'image-grants'


@dataclasses.dataclass
class Services:
    conf: object
    statedb: object
    store_factory: object
    _store: object = None
    _lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    _grant_key: bytes = None

    @property
    def grant_key(self):
        """The HMAC key of grants (read once: it never changes)."""
        if self._grant_key is None:
            self._grant_key = images_db.service_key(self.statedb, GRANT_KEY)
        return self._grant_key

    @property
    def store(self):
        """The image store, made on first use (loading glance_store's
        drivers is needed by data routes only)."""
        with self._lock:
            if self._store is None:
                self._store = self.store_factory(self.conf)
            return self._store


def services():
    return flask.current_app.extensions[EXTENSION]


def statedb():
    return services().statedb


def context():
    """The user's context (None when an agent presents a grant)."""
    return flask.request.environ.get(auth.ENV_CONTEXT)


def grant_token():
    return flask.request.headers.get(GRANT_HEADER)


def user():
    """The user's context; a grant is refused on routes it does not open."""
    ctx = context()
    if ctx is None:
        raise exception.Forbidden('An image grant allows reading one image '
                                  'and its data, or uploading its data; '
                                  'not %s %s' % (flask.request.method,
                                                 flask.request.path))
    return ctx


def _check_grant(image_id, op):
    flask.g.image_grant = grants.verify(services().grant_key, grant_token(),
                                        image_id=image_id, op=op)


def grant_claims():
    """The claims of the grant this request was allowed by, or None."""
    return flask.g.get('image_grant')


def image(image_id, op='read'):
    """The image the caller may see: a user's (Glance's visibility), or the
    one a grant for ``op`` names (whatever its visibility)."""
    if context() is None and grant_token():
        _check_grant(image_id, op)
        return images_db.get(statedb(), None, image_id)
    return images_db.get(statedb(), user(), image_id)


def base_url():
    """Where this image API is, as the client sees it ('.../image/')."""
    prefix = services().conf.api.link_prefix
    if prefix:
        return prefix.rstrip('/') + flask.request.script_root + '/'
    return flask.request.url_root


def check_request():
    """Path parameters and query parameters (names and values) must be
    printable text: no id, name or filter holds a control character, and
    PostgreSQL refuses a query with a NUL in it (400 naming the parameter)."""
    jsonbody.check_path(flask.request.view_args)
    check_query(flask.request.args)


def check_query(args):
    for name, value in args.items(multi=True):
        jsonbody.check_path({'query parameter %s' % jsonbody.short(name):
                             name, 'query parameter %s' % name: value})


# --- errors -----------------------------------------------------------------

def http_error(code, message, headers=None):
    """The webob exception Glance would raise for ``code``."""
    cls = webob.exc.status_map.get(code, webob.exc.HTTPInternalServerError)
    if code == 415:
        return cls(detail=message, headers=headers)
    return cls(explanation=message, headers=headers)


def error_response(err):
    """A Flask response (a WSGI app) for any exception a route let out."""
    if isinstance(err, webob.exc.HTTPException):
        return err
    if isinstance(err, exception.DBUnavailable):
        return http_error(503, 'The database is unavailable; try again '
                               'later.')
    if isinstance(err, exception.TristateError):
        return http_error(err.code, err.message)
    return None

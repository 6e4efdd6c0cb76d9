"""What every request passes before the health check, authentication and
routes: oslo.middleware's reverse-proxy headers and request body limit.

* ``oslo_middleware.HTTPProxyToWSGI``: with ``[oslo_middleware]
  enable_proxy_headers_parsing = true`` the ``Forwarded`` (RFC 7239) or
  ``X-Forwarded-Proto``/``-Host``/``-For``/``-Prefix`` headers of the reverse
  proxy in front (HAProxy, nginx) become the request's scheme, host, client
  address and path prefix, so the links of responses name the URL the client
  used. Off by default: a client talking to the API directly could forge them.
* ``oslo_middleware.sizelimit.RequestBodySizeLimiter``: a body larger than
  ``[api] max_request_body_size`` is refused with 413 before it is read (by
  its ``Content-Length``); a chunked body is counted as it is read and
  refused once it passes the limit. The body is then read here, whole (it is
  small: at most the limit), so that no route or library reads a socket
  that a slow client dribbles into (:mod:`api.server` bounds that read
  in time).
"""

import http
import io
import json
import logging

from oslo_config import cfg
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import sizelimit
import webob.exc

from api import faults

LOG = logging.getLogger(__name__)
# Set in the environ once a request has passed the size limit: a 413 from
# beyond it is the application's own.
_PASSED = 'tristate.body_limit_passed'
# Set by api.server: called once the body is read (ends its read deadline).
BODY_READ = 'tristate.body_read'
# Set by api.server: arms (seconds) or ends (None) a deadline on the next
# read of the body (a streamed body's idle bound).
BODY_DEADLINE = 'tristate.body_deadline'


def _answer(start_response, code, message):
    """A Nova fault (``faults.wsgi_response`` with the standard reason)."""
    data = json.dumps(faults.body(code, message)).encode()
    start_response('%d %s' % (code, http.HTTPStatus(code).phrase), [
        ('Content-Type', 'application/json'),
        ('Content-Length', str(len(data)))])
    return [data]


def _too_large(start_response, limit):
    return _answer(start_response, 413,
                   'Request body too large: at most %d bytes ([api] '
                   'max_request_body_size)' % limit)


def _too_slow(start_response):
    return _answer(start_response, 408, 'The request body did not arrive '
                   'in time ([api] body_timeout)')


class _ReadBody:
    """Reads the (limited) body into memory, then calls the application."""

    def __init__(self, app, limit):
        self.app = app
        self.limit = limit

    def __call__(self, environ, start_response):
        environ[_PASSED] = True
        try:
            data = environ['wsgi.input'].read()
        except webob.exc.HTTPRequestEntityTooLarge:
            LOG.info('Refused a chunked body over %d bytes', self.limit)
            return _too_large(start_response, self.limit)
        except (OSError, ValueError) as err:
            LOG.info('The body was cut short: %s', err)
            return _too_slow(start_response)
        finally:
            environ.pop(BODY_READ, lambda: None)()
        if len(data) < int(environ.get('CONTENT_LENGTH') or 0):
            return _too_slow(start_response)
        environ['wsgi.input'] = io.BytesIO(data)
        environ['CONTENT_LENGTH'] = str(len(data))
        # The body is whole now: werkzeug reads CONTENT_LENGTH bytes.
        environ.pop('HTTP_TRANSFER_ENCODING', None)
        return self.app(environ, start_response)


class BodyLimit:
    """oslo.middleware's limiter, reading ``[api] max_request_body_size``,
    whose 413 is answered as a Nova fault."""

    def __init__(self, app, limit):
        self.app = app
        self.limit = limit
        # A private ConfigOpts: the limiter's own option ([oslo_middleware]
        # max_request_body_size) is set from ours and shared with no one.
        limiter_conf = cfg.ConfigOpts()
        self.limiter = sizelimit.RequestBodySizeLimiter(
            _ReadBody(app, limit), limiter_conf)
        limiter_conf.set_override('max_request_body_size', limit,
                                  group='oslo_middleware')

    def __call__(self, environ, start_response):
        length = environ.get('CONTENT_LENGTH')
        if length and not (length.isascii() and length.isdigit()):
            return _answer(start_response, 400, 'Content-Length must be a '
                           'whole number of bytes, not %r' % length)
        if not int(length or 0) and 'HTTP_TRANSFER_ENCODING' not in environ:
            # No body (GET, DELETE, most actions' answers): nothing to limit,
            # and no request object to build on every such call.
            return self.app(environ, start_response)
        refused = []

        def answer(status, headers, exc_info=None):
            if status.startswith('413') and not environ.get(_PASSED):
                refused.append(status)
                return lambda data: None
            return start_response(status, headers, exc_info)

        result = self.limiter(environ, answer)
        if not refused:
            return result
        if hasattr(result, 'close'):
            result.close()
        LOG.info('Refused a body of %s bytes (over %d)',
                 environ.get('CONTENT_LENGTH'), self.limit)
        return _too_large(start_response, self.limit)


def wrap(app, conf, *, before_limit=None):
    """``app`` behind the proxy headers and the body limit.
    ``before_limit(limited)``: a WSGI app made around the limited one that
    sees every request first (the image API's mount, whose uploads are
    streamed past the limit)."""
    limited = BodyLimit(app, conf.api.max_request_body_size)
    if before_limit is not None:
        limited = before_limit(limited)
    if not conf.oslo_middleware.enable_proxy_headers_parsing:
        # Off, the middleware passes every request through unchanged, after
        # building a webob request for it: not worth that on every call.
        return limited
    return http_proxy_to_wsgi.HTTPProxyToWSGI(limited, conf)

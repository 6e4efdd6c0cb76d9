"""Errors as Nova answers them: ``{"conflictingRequest": {"code": 409,
"message": "..."}}``, with the message of the :mod:`common.exception` class
the conductor raised, in full (a denied action names the instance, its
vm_state, the running task and the states the action needs)."""

import json
import logging

from common import exception
from common import rpc

LOG = logging.getLogger(__name__)

NAMES = {400: 'badRequest', 401: 'unauthorized', 403: 'forbidden',
         404: 'itemNotFound', 405: 'badMethod', 406: 'notAcceptable',
         409: 'conflictingRequest', 413: 'overLimit', 415: 'badMediaType',
         501: 'notImplemented', 503: 'serviceUnavailable'}


def body(code, message):
    return {NAMES.get(code, 'computeFault'): {'code': code,
                                              'message': message}}


def from_exception(err, request_id=None):
    """(status, body) for any exception a request handler let out.

    An unexpected one answers only that, and the request id: its message
    can hold anything, up to a conductor's whole traceback (oslo.messaging
    puts the remote traceback in the message of an exception it re-raises),
    which goes to the API's log, never to the client."""
    if isinstance(err, exception.DBUnavailable):
        return 503, body(503, _db_unavailable(err.kwargs))
    if isinstance(err, exception.TristateError):
        return err.code, body(err.code, err.message)
    if isinstance(err, rpc.RemoteError):
        # The conductor failed (an exception oslo.messaging does not
        # re-raise as itself): a bug, not a bus that is down.
        return _unexpected(err, request_id)
    if isinstance(err, rpc.MessagingTimeout):
        message = ('No conductor answered in time; the request may or may '
                   'not have been carried out (check with GET): %s' % err)
        return 503, body(503, message)
    if isinstance(err, rpc.MessagingException):
        return 503, body(503, 'The message bus is unavailable: %s' % err)
    return _unexpected(err, request_id)


def _unexpected(err, request_id):
    LOG.error('Unexpected error in the API (request %s)', request_id,
              exc_info=err)
    return 500, body(500, 'Unexpected API error. Please report it with the '
                          'request id %s; the API\'s log has the details.'
                          % (request_id or '(none)'))


def _db_unavailable(kwargs):
    """What a client is told when the database is down: that, how long it
    was tried, and to try again; not the driver's words, which name the
    database server (the API's log has them)."""
    tried = ''
    if 'attempts' in kwargs and 'seconds' in kwargs:
        tried = ' (%d attempts over %.1f s)' % (kwargs['attempts'],
                                                kwargs['seconds'])
    return 'The database is unavailable%s; try again later.' % tried


def wsgi_response(start_response, code, message, headers=()):
    """Answer an error from plain WSGI middleware (before Flask)."""
    data = json.dumps(body(code, message)).encode()
    status = '%d %s' % (code, NAMES.get(code, 'Error'))
    start_response(status, [('Content-Type', 'application/json'),
                            ('Content-Length', str(len(data)))]
                   + list(headers))
    return [data]

"""Consoles (issue 24): ``os-getConsoleOutput``, Nova's remote consoles
(``POST /servers/{id}/remote-consoles``, 2.6+) and the older
``os-getSerialConsole`` / ``os-getVNCConsole`` actions.

The text and the tokens come from the conductor (RPC 1.11,
:mod:`conductor.consoles`), which asks the agent of the instance's host.
A URL is ``[serial_console] base_url`` with ``?token=`` appended: the
token opens the instance's serial console once, through
``tristate-console-proxy``, until ``[serial_console] token_ttl`` passes.
Only ``serial`` is built; every other type is Nova's 400 "Unavailable
console type" (no VNC display is defined on the guests).
"""

import urllib.parse

import flask

from api import microversion
from api import request
from api import schemas
from common import exception

bp = flask.Blueprint('consoles', __name__,
                     url_prefix='/v2.1/servers/<server_id>')

REMOTE_CONSOLES = microversion.APIVersion(2, 6)
SERIAL = 'serial'
# Nova's remote-consoles body: protocol and type, each from its list
# (2.6; mks/webmks from 2.8, spice-direct from 2.99).
PROTOCOLS = ['vnc', 'spice', 'rdp', 'serial', 'mks']
TYPES = ['novnc', 'xvpvnc', 'rdp-html5', 'spice-html5', 'serial', 'webmks',
         'spice-direct']
REMOTE_CONSOLE = schemas._object(   # noqa: SLF001 (the schemas' helper)
    ['remote_console'], remote_console=schemas._object(  # noqa: SLF001
        ['protocol', 'type'], protocol={'enum': PROTOCOLS},
        type={'enum': TYPES}))


def _url(token):
    base = request.services().conf.serial_console.base_url
    parts = urllib.parse.urlsplit(base)
    query = urllib.parse.parse_qsl(parts.query)
    query.append(('token', token))
    return urllib.parse.urlunsplit(parts._replace(
        query=urllib.parse.urlencode(query)))


def _serial_url(inst, console_type):
    """A URL with a fresh token; 400 for anything but ``serial``."""
    if console_type != SERIAL:
        raise exception.Invalid('Unavailable console type %s.'
                                % console_type)
    made = request.services().client.create_console(
        request.context(), inst['uuid'], SERIAL)
    return _url(made['token'])


@bp.post('/remote-consoles')
def remote_consoles(server_id):
    if request.version() < REMOTE_CONSOLES:
        raise exception.NotFound('The resource could not be found.')
    body = request.json_body(REMOTE_CONSOLE)['remote_console']
    if (body['protocol'] == SERIAL) != (body['type'] == SERIAL):
        raise exception.Invalid(
            "Invalid input for field/attribute remote_console: protocol "
            "%r and type %r do not go together (serial goes with serial)"
            % (body['protocol'], body['type']))
    inst = request.get_server(server_id,
                              rule='tristate:servers:remote_consoles')
    url = _serial_url(inst, body['type'])
    return {'remote_console': {'protocol': body['protocol'],
                               'type': body['type'], 'url': url}}


def action(inst, key, params):
    """The console actions of ``POST /servers/{id}/action``."""
    if key == 'os-getConsoleOutput':
        return _output(inst, params.get('length'))
    url = _serial_url(inst, params['type'])
    return flask.make_response(flask.jsonify(
        {'console': {'type': params['type'], 'url': url}}), 200)


def _output(inst, length):
    """Nova's answer: ``{"output": text}``, the last ``length`` pieces of
    the log split at newlines, as Nova's ``_tail_log`` cuts it (a log
    ending in a newline has an empty last piece, which counts); all of it
    for None or -1, nothing for 0."""
    if length is not None and length < -1:
        raise exception.Invalid(
            'Invalid input for field/attribute length. Value: %d. %d is '
            'less than the minimum of -1' % (length, length))
    text = request.services().client.get_console_output(request.context(),
                                                        inst['uuid'])
    if length is not None and length >= 0:
        text = '\n'.join(text.split('\n')[-length:]) if length else ''
    return flask.make_response(flask.jsonify({'output': text}), 200)

"""Nova's ``evacuate`` server action (issue 25), at every microversion.

    POST /servers/{id}/action {"evacuate": {...}}       (admin)

========  ===============================================================
from      the body's keys
========  ===============================================================
2.1       ``host`` (taken without the scheduler, as Nova's API passes
          it), ``onSharedStorage`` (required), ``adminPass``
2.14      ``onSharedStorage`` gone; the answer has no body
2.29      ``force`` (with ``host`` only: the scheduler skipped); a
          ``host`` without it goes through the scheduler's filters
2.68      ``force`` gone (400): a named host always through the filters
2.95      the evacuated server ends STOPPED, whatever it was
========  ===============================================================

Tristate's hosts share no storage: an evacuated server is **rebuilt from
its image** on its new host, and whatever its local disk held is lost.
So ``onSharedStorage: true`` is refused (400), and so is ``adminPass``
(as for rebuild: no agent in the rebuilt guest takes it); before 2.14 the
answer is ``{}``, without the password Nova would show. The conductor
refuses (409) unless the server's host is forced down and silent, and
refuses (409, naming why) a named host that cannot take the server: its
agent down, disabled (unless forced), or short of room
(:mod:`conductor.evacuate`). Answers 200, as Nova.
"""

import copy

import flask
from oslo_utils import strutils

from api import microversion
from api import request
from api import schemas
from common import exception

NO_SHARED_STORAGE = microversion.APIVersion(2, 14)
FORCE_FROM = microversion.APIVersion(2, 29)
FORCE_UNTIL = microversion.APIVersion(2, 67)
STOPPED_FROM = microversion.APIVersion(2, 95)

_BOOLEAN = {'enum': [True, False, 'True', 'False', 'true', 'false', 'TRUE',
                     'FALSE', '1', '0', 'yes', 'no', 'on', 'off', 'y', 'n',
                     't', 'f']}
_HOST = {'type': 'string', 'minLength': 1, 'maxLength': 255,
         'pattern': r'^[a-zA-Z0-9_.:-]+$'}
_V21 = {'type': 'object',
        'properties': {'host': _HOST, 'onSharedStorage': _BOOLEAN,
                       'adminPass': {'type': 'string'}},
        'required': ['onSharedStorage'], 'additionalProperties': False}
_V214 = copy.deepcopy(_V21)
del _V214['properties']['onSharedStorage']
del _V214['required']
_V229 = copy.deepcopy(_V214)
_V229['properties']['force'] = _BOOLEAN

# What ServerAction checks before the route: an object; the rest is here.
ANY = {'type': 'object'}


def body_schema(version):
    """The evacuate body's schema at ``version``."""
    if version < NO_SHARED_STORAGE:
        return _V21
    if FORCE_FROM <= version <= FORCE_UNTIL:
        return _V229
    return _V214


def _flag(value):
    return strutils.bool_from_string(value, strict=True)


def params_of(body, version):
    """(table action, run_action parameters) of a checked body."""
    schemas.validate({'type': 'object',
                      'properties': {'evacuate': body_schema(version)}},
                     {'evacuate': body})
    if version < NO_SHARED_STORAGE and _flag(body['onSharedStorage']):
        raise exception.Invalid(
            'Invalid input for field/attribute evacuate.onSharedStorage. '
            "Value: %r. Tristate's hosts share no storage: an evacuated "
            'server is rebuilt from its image (its local disk data is '
            'lost); onSharedStorage must be false' % body['onSharedStorage'])
    if 'adminPass' in body:
        raise exception.Invalid(
            'Invalid input for field/attribute evacuate.adminPass: setting '
            'a password at evacuation is not supported (the rebuilt guest '
            'has no agent to take it yet; use changePassword once it runs)')
    params = {}
    if body.get('host'):
        params['host'] = body['host']
        if version < FORCE_FROM:
            # Nova before 2.29: a named host skips the scheduler
            params['force'] = True
    if 'force' in body and _flag(body['force']):
        if not body.get('host'):
            raise exception.Invalid("Can't force to a non-provided "
                                    "destination")
        params['force'] = True
    action = 'evacuate_stopped' if version >= STOPPED_FROM else 'evacuate'
    return action, params


def action(inst, body):
    """Run the evacuation of ``inst`` (read with the policy checked)."""
    version = request.version()
    name, params = params_of(body, version)
    if 'host' in params and params['host'] not in request.hosts_up():
        raise exception.NotFound('Compute host %s not found.'
                                 % params['host'])
    if params.get('host') == inst['host']:
        raise exception.Invalid("The target host can't be the same one.")
    client, ctx = request.services().client, request.context()
    after = client.run_action(ctx, inst['uuid'], name, params)
    if version >= NO_SHARED_STORAGE:
        resp = request.no_content(200)
    else:
        resp = flask.make_response(flask.jsonify({}), 200)
    started = after.get('started_task_id') or after.get('task_id')
    if started:
        resp.headers[request.TASK_ID_HEADER] = started
    return resp

"""``POST /v2.1/os-server-external-events`` (Nova's, for services: the
``service`` role, or an admin): another service's news of a server,
answered per event as Nova answers it — 404 for a server that does not
exist, 400 for an event that needs a ``tag`` and has none, 422 for a
server on no host — with 207 when any event failed.

What each event asks of Nova, and what Tristate makes of it:

* ``network-changed``: refresh the server's cached network information.
  Tristate keeps no such cache (a server's addresses are read from its own
  database each time), so there is nothing stale: completed.
* ``network-vif-plugged``/``-unplugged``/``-deleted`` (Neutron's ports),
  ``volume-extended``, ``volume-reimaged`` (Cinder's volumes),
  ``power-update`` (Ironic's power state; Tristate's agents report power
  themselves) and ``accelerator-request-bound`` (Cyborg's): work Tristate
  does not do, for services it does not use. Each is answered ``failed``
  with code 422 (understood, not processable here), never completed.
"""

import flask

from api import microversion
from api import request
from common import exception
from common.states import vm

bp = flask.Blueprint('external_events', __name__, url_prefix='/v2.1')

V = microversion.APIVersion
# Nova's event names, from the microversion it takes each.
_NAMES = ((V(2, 1), ('network-changed', 'network-vif-plugged',
                     'network-vif-unplugged', 'network-vif-deleted')),
          (V(2, 51), ('volume-extended',)), (V(2, 76), ('power-update',)),
          (V(2, 82), ('accelerator-request-bound',)),
          (V(2, 93), ('volume-reimaged',)))
TAG_REQUIRED = ('volume-extended', 'power-update',
                'accelerator-request-bound')
# What Tristate does for an event on a server on a host: complete it.
COMPLETED = frozenset({'network-changed'})
STATUSES = ('failed', 'completed', 'in-progress')
UUID = {'type': 'string', 'pattern': '^[0-9a-fA-F-]{32,36}$'}


def _schema(version):
    names = [n for since, group in _NAMES if version >= since for n in group]
    return {'type': 'object', 'required': ['events'],
            'additionalProperties': False,
            'properties': {'events': {
                'type': 'array', 'minItems': 1,
                'items': {'type': 'object',
                          'required': ['name', 'server_uuid'],
                          'additionalProperties': False,
                          'properties': {
                              'name': {'enum': names},
                              'server_uuid': UUID,
                              'status': {'enum': list(STATUSES)},
                              'tag': {'type': 'string', 'maxLength': 255}}}}}}


def _instance(uuid):
    try:
        inst = request.services().client.get_instance(request.context(), uuid)
    except exception.NotFound:
        return None
    return None if inst['vm_state'] == vm.HARD_DELETED else inst


def _code(event, inst):
    if inst is None:
        return 404
    if event['name'] in TAG_REQUIRED and 'tag' not in event:
        return 400
    if not inst['host'] or event['name'] not in COMPLETED:
        return 422
    return 200


@bp.post('/os-server-external-events')
def create():
    body = request.json_body(_schema(request.version()))
    request.authorize('tristate:server_external_events', {})
    answered, status = [], 200
    for event in body['events']:
        code = _code(event, _instance(event['server_uuid']))
        answered.append(dict(event, code=code, status='completed'
                             if code == 200 else 'failed'))
        if code != 200:
            status = 207
    resp = flask.jsonify({'events': answered})
    resp.status_code = status
    return resp

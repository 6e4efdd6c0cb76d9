"""``/leases``: advance host reservations, with Blazar's bodies.

    GET    /v2.1/leases[?all_projects=1]   {"leases": [...]}
    POST   /v2.1/leases                    201 {"lease": {...}}
    GET    /v2.1/leases/{id}               {"lease": {...}}
    PUT    /v2.1/leases/{id}               {"lease": {...}}
    DELETE /v2.1/leases/{id}               204

This is Tristate's own face of the leases (with ``on_end`` and
``status_reason`` as plain keys); Blazar's v1 face of the same leases, and
the reservable pool (``/v1/os-hosts``), are served under ``/reservation``
(:mod:`api.reservation`).

Request bodies are Blazar's (not wrapped): ``{"name", "start_date",
"end_date", "reservations": [{"resource_type": "physical:host", "min",
"max", "hypervisor_properties"}], "before_end_date", "on_end"}`` to
create; ``{"name", "start_date", "end_date", "prolong_for", "reduce_by",
"before_end_date", "on_end"}`` to update. A body that does not match the
schema is a 400 naming the field; what it means is checked by the
conductor (:mod:`conductor.leases.requests`), which also answers 409 for a
change the lease's status forbids, with the reason, and for hosts that are
not free. Instances use a lease with the ``reservation_id`` (or Blazar's
``reservation``) scheduler hint of ``POST /servers``.
"""

import datetime

import flask
from oslo_utils import strutils

from api import request
from api import schemas
from common import leases as rules
from conductor.leases import rpcapi

bp = flask.Blueprint('leases', __name__, url_prefix='/v2.1/leases')

RULE = 'tristate:leases:%s'
DATE = {'type': 'string', 'minLength': 1, 'maxLength': 64,
        'format': schemas.PRINTABLE}
HOSTS = {'type': ['integer', 'string'], 'pattern': '^[0-9]+$', 'minimum': 1,
         'maximum': 10000, 'maxLength': schemas.INT_TEXT}
# At most 12 digits: more is beyond any date a lease can have (year 9999).
DURATION = {'type': 'string', 'pattern': r'^\s*[0-9]{1,12}\s*[smhd]\s*$',
            'format': schemas.PRINTABLE}
ON_END = {'enum': list(rules.ON_END)}

RESERVATION = {
    'type': 'object',
    'properties': {
        'resource_type': {'enum': list(rules.RESOURCE_TYPES)},
        'min': HOSTS, 'max': HOSTS,
        'hypervisor_properties': {'type': 'string', 'maxLength': 65535},
        'resource_properties': {'type': 'string', 'maxLength': 65535},
        'before_end': {'enum': ['default']},
    },
    'required': ['resource_type', 'min', 'max'],
    'additionalProperties': False,
}
CREATE_LEASE = {
    'type': 'object',
    'properties': {
        'name': schemas.NAME, 'start_date': DATE, 'end_date': DATE,
        'before_end_date': {'type': ['string', 'null'], 'maxLength': 64,
                            'format': schemas.PRINTABLE},
        'reservations': {'type': 'array', 'items': RESERVATION,
                         'minItems': 1, 'maxItems': 16},
        'events': {'type': 'array', 'maxItems': 0},
        'on_end': ON_END,
    },
    'required': ['name', 'start_date', 'end_date', 'reservations'],
    'additionalProperties': False,
}
UPDATE_LEASE = {
    'type': 'object',
    'properties': {
        'name': schemas.NAME, 'start_date': DATE, 'end_date': DATE,
        'prolong_for': DURATION, 'reduce_by': DURATION,
        'before_end_date': DATE, 'on_end': ON_END,
    },
    'minProperties': 1,
    'additionalProperties': False,
}


def lease_api():
    return rpcapi.LeaseAPI(request.services().client)


def blazar_time(value):
    """Blazar's '2026-01-01T13:00:00.000000' from what the bus carried."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value)
    return value.strftime('%Y-%m-%dT%H:%M:%S.%f')


def _reservation(res):
    return {'id': res['id'], 'lease_id': res['lease_id'],
            'resource_type': res['resource_type'], 'status': res['status'],
            'min': res['min_hosts'], 'max': res['max_hosts'],
            'hypervisor_properties': res['hypervisor_properties'],
            'resource_properties': '',
            'created_at': blazar_time(res['created_at']),
            'updated_at': blazar_time(res['updated_at']),
            'tristate:hosts': res['hosts']}


def event_body(event):
    return {'id': event['id'], 'lease_id': event['lease_id'],
            'event_type': event['event_type'],
            'time': blazar_time(event['time']),
            'status': event['status'],
            'created_at': blazar_time(event['created_at']),
            'updated_at': blazar_time(event['updated_at'])}


def lease_body(lease):
    return {
        'id': lease['id'], 'name': lease['name'],
        'project_id': lease['project_id'], 'user_id': lease['user_id'],
        'start_date': blazar_time(lease['start_date']),
        'end_date': blazar_time(lease['end_date']),
        'before_end_date': blazar_time(lease['before_end_date']),
        'status': lease['status'], 'status_reason': lease['status_reason'],
        'degraded': False, 'on_end': lease['on_end'],
        'created_at': blazar_time(lease['created_at']),
        'updated_at': blazar_time(lease['updated_at']),
        'reservations': [_reservation(r) for r in lease['reservations']],
        'events': [event_body(e) for e in lease['events']],
    }


def owned(lease_id, rule):
    """The lease, or 404 if this caller has no such lease."""
    lease = lease_api().get_lease(request.context(), lease_id)
    request.authorize(RULE % rule, {'project_id': lease['project_id']})
    return lease


@bp.get('', strict_slashes=False)
def index():
    request.authorize(RULE % 'index')
    args = flask.request.args
    value = args.get('all_projects', args.get('all_tenants'))
    everyone = value is not None and strutils.bool_from_string(
        value or 'true', default=True)
    if everyone:
        request.authorize(RULE % 'index:all_projects')
    leases = lease_api().list_leases(request.context(), all_projects=everyone)
    return {'leases': [lease_body(lease) for lease in leases]}


@bp.post('', strict_slashes=False)
def create():
    body = request.json_body(CREATE_LEASE)
    request.authorize(RULE % 'create')
    lease = lease_api().create_lease(request.context(), body)
    resp = flask.jsonify({'lease': lease_body(lease)})
    resp.status_code = 201
    resp.headers['Location'] = request.links().href('leases', lease['id'])
    return resp


@bp.get('/<lease_id>')
def show(lease_id):
    return {'lease': lease_body(owned(lease_id, 'show'))}


@bp.put('/<lease_id>')
def update(lease_id):
    body = request.json_body(UPDATE_LEASE)
    owned(lease_id, 'update')
    lease = lease_api().update_lease(request.context(), lease_id, body)
    return {'lease': lease_body(lease)}


@bp.delete('/<lease_id>')
def delete(lease_id):
    owned(lease_id, 'delete')
    lease_api().delete_lease(request.context(), lease_id)
    return request.no_content(204)

"""Blazar's v1 lease and host routes: the same leases as ``/v2.1/leases``
(one conductor implementation, :mod:`conductor.leases`), Blazar's bodies.

    GET    /v1/leases                  {"leases": [...]} (an admin's: all)
    POST   /v1/leases                  201 {"lease": {...}}
    GET    /v1/leases/{id}             {"lease": {...}}
    PUT    /v1/leases/{id}             {"lease": {...}}
    DELETE /v1/leases/{id}             204
    GET    /v1/os-hosts                {"hosts": [...]}   the reservable pool
    POST   /v1/os-hosts {"name": H}    201 {"host": {...}}
    GET    /v1/os-hosts/{id}           {"host": {...}}
    DELETE /v1/os-hosts/{id}           204 (409 while a lease holds it)

A lease is Blazar's (``id``, ``name``, ``user_id``, ``project_id``,
``start_date``, ``end_date``, ``trust_id``, ``status``, ``degraded``,
``reservations``, ``events``, dates as ``2026-01-01T13:00:00.000000``);
what only Tristate has is under ``tristate:`` keys (``tristate:on_end``,
``tristate:status_reason``, a reservation's ``tristate:hosts``), and
``tristate:on_end`` may be sent to create or update. A host's ``id`` is
its name (Tristate's hosts have no other id; python-blazarclient finds a
host by ``hypervisor_hostname`` either way).

What Blazar has and Tristate cannot honour is refused with a 400 that says
it is not supported, never accepted and ignored: reservations other than
``physical:host``, ``resource_properties`` (hosts have no extra
capabilities here), a ``before_end`` action other than ``default``, extra
lease events, changing a lease's reservations, host extra capabilities
(``PUT /v1/os-hosts/{id}``, extra keys to create), host properties and
allocations, and query filters on the lists.
"""

import flask

from api import request
from api import schemas
from api.routes import leases as tristate_leases
from common import exception
from common import leases as rules

leases_bp = flask.Blueprint('blazar_leases', __name__,
                            url_prefix='/v1/leases')
hosts_bp = flask.Blueprint('blazar_hosts', __name__,
                           url_prefix='/v1/os-hosts')

RULE = tristate_leases.RULE
ON_END_KEY = 'tristate:on_end'
HOST_TYPE = 'tristate'          # as os-hypervisors says (api/views.py)
ZONE = 'nova'

RESERVATION = {
    'type': 'object',
    'properties': {
        'resource_type': {'enum': list(rules.RESOURCE_TYPES)},
        'min': tristate_leases.HOSTS, 'max': tristate_leases.HOSTS,
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
        'name': schemas.NAME,
        'start_date': tristate_leases.DATE, 'end_date': tristate_leases.DATE,
        'before_end_date': {'type': ['string', 'null'], 'maxLength': 64,
                            'format': schemas.PRINTABLE},
        'reservations': {'type': 'array', 'items': RESERVATION,
                         'minItems': 1, 'maxItems': 16},
        'events': {'type': 'array', 'maxItems': 0},
        ON_END_KEY: tristate_leases.ON_END,
    },
    'required': ['name', 'start_date', 'end_date', 'reservations'],
    'additionalProperties': False,
}
UPDATE_LEASE = {
    'type': 'object',
    'properties': {
        'name': schemas.NAME,
        'start_date': tristate_leases.DATE, 'end_date': tristate_leases.DATE,
        'prolong_for': tristate_leases.DURATION,
        'reduce_by': tristate_leases.DURATION,
        'before_end_date': tristate_leases.DATE,
        ON_END_KEY: tristate_leases.ON_END,
    },
    'minProperties': 1,
    'additionalProperties': False,
}
ADD_HOST = {
    'type': 'object',
    'properties': {'name': {'type': 'string', 'minLength': 1,
                            'maxLength': 255, 'format': schemas.PRINTABLE}},
    'required': ['name'],
    'additionalProperties': False,
}


def _api():
    return tristate_leases.lease_api()


def _not_supported(field, value, why):
    return exception.Invalid(
        'Invalid input for field/attribute %s. Value: %r. %s is not '
        'supported by Tristate.' % (field, value, why))


def _refuse_reservations(body):
    """400 for the reservations Blazar has and Tristate cannot honour."""
    listed = body.get('reservations')
    for i, res in enumerate(listed if isinstance(listed, list) else ()):
        if not isinstance(res, dict):
            continue
        kind = res.get('resource_type')
        if kind is not None and kind not in rules.RESOURCE_TYPES:
            raise _not_supported(
                'reservations.%d.resource_type' % i, kind,
                'A reservation of %s (only whole hosts, %s, are reserved)'
                % (kind, rules.RESOURCE_HOST))
        if res.get('resource_properties') not in (None, '', '[]'):
            raise _not_supported(
                'reservations.%d.resource_properties' % i,
                res['resource_properties'], 'Selecting hosts by extra '
                'capabilities (use hypervisor_properties)')
        if res.get('before_end') not in (None, 'default'):
            raise _not_supported('reservations.%d.before_end' % i,
                                 res['before_end'], 'A before_end action '
                                 'other than "default"')


def _refuse_query():
    if flask.request.args:
        name = next(iter(flask.request.args))
        raise _not_supported(name, flask.request.args[name],
                             'Filtering this list')


def _conductor_body(body):
    """The body the conductor takes (:mod:`conductor.leases.requests`)."""
    out = {k: v for k, v in body.items()
           if k not in (ON_END_KEY, 'events', 'reservations')}
    if out.get('before_end_date', '') is None:
        del out['before_end_date']
    if ON_END_KEY in body:
        out['on_end'] = body[ON_END_KEY]
    if 'reservations' in body:
        out['reservations'] = [
            {k: v for k, v in res.items() if k != 'before_end'}
            for res in body['reservations']]
    return out


# --- bodies -----------------------------------------------------------------

def _reservation(res):
    return {'id': res['id'], 'lease_id': res['lease_id'],
            'resource_id': res['id'],
            'resource_type': res['resource_type'], 'status': res['status'],
            'missing_resources': False, 'resources_changed': False,
            'created_at': tristate_leases.blazar_time(res['created_at']),
            'updated_at': tristate_leases.blazar_time(res['updated_at']),
            'hypervisor_properties': res['hypervisor_properties'],
            'resource_properties': '', 'before_end': 'default',
            'min': res['min_hosts'], 'max': res['max_hosts'],
            'tristate:hosts': res['hosts']}


def lease_body(lease):
    time = tristate_leases.blazar_time
    return {
        'id': lease['id'], 'name': lease['name'],
        'user_id': lease['user_id'], 'project_id': lease['project_id'],
        'start_date': time(lease['start_date']),
        'end_date': time(lease['end_date']),
        'trust_id': None, 'status': lease['status'], 'degraded': False,
        'created_at': time(lease['created_at']),
        'updated_at': time(lease['updated_at']),
        'reservations': [_reservation(r) for r in lease['reservations']],
        'events': [tristate_leases.event_body(e) for e in lease['events']],
        ON_END_KEY: lease['on_end'],
        'tristate:status_reason': lease['status_reason'],
    }


def host_body(host):
    time = tristate_leases.blazar_time
    return {'id': host['name'], 'hypervisor_hostname': host['name'],
            'service_name': host['name'], 'hypervisor_type': HOST_TYPE,
            'hypervisor_version': 1, 'cpu_info': '{}',
            'vcpus': host['vcpus'], 'memory_mb': host['memory_mb'],
            'local_gb': host['disk_gb'], 'status': None,
            'availability_zone': ZONE, 'trust_id': None,
            'reservable': True,
            # when the host first reported; its row changes at every
            # heartbeat, which is no change of the pool's host
            'created_at': time(host.get('created_at')), 'updated_at': None,
            'tristate:enabled': host['enabled']}


# --- leases ------------------------------------------------------------------

@leases_bp.get('', strict_slashes=False)
def list_leases():
    """Blazar shows an admin every project's leases, others their own."""
    request.authorize(RULE % 'index')
    _refuse_query()
    everyone = request.allows(RULE % 'index:all_projects')
    leases = _api().list_leases(request.context(), all_projects=everyone)
    return {'leases': [lease_body(lease) for lease in leases]}


@leases_bp.post('', strict_slashes=False)
def create_lease():
    raw = request.json_body(schemas.ANYTHING)
    if isinstance(raw, dict):
        _refuse_reservations(raw)
        if raw.get('events'):
            raise _not_supported('events', raw['events'], 'A lease event '
                                 'of your own (Tristate runs start_lease, '
                                 'before_end_lease and end_lease)')
    body = schemas.validate(CREATE_LEASE, raw)
    request.authorize(RULE % 'create')
    lease = _api().create_lease(request.context(), _conductor_body(body))
    resp = flask.jsonify({'lease': lease_body(lease)})
    resp.status_code = 201
    return resp


@leases_bp.get('/<lease_id>')
def show_lease(lease_id):
    return {'lease': lease_body(tristate_leases.owned(lease_id, 'show'))}


@leases_bp.put('/<lease_id>')
def update_lease(lease_id):
    raw = request.json_body(schemas.ANYTHING)
    if isinstance(raw, dict) and 'reservations' in raw:
        raise _not_supported('reservations', raw['reservations'],
                             'Changing the reservations of a lease')
    body = schemas.validate(UPDATE_LEASE, raw)
    tristate_leases.owned(lease_id, 'update')
    lease = _api().update_lease(request.context(), lease_id,
                                _conductor_body(body))
    return {'lease': lease_body(lease)}


@leases_bp.delete('/<lease_id>')
def delete_lease(lease_id):
    tristate_leases.owned(lease_id, 'delete')
    _api().delete_lease(request.context(), lease_id)
    return request.no_content(204)


# --- the reservable pool -------------------------------------------------------

def _pool():
    return _api().list_hosts(request.context())


def _pool_host(host_id):
    found = next((h for h in _pool() if h['name'] == host_id), None)
    if found is None:
        raise exception.NotFound('Host %s is not in the reservable pool.'
                                 % host_id)
    return found


@hosts_bp.get('', strict_slashes=False)
def list_hosts():
    request.authorize(RULE % 'hosts:index')
    _refuse_query()
    return {'hosts': [host_body(h) for h in _pool()]}


@hosts_bp.post('', strict_slashes=False)
def add_host():
    raw = request.json_body(schemas.ANYTHING)
    if isinstance(raw, dict):
        extra = sorted(set(raw) - {'name'})
        if extra:
            raise _not_supported(extra[0], raw[extra[0]], 'A host extra '
                                 'capability')
    body = schemas.validate(ADD_HOST, raw)
    request.authorize(RULE % 'hosts:add')
    if any(h['name'] == body['name'] for h in _pool()):
        raise exception.Conflict('Host %s is already in the reservable pool.'
                                 % body['name'])
    _api().set_host(request.context(), body['name'], True)
    resp = flask.jsonify({'host': host_body(_pool_host(body['name']))})
    resp.status_code = 201
    return resp


@hosts_bp.get('/<host_id>')
def show_host(host_id):
    request.authorize(RULE % 'hosts:index')
    return {'host': host_body(_pool_host(host_id))}


@hosts_bp.put('/<host_id>')
def update_host(host_id):
    body = request.json_body(schemas.ANYTHING)
    request.authorize(RULE % 'hosts:add')
    _pool_host(host_id)
    raise _not_supported('values', body, 'Changing a host\'s extra '
                         'capabilities')


@hosts_bp.delete('/<host_id>')
def remove_host(host_id):
    request.authorize(RULE % 'hosts:remove')
    _pool_host(host_id)
    _api().set_host(request.context(), host_id, False)
    return request.no_content(204)


@hosts_bp.route('/properties', methods=['GET'])
@hosts_bp.route('/properties/<name>', methods=['PATCH'])
@hosts_bp.route('/allocations', methods=['GET'])
@hosts_bp.route('/<host_id>/allocation', methods=['GET'])
def not_supported(**_):
    request.authorize(RULE % 'hosts:index')
    path = flask.request.script_root + flask.request.path
    raise exception.Invalid('%s %s is not supported by Tristate: hosts have '
                            'no extra capabilities here, and a lease shows '
                            'the hosts it holds (tristate:hosts).'
                            % (flask.request.method, path))

"""``/os-services`` and ``/os-instance_usage_audit_log``, as Nova answers
them (admin only).

    GET    /os-services[?host=&binary=]
    PUT    /os-services/{enable|disable|disable-log-reason|force-down}  (before 2.53)
    PUT    /os-services/{uuid}        (from 2.53) status, disabled_reason, forced_down
    DELETE /os-services/{id}          (int before 2.53, uuid from 2.53)
    GET    /os-instance_usage_audit_log[/{before}]

Each host is one ``nova-compute`` service (in its availability zone:
common/db/aggregates.py), its status the host's ``enabled`` and its state
up while its agent's heartbeats arrive and no admin forced it down; each
conductor is a ``nova-conductor`` (in ``[DEFAULT]
internal_service_availability_zone``), always enabled (the conductor also
schedules: there is no separate ``nova-scheduler``). Only ``nova-compute``
services can be disabled or forced down: the scheduler then places nothing
there (a disabled host keeps what runs on it; a forced-down host is shown
down and takes no action but delete). Ids: a compute's is its hypervisor
number, a conductor's is :data:`CONDUCTOR_IDS` plus its service row's;
from 2.53 a uuid derived from the binary and the host.
"""

import datetime
import uuid as uuidlib

import flask
from oslo_utils import strutils
from oslo_utils import uuidutils

from api import microversion
from api import request
from api import views
from common import exception
from common.db import services as services_db

bp = flask.Blueprint('services', __name__, url_prefix='/v2.1')

V = microversion.APIVersion
FORCED_DOWN = V(2, 11)
SERVICE_UUIDS = V(2, 53)
STRICT_QUERY = V(2, 75)

COMPUTE = 'nova-compute'
CONDUCTOR = 'nova-conductor'
# A conductor's integer id: this plus its service row's id (hosts are
# numbered from 1 and keep the ids below).
CONDUCTOR_IDS = 1000000
_NAMESPACE = uuidlib.UUID('5c7f3f0e-2a53-4c0b-9d0e-7d8a7a6f2b11')

_FQDN = {'type': 'string', 'minLength': 1, 'maxLength': 255,
         'pattern': '^[a-zA-Z0-9-._]*$'}
_TEXT = {'type': 'string', 'minLength': 1, 'maxLength': 255}
_BOOLEAN = {'enum': [True, 'True', 'TRUE', 'true', '1', 'ON', 'On', 'on',
                     'YES', 'Yes', 'yes', False, 'False', 'FALSE', 'false',
                     '0', 'OFF', 'Off', 'off', 'NO', 'No', 'no']}


def _legacy_schema(version):
    properties = {'host': _FQDN, 'binary': _TEXT, 'disabled_reason': _TEXT}
    if version >= FORCED_DOWN:
        properties['forced_down'] = _BOOLEAN
    return {'type': 'object', 'properties': properties,
            'required': ['host', 'binary'], 'additionalProperties': False}


UPDATE_V253 = {'type': 'object',
               'properties': {'status': {'type': 'string',
                                         'enum': ['enabled', 'disabled']},
                              'disabled_reason': _TEXT,
                              'forced_down': _BOOLEAN},
               'additionalProperties': False}


def service_uuid(binary, host):
    return str(uuidlib.uuid5(_NAMESPACE, '%s/%s' % (binary, host)))


def _statedb():
    return request.services().client.statedb


def _down_after():
    return datetime.timedelta(
        seconds=request.services().conf.conductor.service_down_time)


def _compute(host, now, zone):
    beat = host['last_heartbeat']
    up = (beat is not None and now - beat <= _down_after()
          and not host['forced_down'])
    return {'binary': COMPUTE, 'host': host['name'], 'id': host['number'],
            'uuid': service_uuid(COMPUTE, host['name']), 'zone': zone,
            'status': 'enabled' if host['enabled'] else 'disabled',
            'state': 'up' if up else 'down',
            'updated_at': views.isotime(beat),
            'disabled_reason': host['disabled_reason'],
            'forced_down': bool(host['forced_down'])}


def _conductor(row, now, zone):
    seen = row['last_seen']
    return {'binary': CONDUCTOR, 'host': row['host'],
            'id': CONDUCTOR_IDS + row['id'],
            'uuid': service_uuid(CONDUCTOR, row['host']), 'zone': zone,
            'status': 'enabled',
            'state': 'up' if now - seen <= _down_after() else 'down',
            'updated_at': views.isotime(seen), 'disabled_reason': None,
            'forced_down': False}


def all_services():
    """Every service, as plain records (both ids, every field)."""
    db, conf = _statedb(), request.services().conf
    now, zones = db.clock(), db.host_zones()
    found = [_compute(h, now, zones.get(h['name'],
                                        conf.default_availability_zone))
             for h in db.list_hosts()]
    found += [_conductor(s, now, conf.internal_service_availability_zone)
              for s in db.list_services()
              if s['binary'] == services_db.CONDUCTOR]
    return found


def shown(record, version):
    """A service's body at ``version``."""
    body = {k: record[k] for k in ('binary', 'host', 'zone', 'status',
                                   'state', 'updated_at', 'disabled_reason')}
    body['id'] = record['uuid' if version >= SERVICE_UUIDS else 'id']
    if version >= FORCED_DOWN:
        body['forced_down'] = record['forced_down']
    return body


@bp.get('/os-services')
def index():
    request.authorize('tristate:services')
    args, version = flask.request.args, request.version()
    unknown = sorted(k for k in args if k not in ('host', 'binary'))
    if unknown and version >= STRICT_QUERY:
        raise exception.Invalid(
            'Invalid input for query parameters %s. Additional properties '
            'are not allowed (%s unexpected)' % (unknown[0], ', '.join(
                repr(k) for k in unknown)))
    found = all_services()
    for name in ('host', 'binary'):
        if args.get(name):
            found = [s for s in found if s[name] == args[name]]
    return {'services': [shown(s, version) for s in found]}


def _only_computes(binary):
    if binary != COMPUTE:
        raise exception.Invalid(
            'Updating a %s service is not supported. Only nova-compute '
            'services can be updated.' % binary)


def _set(host, *, enabled=None, reason=None, forced_down=None):
    db = _statedb()
    try:
        if enabled is not None:
            db.set_host_enabled(host, enabled, reason)
        if forced_down is not None:
            db.set_host_forced_down(host, forced_down)
    except exception.HostNotFound:
        raise exception.NotFound('Could not find binary %s on host %s.'
                                 % (COMPUTE, host)) from None


_LEGACY_ACTIONS = ('enable', 'disable', 'disable-log-reason', 'force-down')


def _legacy_update(action, version, body):
    actions = _LEGACY_ACTIONS if version >= FORCED_DOWN else (
        _LEGACY_ACTIONS[:3])
    if action not in actions:
        raise exception.NotFound('Unknown action')
    host, binary = body['host'], body['binary']
    answer = {'host': host, 'binary': binary}
    if action == 'force-down':
        if 'forced_down' not in body:
            raise exception.Invalid('Missing forced_down field')
        forced_down = strutils.bool_from_string(body['forced_down'])
        _only_computes(binary)
        _set(host, forced_down=forced_down)
        answer['forced_down'] = forced_down
        return {'service': answer}
    reason = None
    if action == 'disable-log-reason':
        if 'disabled_reason' not in body:
            raise exception.Invalid('Missing disabled reason field')
        reason = body['disabled_reason']
    _only_computes(binary)
    _set(host, enabled=action == 'enable', reason=reason)
    answer['status'] = 'enabled' if action == 'enable' else 'disabled'
    if reason:
        answer['disabled_reason'] = reason
    return {'service': answer}


def _find(service_id, version):
    """The service of ``service_id`` (an int before 2.53, a uuid from)."""
    if version >= SERVICE_UUIDS:
        if not uuidutils.is_uuid_like(service_id):
            raise exception.Invalid('Invalid uuid %s' % service_id)
        key = 'uuid'
    else:
        try:
            service_id = int(service_id)
        except ValueError:
            raise exception.Invalid('Invalid ID %s' % service_id) from None
        key = 'id'
    for record in all_services():
        if record[key] == service_id:
            return record
    raise exception.NotFound('Service %s could not be found.' % service_id)


def _update_v253(service_id, version, body):
    record = _find(service_id, version)
    _only_computes(record['binary'])
    change = {}
    if 'status' in body:
        if body['status'] == 'enabled' and body.get('disabled_reason'):
            raise exception.Invalid("Specifying 'disabled_reason' with "
                                    "status 'enabled' is invalid.")
        change['enabled'] = body['status'] == 'enabled'
        change['reason'] = body.get('disabled_reason')
    if 'forced_down' in body:
        change['forced_down'] = strutils.bool_from_string(
            body['forced_down'], strict=True)
    if not change:
        raise exception.Invalid("No updates were requested. Fields 'status' "
                                "or 'forced_down' should be specified.")
    _set(record['host'], **change)
    return {'service': shown(_find(service_id, version), version)}


@bp.put('/os-services/<service_id>')
def update(service_id):
    version = request.version()
    new = version >= SERVICE_UUIDS
    # the body is checked first, as Nova does
    body = request.json_body(UPDATE_V253 if new else _legacy_schema(version))
    request.authorize('tristate:services')
    if new:
        return _update_v253(service_id, version, body)
    return _legacy_update(service_id, version, body)


@bp.delete('/os-services/<service_id>')
def delete(service_id):
    request.authorize('tristate:services')
    record = _find(service_id, request.version())
    db = _statedb()
    if record['binary'] == COMPUTE:
        db.delete_host(record['host'])
    else:
        db.delete_service(services_db.CONDUCTOR, record['host'])
    return request.no_content()


# --- the usage audit log ------------------------------------------------------------

def _audit_period(before):
    """Nova's last completed monthly audit period before ``before``."""
    end = before.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    start = (end - datetime.timedelta(days=1)).replace(day=1)
    return start, end


def _audit_log(before):
    """No host runs Nova's usage audit (billing is the usage intervals of
    os-simple-tenant-usage): every compute host is reported not run."""
    start, end = _audit_period(before)
    hosts = sorted({s['host'] for s in all_services()
                    if s['binary'] == COMPUTE})
    done = 'ALL' if not hosts else '0 of %d' % len(hosts)
    return {'period_beginning': str(start), 'period_ending': str(end),
            'num_hosts': len(hosts), 'num_hosts_done': 0,
            'num_hosts_running': 0, 'num_hosts_not_run': len(hosts),
            'hosts_not_run': hosts, 'total_instances': 0,
            'total_errors': 0,
            'overall_status': '%s hosts done. 0 errors.' % done, 'log': {}}


@bp.get('/os-instance_usage_audit_log')
def audit_logs():
    request.authorize('tristate:services')
    return {'instance_usage_audit_logs': _audit_log(_statedb().clock())}


@bp.get('/os-instance_usage_audit_log/<before>')
def audit_log(before):
    request.authorize('tristate:services')
    fmt = '%Y-%m-%d %H:%M:%S.%f' if '.' in before else '%Y-%m-%d %H:%M:%S'
    try:
        when = datetime.datetime.strptime(before, fmt)
    except ValueError:
        raise exception.Invalid('Invalid timestamp for date %s'
                                % before) from None
    return {'instance_usage_audit_log': _audit_log(when)}

"""``/os-quota-sets`` and ``/os-simple-tenant-usage``, with Nova's bodies.

    GET /v2.1/os-quota-sets/{project_id}            {"quota_set": {...}}
    GET /v2.1/os-quota-sets/{project_id}/detail     in_use/limit/reserved
    GET /v2.1/os-quota-sets/{project_id}/defaults   the [quota] defaults
    PUT /v2.1/os-quota-sets/{project_id}            {"quota_set": {...}} (admin)
    GET /v2.1/os-simple-tenant-usage?start=&end=&detailed=1   (admin)
    GET /v2.1/os-simple-tenant-usage/{project_id}?start=&end=

Quota sets have Nova's ``instances``, ``cores`` and ``ram`` (MiB), Nova's
other keys of the request's microversion as -1 (Tristate does not limit
them), and from Tristate's microversion (2.101) Tristate's ``disk`` (GiB)
and the leases' ``lease_hosts`` (hosts a project's leases hold at once) and
``lease_hours`` (how long one lease may last); -1 means unlimited. Times
are UTC, as Nova takes them (``2026-11-22T10:00:00``, optionally with microseconds); a
missing one means now.
"""

import datetime

import flask
from oslo_utils import strutils

from api import microversion
from api import request
from api import schemas
from api import views
from common import exception
from common.db import quotas

bp = flask.Blueprint('accounting', __name__, url_prefix='/v2.1')

LIMIT = {'type': ['integer', 'string'], 'pattern': '^-?[0-9]+$',
         'minimum': -1, 'maximum': 2 ** 31 - 1,
         'maxLength': schemas.INT_TEXT}
UPDATE_QUOTA_SET = {
    'type': 'object',
    'properties': {'quota_set': {
        'type': 'object',
        'properties': dict({r: LIMIT for r in quotas.LIMITS},
                           force={'type': ['boolean', 'string']}),
        'additionalProperties': False}},
    'required': ['quota_set'],
    'additionalProperties': False,
}
TIME_FORMATS = ('%Y-%m-%dT%H:%M:%S', '%Y-%m-%dT%H:%M:%S.%f',
                '%Y-%m-%d %H:%M:%S.%f', '%Y-%m-%d %H:%M:%S')


# --- quota sets ------------------------------------------------------------------

def _quotas(project_id, rule):
    request.authorize('tristate:quotas:%s' % rule,
                      {'project_id': project_id})
    return request.services().client.get_quotas(request.context(), project_id)


@bp.get('/os-quota-sets/<project_id>')
def show(project_id):
    found = _quotas(project_id, 'show')
    return {'quota_set': views.quota_set(found['limits'], request.version(),
                                         project_id=project_id)}


@bp.get('/os-quota-sets/<project_id>/detail')
def detail(project_id):
    found = _quotas(project_id, 'show')
    return {'quota_set': views.quota_set(
        found['limits'], request.version(), project_id=project_id,
        in_use=found['usage'])}


@bp.get('/os-quota-sets/<project_id>/defaults')
def defaults(project_id):
    found = _quotas(project_id, 'defaults')
    return {'quota_set': views.quota_set(found['defaults'], request.version(),
                                         project_id=project_id)}


@bp.put('/os-quota-sets/<project_id>')
def update(project_id):
    body = request.json_body(UPDATE_QUOTA_SET)['quota_set']
    _own_resources_need_own_version(body)
    request.authorize('tristate:quotas:update', {'project_id': project_id})
    values = {r: int(v) for r, v in body.items() if r in quotas.LIMITS}
    found = request.services().client.update_quotas(
        request.context(), project_id, values)
    return {'quota_set': views.quota_set(found['limits'], request.version())}


def _own_resources_need_own_version(body):
    """Tristate's own resources (``disk``, the leases') are keys of its own
    microversion: below it a quota set has Nova's keys only."""
    if request.version() >= microversion.TRISTATE:
        return
    own = sorted(r for r in body if r in quotas.LIMITS
                 and r not in views.NOVA_QUOTAS)
    if own:
        raise exception.Invalid(
            "Invalid input for field/attribute quota_set. Additional "
            "properties are not allowed (%s unexpected): Tristate's own "
            "resources are set from microversion %s"
            % (', '.join(repr(r) for r in own), microversion.TRISTATE))


# --- usage ---------------------------------------------------------------------------

def _time(name):
    value = flask.request.args.get(name)
    if not value:
        return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    for fmt in TIME_FORMATS:
        try:
            return datetime.datetime.strptime(value, fmt)
        except ValueError:
            continue
    raise exception.Invalid(
        'Invalid input for query parameter %s. Value: %r. It must be a UTC '
        'time as YYYY-MM-DDTHH:MM:SS[.ffffff]' % (name, value))


def _usages(project_id):
    start, end = _time('start'), _time('end')
    if start > end:
        raise exception.Invalid('Invalid start time. The start time %s '
                                'cannot occur after the end time %s.'
                                % (start.isoformat(), end.isoformat()))
    return request.services().client.tenant_usage(
        request.context(), start=start.isoformat(), end=end.isoformat(),
        project_id=project_id)


@bp.get('/os-simple-tenant-usage')
def usage_index():
    request.authorize('tristate:usage:index')
    detailed = strutils.bool_from_string(
        flask.request.args.get('detailed', '0'))
    found = _usages(None)
    bodies = []
    for project in sorted(found):
        body = found[project]
        if not detailed:
            body.pop('server_usages')
        bodies.append(body)
    return {'tenant_usages': bodies}


@bp.get('/os-simple-tenant-usage/<project_id>')
def usage_show(project_id):
    request.authorize('tristate:usage:show', {'project_id': project_id})
    return {'tenant_usage': _usages(project_id).get(project_id, {})}

"""``/os-quota-sets`` and ``/os-simple-tenant-usage``, with Nova's bodies.

    GET /v2.1/os-quota-sets/{project_id}            {"quota_set": {...}}
    GET /v2.1/os-quota-sets/{project_id}/detail     in_use/limit/reserved
    GET /v2.1/os-quota-sets/{project_id}/defaults   the [quota] defaults
    PUT /v2.1/os-quota-sets/{project_id}            {"quota_set": {...}} (admin)
    DELETE /v2.1/os-quota-sets/{project_id}         back to the defaults (admin)
    GET /v2.1/os-simple-tenant-usage?start=&end=&detailed=1   (admin)
    GET /v2.1/os-simple-tenant-usage/{project_id}?start=&end=

Quota sets have Nova's ``instances``, ``cores`` and ``ram`` (MiB), Nova's
other keys of the request's microversion (``metadata_items``, enforced per
server, and ``key_pairs``, per user; the others limit what Tristate does
not have, and are stored and shown as an admin sets them: see
common/db/quota_classes.py), and from Tristate's microversion
(2.101) Tristate's ``disk`` (GiB) and the leases' ``lease_hosts`` (hosts a
project's leases hold at once) and ``lease_hours`` (how long one lease may
last); -1 means unlimited. Times are UTC, as Nova takes them
(``2026-11-22T10:00:00``, optionally with microseconds); a missing one
means now.
"""

import datetime
from urllib import parse as urlparse

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


def _update_schema(version):
    """Nova's PUT body at ``version`` (its legacy keys until 2.36/2.57),
    with Tristate's own resources (refused below 2.101 by the route)."""
    keys = quotas.LIMITS + views.quota_keys(version)
    return {
        'type': 'object',
        'properties': {'quota_set': {
            'type': 'object',
            'properties': dict(dict.fromkeys(keys, LIMIT),
                               force=schemas.BOOLEAN),
            'additionalProperties': False}},
        'required': ['quota_set'],
        'additionalProperties': False,
    }

# Nova pages usage over instances from 2.40 (marker, limit, *_links).
PAGED = microversion.APIVersion(2, 40)
PAGE_LIMIT = {'type': 'string', 'pattern': '^[0-9]+$', 'maxLength': 9}
TIME_FORMATS = ('%Y-%m-%dT%H:%M:%S', '%Y-%m-%dT%H:%M:%S.%f',
                '%Y-%m-%d %H:%M:%S.%f', '%Y-%m-%d %H:%M:%S')


# --- quota sets ------------------------------------------------------------------

def _quotas(project_id, rule):
    request.authorize('tristate:quotas:%s' % rule,
                      {'project_id': project_id})
    found = request.services().client.get_quotas(request.context(),
                                                 project_id)
    # the project's server groups (Nova's in_use); members are per group
    found['usage'] = dict(found['usage'], **request.services().client.statedb
                          .server_groups_in_use(project_id))
    return found


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
    body = request.json_body(_update_schema(request.version()))['quota_set']
    _own_resources_need_own_version(body)
    request.authorize('tristate:quotas:update', {'project_id': project_id})
    values = {r: int(v) for r, v in body.items() if r != 'force'}
    if not strutils.bool_from_string(body.get('force', False)):
        _not_below_usage(project_id, values)
    found = request.services().client.update_quotas(
        request.context(), project_id, values)
    return {'quota_set': views.quota_set(found['limits'], request.version())}


@bp.delete('/os-quota-sets/<project_id>')
def delete(project_id):
    """Nova's: the project's limits go back to the defaults; 202."""
    request.authorize('tristate:quotas:update', {'project_id': project_id})
    request.services().client.statedb.delete_quotas(project_id)
    return request.no_content(202)


def _not_below_usage(project_id, values):
    """Nova's check unless ``force``: a limit is not set below what the
    project uses now."""
    used = _quotas(project_id, 'update')['usage']
    for resource, limit in sorted(values.items()):
        minimum = used.get(resource, 0)
        if limit != -1 and limit < minimum:
            raise exception.Invalid(
                'Quota limit %d for %s must be greater than or equal to '
                'already used and reserved %d.' % (limit, resource, minimum))


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
    """{project: usage}, and the links to the next page (Nova's paging
    over instances from 2.40: ``marker`` and ``limit``)."""
    start, end = _time('start'), _time('end')
    if start > end:
        raise exception.Invalid('Invalid start time. The start time %s '
                                'cannot occur after the end time %s.'
                                % (start.isoformat(), end.isoformat()))
    client, ctx = request.services().client, request.context()
    if request.version() < PAGED:
        return client.tenant_usage(ctx, start=start.isoformat(),
                                   end=end.isoformat(),
                                   project_id=project_id), []
    marker, limit = _paging()
    found = client.tenant_usage_page(
        ctx, start=start.isoformat(), end=end.isoformat(),
        project_id=project_id, marker=marker, limit=limit)
    links = []
    last = found.get('last')
    if found['more'] and last:
        links.append({'rel': 'next', 'href': _next_link(project_id, last,
                                                        limit)})
    return found['usages'], links


def _paging():
    args = flask.request.args
    max_limit = request.services().conf.api.max_limit
    limit = args.get('limit')
    if limit is not None:
        schemas.validate(PAGE_LIMIT, limit)
        limit = int(limit)
    return args.get('marker') or None, min(limit or max_limit, max_limit)


def _next_link(project_id, marker, limit):
    query = [(k, v) for k, v in flask.request.args.items(multi=True)
             if k not in ('marker', 'limit')]
    query += [('limit', str(limit)), ('marker', marker)]
    path = ['os-simple-tenant-usage'] + ([project_id] if project_id else [])
    return '%s?%s' % (request.links().href(*path),
                      urlparse.urlencode(sorted(query)))


@bp.get('/os-simple-tenant-usage')
def usage_index():
    if flask.request.path.endswith('/'):
        # one project's usage with an empty id: Nova's 404, not the list
        raise exception.NotFound('The resource could not be found.')
    request.authorize('tristate:usage:index')
    detailed = strutils.bool_from_string(
        flask.request.args.get('detailed', '0'))
    found, links = _usages(None)
    bodies = []
    # From 2.40 in the page's order (the last project holds the page's
    # last instance: the marker clients take); before, by project.
    for project in (found if links or request.version() >= PAGED
                    else sorted(found)):
        body = found[project]
        if not detailed:
            body.pop('server_usages')
        bodies.append(body)
    out = {'tenant_usages': bodies}
    if links:
        out['tenant_usages_links'] = links
    return out


@bp.get('/os-simple-tenant-usage/<project_id>')
def usage_show(project_id):
    request.authorize('tristate:usage:show', {'project_id': project_id})
    found, links = _usages(project_id)
    out = {'tenant_usage': found.get(project_id, {})}
    if links:
        out['tenant_usage_links'] = links
    return out

"""``/v2.1/os-migrations`` and ``/v2.1/servers/{id}/migrations``: Nova's
migration lists (admin only), from the migrations record
(:mod:`common.db.moves`: one row per resize or live migration, its status
read from the action log).

    GET /os-migrations[?host=&status=&instance_uuid=&migration_type=
                       &source_compute=]   (2.59: limit, marker,
                       changes-since; 2.66: changes-before; 2.80: user_id,
                       project_id)
    GET /servers/{id}/migrations          (2.23) its live migrations in progress
    GET /servers/{id}/migrations/{mid}    (2.23)

As Nova shows a migration: ``migration_type`` and, for a live migration
in progress, ``links`` from 2.23; ``uuid`` and paging (newest first) from
2.59; ``user_id`` and ``project_id`` from 2.80. A host is its own node
(``source_node`` = ``source_compute``); ``dest_host`` (Nova: the
destination's IP address) is null, as Nova's schema allows: Tristate does
not record hosts' addresses. The progress counters of a live migration
(``memory_*_bytes``, ``disk_*_bytes``) are null: the libvirt driver reports
a percentage only (the server's progress). Forcing or aborting a live
migration is refused as not supported.
"""


import flask
from oslo_utils import timeutils

from api import microversion
from api import request
from common import exception

bp = flask.Blueprint('migrations', __name__, url_prefix='/v2.1')
RULE = 'tristate:migrations:index'
V = microversion.APIVersion
TYPES = V(2, 23)
PAGING = V(2, 59)
CHANGES_BEFORE = V(2, 66)
USERS = V(2, 80)
_FILTERS = ('hidden', 'host', 'instance_uuid', 'source_compute', 'status',
            'migration_type')
_IN_PROGRESS = ('queued', 'preparing', 'running', 'post-migrating')
_LIVE = 'live-migration'


def _stamp(value):
    return None if value is None else value.strftime('%Y-%m-%dT%H:%M:%S.%f')


def _allowed(version):
    allowed = list(_FILTERS)
    if version >= PAGING:
        allowed += ['limit', 'marker', 'changes-since']
    if version >= CHANGES_BEFORE:
        allowed.append('changes-before')
    if version >= USERS:
        allowed += ['user_id', 'project_id']
    return allowed


def _args(version):
    """The query's parameters Nova reads at ``version``: from 2.59 any
    other is a 400, and each of the paging ones is given once."""
    args, allowed = flask.request.args, _allowed(version)
    if version >= PAGING:
        unknown = sorted(k for k in args if k not in allowed)
        if unknown:
            raise exception.Invalid(
                'Invalid input for query parameters %s. Additional '
                'properties are not allowed (%s unexpected)' % (
                    unknown[0], ', '.join(repr(k) for k in unknown)))
    return {k: args.getlist(k)[-1] for k in args if k in allowed}


def _when(args, key):
    if key not in args:
        return None
    try:
        return timeutils.normalize_time(timeutils.parse_isotime(args[key]))
    except ValueError:
        raise exception.Invalid(
            "Invalid input for query parameters %s. Value: %s. '%s' is not "
            "a 'date-time'" % (key, args[key], args[key])) from None


def _limit(args):
    if 'limit' not in args:
        return None
    try:
        limit = int(args['limit'])
    except ValueError:
        limit = -1
    if limit < 0:
        raise exception.Invalid(
            "Invalid input for query parameters limit. Value: %s. '%s' is "
            "not a 'non-negative integer'" % (args['limit'], args['limit']))
    return limit


def _matches(row, args):
    if args.get('host') and args['host'] not in (row['source_host'],
                                                 row['dest_host']):
        return False
    for key, column in (('status', 'status'),
                        ('instance_uuid', 'instance_uuid'),
                        ('migration_type', 'migration_type'),
                        ('source_compute', 'source_host'),
                        ('user_id', 'user_id'),
                        ('project_id', 'project_id')):
        if args.get(key) and row[column] != args[key]:
            return False
    return True


def _changed(rows, args):
    since, before = _when(args, 'changes-since'), _when(args,
                                                         'changes-before')
    if since and before and before < since:
        raise exception.Invalid('The value of changes-since must be less '
                                'than or equal to changes-before.')
    def changed(row):
        at = row['updated_at'] or row['created_at']
        return (since is None or at >= since) and (
            before is None or at <= before)
    return [r for r in rows if changed(r)]


def _page(rows, args):
    marker = args.get('marker')
    if marker is not None:
        index = next((i for i, r in enumerate(rows) if r['uuid'] == marker),
                     None)
        if index is None:
            raise exception.Invalid('Marker %s could not be found.' % marker)
        rows = rows[index + 1:]
    limit = _limit(args)
    return rows if limit is None else rows[:limit], limit


def _links(server_uuid, ident):
    return request.links().links('servers/%s/migrations' % server_uuid,
                                 ident)


def shown(row, version):
    body = {'id': row['id'], 'status': row['status'],
            'instance_uuid': row['instance_uuid'],
            'source_node': row['source_host'],
            'source_compute': row['source_host'],
            'dest_node': row['dest_host'], 'dest_compute': row['dest_host'],
            'dest_host': None,
            'old_instance_type_id': row['old_flavor_id'],
            'new_instance_type_id': row['new_flavor_id'],
            'created_at': _stamp(row['created_at']),
            'updated_at': _stamp(row['updated_at'])}
    if version >= TYPES:
        body['migration_type'] = row['migration_type']
        if (row['migration_type'] == _LIVE
                and row['status'] in _IN_PROGRESS):
            body['links'] = _links(row['instance_uuid'], row['id'])
    return _versioned(body, row, version)


def _versioned(body, row, version):
    """``body`` with the keys of later microversions: ``uuid`` (2.59),
    ``user_id``/``project_id`` (2.80)."""
    if version >= PAGING:
        body['uuid'] = row['uuid']
    if version >= USERS:
        body['user_id'] = row['user_id']
        body['project_id'] = row['project_id']
    return body


@bp.get('/os-migrations')
def index():
    request.authorize(RULE)
    version = request.version()
    args = _args(version)
    rows = request.services().client.statedb.list_migrations()
    rows = _changed([r for r in rows if _matches(r, args)], args)
    limit = None
    if version >= PAGING:
        rows, limit = _page(rows, args)
    answer = {'migrations': [shown(r, version) for r in rows]}
    if limit and len(rows) == limit:
        answer['migrations_links'] = [{'rel': 'next', 'href': '%s?%s' % (
            request.links().href('os-migrations'), 'limit=%d&marker=%s' % (
                limit, rows[-1]['uuid']))}]
    return answer


# --- one server's live migrations --------------------------------------------------

def _server_rows(server_id):
    if request.version() < TYPES:
        raise exception.NotFound('The resource could not be found.')
    inst = request.get_server(server_id)
    request.authorize(RULE, {'project_id': inst['project_id']})
    return [r for r in request.services().client.statedb.list_migrations(
        instance_uuid=inst['uuid']) if r['migration_type'] == _LIVE
        and r['status'] in _IN_PROGRESS]


def _in_progress(row, version):
    body = {'id': row['id'], 'server_uuid': row['instance_uuid'],
            'status': row['status'],
            'source_compute': row['source_host'],
            'source_node': row['source_host'],
            'dest_compute': row['dest_host'], 'dest_node': row['dest_host'],
            'dest_host': None,
            'created_at': _stamp(row['created_at']),
            'updated_at': _stamp(row['updated_at'])}
    for key in ('memory_total_bytes', 'memory_processed_bytes',
                'memory_remaining_bytes', 'disk_total_bytes',
                'disk_processed_bytes', 'disk_remaining_bytes'):
        body[key] = None
    return _versioned(body, row, version)


@bp.get('/servers/<server_id>/migrations')
def server_index(server_id):
    version = request.version()
    return {'migrations': [_in_progress(r, version)
                           for r in _server_rows(server_id)]}


@bp.get('/servers/<server_id>/migrations/<migration_id>')
def server_show(server_id, migration_id):
    version = request.version()
    for row in _server_rows(server_id):
        if str(row['id']) == migration_id:
            return {'migration': _in_progress(row, version)}
    raise exception.NotFound('In-progress live migration %s is not found for '
                             'server %s.' % (migration_id, server_id))


@bp.delete('/servers/<server_id>/migrations/<migration_id>')
def server_abort(server_id, migration_id):
    _server_rows(server_id)
    raise exception.Invalid('Aborting a live migration is not supported by '
                            'Tristate (it ends by its own timeout).')


# Nova's body of a force-complete: {"force_complete": null}
_FORCE_COMPLETE = {'type': 'object',
                   'properties': {'force_complete': {'type': 'null'}},
                   'required': ['force_complete'],
                   'additionalProperties': False}


@bp.post('/servers/<server_id>/migrations/<migration_id>/action')
def server_force_complete(server_id, migration_id):
    request.json_body(_FORCE_COMPLETE)
    _server_rows(server_id)
    raise exception.Invalid('Forcing a live migration to complete is not '
                            'supported by Tristate.')



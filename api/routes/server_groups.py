"""``/os-server-groups``, as Nova answers it at every microversion (issue 25).

    GET    /v2.1/os-server-groups[?all_projects=&limit=&offset=]
    POST   /v2.1/os-server-groups       {"server_group": {"name", ...}}
    GET    /v2.1/os-server-groups/{id}
    DELETE /v2.1/os-server-groups/{id}

Before 2.64 a group is created with ``policies`` (one of ``affinity``,
``anti-affinity``; from 2.15 also ``soft-affinity``,
``soft-anti-affinity``) and shown with ``policies`` and an empty
``metadata``; from 2.64 with ``policy`` and ``rules`` (only an
anti-affinity group takes one: ``max_server_per_host``). From 2.13 a group
shows its ``project_id`` and ``user_id``; from 2.75 an unknown query
parameter of the list is a 400. A project holds at most ``server_groups``
groups (Nova's 403). An admin lists every project's with ``all_projects``.
Members join with ``POST /servers`` and the ``group`` scheduler hint
(:func:`group_hint`); where they are placed is the scheduler's
(:mod:`common.db.server_groups`).
"""

import copy

import flask

from api import microversion
from api import request
from api import schemas
from common import exception
from common.db import quotas
from common.db import server_groups as groups_db

bp = flask.Blueprint('server_groups', __name__,
                     url_prefix='/v2.1/os-server-groups')

V = microversion.APIVersion
OWNERS = V(2, 13)
SOFT = V(2, 15)
POLICY = V(2, 64)
STRICT_QUERY = V(2, 75)
RULE = 'tristate:os-server-groups:%s'

_HARD_ONLY = [groups_db.ANTI_AFFINITY, groups_db.AFFINITY]
_POLICIES = {'type': 'array', 'minItems': 1, 'maxItems': 1,
             'uniqueItems': True,
             'items': {'type': 'string', 'enum': _HARD_ONLY}}
CREATE = schemas._object(['server_group'], server_group=schemas._object(
    ['name', 'policies'], name=schemas.NAME, policies=_POLICIES))
CREATE_215 = copy.deepcopy(CREATE)
CREATE_215['properties']['server_group']['properties']['policies'][
    'items']['enum'] = list(groups_db.POLICIES)
# Nova's positive integer: a number of at least 1, or its digits.
_POSITIVE = {'type': ['integer', 'string'], 'pattern': '^[0-9]+$',
             'minimum': 1, 'minLength': 1, 'maxLength': 9}
CREATE_264 = schemas._object(['server_group'], server_group=schemas._object(
    ['name', 'policy'], name=schemas.NAME,
    policy={'type': 'string', 'enum': list(groups_db.POLICIES)},
    rules=schemas._object(max_server_per_host=_POSITIVE)))
_COUNT = {'type': 'string', 'pattern': '^[0-9]+$', 'maxLength': 9}
_QUERY = ('all_projects', 'limit', 'offset')


def _statedb():
    return request.services().client.statedb


def shown(group):
    """A group's body at this request's microversion."""
    version = request.version()
    body = {'id': group['uuid'], 'name': group['name'],
            'members': list(group['members'])}
    if version >= POLICY:
        body['policy'] = group['policy']
        body['rules'] = ({'max_server_per_host': group['max_server_per_host']}
                         if group['max_server_per_host'] else {})
    else:
        body['policies'] = [group['policy']]
        body['metadata'] = {}
    if version >= OWNERS:
        body['project_id'] = group['project_id']
        body['user_id'] = group['user_id']
    return body


def _create_schema(version):
    if version >= POLICY:
        return CREATE_264
    return CREATE_215 if version >= SOFT else CREATE


def _settings():
    """The [quota] options the group quotas are checked with."""
    return quotas.Settings.from_conf(request.services().conf)


@bp.post('', strict_slashes=False)
def create():
    version = request.version()
    body = request.json_body(_create_schema(version))['server_group']
    ctx = request.context()
    request.authorize(RULE % 'create', {'project_id': ctx.project_id})
    if version >= POLICY:
        policy, rules = body['policy'], body.get('rules', {})
        if rules and policy != groups_db.ANTI_AFFINITY:
            raise exception.Invalid('Only anti-affinity policy supports '
                                    'rules.')
    else:
        policy, rules = body['policies'][0], {}
    most = rules.get('max_server_per_host')
    found = _statedb().create_server_group(
        name=body['name'], policy=policy, project_id=ctx.project_id or '',
        user_id=ctx.user_id or '',
        max_server_per_host=None if most is None else int(most),
        settings=_settings())
    return {'server_group': shown(found)}


def _query():
    """(all_projects asked, limit, offset) of the list's query."""
    args = flask.request.args
    unknown = sorted(set(args) - set(_QUERY))
    if unknown and request.version() >= STRICT_QUERY:
        raise exception.Invalid(
            'Invalid input for query parameters %s. Additional properties '
            'are not allowed (%s unexpected)' % (unknown[0], ', '.join(
                repr(k) for k in unknown)))
    numbers = {}
    for key in ('limit', 'offset'):
        if key in args:
            value = args.getlist(key)[-1]
            try:
                schemas.validate(_COUNT, value)
            except exception.Invalid:
                raise exception.Invalid(
                    'Invalid input for query parameters %s. Value: %s. '
                    'expected a non-negative integer' % (key, value)
                ) from None
            numbers[key] = int(value)
    return 'all_projects' in args, numbers.get('limit'), numbers.get(
        'offset', 0)


@bp.get('', strict_slashes=False)
def index():
    ctx = request.context()
    every, limit, offset = _query()
    request.authorize(RULE % 'index', {'project_id': ctx.project_id})
    project = ctx.project_id or ''
    if every and ctx.is_admin:
        request.authorize(RULE % 'index:all_projects',
                          {'project_id': ctx.project_id})
        project = None
    rows = _statedb().list_server_groups(project_id=project)
    max_limit = request.services().conf.api.max_limit
    limit = max_limit if limit is None else min(limit, max_limit)
    return {'server_groups': [shown(g)
                              for g in rows[offset:offset + limit]]}


def _visible(group_id, rule):
    found = _statedb().get_server_group(group_id)
    if not request.allows(rule, {'project_id': found['project_id']}):
        # another project's group is not found, as Nova answers it
        raise groups_db.GroupNotFound(group=group_id)
    return found


@bp.get('/<group_id>')
def show(group_id):
    return {'server_group': shown(_visible(group_id, RULE % 'show'))}


@bp.delete('/<group_id>')
def delete(group_id):
    _visible(group_id, RULE % 'delete')
    _statedb().delete_server_group(group_id)
    return request.no_content(204)


def group_hint(whole):
    """The server group a validated POST /servers body asks to join
    (``group`` scheduler hint), checked to be one the caller sees; None
    without the hint. A group that does not exist is a 400, as Nova."""
    hints = (whole.get('os:scheduler_hints')
             or whole.get('OS-SCH-HNT:scheduler_hints') or {})
    group_id = hints.get('group')
    if group_id is None:
        return None
    try:
        return _visible(group_id, RULE % 'show')['uuid']
    except groups_db.GroupNotFound:
        raise exception.Invalid(
            'Invalid input for field/attribute os:scheduler_hints.group. '
            'Value: %s. Group %s not found' % (group_id, group_id)) from None

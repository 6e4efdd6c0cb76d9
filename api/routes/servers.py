"""``/servers``: list (with Nova's filters), show, create, rename (``PUT``),
delete."""

import datetime
from urllib import parse as urlparse

import flask
from oslo_utils import strutils
from oslo_utils import timeutils

from api import actions
from api import diskhost
from api import guest
from api import microversion
from api import multicreate
from api.routes import networks as networks_api
from api import patterns
from api import request
from api import schemas
from api import server_filters
from api import status
from api import views
from api.routes import availability_zones
from api.routes import server_groups
from common import actions as table
from common import exception
from common import flavors
from common import secgroups
from common import states
from common.states import vm

bp = flask.Blueprint('servers', __name__, url_prefix='/v2.1/servers')

_ERRORED = (vm.ERROR, vm.PENDING)


# --- listing -------------------------------------------------------------------

def _all_tenants(query):
    if 'all_tenants' not in query:
        return False
    value = query['all_tenants'][-1]
    return strutils.bool_from_string(value, default=True) if value else True


V = microversion.APIVersion
# Nova's query parameters of GET /servers[/detail] (its schema, every
# microversion); from 2.75 any other is a 400, below it is ignored.
_NOVA_PARAMS = frozenset((
    'user_id', 'project_id', 'tenant_id', 'launch_index', 'image_ref',
    'image', 'kernel_id', 'ramdisk_id', 'hostname', 'key_name',
    'power_state', 'vm_state', 'task_state', 'host', 'node', 'flavor',
    'reservation_id', 'launched_at', 'terminated_at', 'availability_zone',
    'name', 'ip', 'ip6', 'created_at', 'locked_by', 'uuid',
    'root_device_name', 'config_drive', 'access_ip_v4', 'access_ip_v6',
    'auto_disk_config', 'progress', 'sort_key', 'sort_dir', 'all_tenants',
    'soft_deleted', 'deleted', 'status', 'changes-since', 'changes-before',
    'limit', 'marker', 'tags', 'tags-any', 'not-tags', 'not-tags-any',
    'locked'))
_STRICT_QUERY = V(2, 75)
_PAGING = ('limit', 'marker', 'sort_key', 'sort_dir')
# What a caller without allow_all_filters may filter by, from the
# microversion Nova allows each; Nova drops the others from such a query.
_FOR_EVERYONE = (
    (V(2, 1), ('reservation_id', 'name', 'status', 'image', 'flavor', 'ip',
               'changes-since', 'all_tenants')),
    (V(2, 5), ('ip6',)),
    (V(2, 26), ('tags', 'tags-any', 'not-tags', 'not-tags-any')),
    (V(2, 66), ('changes-before',)),
    (V(2, 73), ('locked',)),
    (V(2, 83), ('availability_zone', 'config_drive', 'key_name',
                'created_at', 'launched_at', 'terminated_at', 'power_state',
                'task_state', 'vm_state', 'progress', 'user_id')),
    (V(2, 90), ('hostname',)),
)


def _query(args, version):
    """{parameter: [values]} of the filters this caller may use, as Nova
    keeps them: unknown ones are a 400 from 2.75, and a caller without
    ``allow_all_filters`` loses those Nova does not allow everyone."""
    query = {k: args.getlist(k) for k in args}
    unknown = sorted(k for k in query if k not in _NOVA_PARAMS)
    if unknown and version >= _STRICT_QUERY:
        raise exception.Invalid(
            'Invalid input for query parameters %s. Additional properties '
            'are not allowed (%s unexpected)' % (unknown[0], ', '.join(
                repr(k) for k in unknown)))
    if request.allows('tristate:servers:allow_all_filters'):
        return query
    allowed = set(_PAGING)
    for since, names in _FOR_EVERYONE:
        if version >= since:
            allowed.update(names)
    return {k: v for k, v in query.items() if k in allowed}


def _timestamp(query, name):
    value = query[name][-1]
    try:
        return timeutils.normalize_time(timeutils.parse_isotime(value))
    except ValueError:
        raise exception.Invalid(
            'Invalid input for query parameters %s. Value: %s. %r is not a '
            "'date-time' (ISO 8601, e.g. 2026-01-31T12:00:00Z)"
            % (name, value, value)) from None


def _updated(inst):
    value = inst['updated_at'] or inst['created_at']
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value)
    return timeutils.normalize_time(value)


def _changes(query):
    """Predicates for changes-since and changes-before (on updated_at)."""
    checks = []
    since = before = None
    if 'changes-since' in query:
        since = _timestamp(query, 'changes-since')
        checks.append(lambda inst, body: _updated(inst) >= since)
    if 'changes-before' in query:
        before = _timestamp(query, 'changes-before')
        checks.append(lambda inst, body: _updated(inst) <= before)
    if since and before and before < since:
        raise exception.Invalid('The value of changes-since must be less '
                                'than or equal to changes-before.')
    return checks


# The filters Tristate honours: the instance's column each one matches
# (the last value sent), or None for those handled on their own.
_EXACT = {'host': 'host', 'node': 'host', 'image': 'image_ref',
          'image_ref': 'image_ref',
          'project_id': 'project_id', 'tenant_id': 'project_id',
          'user_id': 'user_id', 'uuid': 'uuid', 'key_name': 'key_name'}
_HONOURED = frozenset(_EXACT) | {
    'flavor', 'status', 'name', 'vm_state', 'deleted', 'changes-since',
    'changes-before', 'all_tenants', 'limit', 'marker', 'sort_key',
    'sort_dir', 'tags', 'tags-any', 'not-tags', 'not-tags-any', 'locked',
    'reservation_id', 'launch_index', 'ip', 'ip6', 'access_ip_v4',
    'access_ip_v6'}
# Matched as regular expressions on the column, as Nova's database does.
_REGEX = ('access_ip_v4', 'access_ip_v6')


def _exact(column, value):
    return lambda inst, body: inst.get(column) == value


def _filters(query, version):
    """Predicates on (instance, body) for the filters of ``query``; a
    filter of Nova's that Tristate cannot honour is a 400."""
    refused = sorted(k for k in query
                     if k in _NOVA_PARAMS and k not in _HONOURED)
    if refused:
        raise exception.Invalid('%s: filtering servers by %s is not '
                                'supported' % (refused[0], refused[0]))
    checks = [_exact(column, query[name][-1])
              for name, column in _EXACT.items() if name in query]
    if 'flavor' in query:
        checks.append(_flavor(query['flavor'][-1]))
    if 'status' in query:
        wanted = {s.upper() for s in query['status']}
        checks.append(lambda inst, body: body['status'] in wanted)
    if 'vm_state' in query:
        states_ = {s.lower() for s in query['vm_state']}
        if 'deleted' in states_:
            states_.add(vm.HARD_DELETED)
        checks.append(lambda inst, body: status.shown_vm_state(
            inst['vm_state'], version) in states_)
    checks += (server_filters.tags(query) + server_filters.locked(query)
               + server_filters.by_boot(query))
    if query.get('name', [''])[-1]:
        pattern = patterns.compile_filter('name', query['name'][-1])
        checks.append(lambda inst, body: pattern.search(body['name']))
    checks += [_regex(name, query[name][-1]) for name in _REGEX
               if name in query]
    return checks + _ip_filters(query) + _changes(query)


def _ip_filters(query):
    """Nova's ``ip`` and ``ip6``: a regular expression matched at the
    start of any of the server's IPv4 (IPv6) addresses."""
    checks = []
    for name, version in (('ip', 4), ('ip6', 6)):
        if query.get(name, [''])[-1]:
            pattern = patterns.compile_filter(name, query[name][-1])
            checks.append(lambda inst, body, p=pattern, v=version: any(
                a['version'] == v and p.match(a['addr'])
                for entries in body['addresses'].values() for a in entries))
    return checks


def _flavor(flavor_id):
    """Nova's ``flavor`` filter: the flavor's id (the row keeps its
    name; a seeded flavor's id is its name)."""
    ids = request.flavor_ids()
    return lambda inst, body: ids.get(inst['flavor_name'],
                                      inst['flavor_name']) == flavor_id


def _regex(column, value):
    pattern = patterns.compile_filter(column, value)
    return lambda inst, body: pattern.search(inst.get(column) or '')


def _page(bodies, args, max_limit):
    """Nova's limit and marker; returns the page and its next link."""
    try:
        limit = min(int(args.get('limit', max_limit)), max_limit)
    except ValueError:
        raise exception.Invalid('limit must be a whole number, not %r'
                                % args['limit']) from None
    if limit < 0:
        raise exception.Invalid('limit must be >= 0, not %d' % limit)
    marker = args.get('marker')
    if marker:
        ids = [b['id'] for b in bodies]
        if marker not in ids:
            raise exception.Invalid('marker [%s] not found' % marker)
        bodies = bodies[ids.index(marker) + 1:]
    page = bodies[:limit]       # limit=0: none, as Nova
    links = []
    if len(bodies) > limit and page:
        links.append({'rel': 'next', 'href': _next_link(args, page[-1]['id'],
                                                        limit)})
    return page, links


def _next_link(args, marker, limit):
    """This request's URL for the page after ``marker``: every filter as it
    was sent (each value of a repeated one), URL-encoded, so a ``+``, ``&``
    or ``=`` in a value reads back as itself."""
    query = [(k, v) for k, v in args.items(multi=True)
             if k not in ('marker', 'limit')]
    query += [('limit', str(limit)), ('marker', marker)]
    # Under [api] link_prefix (a proxy's address), as every other link.
    path = ['servers']
    if flask.request.path.rstrip('/').endswith('/detail'):
        path.append('detail')
    return '%s?%s' % (request.links().href(*path),
                      urlparse.urlencode(sorted(query)))


def _list(detail):
    args = flask.request.args
    request.authorize('tristate:servers:index')
    query = _query(args, request.version())
    deleted = server_filters.deleted(query)
    checks = _filters(query, request.version()) + server_filters.deleted_check(
        deleted)
    all_projects = _all_tenants(query)
    if all_projects:
        request.authorize('tristate:servers:index:all_tenants')
    svc = request.services()
    insts = svc.client.list_instances(request.context(),
                                      all_projects=all_projects,
                                      include_deleted=bool(deleted))
    # Nova lists newest first, unless sort_key says otherwise.
    insts = server_filters.sort(insts, query)
    # every listed server's addresses in one query, not one per server;
    # the rows are this request's own, completed in place
    found, groups = request.network_views([i['uuid'] for i in insts])
    for inst in insts:
        inst['addresses'] = found.get(inst['uuid'], {})
        inst['security_groups'] = groups.get(inst['uuid'], [])
    render = request.ServerViews().body
    bodies = [b for i, b in ((i, render(i, kind=views.LIST)) for i in insts)
              if all(check(i, b) for check in checks)]
    page, links = _page(bodies, args, svc.conf.api.max_limit)
    if not detail:
        page = [{k: b[k] for k in ('id', 'name', 'links')} for b in page]
    out = {'servers': page}
    if links:
        out['servers_links'] = links
    return out


@bp.get('', strict_slashes=False)
def index():
    return _list(detail=False)


@bp.get('/detail')
def detail():
    return _list(detail=True)


# --- one server ------------------------------------------------------------------

def _fault(inst):
    if inst['vm_state'] not in _ERRORED:
        return None
    ctx = request.context()
    entries = request.services().client.list_actions(ctx, inst['uuid'])
    # a failure's message, or why reconcile chose ERROR; not a successful
    # task's note (a snapshot's image id)
    failed = [e for e in entries if e.get('message') and (
        e['result'] != states.RESULT_SUCCESS
        or e.get('vm_state_after') in _ERRORED)]
    return views.fault(failed[-1]) if failed else None


@bp.get('/<server_id>')
def show(server_id):
    inst = request.get_server(server_id)
    return {'server': request.server_body(inst, fault=_fault(inst))}


@bp.put('/<server_id>')
def update(server_id):
    """Rename: Nova's ``PUT /servers/{id}``, answered with the server."""
    body = request.json_body(schemas.UPDATE_SERVER)['server']
    _attributes({k: v for k, v in body.items() if k == 'description'})
    changes = dict(schemas.access_ips(body), **diskhost.of_update(body))
    inst = request.get_server(server_id, rule='tristate:servers:update')
    if 'description' in body or changes:
        changes.update({k: body[k] for k in ('name', 'description')
                        if k in body})
        inst = request.services().client.update_attributes(
            request.context(), inst['uuid'], changes)
    elif 'name' in body and body['name'] != inst['name']:
        inst = request.services().client.rename_instance(
            request.context(), inst['uuid'], name=body['name'])
    return {'server': request.server_body(inst, fault=_fault(inst),
                                          kind=views.UPDATE)}


# The one block device mapping Tristate makes: the image's root disk.
_ROOT_DISK = {'source_type': ('image',), 'destination_type': ('local',),
              'boot_index': (0, '0'),
              'delete_on_termination': (True, 'true', 'True')}
_OPTIONAL = frozenset({'delete_on_termination'})


def _mapping_refused(index, mapping):
    wrong = sorted(k for k, ok in _ROOT_DISK.items()
                   if mapping.get(k, ok[0]) not in ok
                   or (k not in _OPTIONAL and k not in mapping))
    extra = sorted(set(mapping) - set(_ROOT_DISK) - {'uuid'})
    if 'uuid' not in mapping or wrong or extra or index:
        shown = (wrong + extra)[:1] or ['uuid' if 'uuid' not in mapping
                                        else 'boot_index']
        return exception.Invalid(
            'Invalid input for field/attribute server.block_device_mapping_'
            'v2.%d.%s. Value: %s. Not supported: Tristate boots from imageRef '
            "onto the host's local disk only (one mapping: uuid imageRef, "
            'source_type image, destination_type local, boot_index 0); '
            'volumes, blank, swap and ephemeral disks are not supported'
            % (index, shown[0], mapping.get(shown[0])))
    return None


def _check_root_disk(body, image_ref):
    """The root disk's mapping (openstackclient's), if any, is imageRef's;
    any other mapping is refused as not supported."""
    for index, mapping in enumerate(body.get('block_device_mapping_v2', ())):
        refused = _mapping_refused(index, mapping)
        if refused is not None:
            raise refused
        if actions.ref(mapping['uuid']) != image_ref:
            raise exception.Invalid(
                'Invalid input for field/attribute server.'
                'block_device_mapping_v2.0.uuid. Value: %s. The root disk '
                'is the image imageRef names (%s): Tristate boots from '
                'that image only' % (mapping['uuid'], image_ref))


# Of Nova's create fields, ``networks`` and ``security_groups`` are
# checked by api/routes/networks.py, ``key_name``, ``user_data`` and
# ``config_drive`` by api/guest.py, ``hostname`` and ``OS-DCF:diskConfig``
# by api/diskhost.py; accessIPv4/v6 are kept and shown.


# Fields of POST /servers from the microversion Nova adds them.
_SINCE = {'description': microversion.APIVersion(2, 19),
          'tags': microversion.APIVersion(2, 52)}


def _attributes(body):
    """The new server's description, user metadata, tags and access
    addresses."""
    for field, since in _SINCE.items():
        if field in body and request.version() < since:
            raise exception.Invalid(
                "Invalid input for field/attribute server.%s. Additional "
                "properties are not allowed ('%s' was unexpected: it needs "
                "microversion %s or later)" % (field, field, since))
    meta = {k: v for k, v in body.get('metadata', {}).items()
            if k not in views.POLICY_KEYS.values()}
    found = {'metadata': meta} if meta else {}
    found.update({k: body[k] for k in ('description', 'tags') if k in body})
    found.update(schemas.access_ips(body))
    return found


@bp.post('', strict_slashes=False)
def create():
    whole = request.json_body(schemas.CREATE_SERVER)
    body = whole['server']
    request.authorize('tristate:servers:create')
    policies = {name: body['metadata'][key]
                for name, key in views.POLICY_KEYS.items()
                if key in body.get('metadata', {})}
    reservation = schemas.reservation_hint(whole)
    flavor, image_ref = actions.ref(body['flavorRef']), actions.ref(
        body['imageRef'])
    _check_root_disk(body, image_ref)
    networks_api.security_groups_refused(body)
    low, high = multicreate.counts(body)
    zone, force_host = availability_zones.requested(
        body.get('availability_zone'))
    networks = networks_api.requested(body, high)
    image = request.boot_image(image_ref, flavor)
    attributes = dict(_attributes(body), **guest.attributes(body),
                      **diskhost.of_create(body, image, high),
                      boot_reservation_id=multicreate.reservation_id())
    password = guest.admin_password(body, attributes)
    if zone is not None:
        attributes['availability_zone'] = zone
    group = server_groups.group_hint(whole)
    if group is not None:
        attributes['server_group'] = group
    host_hints = schemas.host_hints(whole)
    if host_hints is not None:
        attributes['scheduler_hints'] = host_hints

    def create_one(name, launch_index):
        return request.services().client.create_instance(
            request.context(), name=name, flavor=flavor,
            image_ref=image_ref, policies=policies,
            attributes=dict(attributes, launch_index=launch_index),
            **({'reservation_id': reservation} if reservation else {}),
            **({'force_host': force_host} if force_host else {}),
            **({'networks': networks} if networks else {}),
            **({'admin_pass': password} if password else {}))
    made = multicreate.create(
        name=body['name'], low=low, high=high, create_one=create_one,
        # the quota's room for several servers (one: the conductor checks)
        flavor=flavors.get(request.services().conf,
                           request.services().client.statedb, flavor,
                           request.context()) if high > 1 else None)
    if strutils.bool_from_string(body.get('return_reservation_id', False)):
        resp = flask.jsonify(
            {'reservation_id': attributes['boot_reservation_id']})
        resp.status_code = 202
        return resp
    inst = made[0]
    out = views.created_server(inst, request.links())
    # Nova's: the groups the request named, else the one it is in
    out['security_groups'] = body.get('security_groups',
                                      [{'name': secgroups.DEFAULT}])
    if password and request.services().conf.api.enable_instance_password:
        out['adminPass'] = password
    resp = flask.jsonify({'server': out})
    resp.status_code = 202
    resp.headers['Location'] = out['links'][0]['href']
    started = inst.get('started_task_id') or inst.get('task_id')
    if started:
        resp.headers[request.TASK_ID_HEADER] = started
    return resp


@bp.delete('/<server_id>')
def delete(server_id):
    hard_delete(server_id)
    return request.no_content(204)


def hard_delete(server_id):
    """The hard delete: one database transaction, made here; no bus
    needed. The owner and the policy are checked on the row it reads."""
    def allowed(inst):
        if inst['vm_state'] == vm.HARD_DELETED:
            raise exception.InstanceNotFound(instance=server_id)
        request.authorize('tristate:servers:delete',
                          {'project_id': inst['project_id']})
        table.refuse_if_locked(inst, request.context(), 'delete')
    return request.services().client.delete_instance(
        request.context(), server_id, check=allowed)

"""``/servers``: list, show, create, rename (``PUT``), delete."""

from urllib import parse as urlparse

import flask
from oslo_utils import strutils

from api import actions
from api import patterns
from api import request
from api import schemas
from api import views
from common import exception
from common import states
from common.states import vm

bp = flask.Blueprint('servers', __name__, url_prefix='/v2.1/servers')

_ERRORED = (vm.ERROR, vm.PENDING)


# --- listing -------------------------------------------------------------------

def _all_tenants(args):
    if 'all_tenants' not in args:
        return False
    value = args.get('all_tenants')
    return strutils.bool_from_string(value, default=True) if value else True


def _filters(args):
    """Predicates for Nova's status, name, host and project filters."""
    checks = []
    if args.get('status'):
        wanted = {s.upper() for s in args.getlist('status')}
        checks.append(lambda inst, body: body['status'] in wanted)
    if args.get('name'):
        pattern = patterns.compile_filter('name', args['name'])
        checks.append(lambda inst, body: pattern.search(body['name']))
    if args.get('host'):
        # the instance's: only admins see the host in a body
        checks.append(lambda inst, body: inst['host'] == args['host'])
    project = args.get('project_id') or args.get('tenant_id')
    if project:
        checks.append(lambda inst, body: body['tenant_id'] == project)
    return checks


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
    limit = limit or max_limit
    page = bodies[:limit]
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
    checks = _filters(args)
    request.authorize('tristate:servers:index')
    all_projects = _all_tenants(args)
    if all_projects:
        request.authorize('tristate:servers:index:all_tenants')
    svc = request.services()
    insts = svc.client.list_instances(request.context(),
                                      all_projects=all_projects)
    # Nova lists newest first.
    insts = sorted(insts, key=lambda i: (str(i['created_at']), i['uuid']),
                   reverse=True)
    up = request.hosts_up()
    bodies = [b for i, b in ((i, request.server_body(i, up)) for i in insts)
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
    inst = request.get_server(server_id, rule='tristate:servers:update')
    if 'name' in body and body['name'] != inst['name']:
        inst = request.services().client.rename_instance(
            request.context(), inst['uuid'], name=body['name'])
    return {'server': request.server_body(inst, fault=_fault(inst))}


@bp.post('', strict_slashes=False)
def create():
    whole = request.json_body(schemas.CREATE_SERVER)
    body = whole['server']
    request.authorize('tristate:servers:create')
    policies = {name: body['metadata'][key]
                for name, key in views.POLICY_KEYS.items()
                if key in body.get('metadata', {})}
    reservation = schemas.reservation_hint(whole)
    inst = request.services().client.create_instance(
        request.context(), name=body['name'],
        flavor=actions.ref(body['flavorRef']),
        image_ref=actions.ref(body['imageRef']), policies=policies,
        **({'reservation_id': reservation} if reservation else {}))
    # The scheduler has just placed it on a host that sends heartbeats:
    # no need to ask the conductor whether that host is up.
    out = request.server_body(inst, up={inst.get('host'): True})
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
    return request.services().client.delete_instance(
        request.context(), server_id, check=allowed)

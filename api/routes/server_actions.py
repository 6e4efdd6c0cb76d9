"""``/servers/{id}/action`` and ``/servers/{id}/os-instance-actions``
(metadata, tags and the password: :mod:`api.routes.server_attrs`)."""

import flask

from api import actions
from api import diskhost
from api import evacuate
from api import microversion
from api import guest
from api import request
from api import schemas
from api import snapshotimage
from api import views
from api.routes import consoles
from api.routes import security_groups
from api.routes import server_attrs
from api.routes import servers
from common import actions as table
from common import exception
from common.db import quotas

bp = flask.Blueprint('server_actions', __name__,
                     url_prefix='/v2.1/servers/<server_id>')

TASK_ID_HEADER = request.TASK_ID_HEADER
TABLE = table.TABLE
LOCK_REASON = microversion.APIVersion(2, 73)
DESCRIPTION = microversion.APIVersion(2, 19)
KEY_NAME = microversion.APIVersion(2, 54)
USER_DATA = microversion.APIVersion(2, 57)
COLD_MIGRATE_HOST = microversion.APIVersion(2, 56)


# --- actions ---------------------------------------------------------------------

def _parse_action(server_id):
    raw = request.json_body({'type': 'object'})
    if len(raw) == 1 and next(iter(raw)) in actions.UNBUILT:
        _refuse_unbuilt(server_id, actions.UNBUILT[next(iter(raw))])
    if len(raw) == 1 and next(iter(raw)) not in actions.ACTIONS:
        raise exception.Invalid('There is no such action: %s'
                                % next(iter(raw)))
    if len(raw) != 1:
        raise exception.Invalid(
            'The action body must have exactly one key, one of %s; got %s'
            % (', '.join(sorted(actions.ACTIONS)),
               ', '.join(sorted(raw)) or 'none'))
    key = next(iter(raw))
    spec = actions.ACTIONS[key]
    schemas.validate({'type': 'object', 'properties': {key: spec.schema}},
                     raw)
    if spec.kind == actions.EVACUATE:
        # its body's schema is the microversion's (checked before policy)
        evacuate.params_of(raw[key], request.version())
    return spec, raw[key]


def _refuse_unbuilt(server_id, unbuilt):
    """Nova's action that Tristate does not carry out yet: Nova's 404
    outside the microversions it serves it at or for a server the caller
    cannot see, else a 400 (410 for one Nova removed) saying so."""
    version = request.version()
    if version < microversion.APIVersion(*unbuilt.since) or (
            unbuilt.until and version > microversion.APIVersion(
                *unbuilt.until)):
        raise exception.NotFound('The resource could not be found.')
    request.get_server(server_id)
    if unbuilt.status == 410:
        raise exception.Gone('%s: Nova removed this action; Tristate does '
                             'not have it' % unbuilt.key)
    raise exception.Invalid(
        'The %s action is not supported yet: Tristate does not do %s'
        % (unbuilt.key, unbuilt.what))


@bp.post('/action')
def action(server_id):
    spec, body = _parse_action(server_id)
    name, params = _resolve(spec, body)
    if spec.kind == actions.DELETE:
        servers.hard_delete(server_id)
        return request.no_content(spec.status)
    inst = request.get_server(server_id,
                              rule='tristate:servers:action:%s' % name)
    client, ctx = request.services().client, request.context()
    if spec.kind == actions.LOCK:
        return _lock(inst, params)
    if spec.kind == actions.CONSOLE:
        return consoles.action(inst, spec.key, params)
    if spec.kind == actions.EVACUATE:
        return evacuate.action(inst, body)
    if spec.kind == actions.SECURITY_GROUP:
        # as Nova: no lock check (a change of the ports, not the server)
        return security_groups.action(inst, spec.key, body)
    table.refuse_if_locked(inst, ctx, name)
    _unshelve_to_host(inst, name, params)
    params, changes = _with_changes(inst, name, params, body)
    if spec.kind == actions.RESET:
        after = client.reset_state(ctx, server_id, params['state'])
    else:
        early = {k: changes.pop(k) for k in diskhost.BEFORE_REBUILD
                 if name == 'rebuild' and k in changes}
        params, after = _run_task(client, ctx, inst, name, params, early)
        if changes or early:
            after = _rebuild_attributes(inst, changes, after)
    started = after.get('started_task_id') or after.get('task_id')
    if started and (name == 'set_password' or params.get(
            'password_required')):
        _password_set(client, server_id, started)
    resp = _answer(spec, params, after)
    if started:
        resp.headers[TASK_ID_HEADER] = started
    return resp


def _resolve(spec, body):
    """(table action, params) of a validated body; an unshelve's body is
    checked by the request's microversion first (api.actions)."""
    if spec.action == 'unshelve':
        return 'unshelve', actions.unshelve_params(body, request.version())
    return spec.resolve(body)


def _unshelve_to_host(inst, name, params):
    """Nova's second rule of an unshelve naming its host (2.91): only
    admins may."""
    if name == 'unshelve' and params.get('host'):
        request.authorize('tristate:servers:action:unshelve_to_host',
                          {'project_id': inst['project_id']})


def _with_changes(inst, name, params, body):
    """(the task's parameters, the server's attributes it changes): a
    rebuild's, a resize's disk config, checked before the claim."""
    if name == 'rebuild':
        changes = _rebuild_changes(inst, body)
        return dict(params, **_rebuild_guest(inst, body)), changes
    if name == 'resize':
        return params, diskhost.of_resize(body)
    return params, {}


def _run_task(client, ctx, inst, name, params, early=None):
    """(params as sent, the conductor's answer) of a task action.
    ``early``: changes the task must find made (a rebuild's hostname goes
    into its config drive), made once the table allows the task."""
    params = _checked_task(client, inst, name, params)
    if early:
        client.update_attributes(ctx, inst['uuid'], early)
    conf = request.services().conf
    with snapshotimage.queued(conf, ctx, inst, name, params) as params:
        return params, client.run_action(ctx, inst['uuid'], name, params)


def _lock(inst, params):
    """Nova's lock and unlock: 202, no body; who locked it is the
    owner, or an admin of another project."""
    ctx = request.context()
    if params.get('reason') is not None and request.version() < LOCK_REASON:
        raise exception.Invalid(
            'Invalid input for field/attribute lock.locked_reason. Value: '
            '%r. Additional '
            "properties are not allowed ('locked_reason' was unexpected "
            'below microversion 2.73)' % params['reason'])
    if params['locked']:
        params = dict(params, by='owner' if ctx.project_id == inst[
            'project_id'] else 'admin')
    request.services().client.update_attributes(ctx, inst['uuid'],
                                                {'lock': params})
    return request.no_content(202)


def _password_set(client, server_id, task_id):
    """Nova answers changePassword once the guest took the password, and
    409 when it could not (a guest with no qemu-guest-agent); so does this,
    waiting for the set_password task up to ``[api] rpc_timeout`` seconds
    (then 202: it still runs, its result goes to the action log)."""
    reason = request.failed_task_reason(client, task_id)
    if reason is not None:
        raise exception.Conflict(
            'Failed to set admin password on %s because %s'
            % (server_id, reason))


def _rebuild_changes(inst, body):
    """What a rebuild changes besides the image: its name, description
    (2.19), metadata (all of it replaced, as Nova) and access addresses;
    checked before the
    claim."""
    if 'description' in body and request.version() < DESCRIPTION:
        raise exception.Invalid(
            "Invalid input for field/attribute rebuild.description. "
            "Additional properties are not allowed ('description' was "
            "unexpected: it needs microversion 2.19 or later)")
    user = [k for k in body.get('metadata', {})
            if k not in views.POLICY_KEYS.values()]
    svc = request.services()
    limit = svc.client.statedb.metadata_items(
        inst['project_id'], quotas.Settings.from_conf(svc.conf)) if user else -1
    if 0 <= limit < len(user):
        raise exception.QuotaExceeded(
            'Quota exceeded for metadata_items: Requested %d, but the limit '
            'is %d. Maximum number of metadata items exceeds %d'
            % (len(user), limit, limit))
    disk_host = diskhost.of_rebuild(body, lambda: request.boot_image(
        actions.ref(body['imageRef'])))
    return dict({k: body[k] for k in ('name', 'description', 'metadata')
                 if k in body}, **schemas.access_ips(body), **disk_host)


def _rebuild_guest(inst, body):
    """A rebuild's new key pair (2.54) and user data (2.57), each null to
    remove it, and its admin password (``admin_pass``: the request's, with
    a config drive for it if the instance has none, or a generated one;
    api/guest.py), as run_action parameters; checked before the claim."""
    drive = {'config_drive': True} if inst.get('config_drive') else {}
    password = guest.admin_password(body, drive, where='rebuild')
    found = {'admin_pass': password} if password else {}
    if drive.get('config_drive') and not inst.get('config_drive'):
        found['config_drive'] = True
    for field, since in (('key_name', KEY_NAME), ('user_data', USER_DATA)):
        if field in body and request.version() < since:
            raise exception.Invalid(
                "Invalid input for field/attribute rebuild.%s. Additional "
                "properties are not allowed ('%s' was unexpected: it needs "
                "microversion %s or later)" % (field, field, since))
    if 'key_name' in body:
        found.update({'key_name': None, 'key_data': None}
                     if body['key_name'] is None
                     else guest.key_pair(body['key_name'], where='rebuild'))
    if 'user_data' in body:
        found['user_data'] = (None if body['user_data'] is None else
                              guest.user_data(body['user_data'],
                                              where='rebuild'))
    return found


def _rebuild_attributes(inst, changes, after):
    """The claimed rebuild's new name, description, metadata, access
    addresses, hostname and disk config (a resize's disk config)."""
    if 'metadata' in changes:
        server_attrs.write_metadata(
            inst['uuid'], changes.pop('metadata'), replace=True,
            task_id=after.get('started_task_id') or after.get('task_id'))
    if changes:
        request.services().client.update_attributes(
            request.context(), inst['uuid'], changes)
    fresh = request.services().client.get_instance(request.context(),
                                                   inst['uuid'])
    return dict(after, **{k: fresh.get(k) for k in (
        'name', 'description', 'metadata', 'user_shutdown_policy',
        'crash_policy', 'updated_at', 'access_ip_v4', 'access_ip_v6',
        'hostname', 'auto_disk_config')})


def _checked_task(client, inst, name, params):
    """What the row just read already denies is refused here, with the
    conductor's own answer; the conductor's claim decides the rest. The
    task's parameters, ready to send."""
    TABLE.refuse_if_denied(inst, name)
    if params.get('image_ref'):
        # a rebuild boots it in the instance's flavor; a rescue boots it
        # beside the instance's disk
        request.boot_image(params['image_ref'],
                           inst['flavor_name'] if name == 'rebuild' else None)
    if name == 'rescue':
        params = _rescue_password(client, params)
    if name == 'migrate' and request.version() < COLD_MIGRATE_HOST:
        params = {}         # Nova ignores a host before 2.56
    if name in ('live_migrate', 'migrate') and params.get('host'):
        _known_host(params['host'])
    return params


def _known_host(host):
    """Nova's 400 for a live migration to a host it does not know."""
    if host not in request.hosts_up():
        raise exception.Invalid('Compute host %s could not be found.' % host)


def _rescue_password(client, params):
    """The request's password, else a generated one. A conductor older
    than RPC 1.3 takes none: the rescue then runs without one (and the
    answer is ``{}``)."""
    params = dict(params)
    if not client.can_send('1.3'):
        params.pop('password')
        params.pop('password_required', None)
    elif params['password'] is None:
        params['password'] = actions.generate_password(
            request.services().conf.api.password_length)
    return params


def _answer(spec, params, after):
    """Nova's answer to an accepted action: empty, except rescue's
    password, the image id of createImage and createBackup, and the
    rebuild's server."""
    if spec.key == 'rescue':
        shown = (request.services().conf.api.enable_instance_password
                 and 'password' in params)
        body = {'adminPass': params['password']} if shown else {}
        return flask.make_response(flask.jsonify(body), spec.status)
    if spec.key in ('createImage', 'createBackup') and after.get('image_id'):
        return _image_answer(spec, params, after['image_id'])
    if spec.key == 'rebuild':
        return _rebuild_answer(spec, params, after)
    return request.no_content(spec.status)


def _rebuild_answer(spec, params, after):
    """The server as the claimed rebuild has it, with the image it is
    being rebuilt from (Nova's answer, which ``openstack server rebuild``
    prints): the record's ``image_ref`` changes only when the rebuild
    succeeds. With ``adminPass`` (api/guest.py) unless ``[api]
    enable_instance_password`` is false, as Nova."""
    inst = dict(after, image_ref=params['image_ref'])
    body = request.server_body(inst, kind=views.REBUILD)
    if (params.get('admin_pass')
            and request.services().conf.api.enable_instance_password):
        body['adminPass'] = params['admin_pass']
    return flask.make_response(flask.jsonify({'server': body}), spec.status)


def _image_answer(spec, params, image_id):
    """From 2.45 the id in the body; before, a ``Location`` header (for a
    backup only when it keeps any: rotation > 0), as Nova."""
    if request.version() >= microversion.IMAGE_ID_BODY:
        return flask.make_response(flask.jsonify({'image_id': image_id}),
                                   spec.status)
    resp = request.no_content(spec.status)
    if params.get('rotation', 1) > 0:
        resp.headers['Location'] = request.links().href('images', image_id)
    return resp


# --- the action log -----------------------------------------------------------------

def _raw_entries(server_id):
    """The server and its action log, newest first (as Nova)."""
    inst = request.get_server(server_id,
                              rule='tristate:servers:instance_actions:list')
    entries = request.services().client.list_actions(request.context(),
                                                      server_id)
    return inst, list(reversed(entries))


@bp.get('/os-instance-actions')
def instance_actions(server_id):
    _, entries = _raw_entries(server_id)
    return {'instanceActions': [views.instance_action(e, request.version())
                                for e in entries]}


def _of_request(entries, request_id):
    """The tasks of one request (or the one task of that task_id)."""
    by_task = [e for e in entries if e['task_id'] == request_id]
    return by_task or [e for e in entries
                       if (e.get('request_id') or e['task_id']) == request_id]


@bp.get('/os-instance-actions/<request_id>')
def instance_action(server_id, request_id):
    """One action, with one event per task the request started, from
    2.51 for everyone, before for admins only (Nova's events policy)."""
    inst, entries = _raw_entries(server_id)
    tasks = _of_request(entries, request_id)
    if not tasks:
        raise exception.NotFound('Action %s of instance %s could not be '
                                 'found.' % (request_id, server_id))
    version = request.version()
    action = views.instance_action(tasks[0], version)
    full = request.services().policy.allows(
        request.context(), 'tristate:servers:instance_actions:events',
        {'project_id': inst['project_id']})
    if full or version >= microversion.EVENTS_FOR_ALL:
        action['events'] = [views.instance_action_event(
            e, version, show_traceback=full,
            show_host=full and version >= microversion.EVENT_HOST)
            for e in tasks]
    return {'instanceAction': action}

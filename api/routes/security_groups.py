"""Security groups on Nova's routes (issue 22): the ``addSecurityGroup`` and
``removeSecurityGroup`` server actions, ``GET /servers/{id}/os-security-groups``
and, below 2.36 (Nova's proxy APIs), ``GET /os-security-groups[/{id}]``;
there, creating, changing or deleting a group or a rule is a 400 saying that
Tristate does not do it yet (its one group cannot change).

Tristate has one group, ``default``: all traffic allowed; a server's ports
are in it or in none (all traffic dropped: the guest's links down). See
:mod:`common.secgroups`. Answers are Nova's with Neutron: a group name other
than ``default`` is a group that does not exist (404), a server with no port
has no groups (404 on the actions, none listed), removing a group the server
is not in is a 404, adding one it is in already a 202 that changes nothing.

The change is the ``set_security_groups`` task of the action table (its
agent sets the links). Nova answers once Neutron took the change; so does
this, waiting for the task's end up to ``[api] rpc_timeout`` seconds (then
202: it still runs, its result goes to the action log); a task that failed
is a 409 with its reason, the groups as they were.
"""

import uuid as uuidlib

import flask

from api import microversion
from api import request
from api import schemas
from common import exception
from common import secgroups

bp = flask.Blueprint('security_groups', __name__, url_prefix='/v2.1')

ACTION = 'set_security_groups'
PROXY_REMOVED = microversion.APIVersion(2, 36)
# The namespace of the ids Tristate gives each project's default group and
# its rules (stable: derived from the project).
_IDS = uuidlib.UUID('5e1f9b0c-6d2a-4c3e-9a8b-7f6e5d4c3b2a')
DESCRIPTION = ('Tristate\'s one security group: all traffic allowed '
               '(Tristate filters no traffic; isolate projects with their '
               'own networks)')


# --- the actions -------------------------------------------------------------------

def action(inst, key, body):
    """``addSecurityGroup`` / ``removeSecurityGroup`` on ``inst`` (the
    body validated by its schema, the policy checked): 202, no body."""
    name = body['name']
    if not name.strip():
        raise exception.Invalid('Security group name cannot be empty')
    ctx = request.context()
    if name not in secgroups.GROUPS:
        raise exception.NotFound('Security group %s is not found for project '
                                 '%s' % (name, ctx.project_id))
    uuid = inst['uuid']
    current = request.security_groups([uuid]).get(uuid)
    if current is None:
        raise exception.NotFound('instance_id %s could not be found as '
                                 'device id on any ports' % uuid)
    if key == 'addSecurityGroup' and name in current:
        return request.no_content(202)
    if key == 'removeSecurityGroup' and name not in current:
        raise exception.NotFound('Security group %s not associated with the '
                                 'instance %s' % (name, uuid))
    wanted = [name] if key == 'addSecurityGroup' else []
    client = request.services().client
    after = client.run_action(ctx, uuid, ACTION, {'security_groups': wanted})
    started = after.get('started_task_id') or after.get('task_id')
    if started:
        _wait(client, uuid, started)
    resp = request.no_content(202)
    if started:
        resp.headers[request.TASK_ID_HEADER] = started
    return resp


def _wait(client, uuid, task_id):
    """Until the task ``task_id`` ended (a 409 if it failed), at most
    ``[api] rpc_timeout`` seconds."""
    reason = request.failed_task_reason(client, task_id)
    if reason is not None:
        raise exception.Conflict(
            'The security groups of server %s could not be changed: %s'
            % (uuid, reason))


# --- the groups --------------------------------------------------------------------

def group_view(project_id):
    """The project's ``default`` group as Nova shows a Neutron group: its
    ingress rules allow everything, from every IPv4 and IPv6 address."""
    group_id = str(uuidlib.uuid5(_IDS, 'group:%s' % project_id))
    rules = [{'id': str(uuidlib.uuid5(_IDS, 'rule:%s:%s' % (project_id,
                                                               cidr))),
              'parent_group_id': group_id, 'ip_protocol': None,
              'from_port': None, 'to_port': None, 'group': {},
              'ip_range': {'cidr': cidr}}
             for cidr in ('0.0.0.0/0', '::/0')]
    return {'id': group_id, 'name': secgroups.DEFAULT,
            'description': DESCRIPTION, 'tenant_id': project_id,
            'rules': rules}


def _proxy_or_404():
    if request.version() >= PROXY_REMOVED:
        raise exception.NotFound('The resource could not be found.')


def _authorize():
    request.authorize('tristate:servers:show',
                      {'project_id': request.context().project_id})


@bp.get('/os-security-groups')
def index():
    """The caller's project's groups (Nova's proxy API, 2.1-2.35)."""
    _proxy_or_404()
    _authorize()
    return {'security_groups': [group_view(request.context().project_id)]}


@bp.get('/os-security-groups/<group_id>')
def show(group_id):
    _proxy_or_404()
    _authorize()
    found = group_view(request.context().project_id)
    if group_id != found['id']:
        raise exception.NotFound('Security group %s not found.' % group_id)
    return {'security_group': found}


@bp.get('/servers/<server_id>/os-security-groups')
def server_index(server_id):
    """The groups of the server's ports (none without a port)."""
    inst = request.get_server(server_id)
    names = request.security_groups([server_id]).get(server_id, [])
    return {'security_groups': [group_view(inst['project_id'])
                                for name in names
                                if name == secgroups.DEFAULT]}


NOT_YET = ('%s is not supported yet: Tristate has one security group, '
           '"default" (all traffic allowed), which cannot be changed; a '
           'server\'s ports are in it or in none (addSecurityGroup, '
           'removeSecurityGroup)')


def _not_yet(what):
    """Nova's proxy route that changes groups or rules: 404 where Nova has
    none (2.36 and later), else a 400 saying so, for a caller who may see
    the groups."""
    _proxy_or_404()
    request.json_body(schemas.ANYTHING)     # unsound JSON: a 400 saying so
    _authorize()
    raise exception.Invalid(NOT_YET % what)


# Nova's proxy routes that change groups or rules, and what each would do.
CHANGES = (
    ('POST', '/os-security-groups', 'Creating a security group'),
    ('PUT', '/os-security-groups/<group_id>', 'Changing a security group'),
    ('DELETE', '/os-security-groups/<group_id>', 'Deleting a security group'),
    ('POST', '/os-security-group-rules', 'Adding a security group rule'),
    ('DELETE', '/os-security-group-rules/<rule_id>',
     'Deleting a security group rule'),
)


def _refusal(what):
    def refuse(**ids):
        return _not_yet(what)
    return refuse


for _n, (_method, _rule, _what) in enumerate(CHANGES):
    bp.add_url_rule(_rule, 'not_yet_%d' % _n, _refusal(_what),
                    methods=[_method])

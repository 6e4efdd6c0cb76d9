"""What the user says of a server, as Nova's routes (issue 22):

    /servers/{id}/metadata          GET, POST (merge), PUT (replace all)
    /servers/{id}/metadata/{key}    GET, PUT, DELETE
    /servers/{id}/tags              GET, PUT (replace all), DELETE (2.26)
    /servers/{id}/tags/{tag}        GET, PUT, DELETE (2.26)
    /servers/{id}/os-server-password  GET, DELETE
    /servers/{id}/diagnostics       GET (admin: the host's reading of it)
    /servers/{id}/topology          GET (2.78: its guest NUMA cells)

User metadata is any key of Nova's pattern (1-255 of letters, digits and
``-_:. ``) with a string value of at most 255 characters, at most the
project's ``metadata_items`` quota of them. The two ``tristate:`` keys are
not user metadata: they set the server's reconcile policies (from 2.101
they are shown among its metadata; below, they are still taken). Changes are made by the
conductor in one transaction (common/db/attributes.py), where the owner
and the lock are checked (common/actions.py).

Tristate sets no password a guest could encrypt for its owner: the
password route answers an empty one, as Nova does for a server whose
guest posted none, and clearing it changes nothing.

The topology (Nova's 2.78) is the guest's NUMA cells (common/numa.py):
each cell's vCPUs and memory; ``siblings`` empty (a guest's vCPUs are
one thread a core) and ``pagesize_kb`` null (no huge pages). A server of
one cell has no NUMA topology of its own (nothing is stored for it, its
domain has none): ``{"nodes": [], "pagesize_kb": null}``, Nova's answer
for a server without one. Tristate binds no guest cell to a host NUMA
node and pins no vCPU: an admin (Nova's ``host:index`` rule) sees
``cpu_pinning`` empty and no ``host_node``, which Nova's schema allows
(nothing invented).
"""

import flask

from api import diagnostics as diagnostics_view
from api import microversion
from api import request
from api import schemas
from api import views
from common import actions as table
from common import exception
from common import numa

bp = flask.Blueprint('server_attrs', __name__,
                     url_prefix='/v2.1/servers/<server_id>')

TAGS = microversion.APIVersion(2, 26)
TOPOLOGY = microversion.APIVersion(2, 78)


def change(server_id, changes, rule):
    """Apply ``changes`` (common/db/attributes.py) through the conductor;
    the instance after."""
    inst = request.get_server(server_id, rule=rule)
    return request.services().client.update_attributes(
        request.context(), inst['uuid'], changes)


# --- metadata ------------------------------------------------------------------

def shown_metadata(inst):
    """The user metadata, with the policy keys from 2.101 on."""
    return views.all_metadata(inst, request.version())


def _split(items):
    """(policies, user metadata) of a metadata body."""
    policies = {name: items[key] for name, key in views.POLICY_KEYS.items()
                if key in items}
    user = {k: v for k, v in items.items()
            if k not in views.POLICY_KEYS.values()}
    return policies, user


def write_metadata(server_id, items, *, replace=False, delete=(),
                   task_id=None):
    """``task_id``: the task this change is part of (a rebuild's new
    metadata), which the change may run under (Nova's state rule refuses
    a metadata change while any other task runs)."""
    policies, user = _split(items)
    rule = 'tristate:servers:metadata:update'
    inst = None
    if user or replace or delete:
        meta = {'replace': replace, 'set': user, 'delete': list(delete)}
        if task_id:
            meta['during_task'] = task_id
        inst = change(server_id, {'metadata': meta}, rule)
    if policies:
        inst = inst or request.get_server(server_id, rule=rule)
        table.refuse_if_locked(inst, request.context(), 'update')
        inst = request.services().client.update_policies(
            request.context(), inst['uuid'], policies)
    return inst or request.get_server(server_id, rule=rule)


@bp.get('/metadata')
def metadata(server_id):
    inst = request.get_server(server_id,
                              rule='tristate:servers:metadata:show')
    return {'metadata': shown_metadata(inst)}


@bp.get('/metadata/<key>')
def metadata_item(server_id, key):
    inst = request.get_server(server_id,
                              rule='tristate:servers:metadata:show')
    meta = shown_metadata(inst)
    if key not in meta:
        raise exception.NotFound('Metadata item was not found')
    return {'meta': {key: meta[key]}}


@bp.post('/metadata')
def merge_metadata(server_id):
    body = request.json_body(schemas.UPDATE_METADATA)
    return {'metadata': shown_metadata(write_metadata(server_id, body['metadata']))}


@bp.put('/metadata')
def replace_metadata(server_id):
    body = request.json_body(schemas.UPDATE_METADATA)
    write_metadata(server_id, body['metadata'], replace=True)
    return {'metadata': body['metadata']}


@bp.put('/metadata/<key>')
def set_metadata_item(server_id, key):
    body = request.json_body(schemas.set_metadata_item())
    if list(body['meta']) != [key]:
        raise exception.Invalid('Request body and URI mismatch')
    write_metadata(server_id, body['meta'])
    return {'meta': body['meta']}


@bp.delete('/metadata/<key>')
def delete_metadata_item(server_id, key):
    if key in views.POLICY_KEYS.values():
        raise exception.Invalid(
            '%s: a reconcile policy cannot be deleted, only set to one of '
            'its values' % key)
    change(server_id, {'metadata': {'delete': [key]}},
           'tristate:servers:metadata:update')
    return request.no_content(204)


# --- tags (2.26) -------------------------------------------------------------------

def _tags_version():
    if request.version() < TAGS:
        raise exception.NotFound('The resource could not be found.')


@bp.get('/tags')
def tags(server_id):
    _tags_version()
    inst = request.get_server(server_id, rule='tristate:servers:tags:show')
    return {'tags': list(inst.get('tags') or [])}


@bp.put('/tags')
def replace_tags(server_id):
    body = request.json_body(schemas.REPLACE_TAGS)
    _tags_version()
    after = change(server_id, {'tags': {'replace': True, 'add': body['tags']}},
                   'tristate:servers:tags:update')
    return {'tags': list(after.get('tags') or [])}


@bp.delete('/tags')
def delete_tags(server_id):
    _tags_version()
    change(server_id, {'tags': {'replace': True}},
           'tristate:servers:tags:update')
    return request.no_content(204)


@bp.get('/tags/<tag>')
def tag(server_id, tag):
    _tags_version()
    inst = request.get_server(server_id, rule='tristate:servers:tags:show')
    if tag not in (inst.get('tags') or []):
        raise exception.NotFound('Tag %s could not be found.' % tag)
    return request.no_content(204)


@bp.put('/tags/<tag>')
def add_tag(server_id, tag):
    request.json_body(schemas.NO_BODY)      # none, as Nova's
    _tags_version()
    schemas.validate({'type': 'object', 'properties': {'tag': schemas.TAG}},
                     {'tag': tag})
    before = request.get_server(server_id,
                                rule='tristate:servers:tags:update')
    if tag in (before.get('tags') or []):
        return request.no_content(204)
    change(server_id, {'tags': {'add': [tag]}}, 'tristate:servers:tags:update')
    resp = request.no_content(201)
    resp.headers['Location'] = request.links().href('servers', server_id,
                                                    'tags', tag)
    return resp


@bp.delete('/tags/<tag>')
def delete_tag(server_id, tag):
    _tags_version()
    change(server_id, {'tags': {'delete': [tag]}},
           'tristate:servers:tags:update')
    return request.no_content(204)


# --- os-server-password ----------------------------------------------------------

@bp.get('/os-server-password')
def password(server_id):
    request.get_server(server_id, rule='tristate:servers:password:show')
    return {'password': ''}


@bp.delete('/os-server-password')
def clear_password(server_id):
    request.get_server(server_id, rule='tristate:servers:password:clear')
    return request.no_content(204)


# --- diagnostics ------------------------------------------------------------------

@bp.get('/diagnostics')
def diagnostics(server_id):
    """What the server's host reads of its domain (admin; api.diagnostics)."""
    inst = request.get_server(server_id,
                              rule='tristate:servers:diagnostics')
    raw = request.services().client.get_diagnostics(request.context(),
                                                    inst['uuid'])
    return diagnostics_view.body(raw, inst, request.version())


# --- topology --------------------------------------------------------------------

@bp.get('/topology')
def topology(server_id):
    """The guest's NUMA cells, as Nova's 2.78 answers them (see the
    module docstring: no host node, no pinning)."""
    if request.version() < TOPOLOGY:
        raise exception.NotFound('The resource could not be found.')
    inst = request.get_server(server_id, rule='tristate:servers:topology')
    host_info = request.allows('tristate:servers:topology:host_info',
                               {'project_id': inst['project_id']})
    cells = [(cell, numa.parse_cpus(cell['cpus']))
             for cell in inst.get('numa_cells') or ()]
    listed = sum(high - low + 1 for _, ranges in cells
                 for low, high in ranges)
    if listed > numa.MAX_VCPUS:
        # cells stored before create bounded them (common/numa.py): the
        # list would hold every one of up to 2**31 vCPUs
        raise exception.Conflict(
            'Server %s has NUMA cells of %d vCPUs, more than a guest with '
            'cells has (%d): its topology is not listed'
            % (inst['uuid'], listed, numa.MAX_VCPUS))
    nodes = []
    for cell, ranges in cells:
        node = {'vcpu_set': [cpu for low, high in ranges
                             for cpu in range(low, high + 1)],
                'memory_mb': cell['memory_mb'], 'siblings': []}
        if host_info:
            node['cpu_pinning'] = {}
        nodes.append(node)
    return {'nodes': nodes, 'pagesize_kb': None}

"""``/limits`` and ``/os-quota-class-sets``, with Nova's bodies at every
microversion.

    GET /v2.1/limits[?tenant_id=]          {"limits": {"rate": [], "absolute": {}}}
    GET /v2.1/os-quota-class-sets/{class}  (admin) {"quota_class_set": {...}}
    PUT /v2.1/os-quota-class-sets/{class}  (admin) {"quota_class_set": {...}}

The absolute limits of instances, cores and RAM are the project's quota
(os-quota-sets) and what it uses; Nova's other limits are those of the
``default`` quota class: key pairs (per user, over ``[quota] key_pairs``)
are enforced, the others (server groups, metadata items, ...) nothing
enforces yet, with nothing used. Nova drops some keys at
2.36 (network proxies), 2.39 (image metadata) and 2.57 (personality
files); from 2.101 the disk quota is shown as ``tristate:maxTotalDisk``
and ``tristate:totalDiskUsed`` (GiB).
"""

import flask

from api import microversion
from api import request
from api import schemas
from common import exception
from common.db import quota_classes
from common.db import quotas

bp = flask.Blueprint('limits', __name__, url_prefix='/v2.1')

V = microversion.APIVersion
NO_NETWORK_PROXIES = V(2, 36)
NO_IMAGE_META = V(2, 39)
SERVER_GROUP_CLASSES = V(2, 50)
NO_PERSONALITY = V(2, 57)
STRICT_QUERY = V(2, 75)

# Nova's absolute limits: the quota each shows (views/limits.py's names).
_ABSOLUTE = (
    ('maxTotalRAMSize', 'ram'), ('maxTotalInstances', 'instances'),
    ('maxTotalCores', 'cores'), ('maxTotalKeypairs', 'key_pairs'),
    ('maxTotalFloatingIps', 'floating_ips'),
    ('maxServerMeta', 'metadata_items'), ('maxImageMeta', 'metadata_items'),
    ('maxPersonality', 'injected_files'),
    ('maxPersonalitySize', 'injected_file_content_bytes'),
    ('maxSecurityGroups', 'security_groups'),
    ('maxSecurityGroupRules', 'security_group_rules'),
    ('maxServerGroups', 'server_groups'),
    ('maxServerGroupMembers', 'server_group_members'))
_USED = (('totalRAMUsed', 'ram'), ('totalCoresUsed', 'cores'),
         ('totalInstancesUsed', 'instances'),
         ('totalFloatingIpsUsed', 'floating_ips'),
         ('totalSecurityGroupsUsed', 'security_groups'),
         ('totalServerGroupsUsed', 'server_groups'))
_NETWORK_PROXIES = ('floating_ips', 'security_groups', 'security_group_rules')
_PERSONALITY = ('injected_files', 'injected_file_content_bytes')


def _filtered(version):
    """The quotas Nova leaves out of /limits at ``version``."""
    dropped = set()
    if version >= NO_NETWORK_PROXIES:
        dropped.update(_NETWORK_PROXIES)
    if version >= NO_PERSONALITY:
        dropped.update(_PERSONALITY)
    return dropped


def _settings():
    return quotas.Settings.from_conf(request.services().conf)


def _statedb():
    return request.services().client.statedb


def absolute(limits, usage, version):
    """Nova's ``absolute`` dict from {quota: limit} and {quota: used}."""
    dropped = _filtered(version)
    body = {name: limits[quota] for name, quota in _ABSOLUTE
            if quota not in dropped}
    if version >= NO_IMAGE_META:
        del body['maxImageMeta']
    body.update((name, usage.get(quota, 0)) for name, quota in _USED
                if quota not in dropped)
    if version >= microversion.PENDING:
        body['tristate:maxTotalDisk'] = limits['disk']
        body['tristate:totalDiskUsed'] = usage.get('disk', 0)
    return body


@bp.get('/limits')
def limits():
    request.authorize('tristate:limits')
    args = flask.request.args
    version = request.version()
    unknown = sorted(k for k in args if k != 'tenant_id')
    if unknown and version >= STRICT_QUERY:
        raise exception.Invalid(
            'Invalid input for query parameters %s. Additional properties '
            'are not allowed (%s unexpected)' % (unknown[0], ', '.join(
                repr(k) for k in unknown)))
    ctx = request.context()
    project_id = ctx.project_id
    if 'tenant_id' in args:
        project_id = args['tenant_id']
        request.authorize('tristate:limits:other_project')
    found = request.services().client.get_quotas(ctx, project_id)
    nova = _statedb().get_quota_class(quota_classes.DEFAULT, _settings())
    values = dict(nova, **found['limits'])
    usage = dict(found['usage'],
                 **_statedb().server_groups_in_use(project_id))
    return {'limits': {'rate': [],
                       'absolute': absolute(values, usage, version)}}


# --- quota classes ----------------------------------------------------------------

_BEFORE_2_50 = ('fixed_ips', 'floating_ips', 'security_groups',
                'security_group_rules')
_FROM_2_50 = ('server_groups', 'server_group_members')
_BEFORE_2_57 = ('injected_files', 'injected_file_content_bytes',
                'injected_file_path_bytes')
_ALWAYS = ('instances', 'cores', 'ram', 'metadata_items', 'key_pairs')


def class_resources(version):
    """The quotas a quota class set has at ``version`` (Nova's, and
    Tristate's own from 2.101)."""
    names = list(_ALWAYS)
    names += _FROM_2_50 if version >= SERVER_GROUP_CLASSES else _BEFORE_2_50
    if version < NO_PERSONALITY:
        names += _BEFORE_2_57
    if version >= microversion.PENDING:
        names += [r for r in quotas.LIMITS if r not in names]
    return names


_LIMIT = {'type': ['integer', 'string'], 'pattern': '^-?[0-9]+$',
          'minimum': -1, 'maximum': 2 ** 31 - 1,
          'maxLength': schemas.INT_TEXT}


def _update_schema(version):
    return {'type': 'object',
            'properties': {'quota_class_set': {
                'type': 'object',
                'properties': {r: _LIMIT for r in class_resources(version)},
                'additionalProperties': False}},
            'required': ['quota_class_set'], 'additionalProperties': False}


def _class_body(values, version, class_name=None):
    body = {'id': class_name} if class_name is not None else {}
    body.update((r, values[r]) for r in class_resources(version))
    return {'quota_class_set': body}


@bp.get('/os-quota-class-sets/<class_name>')
def quota_class(class_name):
    request.authorize('tristate:quota_classes')
    values = _statedb().get_quota_class(class_name, _settings())
    return _class_body(values, request.version(), class_name)


@bp.put('/os-quota-class-sets/<class_name>')
def update_quota_class(class_name):
    version = request.version()
    body = request.json_body(_update_schema(version))['quota_class_set']
    request.authorize('tristate:quota_classes')
    if len(class_name) > 255:
        raise exception.Invalid('quota_class_name has a maximum length of 255')
    values = _statedb().set_quota_class(
        class_name, {r: int(v) for r, v in body.items()}, _settings())
    return _class_body(values, version)

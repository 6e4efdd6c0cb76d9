"""``/flavors``, ``/flavors/{id}/os-extra_specs`` and
``/flavors/{id}/os-flavor-access``, as Nova answers them.

    GET    /flavors[/detail]   ?is_public= minRam= minDisk= sort_key=
                               sort_dir= limit= marker=
    GET    /flavors/{id}
    POST   /flavors                          (admin) {"flavor": {...}}
    PUT    /flavors/{id}                     (admin, from 2.55) the description
    DELETE /flavors/{id}                     (admin) 202
    GET    /flavors/{id}/os-extra_specs[/{key}]
    POST   /flavors/{id}/os-extra_specs      (admin) {"extra_specs": {...}}
    PUT    /flavors/{id}/os-extra_specs/{key} (admin) {key: value}
    DELETE /flavors/{id}/os-extra_specs/{key} (admin)
    GET    /flavors/{id}/os-flavor-access    (admin) private flavors only
    POST   /flavors/{id}/action              (admin) addTenantAccess,
                                             removeTenantAccess

The flavors are the database's (:mod:`common.db.flavors`), the configured
ones seeded there. Extra specs are stored and shown. In the namespaces
Nova acts on (``hw:``, ``quota:``, ``resources:``, ...) only the values
Tristate honours are accepted (:data:`HONOURED_SPECS`), at every
microversion; keys in any other namespace are stored, as Nova stores them
(its validation, 2.86, lets unknown namespaces through).
"""

import copy
import re
import urllib.parse
import uuid as uuidlib

import flask
from oslo_utils import strutils

from api import microversion
from api import request
from api import schemas
from api import views
from common import exception
from common import flavors as flavors_mod
from common import numa
from common.db import flavors as flavors_db

bp = flask.Blueprint('flavors', __name__, url_prefix='/v2.1')

V = microversion.APIVersion
DESCRIPTION = V(2, 55)
STRICT_QUERY = V(2, 75)
PUBLIC_ADD_CONFLICT = V(2, 7)
MAX_INT = 2 ** 31 - 1

_POSITIVE = {'type': ['integer', 'string'], 'pattern': '^[0-9]+$',
             'minimum': 1, 'maximum': MAX_INT, 'maxLength': schemas.INT_TEXT}
_NON_NEGATIVE = dict(_POSITIVE, minimum=0)
_SWAP = dict(_NON_NEGATIVE, pattern='^[0-9]*$')
_DESCRIPTION = {'type': ['string', 'null'], 'minLength': 0,
                'maxLength': 65535, 'format': schemas.PRINTABLE}
_FLAVOR = {
    'type': 'object',
    'properties': {
        'name': schemas.NAME,
        'id': {'type': ['string', 'number', 'null'], 'minLength': 1,
               'maxLength': 255,
               'pattern': r'^(?! )[a-zA-Z0-9. _-]+(?<! )$'},
        'ram': _POSITIVE, 'vcpus': _POSITIVE, 'disk': _NON_NEGATIVE,
        'OS-FLV-EXT-DATA:ephemeral': _NON_NEGATIVE, 'swap': _SWAP,
        'rxtx_factor': {'type': ['number', 'string'],
                        'pattern': r'^[0-9]+(\.[0-9]+)?$',
                        'exclusiveMinimum': 0, 'maximum': 3.40282e+38},
        'os-flavor-access:is_public': {'enum': [
            True, 'True', 'TRUE', 'true', '1', 'ON', 'On', 'on', 'YES', 'Yes',
            'yes', False, 'False', 'FALSE', 'false', '0', 'OFF', 'Off', 'off',
            'NO', 'No', 'no']},
    },
    'required': ['name', 'ram', 'vcpus', 'disk'],
    'additionalProperties': False,
}
CREATE = {'type': 'object', 'properties': {'flavor': _FLAVOR},
          'required': ['flavor'], 'additionalProperties': False}
CREATE_V255 = copy.deepcopy(CREATE)
CREATE_V255['properties']['flavor']['properties']['description'] = (
    _DESCRIPTION)
UPDATE = {'type': 'object',
          'properties': {'flavor': {
              'type': 'object', 'properties': {'description': _DESCRIPTION},
              'required': ['description'], 'additionalProperties': False}},
          'required': ['flavor'], 'additionalProperties': False}

_SPEC_KEY = '^[a-zA-Z0-9-_:. ]{1,255}$'
_SPECS = {'type': 'object',
          'patternProperties': {_SPEC_KEY: {
              'type': ['string', 'number'], 'maxLength': 255,
              'format': schemas.PRINTABLE}},
          'additionalProperties': False}
CREATE_SPECS = {'type': 'object', 'properties': {'extra_specs': _SPECS},
                'required': ['extra_specs'], 'additionalProperties': False}
UPDATE_SPEC = dict(_SPECS, minProperties=1, maxProperties=1)
_TENANT = {'type': 'object',
           'properties': {'tenant': {'type': 'string', 'minLength': 1,
                                     'maxLength': 255,
                                     'format': schemas.PRINTABLE}},
           'required': ['tenant'], 'additionalProperties': False}
ACTION = {'type': 'object',
          'properties': {'addTenantAccess': _TENANT,
                         'removeTenantAccess': _TENANT},
          'minProperties': 1, 'maxProperties': 1,
          'additionalProperties': False}

_LIST_PARAMS = ('limit', 'marker', 'is_public', 'minRam', 'minDisk',
                'sort_key', 'sort_dir')


def _db():
    found = request.services()
    return flavors_mod.seeded(found.conf, found.client.statedb)


# --- the catalogue ---------------------------------------------------------------

def _is_public(value):
    """Nova's is_public query: none (all), or a boolean (default true)."""
    if value is None:
        return True
    if value.lower() == 'none':
        return None
    try:
        return strutils.bool_from_string(value, strict=True)
    except ValueError:
        raise exception.Invalid('Invalid is_public filter [%s]'
                                % value) from None


def _int_param(args, name, message, minimum=0):
    value = args.get(name)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise exception.Invalid(message % value) from None
    if number < minimum:
        raise exception.Invalid(message % value)
    return number


def _choice(args, name, choices, default):
    value = args.get(name, default)
    if value not in choices:
        raise exception.Invalid(
            'Invalid input for query parameters %s. Value: %s. %r is not '
            'one of %s' % (name, value, value, sorted(choices)))
    return value


def _list_query():
    args = flask.request.args
    unknown = sorted(k for k in args if k not in _LIST_PARAMS)
    if unknown and request.version() >= STRICT_QUERY:
        raise exception.Invalid(
            'Invalid input for query parameters %s. Additional properties '
            'are not allowed (%s unexpected)' % (unknown[0], ', '.join(
                repr(k) for k in unknown)))
    ctx = request.context()
    is_public = _is_public(args.get('is_public')) if ctx.is_admin else True
    return {
        'project_id': ctx.project_id, 'is_public': is_public,
        'min_ram': _int_param(args, 'minRam', 'Invalid minRam filter [%s]'),
        'min_disk': _int_param(args, 'minDisk',
                               'Invalid minDisk filter [%s]'),
        'limit': _int_param(
            args, 'limit', 'Invalid input for query parameters limit. '
            'Value: %s. It must be a non-negative integer'),
        'marker': args.get('marker'),
        'sort_key': _choice(args, 'sort_key', flavors_db.SORT_KEYS,
                            'flavorid'),
        'sort_dir': _choice(args, 'sort_dir', ('asc', 'desc'), 'asc'),
    }


def _flavors(detail):
    request.authorize('tristate:flavors:index')
    query = _list_query()
    max_limit = request.services().conf.api.max_limit
    query['limit'] = min(query['limit'] if query['limit'] is not None
                         else max_limit, max_limit)
    rows = _db().list_flavors(**query)
    links = request.links()
    version = request.version()
    out = {'flavors': [views.flavor(f, links, detail=detail, version=version)
                       for f in rows]}
    if rows and len(rows) == query['limit']:
        href = links.href('flavors/detail' if detail else 'flavors')
        args = dict(flask.request.args, marker=rows[-1]['flavorid'])
        out['flavors_links'] = [{'rel': 'next', 'href': '%s?%s' % (
            href, urllib.parse.urlencode(sorted(args.items())))}]
    return out


@bp.get('/flavors')
def flavors():
    return _flavors(detail=False)


@bp.get('/flavors/detail')
def flavors_detail():
    return _flavors(detail=True)


@bp.get('/flavors/<flavor_id>')
def flavor(flavor_id):
    request.authorize('tristate:flavors:index')
    return {'flavor': views.flavor(_db().get_flavor(flavor_id),
                                   request.links(),
                                   version=request.version())}


# --- managing flavors (admin) ----------------------------------------------------

def _bool(value):
    if isinstance(value, bool):
        return value
    return strutils.bool_from_string(value, strict=True)


@bp.post('/flavors')
def create():
    version = request.version()
    body = request.json_body(CREATE_V255 if version >= DESCRIPTION
                             else CREATE)['flavor']     # first, as Nova
    request.authorize('tristate:flavors:manage')
    flavorid = body.get('id')
    flavorid = str(uuidlib.uuid4()) if flavorid is None else str(flavorid)
    swap = body.get('swap') or 0
    found = _db().create_flavor(
        flavorid=flavorid, name=body['name'], vcpus=int(body['vcpus']),
        memory_mb=int(body['ram']), disk_gb=int(body['disk']),
        swap=int(swap),
        ephemeral_gb=int(body.get('OS-FLV-EXT-DATA:ephemeral') or 0),
        rxtx_factor=float(body.get('rxtx_factor', 1.0)),
        is_public=_bool(body.get('os-flavor-access:is_public', True)),
        description=body.get('description'))
    return {'flavor': views.flavor(found, request.links(),
                                   version=request.version())}


@bp.put('/flavors/<flavor_id>')
def update(flavor_id):
    if request.version() < DESCRIPTION:
        raise exception.NotFound('The resource could not be found.')
    body = request.json_body(UPDATE)['flavor']
    request.authorize('tristate:flavors:manage')
    found = _db().update_flavor_description(flavor_id, body['description'])
    return {'flavor': views.flavor(found, request.links(),
                                   version=request.version())}


@bp.delete('/flavors/<flavor_id>')
def delete(flavor_id):
    request.authorize('tristate:flavors:manage')
    _db().delete_flavor(flavor_id)
    return request.no_content(202)


# --- extra specs ------------------------------------------------------------------

# The extra specs Tristate honours: ``hw:cpu_policy=shared`` (what every
# guest gets anyway: no CPU pinning), and the guest NUMA cells
# (``hw:numa_nodes``, ``hw:numa_cpus.N``, ``hw:numa_mem.N``: common/numa.py,
# whose values are checked there as Nova's validators check them).
HONOURED_SPECS = {'hw:cpu_policy': ('shared',)}
# The namespaces Nova's scheduler and drivers act on (Nova's validators,
# ``nova.api.validation.extra_specs``), and the two unscoped keys it knows:
# a key there that Tristate does not honour would be stored and ignored,
# a lie to the client, so it is refused at every microversion. A key in
# any other namespace, or with none, is stored and shown, as Nova does: no
# Nova service acts on those either (Tristate's scheduler runs no
# ComputeCapabilitiesFilter or AggregateInstanceExtraSpecsFilter).
KNOWN_NAMESPACES = re.compile(
    r'(accel|aggregate_instance_extra_specs|capabilities|hw|hw_rng|'
    r'hw_video|os|pci_passthrough|quota|vmware|'
    r'resources(\d+|_[a-z0-9_]+)?|trait(\d+|_[a-z0-9_]+)?)')
KNOWN_UNSCOPED = ('group_policy', 'hide_hypervisor_id')


def acted_on(key):
    """Whether ``key`` is one Nova's services would act on."""
    if ':' not in key:
        return key in KNOWN_UNSCOPED
    return KNOWN_NAMESPACES.fullmatch(key.split(':', 1)[0]) is not None


def _spec_values(specs):
    values = {key: str(value) for key, value in specs.items()}
    for key, value in sorted(values.items()):
        if numa.is_numa_key(key):
            numa.check_spec(key, value)
        elif acted_on(key) and value not in HONOURED_SPECS.get(key, ()):
            raise exception.Invalid(
                'Invalid input for field/attribute extra_specs.%s. Value: '
                '%s. Not supported: of the extra specs Nova acts on, '
                'Tristate honours only %s (keys in other namespaces are '
                'stored, and nothing acts on them)' % (key, value, ', '.join(
                    '%s=%s' % (k, v[0])
                    for k, v in sorted(HONOURED_SPECS.items())) + (
                        ', hw:numa_nodes, hw:numa_cpus.N and hw:numa_mem.N')))
    return values


@bp.get('/flavors/<flavor_id>/os-extra_specs')
def extra_specs(flavor_id):
    request.authorize('tristate:flavors:extra_specs:index')
    return {'extra_specs': _db().get_flavor(flavor_id)['extra_specs']}


@bp.get('/flavors/<flavor_id>/os-extra_specs/<key>')
def extra_spec(flavor_id, key):
    request.authorize('tristate:flavors:extra_specs:index')
    specs = _db().get_flavor(flavor_id)['extra_specs']
    if key not in specs:
        raise exception.NotFound('Flavor %s has no extra specs with key %s.'
                                 % (flavor_id, key))
    return {key: specs[key]}


@bp.post('/flavors/<flavor_id>/os-extra_specs')
def create_extra_specs(flavor_id):
    body = request.json_body(CREATE_SPECS)
    request.authorize('tristate:flavors:extra_specs:manage')
    _db().set_extra_specs(flavor_id, _spec_values(body['extra_specs']))
    return body


@bp.put('/flavors/<flavor_id>/os-extra_specs/<key>')
def update_extra_spec(flavor_id, key):
    body = request.json_body(UPDATE_SPEC)
    request.authorize('tristate:flavors:extra_specs:manage')
    if key not in body:
        raise exception.Invalid('Request body and URI mismatch')
    _db().set_extra_specs(flavor_id, _spec_values(body))
    return body


@bp.delete('/flavors/<flavor_id>/os-extra_specs/<key>')
def delete_extra_spec(flavor_id, key):
    request.authorize('tristate:flavors:extra_specs:manage')
    _db().delete_extra_spec(flavor_id, key)
    return request.no_content(200)


# --- access to private flavors -------------------------------------------------------

def _access(flv):
    return {'flavor_access': [{'flavor_id': flv['flavorid'],
                               'tenant_id': project}
                              for project in flv['projects']]}


@bp.get('/flavors/<flavor_id>/os-flavor-access')
def flavor_access(flavor_id):
    request.authorize('tristate:flavors:access')
    flv = _db().get_flavor(flavor_id, projects=True)
    if flv['is_public']:
        raise exception.NotFound('Access list not available for public '
                                 'flavors.')
    return _access(flv)


@bp.post('/flavors/<flavor_id>/action')
def action(flavor_id):
    body = request.json_body(ACTION)
    request.authorize('tristate:flavors:access')
    db = _db()
    if 'addTenantAccess' in body:
        tenant = body['addTenantAccess']['tenant']
        flv = db.get_flavor(flavor_id)
        if flv['is_public'] and request.version() >= PUBLIC_ADD_CONFLICT:
            raise exception.Conflict('Can not add access to a public '
                                     'flavor.')
        return _access(db.add_flavor_access(flavor_id, tenant))
    tenant = body['removeTenantAccess']['tenant']
    return _access(db.remove_flavor_access(flavor_id, tenant))

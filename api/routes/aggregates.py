"""``/v2.1/os-aggregates``: Nova's host aggregates, admin only.

    GET    /os-aggregates                 {"aggregates": [...]}
    POST   /os-aggregates                 {"aggregate": {"name", "availability_zone"}}
    GET    /os-aggregates/{id}
    PUT    /os-aggregates/{id}            name and/or availability_zone
    DELETE /os-aggregates/{id}            200, empty (400 while it has hosts)
    POST   /os-aggregates/{id}/action     add_host, remove_host, set_metadata
    POST   /os-aggregates/{id}/images     2.81: refused, not supported

Answered as Nova: 200 everywhere (Nova keeps its v2.0 codes), ``uuid``
from 2.41, the aggregate's ``availability_zone`` its metadata's, the
create's answer without ``hosts`` and ``metadata``; a non-integer id is a
400, an unknown aggregate or host a 404, a taken name a 409; a refused
zone change a 400 (update, set_metadata) or 409 (add_host, remove_host).
The rules themselves (one zone per host, no zone change under running
instances) are :mod:`common.db.aggregates`'.
"""

import flask

from api import microversion
from api import request
from api import schemas
from common import exception

bp = flask.Blueprint('aggregates', __name__, url_prefix='/v2.1/os-aggregates')
RULE = 'tristate:aggregates'
V = microversion.APIVersion
UUIDS = V(2, 41)
CACHE_IMAGES = V(2, 81)

# Nova's zone name: a name without ':'.
AZ_NAME = {'allOf': [schemas.NAME, {'type': 'string', 'pattern': '^[^:]*$'}]}
_ZONE = {'oneOf': [AZ_NAME, {'type': 'null'}]}
_FQDN = {'type': 'string', 'pattern': '^[a-zA-Z0-9-._]*$', 'minLength': 1,
         'maxLength': 255}
_METADATA = {'type': 'object',
             'patternProperties': {schemas.METADATA_KEY: {
                 'type': ['string', 'null'], 'maxLength': 255}},
             'additionalProperties': False}
CREATE = schemas._object(['aggregate'], aggregate=schemas._object(
    ['name'], name=schemas.NAME, availability_zone=_ZONE))
UPDATE = schemas._object(['aggregate'], aggregate=dict(
    schemas._object(name=schemas.NAME, availability_zone=_ZONE),
    anyOf=[{'required': ['name']}, {'required': ['availability_zone']}]))
_ACTIONS = {
    'add_host': schemas._object(['host'], host=_FQDN),
    'remove_host': schemas._object(['host'], host=_FQDN),
    'set_metadata': schemas._object(['metadata'], metadata=_METADATA),
}
CACHE = schemas._object(['cache'], cache={
    'type': 'array', 'minItems': 1,
    'items': schemas._object(['id'], id={'type': 'string',
                                         'format': 'uuid'})})


def _statedb():
    return request.services().client.statedb


def _stamp(value):
    """Nova's aggregate times: naive ISO with microseconds."""
    return None if value is None else value.strftime('%Y-%m-%dT%H:%M:%S.%f')


def shown(found, *, created=False):
    """An aggregate's body at this request's microversion."""
    body = {'id': found['id'], 'name': found['name'],
            'availability_zone': found['availability_zone'],
            'created_at': _stamp(found['created_at']),
            'updated_at': _stamp(found['updated_at']),
            'deleted_at': None, 'deleted': False}
    if not created:
        body['hosts'] = found['hosts']
        body['metadata'] = found['metadata']
    if request.version() >= UUIDS:
        body['uuid'] = found['uuid']
    return body


def _ident(aggregate_id):
    try:
        return int(aggregate_id)
    except ValueError:
        raise exception.Invalid('Invalid input received: id must be an '
                                'integer') from None


@bp.get('', strict_slashes=False)
def index():
    request.authorize(RULE)
    return {'aggregates': [shown(a) for a in _statedb().list_aggregates()]}


@bp.post('', strict_slashes=False)
def create():
    body = request.json_body(CREATE)['aggregate']
    request.authorize(RULE)
    found = _statedb().create_aggregate(body['name'],
                                        body.get('availability_zone'))
    return {'aggregate': shown(found, created=True)}


@bp.get('/<aggregate_id>')
def show(aggregate_id):
    request.authorize(RULE)
    return {'aggregate': shown(_statedb().get_aggregate(_ident(aggregate_id)))}


@bp.put('/<aggregate_id>')
def update(aggregate_id):
    body = request.json_body(UPDATE)['aggregate']
    request.authorize(RULE)
    found = _statedb().update_aggregate(_ident(aggregate_id), body)
    return {'aggregate': shown(found)}


@bp.delete('/<aggregate_id>')
def delete(aggregate_id):
    request.authorize(RULE)
    _statedb().delete_aggregate(_ident(aggregate_id))
    return request.no_content(200)


@bp.post('/<aggregate_id>/action')
def action(aggregate_id):
    body = request.json_body({'type': 'object'})
    if len(body) != 1 or next(iter(body)) not in _ACTIONS:
        raise exception.Invalid(
            'The action body must have exactly one key, one of %s'
            % ', '.join(sorted(_ACTIONS)))
    name, args = next(iter(body.items()))
    args = request.json_body(schemas._object([name], **{
        name: _ACTIONS[name]}))[name]
    request.authorize(RULE)
    ident, db = _ident(aggregate_id), _statedb()
    if name == 'add_host':
        found = db.aggregate_add_host(ident, args['host'])
    elif name == 'remove_host':
        found = _remove_host(db, ident, args['host'])
    else:
        found = db.set_aggregate_metadata(ident, args['metadata'])
    return {'aggregate': shown(found)}


def _remove_host(db, ident, host):
    try:
        return db.aggregate_remove_host(ident, host)
    except exception.NotFound:
        raise exception.NotFound('Cannot remove host %s in aggregate %s'
                                 % (host, ident)) from None


@bp.post('/<aggregate_id>/images')
def cache_images(aggregate_id):
    if request.version() < CACHE_IMAGES:
        raise exception.NotFound('The resource could not be found.')
    request.json_body(CACHE)
    request.authorize(RULE)
    _statedb().get_aggregate(_ident(aggregate_id))
    raise exception.Invalid(
        'Invalid input for field/attribute cache. Not supported: Tristate '
        'does not pre-cache images on an aggregate\'s hosts (an image is '
        'fetched by a host\'s first build from it).')

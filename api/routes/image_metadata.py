"""Nova's image metadata API: ``/v2.1/images/{id}/metadata`` and
``/metadata/{key}``, over the image catalogue's properties (what Glance v2
calls an image's extra properties). Nova deprecated it with the image
proxy, at microversion 2.39: from there these paths answer 404.

As Nova: ``POST`` merges into the properties, ``PUT`` on the collection
replaces them all, ``PUT`` on a key sets one (the body names the same key
as the URI, else 400), ``DELETE`` of a key that is not there is 404. A
key the image API keeps for itself (``location``, ``os_glance*``, or a
read-only attribute such as ``checksum``) is refused with 403, as the
image API refuses it. Only the image's owner (or an admin) changes it.
"""

import flask

from api import microversion
from api import request
from api.image import images as image_api
from api.routes import images as proxy
from common import exception
from common.db import images as images_db

bp = flask.Blueprint('image_metadata', __name__, url_prefix='/v2.1')

DEPRECATED = microversion.APIVersion(2, 39)
# Nova's keys and values (its ``metadata`` parameter type).
_PROPERTIES = {'type': 'object', 'additionalProperties': False,
               'patternProperties': {'^[a-zA-Z0-9-_:. ]{1,255}$': {
                   'type': 'string', 'maxLength': 255}}}
METADATA = {'type': 'object', 'required': ['metadata'],
            'additionalProperties': False,
            'properties': {'metadata': _PROPERTIES}}
META = {'type': 'object', 'required': ['meta'], 'additionalProperties': False,
        'properties': {'meta': dict(_PROPERTIES, minProperties=1,
                                    maxProperties=1)}}


def _statedb():
    if request.version() >= DEPRECATED:
        raise exception.NotFound('The image metadata API is deprecated from '
                                 'microversion 2.39: use the image service '
                                 '(Glance v2) instead.')
    return proxy._catalogue()


def _image(statedb, image_id):
    return images_db.get(statedb, request.context(), image_id)


def _check_key(key):
    """The image API's rule (its 403s), in the compute API's errors."""
    if key in image_api.RESERVED or key.startswith(image_api.RESERVED_PREFIX):
        raise exception.Forbidden("Attribute '%s' is reserved." % key)
    if key in image_api.READ_ONLY:
        raise exception.Forbidden("Attribute '%s' is read-only." % key)


def _set(statedb, image_id, properties, *, replace=False):
    for key in properties:
        _check_key(key)
    image = images_db.update(statedb, request.context(), image_id,
                             properties=properties,
                             replace_properties=replace)
    return image['properties']


@bp.get('/images/<image_id>/metadata')
def index(image_id):
    return {'metadata': _image(_statedb(), image_id)['properties']}


@bp.post('/images/<image_id>/metadata')
def update_all(image_id):
    statedb = _statedb()
    body = request.json_body(METADATA)
    return {'metadata': _set(statedb, image_id, body['metadata'])}


@bp.put('/images/<image_id>/metadata')
def replace_all(image_id):
    statedb = _statedb()
    body = request.json_body(METADATA)
    return {'metadata': _set(statedb, image_id, body['metadata'],
                             replace=True)}


@bp.get('/images/<image_id>/metadata/<key>')
def show(image_id, key):
    properties = _image(_statedb(), image_id)['properties']
    if key not in properties:
        raise exception.NotFound('Image %s has no metadata item %s'
                                 % (image_id, key))
    return {'meta': {key: properties[key]}}


@bp.put('/images/<image_id>/metadata/<key>')
def update(image_id, key):
    statedb = _statedb()
    body = request.json_body(META)
    if key not in body['meta']:
        raise exception.Invalid('Request body and URI mismatch')
    properties = _set(statedb, image_id, body['meta'])
    return {'meta': {key: properties[key]}}


@bp.delete('/images/<image_id>/metadata/<key>')
def delete(image_id, key):
    statedb = _statedb()
    properties = _image(statedb, image_id)['properties']
    if key not in properties:
        raise exception.NotFound('Image %s has no metadata item %s'
                                 % (image_id, key))
    try:
        images_db.update(statedb, request.context(), image_id, remove=[key])
    except exception.Conflict:      # removed meanwhile
        raise exception.NotFound('Image %s has no metadata item %s'
                                 % (image_id, key)) from None
    return request.no_content()

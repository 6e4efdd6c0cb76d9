"""Glance v2's image records: version discovery, schemas, create, list,
show, PATCH, delete, tags and the (always empty) tasks of an image (the
data is :mod:`api.image.data`).

Bodies are checked as Glance checks them: read-only attributes (``status``,
``checksum``, ``self``...) are 403 "Attribute 'X' is read-only", reserved
ones (``location``, ``deleted``, ``os_glance*``) 403 "reserved", anything
else against the image schema (400 naming the field). Formats are ours:
``disk_format`` raw or qcow2, ``container_format`` bare.
"""

import logging
import urllib.parse

import flask
from werkzeug import exceptions as http_exceptions

from api import jsonbody
from api import middleware
from api.image import access
from api.image import schemas
from api.image import views
from common import exception
from common.db import images as images_db

LOG = logging.getLogger(__name__)

bp = flask.Blueprint('images', __name__)

READ_ONLY = ('created_at', 'updated_at', 'status', 'checksum', 'size',
             'virtual_size', 'direct_url', 'self', 'file', 'schema', 'id',
             'os_hash_algo', 'os_hash_value')
DISALLOWED = ('direct_url', 'self', 'file', 'schema', 'stores')
RESERVED = ('location', 'deleted', 'deleted_at')
RESERVED_PREFIX = 'os_glance'
BASE = ('checksum', 'created_at', 'container_format', 'disk_format', 'id',
        'min_disk', 'min_ram', 'name', 'size', 'virtual_size', 'status',
        'tags', 'owner', 'updated_at', 'visibility', 'protected', 'os_hidden')
PATCH_TYPES = ('application/openstack-images-v2.0-json-patch',
               'application/openstack-images-v2.1-json-patch')
# Attributes that only a queued image may change (Glance's rule).
QUEUED_ONLY = ('disk_format', 'container_format')
MAX_TAGS = 128
MAX_INT = 2 ** 31 - 1           # min_disk, min_ram (the columns' range)
MAX_BIGINT = 2 ** 63 - 1        # sizes


def _body():
    """The JSON body, read within ``[api] max_request_body_size`` (413)
    and ``body_timeout``: the mount sends image requests past the compute
    API's limits, which only the data routes may skip."""
    data = _read_limited(access.services().conf.api)
    if not data.strip():
        raise exception.Invalid('Body expected in request.')
    return jsonbody.loads(data)


def _too_large(limit):
    return access.http_error(413, 'Request body too large: at most %d bytes '
                                  '([api] max_request_body_size)' % limit)


def _read_limited(api_conf):
    limit = api_conf.max_request_body_size
    if (flask.request.content_length or 0) > limit:
        raise _too_large(limit)
    deadline = flask.request.environ.get(middleware.BODY_DEADLINE)
    if deadline is not None:
        deadline(api_conf.body_timeout)
    parts, size = [], 0
    try:
        while size <= limit:
            part = flask.request.stream.read(limit + 1 - size)
            if not part:
                break
            parts.append(part)
            size += len(part)
    except (OSError, ValueError, http_exceptions.ClientDisconnected):
        raise _too_slow() from None
    finally:
        if deadline is not None:
            deadline(None)
    if size > limit:
        raise _too_large(limit)
    if size < (flask.request.content_length or 0):
        raise _too_slow()       # cut short: the deadline ended the read
    return b''.join(parts)


def _too_slow():
    return access.http_error(408, 'The request body did not arrive in time '
                                  '([api] body_timeout)')


def _check_key(key):
    if key in RESERVED or key.startswith(RESERVED_PREFIX):
        raise access.http_error(403, "Attribute '%s' is reserved." % key)
    if key in READ_ONLY:
        raise access.http_error(403, "Attribute '%s' is read-only." % key)
    if len(key) > 255:
        raise exception.Invalid('Custom property should not be greater than '
                                '255 characters: %s...' % key[:32])


def _check_publicize(ctx, values):
    """Only admins make an image public (Glance's default
    ``publicize_image`` rule): a project cannot put an image in every
    other project's list."""
    if values.get('visibility') == 'public' and not ctx.is_admin:
        raise access.http_error(403, 'You are not authorized to complete '
                                     'publicize_image action: only admins '
                                     'make images public (community is for '
                                     'everyone)')


def _check_numbers(values):
    for key in ('min_disk', 'min_ram'):
        value = values.get(key)
        if value is not None and not 0 <= value <= MAX_INT:
            raise exception.Invalid('%s must be a whole number from 0 to %d, '
                                    'not %d' % (key, MAX_INT, value))


# --- versions and schemas -----------------------------------------------------

@bp.get('/')
def versions():
    return flask.make_response(views.versions(access.base_url()), 300)


@bp.get('/v2')
@bp.get('/versions')
def version():
    return views.versions(access.base_url())


_SCHEMAS = {'image': schemas.image_schema, 'images': schemas.images_schema,
            'member': schemas.member_schema,
            'members': schemas.members_schema}


@bp.get('/v2/schemas/<name>')
def schema(name):
    make = _SCHEMAS.get(name)
    if make is None:
        raise exception.NotFound('No schema %s: this service has %s'
                                 % (name, ', '.join(sorted(_SCHEMAS))))
    return make()


# --- create, show, list -------------------------------------------------------

@bp.post('/v2/images')
def create():
    ctx = access.user()
    body = _body()
    if not isinstance(body, dict):
        raise exception.Invalid('Provided object does not match schema '
                                "'image': the body must be a JSON object")
    for key in DISALLOWED:
        if key in body:
            raise access.http_error(403, "Attribute '%s' is read-only." % key)
    schemas.validate(body)
    values = {'properties': {}}
    for key, value in body.items():
        if key in ('id', 'owner', 'tags') or key in images_db.USER_COLUMNS:
            values[key] = value
            continue
        _check_key(key)
        values['properties'][key] = value
    _check_numbers(values)
    _check_publicize(ctx, values)
    if len(values.get('tags') or ()) > MAX_TAGS:
        raise exception.Invalid('At most %d tags per image' % MAX_TAGS)
    image = images_db.create(access.statedb(), ctx, values)
    response = flask.make_response(views.image(image), 201)
    response.headers['Location'] = views.href(image['id'])
    return response


@bp.get('/v2/images/<image_id>')
def show(image_id):
    return views.image(access.image(image_id))


def _flag(params, key):
    value = params.pop(key, None)
    if value is None:
        return None
    if value.lower() not in ('true', 'false'):
        raise exception.Invalid("Invalid value '%s' for '%s' filter. Valid "
                                "values are 'true' or 'false'." % (value, key))
    return value.lower() == 'true'


def _whole(params, key, default=None):
    value = params.pop(key, None)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise exception.Invalid('%s param must be an integer, not %r'
                                % (key, value)) from None
    if not 0 <= number <= MAX_BIGINT:
        raise exception.Invalid('%s param must be from 0 to %d, not %d'
                                % (key, MAX_BIGINT, number))
    return number


def _sort(args, params):
    keys = [k.strip() for k in args.getlist('sort_key')]
    dirs = [d.strip() for d in args.getlist('sort_dir')]
    if 'sort' in params:
        if keys or dirs:
            raise exception.Invalid('Old and new sorting syntax cannot be '
                                    'combined')
        for item in params['sort'].split(','):
            key, _, direction = item.partition(':')
            keys.append(key.strip())
            dirs.append(direction.strip() or 'desc')
    for key in keys:
        if key not in images_db.SORT_KEYS:
            raise exception.Invalid(
                'Invalid sort key: %s. It must be one of the following: %s.'
                % (key, ', '.join(images_db.SORT_KEYS)))
    for direction in dirs:
        if direction not in ('asc', 'desc'):
            raise exception.Invalid('Invalid sort direction: %s (asc or '
                                    'desc)' % direction)
    if len(dirs) > 1 and len(dirs) != len(keys):
        raise exception.Invalid('Number of sort dirs does not match the '
                                'number of sort keys')
    keys = keys or ['created_at']
    dirs = dirs or ['desc']
    if len(dirs) == 1:
        dirs = dirs * len(keys)
    return list(zip(keys, dirs, strict=True))


def _list_args():
    args = flask.request.args
    params = {k: args.get(k) for k in args
              if k not in ('tag', 'sort_key', 'sort_dir')}
    for bad in ('changes-since', 'created_at', 'updated_at'):
        if bad in params:
            raise exception.Invalid('The "%s" filter is not available on '
                                    'this image service.' % bad)
    member_status = params.pop('member_status', 'accepted')
    if member_status not in (*images_db.MEMBER_STATUSES, 'all'):
        raise exception.Invalid('Invalid status: %s (pending, accepted, '
                                'rejected or all)' % member_status)
    visibility = params.pop('visibility', None)
    if visibility is not None and visibility not in (
            *images_db.VISIBILITIES, 'all'):
        raise exception.Invalid('Invalid visibility value: %s' % visibility)
    sort = _sort(args, params)
    params.pop('sort', None)
    kwargs = {'member_status': member_status, 'visibility': visibility,
              'sort': sort, 'tags': [t.strip() for t in args.getlist('tag')],
              'limit': _whole(params, 'limit', images_db.DEFAULT_LIMIT),
              'marker': params.pop('marker', None)}
    filters = {key: params.pop(key) for key in images_db.LIST_FILTERS
               if key in params}
    for key in ('protected', 'os_hidden'):
        filters[key] = _flag(params, key)
    for key in ('size_min', 'size_max'):
        filters[key] = _whole(params, key)
    filters['properties'] = params          # any other key
    kwargs['filters'] = filters
    return kwargs


@bp.get('/v2/images')
def index():
    ctx = access.user()
    kwargs = _list_args()
    rows = images_db.list_images(access.statedb(), ctx, **kwargs)
    params = [(k, v) for k, v in flask.request.args.items(multi=True)
              if k != 'marker']
    body = {'images': [views.image(r) for r in rows],
            'first': '/v2/images', 'schema': '/v2/schemas/images'}
    if params:
        body['first'] += '?' + urllib.parse.urlencode(params)
    if rows and len(rows) == kwargs['limit']:
        body['next'] = '/v2/images?' + urllib.parse.urlencode(
            params + [('marker', rows[-1]['id'])])
    return body


# --- PATCH ----------------------------------------------------------------------

def _pointer(path):
    if not isinstance(path, str) or not path.startswith('/'):
        raise exception.Invalid('Pointer `%s` does not start with "/".'
                                % (path,))
    parts = [p.replace('~1', '/').replace('~0', '~')
             for p in path[1:].split('/')]
    if len(parts) != 1 or not parts[0].strip():
        raise exception.Invalid("Invalid JSON pointer for this resource: "
                                "'%s'" % path)
    return parts[0]


def _operations(body, draft):
    if not isinstance(body, list):
        raise exception.Invalid('Request body must be a JSON array of '
                                'operation objects.')
    for raw in body:
        if not isinstance(raw, dict):
            raise exception.Invalid('Operations must be JSON objects.')
        if draft == 4:
            found = [op for op in ('add', 'remove', 'replace') if op in raw]
            if len(found) != 1:
                raise exception.Invalid('Operation objects must contain '
                                        'exactly one member named "add", '
                                        '"remove", or "replace".')
            op, path = found[0], raw[found[0]]
        else:
            op, path = raw.get('op'), raw.get('path')
            if op not in ('add', 'remove', 'replace'):
                raise exception.Invalid(
                    'Invalid operation: `%s`. It must be one of the '
                    'following: add, remove, replace.' % (op,))
            if path is None:
                raise exception.Invalid("Unable to find 'path' in JSON "
                                        "Schema change")
        key = _pointer(path)
        if op != 'remove' and 'value' not in raw:
            raise exception.Invalid('Operation "%s" requires a member named '
                                    '"value".' % op)
        yield op, key, raw.get('value')


class _Changes:
    """What a PATCH asks, gathered and checked before anything is written."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.values, self.properties, self.remove = {}, {}, []
        self.tags = None

    def apply(self, op, key, value):
        _check_key(key)
        if op == 'remove':
            if key in BASE:
                raise access.http_error(403, 'Property %s may not be '
                                             'removed.' % key)
            self.properties.pop(key, None)
            self.remove.append(key)
            return
        schemas.validate({key: value})
        if key == 'owner' and not self.ctx.is_admin:
            raise access.http_error(403, "Owner can't be updated by non "
                                         "admin.")
        if key == 'tags':
            if len(value) > MAX_TAGS:
                raise exception.Invalid('At most %d tags per image'
                                        % MAX_TAGS)
            self.tags = value
        elif key in BASE:
            self.values[key] = value
            _check_publicize(self.ctx, self.values)
        else:
            self.properties[key] = (op, value)

    def check(self, image):
        for key in QUEUED_ONLY:
            if key in self.values and self.values[key] != image[key] and (
                    image['status'] != images_db.QUEUED):
                raise access.http_error(403, 'Attribute %s can be only '
                                             'replaced for a queued image.'
                                        % key)
        for key, (op, _) in self.properties.items():
            if op == 'replace' and key not in image['properties']:
                raise exception.Conflict('Property %s does not exist.' % key)
        _check_numbers(self.values)


@bp.patch('/v2/images/<image_id>')
def update(image_id):
    ctx = access.user()
    mimetype = flask.request.mimetype
    if mimetype not in PATCH_TYPES:
        raise access.http_error(
            415, 'Image PATCH expects Content-Type one of: %s'
            % ', '.join(PATCH_TYPES), headers={'Accept-Patch':
                                               ', '.join(PATCH_TYPES)})
    draft = 4 if mimetype == PATCH_TYPES[0] else 10
    changes = _Changes(ctx)
    for op, key, value in _operations(_body(), draft):
        changes.apply(op, key, value)
    image = images_db.update(
        access.statedb(), ctx, image_id, values=changes.values,
        properties={k: v for k, (_, v) in changes.properties.items()},
        remove=changes.remove, tags=changes.tags, check=changes.check)
    return views.image(image)


# --- delete and tags --------------------------------------------------------------

@bp.delete('/v2/images/<image_id>')
def delete(image_id):
    remove_data(access.services().store, images_db.delete(
        access.statedb(), access.user(), image_id))
    return flask.Response(status=204)


def remove_data(store, before):
    """Remove from ``store`` the data of the image deleted from ``before``
    (its row before the delete): what it holds, or what an upload that
    never finished left. Logged, never raised: the record is deleted."""
    location = images_db.stored_location(before)
    try:
        if location is not None:
            store.delete(location)
        elif before['status'] == images_db.SAVING:
            store.discard_upload(before['id'])
    except Exception:       # noqa: BLE001 - the record is deleted
        LOG.exception('Image %s deleted; its data could not be removed '
                      'from the store', before['id'])


@bp.put('/v2/images/<image_id>/tags/<tag>')
def add_tag(image_id, tag):
    if len(tag) > 255:
        raise exception.Invalid('A tag is at most 255 characters')
    ctx = access.user()

    def check(image):
        if tag not in image['tags'] and len(image['tags']) >= MAX_TAGS:
            raise access.http_error(413, 'At most %d tags per image'
                                    % MAX_TAGS)
    images_db.update(access.statedb(), ctx, image_id, add_tags=[tag],
                     check=check)
    return flask.Response(status=204)


@bp.delete('/v2/images/<image_id>/tags/<tag>')
def delete_tag(image_id, tag):
    images_db.update(access.statedb(), access.user(), image_id,
                     remove_tags=[tag])
    return flask.Response(status=204)


# --- actions -----------------------------------------------------------------------

@bp.post('/v2/images/<image_id>/actions/deactivate')
def deactivate(image_id):
    images_db.set_active(access.statedb(), access.user(), image_id,
                         active=False)
    return flask.Response(status=204)


@bp.post('/v2/images/<image_id>/actions/reactivate')
def reactivate(image_id):
    images_db.set_active(access.statedb(), access.user(), image_id,
                         active=True)
    return flask.Response(status=204)


# --- tasks --------------------------------------------------------------------

@bp.get('/v2/images/<image_id>/tasks')
def tasks(image_id):
    """Glance 2.12's tasks of an image (imports, location changes): there
    are none here, since data is only ever uploaded directly; 404 for an
    image the caller cannot see, as Glance."""
    access.image(image_id)
    return {'tasks': []}

"""Nova's image proxy: ``/v2.1/images``, ``/images/detail``,
``/images/{id}`` and ``DELETE``, over the image catalogue, with Nova's
view (``minDisk``, ``minRam``, ``progress``, ``metadata``,
``OS-EXT-IMG-SIZE:size``, status ACTIVE/SAVING/ERROR...). Nova deprecated
the proxy at microversion 2.36: from there these paths answer 404, as
Nova's do. With ``[image] api_endpoint`` set, images live in that Glance:
the proxy answers 404 saying so.
"""

import logging
import urllib.parse

import flask

from api import microversion
from api import request
from api import views
from api.image import access as image_access
from api.image import images as image_api
from common import exception
from common.db import images as images_db
from common.images import store as store_mod

LOG = logging.getLogger(__name__)
STORE_EXTENSION = 'tristate-image-store'

bp = flask.Blueprint('images', __name__, url_prefix='/v2.1')

PROXY_DEPRECATED = microversion.APIVersion(2, 36)
STATUS = {'active': 'ACTIVE', 'queued': 'SAVING', 'saving': 'SAVING',
          'deleted': 'DELETED', 'pending_delete': 'DELETED',
          'killed': 'ERROR'}
PROGRESS = {'queued': 25, 'saving': 50, 'active': 100}
# Nova's filters of an image list, and what each is in the catalogue.
PROPERTY_FILTERS = {'server': 'instance_uuid', 'type': 'image_type'}


def _catalogue():
    """The catalogue's statedb, for a version that still has the proxy."""
    if request.version() >= PROXY_DEPRECATED:
        raise exception.NotFound('The image proxy API is deprecated from '
                                 'microversion 2.36: use the image service '
                                 '(Glance v2) instead.')
    conf = request.services().conf
    if conf.image.api_endpoint:
        raise exception.NotFound('Images are served by the Glance at %s '
                                 '([image] api_endpoint): use it.'
                                 % conf.image.api_endpoint)
    return request.services().client.statedb


def _links(image_id):
    links = request.links()
    return links.links('images', image_id) + [{
        'rel': 'alternate', 'type': 'application/vnd.openstack.image',
        'href': '%s/image/images/%s' % (links.base, image_id)}]


def _server(server_id):
    return {'id': server_id, 'links': request.links().links('servers',
                                                            server_id)}


def image_view(row, detail=True):
    view = {'id': row['id'], 'name': row['name'],
            'links': _links(row['id'])}
    if not detail:
        return view
    properties = row['properties'] or {}
    view.update({
        'minRam': int(row['min_ram'] or 0),
        'minDisk': int(row['min_disk'] or 0),
        'metadata': properties,
        'created': views.isotime(row['created_at']),
        'updated': views.isotime(row['updated_at']),
        'status': STATUS.get(row['status'], 'UNKNOWN'),
        'progress': PROGRESS.get(row['status'], 0),
        'OS-EXT-IMG-SIZE:size': row['size'],
    })
    if properties.get('instance_uuid'):
        view['server'] = _server(properties['instance_uuid'])
    return view


def _limit(args):
    value = args.get('limit')
    if value is None:
        return images_db.DEFAULT_LIMIT
    if not (value.isascii() and value.isdigit()):
        raise exception.Invalid('limit must be a whole number, not %r'
                                % value)
    return int(value)


def _index(detail):
    statedb = _catalogue()
    args = flask.request.args
    image_access.check_query(args)
    filters = {'properties': {}}
    if args.get('name'):
        filters['name'] = args['name']
    if args.get('status'):
        filters['status'] = args['status'].lower()
    for key, prop in PROPERTY_FILTERS.items():
        if args.get(key):
            filters['properties'][prop] = args[key]
    if args.get('server'):
        # the server's id, or any of its links (Nova keeps what follows
        # the last slash)
        filters['properties']['instance_uuid'] = args['server'].rsplit(
            '/', 1)[-1]
    limit = _limit(args)
    rows = images_db.list_images(statedb, request.context(), filters=filters,
                                 limit=limit, marker=args.get('marker'))
    body = {'images': [image_view(r, detail) for r in rows]}
    if rows and len(rows) == limit:
        params = [(k, v) for k, v in args.items(multi=True) if k != 'marker']
        params.append(('marker', rows[-1]['id']))
        path = 'images/detail' if detail else 'images'
        body['images_links'] = [{
            'rel': 'next', 'href': '%s?%s' % (request.links().href(path),
                                              urllib.parse.urlencode(params))}]
    return body


@bp.get('/images')
def index():
    return _index(detail=False)


@bp.get('/images/detail')
def detail():
    return _index(detail=True)


@bp.get('/images/<image_id>')
def show(image_id):
    statedb = _catalogue()
    return {'image': image_view(images_db.get(statedb, request.context(),
                                              image_id))}


@bp.delete('/images')
def delete_blank():
    """``DELETE /images/`` (an empty id): Nova's 404, not a 405."""
    raise exception.NotFound('The resource could not be found.')


@bp.delete('/images/<image_id>')
def delete(image_id):
    statedb = _catalogue()
    image_api.remove_data(_store(), images_db.delete(
        statedb, request.context(), image_id))
    return request.no_content()


def _store():
    """The image store of this app, made on first use."""
    extensions = flask.current_app.extensions
    if STORE_EXTENSION not in extensions:
        extensions[STORE_EXTENSION] = store_mod.ImageStore(
            request.services().conf)
    return extensions[STORE_EXTENSION]

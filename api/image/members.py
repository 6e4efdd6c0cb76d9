"""Sharing: ``/v2/images/{id}/members[/{member}]``, as Glance.

The owner of a ``shared`` image adds projects (pending); each member
accepts or rejects it for itself (an accepted image appears in its list);
the owner removes members. Who sees what is :mod:`common.db.images`.
"""

import flask

from api.image import access
from api.image import images
from api.image import views
from common import exception
from common.db import images as images_db

bp = flask.Blueprint('image_members', __name__)


def _field(name, example):
    body = images._body()
    if not isinstance(body, dict):
        raise exception.Invalid('Expected a %s in the form: {"%s": "%s"}'
                                % (name, name, example))
    if name not in body:
        raise exception.Invalid('%s not specified: expected {"%s": "%s"}'
                                % (name.capitalize(), name, example))
    value = body[name]
    if not isinstance(value, str) or not value or len(value) > 255:
        raise exception.Invalid('%s must be a non-empty string of at most '
                                '255 characters' % name)
    return value


@bp.get('/v2/images/<image_id>/members')
def index(image_id):
    rows = images_db.list_members(access.statedb(), access.user(), image_id)
    return {'members': [views.member(r) for r in rows],
            'schema': '/v2/schemas/members'}


@bp.post('/v2/images/<image_id>/members')
def create(image_id):
    member = _field('member', 'project_id')
    try:
        row = images_db.add_member(access.statedb(), access.user(), image_id,
                                   member)
    except exception.Forbidden as err:
        raise access.http_error(403, 'Not allowed to create members for '
                                     'image %s: %s' % (image_id, err.message)
                                ) from None
    return views.member(row)


@bp.get('/v2/images/<image_id>/members/<member>')
def show(image_id, member):
    try:
        row = images_db.get_member(access.statedb(), access.user(), image_id,
                                   member)
    except exception.Forbidden as err:
        raise exception.NotFound(err.message) from None
    return views.member(row)


@bp.put('/v2/images/<image_id>/members/<member>')
def update(image_id, member):
    status = _field('status', 'accepted')
    row = images_db.update_member(access.statedb(), access.user(), image_id,
                                  member, status)
    return views.member(row)


@bp.delete('/v2/images/<image_id>/members/<member>')
def delete(image_id, member):
    images_db.delete_member(access.statedb(), access.user(), image_id, member)
    return flask.Response(status=204)

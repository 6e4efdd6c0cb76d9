"""Version discovery: ``GET /`` and ``GET /v2.1``, without authentication."""

import flask

from api import request
from api import views

bp = flask.Blueprint('versions', __name__)


@bp.get('/')
def versions():
    return {'versions': [views.version_doc(request.links())]}


@bp.get('/v2.1', strict_slashes=False)
def version():
    return {'version': views.version_doc(request.links())}

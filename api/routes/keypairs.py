"""``/os-keypairs``, as Nova answers it at every microversion (issue 24).

    GET    /v2.1/os-keypairs[?user_id=][&limit=&marker=]
    POST   /v2.1/os-keypairs                {"keypair": {"name", ...}}
    GET    /v2.1/os-keypairs/{name}[?user_id=]
    DELETE /v2.1/os-keypairs/{name}[?user_id=]

A key pair is a user's (not a project's): another user's is not found.
Create imports ``public_key`` or, without one (below 2.92), makes a new
pair and answers its private key, once: it is never stored. From 2.2 a key
pair has a ``type`` (``ssh``, ``x509``), create answers 201 and delete 204
(before: 200 and 202); from 2.10 an admin names another user with
``user_id`` (in the body, or the query); from 2.35 the list pages by name
(``limit``, ``marker``, ``keypairs_links``); from 2.75 an unknown query
parameter is a 400; from 2.92 ``public_key`` is required and a name may
hold ``@`` and ``.``. Keys are read by :mod:`common.keypairs`; a user holds
at most :func:`key_pairs_limit`.
"""

import copy
from urllib import parse as urlparse

import flask

from api import microversion
from api import request
from api import schemas
from api import views
from common import exception
from common import keypairs as crypto
from common.db import quotas

bp = flask.Blueprint('keypairs', __name__, url_prefix='/v2.1/os-keypairs')

V = microversion.APIVersion
TYPED = V(2, 2)
USER_ID = V(2, 10)
PAGED = V(2, 35)
STRICT_QUERY = V(2, 75)
IMPORT_ONLY = V(2, 92)
RULE = 'tristate:keypairs:%s'

# Nova's key pair names: letters, digits, space, ``_`` and ``-``, not
# starting or ending with a space; from 2.92 also ``@`` and ``.``.
_NAME = dict(schemas.NAME, pattern=r'^(?! )[a-zA-Z0-9 _-]+(?<! )$')
_NAME_292 = dict(schemas.NAME, pattern=r'^(?! )[a-zA-Z0-9 @._-]+(?<! )$')
_KEYPAIR = {'type': 'object',
            'properties': {'name': _NAME,
                           'public_key': {'type': 'string',
                                          'maxLength': 65535}},
            'required': ['name'], 'additionalProperties': False}
CREATE = {'type': 'object', 'properties': {'keypair': _KEYPAIR},
          'required': ['keypair'], 'additionalProperties': False}
CREATE_22 = copy.deepcopy(CREATE)
CREATE_22['properties']['keypair']['properties']['type'] = {
    'type': 'string', 'enum': list(crypto.TYPES)}
CREATE_210 = copy.deepcopy(CREATE_22)
CREATE_210['properties']['keypair']['properties']['user_id'] = (
    schemas.IMAGE_REF)
CREATE_292 = copy.deepcopy(CREATE_210)
CREATE_292['properties']['keypair']['properties']['name'] = _NAME_292
CREATE_292['properties']['keypair']['required'] = ['name', 'public_key']
_LIMIT = {'type': 'string', 'pattern': '^[0-9]+$', 'maxLength': 9}


def key_pairs_limit():
    """Key pairs one user of the caller's project may hold: the project's
    quota set, else the ``default`` quota class's value, else ``[quota]
    key_pairs`` (Nova's order); -1: no limit."""
    svc = request.services()
    return svc.client.statedb.project_limit(
        request.context().project_id, 'key_pairs',
        quotas.Settings.from_conf(svc.conf))


def _create_schema(version):
    for since, schema in ((IMPORT_ONLY, CREATE_292), (USER_ID, CREATE_210),
                          (TYPED, CREATE_22)):
        if version >= since:
            return schema
    return CREATE


def _query_names(version):
    names = set()
    if version >= USER_ID:
        names.add('user_id')
    if version >= PAGED:
        names.update(('limit', 'marker'))
    return names


def _user_id(rule, asked=None):
    """The user whose key pairs the request means: the caller, or (from
    2.10) the ``user_id`` of the body or query, if the policy allows."""
    version = request.version()
    args = flask.request.args
    allowed = _query_names(version)
    unknown = sorted(k for k in args if k not in allowed)
    if unknown and version >= STRICT_QUERY:
        raise exception.Invalid(
            'Invalid input for query parameters %s. Additional properties '
            'are not allowed (%s unexpected)' % (unknown[0], ', '.join(
                repr(k) for k in unknown)))
    if asked is None and version >= USER_ID:
        values = args.getlist('user_id')
        asked = values[-1] if values else None
    user_id = asked or request.context().user_id or ''
    request.authorize(RULE % rule, {'user_id': user_id})
    return user_id


def _body(row, version, *, kind):
    """A key pair as Nova shows it: ``kind`` is 'list', 'show' or
    'create'."""
    body = {'name': row['name'], 'public_key': row['public_key'],
            'fingerprint': row['fingerprint']}
    if kind == 'show':
        body.update({'user_id': row['user_id'], 'deleted': False,
                     'created_at': views.isotime(row['created_at']),
                     'updated_at': None, 'deleted_at': None,
                     'id': row['id']})
    elif kind == 'create':
        body['user_id'] = row['user_id']
        if row.get('private_key') is not None:
            body['private_key'] = row['private_key']
    if version >= TYPED:
        body['type'] = row['type']
    return body


@bp.post('', strict_slashes=False)
def create():
    version = request.version()
    body = request.json_body(_create_schema(version))['keypair']
    user_id = _user_id('create', body.get('user_id'))
    key_type = body.get('type', crypto.SSH)
    private_key = None
    if 'public_key' in body:
        public_key = body['public_key'].strip()
        fingerprint = crypto.fingerprint(public_key, key_type)
    else:
        private_key, public_key, fingerprint = crypto.generate(
            key_type, user_id)
    row = request.services().client.statedb.create_keypair(
        user_id=user_id, name=body['name'], public_key=public_key,
        fingerprint=fingerprint, key_type=key_type,
        limit=key_pairs_limit())
    out = _body(dict(row, private_key=private_key), version, kind='create')
    resp = flask.jsonify({'keypair': out})
    resp.status_code = 201 if version >= TYPED else 200
    return resp


@bp.get('', strict_slashes=False)
def index():
    version = request.version()
    user_id = _user_id('index')
    args = flask.request.args
    limit = marker = None
    if version >= PAGED:
        max_limit = request.services().conf.api.max_limit
        if 'limit' in args:
            schemas.validate(_LIMIT, args['limit'])
        limit = min(int(args.get('limit', max_limit)), max_limit)
        marker = args.get('marker')
    rows = request.services().client.statedb.list_keypairs(
        user_id, limit=limit, marker=marker)
    out = {'keypairs': [{'keypair': _body(r, version, kind='list')}
                        for r in rows]}
    if limit and len(rows) == limit:
        out['keypairs_links'] = [{'rel': 'next',
                                  'href': _next_link(rows[-1]['name'])}]
    return out


def _next_link(marker):
    query = [(k, v) for k, v in flask.request.args.items(multi=True)
             if k != 'marker']
    query.append(('marker', marker))
    return '%s?%s' % (request.links().href('os-keypairs'),
                      urlparse.urlencode(sorted(query)))


@bp.get('/<name>')
def show(name):
    user_id = _user_id('show')
    row = request.services().client.statedb.get_keypair(user_id, name)
    return {'keypair': _body(row, request.version(), kind='show')}


@bp.delete('/<name>')
def delete(name):
    user_id = _user_id('delete')
    request.services().client.statedb.delete_keypair(user_id, name)
    return request.no_content(204 if request.version() >= TYPED else 202)

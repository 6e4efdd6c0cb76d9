"""The image API behind keystone: the context comes from the headers
keystonemiddleware sets (its token check is replaced here by a stand-in
that confirms or refuses), version discovery needs no token, and an
agent's grant is checked instead of a token."""

import types

import pytest
from werkzeug import test as wtest

from api import auth
from api.image import app as image_app
from common.db import images as images_db
from common.images import grants


def _conf():
    return types.SimpleNamespace(
        api=types.SimpleNamespace(auth_strategy='keystone', link_prefix=None,
                                  max_request_body_size=114688,
                                  body_timeout=30),
        image=types.SimpleNamespace(api_endpoint=None))


def _confirmed_only(app, conf):
    """keystonemiddleware's part: refuse requests it did not confirm."""
    checked = auth.KeystoneContext(app)

    def call(environ, start_response):
        if environ.get('HTTP_X_AUTH_TOKEN') != 'good':
            environ['HTTP_X_IDENTITY_STATUS'] = 'Invalid'
        return checked(environ, start_response)
    return call


@pytest.fixture
def client(statedb, monkeypatch):
    monkeypatch.setattr(auth, 'keystone', _confirmed_only)
    app = image_app.create_app(_conf(), statedb,
                               store_factory=lambda conf: None)
    return wtest.Client(app)


def _user(project, roles='member,reader'):
    return {'X-Auth-Token': 'good', 'X-Identity-Status': 'Confirmed',
            'X-User-Id': 'u-' + project, 'X-Project-Id': project,
            'X-Roles': roles}


def test_keystone_users_and_their_projects(client):
    resp = client.post('/v2/images', json={'name': 'k', 'visibility':
                                           'private'}, headers=_user('p1'))
    assert resp.status_code == 201, resp.text
    image = resp.json
    assert image['owner'] == 'p1'
    assert client.get('/v2/images/%s' % image['id'],
                      headers=_user('p2')).status_code == 404
    admin = _user('ops', roles='admin,member')
    assert client.get('/v2/images/%s' % image['id'],
                      headers=admin).status_code == 200
    refused = client.get('/v2/images', headers={'X-Auth-Token': 'bad'})
    assert refused.status_code == 401
    assert client.get('/').status_code == 300      # no token needed
    assert client.get('/v2').status_code == 200


def test_a_grant_replaces_the_token(client, statedb):
    created = client.post('/v2/images', json={'name': 'g'},
                          headers=_user('p1')).json
    key = images_db.service_key(statedb, 'image-grants')
    grant = grants.issue(key, image_id=created['id'], host='h', op='read',
                         ttl=60)
    resp = client.get('/v2/images/%s' % created['id'],
                      headers={'X-Tristate-Image-Grant': grant})
    assert resp.status_code == 200
    assert resp.json['id'] == created['id']
    bad = client.get('/v2/images/%s' % created['id'],
                     headers={'X-Tristate-Image-Grant': grant + 'x'})
    assert bad.status_code == 403
